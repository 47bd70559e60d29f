//! The HTTP service (axum) wrapping any [`crate::service::TimelineService`].

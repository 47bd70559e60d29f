//! `RemoteClient`: [`crate::service::TimelineService`] over HTTP (reqwest).

//! Lists fetched whole: every page of a listing call, up to a bound, for the components that
//! show a whole list (timelines, journeys, anchors, the picture's events).

use std::future::Future;

use crate::error::ServiceError;
use crate::service::{Page, PageRequest};

/// Most rows of a list fetched, in pages of [`PageRequest::MAX_LIMIT`].
pub const MAX_ROWS: usize = 10_000;

/// Every page of a list, up to [`MAX_ROWS`] rows.
pub async fn all_pages<T, F, Fut>(mut list: F) -> Result<Vec<T>, ServiceError>
where
    F: FnMut(PageRequest) -> Fut,
    Fut: Future<Output = Result<Page<T>, ServiceError>>,
{
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = list(PageRequest {
            limit: Some(PageRequest::MAX_LIMIT),
            cursor,
        })
        .await?;
        all.extend(page.items);
        match page.next_cursor {
            Some(next) if all.len() < MAX_ROWS => cursor = Some(next),
            _ => return Ok(all),
        }
    }
}

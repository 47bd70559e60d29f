//! Where a read's work runs, said at every read (issue 38: a scan run inline on a tokio worker
//! held every request queued behind it, and the choice used to be which of two helpers a read
//! happened to call). [`Inline`]: on the request's worker, for work bounded by what the
//! request asks (a page, one record). [`Heavy`]: on the heavy threads (see
//! [`crate::engine::heavy`]), for work that grows with a timeline or the log (a scan, a full
//! check, a linear search). A heavy read's closure must own what it uses (`Send + 'static`),
//! an inline one may borrow; the compiler holds each to its place.

use std::sync::Arc;

use super::EngineSession;
use crate::engine::World;
use crate::engine::rules::Ctx;
use crate::error::ServiceError;
use crate::service::ServiceResult;

/// On the request's worker: work bounded by what the request asks.
#[derive(Clone, Copy, Debug)]
pub(in crate::engine) struct Inline;

/// On the heavy threads: work that grows with history.
#[derive(Clone, Copy, Debug)]
pub(in crate::engine) struct Heavy;

/// Runs a read's `look` at the world as a session's traveller may see it.
pub(in crate::engine) trait Place<T, F> {
    /// `look` at `world` as `session`'s traveller, where this place says.
    async fn run(self, session: &EngineSession, world: &Arc<World>, look: F) -> ServiceResult<T>;
}

impl<T, F> Place<T, F> for Inline
where
    F: FnOnce(&World, &Ctx<'_>) -> Result<T, ServiceError>,
{
    async fn run(self, session: &EngineSession, world: &Arc<World>, look: F) -> ServiceResult<T> {
        let mint = || session.engine.mint();
        let ctx = Ctx {
            traveller: &session.traveller,
            now: session.engine.now(),
            mint: &mint,
            operator: session.admin,
        };
        look(world, &ctx)
    }
}

impl<T, F> Place<T, F> for Heavy
where
    T: Send + 'static,
    F: FnOnce(&World, &Ctx<'_>) -> Result<T, ServiceError> + Send + 'static,
{
    async fn run(self, session: &EngineSession, world: &Arc<World>, look: F) -> ServiceResult<T> {
        let world = Arc::clone(world);
        let engine = Arc::clone(&session.engine);
        let traveller = session.traveller.clone();
        let operator = session.admin;
        crate::engine::heavy::run("a heavy read", move || {
            let mint = || engine.mint();
            let ctx = Ctx {
                traveller: &traveller,
                now: engine.now(),
                mint: &mint,
                operator,
            };
            look(&world, &ctx)
        })
        .await
    }
}

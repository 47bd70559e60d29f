//! [`EngineSession`]: the engine acting as one traveller, implementing [`TimelineService`].
//!
//! Each concern of the contract is implemented in a module of its own below this one
//! (journeys, the clock and items in `navigation`, `anchors`, `events`, `paradoxes`, `merges`
//! and their review, automation in `scripts`, temporal `data`, `security`, `integrity`,
//! `transfer`); here are the [`Timelines`] operations and the shared ways in: `write`, and
//! `read`, which names where its work runs: `Inline` or `Heavy` (off the workers; see `place`).

use std::sync::Arc;

use async_trait::async_trait;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Engine;
use super::access;
use super::access_log;
use super::idempotency::{self, Idempotency};
use super::rules::{self, Ctx};
use crate::automation;
use crate::error::ServiceError;
use crate::model::{
    AnchorId, EventId, EventStatus, Instant, IsolationId, ItemId, JourneyKind, MergeId, ScheduleId,
    ScriptId, TimelineId, Traveller, parse_instant,
};
use crate::paradox;
use crate::service::*;

mod anchors;
mod data;
mod events;
mod integrity;
mod merges;
mod navigation;
mod paradoxes;
mod place;
mod scripts;
mod security;
mod transfer;

pub(super) use events::events_page;
use place::{Heavy, Inline, Place};

/// The engine bound to one traveller. Cheap to create: one per request is fine.
#[derive(Clone, Debug)]
pub struct EngineSession {
    pub(super) engine: Arc<Engine>,
    pub(super) traveller: Traveller,
    /// The key of the request this session serves, if it came with one.
    idempotency: Option<Idempotency>,
    /// Whether the traveller may change what other travellers share (delete a timeline they
    /// did not create). The embedded engine's user owns the whole store; a server grants it
    /// with the `admin` scope.
    pub(super) admin: bool,
    /// Whether the caller's token allows writes at all (a `read` token does not): what such a
    /// caller does must never append to the log.
    pub(super) may_write: bool,
}

impl EngineSession {
    pub(crate) fn new(
        engine: Arc<Engine>,
        traveller: Traveller,
        idempotency: Option<Idempotency>,
    ) -> Self {
        Self {
            engine,
            traveller,
            idempotency,
            admin: true,
            may_write: true,
        }
    }

    /// The same session, with or without the right to change what other travellers share.
    pub fn with_admin(mut self, admin: bool) -> Self {
        self.admin = admin;
        self
    }

    /// The same session for a caller whose token does (or does not) allow writes.
    pub fn with_write(mut self, may_write: bool) -> Self {
        self.may_write = may_write;
        self
    }

    /// A write; with a key, remembered for its retries (answers are JSON in the log).
    async fn write<T: Serialize + DeserializeOwned>(
        &self,
        decide: impl Fn(&super::World, &Ctx<'_>) -> Result<(Vec<super::Op>, T), ServiceError>,
    ) -> ServiceResult<T> {
        let mint = || self.engine.mint();
        // The op a refusal of rights or restriction was about, for the access log.
        let refused: std::sync::Mutex<Option<RefusedOp>> = std::sync::Mutex::new(None);
        let answer = self
            .engine
            .write(Some(&self.traveller), |world, now| {
                self.refuse_if_barred(world, true)?;
                let ctx = Ctx {
                    traveller: &self.traveller,
                    now,
                    mint: &mint,
                    operator: self.admin,
                };
                // Decided on what the traveller may see; checked against the whole world.
                let view = access::view(world, &self.traveller, self.admin);
                let seen = view.as_ref().unwrap_or(world);
                let (ops, answer) = match &self.idempotency {
                    None => decide(seen, &ctx),
                    Some(request) => {
                        // Decisions run under the engine's writer lock, so what is published
                        // now is what is durable.
                        let durable = self.engine.snapshot_now().seq;
                        idempotency::decide(seen, &self.traveller, request, now, durable, || {
                            decide(seen, &ctx)
                        })
                    }
                }?;
                if let Err(e) = access::permit(world, &self.traveller, self.admin, &ops) {
                    let culprit = ops.iter().find(|op| {
                        access::permit(world, &self.traveller, self.admin, std::slice::from_ref(op))
                            .is_err()
                    });
                    *refused.lock().unwrap_or_else(|e| e.into_inner()) =
                        culprit.map(|op| RefusedOp {
                            operation: access_log::operation(op),
                            timeline: access_log::touched(world, op)
                                .into_iter()
                                .next()
                                .map(|(t, _)| t),
                        });
                    return Err(e);
                }
                access::guard_unseen(world, &ops)?;
                Ok((ops, answer))
            })
            .await;
        if let Err(e) = &answer {
            let refused = refused.into_inner().unwrap_or_else(|e| e.into_inner());
            let (operation, timeline) =
                refused.map_or(("change", None), |r| (r.operation, r.timeline));
            self.note_refused(operation, timeline.as_ref(), e);
        }
        answer
    }

    /// Counts a read of `timeline` (where the traveller is, when none is named) as
    /// `operation` in the access log, or the refused attempt it was; answers `answer`. An
    /// in-memory count: no query, no wait.
    fn noted<T>(
        &self,
        operation: &'static str,
        timeline: Option<&TimelineId>,
        answer: ServiceResult<T>,
    ) -> ServiceResult<T> {
        match &answer {
            Ok(_) => {
                let timeline = timeline.cloned().unwrap_or_else(|| {
                    let now = self.engine.now();
                    self.engine
                        .snapshot_now()
                        .position_of(&self.traveller, now)
                        .timeline
                });
                self.engine.note_access(
                    Some(timeline),
                    self.traveller.as_str(),
                    AccessAction::Read,
                    operation,
                    access_log::Outcome::Allowed,
                );
            }
            Err(e) => self.note_refused(operation, timeline, e),
        }
        answer
    }

    /// Answers `read`, counted as [`EngineSession::noted`] says.
    async fn counted<T>(
        &self,
        operation: &'static str,
        timeline: Option<TimelineId>,
        read: impl std::future::Future<Output = ServiceResult<T>>,
    ) -> ServiceResult<T> {
        let answer = read.await;
        self.noted(operation, timeline.as_ref(), answer)
    }

    /// [`EngineSession::noted`] for a step of a larger operation: counts only a refusal.
    fn refusal_noted<T>(
        &self,
        operation: &'static str,
        timeline: Option<&TimelineId>,
        answer: ServiceResult<T>,
    ) -> ServiceResult<T> {
        if let Err(e) = &answer {
            self.note_refused(operation, timeline, e);
        }
        answer
    }

    /// Counts `e` in the access log when it refused an attempt (§5.3): a missing right, a
    /// restriction, an operator's operation, a wrong decryption key, or a timeline that
    /// exists but is hidden from the caller (logged against that timeline, though they were
    /// told it is unknown). Other errors are no attempt on anything.
    fn note_refused(&self, operation: &str, timeline: Option<&TimelineId>, e: &ServiceError) {
        let on = match e {
            ServiceError::AccessDenied { timeline, .. } => timeline.parse().ok(),
            ServiceError::TravelRestricted { .. }
            | ServiceError::Forbidden(_)
            | ServiceError::DecryptionFailed { .. } => timeline.cloned(),
            ServiceError::UnknownReference { what, id } | ServiceError::NotFound { what, id }
                if what == "timeline" =>
            {
                let Ok(named) = id.parse::<TimelineId>() else {
                    return;
                };
                let world = self.engine.snapshot_now();
                let hidden = world.timelines.contains_key(&named)
                    && access::right_of(&world, &self.traveller, self.admin, &named).is_none();
                if !hidden {
                    return;
                }
                Some(named)
            }
            _ => return,
        };
        self.engine
            .note_refusal(on, self.traveller.as_str(), operation);
    }

    /// A read of what the traveller may see, its work run where `place` says (see [`Place`]).
    async fn read<T, F, P: Place<T, F>>(&self, place: P, look: F) -> ServiceResult<T> {
        self.read_at(place, CacheScope::Timeline, look).await
    }

    /// How stale the traveller allowed reads of `scope` to be (`enable-caching`); zero unless
    /// they asked. Read from memory: the setting is their own.
    fn allowed_staleness(&self, scope: CacheScope) -> std::time::Duration {
        match self
            .engine
            .snapshot_now()
            .read_staleness
            .get(&self.traveller)
        {
            Some(s) if s.scope == CacheScope::Timeline || s.scope == scope => {
                std::time::Duration::from_secs(s.max_staleness)
            }
            _ => std::time::Duration::ZERO,
        }
    }

    /// A read of `scope`: linearizable, unless the traveller allowed reads of that scope to be
    /// boundedly stale; run where `place` says.
    async fn read_at<T, F, P: Place<T, F>>(
        &self,
        place: P,
        scope: CacheScope,
        look: F,
    ) -> ServiceResult<T> {
        Ok(self.read_world_at(place, scope, look).await?.1)
    }

    /// A read like `read_at`, answering the world it looked at (as this session may see it)
    /// too.
    async fn read_world_at<T, F, P: Place<T, F>>(
        &self,
        place: P,
        scope: CacheScope,
        look: F,
    ) -> ServiceResult<(Arc<super::World>, T)> {
        let world = self
            .engine
            .snapshot_within(self.allowed_staleness(scope))
            .await?;
        self.refuse_if_barred(&world, false)?;
        let world = self.visible(world);
        let answer = place.run(self, &world, look).await?;
        Ok((world, answer))
    }

    /// Refuses a traveller an operator barred from this: everything at `no_access`, and
    /// every write at `read_only` (what `limited_access` allows is decided op by op).
    fn refuse_if_barred(&self, world: &super::World, writing: bool) -> Result<(), ServiceError> {
        match access::restriction_of(world, &self.traveller, self.admin) {
            Some(level @ RestrictionLevel::NoAccess) => Err(access::restricted(level)),
            Some(level @ RestrictionLevel::ReadOnly) if writing => Err(access::restricted(level)),
            _ => Ok(()),
        }
    }

    /// The world as this session may see it (see [`access::view`]).
    pub(super) fn visible(&self, world: Arc<super::World>) -> Arc<super::World> {
        match access::view(&world, &self.traveller, self.admin) {
            Some(view) => Arc::new(view),
            None => world,
        }
    }
}

impl EngineSession {
    /// The response forms of the timelines `ids` at `world` (a page: the work follows its
    /// size, not the number of timelines), counting their anomalies as the monitor does but
    /// never waiting for a scan (see [`super::watch::Count`]).
    fn infos(
        &self,
        world: &Arc<super::World>,
        ids: &[TimelineId],
    ) -> ServiceResult<Vec<TimelineInfo>> {
        let now = self.engine.now();
        let concerns = rules::Concerns::of(world);
        ids.iter()
            .map(|id| {
                let state = rules::referenced(world, id)?;
                let count = super::watch::anomaly_count(&self.engine, world, state, now);
                Ok(counted_info(&concerns, state, now, count))
            })
            .collect()
    }
}

/// A timeline's response form with its anomaly count (one number for the list and the
/// monitor), saying when the count is being worked out again.
fn counted_info(
    concerns: &rules::Concerns,
    state: &super::TimelineState,
    now: Instant,
    count: super::watch::Count,
) -> TimelineInfo {
    use super::watch::Count;
    let (paradoxes, recounting, counted_at) = match count {
        Count::Current(n) => (n, false, None),
        Count::Recounting(last) => (last.map_or(0, |(n, _)| n), true, last.map(|(_, at)| at)),
    };
    TimelineInfo {
        paradoxes_recounting: recounting,
        paradoxes_counted_at: counted_at,
        ..rules::timeline_info(concerns, state, now, paradoxes)
    }
}

/// The op whose refusal a write met, as the access log names it.
struct RefusedOp {
    operation: &'static str,
    timeline: Option<TimelineId>,
}

/// The page size asked for, validated.
fn limit(page: &PageRequest) -> Result<usize, ServiceError> {
    match page.limit {
        None => Ok(PageRequest::DEFAULT_LIMIT as usize),
        Some(n) if (1..=PageRequest::MAX_LIMIT).contains(&n) => Ok(n as usize),
        Some(n) => Err(ServiceError::invalid(
            "limit",
            format!(
                "{n} is out of range; ask for 1 to {}",
                PageRequest::MAX_LIMIT
            ),
        )),
    }
}

/// One page of `keyed`, ordered by key; the cursor is the last key returned.
fn paginate<T>(mut keyed: Vec<(String, T)>, page: &PageRequest) -> Result<Page<T>, ServiceError> {
    let limit = limit(page)?;
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    let start = match &page.cursor {
        Some(c) => keyed.partition_point(|(k, _)| k.as_str() <= c.as_str()),
        None => 0,
    };
    let more = keyed.len() > start + limit;
    let page: Vec<(String, T)> = keyed.into_iter().skip(start).take(limit).collect();
    let next_cursor = if more {
        page.last().map(|(k, _)| k.clone())
    } else {
        None
    };
    Ok(Page {
        items: page.into_iter().map(|(_, t)| t).collect(),
        next_cursor,
    })
}

/// The timeline an operation acts on: the one named, else where the traveller is (DESIGN §4).
fn here(world: &super::World, ctx: &Ctx<'_>, named: &Option<TimelineId>) -> TimelineId {
    named
        .clone()
        .unwrap_or_else(|| world.position_of(ctx.traveller, ctx.now).timeline)
}

/// The journey `op` records, and the answer, of `kind`.
pub(super) fn of_kind(
    mut op: super::Op,
    mut journey: Journey,
    kind: JourneyKind,
) -> (super::Op, Journey) {
    journey.kind = Some(kind);
    if let super::Op::Travel { journey: logged } = &mut op {
        logged.kind = Some(kind);
    }
    (op, journey)
}

/// The items a journey takes: those listed, or every item the traveller carries.
pub(super) fn listed_or_carried(
    world: &super::World,
    traveller: &Traveller,
    listed: &Option<Vec<ItemId>>,
) -> Vec<ItemId> {
    match listed {
        Some(items) => items.clone(),
        None => world
            .items_of(traveller)
            .filter(|i| i.whereabouts == crate::model::Whereabouts::Carried)
            .map(|i| i.id.clone())
            .collect(),
    }
}

/// Sort key of a timeline in lists: `primary` first, then by creation.
fn timeline_key(t: &crate::model::Timeline) -> String {
    if t.id.is_primary() {
        String::new()
    } else {
        format!("{}|{}", t.created_at.format("%Y%m%dT%H%M%S%.9f"), t.id)
    }
}

#[async_trait]
impl Timelines for EngineSession {
    async fn whoami(&self) -> ServiceResult<TravellerStatus> {
        // Answered even at `no_access`: it is how a restricted traveller learns why.
        let world = self
            .engine
            .snapshot_within(std::time::Duration::ZERO)
            .await?;
        let now = self.engine.now();
        let position = world.position_of(&self.traveller, now);
        Ok(TravellerStatus {
            traveller: self.traveller.clone(),
            timeline_id: position.timeline.clone(),
            time: position.time_at(now),
            position,
            operator: self.admin,
            restriction: (!self.admin)
                .then(|| world.restrictions.get(&self.traveller))
                .flatten()
                .map(|r| (**r).clone()),
            read_only_token: !self.may_write,
        })
    }

    async fn list_timelines(&self, page: PageRequest) -> ServiceResult<Page<TimelineInfo>> {
        self.find_timelines(TimelineQuery { status: None, page })
            .await
    }

    async fn find_timelines(&self, req: TimelineQuery) -> ServiceResult<Page<TimelineInfo>> {
        // The page first (keys only); the response forms of its timelines alone.
        let (world, listed) = self
            .read_world_at(Inline, CacheScope::Timeline, |world, ctx| {
                let keyed = world
                    .timelines
                    .values()
                    .filter(|s| {
                        req.status
                            .is_none_or(|want| s.meta.status_at(ctx.now) == want)
                    })
                    .map(|s| (timeline_key(&s.meta), s.meta.id.clone()))
                    .collect();
                paginate(keyed, &req.page)
            })
            .await?;
        Ok(Page {
            items: self.infos(&world, &listed.items)?,
            next_cursor: listed.next_cursor,
        })
    }

    async fn create_timeline(&self, req: NewTimeline) -> ServiceResult<TimelineInfo> {
        let window = self.engine.config().default_window;
        self.write(|world, ctx| {
            let (op, t) = rules::create_timeline(world, ctx, &req, window)?;
            // Answered as it is once created (a branch starts with its base's events), which
            // is also what a keyed retry is answered.
            let mut created = world.clone();
            created
                .apply(world.seq + 1, op.clone())
                .map_err(|e| ServiceError::Internal(e.to_string()))?;
            // Never a scan on the writer: a large branch says its count is under way.
            let info = created
                .timelines
                .get(&t.id)
                .map(|state| {
                    let count = super::watch::anomaly_count_unpublished(
                        &self.engine.reports,
                        &created,
                        state,
                        ctx.now,
                    );
                    let concerns = rules::Concerns::of(&created);
                    counted_info(&concerns, state, ctx.now, count)
                })
                .ok_or_else(|| ServiceError::Internal("a created timeline is missing".into()))?;
            Ok((vec![op], info))
        })
        .await
    }

    async fn get_timeline(&self, id: &TimelineId) -> ServiceResult<TimelineInfo> {
        let answer = async {
            let (world, id) = self
                .read_world_at(Inline, CacheScope::Timeline, |world, _| {
                    Ok(rules::addressed(world, id)?.meta.id.clone())
                })
                .await?;
            let mut infos = self.infos(&world, std::slice::from_ref(&id))?;
            infos
                .pop()
                .ok_or_else(|| ServiceError::Internal("a timeline's form is missing".into()))
        }
        .await;
        self.noted("get_timeline", Some(id), answer)
    }

    async fn delete_timeline(&self, id: &TimelineId) -> ServiceResult<()> {
        self.write(|world, ctx| {
            Ok((
                vec![rules::delete_timeline(world, ctx, id, self.admin)?],
                (),
            ))
        })
        .await
    }
}

impl EngineSession {
    /// Refuses `what` (the access log's `operation`) to a session that is not an operator's,
    /// counting the refused attempt service-wide (a server refuses it earlier, for the token's
    /// scope, and counts it there).
    fn require_operator(&self, operation: &str, what: &str) -> Result<(), ServiceError> {
        if self.admin {
            return Ok(());
        }
        let refusal = ServiceError::Forbidden(format!(
            "{what} is for operators: it needs a token with the 'admin' scope"
        ));
        self.note_refused(operation, None, &refusal);
        Err(refusal)
    }

    /// Timeline `id`'s access control as this session sees it.
    fn access_view(
        &self,
        world: &super::World,
        ctx: &Ctx<'_>,
        id: &TimelineId,
    ) -> AccessControlView {
        AccessControlView {
            timeline_id: id.clone(),
            access_control: world.acls.get(id).map(|a| (**a).clone()),
            your_right: access::right_of(world, ctx.traveller, self.admin, id)
                .unwrap_or(Right::Read)
                .min(if self.may_write {
                    Right::Admin
                } else {
                    Right::Read
                }),
            read_only_token: !self.may_write,
        }
    }
}

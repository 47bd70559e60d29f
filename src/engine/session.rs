//! [`EngineSession`]: the engine acting as one traveller, implementing [`TimelineService`].
//!
//! The trait's implementation here is the table of operations; the operations of one concern
//! live in a module of their own below it (journeys and the clock in `navigation`, anchors,
//! merges and their review, automation in `scripts`, temporal data, security, integrity),
//! next to the shared ways in: `write`, and `read`, which names where its work runs: `Inline`
//! or `Heavy` (off the workers; see `place`).
//! Timelines, events, items and the paradox checks are still answered here.

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
mod integrity;
mod merges;
mod navigation;
mod place;
mod scripts;
mod security;

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

    /// `fast-forward` / `rewind`: a journey within the caller's timeline from their time t to
    /// t ± the duration; what they carry comes along.
    async fn shift(&self, req: ShiftRequest, forward: bool) -> ServiceResult<Journey> {
        let duration = crate::model::TravelDuration::parse("duration", &req.duration)?;
        self.write(|world, ctx| {
            let position = world.position_of(ctx.traveller, ctx.now);
            let to_time = duration.shift("duration", position.time_at(ctx.now), forward)?;
            let travel = TravelRequest {
                destination: position.timeline.to_string(),
                items_transported: listed_or_carried(world, ctx.traveller, &None),
            };
            let kind = if forward {
                JourneyKind::FastForward
            } else {
                JourneyKind::Rewind
            };
            let (op, journey) = rules::travel(world, ctx, &travel, Some(to_time))?;
            let (op, journey) = of_kind(op, journey, kind);
            if req.safety_check {
                super::navigation::refuse_unsafe_journey(world, ctx, &op, &journey)?;
            }
            Ok((vec![op], journey))
        })
        .await
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

/// One page of a timeline's events (the one named, else where the traveller is), as `find`
/// chooses them given the location (trimmed; absent when blank), the cursor's position and how
/// many to take (one more than the page, to know whether another follows).
pub(super) fn events_page(
    world: &super::World,
    ctx: &Ctx<'_>,
    req: &SearchQuery,
    find: impl FnOnce(
        &crate::model::History,
        Option<&str>,
        Option<&(Instant, EventId)>,
        usize,
    ) -> Vec<Arc<crate::model::Event>>,
) -> Result<Page<EventRecord>, ServiceError> {
    let timeline = here(world, ctx, &req.timeline_id);
    let state = rules::referenced(world, &timeline)?;
    let limit = limit(&req.page)?;
    let after = req
        .page
        .cursor
        .as_deref()
        .map(parse_event_cursor)
        .transpose()?;
    let location = req
        .location
        .as_deref()
        .map(str::trim)
        .filter(|l| !l.is_empty());
    let mut found = find(&state.history, location, after.as_ref(), limit + 1);
    let more = found.len() > limit;
    found.truncate(limit);
    let next_cursor = if more {
        found.last().map(|e| event_cursor(&(e.time, e.id.clone())))
    } else {
        None
    };
    Ok(Page {
        items: found.iter().map(|e| rules::event_record(e)).collect(),
        next_cursor,
    })
}

fn event_cursor(key: &(Instant, EventId)) -> String {
    format!("{}|{}", crate::model::format_instant(&key.0), key.1)
}

fn parse_event_cursor(cursor: &str) -> Result<(Instant, EventId), ServiceError> {
    let bad = || ServiceError::invalid("cursor", "not a cursor this server handed out");
    let (time, id) = cursor.split_once('|').ok_or_else(bad)?;
    Ok((
        parse_instant("cursor", time).map_err(|_| bad())?,
        id.parse().map_err(|_| bad())?,
    ))
}

#[async_trait]
impl TimelineService for EngineSession {
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

    async fn export_timeline(&self, id: &TimelineId) -> ServiceResult<WorldFile> {
        let answer = self
            .read(Inline, |world, _| super::transfer::export(world, id))
            .await;
        self.noted("export_timeline", Some(id), answer)
    }

    async fn import_timelines(&self, req: ImportRequest) -> ServiceResult<ImportReport> {
        // Parsed once, outside the writer lock; decided (and re-decided after a race) on the
        // latest state.
        let file = super::transfer::parse(&req.document)?;
        let input = super::transfer::ImportInput {
            file: &file,
            text: &req.document,
            default_window: self.engine.config().default_window,
            safety_check: req.safety_check,
            progress: req.progress.as_ref(),
        };
        self.write(|world, ctx| super::transfer::decide(world, ctx, &input))
            .await
    }

    async fn travel(&self, req: TravelRequest) -> ServiceResult<Journey> {
        navigation::travel(self, req).await
    }

    async fn travel_to_time(&self, req: TimeTravelRequest) -> ServiceResult<Journey> {
        navigation::travel_to_time(self, req).await
    }

    async fn travel_in_time(&self, req: GuideTravelRequest) -> ServiceResult<Journey> {
        navigation::travel_in_time(self, req).await
    }

    async fn return_to_anchor(&self, req: ReturnRequest) -> ServiceResult<Journey> {
        navigation::return_to_anchor(self, req).await
    }

    async fn switch_timeline(&self, req: SwitchRequest) -> ServiceResult<Switched> {
        navigation::switch_timeline(self, req).await
    }

    async fn pause_time(&self) -> ServiceResult<ClockState> {
        navigation::pause_time(self).await
    }

    async fn resume_time(&self) -> ServiceResult<ClockState> {
        navigation::resume_time(self).await
    }

    async fn fast_forward(&self, req: ShiftRequest) -> ServiceResult<Journey> {
        navigation::fast_forward(self, req).await
    }

    async fn rewind(&self, req: ShiftRequest) -> ServiceResult<Journey> {
        navigation::rewind(self, req).await
    }

    async fn list_journeys(&self, page: PageRequest) -> ServiceResult<Page<Journey>> {
        navigation::list_journeys(self, page).await
    }

    async fn register_item(&self, req: NewItem) -> ServiceResult<Item> {
        self.write(|world, ctx| {
            let (op, item) = rules::register_item(world, ctx, &req)?;
            Ok((vec![op], item))
        })
        .await
    }

    async fn retrieve_item(&self, req: RetrieveItemRequest) -> ServiceResult<RetrievedItem> {
        navigation::retrieve_item(self, req).await
    }

    async fn get_item(&self, id: &ItemId) -> ServiceResult<Item> {
        self.read(Inline, |world, ctx| {
            world
                .items
                .get(id)
                .filter(|i| &i.owner == ctx.traveller)
                .map(|i| (**i).clone())
                .ok_or_else(|| ServiceError::not_found("item", id))
        })
        .await
    }

    async fn list_items(&self, page: PageRequest) -> ServiceResult<Page<Item>> {
        self.read(Inline, |world, ctx| {
            let keyed = world
                .items_of(ctx.traveller)
                .map(|i| (i.id.to_string(), (**i).clone()))
                .collect();
            paginate(keyed, &page)
        })
        .await
    }

    async fn set_anchor(&self, req: NewAnchor) -> ServiceResult<Anchor> {
        anchors::set_anchor(self, req).await
    }

    async fn set_precise_anchor(&self, req: NewPreciseAnchor) -> ServiceResult<AnchorRecord> {
        anchors::set_precise_anchor(self, req).await
    }

    async fn get_anchor(&self, id: &AnchorId) -> ServiceResult<Anchor> {
        anchors::get_anchor(self, id).await
    }

    async fn find_anchors(&self, req: AnchorListQuery) -> ServiceResult<Page<AnchorRecord>> {
        anchors::find_anchors(self, req).await
    }

    async fn delete_anchor(&self, req: AnchorRef) -> ServiceResult<()> {
        anchors::delete_anchor(self, req).await
    }

    async fn check_anchor_stability(&self, req: AnchorRef) -> ServiceResult<AnchorStability> {
        anchors::check_anchor_stability(self, req).await
    }

    async fn simulate_wormhole(&self, req: WormholeRequest) -> ServiceResult<WormholeSimulation> {
        anchors::simulate_wormhole(self, req).await
    }

    async fn adjust_anchor(&self, req: AdjustAnchorRequest) -> ServiceResult<AnchorRecord> {
        anchors::adjust_anchor(self, req).await
    }

    async fn list_anchors(&self, page: PageRequest) -> ServiceResult<Page<Anchor>> {
        anchors::list_anchors(self, page).await
    }

    async fn search_events(&self, req: SearchQuery) -> ServiceResult<Page<EventRecord>> {
        self.counted(
            "search_events",
            req.timeline_id.clone(),
            self.read_at(Inline, CacheScope::Event, |world, ctx| {
                events_page(world, ctx, &req, |history, location, after, take| {
                    history.search(location, req.time_range.as_ref(), after, take)
                })
            }),
        )
        .await
    }

    async fn monitor_events(&self, req: MonitorEventsQuery) -> ServiceResult<Page<MonitoredEvent>> {
        self.counted("monitor_events", req.timeline_id.clone(), async {
            let engine = Arc::clone(&self.engine);
            self.read_at(Heavy, CacheScope::Event, move |world, ctx| {
                let page = events_page(world, ctx, &req, |history, location, after, take| {
                    history.search(location, req.time_range.as_ref(), after, take)
                })?;
                let timeline = here(world, ctx, &req.timeline_id);
                let state = rules::referenced(world, &timeline)?;
                let open = super::watch::open_anomalies(&engine.reports, world, state, ctx.now);
                let time = world.position_of(ctx.traveller, ctx.now).time_at(ctx.now);
                Ok(Page {
                    items: super::navigation::monitored(world, &timeline, page.items, &open, time)?,
                    next_cursor: page.next_cursor,
                })
            })
            .await
        })
        .await
    }

    async fn watch_events(&self, req: MonitorEventsQuery) -> ServiceResult<EventsStream> {
        self.counted(
            "monitor_events_stream",
            req.timeline_id.clone(),
            super::events_watch::watch_events(self, req),
        )
        .await
    }

    async fn event_versions(&self, req: SearchQuery) -> ServiceResult<Page<EventRecord>> {
        self.counted(
            "event_versions",
            req.timeline_id.clone(),
            // Past versions have an index of their own: a page reads what it returns, inline
            // like a search of the current events.
            self.read_at(Inline, CacheScope::Event, |world, ctx| {
                events_page(world, ctx, &req, |history, location, after, take| {
                    let every = crate::model::Versions::Every;
                    history.search_among(every, location, req.time_range.as_ref(), after, take)
                })
            }),
        )
        .await
    }

    async fn add_event(&self, timeline: &TimelineId, req: NewEvent) -> ServiceResult<EventRecord> {
        self.write(|world, ctx| {
            let (op, event) = rules::add_event(world, ctx, timeline, &req)?;
            let ops = vec![op];
            if req.safety_check {
                rules::refuse_introduced(world, ctx, timeline, &ops)?;
            }
            Ok((ops, rules::event_record(&event)))
        })
        .await
    }

    async fn manipulate_event(&self, req: ManipulateRequest) -> ServiceResult<ManipulationResult> {
        self.write(|world, ctx| {
            let timeline = here(world, ctx, &req.timeline_id);
            let (op, new) = rules::manipulate(world, ctx, &timeline, &req)?;
            rules::refuse_no_op(world, &timeline, &req)?;
            let result = ManipulationResult {
                status: "applied".into(),
                new_event_id: new.id.clone(),
                description: new.description.clone(),
                time: new.time,
                original_event_id: new
                    .supersedes
                    .clone()
                    .unwrap_or_else(|| req.event_id.clone()),
                timeline_id: timeline.clone(),
                lineage: Some(new.lineage.clone()),
            };
            Ok((vec![op], result))
        })
        .await
    }

    async fn revert_event(&self, req: RevertRequest) -> ServiceResult<RevertResult> {
        self.write(|world, ctx| {
            let timeline = here(world, ctx, &req.timeline_id);
            let (op, original, reverted) = rules::revert(world, ctx, &timeline, &req.event_id)?;
            let ops = vec![op];
            if req.safety_check {
                rules::refuse_introduced(world, ctx, &timeline, &ops)?;
            }
            let result = RevertResult {
                status: "reverted".into(),
                original_event_id: original,
                reverted_event_id: reverted,
                timeline_id: timeline.clone(),
            };
            Ok((ops, result))
        })
        .await
    }

    async fn check_paradox(&self, req: ParadoxCheckRequest) -> ServiceResult<ParadoxReport> {
        self.counted(
            "check_paradox",
            Some(req.timeline_id.clone()),
            self.read(Inline, |world, ctx| {
                let state = rules::referenced(world, &req.timeline_id)?;
                let position = world.position_of(ctx.traveller, ctx.now);
                let items = rules::items_of(world, ctx.traveller);
                let changes = rules::proposed_changes(ctx, world, state, &position, &req)?;
                let subject = rules::subject(ctx, state, &position, &items);
                let paradoxes = paradox::check(&subject, &changes);
                Ok(ParadoxReport {
                    is_stable: paradoxes.is_empty(),
                    timeline_id: req.timeline_id.clone(),
                    paradoxes,
                })
            }),
        )
        .await
    }

    async fn check_stability(&self, req: StabilityQuery) -> ServiceResult<ParadoxReport> {
        self.counted(
            "check_stability",
            Some(req.timeline_id.clone()),
            self.read(Heavy, move |world, ctx| {
                let state = rules::referenced(world, &req.timeline_id)?;
                let after = match &req.after_event_id {
                    Some(id) => Some(
                        state
                            .history
                            .get(id)
                            .ok_or_else(|| ServiceError::unknown("event", id))?
                            .time,
                    ),
                    None => None,
                };
                let position = world.position_of(ctx.traveller, ctx.now);
                let items = rules::items_of(world, ctx.traveller);
                let subject = rules::subject(ctx, state, &position, &items);
                let paradoxes: Vec<_> = paradox::check(&subject, &[])
                    .into_iter()
                    .filter(|p| {
                        let Some(after) = after else { return true };
                        p.events.is_empty()
                            || p.events
                                .iter()
                                .any(|e| state.history.get(e).is_some_and(|e| e.time >= after))
                    })
                    .collect();
                Ok(ParadoxReport {
                    is_stable: paradoxes.is_empty(),
                    timeline_id: req.timeline_id.clone(),
                    paradoxes,
                })
            }),
        )
        .await
    }

    async fn monitor_timeline(&self, req: MonitorQuery) -> ServiceResult<MonitorReport> {
        self.counted("monitor_timeline", Some(req.timeline_id.clone()), async {
            let engine = Arc::clone(&self.engine);
            self.read(Heavy, move |world, ctx| {
                super::watch::monitor_report(&engine.reports, world, ctx.now, &req)
            })
            .await
        })
        .await
    }

    async fn watch_monitor(&self, req: MonitorWatch) -> ServiceResult<MonitorStream> {
        self.counted(
            "monitor_timeline_stream",
            Some(req.timeline_id.clone()),
            super::watch::watch_monitor(self, req),
        )
        .await
    }

    async fn check_timeline(&self, req: SignificantEventQuery) -> ServiceResult<TimelineCheck> {
        self.counted(
            "check_timeline",
            Some(req.timeline_id.clone()),
            self.read(Heavy, move |world, _| {
                let state = rules::referenced(world, &req.timeline_id)?;
                let asked = rules::text("significant_event", &req.significant_event)?;
                let by_id = asked
                    .parse::<EventId>()
                    .ok()
                    .and_then(|id| state.history.get(&id).map(|_| id));
                let (status, event) = match by_id {
                    Some(id) => match state.history.head_of(&id) {
                        Some(head) if head.id == id && head.status.is_current() => {
                            ("holds", Some(head))
                        }
                        Some(head) if head.status.is_current() => ("altered", Some(head)),
                        _ => ("missing", None),
                    },
                    None => match state
                        .history
                        .iter()
                        .find(|e| e.description.eq_ignore_ascii_case(&asked))
                    {
                        Some(e) if e.status == EventStatus::OnSchedule => ("holds", Some(e)),
                        Some(e) => ("altered", Some(e)),
                        None => ("missing", None),
                    },
                };
                Ok(TimelineCheck {
                    status: status.into(),
                    holds: status == "holds",
                    timeline_id: req.timeline_id.clone(),
                    significant_event: asked,
                    event: event.map(|e| rules::event_record(e)),
                })
            }),
        )
        .await
    }

    async fn create_script(&self, req: NewScript) -> ServiceResult<Script> {
        scripts::create_script(self, req).await
    }

    async fn list_scripts(&self, page: PageRequest) -> ServiceResult<Page<Script>> {
        scripts::list_scripts(self, page).await
    }

    async fn delete_script(&self, id: &ScriptId) -> ServiceResult<()> {
        scripts::delete_script(self, id).await
    }

    async fn schedule_manipulation(&self, req: NewSchedule) -> ServiceResult<Schedule> {
        scripts::schedule_manipulation(self, req).await
    }

    async fn trigger_external_manipulation(&self, req: ExternalTrigger) -> ServiceResult<Schedule> {
        scripts::trigger_external_manipulation(self, req).await
    }

    async fn list_schedules(&self, page: PageRequest) -> ServiceResult<Page<Schedule>> {
        scripts::list_schedules(self, page).await
    }

    async fn delete_schedule(&self, id: &ScheduleId) -> ServiceResult<()> {
        scripts::delete_schedule(self, id).await
    }

    async fn automation_log(&self, req: LogQuery) -> ServiceResult<Page<LogEntry>> {
        scripts::automation_log(self, req).await
    }

    async fn merge_timelines(&self, req: MergeRequest) -> ServiceResult<MergeResult> {
        merges::merge_timelines(self, req).await
    }

    async fn list_merges(&self, page: PageRequest) -> ServiceResult<Page<Merge>> {
        merges::list_merges(self, page).await
    }

    async fn get_merge(&self, id: &MergeId) -> ServiceResult<Merge> {
        merges::get_merge(self, id).await
    }

    async fn correct_dissonance(&self, req: DissonanceRequest) -> ServiceResult<DissonanceResult> {
        merges::correct_dissonance(self, req).await
    }

    async fn store_data(&self, req: StoreDataRequest) -> ServiceResult<DataEntryInfo> {
        data::store_data(self, req).await
    }

    async fn retrieve_data(&self, req: RetrieveDataQuery) -> ServiceResult<RetrievedData> {
        data::retrieve_data(self, req).await
    }

    async fn encrypt_data(&self, req: EncryptDataRequest) -> ServiceResult<DataEntryInfo> {
        data::encrypt_data(self, req).await
    }

    async fn review_conflicts(&self, req: ReviewQuery) -> ServiceResult<ConflictReview> {
        merges::review_conflicts(self, req).await
    }

    async fn resolve_conflict(&self, req: ResolveRequest) -> ServiceResult<ResolveResult> {
        merges::resolve_conflict(self, req).await
    }

    async fn abort_merge(&self, id: &MergeId) -> ServiceResult<()> {
        merges::abort_merge(self, id).await
    }

    async fn diff_timelines(&self, req: DiffQuery) -> ServiceResult<TimelineDiff> {
        merges::diff_timelines(self, req).await
    }

    async fn isolate_event(&self, req: IsolateRequest) -> ServiceResult<Isolation> {
        merges::isolate_event(self, req).await
    }

    async fn decrypt_data(&self, req: DecryptDataRequest) -> ServiceResult<DecryptedData> {
        data::decrypt_data(self, req).await
    }

    async fn report_index(&self, req: IndexRequest) -> ServiceResult<IndexReport> {
        data::report_index(self, req).await
    }

    async fn enable_caching(&self, req: CachingRequest) -> ServiceResult<CachingSetting> {
        data::enable_caching(self, req).await
    }

    async fn detect_tampering(&self, req: TamperQuery) -> ServiceResult<TamperReport> {
        integrity::detect_tampering(self, req).await
    }

    async fn validate_integrity(&self, req: IntegrityQuery) -> ServiceResult<IntegrityReport> {
        integrity::validate_integrity(self, req).await
    }

    async fn disable_caching(&self, id: &crate::model::CacheId) -> ServiceResult<()> {
        data::disable_caching(self, id).await
    }

    async fn lift_isolation(&self, id: &IsolationId) -> ServiceResult<()> {
        merges::lift_isolation(self, id).await
    }

    async fn set_access_control(
        &self,
        req: SetAccessControlRequest,
    ) -> ServiceResult<AccessControlSet> {
        security::set_access_control(self, req).await
    }

    async fn access_control(&self, timeline: &TimelineId) -> ServiceResult<AccessControlView> {
        security::access_control(self, timeline).await
    }

    async fn list_access_controls(
        &self,
        page: PageRequest,
    ) -> ServiceResult<Page<AccessControlView>> {
        security::list_access_controls(self, page).await
    }

    async fn restrict_time_travel(&self, req: RestrictRequest) -> ServiceResult<Restricted> {
        security::restrict_time_travel(self, req).await
    }

    async fn access_logs(&self, req: AccessLogQuery) -> ServiceResult<AccessLog> {
        security::access_logs(self, req).await
    }

    async fn list_restrictions(&self, page: PageRequest) -> ServiceResult<Page<Restriction>> {
        security::list_restrictions(self, page).await
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

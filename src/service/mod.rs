//! The contract every face of chronoscope speaks: [`TimelineService`], the operations of the
//! interface as one trait per concern ([`Timelines`], [`Navigation`], [`Anchors`], [`Events`],
//! [`Paradoxes`], [`Automation`], [`Merges`], [`Data`], [`Integrity`], [`Security`],
//! [`Transfer`]); every implementation gives all of them.
//!
//! The dashboard, the CLI and the HTTP server depend on these traits only. [`crate::engine`]
//! implements it in-process; [`crate::client::RemoteClient`] implements it over HTTP. A service
//! value is bound to one traveller: the engine hands out one per traveller, the remote client
//! is bound by its token.
//!
//! How the interface's operations map onto methods:
//!
//! | interface | method |
//! |---|---|
//! | `GET /timelines` | [`Timelines::list_timelines`] |
//! | `POST /timelines`, `create-timeline`, `create-parallel-timeline` | [`Timelines::create_timeline`] |
//! | `GET /timeline/{id}` | [`Timelines::get_timeline`] |
//! | `DELETE /timeline/{id}` | [`Timelines::delete_timeline`] |
//! | `POST /travels` | [`Navigation::travel`] |
//! | `/api/v1/travel` | [`Navigation::travel_to_time`] |
//! | `travel` | [`Navigation::travel_in_time`] |
//! | `return` | [`Navigation::return_to_anchor`] |
//! | `switch-timeline` | [`Navigation::switch_timeline`] |
//! | `list-timelines` | [`Timelines::find_timelines`] |
//! | `retrieve-item` | [`Navigation::retrieve_item`] |
//! | `detect-tampering`, `validate-integrity` | [`Integrity::detect_tampering`], [`Integrity::validate_integrity`] |
//! | `monitor-events`, `GET /v1/monitor-events/stream` (SSE) | [`Events::monitor_events`], [`Events::watch_events`] |
//! | `pause-time`, `resume-time` | [`Navigation::pause_time`], [`Navigation::resume_time`] |
//! | `fast-forward`, `rewind` | [`Navigation::fast_forward`], [`Navigation::rewind`] |
//! | `POST /items` | [`Navigation::register_item`] |
//! | `POST /events`, `manipulate-event` | [`Events::manipulate_event`] |
//! | `POST /anchors`, `set-anchor` | [`Anchors::set_anchor`] |
//! | `set-anchor` with `accuracy`, `environment`, `quantum_state` | [`Anchors::set_precise_anchor`] |
//! | `list-anchors` | [`Anchors::find_anchors`] |
//! | `delete-anchor` | [`Anchors::delete_anchor`] |
//! | `check-anchor-stability` | [`Anchors::check_anchor_stability`] |
//! | `simulate-wormhole` | [`Anchors::simulate_wormhole`] |
//! | `adjust-anchor` | [`Anchors::adjust_anchor`] |
//! | `POST /paradox-checks` | [`Paradoxes::check_paradox`] |
//! | `check-paradox` | [`Paradoxes::check_stability`] |
//! | `GET /monitor-timeline`, `/api/v1/monitor-paradox` | [`Paradoxes::monitor_timeline`] |
//! | `GET /v1/monitor-timeline/stream` (SSE) | [`Paradoxes::watch_monitor`] |
//! | `/api/v1/check-timeline` | [`Paradoxes::check_timeline`] |
//! | `search-events`, `/api/v1/scan-events`, `GET /timeline/{id}/events` | [`Events::search_events`] |
//! | `POST /timeline/{id}/events` | [`Events::add_event`] |
//! | `revert-event` | [`Events::revert_event`] |
//! | `create-script`, `GET/DELETE /scripts` | [`Automation::create_script`], `list_scripts`, `delete_script` |
//! | `schedule-manipulation`, `trigger-external-manipulation`, `GET/DELETE /schedules` | `schedule_manipulation`, `trigger_external_manipulation`, `list_schedules`, `delete_schedule` |
//! | `automation-log` | [`Automation::automation_log`] |
//! | `store-data`, `retrieve-data` | [`Data::store_data`], [`Data::retrieve_data`] |
//! | `encrypt-data`, `decrypt-data` | [`Data::encrypt_data`], [`Data::decrypt_data`] |
//! | `GET /v1/timeline/{id}/export`, `POST /v1/timelines/import` (extensions) | [`Transfer::export_timeline`], [`Transfer::import_timelines`] |
//! | `create-index`, `enable-caching`, `DELETE /v1/caches/{id}` | [`Data::report_index`], [`Data::enable_caching`], [`Data::disable_caching`] |

mod data;
mod integrity;
mod merges;
mod navigation;
mod security;
mod transfer;
mod types;

use async_trait::async_trait;

pub use data::*;
pub use integrity::*;
pub use merges::*;
pub use navigation::*;
pub use security::*;
pub use transfer::*;
pub use types::*;

use crate::error::ServiceError;
use crate::model::{
    AnchorId, CacheId, IsolationId, ItemId, MergeId, ScheduleId, ScriptId, TimelineId,
};

/// The contract and its concerns, for a face that calls the operations:
/// `use crate::service::prelude::*`.
pub mod prelude {
    pub use super::{
        Anchors, Automation, Data, Events, Integrity, Merges, Navigation, Paradoxes, Security,
        TimelineService, Timelines, Transfer,
    };
}

/// Result of every service call.
pub type ServiceResult<T> = Result<T, ServiceError>;

/// The contract, written once: the trait of every concern together, and its implementation for
/// whatever implements them all.
macro_rules! contract {
    ($(#[$doc:meta])* $($concern:ident),+) => {
        $(#[$doc])*
        pub trait TimelineService: $($concern +)+ Send + Sync {}

        impl<S: $($concern +)+ ?Sized> TimelineService for S {}
    };
}

contract! {
    /// Every operation of the interface, bound to one traveller: the concerns below together.
    /// A face that calls them brings them into scope with `use crate::service::prelude::*`.
    Timelines, Transfer, Navigation, Anchors, Events, Paradoxes, Automation, Merges, Data,
    Integrity, Security
}

/// The timelines themselves, and who the caller is.
#[async_trait]
pub trait Timelines: Send + Sync {
    /// Who the caller is and where they are now.
    async fn whoami(&self) -> ServiceResult<TravellerStatus>;
    /// Timelines, `primary` first, then by creation.
    async fn list_timelines(&self, page: PageRequest) -> ServiceResult<Page<TimelineInfo>>;
    /// The timelines, in the same order, only those with a status when one is asked for.
    async fn find_timelines(&self, req: TimelineQuery) -> ServiceResult<Page<TimelineInfo>>;
    /// Creates a timeline branching from a base (`primary` by default).
    async fn create_timeline(&self, req: NewTimeline) -> ServiceResult<TimelineInfo>;
    /// One timeline.
    async fn get_timeline(&self, id: &TimelineId) -> ServiceResult<TimelineInfo>;
    /// Deletes a timeline with no branches and no travellers in it.
    async fn delete_timeline(&self, id: &TimelineId) -> ServiceResult<()>;
}

/// Timelines moved out of and into a store as world files.
#[async_trait]
pub trait Transfer: Send + Sync {
    /// A timeline as a world file: every version of its events (a branch's inherited ones
    /// too), from one state of the store; it names no parent.
    async fn export_timeline(&self, id: &TimelineId) -> ServiceResult<WorldFile>;
    /// Creates the timelines of a world file in one write, ids kept or remapped when taken:
    /// refused whole (nothing written) on bad input, naming the line and field, and when a
    /// timeline would hold a paradox its parent does not (unless the safety check is off).
    async fn import_timelines(&self, req: ImportRequest) -> ServiceResult<ImportReport>;
}

/// Journeys through time and between timelines, the caller's clock and what they carry.
#[async_trait]
pub trait Navigation: Send + Sync {
    /// Travels to a timeline or returns to one of the caller's active anchors.
    async fn travel(&self, req: TravelRequest) -> ServiceResult<Journey>;
    /// Travels to a time in the caller's timeline.
    async fn travel_to_time(&self, req: TimeTravelRequest) -> ServiceResult<Journey>;
    /// Travels to a time in a timeline (the caller's own unless named), at a place, carrying
    /// every item carried unless told otherwise.
    async fn travel_in_time(&self, req: GuideTravelRequest) -> ServiceResult<Journey>;
    /// Returns to one of the caller's active anchors, carrying every item carried unless told
    /// otherwise.
    async fn return_to_anchor(&self, req: ReturnRequest) -> ServiceResult<Journey>;
    /// The same time in another timeline; no journey when the caller is already there.
    async fn switch_timeline(&self, req: SwitchRequest) -> ServiceResult<Switched>;
    /// Stops the caller's own clock: their time stands still until they resume (the shared
    /// world does not pause). Pausing a paused clock writes nothing.
    async fn pause_time(&self) -> ServiceResult<ClockState>;
    /// Lets the caller's paused clock run on from where it stood. Resuming a running clock
    /// writes nothing.
    async fn resume_time(&self) -> ServiceResult<ClockState>;
    /// Moves the caller forward in their own timeline by a duration, carrying what they carry.
    async fn fast_forward(&self, req: ShiftRequest) -> ServiceResult<Journey>;
    /// Moves the caller back in their own timeline by a duration, carrying what they carry.
    async fn rewind(&self, req: ShiftRequest) -> ServiceResult<Journey>;
    /// The caller's journeys, oldest first.
    async fn list_journeys(&self, page: PageRequest) -> ServiceResult<Page<Journey>>;
    /// Registers an item found at the caller's position.
    async fn register_item(&self, req: NewItem) -> ServiceResult<Item>;
    /// Goes to an item's time and place in the caller's timeline and picks it up: a journey
    /// there when the time differs, and the item registered, in one write. An item the caller
    /// registered here and carries is answered `already_retrieved` with no write.
    async fn retrieve_item(&self, req: RetrieveItemRequest) -> ServiceResult<RetrievedItem>;
    /// One of the caller's items.
    async fn get_item(&self, id: &ItemId) -> ServiceResult<Item>;
    /// The caller's items.
    async fn list_items(&self, page: PageRequest) -> ServiceResult<Page<Item>>;
}

/// Return tickets: anchors, their stability, and a journey's dry run.
#[async_trait]
pub trait Anchors: Send + Sync {
    /// Sets an anchor (a return ticket) in the caller's current timeline.
    async fn set_anchor(&self, req: NewAnchor) -> ServiceResult<Anchor>;
    /// One of the caller's anchors.
    async fn get_anchor(&self, id: &AnchorId) -> ServiceResult<Anchor>;
    /// The caller's anchors, active and spent.
    async fn list_anchors(&self, page: PageRequest) -> ServiceResult<Page<Anchor>>;
    /// Sets an anchor with an accuracy, a recorded environment or quantum state.
    async fn set_precise_anchor(&self, req: NewPreciseAnchor) -> ServiceResult<AnchorRecord>;
    /// The caller's anchors in creation order: only the active ones unless `include_spent`.
    async fn find_anchors(&self, req: AnchorListQuery) -> ServiceResult<Page<AnchorRecord>>;
    /// Deletes one of the caller's anchors, active or spent: it is no longer a destination.
    async fn delete_anchor(&self, req: AnchorRef) -> ServiceResult<()>;
    /// Whether the caller can still return to an anchor, and safely; nothing is written.
    async fn check_anchor_stability(&self, req: AnchorRef) -> ServiceResult<AnchorStability>;
    /// A journey's dry run: the time between two points and whether arriving at the second
    /// with what the caller carries would add a paradox. Nothing is written.
    async fn simulate_wormhole(&self, req: WormholeRequest) -> ServiceResult<WormholeSimulation>;
    /// Replaces an active anchor's recorded environment.
    async fn adjust_anchor(&self, req: AdjustAnchorRequest) -> ServiceResult<AnchorRecord>;
}

/// A timeline's events: searched, followed, added, manipulated and reverted.
#[async_trait]
pub trait Events: Send + Sync {
    /// Searches a timeline's current events by location and time range, in time order.
    async fn search_events(&self, req: SearchQuery) -> ServiceResult<Page<EventRecord>>;
    /// The standing events of a timeline (where the caller is unless named), filtered as a
    /// search is, each with its change state: when it was last changed, whether an open anomaly
    /// names it, and whether it lies before or after the caller's time.
    async fn monitor_events(&self, req: MonitorEventsQuery) -> ServiceResult<Page<MonitoredEvent>>;
    /// Follows the events `monitor_events` reports (the page fields are ignored): a snapshot
    /// of every matching event, then each one that is added, changed, removed, or whose change
    /// state moves, within a second of the write.
    async fn watch_events(&self, req: MonitorEventsQuery) -> ServiceResult<EventsStream>;
    /// Every version of a timeline's events, standing and past (superseded by a manipulation,
    /// or reverted), by location and time range, in time order (extension).
    async fn event_versions(&self, req: SearchQuery) -> ServiceResult<Page<EventRecord>>;
    /// Adds an event to a timeline.
    async fn add_event(&self, timeline: &TimelineId, req: NewEvent) -> ServiceResult<EventRecord>;
    /// Manipulates an event, creating the new head of its lineage.
    async fn manipulate_event(&self, req: ManipulateRequest) -> ServiceResult<ManipulationResult>;
    /// Undoes the latest manipulation of a lineage.
    async fn revert_event(&self, req: RevertRequest) -> ServiceResult<RevertResult>;
}

/// Paradoxes and anomalies: checked, monitored, corrected and isolated.
#[async_trait]
pub trait Paradoxes: Send + Sync {
    /// Checks proposed changes for paradoxes; nothing is written.
    async fn check_paradox(&self, req: ParadoxCheckRequest) -> ServiceResult<ParadoxReport>;
    /// Checks a timeline as it stands.
    async fn check_stability(&self, req: StabilityQuery) -> ServiceResult<ParadoxReport>;
    /// Scans a timeline for anomalies.
    async fn monitor_timeline(&self, req: MonitorQuery) -> ServiceResult<MonitorReport>;
    /// Follows a timeline's anomalies: a snapshot, then each one that appears or resolves,
    /// within a moment of the write that caused it. Refused up front (unknown timeline) like
    /// [`Paradoxes::monitor_timeline`].
    async fn watch_monitor(&self, req: MonitorWatch) -> ServiceResult<MonitorStream>;
    /// Says whether a significant event still holds in a timeline.
    async fn check_timeline(&self, req: SignificantEventQuery) -> ServiceResult<TimelineCheck>;
    /// Moves named events that happen before one of their causes to just after it.
    async fn correct_dissonance(&self, req: DissonanceRequest) -> ServiceResult<DissonanceResult>;
    /// Isolates an event (or its causal loop): the paradox checks stop at the isolation.
    async fn isolate_event(&self, req: IsolateRequest) -> ServiceResult<Isolation>;
    /// Lifts an isolation: the checks apply to its members again.
    async fn lift_isolation(&self, id: &IsolationId) -> ServiceResult<()>;
}

/// Scripts, scheduled and triggered manipulations, and what they did.
#[async_trait]
pub trait Automation: Send + Sync {
    /// Stores a script.
    async fn create_script(&self, req: NewScript) -> ServiceResult<Script>;
    /// The caller's scripts.
    async fn list_scripts(&self, page: PageRequest) -> ServiceResult<Page<Script>>;
    /// Deletes one of the caller's scripts.
    async fn delete_script(&self, id: &ScriptId) -> ServiceResult<()>;
    /// Schedules a manipulation at a wall-clock time.
    async fn schedule_manipulation(&self, req: NewSchedule) -> ServiceResult<Schedule>;
    /// Records an outside system's trigger; its actions run at the given time.
    async fn trigger_external_manipulation(&self, req: ExternalTrigger) -> ServiceResult<Schedule>;
    /// The caller's scheduled and triggered jobs.
    async fn list_schedules(&self, page: PageRequest) -> ServiceResult<Page<Schedule>>;
    /// Cancels one of the caller's jobs that has not run yet.
    async fn delete_schedule(&self, id: &ScheduleId) -> ServiceResult<()>;
    /// Automated actions, filtered by timeline and date range.
    async fn automation_log(&self, req: LogQuery) -> ServiceResult<Page<LogEntry>>;
}

/// Merges: weighed, made, reviewed and abandoned.
#[async_trait]
pub trait Merges: Send + Sync {
    /// Merges one timeline into an ancestor or a descendant of it, in one write.
    async fn merge_timelines(&self, req: MergeRequest) -> ServiceResult<MergeResult>;
    /// Recorded merges, oldest first.
    async fn list_merges(&self, page: PageRequest) -> ServiceResult<Page<Merge>>;
    /// One recorded merge.
    async fn get_merge(&self, id: &MergeId) -> ServiceResult<Merge>;
    /// The conflicts of the pending merges into a timeline, recomputed against it now.
    async fn review_conflicts(&self, req: ReviewQuery) -> ServiceResult<ConflictReview>;
    /// Resolves one conflict of a pending merge; the last resolution completes the merge.
    async fn resolve_conflict(&self, req: ResolveRequest) -> ServiceResult<ResolveResult>;
    /// Abandons a pending merge; its destination is untouched.
    async fn abort_merge(&self, id: &MergeId) -> ServiceResult<()>;
    /// What merging one timeline into another would weigh, lineage by lineage (a read).
    async fn diff_timelines(&self, req: DiffQuery) -> ServiceResult<TimelineDiff>;
}

/// Data entries stored in timelines, encrypted or plain, and how stale the caller's reads may be.
#[async_trait]
pub trait Data: Send + Sync {
    /// Stores an immutable data entry in a timeline at a time.
    async fn store_data(&self, req: StoreDataRequest) -> ServiceResult<DataEntryInfo>;
    /// The newest plain entry stored at exactly a time (or the one named), with every entry
    /// there.
    async fn retrieve_data(&self, req: RetrieveDataQuery) -> ServiceResult<RetrievedData>;
    /// Encrypts an object with the caller's key and stores only the ciphertext.
    async fn encrypt_data(&self, req: EncryptDataRequest) -> ServiceResult<DataEntryInfo>;
    /// Decrypts an entry with the caller's key; nothing is written.
    async fn decrypt_data(&self, req: DecryptDataRequest) -> ServiceResult<DecryptedData>;
    /// Reports a built-in index (it exists and is kept current); nothing is written.
    async fn report_index(&self, req: IndexRequest) -> ServiceResult<IndexReport>;
    /// Sets how stale the caller's own reads may be (bounded-staleness reads).
    async fn enable_caching(&self, req: CachingRequest) -> ServiceResult<CachingSetting>;
    /// Withdraws the caller's read-staleness setting `id`: their reads wait for the barrier
    /// again. Not found when `id` is not their setting in force.
    async fn disable_caching(&self, id: &CacheId) -> ServiceResult<()>;
}

/// The stored log checked against its chain, and what is served proved against it.
#[async_trait]
pub trait Integrity: Send + Sync {
    /// Checks the stored log's keyed hash chain record by record (all of it, or what came
    /// after the last recorded scan, else after the newest snapshot) and says whether anything
    /// bearing on a timeline was altered. Records the scan (a `ScanResult`), whose findings the
    /// monitor shows as `log_tampered` anomalies until a full scan no longer finds them.
    async fn detect_tampering(&self, req: TamperQuery) -> ServiceResult<TamperReport>;
    /// Proves a timeline's events and data entries as of a time: each passes when the verified
    /// log produces exactly what is served. Nothing is written.
    async fn validate_integrity(&self, req: IntegrityQuery) -> ServiceResult<IntegrityReport>;
}

/// Who may do what: access lists, restrictions and the access log.
#[async_trait]
pub trait Security: Send + Sync {
    /// Sets a timeline's access-control list, or removes it (`permissions: null`); needs the
    /// admin right on the timeline (an operator, the creator of a timeline without a list, or
    /// a name in its `admin` list).
    async fn set_access_control(
        &self,
        req: SetAccessControlRequest,
    ) -> ServiceResult<AccessControlSet>;
    /// A timeline's access control, with the caller's right on it.
    async fn access_control(&self, timeline: &TimelineId) -> ServiceResult<AccessControlView>;
    /// The access controls of the timelines the caller may see that have a list, with the
    /// caller's right on each (the others give every traveller read and write).
    async fn list_access_controls(
        &self,
        page: PageRequest,
    ) -> ServiceResult<Page<AccessControlView>>;
    /// Restricts a traveller, or lifts their restriction (operators only).
    async fn restrict_time_travel(&self, req: RestrictRequest) -> ServiceResult<Restricted>;
    /// The restrictions in force (operators only).
    async fn list_restrictions(&self, page: PageRequest) -> ServiceResult<Page<Restriction>>;
    /// A timeline's access log over a wall-clock range: its accepted changes (from the op log
    /// itself), and its reads and refused attempts counted per minute. Needs the admin right.
    async fn access_logs(&self, req: AccessLogQuery) -> ServiceResult<AccessLog>;
}

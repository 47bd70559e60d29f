//! What flows through the dashboard's one message queue: user intents ([`Action`]), terminal
//! input, ticks, and the answers of background service calls ([`Msg::Done`]).

use crossterm::event::{KeyEvent, MouseEvent};

use super::anchors::AnchorRow;
use super::panes::wizard::Verdict;
use crate::error::ServiceError;
use crate::model::{AnchorId, AnchorRecord};
use crate::service::{
    AccessControlSet, AccessControlView, AccessLog, Anchor, ClockState, ConflictReview,
    DissonanceResult, EventRecord, IntegrityReport, Isolation, Item, Journey, LogEntry,
    ManipulationResult, MergeResult, MonitorEvent, MonitorReport, ResolveResult, Restricted,
    Restriction, RevertResult, TamperReport, TimelineDiff, TimelineInfo, TravellerStatus,
};

pub use super::intent::Action;

/// Which background request an answer belongs to. Each slot has its own generation counter:
/// a newer request in a slot makes older answers in that slot stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Slot {
    /// `whoami`: the header's position and the connection probe.
    Whoami,
    /// The timelines list.
    Timelines,
    /// Event search results.
    Search,
    /// The monitor of the selected timeline.
    Monitor,
    /// The automation log.
    Log,
    /// Your anchors and items: the travel wizard's lists, the anchors a deletion names.
    WizardData,
    /// The wizard's paradox check.
    WizardCheck,
    /// A change the user asked for; never stale, always reported.
    Mutation,
    /// The causes an event's detail names.
    Causes,
    /// The traveller's journeys.
    Journeys,
    /// What the timeline picture shows.
    Picture,
    /// The anchors list and each anchor's stability.
    Anchors,
    /// The diff of two timelines (the diff view, the merge wizard).
    Diff,
    /// What the security screens show: an access-control list, the restrictions.
    Security,
    /// The access log the access screen shows.
    AccessLog,
    /// A tamper scan or an integrity validation.
    Integrity,
}

impl Slot {
    /// Refreshed on its own (on the tick, after a change), not asked for by a key press.
    pub fn is_background(self) -> bool {
        matches!(
            self,
            Slot::Whoami | Slot::Timelines | Slot::Monitor | Slot::Log
        )
    }
}

/// What a background call answered with.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Who and where the traveller is.
    Whoami(TravellerStatus),
    /// All timelines, and your rights on those with an access-control list (`None` when
    /// they could not be listed: the rights known before stay).
    Timelines(Vec<TimelineInfo>, Option<Vec<AccessControlView>>),
    /// Search results.
    Search(Vec<EventRecord>),
    /// Causes of the event in the detail view that the results do not hold.
    Causes(Vec<EventRecord>),
    /// A monitor scan.
    Monitor(MonitorReport),
    /// Automation log entries.
    Log(Vec<LogEntry>),
    /// The wizard's lists.
    WizardData {
        /// The traveller's anchors.
        anchors: Vec<Anchor>,
        /// The traveller's items.
        items: Vec<Item>,
    },
    /// The wizard's paradox verdict.
    WizardCheck(Verdict),
    /// A journey was made.
    Journey(Journey),
    /// A timeline was created.
    Created(TimelineInfo),
    /// A timeline was deleted.
    Deleted(crate::model::TimelineId, String),
    /// An event was added.
    EventAdded(EventRecord),
    /// An event was manipulated.
    Manipulated(ManipulationResult),
    /// A manipulation was reverted.
    Reverted(RevertResult),
    /// An anchor was set.
    AnchorSet(Anchor),
    /// An item was registered.
    ItemRegistered(Item),
    /// A draft change was checked.
    Checked(Verdict),
    /// The traveller's journeys, oldest first.
    Journeys(Vec<Journey>),
    /// What the timeline picture shows.
    Picture {
        /// The timeline drawn.
        timeline: crate::model::TimelineId,
        /// Its events.
        events: Vec<EventRecord>,
        /// The traveller's anchors.
        anchors: Vec<Anchor>,
    },
    /// The traveller's clock was paused or resumed (or already was).
    Clock(ClockState),
    /// The traveller moved along their own timeline by a duration.
    Shifted {
        /// The journey made.
        journey: Journey,
        /// Forward (fast-forward) or back (rewind).
        forward: bool,
        /// The duration as the user gave it.
        duration: String,
    },
    /// The traveller's anchors, active and spent, each with its stability.
    Anchors(Vec<AnchorRow>),
    /// An anchor's recorded environment was replaced.
    AnchorAdjusted(AnchorRecord),
    /// An anchor was deleted (its name is for the flash that reports it).
    AnchorDeleted(AnchorId, String),
    /// Two timelines compared, lineage by lineage.
    Diff(TimelineDiff),
    /// A merge was made (or waits for review, or had nothing to do).
    Merged(MergeResult),
    /// The conflicts of the merges waiting for review into a timeline.
    Review(ConflictReview),
    /// A conflict of a pending merge was resolved (the last one completes the merge).
    Resolved(ResolveResult),
    /// An event (or its causal loop) was isolated.
    Isolated(Isolation),
    /// An isolation was lifted.
    Lifted(crate::model::IsolationId),
    /// Dissonance was corrected (the event's description is for the flash).
    Aligned(DissonanceResult, String),
    /// A timeline's access-control list and your right on it.
    AccessControl(AccessControlView),
    /// An access-control list was set or removed.
    AccessSet(AccessControlSet),
    /// A timeline's access log.
    AccessLog(AccessLog),
    /// The restrictions in force.
    Restrictions(Vec<Restriction>),
    /// A traveller was restricted, or their restriction lifted.
    Restricted(Restricted),
    /// What a tamper scan found.
    Tamper(TamperReport),
    /// What an integrity validation found.
    Integrity(IntegrityReport),
}

impl Reply {
    /// An answer for the panes or the header, which the loop holds; every other answer is a
    /// modal component's.
    pub fn for_panes(&self) -> bool {
        matches!(
            self,
            Reply::Whoami(_)
                | Reply::Timelines(..)
                | Reply::Search(_)
                | Reply::Causes(_)
                | Reply::Monitor(_)
                | Reply::Log(_)
                | Reply::Deleted(..)
                | Reply::Clock(_)
        )
    }
}

/// A message on the dashboard's queue.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // moved once through the queue; boxing buys nothing
pub enum Msg {
    /// A key press (releases are dropped before they get here).
    Key(KeyEvent),
    /// A mouse event (only with `--mouse`).
    Mouse(MouseEvent),
    /// The terminal changed size.
    Resize(u16, u16),
    /// The refresh tick.
    Tick,
    /// A spinner frame while work is pending.
    Animate,
    /// A user intent, from the key map, the command line or the mouse.
    Action(Action),
    /// A background call finished.
    Done {
        /// Which kind of request.
        slot: Slot,
        /// The generation it was sent with.
        generation: u64,
        /// Its answer.
        result: Result<Reply, ServiceError>,
    },
    /// The monitor's stream brought something (see [`super::live`]).
    Pushed {
        /// The subscription it belongs to.
        generation: u64,
        /// What it brought.
        push: Push,
    },
}

/// What the stream task tells the dashboard.
#[derive(Clone, Debug)]
pub enum Push {
    /// The stream is open (the first change follows).
    Opened,
    /// The changes one rescan found (applied together, as one refresh).
    Changes(Vec<MonitorEvent>),
    /// The stream is gone (why, and whether the server could not be reached at all); it is
    /// opened again after a pause.
    Lost(String, bool),
}

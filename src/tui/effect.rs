//! What a component answers with: the [`Effect`]s the app's loop carries out for it (a
//! service call to make, a flash to show, an intent to route), so that no component reaches
//! into another's state or into the loop's.

use super::intent::Action;
use super::panes::PaneId;
use crate::model::{AnchorId, TimelineId};
use crate::service::{
    AccessLogQuery, AdjustAnchorRequest, DiffQuery, DissonanceRequest, GuideTravelRequest,
    IntegrityQuery, IsolateRequest, ManipulateRequest, MergeRequest, NewAnchor, NewEvent, NewItem,
    NewTimeline, ParadoxCheckRequest, ResolveRequest, RestrictRequest, RevertRequest, ReviewQuery,
    SetAccessControlRequest, ShiftRequest, TamperQuery, TravelRequest,
};

/// Something a component wants done that it cannot do itself.
#[derive(Clone, Debug)]
pub enum Effect {
    /// A service call to make.
    Call(Call),
    /// An informational flash in the footer.
    Info(String),
    /// An error flash in the footer.
    Error(String),
    /// A user intent, carried out as if its key were pressed.
    Action(Action),
    /// Focus a pane (the monitor and the log take the lower-right place as they get it).
    Focus(PaneId),
    /// Search everywhere at any time for events at this location (`:search PLACE`).
    Search(String),
    /// Filter the timelines by this text (`:filter TEXT`).
    Filter(String),
    /// Open the return wizard on this anchor.
    ReturnTo(AnchorId),
    /// Ask the service again for what a change touched.
    Reload(Reload),
    /// Quit the dashboard.
    Quit,
}

/// What the loop asks the service for (again) for a component: what a finished change made
/// stale, or what a component just opened needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reload {
    /// Everything the tick keeps fresh (you moved: the header, the panes).
    All,
    /// The timelines list (and with it your rights).
    Timelines,
    /// The timelines list, selecting this timeline (one just created) when it arrives.
    Select(TimelineId),
    /// Who and where you are (the header).
    Whoami,
    /// What shows events: the search, the monitor, the timelines, the picture.
    Events,
    /// The timeline picture's data, if it is open.
    Picture,
    /// Your anchors and items (the travel wizard's lists, the anchors a deletion names).
    WizardData,
    /// The causes the detail of the selected event names that the results do not hold.
    Causes,
}

/// A change or check a component asks the service for; the loop sends it in the background
/// and routes the answer back.
#[derive(Clone, Debug)]
pub enum Call {
    /// Create a timeline.
    Create(NewTimeline),
    /// Delete a timeline (its name is for the flash that reports it).
    Delete(TimelineId, String),
    /// A change sent safety checked: a refusal for paradoxes asks "apply anyway?".
    Checked(Checked),
    /// A change sent without the safety check (the user said apply anyway).
    Unchecked(Checked),
    /// Set an anchor.
    Anchor(NewAnchor),
    /// Register an item.
    Item(NewItem),
    /// Check a draft change for paradoxes (nothing is written); the verdict opens a report.
    CheckDraft(ParadoxCheckRequest),
    /// The travel wizard's paradox check of the journey it proposes.
    WizardCheck(ParadoxCheckRequest),
    /// Make a journey.
    Travel(TravelRequest),
    /// Make a journey to a time (and place) in a timeline.
    TravelInTime(GuideTravelRequest),
    /// Pause the traveller's own clock (`true`) or let it run again (`false`).
    Clock(bool),
    /// Fast-forward (`true`) or rewind the traveller along their own timeline.
    Shift(ShiftRequest, bool),
    /// Replace an anchor's recorded environment.
    AdjustAnchor(AdjustAnchorRequest),
    /// Delete an anchor (its name is for the flash that reports it).
    DeleteAnchor(AnchorId, String),
    /// List the anchors again and check each one's stability.
    CheckAnchors,
    /// The traveller's journeys (they open in a modal; nothing is written).
    Journeys,
    /// Compare two timelines lineage by lineage (nothing is written).
    Diff(DiffQuery),
    /// The conflicts of the merges waiting for review into a timeline (nothing is written).
    Review(ReviewQuery),
    /// Isolate an event (or its causal loop).
    Isolate(IsolateRequest),
    /// Lift an isolation of a timeline.
    Lift(TimelineId, crate::model::IsolationId),
    /// Move an event that happens before a cause to just after it (its description is for
    /// the flash).
    Align(DissonanceRequest, String),
    /// A timeline's access-control list and your right on it (nothing is written).
    AccessControl(TimelineId),
    /// Set a timeline's access-control list, or remove it.
    SetAccess(SetAccessControlRequest),
    /// A timeline's access log over a wall-clock range (nothing is written).
    AccessLog(AccessLogQuery),
    /// The restrictions in force (operators; nothing is written).
    Restrictions,
    /// Restrict a traveller, or lift their restriction (operators).
    Restrict(RestrictRequest),
    /// Read the stored log's hash chain for tampering.
    Tamper(TamperQuery),
    /// Prove a timeline's events and data entries against the verified log (nothing is
    /// written).
    Validate(IntegrityQuery),
}

impl Call {
    /// The change, when this is one to check for paradoxes first (a refusal then asks whether
    /// to apply it anyway).
    pub fn checked(&self) -> Option<&Checked> {
        match self {
            Call::Checked(change) => Some(change),
            _ => None,
        }
    }
}

/// What a component answers a key with: whether it closes, and what the loop should do.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The component is done and leaves the screen.
    pub close: bool,
    /// What the loop carries out, in order.
    pub effects: Vec<Effect>,
}

impl Outcome {
    /// The component stays, and wants nothing done.
    pub fn keep() -> Self {
        Self::default()
    }

    /// The component closes.
    pub fn close() -> Self {
        Self {
            close: true,
            effects: Vec::new(),
        }
    }

    /// The component stays, and wants `effect` done.
    pub fn with(effect: Effect) -> Self {
        Self {
            close: false,
            effects: vec![effect],
        }
    }
}

/// A change the dashboard sends safety checked, kept until its answer so a refusal can be
/// answered with "apply anyway?".
#[derive(Clone, Debug)]
pub enum Checked {
    /// A new event.
    AddEvent(TimelineId, NewEvent),
    /// A manipulation.
    Manipulate(ManipulateRequest),
    /// A revert.
    Revert(RevertRequest),
    /// A merge of one timeline into another.
    Merge(MergeRequest),
    /// A resolution of a pending merge's conflict.
    Resolve(ResolveRequest),
}

//! Refusing before sending: a change to a timeline your access-control right does not let you
//! change, or any change while an operator restricts you or your token allows reading only,
//! is refused before any request goes out, with the reason. The service checks again (another
//! dashboard may have changed the lists meanwhile); its refusal is shown as any other.

use crate::error::ServiceError;
use crate::model::TimelineId;
use crate::service::{RestrictionLevel, Right, TravellerStatus};
use crate::tui::effect::{Call, Checked};
use crate::tui::intent::Action;
use crate::tui::panes::timelines::TimelinesPane;

use super::{READ_ONLY_CHECK, READ_ONLY_TOKEN};

/// What the dashboard knows of your rights: who you are, and your right on each timeline.
#[derive(Clone, Copy, Debug)]
pub struct Rights<'a> {
    /// Who you are (operator, restricted, a read-only token), once known.
    pub whoami: Option<&'a TravellerStatus>,
    /// The timelines, with your right on each.
    pub timelines: &'a TimelinesPane,
}

/// Whether who you are (`status`) keeps you from changing anything shared: a restriction, or a
/// token that allows reading only.
pub fn changes_refused(status: &TravellerStatus, timelines: &TimelinesPane) -> bool {
    let rights = Rights {
        whoami: Some(status),
        timelines,
    };
    rights.refused_action(Action::Review).is_some()
}

impl Rights<'_> {
    /// Why you may not make a change that needs `needed` on `timeline`, as the footer says it;
    /// `None` when, as far as the dashboard knows, you may.
    pub fn refusal(&self, timeline: &TimelineId, needed: Right) -> Option<String> {
        if self.whoami.is_some_and(|w| w.operator) {
            return None; // operators have every right, and are never restricted
        }
        if let Some(why) = self.restricted().or_else(|| self.read_only_token()) {
            return Some(why);
        }
        let right = self.timelines.right_of(timeline);
        if right >= needed {
            return None;
        }
        let named = match self.timelines.get(timeline) {
            Some(t) => format!("{} ({timeline})", t.name),
            None => timeline.to_string(),
        };
        Some(match needed {
            Right::Admin if right == Right::Write => format!(
                "You may write {named} but not administer it (delete it, change who may use \
                 it): ask its admins."
            ),
            Right::Admin => format!(
                "You may read {named} but not administer it (delete it, change who may use \
                 it): ask its admins."
            ),
            _ => format!("You may read {named} but not write it: ask its admins."),
        })
    }

    /// Why an operator's restriction keeps you from changing anything shared, if it does
    /// (every level but `unrestricted` does; operators are never restricted).
    pub fn restricted(&self) -> Option<String> {
        let whoami = self.whoami.filter(|w| !w.operator)?;
        let r = whoami.restriction.as_ref()?;
        (r.level != RestrictionLevel::Unrestricted).then(|| {
            ServiceError::TravelRestricted {
                level: r.level.as_str().into(),
                allows: r.level.allows().into(),
            }
            .explain()
        })
    }

    /// Why your token keeps you from changing anything, if it allows reading only (operators'
    /// tokens allow everything).
    pub fn read_only_token(&self) -> Option<String> {
        self.whoami
            .as_ref()
            .is_some_and(|w| w.read_only_token && !w.operator)
            .then(|| READ_ONLY_TOKEN.to_owned())
    }

    /// Why `action` is refused before it opens anything, if it makes a change your token or an
    /// operator's restriction does not allow (its form would only lead to a refusal).
    pub fn refused_action(&self, action: Action) -> Option<String> {
        use Action as A;
        match action {
            // Shared state: no restricted traveller changes it either.
            A::NewTimeline
            | A::ParallelTimeline
            | A::DeleteTimeline
            | A::AddEvent
            | A::Manipulate
            | A::Revert
            | A::Isolate
            | A::CorrectDissonance
            | A::Merge
            // The review is where a merge's conflicts are resolved: changes, every key of it.
            | A::Review => self.restricted().or_else(|| self.read_only_token()),
            // Your own journeys, anchors, items and clock: limited_access keeps some of them
            // (as the service decides: returns home, your anchors and items, your clock).
            A::SetAnchor | A::ReturnToAnchor | A::RegisterItem | A::PauseResume => self
                .restricted_below(RestrictionLevel::LimitedAccess)
                .or_else(|| self.read_only_token()),
            A::Travel | A::FastForward | A::Rewind => {
                self.restricted().or_else(|| self.read_only_token())
            }
            // A check writes nothing, but the service asks for the write scope for it.
            A::CheckParadox => self
                .restricted_at(RestrictionLevel::NoAccess)
                .or_else(|| self.read_only_token().map(|_| READ_ONLY_CHECK.to_owned())),
            // Screens that only read, but ask the service for what they show: no_access
            // refuses every read, so they would open on a refusal.
            A::Diff
            | A::Journeys
            | A::Anchors
            | A::Isolations
            | A::TimelineView => self.restricted_at(RestrictionLevel::NoAccess),
            _ => None,
        }
    }

    /// Why your restriction keeps you from anything `level` refuses, when you are restricted to
    /// exactly `level`.
    fn restricted_at(&self, level: RestrictionLevel) -> Option<String> {
        if self.level() == Some(level) {
            self.restricted()
        } else {
            None
        }
    }

    /// The level an operator restricted you to, if any.
    fn level(&self) -> Option<RestrictionLevel> {
        self.whoami
            .and_then(|w| w.restriction.as_ref())
            .map(|r| r.level)
    }

    /// Why your restriction keeps you from what `level` still allows: `restricted` for a
    /// level under it (`read_only`, `no_access` below `limited_access`), `None` at it.
    fn restricted_below(&self, level: RestrictionLevel) -> Option<String> {
        if self.level() == Some(level) {
            return None;
        }
        self.restricted()
    }

    /// Why `call` is refused before it is sent, if it is.
    pub fn refused_call(&self, call: &Call) -> Option<String> {
        match call {
            // A new timeline is shared state too: no restricted traveller makes one.
            Call::Create(_) => self.restricted().or_else(|| self.read_only_token()),
            _ => self
                .written_by(call)
                .and_then(|(timeline, needed)| self.refusal(&timeline, needed)),
        }
    }

    /// The timeline a call changes and the right it needs there, for the calls that change
    /// a timeline.
    pub fn written_by(&self, call: &Call) -> Option<(TimelineId, Right)> {
        let or_primary = |id: &Option<TimelineId>| id.clone().unwrap_or_else(TimelineId::primary);
        let write = |id: TimelineId| Some((id, Right::Write));
        match call {
            Call::Delete(id, _) => Some((id.clone(), Right::Admin)),
            Call::Checked(change) | Call::Unchecked(change) => match change {
                Checked::AddEvent(id, _) => write(id.clone()),
                Checked::Manipulate(req) => write(or_primary(&req.timeline_id)),
                Checked::Revert(req) => write(or_primary(&req.timeline_id)),
                Checked::Merge(req) => write(req.destination_timeline_id.clone()),
                Checked::Resolve(req) => req.merged_timeline_id.clone().and_then(write),
            },
            Call::Isolate(req) => write(or_primary(&req.timeline_id)),
            Call::Lift(timeline, _) => write(timeline.clone()),
            Call::Align(req, _) => write(req.timeline_id.clone()),
            Call::SetAccess(req) => Some((req.timeline_id.clone(), Right::Admin)),
            _ => None,
        }
    }
}

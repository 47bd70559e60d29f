//! What each action opens on top: the form, question, wizard or screen it asks for, built from
//! what the dashboard shows ([`Around`]), with the calls it needs to fill itself. What cannot
//! be opened (nothing selected, a right you lack) is said instead, before anything is sent.

use super::anchors::AnchorsList;
use super::confirm::Confirm;
use super::effect::{Call, Effect, Reload};
use super::forms;
use super::intent::Action;
use super::isolations::IsolationsScreen;
use super::merge::{MergeWizard, relatives};
use super::modal::{Around, Modal};
use super::panes::PaneId;
use super::panes::wizard::Wizard;
use super::picture::Picture;
use super::security::access::{AccessScreen, Branched};
use super::security::integrity::IntegrityScreen;
use super::security::restrictions::RestrictionsScreen;
use super::security::rights::Rights;
use super::time_controls::Shift;
use crate::model::{EventStatus, TimelineId};
use crate::service::{Right, ScanDepth, TimelineInfo};

/// What an action opened, and what the loop should do for it.
#[derive(Debug, Default)]
pub struct Opened {
    /// What goes on top, if anything does.
    pub modal: Option<Modal>,
    /// The calls it needs, or why nothing opened.
    pub effects: Vec<Effect>,
}

impl Opened {
    fn modal(modal: Modal, effects: Vec<Effect>) -> Self {
        Self {
            modal: Some(modal),
            effects,
        }
    }

    fn form(form: crate::tui::widgets::Form<forms::FormKind>) -> Self {
        Self::modal(Modal::Form(Box::new(form)), Vec::new())
    }

    fn effect(effect: Effect) -> Self {
        Self {
            modal: None,
            effects: vec![effect],
        }
    }

    fn error(why: impl Into<String>) -> Self {
        Self::effect(Effect::Error(why.into()))
    }
}

/// Opens what `action` asks for, `focus` being the focused pane (the paradox check starts
/// from the event selected in the search when it has the focus).
pub fn open(action: Action, around: &Around<'_>, focus: PaneId) -> Opened {
    use Action as A;
    let selected = around.timelines.selected();
    let rights = Rights {
        whoami: around.whoami,
        timelines: around.timelines,
    };
    match action {
        A::NewTimeline => {
            let primary = around.timelines.name_of(&TimelineId::primary());
            Opened::form(forms::new_timeline(&primary, selected))
        }
        A::ParallelTimeline => match selected {
            Some(base) => Opened::form(forms::parallel_timeline(base)),
            None => Opened::error("Select a timeline to branch from first."),
        },
        A::DeleteTimeline => match selected {
            Some(t) if t.id.is_primary() => {
                Opened::error("The primary timeline cannot be deleted.")
            }
            Some(t) if let Some(why) = rights.refusal(&t.id, Right::Admin) => Opened::error(why),
            // Refused by the service anyway: said before asking.
            Some(t) if around.whoami.is_some_and(|w| w.timeline_id == t.id) => {
                Opened::error(format!(
                    "You are in {} yourself: travel out of it (t) before deleting it.",
                    t.name
                ))
            }
            Some(t) => Opened::modal(
                Modal::Confirm(Confirm::DeleteTimeline(t.id.clone(), t.name.clone(), None)),
                // The question names the anchors the deletion leaves without a way back.
                vec![Effect::Reload(Reload::WizardData)],
            ),
            None => Opened::error("Select a timeline to delete first."),
        },
        A::AddEvent => match selected {
            Some(t) if let Some(why) = rights.refusal(&t.id, Right::Write) => Opened::error(why),
            Some(t) => {
                // The present, to the second: a default a person can read and edit.
                let time = t
                    .destination_time
                    .unwrap_or_else(|| chrono::SubsecRound::trunc_subsecs(around.now, 0));
                Opened::form(forms::add_event(t, time))
            }
            None => Opened::error("Select a timeline to add the event to first."),
        },
        A::Manipulate | A::Revert | A::Isolate | A::CorrectDissonance => {
            on_event(action, around, &rights)
        }
        A::SetAnchor => {
            let at = around.whoami.map_or(around.now, |w| w.time);
            Opened::form(forms::anchor(at))
        }
        A::Travel | A::ReturnToAnchor => Opened::modal(
            Modal::Wizard(Box::new(Wizard::new(action == A::ReturnToAnchor))),
            vec![Effect::Reload(Reload::WizardData)],
        ),
        A::RegisterItem => Opened::form(forms::register_item()),
        A::CheckParadox => {
            let Some(t) = selected else {
                return Opened::error("Select a timeline to check first.");
            };
            let (event, time) = match (focus, around.search.selected()) {
                (PaneId::Search, Some(e)) => (
                    e.event_id.to_string(),
                    crate::tui::widgets::typed_time(&e.time),
                ),
                _ => (String::new(), String::new()),
            };
            Opened::form(forms::check_draft(t, event, time))
        }
        A::TimelineView => match selected {
            Some(t) => Opened::modal(
                Modal::Picture(Box::new(Picture::new(t.id.clone()))),
                vec![Effect::Reload(Reload::Picture)],
            ),
            None => Opened::error("No timeline selected."),
        },
        A::Journeys => Opened::effect(Effect::Call(Call::Journeys)),
        A::Isolations => match selected {
            Some(t) if t.isolations.is_empty() => Opened::effect(Effect::Info(format!(
                "No isolation is in force on {}: I in the event search isolates an event.",
                t.name
            ))),
            Some(t) => Opened::modal(
                Modal::Isolations(Box::new(IsolationsScreen::new(
                    t.id.clone(),
                    t.name.clone(),
                    t.isolations.clone(),
                ))),
                Vec::new(),
            ),
            None => Opened::error("Select a timeline first."),
        },
        A::PauseResume => {
            // Resumed when the header says paused, else paused; a stale header costs only
            // an "already" answer, as the service writes nothing then.
            let paused = around.whoami.is_some_and(|w| w.position.paused);
            Opened::effect(Effect::Call(Call::Clock(!paused)))
        }
        A::FastForward | A::Rewind => Opened::modal(
            Modal::Shift(Box::new(Shift::new(action == A::FastForward))),
            Vec::new(),
        ),
        A::Anchors => Opened::modal(
            Modal::Anchors(Box::new(AnchorsList::new())),
            vec![Effect::Call(Call::CheckAnchors)],
        ),
        A::Diff | A::Merge => merge(action == A::Diff, around, &rights),
        A::AccessControl => security(action, around),
        A::Review => review(around),
        A::Restrictions | A::Integrity => security(action, around),
        // The rest are the loop's: moves between and inside the panes.
        _ => Opened::default(),
    }
}

/// The return wizard on `anchor` (an anchor's enter in the anchors list).
pub fn return_to(anchor: crate::model::AnchorId) -> Opened {
    let mut wizard = Wizard::new(true);
    wizard.preselect_anchor = Some(anchor);
    Opened::modal(
        Modal::Wizard(Box::new(wizard)),
        vec![Effect::Reload(Reload::WizardData)],
    )
}

/// The change of the event selected in the search: a manipulation's form, or the question
/// before a revert, an isolation or an alignment.
fn on_event(action: Action, around: &Around<'_>, rights: &Rights<'_>) -> Opened {
    use Action as A;
    let (Some(event), Some(timeline)) = (
        around.search.selected().cloned(),
        around.search.timeline.clone(),
    ) else {
        return Opened::error("Search for an event and select it first (/ then enter).");
    };
    if let Some(why) = rights.refusal(&timeline, Right::Write) {
        return Opened::error(why);
    }
    match action {
        A::Manipulate => Opened::form(forms::manipulate(timeline, &event)),
        A::Isolate => Opened::modal(
            Modal::Confirm(Confirm::Isolate(timeline, event)),
            Vec::new(),
        ),
        // Align moves an event after its latest cause: one without causes has nowhere to go
        // (the question waited for causes to be looked up that do not exist).
        A::CorrectDissonance if event.causes.is_empty() => Opened::error(format!(
            "{} ({}) has no causes: nothing to align (align moves an event to one second after \
             its latest cause).",
            event.description, event.event_id
        )),
        A::CorrectDissonance => {
            let cause = around.search.latest_cause(&event).map(Box::new);
            Opened::modal(
                Modal::Confirm(Confirm::Align(timeline, event, cause)),
                vec![Effect::Reload(Reload::Causes)],
            )
        }
        // Nothing to undo on an event never changed (on schedule, replacing nothing): said
        // before asking, as the service would refuse it after the question. A superseded or
        // reverted version still reverts its lineage's latest change.
        _ if event.supersedes.is_none() && event.status == EventStatus::OnSchedule => {
            Opened::error(format!(
                "{} ({}) was never changed: there is nothing to revert.",
                event.description, event.event_id
            ))
        }
        _ => Opened::modal(Modal::Confirm(Confirm::Revert(timeline, event)), Vec::new()),
    }
}

/// The diff (`diff_only`) or the merge wizard from the selected timeline, its read-only sides
/// marked (and refused as B before any diff).
fn merge(diff_only: bool, around: &Around<'_>, rights: &Rights<'_>) -> Opened {
    let Some(t) = around.timelines.selected() else {
        return Opened::error("Select a timeline first.");
    };
    match MergeWizard::from_tree(&around.timelines.all, t, diff_only) {
        Ok(mut w) => {
            for side in w.sides.iter_mut().chain(std::iter::once(&mut w.source)) {
                side.read_only = rights.refusal(&side.id, Right::Write);
            }
            Opened::modal(Modal::Merge(Box::new(w)), Vec::new())
        }
        Err(why) => Opened::error(why),
    }
}

/// The review of the merges waiting into the selected timeline (marked ⇄); on a timeline whose
/// ⇄ merges all come from it, the review where they go (when one timeline on its line of
/// descent has merges waiting into it).
fn review(around: &Around<'_>) -> Opened {
    let Some(mut t) = around.timelines.selected() else {
        return Opened::error("Select a timeline first.");
    };
    if t.pending_into == 0 && t.pending_merges > 0 {
        let into: Vec<&TimelineInfo> = relatives(&around.timelines.all, &t.id)
            .iter()
            .filter(|side| side.pending > 0)
            .filter_map(|side| around.timelines.get(&side.id))
            .collect();
        match into[..] {
            [one] => t = one,
            _ => {
                let names: Vec<&str> = into.iter().map(|o| o.name.as_str()).collect();
                return Opened::error(format!(
                    "The merges from {} wait for review where they go{}: select it and press r.",
                    t.name,
                    if names.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", names.join(", "))
                    }
                ));
            }
        }
    }
    match MergeWizard::review_into(t, relatives(&around.timelines.all, &t.id)) {
        Some((wizard, asked)) => Opened::modal(Modal::Merge(Box::new(wizard)), asked.effects),
        None => Opened::error(format!(
            "No merge into {} waits for review (a timeline marked ⇄ has one).",
            t.name
        )),
    }
}

/// A security screen: the access screen or the integrity check of the selected timeline, or
/// the restrictions (operators), each asking for what it shows.
fn security(action: Action, around: &Around<'_>) -> Opened {
    let operator = around.whoami.is_some_and(|w| w.operator);
    if action == Action::Restrictions {
        if around.whoami.is_some() && !operator {
            return Opened::error(
                "The restrictions are for operators: it takes a token with the admin scope (the \
                 embedded dashboard is one).",
            );
        }
        let screen = Modal::Restrictions(Box::new(RestrictionsScreen::new()));
        return Opened::modal(screen, vec![Effect::Call(Call::Restrictions)]);
    }
    let Some(t) = around.timelines.selected() else {
        return Opened::error(if action == Action::Integrity {
            "Select a timeline to check first."
        } else {
            "Select a timeline first."
        });
    };
    if action == Action::Integrity {
        let mut screen = IntegrityScreen::new(t.id.clone(), t.name.clone());
        let call = screen.scan(ScanDepth::Recent);
        return Opened::modal(Modal::Integrity(Box::new(screen)), vec![Effect::Call(call)]);
    }
    let me = around.whoami.map(|w| w.traveller.clone());
    let mut screen = AccessScreen::new(t.id.clone(), t.name.clone(), operator, me);
    screen.creator.clone_from(&t.created_by);
    screen.branched = t
        .parent
        .as_ref()
        .zip(t.created_by.clone())
        .map(|(parent, by)| Branched {
            from: around.timelines.name_of(parent),
            by,
            at: t.created_at,
        });
    let call = screen.fetch();
    Opened::modal(Modal::Access(Box::new(screen)), vec![Effect::Call(call)])
}

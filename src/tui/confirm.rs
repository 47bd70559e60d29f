//! Questions before something that destroys, and the safety-checked change behind them.
//!
//! A [`Confirm`] asks yes or no (delete a timeline, revert an event, apply a change the safety
//! check refused) and draws itself; a [`Checked`] change is kept until its answer so that a
//! refusal for paradoxes can be answered with "apply anyway?".

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::effect::{Call, Checked, Effect, Reload};
use super::forms::FormKind;
use super::theme::Palette;
use super::widgets::{Form, centered, fmt_time, modal};
use crate::model::{AnchorId, AnchorStatus, EventId, TimelineId};
use crate::paradox::{Paradox, ParadoxKind};
use crate::service::{Anchor, DissonanceResult, Isolation, RevertResult};
use crate::service::{
    DissonanceRequest, EventRecord, IsolateRequest, IsolationType, RevertRequest,
};

/// A question before something that destroys.
#[derive(Debug)]
pub enum Confirm {
    /// Delete a timeline; your active anchors in it once known (each named), which the
    /// deletion leaves without a way back.
    DeleteTimeline(TimelineId, String, Option<Vec<String>>),
    /// Revert an event's latest change.
    Revert(TimelineId, EventRecord),
    /// Delete one of your anchors (named as the list names it).
    DeleteAnchor(AnchorId, String),
    /// Isolate an event and the causal loop it lies on.
    Isolate(TimelineId, EventRecord),
    /// Move an event that happens before one of its causes to just after it; its latest cause,
    /// once known (the question then says where the event goes).
    Align(TimelineId, EventRecord, Option<Box<EventRecord>>),
    /// The safety check refused a change: make it anyway?
    ApplyAnyway {
        /// The change, sent again without the check on yes.
        change: Checked,
        /// The refusal, naming the paradoxes the change would add.
        why: String,
        /// The form the change came from: back in view (pending on yes, as typed on no).
        form: Option<Box<Form<FormKind>>>,
    },
}

impl Confirm {
    /// Draws the question as a modal over `area`, as tall as its wrapped text.
    pub fn render(&self, frame: &mut Frame<'_>, area: Rect, p: &Palette) {
        let (title, question) = match self {
            Confirm::DeleteTimeline(id, name, anchors) => (
                "Delete timeline",
                format!(
                    "Delete timeline {name} ({id}) and its own events? Journeys into it stay in history.{}",
                    match anchors.as_deref() {
                        None => "\n\n(Looking for your anchors in it…)".to_owned(),
                        Some([]) => String::new(),
                        Some(named) => format!(
                            "\n\nYour active {} in it can no longer be returned to: {}.",
                            if named.len() == 1 {
                                "anchor"
                            } else {
                                "anchors"
                            },
                            named.join(", ")
                        ),
                    }
                ),
            ),
            Confirm::Revert(_, e) => (
                "Revert event",
                format!(
                    "Undo the latest change of {} ({})? It is checked for paradoxes first.",
                    e.description, e.event_id
                ),
            ),
            Confirm::DeleteAnchor(id, name) => (
                "Delete anchor",
                format!(
                    "Delete anchor {name} ({id})? It stops being a way back; journeys that used it still name it. (n keeps it)"
                ),
            ),
            Confirm::Isolate(_, e) => (
                "Isolate event",
                format!(
                    "Isolate {} ({}) and the causal loop it lies on, if any? The paradox checks stop \
                     at the isolation; no event is rewritten.",
                    e.description, e.event_id
                ),
            ),
            Confirm::Align(_, e, cause) => {
                ("Correct dissonance", align_question(e, cause.as_deref()))
            }
            Confirm::ApplyAnyway { why, .. } => (
                "Paradox",
                format!("{why}\n\nApply it anyway? (n keeps it unmade)"),
            ),
        };
        let mut lines: Vec<Line> = question.lines().map(Line::from).collect();
        lines.push(Line::default());
        lines.push(Line::from(vec![
            Span::styled("y", p.key),
            Span::styled(" yes   ", p.dim),
            Span::styled("n", p.key),
            Span::styled(" no", p.dim),
        ]));
        let width = area.width.saturating_sub(10).min(70);
        let text = Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false });
        // As tall as the wrapped question (a refusal may name several paradoxes).
        let needed = u16::try_from(text.line_count(width.saturating_sub(2))).unwrap_or(u16::MAX);
        let rect = centered(
            area,
            width,
            needed.saturating_add(2).min(area.height.saturating_sub(2)),
        );
        let inner = modal(frame, rect, title, p);
        frame.render_widget(text, inner);
    }
}

/// What a question answers a key with.
#[derive(Debug)]
pub enum Answer {
    /// Still asking.
    Ask(Confirm),
    /// Answered: the question closes, and the loop does what was said yes to (if anything).
    Closed(Vec<Effect>),
    /// Answered about a form's change: the form comes back into view (pending on yes, as
    /// typed on no).
    Form(Box<Form<FormKind>>, Vec<Effect>),
}

impl Confirm {
    /// A key on the question.
    pub fn key(self, key: KeyEvent) -> Answer {
        match key.code {
            // Making a paradox takes an explicit y: an Enter meant for the form is no yes.
            KeyCode::Enter if matches!(self, Confirm::ApplyAnyway { .. }) => Answer::Ask(self),
            KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => self.confirmed(),
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => match self {
                Confirm::ApplyAnyway {
                    form: Some(mut form),
                    why,
                    ..
                } => {
                    form.refuse(format!("Not applied. {why}"), None);
                    Answer::Form(form, Vec::new())
                }
                _ => Answer::Closed(Vec::new()),
            },
            _ => Answer::Ask(self),
        }
    }

    /// What the user said yes to.
    fn confirmed(self) -> Answer {
        match self {
            Confirm::DeleteTimeline(id, name, _) => {
                Answer::Closed(vec![Effect::Call(Call::Delete(id, name))])
            }
            Confirm::DeleteAnchor(id, name) => {
                Answer::Closed(vec![Effect::Call(Call::DeleteAnchor(id, name))])
            }
            Confirm::Isolate(timeline, event) => {
                Answer::Closed(vec![Effect::Call(Call::Isolate(IsolateRequest {
                    event_id: event.event_id,
                    isolation_type: IsolationType::ClosedLoop,
                    description: None,
                    timeline_id: Some(timeline),
                }))])
            }
            Confirm::Align(timeline, event, _) => Answer::Closed(vec![Effect::Call(Call::Align(
                DissonanceRequest {
                    timeline_id: timeline,
                    conflicting_events: vec![event.event_id],
                },
                event.description,
            ))]),
            Confirm::Revert(timeline, event) => Answer::Closed(vec![Effect::Call(Call::Checked(
                Checked::Revert(RevertRequest {
                    event_id: event.event_id,
                    timeline_id: Some(timeline),
                    safety_check: true,
                }),
            ))]),
            Confirm::ApplyAnyway { change, form, .. } => {
                let send = vec![Effect::Call(Call::Unchecked(change))];
                match form {
                    Some(mut form) => {
                        form.pending = true;
                        form.clear_refusal();
                        Answer::Form(form, send)
                    }
                    None => Answer::Closed(send),
                }
            }
        }
    }
}

/// The correct-dissonance question: where the event goes (one second after its latest cause,
/// named with its time) or that it is after its causes already; while the causes are looked
/// up, the rule alone.
fn align_question(e: &EventRecord, cause: Option<&EventRecord>) -> String {
    let what = format!("{} ({})", e.description, e.event_id);
    let refused = "A move that would leave a paradox is refused.";
    match cause {
        Some(c) if e.time <= c.time => format!(
            "Move {what} from {} to {}, one second after its latest cause, {} ({})? {refused}",
            fmt_time(&e.time),
            fmt_time(&(c.time + chrono::TimeDelta::seconds(1))),
            c.description,
            fmt_time(&c.time)
        ),
        Some(c) => format!(
            "{what} happens after its latest cause already ({}, {}): nothing to move. Ask \
             anyway?",
            c.description,
            fmt_time(&c.time)
        ),
        None => format!(
            "Move {what} to one second after its latest cause, if it happens before one (its \
             causes are being looked up)? {refused}"
        ),
    }
}

impl Confirm {
    /// Your anchors arrived: a deletion's question names the active ones in its timeline.
    pub fn anchors_known(&mut self, anchors: &[Anchor]) {
        if let Confirm::DeleteTimeline(id, _, named @ None) = self {
            *named = Some(
                anchors
                    .iter()
                    .filter(|a| &a.timeline == id && a.status == AnchorStatus::Active)
                    .map(|a| a.named())
                    .collect(),
            );
        }
    }
}

/// A revert was made: said, and what shows events asked again.
pub fn reverted(r: &RevertResult) -> Vec<Effect> {
    vec![
        Effect::Info(format!(
            "Reverted {}; {} stands again.",
            r.reverted_event_id, r.original_event_id
        )),
        Effect::Reload(Reload::Events),
    ]
}

/// An isolation was made: what it contained, and what the timeline's ⚠ still counts and why
/// isolating did not clear it (events named by `name`, as the search shows them).
pub fn isolated(isolation: &Isolation, name: &dyn Fn(&EventId) -> String) -> Vec<Effect> {
    let members = isolation.members.len();
    let contained = isolation.contained.len();
    let mut text = format!(
        "Isolated {members} event{} ({}); {contained} paradox{} contained",
        plural(members, "s"),
        isolation.isolation_id,
        plural(contained, "es")
    );
    if !isolation.left.is_empty() {
        let left = isolation.left.len();
        let named: Vec<String> = isolation
            .left
            .iter()
            .map(|p| paradox_in_short(p, name))
            .collect();
        text.push_str(&format!(
            "; {left} paradox{} left inside the isolation: {} — {}",
            plural(left, "es"),
            named.join("; "),
            if members > 1 {
                "order among its members still counts, and no move puts a loop in order, so it \
                 stays while the loop does"
            } else {
                "an isolation stops only what crosses its edge"
            }
        ));
    }
    text.push('.');
    vec![Effect::Info(text), Effect::Reload(Reload::Events)]
}

/// Dissonance was corrected: where the event went, and what shows events asked again.
pub fn aligned(result: &DissonanceResult, description: &str) -> Vec<Effect> {
    let text = match result.moves.as_slice() {
        [] => format!("Nothing to align: '{description}' happens after its causes."),
        [one] => format!(
            "Aligned: '{description}' moved from {} to {}.",
            fmt_time(&one.from),
            fmt_time(&one.to)
        ),
        moves => format!("Aligned: {} events moved.", moves.len()),
    };
    vec![Effect::Info(text), Effect::Reload(Reload::Events)]
}

/// `suffix` when `n` is not one.
fn plural(n: usize, suffix: &'static str) -> &'static str {
    if n == 1 { "" } else { suffix }
}

/// A paradox in few words: an effect before its cause by the events' names, anything else in
/// the checker's words.
fn paradox_in_short(p: &Paradox, name: &dyn Fn(&EventId) -> String) -> String {
    match (p.kind, p.events.as_slice()) {
        (ParadoxKind::CausalOrder | ParadoxKind::Grandfather, [effect, cause]) => {
            format!("{} before its cause {}", name(effect), name(cause))
        }
        _ => p.description.trim_end_matches('.').to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::NewEvent;
    use crate::tui::effect::Call;
    use crate::tui::unit::{key, palette, screen};

    fn delete() -> Confirm {
        Confirm::DeleteTimeline(TimelineId::primary(), "Tesla 1889".into(), Some(Vec::new()))
    }

    fn apply_anyway(form: bool) -> Confirm {
        let change = Checked::AddEvent(
            TimelineId::primary(),
            NewEvent {
                description: "Tesla stays".into(),
                time: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
                location: "Paris".into(),
                causes: Vec::new(),
                fixed_point: false,
                safety_check: true,
            },
        );
        Confirm::ApplyAnyway {
            change,
            why: "It would add a causal loop.".into(),
            form: form.then(|| Box::new(crate::tui::forms::register_item())),
        }
    }

    #[test]
    fn yes_deletes_no_and_esc_close_anything_else_keeps_asking() {
        assert!(matches!(
            delete().key(key("y")),
            Answer::Closed(e) if matches!(&e[..], [Effect::Call(Call::Delete(_, name))] if name == "Tesla 1889")
        ));
        assert!(matches!(delete().key(key("n")), Answer::Closed(e) if e.is_empty()));
        assert!(matches!(delete().key(key("esc")), Answer::Closed(e) if e.is_empty()));
        assert!(matches!(delete().key(key("x")), Answer::Ask(_)));
    }

    #[test]
    fn making_a_paradox_takes_an_explicit_y_and_brings_the_form_back_pending() {
        assert!(matches!(
            apply_anyway(true).key(key("enter")),
            Answer::Ask(_)
        ));
        let Answer::Form(form, effects) = apply_anyway(true).key(key("y")) else {
            panic!("y brings the form back");
        };
        assert!(form.pending && form.refusal.is_none());
        assert!(matches!(
            &effects[..],
            [Effect::Call(Call::Unchecked(Checked::AddEvent(..)))]
        ));
        let Answer::Closed(effects) = apply_anyway(false).key(key("y")) else {
            panic!("without a form the question just closes");
        };
        assert!(matches!(&effects[..], [Effect::Call(Call::Unchecked(_))]));
    }

    #[test]
    fn no_brings_the_form_back_as_typed_with_the_reason() {
        let Answer::Form(form, effects) = apply_anyway(true).key(key("n")) else {
            panic!("n brings the form back");
        };
        assert!(effects.is_empty() && !form.pending);
        assert_eq!(
            form.refusal.as_deref(),
            Some("Not applied. It would add a causal loop.")
        );
    }

    #[test]
    fn the_question_draws_what_it_asks_and_how_to_answer() {
        let text = screen(80, 12, |f| delete().render(f, f.area(), &palette()));
        assert!(text.contains("Delete timeline Tesla 1889"), "{text}");
        assert!(text.contains("y yes   n no"), "{text}");
    }
}

//! The dashboard's forms: what each one asks ([`FormKind`] and the builders below), its keys,
//! and turning what was typed into the service request it sends ([`Submission`]).
//!
//! A form is a [`Form`] (fields, focus, refusal: `widgets` draws it) whose kind says what
//! submitting does. A submission is sent once; the form stays open, pending, until the answer
//! closes it or puts the refusal under the field at fault.

use crossterm::event::{KeyCode, KeyEvent};

use super::effect::{Call, Checked, Effect, Outcome, Reload};
use super::widgets::{self, Form, typed_time};
use crate::model::{
    AnchorId, AnchorRecord, Conditions, EventId, Instant, InvalidValue, TimelineId,
    parse_typed_instant,
};
use crate::service::{
    AdjustAnchorRequest, ConflictResolution, EventRecord, ManipulateRequest, NewAnchor, NewEvent,
    NewItem, NewOutcome, NewTimeline, OutcomeChange, ParadoxCheckRequest, ProposedChange,
    ResolveRequest, ReviewConflict, TimelineInfo,
};
use crate::service::{Anchor, Item, ManipulationResult};

/// What a form does when submitted.
#[derive(Clone, Debug)]
pub enum FormKind {
    /// Create a timeline branching from `base` (primary when `None`).
    NewTimeline {
        /// The base timeline.
        base: Option<TimelineId>,
        /// A parallel timeline (has a variation field).
        parallel: bool,
    },
    /// Add an event to a timeline.
    AddEvent(TimelineId),
    /// Manipulate an event, safety checked.
    Manipulate(TimelineId, Box<EventRecord>),
    /// Set an anchor.
    Anchor,
    /// Register an item.
    RegisterItem,
    /// Check a draft change for paradoxes.
    CheckDraft(TimelineId),
    /// Replace what an anchor records of its environment.
    AdjustAnchor(AnchorId),
    /// Resolve a conflict of a pending merge with a new outcome (Custom Merge): the request
    /// without its outcome.
    CustomMerge(Box<ResolveRequest>),
}

/// What a submitted form asks the service for.
#[derive(Clone, Debug)]
pub enum Submission {
    /// Create a timeline.
    Create(NewTimeline),
    /// A change sent safety checked (a new event, a manipulation).
    Checked(Checked),
    /// Set an anchor.
    Anchor(NewAnchor),
    /// Register an item.
    Item(NewItem),
    /// Check a draft change for paradoxes (nothing is written).
    CheckDraft(ParadoxCheckRequest),
    /// Replace an anchor's recorded environment.
    AdjustAnchor(AdjustAnchorRequest),
}

/// The form for a new timeline branching from the primary one (`primary` is its name); its
/// note says so when another timeline (`selected`) is selected (the note wraps; a title with
/// a long name was cut at 80 columns).
pub fn new_timeline(primary: &str, selected: Option<&TimelineInfo>) -> Form<FormKind> {
    // A new timeline always branches from the primary one, whatever is selected.
    let mut form = Form::new(
        format!("New timeline (branches from {primary})"),
        FormKind::NewTimeline {
            base: None,
            parallel: false,
        },
        &[
            ("Name", String::new(), "e.g. Tesla 1889"),
            (
                "Destination time (UTC, e.g. 1889-03-10 23:50; empty: now)",
                String::new(),
                "1889-03-10 23:50",
            ),
            ("Description", String::new(), "what it is for"),
        ],
    );
    if let Some(t) = selected.filter(|t| !t.id.is_primary()) {
        form.note = format!("Not from {}: p branches that one. {}", t.name, form.note);
    }
    form
}

/// The form for a parallel timeline of `base`: its base with one difference.
pub fn parallel_timeline(base: &TimelineInfo) -> Form<FormKind> {
    Form::new(
        format!("Parallel timeline of {}", base.name),
        FormKind::NewTimeline {
            base: Some(base.id.clone()),
            parallel: true,
        },
        &[
            ("Name", String::new(), "e.g. What if Tesla stayed"),
            ("Variation", String::new(), "how it differs from its base"),
            (
                "Destination time (UTC, e.g. 1889-03-10 23:50; empty: now)",
                base.destination_time
                    .as_ref()
                    .map(typed_time)
                    .unwrap_or_default(),
                "1889-03-10 23:50",
            ),
            ("Description", String::new(), "what it is for"),
        ],
    )
}

/// The form for an event added to `timeline`, at `time` unless the user changes it.
pub fn add_event(timeline: &TimelineInfo, time: Instant) -> Form<FormKind> {
    Form::new(
        format!("Add an event to {}", timeline.name),
        FormKind::AddEvent(timeline.id.clone()),
        &[
            ("Description", String::new(), "what happened"),
            (
                "Time (UTC: 1889-03-10 23:50, a date or RFC 3339)",
                typed_time(&time),
                "",
            ),
            ("Location", String::new(), "where"),
            (
                "Causes (event ids, comma-separated)",
                String::new(),
                "optional",
            ),
            ("Fixed point? (y/n)", "n".into(), ""),
        ],
    )
}

/// The form for manipulating `event` of `timeline`, filled with what it is now.
pub fn manipulate(timeline: TimelineId, event: &EventRecord) -> Form<FormKind> {
    Form::new(
        format!("Manipulate {} (safety checked)", event.event_id),
        FormKind::Manipulate(timeline, Box::new(event.clone())),
        &[
            ("New description", event.description.clone(), ""),
            (
                "New time (UTC: 1889-03-10 23:50, a date or RFC 3339)",
                typed_time(&event.time),
                "",
            ),
            ("Action taken", String::new(), "optional: what you did"),
        ],
    )
}

/// The manipulate form for a conflict of a pending merge (Custom Merge): a new outcome for the
/// lineage in the merge's destination, starting from the source's (A's) outcome.
pub fn custom_merge(destination: TimelineId, conflict: &ReviewConflict) -> Form<FormKind> {
    let source = &conflict.source;
    Form::new(
        format!("Custom Merge of {} (safety checked)", conflict.event_id),
        FormKind::CustomMerge(Box::new(ResolveRequest {
            event_id: conflict.event_id.clone(),
            resolution: ConflictResolution::Custom,
            new_outcome: None,
            merge_id: Some(conflict.merge_id.clone()),
            merged_timeline_id: Some(destination),
            safety_check: true,
        })),
        &[
            ("New description", source.description.clone(), ""),
            (
                "New time (UTC: 1889-03-10 23:50, a date or RFC 3339)",
                typed_time(&source.time),
                "",
            ),
            ("Action taken", String::new(), "optional: what you did"),
        ],
    )
}

/// The form for an anchor set at `at` (to the second) unless the user changes it.
pub fn anchor(at: Instant) -> Form<FormKind> {
    Form::new(
        "Set an anchor (a return ticket) where you are",
        FormKind::Anchor,
        &[
            (
                "Timestamp (UTC: 1889-03-10 23:50, a date or RFC 3339)",
                typed_time(&chrono::SubsecRound::trunc_subsecs(at, 0)),
                "",
            ),
            ("Description", String::new(), "e.g. home"),
        ],
    )
}

/// The form for an item found where the traveller is.
pub fn register_item() -> Form<FormKind> {
    Form::new(
        "Register an item found where you are",
        FormKind::RegisterItem,
        &[("Description", String::new(), "e.g. Tesla's blueprint")],
    )
}

/// The form for a draft change to `timeline` checked for paradoxes, starting from `event` and
/// `time` (the selected search result's, or empty).
pub fn check_draft(timeline: &TimelineInfo, event: String, time: String) -> Form<FormKind> {
    Form::new(
        format!(
            "Check a draft change to {} (nothing is written)",
            timeline.name
        ),
        FormKind::CheckDraft(timeline.id.clone()),
        &[
            (
                "Event (an id to move, or a new event's description)",
                event,
                "optional",
            ),
            (
                // Short enough for the border at 80 columns; the other forms in the placeholder.
                "Time (UTC, e.g. 1889-03-10 23:50; empty: the destination time)",
                time,
                "optional; a date or RFC 3339 too",
            ),
            ("Item id to bring in", String::new(), "optional"),
        ],
    )
}

/// The label of the adjust form's one field (refusals of `new_environment` land under it).
const NEW_ENVIRONMENT: &str = "New environment (k=v, comma-separated, or JSON; empty: none)";

/// How an anchor is named to a person: its description, else its id.
pub fn anchor_label(anchor: &AnchorRecord) -> String {
    anchor
        .description
        .as_ref()
        .map_or_else(|| anchor.id.to_string(), |d| format!("'{d}'"))
}

/// The form for what `anchor` records of its environment, filled with what it records now.
pub fn adjust_anchor(anchor: &AnchorRecord) -> Form<FormKind> {
    let name = anchor_label(anchor);
    let now = anchor
        .details
        .environment
        .as_ref()
        .map(conditions_text)
        .unwrap_or_default();
    let mut form = Form::new(
        format!("Adjust what anchor {name} records"),
        FormKind::AdjustAnchor(anchor.id.clone()),
        &[(NEW_ENVIRONMENT, now, "temperature=20, sealed=true")],
    );
    form.note = "enter save · esc cancel · ctrl-u clears · its time and timeline stay".into();
    form
}

/// Recorded conditions as a person types them: `key=value, key=value`, or JSON when a value
/// would not read back the same that way (a string with a comma, or one that reads as a
/// number or a boolean).
pub fn conditions_text(conditions: &Conditions) -> String {
    use serde_json::Value;
    let plain = conditions.iter().all(|(k, v)| {
        let simple_key = !k.contains([',', '=']) && k.trim() == k && !k.is_empty();
        simple_key
            && match v {
                Value::Bool(_) | Value::Number(_) => true,
                Value::String(s) => {
                    !s.is_empty()
                        && s.trim() == s
                        && !s.contains([',', '='])
                        && !matches!(s.as_str(), "true" | "false")
                        && serde_json::from_str::<serde_json::Number>(s).is_err()
                }
                _ => false,
            }
    });
    if !plain {
        return serde_json::to_string(conditions).unwrap_or_default();
    }
    conditions
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Conditions as typed: empty (none), a JSON object, or `key=value` pairs separated by commas,
/// each value a boolean, a number or else text. `field` names the refusal.
pub fn parse_conditions(field: &str, text: &str) -> Result<Conditions, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Conditions::new());
    }
    if text.starts_with('{') {
        return serde_json::from_str::<Conditions>(text)
            .map_err(|e| format!("{field}: not a JSON object of conditions ({e})"));
    }
    let mut out = Conditions::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((key, value)) = part.split_once('=') else {
            return Err(format!(
                "{field}: '{part}' is not key=value; write temperature=20, sealed=true, or a \
                 JSON object"
            ));
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() {
            return Err(format!("{field}: '{part}' names no key"));
        }
        let value = crate::model::condition_value(value);
        if out.insert(key.to_owned(), value).is_some() {
            return Err(format!("{field}: '{key}' is given twice"));
        }
    }
    Ok(out)
}

impl Form<FormKind> {
    /// What the form asks for, as typed; an error (`field: why`) says what to fix.
    pub fn submission(&self) -> Result<Submission, String> {
        let optional_time = |field: &str, s: String| -> Result<Option<Instant>, String> {
            if s.is_empty() {
                Ok(None)
            } else {
                parse_typed_instant(field, &s)
                    .map(Some)
                    .map_err(|e| e.to_string())
            }
        };
        let optional = |s: String| (!s.is_empty()).then_some(s);
        Ok(match &self.kind {
            FormKind::NewTimeline { base, parallel } => {
                let name = self.value(0);
                if name.is_empty() {
                    return Err("name: give the timeline a name".into());
                }
                if *parallel && self.value(1).is_empty() {
                    return Err(
                        "variation: say how it differs from its base (a parallel timeline is \
                         its base with one difference)"
                            .into(),
                    );
                }
                let (variation, dest, description) = if *parallel {
                    (
                        optional(self.value(1)),
                        self.value(2),
                        optional(self.value(3)),
                    )
                } else {
                    (None, self.value(1), optional(self.value(2)))
                };
                Submission::Create(NewTimeline {
                    name: Some(name.clone()),
                    destination_time: optional_time("destination time", dest)?,
                    description: description.or(Some(name)),
                    base_timeline_id: base.clone(),
                    variation,
                })
            }
            FormKind::AddEvent(timeline) => {
                let description = self.value(0);
                if description.is_empty() {
                    return Err("description: say what happened".into());
                }
                let time =
                    parse_typed_instant("time", &self.value(1)).map_err(|e| e.to_string())?;
                let causes = self
                    .value(3)
                    .split([',', ' '])
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse::<EventId>().map_err(|e| e.to_string()))
                    .collect::<Result<Vec<_>, _>>()?;
                let fixed_point =
                    matches!(self.value(4).to_lowercase().as_str(), "y" | "yes" | "true");
                let req = NewEvent {
                    description,
                    time,
                    location: self.value(2),
                    causes,
                    fixed_point,
                    safety_check: true,
                };
                Submission::Checked(Checked::AddEvent(timeline.clone(), req))
            }
            FormKind::Manipulate(timeline, event) => {
                let time = optional_time("new time", self.value(1))?;
                Submission::Checked(Checked::Manipulate(ManipulateRequest {
                    timeline_id: Some(timeline.clone()),
                    event_id: event.event_id.clone(),
                    new_outcome: NewOutcome {
                        description: optional(self.value(0)),
                        changes: vec![OutcomeChange {
                            action: optional(self.value(2)),
                            time,
                        }],
                    },
                    safety_check: true,
                }))
            }
            FormKind::CustomMerge(req) => {
                let time = optional_time("new time", self.value(1))?;
                Submission::Checked(Checked::Resolve(ResolveRequest {
                    new_outcome: Some(NewOutcome {
                        description: optional(self.value(0)),
                        changes: vec![OutcomeChange {
                            action: optional(self.value(2)),
                            time,
                        }],
                    }),
                    ..(**req).clone()
                }))
            }
            FormKind::Anchor => {
                let timestamp =
                    parse_typed_instant("timestamp", &self.value(0)).map_err(|e| e.to_string())?;
                Submission::Anchor(NewAnchor {
                    timestamp,
                    description: optional(self.value(1)),
                })
            }
            FormKind::RegisterItem => {
                let description = self.value(0);
                if description.is_empty() {
                    return Err("description: say what the item is".into());
                }
                Submission::Item(NewItem { description })
            }
            FormKind::CheckDraft(timeline) => {
                let mut changes = Vec::new();
                let event = self.value(0);
                if !event.is_empty() {
                    changes.push(ProposedChange {
                        event: Some(event),
                        time: optional_time("time", self.value(1))?,
                        item_id: None,
                    });
                }
                let item = self.value(2);
                if !item.is_empty() {
                    changes.push(ProposedChange {
                        item_id: Some(item.parse().map_err(|e: InvalidValue| e.to_string())?),
                        ..ProposedChange::default()
                    });
                }
                Submission::CheckDraft(ParadoxCheckRequest {
                    timeline_id: timeline.clone(),
                    proposed_changes: changes,
                })
            }
            FormKind::AdjustAnchor(anchor) => Submission::AdjustAnchor(AdjustAnchorRequest {
                anchor_id: anchor.clone(),
                new_environment: parse_conditions("new environment", &self.value(0))?,
            }),
        })
    }
}

impl Form<FormKind> {
    /// A key on the form: Tab and Shift-Tab move between fields, Enter submits what is typed
    /// (once: the form stays open, pending, until the answer), Esc closes it; a submission that
    /// does not parse is refused under the field at fault.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        match key.code {
            KeyCode::Esc => Outcome::close(),
            KeyCode::Tab => {
                self.cycle(true);
                Outcome::keep()
            }
            KeyCode::BackTab => {
                self.cycle(false);
                Outcome::keep()
            }
            // Sent once; kept open (input and all) until the answer says it is done.
            KeyCode::Enter if self.pending => Outcome::keep(),
            KeyCode::Enter => match self.submission() {
                Ok(submission) => {
                    self.pending = true;
                    self.clear_refusal();
                    Outcome::with(Effect::Call(submission.into()))
                }
                Err(message) => {
                    let field = message.split_once(':').map(|(f, _)| f.to_owned());
                    self.refuse(message, field.as_deref());
                    Outcome::keep()
                }
            },
            _ => {
                if let Some(field) = self.fields.get_mut(self.focus) {
                    widgets::edit(&mut field.input, key);
                }
                Outcome::keep()
            }
        }
    }
}

impl From<Submission> for Call {
    fn from(submission: Submission) -> Self {
        match submission {
            Submission::Create(req) => Call::Create(req),
            Submission::Checked(change) => Call::Checked(change),
            Submission::Anchor(req) => Call::Anchor(req),
            Submission::Item(req) => Call::Item(req),
            Submission::CheckDraft(req) => Call::CheckDraft(req),
            Submission::AdjustAnchor(req) => Call::AdjustAnchor(req),
        }
    }
}

/// A timeline was created: said, and selected once the list has it.
pub fn created(t: &TimelineInfo) -> Vec<Effect> {
    vec![
        Effect::Info(format!("Created timeline {} ({}).", t.name, t.id)),
        Effect::Reload(Reload::Select(t.id.clone())),
    ]
}

/// An event was added: said, and what shows events asked again.
pub fn event_added(e: &EventRecord) -> Vec<Effect> {
    vec![
        Effect::Info(format!("Added event {} ({}).", e.description, e.event_id)),
        Effect::Reload(Reload::Events),
    ]
}

/// An event was manipulated: said, and what shows events asked again.
pub fn manipulated(r: &ManipulationResult) -> Vec<Effect> {
    vec![
        Effect::Info(format!(
            "Manipulated: '{}' now happens at {}.",
            r.description,
            widgets::fmt_time(&r.time)
        )),
        Effect::Reload(Reload::Events),
    ]
}

/// An anchor was set: said.
pub fn anchor_set(a: &Anchor) -> Vec<Effect> {
    vec![Effect::Info(format!(
        "Anchor {} set at {}.",
        a.description
            .as_ref()
            .map_or_else(|| a.id.to_string(), |d| format!("'{d}'")),
        widgets::fmt_time(&a.timestamp)
    ))]
}

/// An item was registered: said.
pub fn item_registered(i: &Item) -> Vec<Effect> {
    vec![Effect::Info(format!(
        "Registered {} ({}).",
        i.description, i.id
    ))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::effect::Call;
    use crate::tui::unit::{key, typed};

    fn type_into(form: &mut Form<FormKind>, text: &str) {
        for k in typed(text) {
            assert!(form.key(k).effects.is_empty());
        }
    }

    #[test]
    fn what_does_not_parse_is_refused_under_its_field_and_nothing_is_sent() {
        let mut form = new_timeline("primary", None);
        type_into(&mut form, "Tesla 1889");
        form.key(key("tab"));
        type_into(&mut form, "next tuesday");
        form.key(key("tab"));
        let outcome = form.key(key("enter"));
        assert!(!outcome.close && outcome.effects.is_empty());
        assert!(!form.pending);
        assert_eq!(form.refusal_field, Some(1), "{:?}", form.refusal);
    }

    #[test]
    fn enter_sends_once_and_the_form_waits_for_the_answer() {
        let mut form = register_item();
        type_into(&mut form, "Tesla's blueprint");
        let outcome = form.key(key("enter"));
        assert!(!outcome.close);
        assert!(
            matches!(&outcome.effects[..], [Effect::Call(Call::Item(i))] if i.description == "Tesla's blueprint")
        );
        assert!(form.pending);
        assert!(form.key(key("enter")).effects.is_empty(), "sent once");
    }

    #[test]
    fn conditions_read_as_typed_and_print_back_the_same() {
        let typed = "temperature=20.5, sealed=true, place=lab 3";
        let c = parse_conditions("new environment", typed).expect("pairs");
        assert_eq!(c.get("temperature"), Some(&serde_json::json!(20.5)));
        assert_eq!(c.get("sealed"), Some(&serde_json::json!(true)));
        assert_eq!(c.get("place"), Some(&serde_json::json!("lab 3")));
        assert_eq!(parse_conditions("e", &conditions_text(&c)), Ok(c));
        // A value that would not read back as pairs is shown as JSON, which reads back too.
        let json = parse_conditions("e", r#"{"note": "a, b", "count": "7"}"#).expect("JSON");
        assert!(conditions_text(&json).starts_with('{'));
        assert_eq!(parse_conditions("e", &conditions_text(&json)), Ok(json));
        assert_eq!(parse_conditions("e", "  "), Ok(Conditions::new()));
        let why = parse_conditions("new environment", "temperature").unwrap_err();
        assert!(
            why.starts_with("new environment: 'temperature' is not key=value"),
            "{why}"
        );
        assert!(parse_conditions("e", "a=1, a=2").is_err(), "a key twice");
    }

    #[test]
    fn tab_moves_between_fields_and_esc_closes() {
        let mut form = anchor(chrono::DateTime::<chrono::Utc>::UNIX_EPOCH);
        assert_eq!(form.focus, 0);
        form.key(key("tab"));
        assert_eq!(form.focus, 1);
        form.key(key("backtab"));
        assert_eq!(form.focus, 0);
        let outcome = form.key(key("esc"));
        assert!(outcome.close && outcome.effects.is_empty());
    }
}

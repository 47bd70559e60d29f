//! Questions before something that destroys, and the safety-checked change behind them.
//!
//! A [`Confirm`] asks yes or no (delete a timeline, revert an event, apply a change the safety
//! check refused) and draws itself; a [`Checked`] change is kept until its answer so that a
//! refusal for paradoxes can be answered with "apply anyway?".

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::action::Reply;
use super::app::App;
use super::forms::FormKind;
use super::modal::Modal;
use super::theme::Palette;
use super::widgets::{Form, centered, modal};
use crate::error::ServiceError;
use crate::model::TimelineId;
use crate::service::{EventRecord, ManipulateRequest, NewEvent, RevertRequest, TimelineService};

/// A question before something that destroys.
#[derive(Debug)]
pub enum Confirm {
    /// Delete a timeline.
    DeleteTimeline(TimelineId, String),
    /// Revert an event's latest change.
    Revert(TimelineId, EventRecord),
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
}

impl Checked {
    /// Sends the change, with or without the safety check.
    pub(super) async fn send(
        mut self,
        svc: Arc<dyn TimelineService>,
        safety_check: bool,
    ) -> Result<Reply, ServiceError> {
        match &mut self {
            Checked::AddEvent(timeline, req) => {
                req.safety_check = safety_check;
                svc.add_event(timeline, req.clone())
                    .await
                    .map(Reply::EventAdded)
            }
            Checked::Manipulate(req) => {
                req.safety_check = safety_check;
                svc.manipulate_event(req.clone())
                    .await
                    .map(Reply::Manipulated)
            }
            Checked::Revert(req) => {
                req.safety_check = safety_check;
                svc.revert_event(req.clone()).await.map(Reply::Reverted)
            }
        }
    }
}

impl Confirm {
    /// Draws the question as a modal over `area`, as tall as its wrapped text.
    pub(super) fn render(&self, frame: &mut Frame<'_>, area: Rect, p: &Palette) {
        let (title, question) = match self {
            Confirm::DeleteTimeline(id, name) => (
                "Delete timeline",
                format!(
                    "Delete timeline {name} ({id}) and its own events? Journeys into it stay in history."
                ),
            ),
            Confirm::Revert(_, e) => (
                "Revert event",
                format!(
                    "Undo the latest change of {} ({})? It is checked for paradoxes first.",
                    e.description, e.event_id
                ),
            ),
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

impl App {
    /// A key on a question: the modal after it (the question, the form it came from, or none).
    pub(super) fn confirm_key(&mut self, confirm: Confirm, key: KeyEvent) -> Option<Modal> {
        match key.code {
            // Making a paradox takes an explicit y: an Enter meant for the form is no yes.
            KeyCode::Enter if matches!(confirm, Confirm::ApplyAnyway { .. }) => {
                Some(Modal::Confirm(confirm))
            }
            // What is confirmed may bring its form back into view.
            KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => {
                self.confirmed(confirm);
                self.modal.take()
            }
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => match confirm {
                Confirm::ApplyAnyway {
                    form: Some(mut form),
                    why,
                    ..
                } => {
                    form.refuse(format!("Not applied. {why}"), None);
                    Some(Modal::Form(form))
                }
                _ => None,
            },
            _ => Some(Modal::Confirm(confirm)),
        }
    }

    /// Carries out what the user said yes to.
    fn confirmed(&mut self, confirm: Confirm) {
        let svc = Arc::clone(&self.service);
        match confirm {
            Confirm::DeleteTimeline(id, name) => self.mutate(async move {
                svc.delete_timeline(&id)
                    .await
                    .map(|()| Reply::Deleted(name))
            }),
            Confirm::Revert(timeline, event) => {
                self.mutate_checked(Checked::Revert(RevertRequest {
                    event_id: event.event_id,
                    timeline_id: Some(timeline),
                    safety_check: true,
                }))
            }
            Confirm::ApplyAnyway { change, form, .. } => {
                if let Some(mut form) = form {
                    form.pending = true;
                    form.clear_refusal();
                    self.modal = Some(Modal::Form(form));
                }
                self.mutate(change.send(svc, false));
            }
        }
    }
}

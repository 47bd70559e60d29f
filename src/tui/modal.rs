//! What sits on top of the panes and takes keys first.
//!
//! [`Modal`] is the one slot on top: this module routes a key to whichever modal is open (a
//! form, a question and the command line answer it from their own modules) and drives the
//! travel wizard's steps, each of which may call the service (the wizard's state and drawing
//! live in `panes::wizard`). It owns the read-only modals itself: the help screen, a paradox
//! check's findings and the traveller's journeys, which scroll and close.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui_textarea::TextArea;

use super::action::{Reply, Slot};
use super::app::App;
use super::confirm::Confirm;
use super::forms::FormKind;
use super::help;
use super::panes::wizard::{self, Step, Wizard};
use super::theme::Palette;
use super::widgets::{Form, centered, fmt_time, modal};
use crate::model::TimelineId;
use crate::service::{ParadoxCheckRequest, TravelRequest};

/// What sits on top of the panes and takes keys first.
#[derive(Debug)]
pub enum Modal {
    /// The help screen, scrolled.
    Help(u16),
    /// A form.
    Form(Box<Form<FormKind>>),
    /// A yes/no question.
    Confirm(Confirm),
    /// The travel wizard.
    Wizard(Box<Wizard>),
    /// A paradox check's findings.
    Report(wizard::Verdict, u16),
    /// The traveller's journeys (oldest first), scrolled.
    Journeys(Vec<crate::service::Journey>, u16),
    /// The `:` command line.
    Command(Box<TextArea<'static>>),
    /// The timeline picture.
    Picture(Box<super::picture::Picture>),
    /// One anomaly in full, scrolled.
    Anomaly(Box<crate::service::Anomaly>, u16),
}

impl App {
    /// Hands a key to the modal on top; what it answers (itself, another modal, or none) takes
    /// its place.
    pub(super) fn modal_key(&mut self, key: KeyEvent) {
        let Some(modal) = self.modal.take() else {
            return;
        };
        self.modal = match modal {
            Modal::Help(scroll) => match key.code {
                KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('?') | KeyCode::Enter => None,
                KeyCode::Down | KeyCode::Char('j') => Some(Modal::Help(scroll.saturating_add(1))),
                KeyCode::Up | KeyCode::Char('k') => Some(Modal::Help(scroll.saturating_sub(1))),
                KeyCode::PageDown => Some(Modal::Help(scroll.saturating_add(10))),
                KeyCode::PageUp => Some(Modal::Help(scroll.saturating_sub(10))),
                KeyCode::Home | KeyCode::Char('g') => Some(Modal::Help(0)),
                // Drawing brings it back to where the last line is in view.
                KeyCode::End | KeyCode::Char('G') => Some(Modal::Help(u16::MAX)),
                _ => Some(Modal::Help(scroll)),
            },
            Modal::Report(report, scroll) => {
                scroll_key(key.code, scroll).map(|scroll| Modal::Report(report, scroll))
            }
            Modal::Journeys(journeys, scroll) => {
                scroll_key(key.code, scroll).map(|scroll| Modal::Journeys(journeys, scroll))
            }
            Modal::Anomaly(anomaly, scroll) => {
                scroll_key(key.code, scroll).map(|scroll| Modal::Anomaly(anomaly, scroll))
            }
            Modal::Picture(picture) => self.picture_key(picture, key),
            Modal::Confirm(confirm) => self.confirm_key(confirm, key),
            Modal::Command(input) => self.command_key(input, key),
            Modal::Form(form) => self.form_key(form, key),
            Modal::Wizard(mut w) => {
                let keep = self.wizard_key(&mut w, key);
                keep.then_some(Modal::Wizard(w))
            }
        };
    }

    /// Handles a key in the wizard; false closes it.
    fn wizard_key(&mut self, w: &mut Wizard, key: KeyEvent) -> bool {
        let code = key.code;
        if w.loading {
            return code != KeyCode::Esc; // esc abandons a pending step
        }
        // Esc closes the wizard from any step (as every modal); backspace goes back a step; a
        // journey starts only on `y` at the confirm step, so no stray enter travels.
        match (w.step, code) {
            (_, KeyCode::Esc) | (Step::Done, KeyCode::Enter) => return false,
            (_, KeyCode::Up | KeyCode::Char('k')) => w.step_cursor(-1),
            (_, KeyCode::Down | KeyCode::Char('j')) => w.step_cursor(1),
            (Step::Items, KeyCode::Char(' ') | KeyCode::Char('x')) => w.toggle(),
            (Step::Destination, KeyCode::Enter) if w.destination().is_some() => {
                w.step = Step::Items;
            }
            (Step::Items, KeyCode::Backspace | KeyCode::Left) => w.step = Step::Destination,
            (Step::Items, KeyCode::Enter) => {
                let Some(dest) = w.destination() else {
                    return true;
                };
                let req = ParadoxCheckRequest {
                    timeline_id: dest.timeline().clone(),
                    proposed_changes: w.proposed_changes(),
                };
                w.step = Step::Check;
                w.report = None;
                w.loading = true;
                let svc = Arc::clone(&self.service);
                self.spawn(Slot::WizardCheck, async move {
                    wizard::Verdict::ask(svc, req).await.map(Reply::WizardCheck)
                });
            }
            (Step::Check, KeyCode::Backspace | KeyCode::Left) => w.step = Step::Items,
            (Step::Check, KeyCode::Enter) => w.step = Step::Confirm,
            (Step::Confirm, KeyCode::Backspace | KeyCode::Left) => w.step = Step::Check,
            (Step::Confirm, KeyCode::Char('y') | KeyCode::Char('Y')) => {
                let Some(dest) = w.destination() else {
                    return true;
                };
                let req = TravelRequest {
                    destination: dest.request_id(),
                    items_transported: w.carried(),
                };
                w.loading = true;
                let svc = Arc::clone(&self.service);
                self.mutate(async move { svc.travel(req).await.map(Reply::Journey) });
            }
            _ => {}
        }
        true
    }

    /// Draws the modal on top, if any, over `area`.
    pub(super) fn draw_modal(&mut self, frame: &mut Frame<'_>, area: Rect) {
        let p = self.palette;
        let timelines = &self.timelines;
        let name_of = |id: &TimelineId| timelines.name_of(id);
        match &mut self.modal {
            None | Some(Modal::Command(_)) => {}
            Some(Modal::Help(scroll)) => help::render(frame, area, &self.keymap, &p, scroll),
            Some(Modal::Form(form)) => form.render(frame, area, &p),
            Some(Modal::Wizard(w)) => w.render(frame, area, &p, &name_of),
            Some(Modal::Journeys(journeys, scroll)) => {
                let lines = journey_lines(journeys, &p, &name_of);
                scrolling_modal(
                    frame,
                    area,
                    "Your journeys, newest first",
                    lines,
                    scroll,
                    &p,
                );
            }
            Some(Modal::Report(report, scroll)) => {
                let lines = wizard::report_lines(report, &p, &name_of);
                scrolling_modal(frame, area, "Paradox check", lines, scroll, &p);
            }
            Some(Modal::Confirm(confirm)) => confirm.render(frame, area, &p),
            Some(Modal::Anomaly(anomaly, scroll)) => {
                let lines = super::panes::monitor::detail_lines(anomaly, &p);
                scrolling_modal(frame, area, "Anomaly", lines, scroll, &p);
            }
            Some(Modal::Picture(_)) => self.draw_picture(frame, area),
        }
    }
}

/// A key in a read-only scrolling modal: the new scroll, or `None` when it closes.
fn scroll_key(code: KeyCode, scroll: u16) -> Option<u16> {
    match code {
        KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => None,
        KeyCode::Down | KeyCode::Char('j') => Some(scroll.saturating_add(1)),
        KeyCode::Up | KeyCode::Char('k') => Some(scroll.saturating_sub(1)),
        _ => Some(scroll),
    }
}

/// A read-only modal as tall as its wrapped `lines` and a hint need, scrolling (`scroll` is
/// kept in range) when the screen is not.
fn scrolling_modal(
    frame: &mut Frame<'_>,
    area: Rect,
    title: &str,
    lines: Vec<Line<'static>>,
    scroll: &mut u16,
    p: &Palette,
) {
    let width = area.width.saturating_sub(10).min(90);
    let text = Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false });
    let needed = u16::try_from(text.line_count(width.saturating_sub(2))).unwrap_or(u16::MAX);
    let rect = centered(
        area,
        width,
        needed.saturating_add(4).min(area.height.saturating_sub(2)),
    );
    let inner = modal(frame, rect, title, p);
    let [body, _, hint] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    *scroll = (*scroll).min(needed.saturating_sub(body.height));
    let more = needed > body.height;
    frame.render_widget(text.scroll((*scroll, 0)), body);
    let hint_text = if more {
        "j/k scroll · enter / esc close"
    } else {
        "enter / esc close"
    };
    frame.render_widget(Paragraph::new(Span::styled(hint_text, p.dim)), hint);
}

/// The traveller's journeys, newest first: when, from where to where, what came along.
fn journey_lines(
    journeys: &[crate::service::Journey],
    p: &Palette,
    name_of: &dyn Fn(&TimelineId) -> String,
) -> Vec<Line<'static>> {
    if journeys.is_empty() {
        return vec![Line::from(Span::styled(
            "No journeys yet. Press t to travel.",
            p.dim,
        ))];
    }
    let mut lines = Vec::new();
    for j in journeys.iter().rev() {
        let how = if j.anchor.is_some() {
            " (return to an anchor)"
        } else {
            ""
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{}  ", fmt_time(&j.departed_at)), p.dim),
            Span::styled(
                format!(
                    "{} {} → {} {}{how}",
                    name_of(&j.from_timeline),
                    fmt_time(&j.from_time),
                    name_of(&j.to_timeline),
                    fmt_time(&j.arrival_time)
                ),
                p.text,
            ),
        ]));
        if !j.items_transported.is_empty() || !j.items_left.is_empty() {
            lines.push(Line::from(Span::styled(
                format!(
                    "    carried {} item{}, left {}",
                    j.items_transported.len(),
                    if j.items_transported.len() == 1 {
                        ""
                    } else {
                        "s"
                    },
                    j.items_left.len()
                ),
                p.dim,
            )));
        }
    }
    lines
}

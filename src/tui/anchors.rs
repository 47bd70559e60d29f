//! The anchors list (`A`): your anchors, active and spent, each with its stability (can you
//! still come back there, and safely?), the selected one in full under the list. `e` adjusts the
//! environment an active anchor records, `d` deletes one after asking, `s` checks them all
//! again. The list owns the form and the question it opens: they draw over it and close back
//! onto it, and the loop routes their answers here.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::confirm::{Answer, Confirm};
use super::effect::{Call, Effect, Outcome};
use super::forms::{self, FormKind};
use super::keymap::Key;
use super::offers::{self, BOTTOM, CLOSE, DOWN, Move, Offer, TOP, UP};
use super::theme::Palette;
use super::widgets::{Cursor, Form, centered, ellipsize, fmt_time, modal};
use crate::model::AnchorId;
use crate::model::{AnchorRecord, AnchorStatus, TimelineId};
use std::future::Future;
use std::sync::Arc;

use super::paging::all_pages;
use crate::error::ServiceError;
use crate::service::prelude::*;
use crate::service::{AnchorListQuery, AnchorRef, AnchorStability, AnchorVerdict};

/// Most anchors whose stability the list checks (one call each).
const CHECKED_ANCHORS: usize = 200;

/// Fewest rows under the list for the selected anchor in full (its lines wrap; it grows with
/// them).
const DETAIL_LINES: u16 = 6;

/// What the list does with a key.
#[derive(Clone, Copy, Debug)]
pub enum Command {
    /// Go back to the selected anchor (the return wizard).
    Return,
    /// Adjust what it recorded.
    Adjust,
    /// Delete it, after asking.
    Delete,
    /// Check every anchor again.
    Check,
    /// Close the list.
    Close,
    /// Move the selection.
    Move(Move),
}

/// The keys of the anchors list: its hint line and the help are written from these.
pub const OFFERS: &[Offer<Command>] = &[
    Offer::new(Command::Return, &[Key::code(KeyCode::Enter)], "return"),
    Offer::new(Command::Adjust, &[Key::char('e')], "adjust environment"),
    Offer::new(Command::Delete, &[Key::char('d')], "delete"),
    Offer::new(Command::Check, &[Key::char('s')], "check again"),
    Offer::new(Command::Close, CLOSE, "close"),
    Offer::quiet(Command::Move(Move::Up), UP),
    Offer::quiet(Command::Move(Move::Down), DOWN),
    Offer::quiet(Command::Move(Move::Top), TOP),
    Offer::quiet(Command::Move(Move::Bottom), BOTTOM),
];

/// One anchor and what its check said.
#[derive(Clone, Debug)]
pub struct AnchorRow {
    /// The anchor, with what it records.
    pub anchor: AnchorRecord,
    /// Its stability; `None` when it could not be checked.
    pub stability: Option<AnchorStability>,
}

impl AnchorRow {
    /// How the anchor is named to a person: its description, else its id.
    pub fn label(&self) -> String {
        forms::anchor_label(&self.anchor)
    }

    /// The stability column: a glyph and a word, readable without colour.
    fn verdict(&self, p: &Palette) -> (&'static str, Style) {
        match self.stability.as_ref().map(|s| s.status) {
            _ if self.anchor.status == AnchorStatus::Spent => ("✗ spent", p.dim),
            Some(AnchorVerdict::Stable) => ("● stable", p.ok),
            Some(AnchorVerdict::AtRisk) => ("◐ at risk", p.warn),
            Some(AnchorVerdict::Unstable) => ("✗ unstable", p.error),
            None => ("? unchecked", p.dim),
        }
    }
}

/// The anchors list.
#[derive(Debug, Default)]
pub struct AnchorsList {
    /// The anchors, in the order they were set.
    pub rows: Vec<AnchorRow>,
    /// The selected row.
    pub cursor: Cursor,
    /// Waiting for the list (or for it again).
    pub loading: bool,
    /// Whether the list has arrived once.
    pub loaded: bool,
    /// The adjust form, open over the list.
    pub form: Option<Box<Form<FormKind>>>,
    /// The delete question, open over the list.
    pub confirm: Option<Confirm>,
    /// A word about the last key (why it did nothing).
    pub note: Option<String>,
}

impl AnchorsList {
    /// The list, waiting for its rows.
    pub fn new() -> Self {
        Self {
            loading: true,
            ..Self::default()
        }
    }

    /// Fetches the traveller's anchors, spent ones too, and checks each one's stability (up
    /// to [`CHECKED_ANCHORS`]); the list shows it is loading until they come.
    pub fn fetch(
        &mut self,
        svc: Arc<dyn TimelineService>,
    ) -> impl Future<Output = Result<Vec<AnchorRow>, ServiceError>> + Send + 'static {
        self.loading = true;
        async move {
            let anchors = all_pages(|page| {
                svc.find_anchors(AnchorListQuery {
                    include_spent: Some(true),
                    limit: page.limit,
                    cursor: page.cursor,
                })
            })
            .await?;
            let mut rows = Vec::with_capacity(anchors.len());
            for (i, anchor) in anchors.into_iter().enumerate() {
                let stability = if i < CHECKED_ANCHORS {
                    let anchor_id = anchor.id.clone();
                    // One that cannot be checked is listed as unchecked, not dropped.
                    svc.check_anchor_stability(AnchorRef { anchor_id })
                        .await
                        .ok()
                } else {
                    None
                };
                rows.push(AnchorRow { anchor, stability });
            }
            Ok(rows)
        }
    }

    /// The rows arrived: the selection stays on the anchor it was on, if it is still listed.
    pub fn show(&mut self, rows: Vec<AnchorRow>) {
        let was = self.selected().map(|r| r.anchor.id.clone());
        self.rows = rows;
        if let Some(i) = was.and_then(|id| self.rows.iter().position(|r| r.anchor.id == id)) {
            self.cursor.selected = i;
        }
        self.cursor.clamp(self.rows.len());
        self.loading = false;
        self.loaded = true;
    }

    /// The selected anchor.
    pub fn selected(&self) -> Option<&AnchorRow> {
        self.rows.get(self.cursor.selected)
    }

    /// Whether its form waits for the answer of the change it sent.
    pub fn waiting(&self) -> bool {
        self.form.as_ref().is_some_and(|f| f.pending)
    }

    /// A key: the form or the question takes it first when open; else ↑↓/jk move, enter opens
    /// the return wizard on the anchor, `e` adjusts, `d` deletes (asks first), `s` checks again,
    /// esc or q closes.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        if let Some(form) = &mut self.form {
            let outcome = form.key(key);
            if outcome.close {
                self.form = None;
            }
            return Outcome {
                close: false,
                effects: outcome.effects,
            };
        }
        if let Some(confirm) = self.confirm.take() {
            match confirm.key(key) {
                Answer::Ask(confirm) => self.confirm = Some(confirm),
                Answer::Closed(effects) => {
                    return Outcome {
                        close: false,
                        effects,
                    };
                }
                Answer::Form(..) => {} // no question here is about a form
            }
            return Outcome::keep();
        }
        self.note = None;
        let len = self.rows.len();
        let Some(command) = offers::find(OFFERS, &key) else {
            return Outcome::keep();
        };
        match command {
            Command::Close => return Outcome::close(),
            Command::Move(m) => m.apply(&mut self.cursor, len),
            // One check at a time: each is a page and a stability call per anchor.
            Command::Check if self.loading => {
                self.note =
                    Some("A check is under way; its answers come in as they are made.".into());
            }
            Command::Check => {
                self.loading = true;
                return Outcome::with(Effect::Call(Call::CheckAnchors));
            }
            Command::Adjust => match self.selected() {
                Some(row) if row.anchor.status == AnchorStatus::Spent => {
                    self.note = Some(format!(
                        "{} is spent: it is history, and what it recorded stays as it was.",
                        row.label()
                    ));
                }
                Some(row) => self.form = Some(Box::new(forms::adjust_anchor(&row.anchor))),
                None => {}
            },
            // Going back there is the return wizard's: items, the paradox check, a confirm.
            Command::Return => match self.selected() {
                Some(row) if row.anchor.status == AnchorStatus::Spent => {
                    self.note = Some(format!(
                        "{} is spent: it was returned to already, and is not a way back.",
                        row.label()
                    ));
                }
                Some(row) => {
                    return Outcome {
                        close: true,
                        effects: vec![Effect::ReturnTo(row.anchor.id.clone())],
                    };
                }
                None => {}
            },
            Command::Delete => {
                if let Some(row) = self.selected() {
                    self.confirm = Some(Confirm::DeleteAnchor(row.anchor.id.clone(), row.label()));
                }
            }
        }
        Outcome::keep()
    }

    /// Draws the list over `area`, the selected anchor in full under it, and the form or the
    /// question on top; `name_of` names timelines.
    pub fn render(
        &mut self,
        frame: &mut Frame<'_>,
        area: Rect,
        p: &Palette,
        name_of: &dyn Fn(&TimelineId) -> String,
    ) {
        // As tall as the rows (with their header and a gap), the detail (its reasons wrapped
        // whole, however long) and the keys need.
        let width = area.width.saturating_sub(4).min(120);
        let detail_text = (self.form.is_none() && self.confirm.is_none())
            .then(|| Paragraph::new(self.detail_lines(p, name_of)).wrap(Wrap { trim: true }));
        let detail_needed = detail_text.as_ref().map_or(0, |text| {
            u16::try_from(text.line_count(width.saturating_sub(2))).unwrap_or(u16::MAX)
        });
        let detail_rows = detail_needed.max(DETAIL_LINES);
        let rows = u16::try_from(self.rows.len()).unwrap_or(u16::MAX).max(1);
        let wanted = rows.saturating_add(2 + detail_rows + 1 + 2);
        let rect = centered(area, width, wanted.min(area.height.saturating_sub(2)));
        let count = if self.loaded {
            format!(" ({})", self.rows.len())
        } else {
            String::new()
        };
        let loading = if self.loading { " · checking…" } else { "" };
        let inner = modal(frame, rect, &format!("Your anchors{count}{loading}"), p);
        // The list keeps three rows (its header and two anchors); the detail takes the rest.
        let detail_rows = detail_rows.min(inner.height.saturating_sub(4));
        let [list, detail, keys] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(detail_rows),
            Constraint::Length(1),
        ])
        .areas(inner);
        let width = usize::from(inner.width);
        frame.render_widget(
            Paragraph::new(self.list_lines(list.height.into(), width, p, name_of)),
            list,
        );
        // Under a form or a question (which name the anchor), the detail would only peek out.
        if let Some(text) = detail_text {
            frame.render_widget(text, detail);
        }
        let keys_text = offers::hint(OFFERS);
        frame.render_widget(
            Paragraph::new(Span::styled(ellipsize(&keys_text, width), p.dim)),
            keys,
        );
        if let Some(form) = &mut self.form {
            form.render(frame, area, p);
        }
        if let Some(confirm) = &self.confirm {
            confirm.render(frame, area, p);
        }
    }

    /// The header and the rows in view, each cut to `width`: stability, return time,
    /// timeline, description (and the place, when there is room).
    fn list_lines<'a>(
        &mut self,
        height: usize,
        width: usize,
        p: &Palette,
        name_of: &dyn Fn(&TimelineId) -> String,
    ) -> Vec<Line<'a>> {
        if self.rows.is_empty() {
            let text = if self.loaded {
                "You have no anchors. Press esc, then a to set one where you are."
            } else {
                "Loading your anchors…"
            };
            return vec![Line::from(Span::styled(text, p.dim))];
        }
        let places = width >= 110;
        let timeline_width = if width >= 100 { 22 } else { 14 };
        let head = format!(
            "  {:<12}{:<21}{:<tw$}{}",
            "Stability",
            "Returns to",
            "Timeline",
            if places {
                "Description · place"
            } else {
                "Description"
            },
            tw = timeline_width + 1,
        );
        let mut lines = vec![Line::from(Span::styled(ellipsize(&head, width), p.title))];
        let range = self
            .cursor
            .window(self.rows.len(), height.saturating_sub(1));
        for i in range {
            let row = &self.rows[i];
            let selected = i == self.cursor.selected;
            let (verdict, verdict_style) = row.verdict(p);
            let anchor = &row.anchor;
            let mut what = anchor
                .description
                .clone()
                .unwrap_or_else(|| anchor.id.to_string());
            if places && let Some(place) = &anchor.details.location {
                what = format!("{what} · {place}");
            }
            let rest = format!(
                "{:<21}{:<tw$} {what}",
                fmt_time(&anchor.timestamp),
                ellipsize(&name_of(&anchor.timeline), timeline_width),
                tw = timeline_width,
            );
            let text_style = match (selected, anchor.status) {
                (true, _) => p.selected,
                (false, AnchorStatus::Spent) => p.dim,
                (false, AnchorStatus::Active) => p.text,
            };
            let room = width.saturating_sub(14);
            lines.push(Line::from(vec![
                Span::styled(if selected { "▶ " } else { "  " }, text_style),
                Span::styled(format!("{verdict:<12}"), verdict_style),
                Span::styled(ellipsize(&rest, room), text_style),
            ]));
        }
        lines
    }

    /// The selected anchor in full: what and where, its verdict and why, what it records.
    fn detail_lines<'a>(
        &self,
        p: &Palette,
        name_of: &dyn Fn(&TimelineId) -> String,
    ) -> Vec<Line<'a>> {
        if let Some(note) = &self.note {
            return vec![Line::from(Span::styled(note.clone(), p.warn))];
        }
        let Some(row) = self.selected() else {
            return Vec::new();
        };
        let a = &row.anchor;
        let mut first = format!(
            "{} returns to {} in {}",
            row.label(),
            fmt_time(&a.timestamp),
            name_of(&a.timeline)
        );
        if let Some(place) = &a.details.location {
            first.push_str(&format!(", at {place}"));
        }
        if let Some(accuracy) = a.details.accuracy {
            first.push_str(&format!(" (to the {})", accuracy_word(accuracy)));
        }
        // The id last: what a command line or the API takes.
        first.push_str(&format!("; set {} · {}", fmt_time(&a.created_at), a.id));
        let mut lines = vec![Line::from(Span::styled(first, p.text))];
        let (verdict, style) = row.verdict(p);
        let why = match &row.stability {
            None => "it could not be checked; press s to check again.".to_owned(),
            Some(s) if s.reasons.is_empty() => {
                "a return would be accepted and would add no paradox.".to_owned()
            }
            // One sentence of them: "a; b.", never "a.; b" or "b..". The anchor's timeline is
            // named as the list names it (an id alone says nothing once it is deleted).
            Some(s) => {
                let id = a.timeline.as_str();
                let named = name_of(&a.timeline);
                let name = named.strip_suffix(" (deleted)").unwrap_or(&named);
                let reasons: Vec<String> = s
                    .reasons
                    .iter()
                    .map(|r| r.trim_end_matches('.'))
                    .map(|r| match name == id {
                        true => r.to_owned(),
                        false => r.replace(id, &format!("'{name}' ({id})")),
                    })
                    .collect();
                format!("{}.", reasons.join("; "))
            }
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{verdict}: "), style),
            Span::styled(why, p.text),
        ]));
        let environment = a
            .details
            .environment
            .as_ref()
            .filter(|e| !e.is_empty())
            .map_or_else(|| "none recorded".to_owned(), forms::conditions_text);
        lines.push(Line::from(vec![
            Span::styled("environment ", p.dim),
            Span::styled(environment, p.text),
        ]));
        if let Some(q) = a.details.quantum_state.as_ref().filter(|q| !q.is_empty()) {
            lines.push(Line::from(vec![
                Span::styled("quantum state ", p.dim),
                Span::styled(forms::conditions_text(q), p.text),
            ]));
        }
        lines
    }
}

/// The accuracy's unit, in words.
fn accuracy_word(a: crate::model::Accuracy) -> &'static str {
    match a {
        crate::model::Accuracy::Second => "second",
        crate::model::Accuracy::Millisecond => "millisecond",
        crate::model::Accuracy::Microsecond => "microsecond",
        crate::model::Accuracy::Nanosecond => "nanosecond",
    }
}

impl AnchorsList {
    /// An anchor's recorded environment was replaced: said, and the list asked again.
    pub fn answer_adjusted(anchor: &AnchorRecord) -> Vec<Effect> {
        let name = forms::anchor_label(anchor);
        let now = anchor
            .details
            .environment
            .as_ref()
            .filter(|e| !e.is_empty())
            .map_or_else(|| "nothing".to_owned(), forms::conditions_text);
        vec![
            Effect::Info(format!("Anchor {name} now records {now}.")),
            Effect::Call(Call::CheckAnchors),
        ]
    }

    /// An anchor was deleted: said, and the list asked again.
    pub fn answer_deleted(id: &AnchorId, name: &str) -> Vec<Effect> {
        vec![
            Effect::Info(format!("Deleted anchor {name} ({id}).")),
            Effect::Call(Call::CheckAnchors),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Anchor, AnchorDetails, Conditions};
    use crate::tui::unit::{key, palette, screen};

    fn row(n: u128, description: &str, status: AnchorStatus) -> AnchorRow {
        let id = crate::model::AnchorId::from_ulid(ulid::Ulid::from(n));
        let at = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
        let mut environment = Conditions::new();
        environment.insert("temperature".into(), 20.into());
        AnchorRow {
            anchor: AnchorRecord {
                anchor: Anchor {
                    id: id.clone(),
                    owner: "ada".parse().expect("a traveller"),
                    timeline: TimelineId::primary(),
                    timestamp: at,
                    description: Some(description.into()),
                    status,
                    created_at: at,
                },
                details: AnchorDetails {
                    environment: Some(environment.clone()),
                    ..AnchorDetails::default()
                },
            },
            stability: Some(AnchorStability {
                anchor_id: id,
                status: if status == AnchorStatus::Spent {
                    AnchorVerdict::Unstable
                } else {
                    AnchorVerdict::Stable
                },
                current_conditions: environment,
                reasons: Vec::new(),
                timeline_id: TimelineId::primary(),
                timeline_status: None,
                closes_at: None,
                paradoxes: Vec::new(),
                quantum_state: None,
                accuracy: None,
            }),
        }
    }

    fn list() -> AnchorsList {
        let mut l = AnchorsList::new();
        l.show(vec![
            row(1, "home", AnchorStatus::Active),
            row(2, "old", AnchorStatus::Spent),
        ]);
        l
    }

    #[test]
    fn d_asks_first_and_only_y_deletes() {
        let mut l = list();
        assert!(l.key(key("d")).effects.is_empty());
        assert!(l.confirm.is_some());
        let kept = l.key(key("n"));
        assert!(kept.effects.is_empty() && !kept.close && l.confirm.is_none());
        l.key(key("d"));
        let outcome = l.key(key("y"));
        assert!(
            matches!(&outcome.effects[..], [Effect::Call(Call::DeleteAnchor(_, name))] if name == "'home'"),
            "{outcome:?}"
        );
        assert!(!outcome.close, "the list stays");
    }

    #[test]
    fn e_adjusts_an_active_anchor_only() {
        let mut l = list();
        l.key(key("e"));
        let form = l.form.as_ref().expect("a form over the list");
        assert_eq!(form.value(0), "temperature=20");
        assert!(l.key(key("esc")).effects.is_empty());
        assert!(l.form.is_none(), "esc closes the form, not the list");
        l.key(key("j"));
        l.key(key("e"));
        assert!(l.form.is_none());
        let text = screen(100, 24, |f| {
            l.render(f, f.area(), &palette(), &|id| id.to_string())
        });
        assert!(text.contains("'old' is spent"), "{text}");
    }

    #[test]
    fn the_list_shows_each_stability_in_words() {
        let mut l = list();
        let text = screen(100, 24, |f| {
            l.render(f, f.area(), &palette(), &|id| id.to_string())
        });
        assert!(text.contains("● stable"), "{text}");
        assert!(text.contains("✗ spent"), "{text}");
        assert!(text.contains("environment temperature=20"), "{text}");
        assert!(l.key(key("esc")).close);
    }
}

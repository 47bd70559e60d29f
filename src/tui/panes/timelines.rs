//! The timelines pane: name, standing paradoxes, status, window countdown, destination time,
//! branch parent, and the selected one's description and variation. Rows are a tree of
//! branches ([`crate::tui::tree`]): each parallel timeline under the one it branched from. A
//! timeline you may read but not write is marked [`READ_ONLY_MARK`] (your rights come from the
//! access-control lists, refreshed with the list).

use std::collections::HashMap;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui_textarea::TextArea;

use super::{Ctx, InputKey};
use crate::model::{TimelineId, TimelineStatus, Traveller};
use std::sync::Arc;

use crate::error::ServiceError;
use crate::service::prelude::*;
use crate::service::{AccessControlView, Right, TimelineInfo};
use crate::tui::paging::all_pages;
use crate::tui::theme::Palette;
use crate::tui::tree::tree_order_of;
use crate::tui::widgets::{self, Cursor, ellipsize, fmt_countdown, pane_block, title};

/// State of the timelines pane.
#[derive(Debug, Default)]
pub struct TimelinesPane {
    /// Every timeline, as last listed.
    pub all: Vec<TimelineInfo>,
    /// Indices into `all` that pass the filter, in tree order: the cursor indexes this.
    shown: Vec<usize>,
    /// The tree prefix drawn before each shown row's name (`├─ `, `│  └─ `).
    prefixes: Vec<String>,
    /// Names by id, to show a branch's parent by name.
    names: HashMap<TimelineId, String>,
    /// Names of timelines listed once and gone since (deleted): what still names them (an
    /// anchor, a journey, a branch's parent) reads a name, not a dead id.
    deleted: HashMap<TimelineId, String>,
    /// Selection and scroll.
    pub cursor: Cursor,
    /// The filter text (matches name or id, case-insensitively).
    pub filter: String,
    /// The filter being typed, while `/` is active.
    pub filter_input: Option<TextArea<'static>>,
    /// Whether a listing has arrived.
    pub loaded: bool,
    /// Your right on each timeline that has an access-control list; the others give every
    /// traveller read and write, and their creator admin.
    rights: HashMap<TimelineId, Right>,
    /// Who you are, once known: the creator of a timeline without a list administers it.
    pub me: Option<Traveller>,
    /// Whether you may change nothing at all (a read-only token, an operator's restriction):
    /// the line under the list then offers no key that would only be refused (`r`).
    pub changes_refused: bool,
}

/// What the timelines pane fetches: every timeline, and your rights on those with a list.
pub type Listed = (Vec<TimelineInfo>, Option<Vec<AccessControlView>>);

impl TimelinesPane {
    /// Fetches the list of timelines, and your rights on those with an access-control list
    /// (what the pane marks read-only, and the dashboard refuses to change). Rights that
    /// cannot be listed are `None`, leaving the ones known before: the service checks every
    /// change.
    pub async fn fetch(svc: Arc<dyn TimelineService>) -> Result<Listed, ServiceError> {
        let list = all_pages(|page| svc.list_timelines(page)).await?;
        let rights = all_pages(|page| svc.list_access_controls(page)).await.ok();
        Ok((list, rights))
    }

    /// Replaces the list, keeping the selection on the same timeline when it still exists.
    pub fn set(&mut self, timelines: Vec<TimelineInfo>) {
        let keep = self.selected().map(|t| t.id.clone());
        let names = timelines
            .iter()
            .map(|t| (t.id.clone(), t.name.clone()))
            .collect();
        let before = std::mem::replace(&mut self.names, names);
        for (id, name) in before {
            if !self.names.contains_key(&id) {
                self.deleted.insert(id, name);
            }
        }
        self.all = timelines;
        self.loaded = true;
        self.refilter();
        if let Some(id) = keep {
            self.select(&id);
        }
    }

    /// A key while the filter is typed: Enter applies it, Esc clears it, anything else edits
    /// it (and the list follows as it is typed).
    pub fn filter_key(&mut self, key: KeyEvent) -> InputKey {
        let Some(input) = self.filter_input.as_mut() else {
            return InputKey::NotEditing;
        };
        match key.code {
            KeyCode::Enter => {
                let text = widgets::input_text(input);
                self.filter_input = None;
                self.set_filter(text);
                InputKey::Applied
            }
            KeyCode::Esc => {
                self.filter_input = None;
                self.set_filter(String::new());
                InputKey::Applied
            }
            _ => {
                widgets::edit(input, key);
                let text = widgets::input_text(input);
                self.set_filter(text);
                InputKey::Taken
            }
        }
    }

    /// Starts typing the filter, from the one applied.
    pub fn start_filter(&mut self) {
        self.filter_input = Some(widgets::input(&self.filter, "name or id"));
    }

    /// Applies the filter text.
    pub fn set_filter(&mut self, filter: String) {
        let keep = self.selected().map(|t| t.id.clone());
        self.filter = filter;
        self.refilter();
        match keep {
            Some(id) if self.select(&id) => {}
            _ => self.cursor = Cursor::default(),
        }
    }

    /// Recomputes the rows: those that pass the filter, as a tree. With a filter the tree is
    /// of the matches alone: a match whose parent does not match is a root, so a connector
    /// always joins a timeline to its real parent (the Parent column still names it).
    fn refilter(&mut self) {
        let needle = self.filter.to_lowercase();
        let (matching, subset): (Vec<usize>, Vec<&TimelineInfo>) = self
            .all
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                needle.is_empty()
                    || t.name.to_lowercase().contains(&needle)
                    || t.id.as_str().contains(&needle)
            })
            .unzip();
        (self.shown, self.prefixes) = tree_order_of(&subset)
            .into_iter()
            .map(|(i, prefix)| (matching[i], prefix))
            .unzip();
        self.cursor.clamp(self.shown.len());
    }

    /// Your rights as the access-control lists give them (timelines not listed give read and
    /// write).
    pub fn set_rights(&mut self, views: Vec<AccessControlView>) {
        self.rights = views
            .into_iter()
            .map(|v| (v.timeline_id, v.your_right))
            .collect();
    }

    /// Your right on `id`: what its access-control list gives you; when it has none, admin
    /// if you created it, else write (as the service decides).
    pub fn right_of(&self, id: &TimelineId) -> Right {
        if let Some(right) = self.rights.get(id) {
            return *right;
        }
        let created = self
            .get(id)
            .is_some_and(|t| t.created_by.is_some() && t.created_by == self.me);
        if created { Right::Admin } else { Right::Write }
    }

    /// Whether you may read `id` but not write it.
    pub fn read_only(&self, id: &TimelineId) -> bool {
        self.right_of(id) < Right::Write
    }

    /// Selects a timeline by id; false when it is not shown.
    pub fn select(&mut self, id: &TimelineId) -> bool {
        match self.shown.iter().position(|&i| &self.all[i].id == id) {
            Some(pos) => {
                self.cursor.selected = pos;
                true
            }
            None => false,
        }
    }

    /// How many rows pass the filter.
    pub fn len(&self) -> usize {
        self.shown.len()
    }

    /// Whether no row passes the filter.
    pub fn is_empty(&self) -> bool {
        self.shown.is_empty()
    }

    /// The selected timeline.
    pub fn selected(&self) -> Option<&TimelineInfo> {
        self.shown
            .get(self.cursor.selected)
            .and_then(|&i| self.all.get(i))
    }

    /// A timeline by id.
    pub fn get(&self, id: &TimelineId) -> Option<&TimelineInfo> {
        self.all.iter().find(|t| &t.id == id)
    }

    /// The listed timeline whose id is written `id` (as an error names it), with its name.
    pub fn listed(&self, id: &str) -> Option<(TimelineId, String)> {
        let t = self.all.iter().find(|t| t.id.as_str() == id)?;
        Some((t.id.clone(), t.name.clone()))
    }

    /// A timeline's name (marked when it was deleted), or its id when unknown. Once a listing
    /// has arrived, an id it does not hold is marked "(not listed)": deleted before the
    /// dashboard opened, or no longer yours to read (F20).
    pub fn name_of(&self, id: &TimelineId) -> String {
        match self.known_name(id) {
            Some(name) => name,
            None if self.loaded => format!("{id} (not listed)"),
            None => id.to_string(),
        }
    }

    /// A timeline's name, marked when it was deleted, if it was ever listed.
    fn known_name(&self, id: &TimelineId) -> Option<String> {
        match (self.names.get(id), self.deleted.get(id)) {
            (Some(name), _) => Some(name.clone()),
            (None, Some(name)) => Some(format!("{name} (deleted)")),
            (None, None) => None,
        }
    }

    /// The selected timeline's description and variation, on the last line of `body` when
    /// there is room for rows above it; on two, wrapped, when it needs them and the pane is
    /// tall enough (what is left of it then ends in "…"). Answers the room left for the rows.
    fn render_about(&self, frame: &mut Frame<'_>, body: Rect, p: &Palette) -> Rect {
        let Some(about) = self
            .selected()
            .and_then(|t| about(t, self.read_only(&t.id), self.changes_refused))
            .filter(|_| body.height >= 5)
        else {
            return body;
        };
        let width = usize::from(body.width);
        let room = if body.height >= 8 { 2 } else { 1 };
        let mut lines = widgets::wrap_words(&about, width);
        if lines.len() > room {
            let rest = lines.split_off(room - 1).join(" ");
            lines.push(rest);
        }
        let lines: Vec<ratatui::text::Line> = lines
            .iter()
            .map(|l| Span::styled(ellipsize(l, width), p.dim).into())
            .collect();
        let height = u16::try_from(lines.len()).unwrap_or(1);
        let [rows, line] =
            ratatui::layout::Layout::vertical([Constraint::Min(1), Constraint::Length(height)])
                .areas(body);
        frame.render_widget(Paragraph::new(lines), line);
        rows
    }

    /// Who you are arrived: the creator of a timeline without a list administers it, and
    /// whether you may change anything at all (`changes_refused`: a restriction or a read-only
    /// token, as the rights checks say) decides what the line under the list offers.
    pub fn learn_who(&mut self, me: crate::model::Traveller, changes_refused: bool) {
        self.me = Some(me);
        self.changes_refused = changes_refused;
    }

    /// Draws the pane.
    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect, ctx: &Ctx<'_>) {
        let p = ctx.palette;
        let mut extra = Vec::new();
        if !self.filter.is_empty() {
            extra.push(format!("/{}", self.filter));
        }
        extra.push(format!("{}/{}", self.shown.len(), self.all.len()));
        if let Some(l) = ctx.loading() {
            extra.push(l);
        }
        let block = pane_block(
            title("Timelines", Some(extra.join(" · ")), p),
            ctx.focused,
            p,
        );
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let mut body = inner;
        if let Some(input) = self.filter_input.as_mut() {
            let [line, rest] =
                ratatui::layout::Layout::vertical([Constraint::Length(3), Constraint::Min(0)])
                    .areas(inner);
            widgets::render_input(
                frame,
                line,
                input,
                "filter (enter apply, esc clear)",
                true,
                p,
            );
            body = rest;
        }
        if !self.loaded {
            frame.render_widget(
                Paragraph::new(Span::styled(ctx.not_loaded("Loading timelines…"), p.dim))
                    .wrap(ratatui::widgets::Wrap { trim: true }),
                body,
            );
            return;
        }
        if self.shown.is_empty() {
            let msg = if self.filter.is_empty() {
                "No timelines yet. Press n to create one."
            } else {
                "No timeline matches the filter. Press / then esc to clear it."
            };
            frame.render_widget(Paragraph::new(Span::styled(msg, p.dim)), body);
            return;
        }
        let body = self.render_about(frame, body, p);
        let columns = Columns::for_width(body.width);
        let widths = columns.constraints();
        // Names are cut to their column with an ellipsis rather than mid-letter.
        let cells = ratatui::layout::Layout::horizontal(widths.clone())
            .spacing(1)
            .split(body);
        let width_of = |column: usize| cells.get(column).map_or(8, |r| usize::from(r.width));
        let (name_width, parent_width) = (width_of(1), width_of(6));
        let height = body.height.saturating_sub(1) as usize;
        let range = self.cursor.window(self.shown.len(), height);
        // One indentation for all rows on screen: two cells a level when a row would not
        // fit with three.
        let compact = range.clone().any(|row| {
            let prefix = self.prefixes.get(row).map_or(0, |p| p.chars().count());
            prefix > 0 && prefix + self.all[self.shown[row]].name.chars().count() > name_width
        });
        let selected = self.cursor.selected;
        let rows = range.map(|row| {
            let t = &self.all[self.shown[row]];
            let prefix = self.prefixes.get(row).map_or("", String::as_str);
            let here = ctx.here == Some(&t.id);
            let (status, window) = status_and_window(t, ctx.now, p);
            let (mut trouble, trouble_style) = match t.paradoxes {
                0 => ("·".to_owned(), p.dim),
                n => (format!("⚠{n}"), p.warn),
            };
            // The service is counting a large timeline again: this is its last count.
            if t.paradoxes_recounting {
                trouble.push('…');
            }
            let row_style = if row == selected { p.selected } else { p.text };
            let marker = match (row == selected, here) {
                (true, true) => "▶●",
                (true, false) => "▶ ",
                (false, true) => " ●",
                (false, false) => "  ",
            };
            let mut row_cells = vec![
                Cell::from(marker),
                Cell::from(name_cell(
                    prefix,
                    t,
                    self.read_only(&t.id),
                    name_width,
                    compact,
                )),
                Cell::from(Span::styled(trouble, trouble_style)),
                Cell::from(status),
                Cell::from(window),
            ];
            if columns.destination {
                row_cells.push(Cell::from(
                    t.destination_time
                        .as_ref()
                        .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                        .unwrap_or_else(|| "present".into()),
                ));
            }
            if columns.parent {
                let parent = t
                    .parent
                    .as_ref()
                    // A parent you may not read: its id, in the narrow column (an orphan).
                    .map(|id| self.known_name(id).unwrap_or_else(|| id.to_string()))
                    .unwrap_or_else(|| "—".into());
                row_cells.push(Cell::from(ellipsize(&parent, parent_width)));
            }
            Row::new(row_cells).style(row_style)
        });
        let mut header = vec!["", "Name", "⚠", "Status", "Closes in"];
        if columns.destination {
            header.push("Destination");
        }
        if columns.parent {
            header.push("Parent");
        }
        let table = Table::new(rows, widths)
            .header(Row::new(header).style(p.title))
            .column_spacing(1);
        frame.render_widget(table, body);
    }
}

/// A timeline's status and the countdown to its closing, styled (closing within 10 % of its
/// length is a warning, as the monitor says too); one whose window ended is closed.
fn status_and_window(
    t: &TimelineInfo,
    now: crate::model::Instant,
    p: &Palette,
) -> (Span<'static>, Span<'static>) {
    let status_now = match t.closes_at {
        Some(end) if now >= end => TimelineStatus::Closed,
        _ => t.status,
    };
    let (status, status_style) = match status_now {
        TimelineStatus::Open => ("open", p.ok),
        TimelineStatus::Closed => ("closed", p.error),
    };
    let (window, window_style) = match (status_now, t.closes_at) {
        (TimelineStatus::Closed, _) => ("—".to_owned(), p.dim),
        (_, None) => ("∞".to_owned(), p.dim),
        (_, Some(end)) => {
            let left = end - now;
            let total = t.window.duration().unwrap_or(left);
            // Closing within 10 % of its length is what the monitor warns about too.
            let style = if left * 10 <= total { p.warn } else { p.text };
            (fmt_countdown(left), style)
        }
    };
    (
        Span::styled(status, status_style),
        Span::styled(window, window_style),
    )
}

/// The columns that fit: on a narrow pane the parent goes first, then the destination, so
/// the name keeps room to be read.
struct Columns {
    destination: bool,
    parent: bool,
}

impl Columns {
    fn for_width(width: u16) -> Self {
        Self {
            destination: width >= 50,
            parent: width >= 70,
        }
    }

    fn constraints(&self) -> Vec<Constraint> {
        let mut c = vec![
            Constraint::Length(2),
            Constraint::Fill(2),
            Constraint::Length(4),
            Constraint::Length(6),
            Constraint::Length(9),
        ];
        if self.destination {
            c.push(Constraint::Length(16));
        }
        if self.parent {
            c.push(Constraint::Fill(1));
        }
        c
    }
}

/// `prefix` then `name`, cut to `width`; `compact` draws the prefix two cells a level
/// instead of three (`│ └ ` for `│  └─ `). So the name keeps at least half the room, a deep
/// prefix loses its left part behind `…` before the name is cut.
fn tree_name(prefix: &str, name: &str, width: usize, compact: bool) -> String {
    let mut prefix = if compact {
        // Each level is three cells: keep its first (the line or the corner) and a space.
        prefix
            .chars()
            .collect::<Vec<_>>()
            .chunks(3)
            .flat_map(|level| [level[0], ' '])
            .collect()
    } else {
        prefix.to_owned()
    };
    let prefix_len = prefix.chars().count();
    let room = width.saturating_sub(name.chars().count().min(width / 2).max(1));
    if prefix_len > room {
        prefix = if room == 0 {
            String::new()
        } else {
            let kept: String = prefix.chars().skip(prefix_len - (room - 1)).collect();
            format!("…{kept}")
        };
    }
    ellipsize(&format!("{prefix}{name}"), width)
}

/// The name cell: the tree prefix and the name, then `⇄N` when N merges naming the timeline
/// wait for review and [`READ_ONLY_MARK`] when you may not write it (marks kept whole: the
/// name gives way).
fn name_cell(
    prefix: &str,
    t: &TimelineInfo,
    read_only: bool,
    width: usize,
    compact: bool,
) -> String {
    let mut mark = String::new();
    if t.pending_merges > 0 {
        mark.push_str(&format!(" {PENDING_MARK}{}", t.pending_merges));
    }
    if read_only {
        mark.push_str(&format!(" {READ_ONLY_MARK}"));
    }
    if mark.is_empty() {
        return tree_name(prefix, &t.name, width, compact);
    }
    let room = width.saturating_sub(mark.chars().count());
    format!("{}{mark}", tree_name(prefix, &t.name, room, compact))
}

/// Marks a timeline with merges waiting for review.
pub const PENDING_MARK: char = '⇄';

/// Marks a timeline you may read but not write (its access-control list gives you read only).
pub const READ_ONLY_MARK: &str = "ro";

/// What the timelines list does not show of `t`: whether you may only read it, its
/// description and variation, and the merges waiting for review.
fn about(t: &TimelineInfo, read_only: bool, changes_refused: bool) -> Option<String> {
    let read_only = read_only
        .then(|| format!("{READ_ONLY_MARK}: you may read it, not write it (ask its admins)"));
    // Those from it are reviewed where they go (r there, or here when one place has them);
    // r is not offered to whom it would only be refused.
    let from = t.pending_merges.saturating_sub(t.pending_into);
    let r = |offer: &str| if changes_refused { "" } else { offer }.to_owned();
    let pending = match (t.pending_merges, from) {
        (0, _) => None,
        (1, 0) => Some(format!(
            "{PENDING_MARK} 1 merge waiting for review{}",
            r(" (r reviews it)")
        )),
        (1, _) => Some(format!(
            "{PENDING_MARK} 1 merge from it waiting for review where it goes{}",
            r(" (r)")
        )),
        (n, 0) => Some(format!(
            "{PENDING_MARK} {n} merges waiting for review{}",
            r(" (r reviews them)")
        )),
        (n, from) => Some(format!(
            "{PENDING_MARK} {n} merges waiting for review, {from} from it{}",
            r(" (r)")
        )),
    };
    let parts: Vec<String> = [
        read_only,
        pending,
        t.description.as_ref().filter(|d| **d != t.name).cloned(),
        t.variation.as_ref().map(|v| format!("variation: {v}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!parts.is_empty()).then(|| format!("{}: {}", t.name, parts.join(" · ")))
}

#[cfg(test)]
mod tests {
    use super::tree_name;

    #[test]
    fn a_tree_name_keeps_room_for_the_name() {
        assert_eq!(
            tree_name("│  └─ ", "Tesla stays", 20, false),
            "│  └─ Tesla stays"
        );
        assert_eq!(
            tree_name("│  └─ ", "Tesla stays", 16, true),
            "│ └ Tesla stays"
        );
        assert_eq!(
            tree_name("│  └─ ", "Tesla stays", 16, false),
            "│  └─ Tesla sta…"
        );
        assert_eq!(
            tree_name("   │  │  └─ ", "Tesla stays", 16, true),
            "  │ │ └ Tesla s…"
        );
        assert_eq!(
            tree_name(&"│  ".repeat(12), "Tesla", 16, true),
            "…│ │ │ │ │ Tesla"
        );
        assert_eq!(tree_name("", "Primary", 16, true), "Primary");
        assert_eq!(
            tree_name("└─ ", "A very long timeline name", 12, true),
            "└ A very lo…"
        );
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::tui::unit::{key, timeline, typed};

    fn pane() -> TimelinesPane {
        let mut pane = TimelinesPane::default();
        pane.set(vec![
            timeline(0, "primary"),
            timeline(1, "Tesla 1889"),
            timeline(2, "Paris 1900"),
        ]);
        pane
    }

    #[test]
    fn a_count_being_worked_out_again_is_marked_as_the_last_one() {
        use crate::tui::unit::{palette, screen};
        let mut pane = TimelinesPane::default();
        let mut tesla = timeline(1, "Tesla 1889");
        tesla.paradoxes = 3;
        tesla.paradoxes_recounting = true;
        let mut paris = timeline(2, "Paris 1900");
        paris.paradoxes = 2;
        pane.set(vec![timeline(0, "primary"), tesla, paris]);
        let p = palette();
        let ctx = Ctx {
            palette: &p,
            now: crate::model::parse_instant("t", "2026-01-01T00:00:00Z").unwrap(),
            focused: true,
            here: None,
            pending: false,
            offline: None,
        };
        let shown = screen(80, 8, |f| pane.render(f, f.area(), &ctx));
        let row = |name: &str| shown.lines().find(|l| l.contains(name)).unwrap_or_default();
        assert!(row("Tesla 1889").contains("⚠3…"), "{shown}");
        assert!(row("Paris 1900").contains("⚠2 "), "{shown}");
    }

    #[test]
    fn the_filter_follows_what_is_typed_and_esc_clears_it() {
        let mut pane = pane();
        assert_eq!(pane.filter_key(key("t")), InputKey::NotEditing);
        pane.start_filter();
        for k in typed("tes") {
            assert_eq!(pane.filter_key(k), InputKey::Taken);
        }
        assert_eq!(pane.len(), 1, "narrowed as typed");
        assert_eq!(pane.filter_key(key("esc")), InputKey::Applied);
        assert!(pane.filter_input.is_none());
        assert_eq!(pane.len(), 3);
    }

    #[test]
    fn enter_keeps_the_filter_and_closes_the_input() {
        let mut pane = pane();
        pane.start_filter();
        for k in typed("paris") {
            pane.filter_key(k);
        }
        assert_eq!(pane.filter_key(key("enter")), InputKey::Applied);
        assert_eq!(pane.filter, "paris");
        assert_eq!(pane.selected().map(|t| t.name.as_str()), Some("Paris 1900"));
        assert_eq!(pane.filter_key(key("j")), InputKey::NotEditing);
    }
}

//! The access screen (`S`): the selected timeline's access-control list (who may read, write
//! and administer it) and your right on it; its admins and operators add a name to a list
//! (`a`), remove one (`x`, asks first) or remove the whole list (`D`, asks first), and read
//! the timeline's access log over a wall-clock range (`l`), refused attempts highlighted.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{FormKey, YesNo, counted, form_key, render_question, yes_no};
use crate::model::{TimeRange, TimelineId, Traveller};
use crate::service::{
    AccessAction, AccessControl, AccessControlSet, AccessControlView, AccessLog, AccessLogEntry,
    AccessLogQuery, PageRequest, Permissions, Right, SetAccessControlRequest,
};
use crate::tui::action::Slot;
use crate::tui::effect::{Call, Effect, Outcome, Reload};
use crate::tui::keymap::Key;
use crate::tui::offers::{self, CLOSE, DOWN, Move, Offer, UP};
use crate::tui::theme::Palette;
use crate::tui::widgets::{Cursor, Form, centered, ellipsize, fmt_time, modal};

/// What the screen does with a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Add a name to a list (a form).
    Add,
    /// Take the selected name off its list, after asking.
    Remove,
    /// Remove the whole list, after asking.
    RemoveList,
    /// Read the access log over a range (a form).
    Log,
    /// Ask for the list again.
    Reload,
    /// Close the screen.
    Close,
    /// Move the selection.
    Move(Move),
}

impl Command {
    /// Whether only the timeline's admins (and operators) may give it.
    fn needs_admin(self) -> bool {
        matches!(
            self,
            Command::Add | Command::Remove | Command::RemoveList | Command::Log
        )
    }
}

/// The keys of the access screen: its hint line and the help are written from these.
pub const OFFERS: &[Offer<Command>] = &[
    Offer::new(Command::Add, &[Key::char('a')], "add a name"),
    Offer::new(
        Command::Remove,
        &[Key::char('x'), Key::code(KeyCode::Delete)],
        "remove",
    ),
    Offer::new(Command::RemoveList, &[Key::char('D')], "drop the list"),
    Offer::new(Command::Log, &[Key::char('l')], "log"),
    Offer::new(Command::Reload, &[Key::char('s')], "reload"),
    Offer::new(Command::Close, CLOSE, "close"),
    Offer::quiet(Command::Move(Move::Up), UP),
    Offer::quiet(Command::Move(Move::Down), DOWN),
];

/// Lines at the top for your right and the list's standing (it wraps on a narrow screen).
const HEAD_LINES: u16 = 3;

/// What a form of the access screen asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessForm {
    /// A name to add to a list.
    AddName,
    /// The range of the access log.
    LogRange,
}

/// A question the access screen asks before a change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ask {
    /// Take a traveller off a list.
    RemoveName(Right, Traveller),
    /// Remove the whole list: the timeline is open to every traveller again.
    RemoveList,
}

/// The access log as the screen shows it.
#[derive(Clone, Debug, Default)]
pub struct LogView {
    /// The wall-clock range asked for (`None`: the last 24 hours).
    pub range: Option<TimeRange>,
    /// Waiting for it.
    pub loading: bool,
    /// The log, or why it could not be read.
    pub answer: Option<Result<AccessLog, String>>,
}

/// The access screen of one timeline.
#[derive(Debug)]
pub struct AccessScreen {
    /// The timeline.
    pub timeline: TimelineId,
    /// Its name, for the title.
    pub name: String,
    /// Whether you are an operator (every right on every timeline).
    pub operator: bool,
    /// Who you are, so a change that would take your own admin right away is refused.
    pub me: Option<Traveller>,
    /// Who created the timeline: its admin while it has no list. `None` for `primary` and
    /// history as shipped, which only operators administer then.
    pub creator: Option<Traveller>,
    /// The list and your right, once they arrived.
    pub view: Option<AccessControlView>,
    /// Waiting for the list (or for it again).
    pub loading: bool,
    /// The selected name.
    pub cursor: Cursor,
    /// The form open over the screen.
    pub form: Option<Box<Form<AccessForm>>>,
    /// The question open over the screen.
    pub ask: Option<Ask>,
    /// A change was sent and waits for its answer.
    pub sent: bool,
    /// A word about the last key or answer, and whether it is a refusal.
    pub note: Option<(String, bool)>,
    /// The access log, once asked for.
    pub log: Option<LogView>,
    /// How the timeline came to be, when it is a branch: a list copied from its base when it
    /// was branched reads as copied, not as set by whoever branched it.
    pub branched: Option<Branched>,
}

/// A branch's making, as the list of timelines says it.
#[derive(Clone, Debug)]
pub struct Branched {
    /// The name of the timeline it was branched from.
    pub from: String,
    /// Who branched it.
    pub by: Traveller,
    /// When.
    pub at: crate::model::Instant,
}

impl AccessScreen {
    /// The screen of `timeline` (named `name`), waiting for its list.
    pub fn new(timeline: TimelineId, name: String, operator: bool, me: Option<Traveller>) -> Self {
        Self {
            timeline,
            name,
            operator,
            me,
            creator: None,
            view: None,
            loading: true,
            cursor: Cursor::default(),
            form: None,
            ask: None,
            sent: false,
            note: None,
            log: None,
            branched: None,
        }
    }

    /// The call that fetches the list (again).
    pub fn fetch(&self) -> Call {
        Call::AccessControl(self.timeline.clone())
    }

    /// The call that fetches the list again on a refresh (the tick, ctrl-r), so a list changed
    /// elsewhere shows; none while a change, a form or a question is open over it.
    pub fn refetch(&self) -> Option<Call> {
        let busy = self.loading || self.sent || self.form.is_some() || self.ask.is_some();
        (!busy).then(|| self.fetch())
    }

    /// The list arrived.
    pub fn show(&mut self, view: AccessControlView) {
        self.view = Some(view);
        self.loading = false;
        self.cursor.clamp(self.names().len());
    }

    /// The change it sent was made: the list in force shows until it is fetched again.
    pub fn changed(&mut self, set: &AccessControlSet) {
        if let Some(view) = &mut self.view {
            view.access_control = set.access_control.clone();
        }
        self.cursor.clamp(self.names().len());
        self.note = Some((
            if set.access_control.is_some() {
                "The list is set.".to_owned()
            } else {
                format!(
                    "The list is removed: {} is open to every traveller.",
                    self.name
                )
            },
            false,
        ));
    }

    /// The access log arrived.
    pub fn show_log(&mut self, log: AccessLog) {
        let view = self.log.get_or_insert_with(LogView::default);
        view.loading = false;
        view.answer = Some(Ok(log));
    }

    /// Whether a change it sent waits for its answer.
    pub fn waiting(&self) -> bool {
        self.sent
    }

    /// The change it waited for was made: its form closes.
    pub fn answered(&mut self) {
        self.sent = false;
        self.form = None;
    }

    /// The change it waited for was refused: the form (if open) shows `why`, else the screen.
    pub fn refuse(&mut self, why: Option<String>) {
        self.sent = false;
        super::show_refusal(&mut self.form, &mut self.note, why);
    }

    /// A call of `slot` failed with `why`: what waited for it stops waiting and says why.
    /// True when the screen shows it (the footer need not).
    pub fn failed(&mut self, slot: Slot, why: &str) -> bool {
        match slot {
            Slot::Security => {
                self.loading = false;
                self.note = Some((why.to_owned(), true));
                true
            }
            Slot::AccessLog => {
                let log = self.log.get_or_insert_with(LogView::default);
                log.loading = false;
                log.answer = Some(Err(why.to_owned()));
                true
            }
            Slot::Mutation => {
                self.refuse(None);
                false
            }
            _ => false,
        }
    }

    /// The names on the lists, admins first, each with its list.
    pub fn names(&self) -> Vec<(Right, Traveller)> {
        let Some(acl) = self.view.as_ref().and_then(|v| v.access_control.as_ref()) else {
            return Vec::new();
        };
        let p = &acl.permissions;
        [
            (Right::Admin, &p.admin),
            (Right::Write, &p.write),
            (Right::Read, &p.read),
        ]
        .into_iter()
        .flat_map(|(right, names)| names.iter().map(move |n| (right, n.clone())))
        .collect()
    }

    /// Your right on the timeline, once known.
    fn right(&self) -> Option<Right> {
        if self.operator {
            return Some(Right::Admin);
        }
        self.view.as_ref().map(|v| v.your_right)
    }

    /// Why you may not change who may use the timeline or read its log, if you may not.
    fn not_admin(&self) -> Option<String> {
        match self.right() {
            Some(Right::Admin) => None,
            _ if self.view.as_ref().is_some_and(|v| v.read_only_token) => {
                Some(super::READ_ONLY_TOKEN.to_owned())
            }
            None => Some("Wait for the list to arrive.".to_owned()),
            Some(right) => Some(format!(
                "You may {} {} but not administer it (its lists, its access log): ask its admins.",
                right.as_str(),
                self.name
            )),
        }
    }

    /// The lists in force, or empty ones when there is none yet: a first list made by
    /// someone who is not an operator names them as an admin, or it would lock them out.
    fn base(&self) -> Permissions {
        match self.view.as_ref().and_then(|v| v.access_control.as_ref()) {
            Some(acl) => acl.permissions.clone(),
            None => {
                let mut p = Permissions::default();
                if !self.operator
                    && let Some(me) = &self.me
                {
                    p.admin.push(me.clone());
                }
                p
            }
        }
    }

    /// Why `permissions` would take your own admin right away (a non-operator may not), if so.
    fn locks_you_out(&self, permissions: &Permissions) -> Option<String> {
        let me = self.me.as_ref()?;
        (!self.operator && !permissions.admin.contains(me)).then(|| {
            format!(
                "That would take your admin right on {} away: keep {me} in admin (an operator \
                 can change any list).",
                self.name
            )
        })
    }

    /// Sends `permissions` (or the removal of the list) and waits.
    fn send(&mut self, permissions: Option<Permissions>) -> Outcome {
        self.sent = true;
        self.note = None;
        Outcome::with(Effect::Call(Call::SetAccess(SetAccessControlRequest {
            timeline_id: self.timeline.clone(),
            permissions,
        })))
    }

    /// A key: the form or the question takes it first when open; else ↑↓/jk move, `a` adds a
    /// name, `x` removes the selected one, `D` removes the list, `l` reads the access log,
    /// `s` fetches the list again, esc or q closes.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        if self.form.is_some() {
            return self.form_key(key);
        }
        if let Some(ask) = self.ask.take() {
            return match yes_no(key) {
                YesNo::Asking => {
                    self.ask = Some(ask);
                    Outcome::keep()
                }
                YesNo::No => Outcome::keep(),
                YesNo::Yes => self.confirmed(ask),
            };
        }
        self.note = None;
        let len = self.names().len();
        let Some(command) = offers::find(OFFERS, &key) else {
            return Outcome::keep();
        };
        match command {
            Command::Close => return Outcome::close(),
            Command::Move(m) => m.apply(&mut self.cursor, len),
            Command::Reload if self.loading => {
                self.note = Some(("Reloading: the list comes in a moment.".into(), false));
            }
            Command::Reload => {
                self.loading = true;
                return Outcome::with(Effect::Call(self.fetch()));
            }
            c if c.needs_admin() && self.sent => {
                self.note = Some(("Wait for the change sent to be answered.".into(), true));
            }
            c if c.needs_admin()
                && let Some(why) = self.not_admin() =>
            {
                self.note = Some((why, true));
            }
            Command::Add => {
                self.form = Some(Box::new(Form::new(
                    format!("Add a name to a list of {}", self.name),
                    AccessForm::AddName,
                    &[
                        ("List (read, write or admin)", "read".into(), ""),
                        (
                            "Traveller name (a token's subject)",
                            String::new(),
                            "e.g. ada",
                        ),
                    ],
                )));
                if let Some(form) = &mut self.form {
                    form.focus = 1;
                    form.note = "A name on another list moves to this one · enter add · esc \
                                 cancel"
                        .into();
                }
            }
            Command::Remove => match self.names().get(self.cursor.selected) {
                Some((right, name)) => self.ask = Some(Ask::RemoveName(*right, name.clone())),
                None => self.note = Some(("There is no name to remove.".into(), true)),
            },
            Command::RemoveList => {
                if self
                    .view
                    .as_ref()
                    .is_some_and(|v| v.access_control.is_none())
                {
                    self.note = Some((format!("{} has no list to remove.", self.name), true));
                } else {
                    self.ask = Some(Ask::RemoveList);
                }
            }
            Command::Log => {
                let range = (
                    "Range (start/end, start/P1D or a date; empty: the last 24 h)",
                    String::new(),
                    "e.g. 2026-11-22 or 2026-11-22T00:00:00Z/P1D",
                );
                // Entries that named no timeline are not this timeline's: an operator asks
                // for them, and they are shown apart.
                let service = ("Service-wide entries too (y/n)", "n".to_owned(), "");
                let fields = if self.operator {
                    vec![range, service]
                } else {
                    vec![range]
                };
                let mut form = Form::new(
                    format!("Access log of {}", self.name),
                    AccessForm::LogRange,
                    &fields,
                );
                form.note = "enter read · esc cancel".into();
                self.form = Some(Box::new(form));
            }
        }
        Outcome::keep()
    }

    /// A key on the open form.
    fn form_key(&mut self, key: KeyEvent) -> Outcome {
        let Some(form) = &mut self.form else {
            return Outcome::keep();
        };
        match form_key(form, key) {
            FormKey::Kept => Outcome::keep(),
            FormKey::Closed => {
                // A change already sent is answered even so: the screen says how it went.
                self.form = None;
                Outcome::keep()
            }
            FormKey::Submit => match form.kind {
                AccessForm::AddName => self.add_name(),
                AccessForm::LogRange => self.read_log(),
            },
        }
    }

    /// Sends the list with the name the form names added to the list it names.
    fn add_name(&mut self) -> Outcome {
        let Some(form) = &mut self.form else {
            return Outcome::keep();
        };
        let right = match form.value(0).to_lowercase().as_str() {
            "read" | "r" => Right::Read,
            "write" | "w" => Right::Write,
            "admin" | "a" => Right::Admin,
            _ => {
                form.refuse("list: read, write or admin".into(), Some("list"));
                return Outcome::keep();
            }
        };
        let name: Traveller = match form.value(1).parse() {
            Ok(name) => name,
            Err(e) => {
                form.refuse(format!("traveller name: {e}"), Some("traveller name"));
                return Outcome::keep();
            }
        };
        let mut permissions = self.base();
        let already = match right {
            Right::Read => permissions.read.contains(&name),
            Right::Write => permissions.write.contains(&name),
            Right::Admin => permissions.admin.contains(&name),
        };
        let listed_elsewhere = permissions.right_of(&name).is_some();
        if already
            && self
                .view
                .as_ref()
                .is_some_and(|v| v.access_control.is_some())
        {
            let why = format!("traveller name: {name} is already in {}", right.as_str());
            if let Some(form) = &mut self.form {
                form.refuse(why, Some("traveller name"));
            }
            return Outcome::keep();
        }
        // One list a name: a name added to another list moves there.
        if listed_elsewhere {
            permissions.read.retain(|n| n != &name);
            permissions.write.retain(|n| n != &name);
            permissions.admin.retain(|n| n != &name);
        }
        match right {
            Right::Read => permissions.read.push(name),
            Right::Write => permissions.write.push(name),
            Right::Admin => permissions.admin.push(name),
        }
        if let Some(why) = self.locks_you_out(&permissions) {
            if let Some(form) = &mut self.form {
                form.refuse(why, None);
            }
            return Outcome::keep();
        }
        if let Some(form) = &mut self.form {
            form.pending = true;
            form.clear_refusal();
        }
        self.send(Some(permissions))
    }

    /// Reads the access log over the range the form names.
    fn read_log(&mut self) -> Outcome {
        let Some(form) = &mut self.form else {
            return Outcome::keep();
        };
        let text = form.value(0);
        let service_wide =
            self.operator && matches!(form.value(1).to_lowercase().as_str(), "y" | "yes");
        let range = if text.is_empty() {
            None
        } else {
            // Typed as everywhere else: one date is that whole day.
            match TimeRange::parse_typed("range", &text) {
                Ok(range) => Some(range),
                Err(e) => {
                    form.refuse(e.to_string(), Some("range"));
                    return Outcome::keep();
                }
            }
        };
        self.form = None;
        self.log = Some(LogView {
            range,
            loading: true,
            answer: None,
        });
        Outcome::with(Effect::Call(Call::AccessLog(AccessLogQuery {
            timeline_id: self.timeline.clone(),
            time_range: range,
            page: PageRequest::first(PageRequest::MAX_LIMIT),
            service_wide,
        })))
    }

    /// Yes to `ask`.
    fn confirmed(&mut self, ask: Ask) -> Outcome {
        match ask {
            Ask::RemoveList => self.send(None),
            Ask::RemoveName(right, name) => {
                let mut permissions = self.base();
                match right {
                    Right::Read => permissions.read.retain(|n| n != &name),
                    Right::Write => permissions.write.retain(|n| n != &name),
                    Right::Admin => permissions.admin.retain(|n| n != &name),
                }
                if let Some(why) = self.locks_you_out(&permissions) {
                    self.note = Some((why, true));
                    return Outcome::keep();
                }
                self.send(Some(permissions))
            }
        }
    }

    /// Draws the screen over `area`, and the form or the question on top.
    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect, p: &Palette) {
        // As tall as what it shows needs: the head, the names, a note, the log, the keys.
        let names_wanted = u16::try_from(self.names().len())
            .unwrap_or(u16::MAX)
            .saturating_add(1)
            .max(2);
        let log_wanted = match &self.log {
            None => 0,
            Some(LogView {
                answer: Some(Ok(log)),
                ..
            }) => u16::try_from(log.logs.len())
                .unwrap_or(u16::MAX)
                .saturating_add(2)
                .max(3),
            Some(_) => 4,
        };
        let note_height = if self.note.is_some() { 2 } else { 0 };
        let wanted = names_wanted
            .saturating_add(log_wanted)
            .saturating_add(note_height + HEAD_LINES + 1 + 2);
        let rect = centered(
            area,
            area.width.saturating_sub(4).min(120),
            wanted.min(area.height.saturating_sub(2)),
        );
        let mut title = format!("Access to {} ({})", self.name, self.timeline);
        if self.loading || self.sent {
            title.push_str(" · waiting…");
        }
        let inner = modal(frame, rect, &title, p);
        // The log gets what it wants of what the names leave, and at least half.
        let log_height = log_wanted.min(
            inner
                .height
                .saturating_sub(HEAD_LINES + note_height + 1 + names_wanted.min(4))
                .max(inner.height / 2),
        );
        let [head, names, note, log, keys] = Layout::vertical([
            Constraint::Length(HEAD_LINES),
            Constraint::Min(2),
            Constraint::Length(note_height),
            Constraint::Length(log_height),
            Constraint::Length(1),
        ])
        .areas(inner);
        let width = usize::from(inner.width);
        frame.render_widget(
            Paragraph::new(self.head_lines(p)).wrap(Wrap { trim: true }),
            head,
        );
        frame.render_widget(
            Paragraph::new(self.name_lines(names.height.into(), width, p)),
            names,
        );
        if let Some((text, error)) = &self.note {
            frame.render_widget(
                Paragraph::new(Span::styled(
                    text.clone(),
                    if *error { p.warn } else { p.ok },
                ))
                .wrap(Wrap { trim: true }),
                note,
            );
        }
        if let Some(view) = &self.log {
            // Entries are cut to the width; a reason it could not be read wraps.
            // Not trimmed: a row without the ✗ mark keeps its two leading spaces, so the
            // columns line up.
            frame.render_widget(
                Paragraph::new(log_lines(view, log.height.into(), width, p))
                    .wrap(Wrap { trim: false }),
                log,
            );
        }
        // What you may not do is left out, and said once; without a list there is nothing to
        // remove.
        let listed = self
            .view
            .as_ref()
            .is_some_and(|v| v.access_control.is_some());
        let keys_text = if self.right() == Some(Right::Admin) {
            offers::hint_where(OFFERS, |c| {
                listed || !matches!(c, Command::Remove | Command::RemoveList)
            })
        } else {
            let reader = offers::hint_where(OFFERS, |c| !c.needs_admin());
            format!("{reader} · changes need the admin right")
        };
        frame.render_widget(
            Paragraph::new(Span::styled(ellipsize(&keys_text, width), p.dim)),
            keys,
        );
        if let Some(form) = &mut self.form {
            form.render(frame, area, p);
        }
        if let Some(ask) = &self.ask {
            let (title, question) = match ask {
                Ask::RemoveName(right, name) => (
                    "Remove a name",
                    format!(
                        "Take {name} off the {} list of {}? (n keeps it)",
                        right.as_str(),
                        self.name
                    ),
                ),
                Ask::RemoveList => (
                    "Remove the list",
                    format!(
                        "Remove the access-control list of {}? Every traveller may then read and \
                         write it, {}. (n keeps it)",
                        self.name,
                        self.admin_without_list()
                    ),
                ),
            };
            render_question(frame, area, title, &question, p);
        }
    }

    /// Who administers the timeline while it has no list, as a clause.
    fn admin_without_list(&self) -> String {
        match &self.creator {
            Some(creator) => format!("{creator}, its creator, acting as its admin"),
            None => "and only operators administer it (it has no creator)".to_owned(),
        }
    }

    /// Your right, and the list's standing: who set it and when, or that there is none.
    fn head_lines(&self, p: &Palette) -> Vec<Line<'static>> {
        let Some(view) = &self.view else {
            return vec![Line::from(Span::styled(
                if self.loading {
                    "Loading the access-control list…"
                } else {
                    "The access-control list could not be read."
                },
                p.dim,
            ))];
        };
        let right = if self.operator {
            vec![
                Span::styled("Your right: ", p.dim),
                Span::styled("admin", p.ok),
                Span::styled(
                    " (you are an operator: every right on every timeline)",
                    p.dim,
                ),
            ]
        } else {
            let style = match view.your_right {
                Right::Read => p.warn,
                _ => p.ok,
            };
            let mut spans = vec![
                Span::styled("Your right: ", p.dim),
                Span::styled(view.your_right.as_str(), style),
            ];
            if view.read_only_token {
                spans.push(Span::styled(" (your token allows reading only)", p.warn));
            } else if view.your_right == Right::Read {
                spans.push(Span::styled(" (you may read it, not change it)", p.dim));
            }
            spans
        };
        let copied = |acl: &AccessControl| {
            let b = self.branched.as_ref()?;
            acl.copied_at_branching(&b.by, &b.at).then(|| {
                format!(
                    "List copied from {} when {} branched it, at {}, with {} as admin.",
                    b.from,
                    b.by,
                    fmt_time(&b.at),
                    b.by
                )
            })
        };
        let standing = match &view.access_control {
            Some(acl) => format!(
                "{} Admin includes write, write includes read.",
                copied(acl).unwrap_or_else(|| format!(
                    "List set by {} at {}.",
                    acl.set_by,
                    fmt_time(&acl.at)
                ))
            ),
            None => format!(
                "No access-control list: every traveller may read and write it, {}.",
                self.admin_without_list()
            ),
        };
        vec![Line::from(right), Line::from(Span::styled(standing, p.dim))]
    }

    /// The names on the lists, in view, the selected one marked.
    fn name_lines(&mut self, height: usize, width: usize, p: &Palette) -> Vec<Line<'static>> {
        let names = self.names();
        if names.is_empty() {
            let text = if self
                .view
                .as_ref()
                .is_some_and(|v| v.access_control.is_some())
            {
                "The lists name nobody: only operators may use it."
            } else if self.right() != Some(Right::Admin) {
                if self.view.is_some() && self.creator.is_some() {
                    "Its creator or an operator may make one."
                } else if self.view.is_some() {
                    "An operator may make one."
                } else {
                    ""
                }
            } else if self.operator {
                "Press a to make a list."
            } else {
                "Press a to make a list (you stay its admin)."
            };
            return vec![Line::from(Span::styled(text, p.dim))];
        }
        let mut lines = vec![Line::from(Span::styled(
            ellipsize("  List    Traveller", width),
            p.title,
        ))];
        let range = self.cursor.window(names.len(), height.saturating_sub(1));
        for i in range {
            let (right, name) = &names[i];
            let selected = i == self.cursor.selected;
            let style = if selected { p.selected } else { p.text };
            let you = if self.me.as_ref() == Some(name) {
                " (you)"
            } else {
                ""
            };
            lines.push(Line::from(vec![
                Span::styled(if selected { "▶ " } else { "  " }, style),
                Span::styled(format!("{:<8}", right.as_str()), p.key),
                Span::styled(
                    ellipsize(&format!("{name}{you}"), width.saturating_sub(10)),
                    style,
                ),
            ]));
        }
        lines
    }
}

/// The access log: a title with its range and counts, then the newest entries that fit,
/// refused attempts marked and highlighted.
fn log_lines(view: &LogView, height: usize, width: usize, p: &Palette) -> Vec<Line<'static>> {
    let range = match &view.range {
        Some(r) => format!("{} to {}", fmt_time(&r.start), fmt_time(&r.end)),
        None => "the last 24 h".to_owned(),
    };
    let mut title = format!("Access log, {range}");
    let mut lines = Vec::new();
    match &view.answer {
        None => title.push_str(" · loading…"),
        Some(Err(why)) => {
            lines.push(Line::from(Span::styled(format!("Not read: {why}"), p.warn)));
        }
        Some(Ok(log)) => {
            let refused = log
                .logs
                .iter()
                .filter(|e| e.outcome == "refused")
                .map(|e| e.count)
                .sum::<u64>();
            title.push_str(&match log.logs.len() {
                1 => " · 1 entry".to_owned(),
                n => format!(" · {n} entries"),
            });
            if refused > 0 {
                title.push_str(&format!(" · {} refused", counted(refused, "attempt")));
            }
            if log.dropped > 0 {
                title.push_str(&format!(" · {} not counted", log.dropped));
            }
            if log.logs.is_empty() {
                lines.push(Line::from(Span::styled(
                    "Nobody used it in this range.",
                    p.dim,
                )));
            } else {
                // This timeline's entries, then apart those that named no timeline (service-wide,
                // shown to operators), the newest of each that fit.
                let (own, service): (Vec<_>, Vec<_>) =
                    log.logs.iter().partition(|e| e.scope != "service");
                let service_room = if service.is_empty() {
                    0
                } else {
                    1 + service.len()
                };
                let room = height.saturating_sub(2).max(1);
                let own_room = room.saturating_sub(service_room.min(room / 2)).max(1);
                let skip = own.len().saturating_sub(own_room);
                let short = short_entries(log.logs.iter(), width);
                lines.extend(own[skip..].iter().map(|e| entry_line(e, short, width, p)));
                if !service.is_empty() {
                    let left = room.saturating_sub(lines.len() + 1).max(1);
                    lines.push(Line::from(Span::styled(
                        ellipsize("Service-wide (named no timeline):", width),
                        p.dim,
                    )));
                    let skip = service.len().saturating_sub(left);
                    lines.extend(
                        service[skip..]
                            .iter()
                            .map(|e| entry_line(e, short, width, p)),
                    );
                }
            }
        }
    }
    let mut out = vec![Line::from(Span::styled(ellipsize(&title, width), p.title))];
    out.extend(lines);
    out
}

/// One access-log entry: when, who, what, how often, which operation; a refusal marked ✗.
/// `short` (a narrow screen) gives the same columns shorter, so the operation and whether it
/// is flushed still read whole.
fn entry_line(e: &AccessLogEntry, short: bool, width: usize, p: &Palette) -> Line<'static> {
    let refused = e.outcome == "refused" || e.action == AccessAction::UnauthorizedAccessAttempt;
    let rest = entry_text(e, short);
    let (mark, style) = if refused {
        ("✗ ", p.error)
    } else {
        ("  ", p.text)
    };
    Line::from(vec![
        Span::styled(mark, style),
        Span::styled(ellipsize(&rest, width.saturating_sub(2)), style),
    ])
}

/// An entry's columns, whole or short (minutes, which the log counts by, and a shorter name).
fn entry_text(e: &AccessLogEntry, short: bool) -> String {
    let action = match e.action {
        AccessAction::Read => "read",
        AccessAction::Write => "write",
        AccessAction::Travel => "travel",
        AccessAction::Admin => "admin",
        AccessAction::UnauthorizedAccessAttempt => "refused",
    };
    if short {
        format!(
            "{} {:<10} {:<7} ×{:<3} {}{}",
            e.timestamp.format("%m-%d %H:%M"),
            ellipsize(&e.user_id, 10),
            action,
            e.count,
            e.operation,
            if e.durable { "" } else { " (unflushed)" }
        )
    } else {
        format!(
            "{} {:<12} {:<7} ×{:<4} {}{}",
            fmt_time(&e.timestamp),
            ellipsize(&e.user_id, 12),
            action,
            e.count,
            e.operation,
            if e.durable { "" } else { " (not yet flushed)" }
        )
    }
}

/// Whether any of `entries` is too wide for `width` whole: then all are shown short, so the
/// columns line up.
fn short_entries<'a>(entries: impl IntoIterator<Item = &'a AccessLogEntry>, width: usize) -> bool {
    entries
        .into_iter()
        .any(|e| entry_text(e, false).chars().count() > width.saturating_sub(2))
}

impl AccessScreen {
    /// A list was set or removed on the timeline named `name`: said; the screen on that
    /// timeline (`open`) shows it and asks for it again; your rights (the read-only marks)
    /// may have changed with it.
    pub fn answer_set(open: Option<&mut Self>, set: &AccessControlSet, name: &str) -> Vec<Effect> {
        let mut effects = vec![Effect::Info(match &set.access_control {
            Some(_) => format!("Access to {name} changed."),
            None => format!("{name} has no access-control list now."),
        })];
        if let Some(screen) = open.filter(|s| s.timeline == set.timeline_id) {
            screen.changed(set);
            effects.push(Effect::Call(screen.fetch()));
        }
        effects.push(Effect::Reload(Reload::Timelines));
        effects
    }

    /// A timeline's list arrived: shown if it is this screen's timeline.
    pub fn answer_view(&mut self, view: AccessControlView) {
        if self.timeline == view.timeline_id {
            self.show(view);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::AccessControl;
    use crate::tui::unit::{key, palette, screen, typed};

    fn t(s: &str) -> crate::model::Instant {
        crate::model::parse_instant("t", s).expect("instant")
    }

    fn ada() -> Traveller {
        "ada".parse().expect("a name")
    }

    fn view(right: Right, acl: Option<Permissions>) -> AccessControlView {
        AccessControlView {
            timeline_id: TimelineId::primary(),
            access_control: acl.map(|permissions| AccessControl {
                timeline_id: TimelineId::primary(),
                permissions,
                set_by: ada(),
                at: t("2026-11-22T10:00:00Z"),
            }),
            your_right: right,
            read_only_token: false,
        }
    }

    fn screen_of(right: Right, acl: Option<Permissions>) -> AccessScreen {
        let mut s = AccessScreen::new(TimelineId::primary(), "Primary".into(), false, Some(ada()));
        s.show(view(right, acl));
        s
    }

    fn lists(admin: &[&str], write: &[&str], read: &[&str]) -> Permissions {
        let names = |l: &[&str]| l.iter().map(|n| n.parse().expect("name")).collect();
        Permissions {
            admin: names(admin),
            write: names(write),
            read: names(read),
        }
    }

    fn sent(outcome: &Outcome) -> Option<SetAccessControlRequest> {
        match outcome.effects.as_slice() {
            [Effect::Call(Call::SetAccess(req))] => Some(req.clone()),
            _ => None,
        }
    }

    #[test]
    fn a_reader_is_told_before_anything_is_sent() {
        let mut s = screen_of(Right::Read, Some(lists(&["bob"], &[], &["ada"])));
        for k in ["a", "x", "D", "l"] {
            let outcome = s.key(key(k));
            assert!(outcome.effects.is_empty(), "{k}");
            assert!(s.form.is_none() && s.ask.is_none(), "{k}");
            let (why, error) = s.note.clone().expect("a reason");
            assert!(error && why.contains("ask its admins"), "{why}");
        }
    }

    #[test]
    fn adding_a_name_sends_the_lists_with_it_and_keeps_you_admin() {
        let mut s = screen_of(Right::Admin, None);
        s.key(key("a"));
        for k in typed("bob") {
            s.key(k);
        }
        let outcome = s.key(key("enter"));
        let req = sent(&outcome).expect("the list is sent");
        let p = req.permissions.expect("a list");
        assert_eq!(p.read, vec!["bob".parse::<Traveller>().unwrap()]);
        assert_eq!(p.admin, vec![ada()], "a first list keeps its maker admin");
        assert!(s.waiting());
        s.answered();
        assert!(s.form.is_none() && !s.waiting());
    }

    #[test]
    fn removing_a_name_asks_first_and_never_locks_you_out() {
        let mut s = screen_of(Right::Admin, Some(lists(&["ada"], &["bob"], &[])));
        s.key(key("j"));
        assert!(s.key(key("x")).effects.is_empty());
        assert_eq!(
            s.ask,
            Some(Ask::RemoveName(Right::Write, "bob".parse().unwrap()))
        );
        let req = sent(&s.key(key("y"))).expect("sent on yes");
        assert!(req.permissions.expect("a list").write.is_empty());
        s.answered();
        s.key(key("k"));
        s.key(key("x"));
        assert!(s.key(key("y")).effects.is_empty(), "not sent");
        assert!(s.note.expect("why").0.contains("keep ada in admin"));
    }

    #[test]
    fn removing_the_list_asks_and_sends_null() {
        let mut s = screen_of(Right::Admin, Some(lists(&["ada"], &[], &[])));
        s.key(key("D"));
        assert!(s.key(key("n")).effects.is_empty());
        s.key(key("D"));
        let req = sent(&s.key(key("y"))).expect("sent");
        assert!(req.permissions.is_none());
    }

    #[test]
    fn the_log_shows_refusals_marked_and_an_error_readably() {
        let mut s = screen_of(Right::Admin, None);
        s.key(key("l"));
        let outcome = s.key(key("enter"));
        assert!(matches!(
            outcome.effects.as_slice(),
            [Effect::Call(Call::AccessLog(q))] if q.time_range.is_none()
        ));
        let entry = |user: &str, action, outcome: &str| AccessLogEntry {
            user_id: user.into(),
            action,
            timestamp: t("2026-11-22T10:00:00Z"),
            count: 2,
            last_at: t("2026-11-22T10:00:30Z"),
            operation: "add_events".into(),
            outcome: outcome.into(),
            durable: true,
            scope: "timeline".into(),
        };
        s.show_log(AccessLog {
            status: "ok".into(),
            logs: vec![
                entry("ada", AccessAction::Write, "allowed"),
                entry("eve", AccessAction::UnauthorizedAccessAttempt, "refused"),
            ],
            dropped: 0,
            retained_from: None,
            next_cursor: None,
        });
        let p = palette();
        let text = screen(100, 30, |f| s.render(f, f.area(), &p));
        assert!(text.contains("2 entries · 2 attempts refused"), "{text}");
        assert!(text.contains("✗ 2026-11-22 10:00:00 eve"), "{text}");
        // A row without the mark lines up with a marked one.
        let column = |who: &str| {
            text.lines().find(|l| l.contains(who)).and_then(|l| {
                l.find("2026-11-22 10:00:00")
                    .map(|b| l[..b].chars().count())
            })
        };
        assert_eq!(column(" ada "), column(" eve "), "{text}");
        // Entries that named no timeline come apart, under their own heading, after it.
        let mut service = entry("tom", AccessAction::UnauthorizedAccessAttempt, "refused");
        service.scope = "service".into();
        if let Some(LogView {
            answer: Some(Ok(log)),
            ..
        }) = &mut s.log
        {
            log.logs.insert(0, service);
        }
        let text = screen(100, 30, |f| s.render(f, f.area(), &p));
        let at = |said: &str| text.find(said).unwrap_or_else(|| panic!("{said}: {text}"));
        assert!(
            at(" eve ") < at("Service-wide (named no timeline):"),
            "{text}"
        );
        assert!(
            at("Service-wide (named no timeline):") < at(" tom "),
            "{text}"
        );
        assert!(s.failed(Slot::AccessLog, "Unsupported operation: not yet"));
        let text = screen(100, 30, |f| s.render(f, f.area(), &p));
        assert!(
            text.contains("Not read: Unsupported operation: not yet"),
            "{text}"
        );
    }
}

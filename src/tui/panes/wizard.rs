//! The anchor/travel wizard: destination (timeline or anchor, and for a timeline, if you like,
//! a time and a place to arrive at) → items to carry → paradox check → confirm → the journey as
//! it happened.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use crate::model::{
    Anchor, AnchorStatus, Instant, Item, ItemId, TimelineId, TimelineStatus, parse_typed_instant,
};
use ratatui_textarea::TextArea;
use std::sync::Arc;

use crate::paradox::{Paradox, ParadoxKind};
use crate::service::prelude::*;
use crate::service::{
    GuideTravelRequest, Journey, PageRequest, ParadoxCheckRequest, ParadoxReport, ProposedChange,
    ServiceResult, TimelineInfo, TravelRequest,
};
use crate::tui::effect::{Call, Effect, Outcome, Reload};
use crate::tui::keymap::Key;
use crate::tui::offers::{self, Offer};
use crate::tui::theme::Palette;
use crate::tui::widgets::{self, Cursor, centered, ellipsize, fmt_time, modal};

/// What a key asks of the travel wizard. Each step offers its own keys ([`Wizard::key`] looks
/// them up in the step's list), and its hint line and the help are written from the same lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// The row above.
    Up,
    /// The row below.
    Down,
    /// Carry the selected item, or leave it.
    Toggle,
    /// On to the next step.
    Next,
    /// Back a step.
    Back,
    /// Travel (at the last step).
    Travel,
    /// Into the next input (a time, a place) or back to the list.
    NextInput,
    /// Into the input before.
    PrevInput,
    /// Close the wizard.
    Close,
}

const ARROW_UP: &[Key] = &[Key::code(KeyCode::Up)];
const ARROW_DOWN: &[Key] = &[Key::code(KeyCode::Down)];
const ENTER: &[Key] = &[Key::code(KeyCode::Enter)];
const ESC: &[Key] = &[Key::code(KeyCode::Esc)];
const BACK: &[Key] = &[Key::code(KeyCode::Backspace), Key::code(KeyCode::Left)];
const TAB: &[Key] = &[Key::code(KeyCode::Tab)];
const BACKTAB: &[Key] = &[Key::code(KeyCode::BackTab)];

/// Choosing where to go.
pub const DESTINATION: &[Offer<Command>] = &[
    Offer::labelled(Command::Up, offers::UP, "↑↓", "choose"),
    Offer::quiet(Command::Down, offers::DOWN),
    Offer::new(Command::NextInput, TAB, "a time & place"),
    Offer::quiet(Command::PrevInput, BACKTAB),
    Offer::new(Command::Next, ENTER, "next"),
    Offer::new(Command::Close, ESC, "close"),
];

/// Typing a time or a place: j and k are letters here, the arrows still choose.
const TYPING: &[Offer<Command>] = &[
    Offer::new(Command::NextInput, TAB, "next input"),
    Offer::quiet(Command::PrevInput, BACKTAB),
    Offer::labelled(Command::Up, ARROW_UP, "↑↓", "choose"),
    Offer::quiet(Command::Down, ARROW_DOWN),
    Offer::new(Command::Next, ENTER, "next"),
    Offer::new(Command::Close, ESC, "close"),
];

/// Choosing what to carry.
pub const ITEMS: &[Offer<Command>] = &[
    Offer::labelled(Command::Up, offers::UP, "↑↓", "move"),
    Offer::quiet(Command::Down, offers::DOWN),
    Offer::labelled(
        Command::Toggle,
        &[Key::char(' '), Key::char('x')],
        "space",
        "carry / leave",
    ),
    Offer::new(Command::Next, ENTER, "check"),
    Offer::labelled(Command::Back, BACK, "⌫", "back"),
    Offer::new(Command::Close, ESC, "close"),
];

const CHECK: &[Offer<Command>] = &[
    Offer::new(Command::Next, ENTER, "continue"),
    Offer::labelled(Command::Back, BACK, "⌫", "back"),
    Offer::new(Command::Close, ESC, "close"),
];

/// The last look: only `y` travels, so no stray enter does.
pub const CONFIRM: &[Offer<Command>] = &[
    Offer::new(
        Command::Travel,
        &[Key::char('y'), Key::char('Y')],
        "travel now",
    ),
    Offer::labelled(Command::Back, BACK, "⌫", "back"),
    Offer::new(Command::Close, ESC, "close"),
];

const DONE: &[Offer<Command>] = &[Offer::labelled(
    Command::Close,
    &[Key::code(KeyCode::Enter), Key::code(KeyCode::Esc)],
    "enter / esc",
    "close",
)];

/// Waiting for the check or the journey: esc abandons it.
const WAITING: &[Offer<Command>] = &[Offer::new(Command::Close, ESC, "close")];

/// The wizard's steps, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// Choose where to go.
    Destination,
    /// Choose what to carry.
    Items,
    /// See what the paradox checker says.
    Check,
    /// Last look before leaving.
    Confirm,
    /// The journey as recorded.
    Done,
}

impl Step {
    const ALL: [(Step, &'static str); 5] = [
        (Step::Destination, "Destination"),
        (Step::Items, "Items"),
        (Step::Check, "Paradox check"),
        (Step::Confirm, "Confirm"),
        (Step::Done, "Journey"),
    ];
}

/// A place the traveller can go.
#[derive(Clone, Debug, PartialEq)]
pub enum Destination {
    /// An open timeline.
    Timeline {
        /// Its id.
        id: TimelineId,
        /// Its name.
        name: String,
        /// Where journeys into it arrive.
        arrival: Option<Instant>,
    },
    /// One of the traveller's active anchors (travelling there is returning), with the name
    /// of its timeline.
    Anchor(Anchor, String),
}

impl Destination {
    /// The `destination` of the travel request.
    pub fn request_id(&self) -> String {
        match self {
            Destination::Timeline { id, .. } => id.to_string(),
            Destination::Anchor(a, _) => a.id.to_string(),
        }
    }

    /// The timeline a journey there arrives in.
    pub fn timeline(&self) -> &TimelineId {
        match self {
            Destination::Timeline { id, .. } => id,
            Destination::Anchor(a, _) => &a.timeline,
        }
    }

    /// The time a journey there arrives at, when known in advance.
    pub fn arrival(&self) -> Option<Instant> {
        match self {
            Destination::Timeline { arrival, .. } => *arrival,
            Destination::Anchor(a, _) => Some(a.timestamp),
        }
    }

    fn label(&self) -> String {
        match self {
            Destination::Timeline { name, arrival, .. } => format!(
                "timeline  {name}  → {}",
                arrival
                    .as_ref()
                    .map(fmt_time)
                    .unwrap_or_else(|| "present".into())
            ),
            // An anchor without a description is named by where it is, not by its id.
            Destination::Anchor(a, place) => format!(
                "anchor    {}  → {} (return)",
                a.description
                    .clone()
                    .unwrap_or_else(|| format!("in {place}")),
                fmt_time(&a.timestamp)
            ),
        }
    }
}

/// The destination step's inputs: when and where to arrive in a timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Typing {
    /// The time to arrive at.
    When,
    /// The place to arrive at.
    Where,
}

/// State of the wizard.
#[derive(Debug)]
pub struct Wizard {
    /// The step shown.
    pub step: Step,
    /// Only anchors are offered (the "return to an anchor" shortcut).
    pub anchors_only: bool,
    /// Where the traveller can go.
    pub destinations: Vec<Destination>,
    /// Selection among destinations.
    pub dest_cursor: Cursor,
    /// The traveller's items.
    pub items: Vec<Item>,
    /// Which items are to be carried (parallel to `items`).
    pub chosen: Vec<bool>,
    /// Selection among items.
    pub item_cursor: Cursor,
    /// Waiting for the service.
    pub loading: bool,
    /// The paradox checker's verdict.
    pub report: Option<Verdict>,
    /// The journey made.
    pub journey: Option<Journey>,
    /// When to arrive in a timeline (empty: when the timeline says).
    pub when: TextArea<'static>,
    /// Where to arrive (empty: nowhere in particular).
    pub place: TextArea<'static>,
    /// The input of the destination step that takes typing, if one does.
    pub typing: Option<Typing>,
    /// Why what was typed cannot be used.
    pub refusal: Option<String>,
    /// The time typed, read on leaving the destination step.
    pub at: Option<Instant>,
    /// The place typed, read on leaving the destination step.
    pub location: Option<String>,
    /// The anchor to select when the lists arrive (opened from the anchors list).
    pub preselect_anchor: Option<crate::model::AnchorId>,
}

impl Wizard {
    /// Asks for your anchors and items (the wizard offers them; the delete question names the
    /// anchors in the timeline it deletes).
    pub async fn fetch_data(
        svc: Arc<dyn TimelineService>,
    ) -> ServiceResult<(Vec<Anchor>, Vec<Item>)> {
        let anchors = svc
            .list_anchors(PageRequest::first(PageRequest::MAX_LIMIT))
            .await?;
        let items = svc
            .list_items(PageRequest::first(PageRequest::MAX_LIMIT))
            .await?;
        Ok((anchors.items, items.items))
    }

    /// A journey was made (to the timeline named `to`): said; the wizard that made it
    /// (`open`) shows it; everything shown is asked again from where you are now.
    pub fn answer_journey(open: Option<&mut Self>, journey: Journey, to: &str) -> Vec<Effect> {
        let place = journey
            .location
            .as_ref()
            .map(|l| format!(", in {l}"))
            .unwrap_or_default();
        let said = format!(
            "Arrived in {to} at {}{place}.",
            fmt_time(&journey.arrival_time)
        );
        if let Some(w) = open {
            w.arrived(journey);
        }
        vec![Effect::Info(said), Effect::Reload(Reload::All)]
    }

    /// A wizard waiting for its lists.
    pub fn new(anchors_only: bool) -> Self {
        Self {
            step: Step::Destination,
            anchors_only,
            destinations: Vec::new(),
            dest_cursor: Cursor::default(),
            items: Vec::new(),
            chosen: Vec::new(),
            item_cursor: Cursor::default(),
            loading: true,
            report: None,
            journey: None,
            when: widgets::input("", ""),
            place: widgets::input("", "optional, e.g. Paris"),
            typing: None,
            refusal: None,
            at: None,
            location: None,
            preselect_anchor: None,
        }
    }

    /// Whether the destination step offers a time and a place (not for anchors: a return
    /// goes back to the anchor's own).
    fn offers_when_where(&self) -> bool {
        !self.anchors_only && matches!(self.destination(), Some(Destination::Timeline { .. }))
    }

    /// Reads the time and place typed for a timeline: a place needs a time, the timeline's
    /// destination time when it has one.
    fn read_when_where(&mut self) -> Result<(), String> {
        self.at = None;
        self.location = None;
        if !self.offers_when_where() {
            return Ok(());
        }
        let when = widgets::input_text(&self.when);
        let place = widgets::input_text(&self.place);
        let at = if when.is_empty() {
            None
        } else {
            Some(parse_typed_instant("arrive at", &when).map_err(|e| e.to_string())?)
        };
        let location = (!place.is_empty()).then_some(place);
        let at = match (at, &location) {
            (None, Some(_)) => match self.destination().and_then(Destination::arrival) {
                Some(t) => Some(t),
                None => {
                    return Err(
                        "arrive at: a place needs a time too; this timeline arrives at \
                                the present, so type when"
                            .into(),
                    );
                }
            },
            (at, _) => at,
        };
        self.at = at;
        self.location = location;
        Ok(())
    }

    /// When the journey arrives, when known in advance: the time typed, else the destination's.
    pub fn arrival(&self) -> Option<Instant> {
        self.at
            .or_else(|| self.destination().and_then(Destination::arrival))
    }

    /// Fills the lists: open timelines (unless only anchors), then active anchors, newest
    /// first; items the traveller carries are pre-selected.
    pub fn set_data(
        &mut self,
        timelines: &[TimelineInfo],
        anchors: Vec<Anchor>,
        items: Vec<Item>,
        now: Instant,
        preselect: Option<&TimelineId>,
    ) {
        let mut dest = Vec::new();
        if !self.anchors_only {
            dest.extend(
                timelines
                    .iter()
                    .filter(|t| {
                        t.status == TimelineStatus::Open && t.closes_at.is_none_or(|end| now < end)
                    })
                    .map(|t| Destination::Timeline {
                        id: t.id.clone(),
                        name: t.name.clone(),
                        arrival: t.destination_time,
                    }),
            );
        }
        let mut active: Vec<Anchor> = anchors
            .into_iter()
            .filter(|a| a.status == AnchorStatus::Active)
            .collect();
        active.sort_by_key(|a| std::cmp::Reverse(a.created_at));
        dest.extend(active.into_iter().map(|a| {
            let place = timelines
                .iter()
                .find(|t| t.id == a.timeline)
                .map_or_else(|| a.timeline.to_string(), |t| t.name.clone());
            Destination::Anchor(a, place)
        }));
        let anchor = self.preselect_anchor.as_ref().and_then(|id| {
            dest.iter()
                .position(|d| matches!(d, Destination::Anchor(a, _) if &a.id == id))
        });
        self.dest_cursor.selected = anchor
            .or_else(|| {
                preselect.and_then(|id| {
                    dest.iter()
                        .position(|d| matches!(d, Destination::Timeline { id: t, .. } if t == id))
                })
            })
            .unwrap_or(0);
        self.destinations = dest;
        self.chosen = items
            .iter()
            .map(|i| matches!(i.whereabouts, crate::model::Whereabouts::Carried))
            .collect();
        self.items = items;
        self.loading = false;
    }

    /// The chosen destination.
    pub fn destination(&self) -> Option<&Destination> {
        self.destinations.get(self.dest_cursor.selected)
    }

    /// The items to carry.
    pub fn carried(&self) -> Vec<ItemId> {
        self.items
            .iter()
            .zip(&self.chosen)
            .filter(|(_, c)| **c)
            .map(|(i, _)| i.id.clone())
            .collect()
    }

    /// The changes the paradox check is asked about: bringing each carried item in, at the
    /// time the journey arrives (an anchor's timestamp; a timeline's destination time), so the
    /// check looks where the traveller will be.
    pub fn proposed_changes(&self) -> Vec<ProposedChange> {
        let time = self.arrival();
        self.carried()
            .into_iter()
            .map(|id| ProposedChange {
                item_id: Some(id),
                time,
                ..ProposedChange::default()
            })
            .collect()
    }

    /// Toggles the selected item.
    pub fn toggle(&mut self) {
        if let Some(c) = self.chosen.get_mut(self.item_cursor.selected) {
            *c = !*c;
        }
    }

    /// Moves the selection of the current step.
    pub fn step_cursor(&mut self, delta: isize) {
        match self.step {
            Step::Destination => {
                self.dest_cursor.step(delta, self.destinations.len());
                if !self.offers_when_where() {
                    self.typing = None;
                }
            }
            Step::Items => self.item_cursor.step(delta, self.items.len()),
            _ => {}
        }
    }

    /// A key in the wizard: Esc closes it from any step (as every modal), Backspace goes back
    /// a step, Enter goes on; the paradox check and the journey are calls for the loop to make.
    /// A journey starts only on `y` at the confirm step, so no stray Enter travels. Each key is
    /// looked up in what the step offers now ([`Self::offers`]); typed into an input, the rest
    /// is text.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        if self.step == Step::Destination && !self.loading {
            self.refusal = None;
        }
        let command = offers::find(self.offers(), &key).filter(|&c| self.offered(c));
        let Some(command) = command else {
            let input = match (self.loading, self.typing) {
                (false, Some(Typing::When)) => Some(&mut self.when),
                (false, Some(Typing::Where)) => Some(&mut self.place),
                _ => None,
            };
            if let Some(input) = input {
                widgets::edit(input, key);
            }
            return Outcome::keep();
        };
        match (self.step, command) {
            (_, Command::Close) => return Outcome::close(),
            (_, Command::Up) => self.step_cursor(-1),
            (_, Command::Down) => self.step_cursor(1),
            // Tab goes from the list to when, to where, and back.
            (Step::Destination, Command::NextInput) => {
                self.typing = match self.typing {
                    None => Some(Typing::When),
                    Some(Typing::When) => Some(Typing::Where),
                    Some(Typing::Where) => None,
                };
            }
            (Step::Destination, Command::PrevInput) => {
                self.typing = match self.typing {
                    None => Some(Typing::Where),
                    Some(Typing::Where) => Some(Typing::When),
                    Some(Typing::When) => None,
                };
            }
            (Step::Items, Command::Toggle) => self.toggle(),
            (Step::Destination, Command::Next) => match self.read_when_where() {
                Ok(()) => {
                    self.typing = None;
                    self.step = Step::Items;
                }
                Err(why) => self.refusal = Some(why),
            },
            (Step::Items, Command::Back) => self.step = Step::Destination,
            (Step::Items, Command::Next) => {
                let Some(dest) = self.destination() else {
                    return Outcome::keep();
                };
                let req = ParadoxCheckRequest {
                    timeline_id: dest.timeline().clone(),
                    proposed_changes: self.proposed_changes(),
                };
                self.step = Step::Check;
                self.report = None;
                self.loading = true;
                return Outcome::with(Effect::Call(Call::WizardCheck(req)));
            }
            (Step::Check, Command::Back) => self.step = Step::Items,
            (Step::Check, Command::Next) => self.step = Step::Confirm,
            (Step::Confirm, Command::Back) => self.step = Step::Check,
            (Step::Confirm, Command::Travel) => {
                let Some(dest) = self.destination() else {
                    return Outcome::keep();
                };
                let call = match self.at {
                    // A time (and place) of the traveller's choosing in a timeline.
                    Some(destination_time) => Call::TravelInTime(GuideTravelRequest {
                        destination_time,
                        location: self.location.clone(),
                        timeline_id: Some(dest.timeline().clone()),
                        items_transported: Some(self.carried()),
                        // The wizard's own check step showed what the journey would add.
                        safety_check: false,
                    }),
                    None => Call::Travel(TravelRequest {
                        destination: dest.request_id(),
                        items_transported: self.carried(),
                    }),
                };
                self.loading = true;
                return Outcome::with(Effect::Call(call));
            }
            _ => {}
        }
        Outcome::keep()
    }

    /// The keys the wizard offers now: waiting, typing, or its step's.
    fn offers(&self) -> &'static [Offer<Command>] {
        if self.loading {
            return WAITING;
        }
        match self.step {
            Step::Destination if self.typing.is_some() => TYPING,
            Step::Destination => DESTINATION,
            Step::Items => ITEMS,
            Step::Check => CHECK,
            Step::Confirm => CONFIRM,
            Step::Done => DONE,
        }
    }

    /// Whether `command` would do something now: a time and a place only for a timeline (not
    /// an anchor, nor in the return-only wizard), a choice and on only with destinations.
    fn offered(&self, command: Command) -> bool {
        match (self.step, command) {
            (Step::Destination, Command::NextInput | Command::PrevInput) => {
                self.typing.is_some() || self.offers_when_where()
            }
            (Step::Destination, Command::Next) => self.destination().is_some(),
            (Step::Destination, Command::Up | Command::Down) => !self.destinations.is_empty(),
            _ => true,
        }
    }

    /// The key line: what [`Self::offers`] offers now.
    fn hint(&self) -> String {
        let keys = offers::hint_where(self.offers(), |c| self.offered(c));
        if self.typing.is_some() && !self.loading && self.step == Step::Destination {
            format!("type · {keys}")
        } else {
            keys
        }
    }

    /// The verdict of the check it asked for arrived.
    pub fn checked(&mut self, report: Verdict) {
        self.report = Some(report);
        self.loading = false;
    }

    /// The journey it asked for was made.
    pub fn arrived(&mut self, journey: Journey) {
        self.journey = Some(journey);
        self.step = Step::Done;
        self.loading = false;
    }

    /// A call it waited on failed: it stops waiting, and a failed check goes back to the items.
    pub fn failed(&mut self, check: bool) {
        self.loading = false;
        if check {
            self.step = Step::Items;
        }
    }

    /// Draws the wizard as a modal over `area`; `name_of` names timelines.
    pub fn render(
        &mut self,
        frame: &mut Frame<'_>,
        area: Rect,
        palette: &Palette,
        name_of: &dyn Fn(&TimelineId) -> String,
    ) {
        let p = palette;
        let rect = centered(
            area,
            area.width.saturating_sub(8).min(96),
            area.height.saturating_sub(4).min(24),
        );
        let title = if self.anchors_only {
            "Return to an anchor"
        } else {
            "Travel"
        };
        let inner = modal(frame, rect, title, p);
        let [steps, body, keys] = Layout::vertical([
            Constraint::Length(2),
            Constraint::Min(1),
            Constraint::Length(1),
        ])
        .areas(inner);
        let mut bar = Vec::new();
        for (i, (step, name)) in Step::ALL.iter().enumerate() {
            if i > 0 {
                bar.push(Span::styled(" › ", p.dim));
            }
            let style = if *step == self.step {
                p.selected
            } else if *step < self.step {
                p.ok
            } else {
                p.dim
            };
            bar.push(Span::styled(format!("{} {name}", i + 1), style));
        }
        frame.render_widget(Paragraph::new(Line::from(bar)), steps);
        let keys_text = self.hint();
        frame.render_widget(Paragraph::new(Span::styled(keys_text, p.dim)), keys);
        let when_where = self.step == Step::Destination
            && !self.loading
            && !self.anchors_only
            && !self.destinations.is_empty();
        let (body, inputs, refusal) = if when_where {
            let [list, inputs, refusal] = Layout::vertical([
                Constraint::Min(2),
                Constraint::Length(3),
                Constraint::Length(if self.refusal.is_some() { 2 } else { 0 }),
            ])
            .areas(body);
            (list, Some(inputs), refusal)
        } else {
            (body, None, Rect::default())
        };
        let lines = if self.loading {
            vec![Line::from(Span::styled("Working…", p.dim))]
        } else {
            self.body_lines(body.height as usize, body.width as usize, p, name_of)
        };
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
        if let Some(area) = inputs {
            self.render_when_where(frame, area, p);
        }
        if let Some(why) = &self.refusal {
            frame.render_widget(
                Paragraph::new(Span::styled(format!("✗ {why}"), p.error)).wrap(Wrap { trim: true }),
                refusal,
            );
        }
    }

    /// The destination step's time and place inputs, side by side, for a timeline; for an
    /// anchor, why there are none.
    fn render_when_where(&mut self, frame: &mut Frame<'_>, area: Rect, p: &Palette) {
        let arrival = match self.destination() {
            Some(Destination::Timeline { arrival, .. }) => *arrival,
            _ => {
                frame.render_widget(
                    Paragraph::new(Span::styled(
                        "A return takes you back to the anchor's own time and place.",
                        p.dim,
                    )),
                    area,
                );
                return;
            }
        };
        let default = arrival
            .as_ref()
            .map_or_else(|| "the present".to_owned(), fmt_time);
        self.when.set_placeholder_text(format!("empty: {default}"));
        let [when, place] =
            Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)])
                .areas(area);
        let typing = self.typing;
        widgets::render_input(
            frame,
            when,
            &mut self.when,
            "Arrive at (UTC)",
            typing == Some(Typing::When),
            p,
        );
        widgets::render_input(
            frame,
            place,
            &mut self.place,
            "Place",
            typing == Some(Typing::Where),
            p,
        );
    }

    /// The step's lines; list rows are cut to `width` so each takes one row and the selected
    /// one stays in view however narrow the terminal.
    fn body_lines<'a>(
        &mut self,
        height: usize,
        width: usize,
        p: &Palette,
        name_of: &dyn Fn(&TimelineId) -> String,
    ) -> Vec<Line<'a>> {
        match self.step {
            Step::Destination => self.destination_lines(height, width, p),
            Step::Items => self.item_lines(height, width, p, name_of),
            Step::Check => self.check_lines(p, name_of),
            Step::Confirm => self.confirm_lines(p, name_of),
            Step::Done => self.done_lines(p, name_of),
        }
    }

    /// The destinations to choose from (timelines, or your anchors).
    fn destination_lines<'a>(&mut self, height: usize, width: usize, p: &Palette) -> Vec<Line<'a>> {
        let pick = |selected: bool| if selected { p.selected } else { p.text };
        if self.destinations.is_empty() {
            let msg = if self.anchors_only {
                "You have no active anchor. Press esc, then a to set one where you are."
            } else {
                "No open timeline and no active anchor to go to. Press esc, then n to create a timeline."
            };
            return vec![Line::from(Span::styled(msg, p.dim))];
        }
        let mut lines = vec![Line::from(Span::styled("Where to?", p.title))];
        let range = self
            .dest_cursor
            .window(self.destinations.len(), height.saturating_sub(1));
        // The chosen timeline shows the time typed for it, once it reads as one.
        let typed = parse_typed_instant("arrive at", &widgets::input_text(&self.when)).ok();
        for i in range {
            let selected = i == self.dest_cursor.selected;
            let label = match (&self.destinations[i], typed) {
                (Destination::Timeline { name, .. }, Some(at))
                    if selected && !self.anchors_only =>
                {
                    format!("timeline  {name}  → {} (as typed)", fmt_time(&at))
                }
                (dest, _) => dest.label(),
            };
            let row = format!("{} {label}", if selected { "▶" } else { " " });
            lines.push(Line::from(Span::styled(
                ellipsize(&row, width),
                pick(selected),
            )));
        }
        lines
    }

    /// The items to take along.
    fn item_lines<'a>(
        &mut self,
        height: usize,
        width: usize,
        p: &Palette,
        name_of: &dyn Fn(&TimelineId) -> String,
    ) -> Vec<Line<'a>> {
        let pick = |selected: bool| if selected { p.selected } else { p.text };
        let mut lines = vec![Line::from(Span::styled("What do you carry?", p.title))];
        if self.items.is_empty() {
            lines.push(Line::from(Span::styled(
                "You have no items. Press enter to travel light (i registers one where you are).",
                p.dim,
            )));
            return lines;
        }
        let range = self
            .item_cursor
            .window(self.items.len(), height.saturating_sub(1));
        for i in range {
            let item = &self.items[i];
            let selected = i == self.item_cursor.selected;
            let mark = if self.chosen[i] { "[x]" } else { "[ ]" };
            let place = match &item.whereabouts {
                crate::model::Whereabouts::Carried => "with you".to_owned(),
                crate::model::Whereabouts::Left { timeline, time } => {
                    format!("left in {} at {}", name_of(timeline), fmt_time(time))
                }
            };
            let what = format!("{mark} {}", ellipsize(&item.description, 40));
            let room = width.saturating_sub(what.chars().count());
            lines.push(Line::from(vec![
                Span::styled(what, pick(selected)),
                Span::styled(ellipsize(&format!("  ({place})"), room), p.dim),
            ]));
        }
        lines
    }

    /// The paradox check, while it runs or once it answered.
    fn check_lines<'a>(
        &mut self,
        p: &Palette,
        name_of: &dyn Fn(&TimelineId) -> String,
    ) -> Vec<Line<'a>> {
        let Some(verdict) = &self.report else {
            return vec![Line::from(Span::styled("Checking…", p.dim))];
        };
        report_lines(verdict, p, name_of)
    }

    /// The journey to confirm, and what the check found.
    fn confirm_lines<'a>(
        &mut self,
        p: &Palette,
        name_of: &dyn Fn(&TimelineId) -> String,
    ) -> Vec<Line<'a>> {
        let Some(dest) = self.destination() else {
            return Vec::new();
        };
        let carried = self.carried();
        let to = match (dest, self.at) {
            (Destination::Timeline { name, .. }, Some(at)) => {
                format!("timeline  {name}  → {}", fmt_time(&at))
            }
            _ => dest.label(),
        };
        let mut lines = vec![
            Line::from(Span::styled("Ready to leave", p.title)),
            Line::from(format!("to        {to}")),
            Line::from(format!(
                "arrive in {}{}",
                name_of(dest.timeline()),
                self.location
                    .as_ref()
                    .map(|l| format!(", at {l}"))
                    .unwrap_or_default()
            )),
            Line::from(format!(
                "carrying  {}",
                if carried.is_empty() {
                    "nothing".to_owned()
                } else {
                    self.items
                        .iter()
                        .zip(&self.chosen)
                        .filter(|(_, c)| **c)
                        .map(|(i, _)| i.description.clone())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )),
        ];
        if let Some(v) = &self.report {
            let new = v.introduced().len();
            lines.push(if new == 0 {
                Line::from(Span::styled(
                    "paradox check: the journey adds no paradox",
                    p.ok,
                ))
            } else {
                Line::from(Span::styled(
                    format!(
                        "paradox check: UNSTABLE ({new} new paradox{}) — travel at your own risk",
                        if new == 1 { "" } else { "es" }
                    ),
                    p.error,
                ))
            });
        }
        lines
    }

    /// The journey made.
    fn done_lines<'a>(
        &mut self,
        p: &Palette,
        name_of: &dyn Fn(&TimelineId) -> String,
    ) -> Vec<Line<'a>> {
        let Some(j) = &self.journey else {
            return Vec::new();
        };
        let item_name = |id: &ItemId| {
            self.items
                .iter()
                .find(|i| &i.id == id)
                .map(|i| i.description.clone())
                .unwrap_or_else(|| id.to_string())
        };
        let mut lines = vec![
            Line::from(Span::styled(
                if j.anchor.is_some() {
                    "Returned."
                } else {
                    "Arrived."
                },
                p.ok,
            )),
            Line::from(format!(
                "from      {} at {}",
                name_of(&j.from_timeline),
                fmt_time(&j.from_time)
            )),
            Line::from(format!(
                "to        {} at {}{}",
                name_of(&j.to_timeline),
                fmt_time(&j.arrival_time),
                j.location
                    .as_ref()
                    .map(|l| format!(", in {l}"))
                    .unwrap_or_default()
            )),
            Line::from(format!(
                "carried   {}",
                if j.items_transported.is_empty() {
                    "nothing".to_owned()
                } else {
                    j.items_transported
                        .iter()
                        .map(item_name)
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )),
        ];
        for left in &j.items_left {
            lines.push(Line::from(Span::styled(
                format!("left      {}: {}", item_name(&left.item_id), left.reason),
                p.warn,
            )));
        }
        if let Some(a) = &j.anchor {
            lines.push(Line::from(Span::styled(
                format!("anchor {a} is now spent"),
                p.dim,
            )));
        }
        lines
    }
}

/// A paradox check's answer beside the paradoxes that stood before the change, so what the
/// change adds is told apart from what was already there.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// The check of the change.
    pub report: ParadoxReport,
    /// The timeline's paradoxes without the change (for this traveller).
    pub standing: Vec<Paradox>,
}

impl Verdict {
    /// Checks `req` and the timeline as it stands.
    pub async fn ask(
        svc: Arc<dyn TimelineService>,
        req: ParadoxCheckRequest,
    ) -> ServiceResult<Self> {
        let standing = svc
            .check_paradox(ParadoxCheckRequest {
                timeline_id: req.timeline_id.clone(),
                proposed_changes: Vec::new(),
            })
            .await?
            .paradoxes;
        let report = svc.check_paradox(req).await?;
        Ok(Self { report, standing })
    }

    /// The paradoxes the change would add.
    pub fn introduced(&self) -> Vec<&Paradox> {
        self.report
            .paradoxes
            .iter()
            .filter(|p| !self.standing.contains(p))
            .collect()
    }
}

/// A check's verdict as lines: what the change adds, then what already stands, each finding
/// with its kind.
pub fn report_lines<'a>(
    verdict: &Verdict,
    p: &Palette,
    name_of: &dyn Fn(&TimelineId) -> String,
) -> Vec<Line<'a>> {
    let name = name_of(&verdict.report.timeline_id);
    let introduced = verdict.introduced();
    let already: Vec<&Paradox> = verdict
        .report
        .paradoxes
        .iter()
        .filter(|p| verdict.standing.contains(p))
        .collect();
    let plural = |n: usize| if n == 1 { "" } else { "es" };
    let mut lines = vec![match (introduced.len(), already.len()) {
        (0, 0) => Line::from(Span::styled(
            format!("✓ {name} stays stable: no paradox found."),
            p.ok,
        )),
        (0, n) => Line::from(Span::styled(
            format!("✓ The change adds no paradox; {name} already has {n} standing:"),
            p.ok,
        )),
        (n, _) => Line::from(Span::styled(
            format!(
                "✗ {name} would become unstable: the change adds {n} paradox{}.",
                plural(n)
            ),
            p.error,
        )),
    }];
    let finding = |paradox: &Paradox| {
        Line::from(vec![
            Span::styled(format!("• {}: ", kind_title(paradox.kind)), p.warn),
            Span::styled(paradox.description.clone(), Style::default()),
        ])
    };
    lines.extend(introduced.iter().map(|x| finding(x)));
    if !introduced.is_empty() && !already.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(
                "Already there before the change ({} paradox{}):",
                already.len(),
                plural(already.len())
            ),
            p.dim,
        )));
    }
    lines.extend(already.iter().map(|x| finding(x)));
    lines
}

fn kind_title(kind: ParadoxKind) -> &'static str {
    match kind {
        ParadoxKind::CausalOrder => "causal order",
        ParadoxKind::CausalLoop => "causal loop",
        ParadoxKind::FixedPoint => "fixed point",
        ParadoxKind::DuplicateItem => "duplicate item",
        ParadoxKind::ItemWithoutOrigin => "item without origin",
        ParadoxKind::Grandfather => "grandfather",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AnchorId, Traveller, Whereabouts};

    fn at(s: &str) -> Instant {
        s.parse().expect("a test time")
    }

    #[test]
    fn a_return_to_an_anchor_is_checked_at_the_anchors_time() {
        let alice: Traveller = "alice".parse().expect("a traveller");
        let anchor = Anchor {
            id: "anc_1900".parse::<AnchorId>().expect("an anchor id"),
            owner: alice.clone(),
            timeline: "primary".parse().expect("a timeline id"),
            timestamp: at("1900-01-01T00:00:00Z"),
            description: Some("Paris, 1900".into()),
            status: AnchorStatus::Active,
            created_at: at("2026-01-01T00:00:00Z"),
        };
        let item = Item {
            id: "itm_watch".parse().expect("an item id"),
            description: "a watch".into(),
            owner: alice,
            origin_timeline: "primary".parse().expect("a timeline id"),
            origin_time: at("2026-01-01T00:00:00Z"),
            taken_at: None,
            whereabouts: Whereabouts::Carried,
            registered_at: at("2026-01-01T00:00:00Z"),
            location: None,
        };
        let mut wizard = Wizard::new(true);
        wizard.set_data(
            &[],
            vec![anchor],
            vec![item],
            at("2026-06-01T00:00:00Z"),
            None,
        );

        let changes = wizard.proposed_changes();
        assert_eq!(changes.len(), 1, "the carried watch is checked");
        assert_eq!(changes[0].time, Some(at("1900-01-01T00:00:00Z")));
    }

    /// Tab (a time and a place) is offered on a timeline, not on an anchor, and does nothing
    /// where it is not offered; a wizard with nowhere to go offers neither a choice nor enter.
    #[test]
    fn the_key_line_offers_only_what_the_selected_destination_takes() {
        use crate::tui::unit::{key, timeline};
        let anchor = Anchor {
            id: "anc_1900".parse::<AnchorId>().expect("an anchor id"),
            owner: "alice".parse().expect("a traveller"),
            timeline: "primary".parse().expect("a timeline id"),
            timestamp: at("1900-01-01T00:00:00Z"),
            description: Some("Paris, 1900".into()),
            status: AnchorStatus::Active,
            created_at: at("2026-01-01T00:00:00Z"),
        };
        let timelines = [timeline(0, "primary")];
        let mut w = Wizard::new(false);
        w.set_data(
            &timelines,
            vec![anchor],
            Vec::new(),
            at("2026-06-01T00:00:00Z"),
            None,
        );
        let on_anchor = (0..w.destinations.len()).find(|&i| {
            w.dest_cursor.selected = i;
            !w.offers_when_where()
        });
        assert!(on_anchor.is_some(), "the anchor is listed");
        assert!(!w.hint().contains("tab"), "{}", w.hint());
        w.key(key("tab"));
        assert_eq!(w.typing, None, "tab did nothing on an anchor");
        let on_timeline = (0..w.destinations.len()).find(|&i| {
            w.dest_cursor.selected = i;
            w.offers_when_where()
        });
        assert!(on_timeline.is_some(), "the timeline is listed");
        assert!(w.hint().contains("tab a time & place"), "{}", w.hint());
        w.key(key("tab"));
        assert_eq!(w.typing, Some(Typing::When));
        // Typing, j is a letter and the arrows still choose.
        w.key(key("j"));
        assert_eq!(widgets::input_text(&w.when), "j");
        assert!(
            w.hint().starts_with("type · tab next input · ↑↓ choose"),
            "{}",
            w.hint()
        );

        let nowhere = Wizard::new(true);
        assert_eq!(nowhere.hint(), "esc close");
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::tui::effect::{Call, Effect};
    use crate::tui::unit::{key, palette, screen, timeline};

    fn ready() -> Wizard {
        let mut w = Wizard::new(false);
        let timelines = [timeline(0, "primary"), timeline(1, "Tesla 1889")];
        let now = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
        w.set_data(
            &timelines,
            Vec::new(),
            Vec::new(),
            now,
            Some(&timelines[1].id),
        );
        w
    }

    fn verdict(timeline: TimelineId) -> Verdict {
        Verdict {
            report: ParadoxReport {
                is_stable: true,
                timeline_id: timeline,
                paradoxes: Vec::new(),
            },
            standing: Vec::new(),
        }
    }

    #[test]
    fn the_steps_ask_for_a_check_then_travel_only_on_y() {
        let mut w = ready();
        let tesla = timeline(1, "Tesla 1889").id;
        assert!(w.key(key("enter")).effects.is_empty());
        assert_eq!(w.step, Step::Items);
        let outcome = w.key(key("enter"));
        assert!(
            matches!(&outcome.effects[..], [Effect::Call(Call::WizardCheck(r))] if r.timeline_id == tesla)
        );
        assert!(w.loading && w.step == Step::Check);
        // Waiting: keys wait too, but esc abandons.
        assert!(w.key(key("enter")).effects.is_empty());
        w.checked(verdict(tesla.clone()));
        w.key(key("enter"));
        assert_eq!(w.step, Step::Confirm);
        assert!(
            w.key(key("enter")).effects.is_empty(),
            "no stray enter travels"
        );
        let outcome = w.key(key("y"));
        assert!(
            matches!(&outcome.effects[..], [Effect::Call(Call::Travel(r))] if r.destination == tesla.to_string())
        );
    }

    #[test]
    fn backspace_goes_back_a_step_and_esc_closes_from_any() {
        let mut w = ready();
        w.key(key("enter"));
        w.key(key("backspace"));
        assert_eq!(w.step, Step::Destination);
        w.loading = true;
        assert!(w.key(key("esc")).close);
        let mut failed = ready();
        failed.key(key("enter"));
        failed.key(key("enter"));
        failed.failed(true);
        assert!(!failed.loading);
        assert_eq!(failed.step, Step::Items);
    }

    #[test]
    fn the_destination_step_lists_open_timelines_with_the_selected_one_chosen() {
        let mut w = ready();
        let name_of = |id: &TimelineId| id.to_string();
        let text = screen(100, 20, |f| w.render(f, f.area(), &palette(), &name_of));
        assert!(text.contains("Tesla 1889"), "{text}");
        assert_eq!(w.dest_cursor.selected, 1);
    }
}

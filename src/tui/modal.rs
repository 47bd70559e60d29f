//! What sits on top of the panes and takes keys first.
//!
//! [`Modal`] is the one slot on top: it hands a key to whichever component is open (a form, a
//! question, the command line, the travel wizard, the picture: each answers from its own
//! module with [`Effect`]s) and draws it with what it may read [`Around`] it. It owns the
//! read-only modals itself: the help screen, a paradox check's findings, one anomaly and the
//! traveller's journeys, which scroll and close.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::action::{Action, Reply, Slot};
use super::anchors::AnchorsList;
use super::command::CommandLine;
use super::confirm::{self, Answer, Confirm};
use super::effect::{Checked, Effect, Outcome};
use super::forms::{self, FormKind};
use super::help;
use super::isolations::IsolationsScreen;
use super::keymap::{Context, Key, KeyMap};
use super::merge::MergeWizard;
use super::panes::Ctx;
use super::panes::monitor::MonitorPane;
use super::panes::search::SearchPane;
use super::panes::timelines::TimelinesPane;
use super::panes::wizard::{self, Wizard};
use super::picture::{Picture, Scene};
use super::security::access::AccessScreen;
use super::security::integrity::IntegrityScreen;
use super::security::restrictions::RestrictionsScreen;
use super::theme::Palette;
use super::time_controls::Shift;
use super::widgets::{Form, centered, ellipsize, fmt_time, modal};
use crate::model::{EventId, Instant, JourneyKind, TimelineId};
use crate::service::TravellerStatus;

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
    Command(Box<CommandLine>),
    /// The timeline picture.
    Picture(Box<Picture>),
    /// One anomaly in full, scrolled.
    Anomaly(Box<crate::service::Anomaly>, u16),
    /// Fast-forward or rewind by a duration.
    Shift(Box<Shift>),
    /// Your anchors.
    Anchors(Box<AnchorsList>),
    /// The timeline diff, or the merge wizard.
    Merge(Box<MergeWizard>),
    /// Who may use a timeline, and its access log.
    Access(Box<AccessScreen>),
    /// The restrictions on travellers (operators).
    Restrictions(Box<RestrictionsScreen>),
    /// A timeline's integrity check.
    Integrity(Box<IntegrityScreen>),
    /// The isolations in force on a timeline.
    Isolations(Box<IsolationsScreen>),
    /// The last footer message, whole, scrolled.
    Message(String, u16),
}

/// What a modal reads of the dashboard around it (to name timelines, draw the help, picture
/// the monitor's anomalies); lent for one key or one frame.
#[derive(Clone, Copy, Debug)]
pub struct Around<'a> {
    /// Styles.
    pub palette: &'a Palette,
    /// Key bindings (the help screen lists them).
    pub keymap: &'a KeyMap,
    /// The timelines, to name them.
    pub timelines: &'a TimelinesPane,
    /// The monitor, for the anomalies the picture marks.
    pub monitor: &'a MonitorPane,
    /// The search, to name events as its results do.
    pub search: &'a SearchPane,
    /// Who and where the traveller is.
    pub whoami: Option<&'a TravellerStatus>,
    /// The dashboard clock's now.
    pub now: Instant,
}

impl Modal {
    /// Hands a key to the modal: what takes its place (itself, another modal, or none), and
    /// what the loop should do.
    pub fn key(self, key: KeyEvent, around: &Around<'_>) -> (Option<Modal>, Vec<Effect>) {
        // A component that stays or closes, and what it asks for.
        fn kept(modal: Modal, outcome: Outcome) -> (Option<Modal>, Vec<Effect>) {
            ((!outcome.close).then_some(modal), outcome.effects)
        }
        let no_effects = |next: Option<Modal>| (next, Vec::new());
        match self {
            Modal::Help(scroll) => no_effects(match key.code {
                KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('?') | KeyCode::Enter => None,
                KeyCode::Down | KeyCode::Char('j') => Some(Modal::Help(scroll.saturating_add(1))),
                KeyCode::Up | KeyCode::Char('k') => Some(Modal::Help(scroll.saturating_sub(1))),
                KeyCode::PageDown => Some(Modal::Help(scroll.saturating_add(10))),
                KeyCode::PageUp => Some(Modal::Help(scroll.saturating_sub(10))),
                KeyCode::Home | KeyCode::Char('g') => Some(Modal::Help(0)),
                // Drawing brings it back to where the last line is in view.
                KeyCode::End | KeyCode::Char('G') => Some(Modal::Help(u16::MAX)),
                _ => Some(Modal::Help(scroll)),
            }),
            Modal::Report(report, scroll) => {
                no_effects(scroll_key(key.code, scroll).map(|s| Modal::Report(report, s)))
            }
            Modal::Journeys(journeys, scroll) => {
                no_effects(scroll_key(key.code, scroll).map(|s| Modal::Journeys(journeys, s)))
            }
            Modal::Anomaly(anomaly, scroll) => {
                no_effects(scroll_key(key.code, scroll).map(|s| Modal::Anomaly(anomaly, s)))
            }
            Modal::Message(text, scroll) => {
                no_effects(scroll_key(key.code, scroll).map(|s| Modal::Message(text, s)))
            }
            // Pausing and resuming stay at hand in the picture, so you see where you stand.
            Modal::Picture(picture)
                if around
                    .keymap
                    .resolve(Key::from_event(&key), Context::Global)
                    == Some(Action::PauseResume) =>
            {
                (
                    Some(Modal::Picture(picture)),
                    vec![Effect::Action(Action::PauseResume)],
                )
            }
            Modal::Picture(mut picture) => {
                let scene = around.scene(&picture.timeline);
                let outcome = picture.key(key, &scene);
                kept(Modal::Picture(picture), outcome)
            }
            Modal::Confirm(confirm) => match confirm.key(key) {
                Answer::Ask(confirm) => (Some(Modal::Confirm(confirm)), Vec::new()),
                Answer::Closed(effects) => (None, effects),
                Answer::Form(form, effects) => (Some(Modal::Form(form)), effects),
            },
            Modal::Command(mut line) => {
                let outcome = line.key(key);
                kept(Modal::Command(line), outcome)
            }
            Modal::Form(mut form) => {
                let outcome = form.key(key);
                kept(Modal::Form(form), outcome)
            }
            Modal::Wizard(mut w) => {
                let outcome = w.key(key);
                kept(Modal::Wizard(w), outcome)
            }
            Modal::Shift(mut shift) => {
                let outcome = shift.key(key);
                kept(Modal::Shift(shift), outcome)
            }
            Modal::Anchors(mut list) => {
                let outcome = list.key(key);
                kept(Modal::Anchors(list), outcome)
            }
            Modal::Merge(mut w) => {
                let outcome = w.key(key);
                kept(Modal::Merge(w), outcome)
            }
            Modal::Access(mut screen) => {
                let outcome = screen.key(key);
                kept(Modal::Access(screen), outcome)
            }
            Modal::Restrictions(mut screen) => {
                let outcome = screen.key(key);
                kept(Modal::Restrictions(screen), outcome)
            }
            Modal::Integrity(mut screen) => {
                let outcome = screen.key(key);
                kept(Modal::Integrity(screen), outcome)
            }
            Modal::Isolations(mut screen) => {
                let outcome = screen.key(key);
                kept(Modal::Isolations(screen), outcome)
            }
        }
    }

    /// Whether it waits for the answer of a change it sent: a form, the time shift, the
    /// form over the anchors list, the merge wizard's merge, or a security screen's change.
    pub fn pending_form(&self) -> bool {
        match self {
            Modal::Form(form) => form.pending,
            Modal::Shift(shift) => shift.pending,
            Modal::Anchors(list) => list.waiting(),
            Modal::Merge(w) => w.waiting(),
            Modal::Access(screen) => screen.waiting(),
            Modal::Restrictions(screen) => screen.waiting(),
            Modal::Isolations(screen) => screen.waiting(),
            _ => false,
        }
    }

    /// The change it waited for was made: what stays on screen (a form and the shift close;
    /// the anchors list closes its form and stays).
    pub fn answered(self) -> Option<Modal> {
        match self {
            Modal::Form(_) | Modal::Shift(_) => None,
            Modal::Anchors(mut list) => {
                list.form = None;
                Some(Modal::Anchors(list))
            }
            Modal::Access(mut screen) => {
                screen.answered();
                Some(Modal::Access(screen))
            }
            Modal::Restrictions(mut screen) => {
                screen.answered();
                Some(Modal::Restrictions(screen))
            }
            other => Some(other),
        }
    }

    /// The change it waited for was refused: it stops waiting, and when `why` is given, shows
    /// it under the field at fault (`field`, as the service names it) or the input.
    pub fn refused(&mut self, why: Option<String>, field: Option<&str>) {
        let form = match self {
            Modal::Merge(w) => return w.refuse(why),
            Modal::Access(screen) => return screen.refuse(why),
            Modal::Restrictions(screen) => return screen.refuse(why),
            Modal::Isolations(screen) => return screen.refuse(why),
            Modal::Form(form) => Some(form),
            Modal::Anchors(list) => list.form.as_mut(),
            Modal::Shift(shift) => {
                shift.pending = false;
                if let Some(why) = why {
                    shift.refuse(why);
                }
                return;
            }
            _ => None,
        };
        if let Some(form) = form {
            form.pending = false;
            if let Some(why) = why {
                form.refuse(why, field);
            }
        }
    }

    /// A call of `slot` failed with `why`: a wizard or a picture waiting on it stops waiting
    /// (the picture shows what it had; the flash says why there is no more). True when the
    /// modal shows `why` itself, so the footer need not say it again.
    pub fn call_failed(&mut self, slot: Slot, why: &str) -> bool {
        match self {
            Modal::Access(screen) => return screen.failed(slot, why),
            Modal::Restrictions(screen) => return screen.failed(slot, why),
            Modal::Integrity(screen) => return screen.failed(slot, why),
            Modal::Wizard(w)
                if matches!(slot, Slot::WizardData | Slot::WizardCheck | Slot::Mutation) =>
            {
                w.failed(slot == Slot::WizardCheck);
            }
            Modal::Picture(p) if slot == Slot::Picture => p.loading = false,
            Modal::Anchors(list) if slot == Slot::Anchors => list.loading = false,
            Modal::Merge(w) if matches!(slot, Slot::Diff | Slot::Mutation) => {
                w.failed(slot == Slot::Diff);
            }
            _ => {}
        }
        false
    }

    /// Draws the modal over `area` (the command line draws in the footer instead).
    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect, around: &Around<'_>) {
        let p = around.palette;
        let name_of = |id: &TimelineId| around.timelines.name_of(id);
        match self {
            Modal::Command(_) => {}
            Modal::Help(scroll) => help::render(frame, area, around.keymap, p, scroll),
            Modal::Form(form) => form.render(frame, area, p),
            Modal::Wizard(w) => w.render(frame, area, p, &name_of),
            Modal::Shift(shift) => shift.render(frame, area, p, around.whoami, &name_of),
            Modal::Anchors(list) => list.render(frame, area, p, &name_of),
            Modal::Merge(w) => w.render(frame, area, p),
            Modal::Access(screen) => screen.render(frame, area, p),
            Modal::Restrictions(screen) => screen.render(frame, area, p),
            Modal::Isolations(screen) => screen.render(frame, area, p),
            Modal::Integrity(screen) => screen.render(frame, area, p),
            Modal::Journeys(journeys, scroll) => {
                let lines = journey_lines(journeys, p, &name_of, scrolling_width(area));
                scrolling_modal(frame, area, "Your journeys, newest first", lines, scroll, p);
            }
            Modal::Report(report, scroll) => {
                let lines = wizard::report_lines(report, p, &name_of);
                scrolling_modal(frame, area, "Paradox check", lines, scroll, p);
            }
            Modal::Confirm(confirm) => confirm.render(frame, area, p),
            Modal::Anomaly(anomaly, scroll) => {
                let lines = super::panes::monitor::detail_lines(anomaly, p);
                scrolling_modal(frame, area, "Anomaly", lines, scroll, p);
            }
            Modal::Message(text, scroll) => {
                let lines = vec![Line::from(Span::styled(text.clone(), p.text))];
                scrolling_modal(frame, area, "Last message", lines, scroll, p);
            }
            Modal::Picture(picture) => {
                let ctx = Ctx {
                    palette: p,
                    now: around.now,
                    focused: true,
                    here: around.whoami.map(|w| &w.timeline_id),
                    pending: picture.loading,
                    offline: None,
                };
                let scene = around.scene(&picture.timeline);
                picture.render(frame, area, &ctx, &scene);
            }
        }
    }
}

/// The component open on top, if it is of type `$ty` (variant `$variant`).
macro_rules! open {
    ($modal:expr, $variant:ident) => {
        match $modal {
            Some(Modal::$variant(component)) => Some(&mut **component),
            _ => None,
        }
    };
}

impl Modal {
    /// An answer of the changes and views the modals ask for (not the panes', see
    /// [`Reply::for_panes`]), handed to the component it belongs to (`modal` is what is on
    /// top, if anything; a change's flash is said even when its component was closed
    /// meanwhile): what the loop should do after.
    pub fn answer(modal: &mut Option<Modal>, reply: Reply, around: &Around<'_>) -> Vec<Effect> {
        let name_of = |id: &TimelineId| around.timelines.name_of(id);
        match reply {
            Reply::Created(t) => forms::created(&t),
            Reply::EventAdded(e) => forms::event_added(&e),
            Reply::Manipulated(r) => forms::manipulated(&r),
            Reply::AnchorSet(a) => forms::anchor_set(&a),
            Reply::ItemRegistered(i) => forms::item_registered(&i),
            Reply::Reverted(r) => confirm::reverted(&r),
            Reply::Isolated(isolation) => {
                confirm::isolated(&isolation, &|id| around.event_name(id))
            }
            Reply::Aligned(result, description) => confirm::aligned(&result, &description),
            Reply::Journey(journey) => {
                let to = name_of(&journey.to_timeline);
                Wizard::answer_journey(open!(modal, Wizard), journey, &to)
            }
            Reply::Shifted {
                journey,
                forward,
                duration,
            } => {
                let to = name_of(&journey.to_timeline);
                let paused = around.whoami.is_some_and(|w| w.position.paused);
                Shift::answer(&journey, forward, &duration, &to, paused)
            }
            Reply::AnchorAdjusted(anchor) => AnchorsList::answer_adjusted(&anchor),
            Reply::AnchorDeleted(id, name) => AnchorsList::answer_deleted(&id, &name),
            Reply::Resolved(result) => MergeWizard::answer_resolved(open!(modal, Merge), &result),
            Reply::Merged(result) => {
                let into = name_of(&result.merged_timeline_id);
                MergeWizard::answer_merged(open!(modal, Merge), result, &into)
            }
            Reply::AccessSet(set) => {
                let name = name_of(&set.timeline_id);
                AccessScreen::answer_set(open!(modal, Access), &set, &name)
            }
            Reply::Lifted(id) => IsolationsScreen::answer_lifted(open!(modal, Isolations), &id),
            Reply::Restricted(r) => {
                let open = matches!(modal, Some(Modal::Restrictions(_)));
                RestrictionsScreen::answer_restricted(open, &r)
            }
            Reply::Checked(report) => {
                *modal = Some(Modal::Report(report, 0));
                Vec::new()
            }
            Reply::Journeys(journeys) => {
                *modal = Some(Modal::Journeys(journeys, 0));
                Vec::new()
            }
            view => {
                Self::show(modal, view, around);
                Vec::new()
            }
        }
    }

    /// The safety check refused `change` for paradoxes (`why`): the merge wizard that sent it
    /// asks itself, with the paradoxes in its last step (only the wizard that sent it: one
    /// closed meanwhile and opened again is another); else, the form that sent it (if
    /// `pending_form`) put aside, "apply anyway?" is asked. False when something else is on
    /// screen now: nothing is asked over it.
    pub fn paradox_refused(
        modal: &mut Option<Modal>,
        change: Checked,
        why: String,
        pending_form: bool,
    ) -> bool {
        let merging = matches!(change, Checked::Merge(_) | Checked::Resolve(_));
        if let Some(Modal::Merge(w)) = modal
            && merging
            && w.waiting()
        {
            w.paradox(change, why);
            return true;
        }
        let form = match modal.take() {
            Some(Modal::Form(mut form)) if pending_form => {
                form.pending = false;
                Some(form)
            }
            other => {
                *modal = other;
                None
            }
        };
        if modal.is_some() {
            return false;
        }
        *modal = Some(Modal::Confirm(Confirm::ApplyAnyway { change, why, form }));
        true
    }

    /// A view arrived: shown by the component that asked, if it is still open.
    fn show(modal: &mut Option<Modal>, reply: Reply, around: &Around<'_>) {
        match (modal, reply) {
            (Some(Modal::Wizard(w)), Reply::WizardData { anchors, items }) => {
                let selected = around.timelines.selected().map(|t| t.id.clone());
                let all = &around.timelines.all;
                w.set_data(all, anchors, items, around.now, selected.as_ref());
            }
            (Some(Modal::Confirm(c)), Reply::WizardData { anchors, .. }) => {
                c.anchors_known(&anchors)
            }
            (Some(Modal::Wizard(w)), Reply::WizardCheck(verdict)) => w.checked(verdict),
            (
                Some(Modal::Picture(p)),
                Reply::Picture {
                    timeline,
                    events,
                    anchors,
                },
            ) => p.show(&timeline, events, anchors),
            (Some(Modal::Anchors(list)), Reply::Anchors(rows)) => list.show(rows),
            (Some(Modal::Merge(w)), Reply::Diff(diff)) => w.show_diff(diff),
            (Some(Modal::Merge(w)), Reply::Review(review)) => w.show_review(review),
            (Some(Modal::Access(screen)), Reply::AccessControl(view)) => screen.answer_view(view),
            (Some(Modal::Access(screen)), Reply::AccessLog(log)) => screen.show_log(log),
            (Some(Modal::Restrictions(screen)), Reply::Restrictions(rows)) => screen.show(rows),
            (Some(Modal::Integrity(screen)), Reply::Tamper(report)) if screen.running.is_some() => {
                screen.scanned(report)
            }
            (Some(Modal::Integrity(screen)), Reply::Integrity(report))
                if screen.running.is_some() =>
            {
                screen.validated(report)
            }
            // A view for a component closed meanwhile (or replaced) is dropped.
            _ => {}
        }
    }
}

impl<'a> Around<'a> {
    /// An event named as the search shows it (its description, shortened), else its id.
    pub fn event_name(&self, id: &EventId) -> String {
        self.search
            .results
            .iter()
            .find(|e| &e.event_id == id)
            .map_or_else(
                || id.to_string(),
                |e| format!("'{}'", ellipsize(&e.description, 44)),
            )
    }

    fn scene(&self, timeline: &TimelineId) -> Scene<'a> {
        Scene::of(timeline, self.timelines, self.monitor, self.whoami)
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
/// The width of the text inside a [`scrolling_modal`] over `area`.
fn scrolling_width(area: Rect) -> usize {
    usize::from(area.width.saturating_sub(10).min(90).saturating_sub(2))
}

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

/// The traveller's journeys, newest first: when, from where to where (on two lines when one
/// would not fit in `width`), what came along.
fn journey_lines(
    journeys: &[crate::service::Journey],
    p: &Palette,
    name_of: &dyn Fn(&TimelineId) -> String,
    width: usize,
) -> Vec<Line<'static>> {
    if journeys.is_empty() {
        return vec![Line::from(Span::styled(
            "No journeys yet. Press t to travel.",
            p.dim,
        ))];
    }
    let mut lines = Vec::new();
    for j in journeys.iter().rev() {
        // When and what kind first, then from where to where on a line of its own: two
        // timestamps and two names do not fit one line at 80 columns.
        let kind = j
            .kind
            .unwrap_or_else(|| JourneyKind::derived(j.anchor.as_ref()));
        let place = j
            .location
            .as_ref()
            .map(|l| format!(", in {l}"))
            .unwrap_or_default();
        lines.push(Line::from(vec![
            Span::styled(format!("{}  ", fmt_time(&j.departed_at)), p.dim),
            Span::styled(format!("{}{place}", kind.words()), p.title),
        ]));
        let from = format!("{} {}", name_of(&j.from_timeline), fmt_time(&j.from_time));
        let to = format!("{} {}", name_of(&j.to_timeline), fmt_time(&j.arrival_time));
        let one = format!("    {from} → {to}");
        let route = if one.chars().count() <= width {
            vec![one]
        } else {
            vec![format!("    from {from}"), format!("    to   {to}")]
        };
        lines.extend(
            route
                .into_iter()
                .map(|l| Line::from(Span::styled(l, p.text))),
        );
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::unit::{key, palette, screen, typed};

    struct World {
        palette: Palette,
        keymap: KeyMap,
        timelines: TimelinesPane,
        monitor: MonitorPane,
        search: SearchPane,
    }

    impl World {
        fn new() -> Self {
            Self {
                palette: palette(),
                keymap: KeyMap::default(),
                timelines: TimelinesPane::default(),
                monitor: MonitorPane::default(),
                search: SearchPane::default(),
            }
        }

        fn around(&self) -> Around<'_> {
            Around {
                palette: &self.palette,
                keymap: &self.keymap,
                timelines: &self.timelines,
                monitor: &self.monitor,
                search: &self.search,
                whoami: None,
                now: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            }
        }
    }

    #[test]
    fn the_help_scrolls_and_closes() {
        let world = World::new();
        let (next, effects) = Modal::Help(0).key(key("j"), &world.around());
        assert!(matches!(next, Some(Modal::Help(1))) && effects.is_empty());
        let (next, _) = Modal::Help(3).key(key("g"), &world.around());
        assert!(matches!(next, Some(Modal::Help(0))));
        for k in ["esc", "q", "?", "enter"] {
            assert!(
                Modal::Help(0).key(key(k), &world.around()).0.is_none(),
                "{k}"
            );
        }
    }

    #[test]
    fn the_command_line_closes_with_what_it_ran() {
        let world = World::new();
        let mut modal = Modal::Command(Box::default());
        for k in typed("help") {
            modal = modal.key(k, &world.around()).0.expect("still typing");
        }
        let (next, effects) = modal.key(key("enter"), &world.around());
        assert!(next.is_none());
        assert!(matches!(
            &effects[..],
            [Effect::Action(super::super::action::Action::Help)]
        ));
    }

    #[test]
    fn a_question_about_a_form_gives_the_form_back() {
        let world = World::new();
        let confirm = Modal::Confirm(Confirm::ApplyAnyway {
            change: super::super::effect::Checked::Revert(crate::service::RevertRequest {
                event_id: "event-5678abcd".parse().expect("an event id"),
                timeline_id: None,
                safety_check: true,
            }),
            why: "a loop".into(),
            form: Some(Box::new(super::super::forms::register_item())),
        });
        let (next, effects) = confirm.key(key("n"), &world.around());
        assert!(matches!(next, Some(Modal::Form(_))) && effects.is_empty());
    }

    #[test]
    fn a_failed_check_sends_the_wizard_back_to_its_items() {
        let mut modal = Modal::Wizard(Box::new(Wizard::new(false)));
        modal.call_failed(Slot::WizardCheck, "");
        let Modal::Wizard(w) = &modal else {
            unreachable!()
        };
        assert!(!w.loading);
        assert_eq!(w.step, wizard::Step::Items);
        let mut picture = Modal::Picture(Box::new(Picture::new(TimelineId::primary())));
        picture.call_failed(Slot::Search, "");
        assert!(
            matches!(&picture, Modal::Picture(p) if p.loading),
            "not its call"
        );
        picture.call_failed(Slot::Picture, "");
        assert!(matches!(&picture, Modal::Picture(p) if !p.loading));
    }

    #[test]
    fn journeys_say_when_there_are_none_and_how_to_close() {
        let world = World::new();
        let mut modal = Modal::Journeys(Vec::new(), 0);
        let text = screen(80, 20, |f| modal.render(f, f.area(), &world.around()));
        assert!(
            text.contains("No journeys yet. Press t to travel."),
            "{text}"
        );
        assert!(text.contains("enter / esc close"), "{text}");
    }
}

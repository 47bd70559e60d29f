//! The timeline diff (`D`) and the merge wizard (`M`), one component: the selected timeline is
//! one side (A, the source), the other is picked among its ancestors and descendants (B, the
//! destination; its parent by default) → the diff of the two sides since they branched, lineage
//! by lineage (changed lineages only: incoming, added, kept, convergent, conflict), side by side
//! on a wide screen and stacked on a narrow one. The diff alone stops there; the wizard goes on
//! → a strategy for the conflicts → a last look, where `y` merges safety checked → what the
//! merge did. A merge the safety check refuses shows the paradoxes it would add and asks, as a
//! refused manipulation does, whether to apply it anyway (`y` again sends it unchecked).

use std::collections::HashSet;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::effect::{Call, Checked, Effect, Outcome, Reload};
use super::forms::{self, FormKind};
use super::keymap::Key;
use super::offers::{self, DOWN, Offer, UP};
use super::theme::Palette;
use super::tree::tree_order;
use super::widgets::{Cursor, Form, centered, ellipsize, modal};
use crate::model::{MergeId, TimelineId};
use crate::service::{
    ConflictResolution, ConflictReview, DiffLine, DiffQuery, EventRecord, MergeRequest,
    MergeResult, MergeStrategy, ResolveRequest, ResolveResult, ReviewQuery, TimelineDiff,
    TimelineInfo,
};

/// From this width on, the diff shows the two sides side by side; below, stacked.
pub const SIDE_BY_SIDE: u16 = 110;

/// The strategies offered, in order, with what each does to a conflict.
pub const STRATEGIES: [(MergeStrategy, &str); 3] = [
    (
        MergeStrategy::SourceOverwrite,
        "a conflict takes A's outcome (Keep Event A)",
    ),
    (
        MergeStrategy::DestinationPreserve,
        "a conflict keeps B's outcome (Keep Event B)",
    ),
    (
        MergeStrategy::ManualReview,
        "the merge waits until each conflict is resolved",
    ),
];

/// ", completed by ada at 2026-11-22 10:00:00" for a resolution that completed its merge, as
/// the merge record keeps it (empty when the service did not say).
pub fn completed_by(result: &ResolveResult) -> String {
    match (&result.completed_by, &result.completed_at) {
        (Some(who), Some(at)) => {
            format!(
                ", completed by {who} at {}",
                crate::tui::widgets::fmt_time(at)
            )
        }
        (Some(who), None) => format!(", completed by {who}"),
        (None, Some(at)) => format!(", completed at {}", crate::tui::widgets::fmt_time(at)),
        (None, None) => String::new(),
    }
}

/// What a key asks of the merge wizard. Each step offers its own keys ([`MergeWizard::key`]
/// looks them up in the step's list), and its hint line and the help are written from the same
/// lists: a key that does nothing is not listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// The row above (a side, a lineage, a strategy, a conflict; the paradoxes read back).
    Up,
    /// The row below (or the paradoxes read on).
    Down,
    /// The step before.
    Back,
    /// The next step.
    Next,
    /// Swap A and B.
    Swap,
    /// Review the merges waiting into B.
    Review,
    /// Send the merge (safety checked).
    Merge,
    /// Apply what the safety check refused.
    Anyway,
    /// Keep what the safety check refused unmade.
    Unmade,
    /// Keep Event A.
    KeepA,
    /// Keep Event B.
    KeepB,
    /// Custom Merge (a form).
    Custom,
    /// Close the wizard.
    Close,
}

const ENTER: &[Key] = &[Key::code(KeyCode::Enter)];
const ESC: &[Key] = &[Key::code(KeyCode::Esc)];
const ENTER_OR_ESC: &[Key] = &[Key::code(KeyCode::Enter), Key::code(KeyCode::Esc)];
const BACK: &[Key] = &[Key::code(KeyCode::Backspace), Key::code(KeyCode::Left)];
const SWAP: &[Key] = &[Key::code(KeyCode::Tab), Key::code(KeyCode::BackTab)];
const REVIEW: &[Key] = &[Key::char('r')];

/// Choosing B.
const SIDES: &[Offer<Command>] = &[
    Offer::labelled(Command::Up, UP, "↑↓", "choose the other side"),
    Offer::quiet(Command::Down, DOWN),
    Offer::new(Command::Next, ENTER, "diff"),
    Offer::new(Command::Close, ESC, "close"),
];

/// The diff on the way to a merge.
pub const DIFF: &[Offer<Command>] = &[
    Offer::labelled(Command::Up, UP, "↑↓", "lineage"),
    Offer::quiet(Command::Down, DOWN),
    Offer::new(Command::Swap, SWAP, "swap"),
    Offer::new(Command::Next, ENTER, "strategy"),
    Offer::new(Command::Review, REVIEW, "review pending"),
    Offer::labelled(Command::Back, BACK, "⌫", "back"),
    Offer::new(Command::Close, ESC, "close"),
];

/// The diff alone (`D`): enter closes it.
const DIFF_ONLY: &[Offer<Command>] = &[
    Offer::labelled(Command::Up, UP, "↑↓", "lineage"),
    Offer::quiet(Command::Down, DOWN),
    Offer::new(Command::Swap, SWAP, "swap"),
    Offer::new(Command::Review, REVIEW, "review pending"),
    Offer::labelled(Command::Back, BACK, "⌫", "back"),
    Offer::labelled(Command::Close, ENTER_OR_ESC, "enter / esc", "close"),
];

const STRATEGY: &[Offer<Command>] = &[
    Offer::labelled(Command::Up, UP, "↑↓", "choose"),
    Offer::quiet(Command::Down, DOWN),
    Offer::new(Command::Next, ENTER, "next"),
    Offer::labelled(Command::Back, BACK, "⌫", "back"),
    Offer::new(Command::Close, ESC, "close"),
];

const CONFIRM: &[Offer<Command>] = &[
    Offer::new(
        Command::Merge,
        &[Key::char('y'), Key::char('Y')],
        "merge now",
    ),
    Offer::labelled(Command::Back, BACK, "⌫", "back"),
    Offer::new(Command::Close, ESC, "close"),
];

const DONE: &[Offer<Command>] = &[
    Offer::new(Command::Review, REVIEW, "review its conflicts"),
    Offer::labelled(Command::Close, ENTER_OR_ESC, "enter / esc", "close"),
];

/// The review of the conflicts waiting into B.
pub const RESOLVE: &[Offer<Command>] = &[
    Offer::new(Command::KeepA, &[Key::char('a')], "keep A"),
    Offer::new(Command::KeepB, &[Key::char('b')], "keep B"),
    Offer::new(Command::Custom, &[Key::char('c')], "custom merge"),
    Offer::labelled(Command::Up, UP, "↑↓", "conflict"),
    Offer::quiet(Command::Down, DOWN),
    Offer::labelled(Command::Back, BACK, "⌫", "diff"),
    Offer::new(Command::Close, ESC, "close"),
];

/// The safety check refused the merge or the resolution: apply it anyway?
const REFUSED: &[Offer<Command>] = &[
    Offer::new(
        Command::Anyway,
        &[Key::char('y'), Key::char('Y')],
        "apply anyway",
    ),
    Offer::new(
        Command::Unmade,
        &[
            Key::char('n'),
            Key::char('N'),
            Key::code(KeyCode::Backspace),
        ],
        "keep it unmade",
    ),
    Offer::labelled(
        Command::Down,
        &[Key::char('j'), Key::code(KeyCode::Down)],
        "j/k",
        "read on",
    ),
    Offer::quiet(Command::Up, &[Key::char('k'), Key::code(KeyCode::Up)]),
    Offer::new(Command::Close, ESC, "close"),
];

/// Waiting for an answer.
const WORKING: &[Offer<Command>] = &[Offer::new(Command::Close, ESC, "close")];

/// The wizard's steps, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MergeStep {
    /// Pick the other side.
    Sides,
    /// The two sides, lineage by lineage.
    Diff,
    /// How conflicts are treated.
    Strategy,
    /// A last look; `y` merges (safety checked).
    Confirm,
    /// What the merge did.
    Done,
    /// The conflicts of the merges waiting for review into B: a choice for each.
    Review,
}

impl MergeStep {
    const ALL: [(MergeStep, &'static str); 6] = [
        (MergeStep::Sides, "Sides"),
        (MergeStep::Diff, "Diff"),
        (MergeStep::Strategy, "Strategy"),
        (MergeStep::Confirm, "Check & confirm"),
        (MergeStep::Done, "Merged"),
        (MergeStep::Review, "Review"),
    ];
}

/// A timeline the selected one can be compared with or merged into: one on its line of
/// descent.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    /// The timeline.
    pub id: TimelineId,
    /// Its name.
    pub name: String,
    /// How it is related to the selected one (`parent`, `ancestor`, `branch`, `descendant`).
    pub relation: &'static str,
    /// How many merges into it wait for review there (part of its ⇄ mark, which counts those
    /// from it too).
    pub pending: usize,
    /// Why you may not merge into it (your right there is read), marked `ro` in the list.
    pub read_only: Option<String>,
}

impl Side {
    /// `t` as a side, related as `relation`.
    pub fn of(t: &TimelineInfo, relation: &'static str) -> Self {
        Self {
            id: t.id.clone(),
            name: t.name.clone(),
            relation,
            pending: t.pending_into,
            read_only: None,
        }
    }
}

/// The timelines on `source`'s line of descent: its ancestors (parent first), then its
/// descendants in tree order. Only these can be diffed with it or merged.
pub fn relatives(all: &[TimelineInfo], source: &TimelineId) -> Vec<Side> {
    let parent_of = |id: &TimelineId| {
        all.iter()
            .find(|t| &t.id == id)
            .and_then(|t| t.parent.clone())
    };
    let side_of = |id: &TimelineId, relation| match all.iter().find(|t| &t.id == id) {
        Some(t) => Side::of(t, relation),
        None => Side {
            id: id.clone(),
            name: id.to_string(),
            relation,
            pending: 0,
            read_only: None,
        },
    };
    let mut out = Vec::new();
    let mut seen = HashSet::from([source.clone()]);
    let mut at = source.clone();
    while let Some(parent) = parent_of(&at) {
        if !seen.insert(parent.clone()) {
            break; // a parent cycle
        }
        out.push(side_of(
            &parent,
            if out.is_empty() { "parent" } else { "ancestor" },
        ));
        at = parent;
    }
    // A descendant: `source` is on its way up (cycles end the walk).
    let depth_under = |t: &TimelineInfo| {
        let mut depth = 0;
        let mut up = HashSet::new();
        let mut at = t.id.clone();
        while let Some(parent) = parent_of(&at) {
            depth += 1;
            if &parent == source {
                return Some(depth);
            }
            if !up.insert(parent.clone()) {
                return None;
            }
            at = parent;
        }
        None
    };
    for (i, _) in tree_order(all) {
        let t = &all[i];
        if t.id == *source {
            continue;
        }
        if let Some(depth) = depth_under(t) {
            out.push(Side::of(
                t,
                if depth == 1 { "branch" } else { "descendant" },
            ));
        }
    }
    out
}

/// The question a merge or a resolution the safety check refused asks.
const APPLY_ANYWAY: &str = "It would add paradoxes. Apply it anyway? (n keeps it unmade)";

/// A merge the safety check refused, waiting for "apply anyway?".
#[derive(Clone, Debug)]
pub struct Refused {
    /// The merge, sent again without the check on yes.
    pub change: Checked,
    /// The refusal, naming the paradoxes.
    pub why: String,
}

/// The diff view, or the merge wizard.
#[derive(Debug)]
pub struct MergeWizard {
    /// Only the diff (`D`): no strategy, no merge.
    pub diff_only: bool,
    /// The step shown.
    pub step: MergeStep,
    /// Side A: where the changes come from.
    pub source: Side,
    /// The timelines side B can be.
    pub sides: Vec<Side>,
    /// Selection among `sides`.
    pub side_cursor: Cursor,
    /// Side B, once chosen.
    pub destination: Option<Side>,
    /// The diff of the two sides.
    pub diff: Option<TimelineDiff>,
    /// Selection among the diff's lineages.
    pub line_cursor: Cursor,
    /// Selection among [`STRATEGIES`].
    pub strategy: usize,
    /// Waiting for the service.
    pub loading: bool,
    /// The safety check refused the merge: apply anyway?
    pub refused: Option<Refused>,
    /// How far its paradoxes are scrolled (j/k), when they are taller than the box.
    refused_scroll: u16,
    /// Whether the refused paradoxes were taller than the box at the last frame (only then
    /// are j/k offered to read on).
    refused_overflows: bool,
    /// Why the last call was refused otherwise (shown in the step).
    pub refusal: Option<String>,
    /// What the merge did.
    pub result: Option<MergeResult>,
    /// A merge or a resolution was sent and is waiting for its answer.
    pub sent: bool,
    /// The sides were swapped with tab (A is the other side, B the timeline it was opened on).
    swapped: bool,
    /// The conflicts waiting for review into B.
    pub review: Option<ConflictReview>,
    /// Selection among the review's conflicts.
    pub conflict_cursor: Cursor,
    /// The Custom Merge form (the manipulate form), open over the review.
    pub form: Option<Box<Form<FormKind>>>,
    /// What the last resolution did.
    pub note: Option<String>,
}

impl MergeWizard {
    /// The wizard (or, `diff_only`, the diff) from `source`, offering `sides` (parent first).
    pub fn new(source: Side, sides: Vec<Side>, diff_only: bool) -> Self {
        Self {
            diff_only,
            step: MergeStep::Sides,
            source,
            sides,
            side_cursor: Cursor::default(),
            destination: None,
            diff: None,
            line_cursor: Cursor::default(),
            // The service's default.
            strategy: 2,
            loading: false,
            refused: None,
            refused_scroll: 0,
            refused_overflows: false,
            refusal: None,
            result: None,
            sent: false,
            swapped: false,
            review: None,
            conflict_cursor: Cursor::default(),
            form: None,
            note: None,
        }
    }

    /// The wizard from the timeline `source` of `all`: none when it has no relative to compare
    /// with (the why, for the flash).
    pub fn from_tree(
        all: &[TimelineInfo],
        source: &TimelineInfo,
        diff_only: bool,
    ) -> Result<Self, String> {
        let sides = relatives(all, &source.id);
        if sides.is_empty() {
            return Err(format!(
                "{} has no parent and no branch to {} (press p to branch it).",
                source.name,
                if diff_only {
                    "compare it with"
                } else {
                    "merge with"
                }
            ));
        }
        Ok(Self::new(Side::of(source, "selected"), sides, diff_only))
    }

    /// The review of the merges waiting for review into `destination` (marked ⇄), and the
    /// call that asks for it; `None` when none waits. `relatives` (its line of descent, where a
    /// merge's source usually is) name the sources.
    pub fn review_into(
        destination: &TimelineInfo,
        relatives: Vec<Side>,
    ) -> Option<(Self, Outcome)> {
        if destination.pending_into == 0 {
            return None;
        }
        let side = Side::of(destination, "selected");
        let mut wizard = Self::new(side.clone(), relatives, true);
        wizard.destination = Some(side);
        let asked = wizard.ask_review(None);
        Some((wizard, asked))
    }

    /// Whether it was opened on the destination to review what waits there (no diff, no
    /// merge of its own: `r` on a timeline marked ⇄).
    fn reviewing_only(&self) -> bool {
        self.destination
            .as_ref()
            .is_some_and(|d| d.id == self.source.id)
    }

    /// Whether merges into side B wait for review (`r` reviews them).
    fn pending_into(&self) -> bool {
        self.destination.as_ref().is_some_and(|d| d.pending > 0)
    }

    /// The strategy chosen.
    pub fn chosen_strategy(&self) -> MergeStrategy {
        STRATEGIES[self.strategy.min(STRATEGIES.len() - 1)].0
    }

    /// The merge the confirm step sends (safety checked).
    pub fn request(&self) -> Option<MergeRequest> {
        Some(MergeRequest {
            source_timeline_id: self.source.id.clone(),
            destination_timeline_id: self.destination.as_ref()?.id.clone(),
            conflict_resolution: self.chosen_strategy(),
            safety_check: true,
        })
    }

    /// The diff call for the chosen sides.
    fn ask_diff(&mut self) -> Outcome {
        let Some(destination) = &self.destination else {
            return Outcome::keep();
        };
        let query = DiffQuery {
            source_timeline_id: self.source.id.clone(),
            destination_timeline_id: destination.id.clone(),
        };
        self.step = MergeStep::Diff;
        self.diff = None;
        self.line_cursor = Cursor::default();
        self.loading = true;
        Outcome::with(Effect::Call(Call::Diff(query)))
    }

    /// Asks for the conflicts waiting for review into B (of `merge`, else of every merge).
    fn ask_review(&mut self, merge: Option<MergeId>) -> Outcome {
        let Some(destination) = &self.destination else {
            return Outcome::keep();
        };
        let query = ReviewQuery {
            merged_timeline_id: destination.id.clone(),
            merge_id: merge,
        };
        self.step = MergeStep::Review;
        self.review = None;
        self.loading = true;
        Outcome::with(Effect::Call(Call::Review(query)))
    }

    /// The review query of the review step, to ask it again after a resolution.
    pub fn review_query(&self) -> Option<ReviewQuery> {
        Some(ReviewQuery {
            merged_timeline_id: self.destination.as_ref()?.id.clone(),
            merge_id: None,
        })
    }

    /// The review arrived.
    pub fn show_review(&mut self, review: ConflictReview) {
        self.conflict_cursor.clamp(review.conflicts.len());
        self.review = Some(review);
        self.loading = false;
    }

    /// A resolution was recorded (the last one completed its merge).
    pub fn resolved(&mut self, result: &ResolveResult) {
        self.sent = false;
        // The review is asked again at once: until it comes, the old list (with the conflict
        // just resolved) takes no keys, so nothing is resolved twice.
        self.loading = self.destination.is_some();
        self.form = None;
        self.note = Some(if result.merge_status == "merged" {
            format!(
                "✓ {} resolved: the merge is complete{}; {} event{} written.",
                result.resolved_event_id,
                completed_by(result),
                result.written.len(),
                if result.written.len() == 1 { "" } else { "s" }
            )
        } else {
            format!(
                "✓ {} resolved; {} conflict{} of the merge still open.",
                result.resolved_event_id,
                result.remaining_conflicts,
                if result.remaining_conflicts == 1 {
                    ""
                } else {
                    "s"
                }
            )
        });
    }

    /// A command in the review: a / b keep A's / B's outcome, c opens the Custom Merge form.
    fn review_key(&mut self, command: Command) -> Outcome {
        self.refusal = None;
        if self.sent {
            return Outcome::keep();
        }
        if command == Command::Back {
            self.step = if self.diff.is_some() {
                MergeStep::Diff
            } else {
                MergeStep::Sides
            };
            return Outcome::keep();
        }
        let Some(review) = &self.review else {
            return Outcome::keep();
        };
        let len = review.conflicts.len();
        let Some(conflict) = review.conflicts.get(self.conflict_cursor.selected) else {
            return Outcome::keep();
        };
        let resolution = match command {
            Command::Up => {
                self.conflict_cursor.step(-1, len);
                return Outcome::keep();
            }
            Command::Down => {
                self.conflict_cursor.step(1, len);
                return Outcome::keep();
            }
            Command::KeepA => ConflictResolution::KeepSource,
            Command::KeepB => ConflictResolution::KeepDestination,
            Command::Custom => ConflictResolution::Custom,
            _ => return Outcome::keep(),
        };
        if !conflict.allowed.iter().any(|a| a == resolution.option()) {
            self.refusal = Some(format!(
                "{} is not open to {}: only {} (a fixed point keeps its outcome).",
                conflict.event_id,
                resolution.option(),
                conflict.allowed.join(", ")
            ));
            return Outcome::keep();
        }
        let Some(destination) = self.destination.as_ref().map(|d| d.id.clone()) else {
            return Outcome::keep();
        };
        if resolution == ConflictResolution::Custom {
            self.form = Some(Box::new(forms::custom_merge(destination, conflict)));
            return Outcome::keep();
        }
        let req = ResolveRequest {
            event_id: conflict.event_id.clone(),
            resolution,
            new_outcome: None,
            merge_id: Some(conflict.merge_id.clone()),
            merged_timeline_id: Some(destination),
            safety_check: true,
        };
        self.sent = true;
        self.loading = true;
        self.note = None;
        Outcome::with(Effect::Call(Call::Checked(Checked::Resolve(req))))
    }

    /// A key: esc closes from any step, ⌫ goes back a step, enter goes on; ↑↓ choose; in the
    /// diff, tab swaps the sides; the merge goes only on `y` at the last step, and a refused
    /// one is applied anyway only on `y` again (`n` keeps it unmade). Each key is looked up in
    /// what the wizard offers now ([`Self::offers`]).
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        if let Some(form) = &mut self.form {
            let outcome = form.key(key);
            if outcome.close {
                self.form = None;
            }
            if !outcome.effects.is_empty() {
                self.sent = true;
                self.note = None;
            }
            return Outcome {
                close: false,
                effects: outcome.effects,
            };
        }
        let Some(command) = offers::find(self.offers(), &key).filter(|&c| self.offered(c)) else {
            if self.step == MergeStep::Diff && key.code == KeyCode::Char('r') && !self.loading {
                self.refusal = Some("No merge into B waits for review.".into());
            }
            return Outcome::keep();
        };
        if command == Command::Close {
            return Outcome::close();
        }
        if let Some(refused) = self.refused.take() {
            return self.refused_key(refused, command);
        }
        if matches!(command, Command::Back | Command::Next) {
            self.refusal = None;
        }
        match (self.step, command) {
            (MergeStep::Sides, Command::Up) => self.side_cursor.step(-1, self.sides.len()),
            (MergeStep::Sides, Command::Down) => self.side_cursor.step(1, self.sides.len()),
            (MergeStep::Sides, Command::Next) => {
                let Some(side) = self.sides.get(self.side_cursor.selected) else {
                    return Outcome::keep();
                };
                // A merge into a timeline you may only read would be refused at its end.
                if let (false, Some(why)) = (self.diff_only, &side.read_only) {
                    self.refusal = Some(format!("{why} (D compares them without merging.)"));
                    return Outcome::keep();
                }
                self.destination = Some(side.clone());
                return self.ask_diff();
            }
            (MergeStep::Diff, Command::Up | Command::Down) => {
                let len = self.diff.as_ref().map_or(0, |d| d.lines.len());
                let delta = if command == Command::Up { -1 } else { 1 };
                self.line_cursor.step(delta, len);
            }
            (MergeStep::Diff, Command::Back) => self.back_to_sides(),
            (MergeStep::Diff, Command::Review) => return self.ask_review(None),
            (MergeStep::Diff, Command::Swap) => {
                if let Some(destination) = self.destination.take() {
                    let source = std::mem::replace(&mut self.source, destination);
                    self.destination = Some(source);
                    self.swapped = !self.swapped;
                }
                return self.ask_diff();
            }
            (MergeStep::Diff, Command::Next) => {
                // Swapped with tab, B may be a timeline you may only read.
                if let Some(why) = self.destination.as_ref().and_then(|d| d.read_only.clone()) {
                    self.refusal = Some(why);
                } else if self.diff.is_some() {
                    self.step = MergeStep::Strategy;
                }
            }
            (MergeStep::Strategy, Command::Up) => {
                self.strategy = self.strategy.saturating_sub(1);
            }
            (MergeStep::Strategy, Command::Down) => {
                self.strategy = (self.strategy + 1).min(STRATEGIES.len() - 1);
            }
            (MergeStep::Strategy, Command::Back) => self.step = MergeStep::Diff,
            (MergeStep::Strategy, Command::Next) => self.step = MergeStep::Confirm,
            (MergeStep::Confirm, Command::Back) => self.step = MergeStep::Strategy,
            (MergeStep::Confirm, Command::Merge) => {
                if let Some(req) = self.request() {
                    self.refusal = None;
                    self.loading = true;
                    self.sent = true;
                    return Outcome::with(Effect::Call(Call::Checked(Checked::Merge(req))));
                }
            }
            (MergeStep::Done, Command::Review) => {
                let merge = self.result.as_ref().and_then(|r| r.merge_id.clone());
                return self.ask_review(merge);
            }
            (MergeStep::Review, command) => return self.review_key(command),
            _ => {}
        }
        Outcome::keep()
    }

    /// The keys the wizard offers now: waiting, the safety check's question, or its step's.
    fn offers(&self) -> &'static [Offer<Command>] {
        if self.loading {
            return WORKING;
        }
        if self.refused.is_some() {
            return REFUSED;
        }
        match self.step {
            MergeStep::Sides => SIDES,
            MergeStep::Diff if self.diff_only => DIFF_ONLY,
            MergeStep::Diff => DIFF,
            MergeStep::Strategy => STRATEGY,
            MergeStep::Confirm => CONFIRM,
            MergeStep::Done => DONE,
            MergeStep::Review => RESOLVE,
        }
    }

    /// Whether `command` of [`Self::offers`] would do something now (a review with nothing
    /// waiting, a back step with nowhere to go, is not offered).
    fn offered(&self, command: Command) -> bool {
        if self.refused.is_some() && !self.loading {
            return self.refused_overflows || !matches!(command, Command::Up | Command::Down);
        }
        if self.loading {
            return true;
        }
        let conflicts = self
            .review
            .as_ref()
            .is_some_and(|r| !r.conflicts.is_empty());
        match (self.step, command) {
            (MergeStep::Diff, Command::Review) => self.pending_into(),
            (MergeStep::Done, Command::Review) => self
                .result
                .as_ref()
                .is_some_and(|r| r.status == "pending_review"),
            (
                MergeStep::Review,
                Command::KeepA | Command::KeepB | Command::Custom | Command::Up | Command::Down,
            ) => conflicts,
            (MergeStep::Review, Command::Back) => self.diff.is_some(),
            _ => true,
        }
    }

    /// The key line: what [`Self::offers`] offers now.
    fn hint(&self) -> String {
        let keys = offers::hint_where(self.offers(), |c| self.offered(c));
        if self.loading {
            format!("working… · {keys}")
        } else {
            keys
        }
    }

    /// The diff it asked for arrived.
    pub fn show_diff(&mut self, diff: TimelineDiff) {
        self.diff = Some(diff);
        self.loading = false;
    }

    /// Waiting for the merge or the resolution it sent.
    pub fn waiting(&self) -> bool {
        self.sent
    }

    /// The merge it sent was made (or waits for review, or had nothing to do).
    pub fn merged(&mut self, result: MergeResult) {
        self.result = Some(result);
        self.step = MergeStep::Done;
        self.loading = false;
        self.sent = false;
    }

    /// A command while the safety check's refusal asks "apply anyway?": y sends it unchecked,
    /// n keeps it unmade, j/k read the paradoxes on.
    fn refused_key(&mut self, refused: Refused, command: Command) -> Outcome {
        match command {
            Command::Anyway => {
                self.loading = true;
                self.sent = true;
                Outcome::with(Effect::Call(Call::Unchecked(refused.change)))
            }
            Command::Unmade => {
                let what = match refused.change {
                    Checked::Resolve(_) => "Not resolved.",
                    _ => "Not merged.",
                };
                self.refusal = Some(format!("{what} {}", refused.why));
                Outcome::keep()
            }
            // Paradoxes taller than the box are read on (the render stops at their end).
            Command::Down | Command::Up => {
                self.refused_scroll = if command == Command::Down {
                    self.refused_scroll.saturating_add(1)
                } else {
                    self.refused_scroll.saturating_sub(1)
                };
                self.refused = Some(refused);
                Outcome::keep()
            }
            _ => {
                self.refused = Some(refused);
                Outcome::keep()
            }
        }
    }

    /// The safety check refused the merge or the resolution: the paradoxes show, and `y`
    /// applies it anyway.
    pub fn paradox(&mut self, change: Checked, why: String) {
        self.loading = false;
        self.sent = false;
        self.form = None;
        self.refusal = None;
        self.refused = Some(Refused { change, why });
        self.refused_scroll = 0;
    }

    /// The service refused the merge (a pending merge between the two, a closed timeline) or
    /// the resolution: the reason shows under the form, or in the step.
    pub fn refuse(&mut self, why: Option<String>) {
        self.loading = false;
        self.sent = false;
        if let Some(form) = &mut self.form {
            form.pending = false;
            if let Some(why) = why {
                form.refuse(why, None);
            }
            return;
        }
        if why.is_some() {
            self.refusal = why;
        }
    }

    /// A call it waited on failed: it stops waiting; a failed diff goes back to the sides.
    pub fn failed(&mut self, diff: bool) {
        self.loading = false;
        if !diff {
            self.sent = false;
            if let Some(form) = &mut self.form {
                form.pending = false;
            }
        }
        if diff && self.step == MergeStep::Diff {
            self.back_to_sides();
        }
        if self.step == MergeStep::Review && self.review.is_none() {
            self.step = if self.diff.is_some() {
                MergeStep::Diff
            } else {
                MergeStep::Sides
            };
        }
    }

    /// Back to choosing the other side, of the timeline the wizard was opened on (sides swapped
    /// with tab are swapped back: the list is that timeline's relatives).
    fn back_to_sides(&mut self) {
        if self.swapped
            && let Some(destination) = self.destination.take()
        {
            let source = std::mem::replace(&mut self.source, destination);
            self.destination = Some(source);
            self.swapped = false;
        }
        self.step = MergeStep::Sides;
    }

    fn title(&self) -> String {
        let Some(b) = self.destination.as_ref().map(|d| d.name.clone()) else {
            let (verb, what) = if self.diff_only {
                ("Diff", "against")
            } else {
                ("Merge", "into")
            };
            return format!("{verb} {} {what} … (choose B)", self.source.name);
        };
        if self.reviewing_only() {
            return format!("Review the merges waiting into {b}");
        }
        if self.diff_only {
            format!("Diff {} against {b}", self.source.name)
        } else {
            format!("Merge {} into {b}", self.source.name)
        }
    }

    /// Draws the wizard over `area`: as wide as the screen allows, so the diff's sides fit.
    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect, p: &Palette) {
        let rect = centered(
            area,
            area.width.saturating_sub(4).min(150),
            area.height.saturating_sub(2).min(30),
        );
        let inner = modal(frame, rect, &self.title(), p);
        // A refusal as tall as it wraps (a service's reason can be long), up to a few rows.
        let refusal_text = self.refusal.as_ref().map(|why| {
            Paragraph::new(Span::styled(format!("✗ {why}"), p.error)).wrap(Wrap { trim: true })
        });
        let refusal_rows = refusal_text.as_ref().map_or(0, |text| {
            u16::try_from(text.line_count(inner.width))
                .unwrap_or(u16::MAX)
                .min(6)
        });
        let [steps, body, refusal, keys] = Layout::vertical([
            Constraint::Length(2),
            Constraint::Min(1),
            Constraint::Length(refusal_rows),
            Constraint::Length(1),
        ])
        .areas(inner);
        let mut bar = Vec::new();
        let shown: &[(MergeStep, &str)] = if self.reviewing_only() {
            &MergeStep::ALL[5..]
        } else if self.step == MergeStep::Review {
            &MergeStep::ALL
        } else if self.diff_only {
            &MergeStep::ALL[..2]
        } else {
            &MergeStep::ALL[..5]
        };
        for (i, (step, name)) in shown.iter().enumerate() {
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
        if let Some(text) = refusal_text {
            frame.render_widget(text, refusal);
        }
        if self.loading && self.step != MergeStep::Diff {
            frame.render_widget(Paragraph::new(Span::styled("Working…", p.dim)), body);
        } else {
            self.render_body(frame, area, body, p);
        }
        // The key line last: whether paradoxes overflow the box (j/k read on) is known now.
        frame.render_widget(
            Paragraph::new(Span::styled(
                ellipsize(&self.hint(), usize::from(keys.width)),
                p.dim,
            )),
            keys,
        );
    }

    /// The step's body (the modal is `area`).
    fn render_body(&mut self, frame: &mut Frame<'_>, area: Rect, body: Rect, p: &Palette) {
        match self.step {
            MergeStep::Sides => {
                let lines = self.side_lines(body.height as usize, body.width as usize, p);
                frame.render_widget(Paragraph::new(lines), body);
            }
            MergeStep::Diff => self.render_diff(frame, body, p),
            MergeStep::Review => {
                let lines = self.review_lines(body.height as usize, body.width as usize, p);
                // A refusal wraps whole; conflict rows are cut to the width themselves.
                let text = match self.refused {
                    Some(_) => {
                        self.scrolled(Paragraph::new(lines).wrap(Wrap { trim: false }), body)
                    }
                    None => Paragraph::new(lines),
                };
                frame.render_widget(text, body);
                if let Some(form) = &mut self.form {
                    form.render(frame, area, p);
                }
            }
            _ => {
                let lines = self.later_lines(p);
                let text = Paragraph::new(lines).wrap(Wrap { trim: false });
                frame.render_widget(self.scrolled(text, body), body);
            }
        }
    }

    /// `text` scrolled as far as the refused paradoxes were read on (none when nothing was
    /// refused), no further than its last line at the bottom of `body`.
    fn scrolled<'a>(&mut self, text: Paragraph<'a>, body: Rect) -> Paragraph<'a> {
        if self.refused.is_none() {
            return text;
        }
        let needed = u16::try_from(text.line_count(body.width)).unwrap_or(u16::MAX);
        self.refused_overflows = needed > body.height;
        self.refused_scroll = self.refused_scroll.min(needed.saturating_sub(body.height));
        text.scroll((self.refused_scroll, 0))
    }

    fn side_lines<'a>(&mut self, height: usize, width: usize, p: &Palette) -> Vec<Line<'a>> {
        let verb = if self.diff_only { "Compare" } else { "Merge" };
        let what = if self.diff_only { "with" } else { "into" };
        let mut lines = vec![
            Line::from(Span::styled(
                ellipsize(
                    &format!("{verb} {} (A) {what} which timeline (B)?", self.source.name),
                    width,
                ),
                p.title,
            )),
            Line::from(Span::styled(
                ellipsize(
                    "Only timelines on its line of descent: its ancestors and its branches.",
                    width,
                ),
                p.dim,
            )),
        ];
        let range = self
            .side_cursor
            .window(self.sides.len(), height.saturating_sub(2));
        for i in range {
            let side = &self.sides[i];
            let selected = i == self.side_cursor.selected;
            let row = format!(
                "{} {:<11} {}{}",
                if selected { "▶" } else { " " },
                side.relation,
                side.name,
                if side.read_only.is_some() { " ro" } else { "" }
            );
            lines.push(Line::from(Span::styled(
                ellipsize(&row, width),
                if selected { p.selected } else { p.text },
            )));
        }
        lines
    }

    /// The diff: a summary, then each changed lineage, A beside B (or A above B when narrow),
    /// then the selected lineage in full, with its event at the branch point.
    fn render_diff(&mut self, frame: &mut Frame<'_>, area: Rect, p: &Palette) {
        let a = self.source.name.clone();
        let b = self
            .destination
            .as_ref()
            .map_or_else(String::new, |d| d.name.clone());
        let Some(diff) = &self.diff else {
            frame.render_widget(
                Paragraph::new(Span::styled("Comparing the two sides…", p.dim)),
                area,
            );
            return;
        };
        let width = usize::from(area.width);
        let detail_text = diff
            .lines
            .get(self.line_cursor.selected)
            .map(|line| self.detail(line, diff.lines.len(), width, p));
        // The selected lineage whole, as tall as it wraps, on at most half the body.
        let detail_rows = detail_text.as_ref().map_or(0, |text| {
            u16::try_from(text.line_count(area.width))
                .unwrap_or(u16::MAX)
                .min(area.height / 2)
        });
        let [summary, table, detail] = Layout::vertical([
            Constraint::Length(2),
            Constraint::Min(1),
            Constraint::Length(detail_rows),
        ])
        .areas(area);
        frame.render_widget(
            Paragraph::new(vec![
                Line::from(Span::styled(
                    ellipsize(&format!("A {a}  →  B {b}, since they branched"), width),
                    p.title,
                )),
                Line::from(Span::styled(ellipsize(&summary_text(diff), width), p.text)),
            ]),
            summary,
        );
        if diff.lines.is_empty() {
            frame.render_widget(
                Paragraph::new(Span::styled(
                    format!("No lineage changed on either side: {a} and {b} agree."),
                    p.ok,
                )),
                table,
            );
            return;
        }
        let len = diff.lines.len();
        let mut lines = Vec::new();
        if area.width >= SIDE_BY_SIDE {
            // Class │ A │ B, one row a lineage.
            let class_w = 13;
            let side_w = (width.saturating_sub(class_w + 6)) / 2;
            lines.push(Line::from(Span::styled(
                format!(
                    "  {:<class_w$}│ {:<side_w$} │ {}",
                    "Lineage",
                    ellipsize(&format!("A {a}"), side_w),
                    ellipsize(&format!("B {b}"), side_w)
                ),
                p.title,
            )));
            let rows = usize::from(table.height).saturating_sub(1);
            for i in self.line_cursor.window(len, rows) {
                let line = &diff.lines[i];
                let selected = i == self.line_cursor.selected;
                let (glyph, style) = class_look(&line.class, p);
                let marker = if selected { "▶" } else { " " };
                let row_style = if selected { p.selected } else { p.text };
                lines.push(Line::from(vec![
                    Span::styled(format!("{marker} "), row_style),
                    Span::styled(
                        format!("{:<class_w$}", format!("{glyph} {}", line.class)),
                        if selected { p.selected } else { style },
                    ),
                    Span::styled("│ ", p.dim),
                    Span::styled(
                        format!("{:<side_w$}", side_text(line.source.as_ref(), side_w)),
                        row_style,
                    ),
                    Span::styled(" │ ", p.dim),
                    Span::styled(side_text(line.destination.as_ref(), side_w), row_style),
                ]));
            }
        } else {
            // Three rows a lineage: its class, then A, then B.
            let rows = usize::from(table.height) / 3;
            let side_w = width.saturating_sub(6);
            for i in self.line_cursor.window(len, rows.max(1)) {
                let line = &diff.lines[i];
                let selected = i == self.line_cursor.selected;
                let (glyph, style) = class_look(&line.class, p);
                let marker = if selected { "▶" } else { " " };
                lines.push(Line::from(vec![
                    Span::styled(
                        format!("{marker} "),
                        if selected { p.selected } else { p.text },
                    ),
                    Span::styled(
                        format!("{glyph} {}", line.class),
                        if selected { p.selected } else { style },
                    ),
                ]));
                for (side, event) in [("A", &line.source), ("B", &line.destination)] {
                    lines.push(Line::from(vec![
                        Span::styled(format!("   {side} "), p.dim),
                        Span::styled(side_text(event.as_ref(), side_w), p.text),
                    ]));
                }
            }
        }
        frame.render_widget(Paragraph::new(lines), table);
        if let Some(text) = detail_text {
            frame.render_widget(text, detail);
        }
    }

    /// The selected lineage in full, wrapped: its class and what it means, the branch point,
    /// then each side.
    fn detail(&self, line: &DiffLine, len: usize, width: usize, p: &Palette) -> Paragraph<'static> {
        let (glyph, style) = class_look(&line.class, p);
        let whole = |label: &str, e: Option<&EventRecord>| {
            Line::from(vec![
                Span::styled(format!("{label:<6}"), p.dim),
                Span::styled(
                    e.map_or_else(|| "— (not there)".to_owned(), event_text),
                    p.text,
                ),
            ])
        };
        let lines = vec![
            Line::from(Span::styled("─".repeat(width), p.dim)),
            Line::from(vec![
                Span::styled(
                    format!(
                        "{glyph} {}/{len} {} ",
                        self.line_cursor.selected + 1,
                        line.lineage
                    ),
                    style,
                ),
                Span::styled(class_meaning(&line.class).to_owned(), p.dim),
            ]),
            whole("base", line.base.as_ref()),
            whole("A", line.source.as_ref()),
            whole("B", line.destination.as_ref()),
        ];
        Paragraph::new(lines).wrap(Wrap { trim: false })
    }

    /// The review: each conflict of the merges waiting into B, A's outcome over B's, and what
    /// has been chosen; the paradoxes of a refused resolution and "apply anyway?".
    fn review_lines<'a>(&mut self, height: usize, width: usize, p: &Palette) -> Vec<Line<'a>> {
        let b = self
            .destination
            .as_ref()
            .map_or_else(String::new, |d| d.name.clone());
        let mut lines = vec![Line::from(Span::styled(
            ellipsize(&format!("Conflicts waiting for review in {b} (B)"), width),
            p.title,
        ))];
        if let Some(note) = &self.note {
            lines.push(Line::from(Span::styled(ellipsize(note, width), p.ok)));
        }
        if let Some(refused) = &self.refused {
            // The question first, so a long refusal cut at the bottom never hides it.
            lines.push(Line::from(Span::styled(APPLY_ANYWAY, p.warn)));
            lines.extend(
                refused
                    .why
                    .lines()
                    .map(|l| Line::from(Span::styled(l.to_owned(), p.error))),
            );
            return lines;
        }
        let Some(review) = &self.review else {
            return lines;
        };
        for m in &review.merges {
            // Named when it is this timeline or one on its line of descent (a merge's source
            // usually is: a branch merged back).
            let from = std::iter::once(&self.source)
                .chain(&self.sides)
                .find(|s| s.id == m.source_timeline_id)
                .map_or_else(|| m.source_timeline_id.to_string(), |s| s.name.clone());
            lines.push(Line::from(Span::styled(
                ellipsize(
                    &format!(
                        "merge {} from {from}: {} open, {} resolved",
                        m.merge_id, m.open_conflicts, m.resolved_conflicts
                    ),
                    width,
                ),
                p.dim,
            )));
        }
        if review.conflicts.is_empty() {
            lines.push(Line::from(Span::styled(
                format!("No conflict waits for review in {b}."),
                p.ok,
            )));
            return lines;
        }
        let rows = height.saturating_sub(lines.len()) / 3;
        let len = review.conflicts.len();
        for i in self.conflict_cursor.window(len, rows.max(1)) {
            let c = &review.conflicts[i];
            let selected = i == self.conflict_cursor.selected;
            let chosen = c
                .resolution
                .map_or_else(|| "open".to_owned(), |r| format!("chosen: {}", r.option()));
            lines.push(Line::from(Span::styled(
                ellipsize(
                    &format!(
                        "{} ✗ {} · {chosen}",
                        if selected { "▶" } else { " " },
                        c.event_id
                    ),
                    width,
                ),
                if selected { p.selected } else { p.text },
            )));
            for (side, outcome) in [("A", &c.source_outcome), ("B", &c.destination_outcome)] {
                lines.push(Line::from(vec![
                    Span::styled(format!("   {side} "), p.dim),
                    Span::styled(ellipsize(outcome, width.saturating_sub(5)), p.text),
                ]));
            }
        }
        lines
    }

    /// The strategy, confirm and done steps.
    fn later_lines<'a>(&self, p: &Palette) -> Vec<Line<'a>> {
        let a = &self.source.name;
        let b = self
            .destination
            .as_ref()
            .map_or_else(String::new, |d| d.name.clone());
        let conflicts = self.diff.as_ref().map_or(0, |d| count(d, "conflict"));
        match self.step {
            MergeStep::Strategy => {
                let mut lines = vec![
                    Line::from(Span::styled("How are conflicts treated?", p.title)),
                    Line::from(Span::styled(
                        match conflicts {
                            0 => "No conflict: every strategy merges alike.".to_owned(),
                            1 => "1 lineage changed on both sides, differently.".to_owned(),
                            n => format!("{n} lineages changed on both sides, differently."),
                        },
                        p.dim,
                    )),
                ];
                for (i, (strategy, what)) in STRATEGIES.iter().enumerate() {
                    let selected = i == self.strategy;
                    lines.push(Line::from(vec![
                        Span::styled(
                            format!(
                                "{} {:<21}",
                                if selected { "▶" } else { " " },
                                strategy.as_str()
                            ),
                            if selected { p.selected } else { p.text },
                        ),
                        Span::styled((*what).to_owned(), p.dim),
                    ]));
                }
                lines
            }
            MergeStep::Confirm => {
                let mut lines = vec![
                    Line::from(Span::styled("Ready to merge", p.title)),
                    Line::from(format!("from      {a} (A)")),
                    Line::from(format!("into      {b} (B)")),
                    Line::from(format!("strategy  {}", self.chosen_strategy().as_str())),
                ];
                if let Some(diff) = &self.diff {
                    lines.push(Line::from(format!("weighs    {}", summary_text(diff))));
                }
                if let Some(refused) = &self.refused {
                    // The question first, so a long refusal cut at the bottom never hides it.
                    lines.push(Line::default());
                    lines.push(Line::from(Span::styled(APPLY_ANYWAY, p.warn)));
                    lines.extend(
                        refused
                            .why
                            .lines()
                            .map(|l| Line::from(Span::styled(l.to_owned(), p.error))),
                    );
                } else {
                    lines.push(Line::from(Span::styled(
                        "The merge is checked for paradoxes first: one it would add is named, \
                         and you are asked before it is made.",
                        p.dim,
                    )));
                }
                lines
            }
            MergeStep::Done => {
                let Some(r) = &self.result else {
                    return Vec::new();
                };
                let head = match r.status.as_str() {
                    "up_to_date" => Line::from(Span::styled(
                        format!("Up to date: {a} has nothing {b} lacks; nothing was written."),
                        p.ok,
                    )),
                    "pending_review" => Line::from(Span::styled(
                        format!(
                            "Waiting for review: {} conflict{} to resolve before anything \
                             lands in {b}.",
                            r.conflicts,
                            if r.conflicts == 1 { "" } else { "s" }
                        ),
                        p.warn,
                    )),
                    _ => Line::from(Span::styled(format!("Merged {a} into {b}."), p.ok)),
                };
                let mut lines = vec![
                    head,
                    Line::from(format!(
                        "weighed   {} incoming · {} added · {} kept · {} convergent · {} conflict{}",
                        r.incoming,
                        r.added,
                        r.kept,
                        r.convergent,
                        r.conflicts,
                        if r.conflicts == 1 { "" } else { "s" }
                    )),
                    Line::from(format!(
                        "wrote     {} event{}, {} data entr{}",
                        r.written.len(),
                        if r.written.len() == 1 { "" } else { "s" },
                        r.data_entries.len(),
                        if r.data_entries.len() == 1 {
                            "y"
                        } else {
                            "ies"
                        }
                    )),
                ];
                if let Some(id) = &r.merge_id {
                    lines.push(Line::from(Span::styled(format!("merge     {id}"), p.dim)));
                }
                if !r.paradoxes.is_empty() {
                    lines.push(Line::from(Span::styled(
                        format!(
                            "applied anyway: {} paradox{} added to {b}",
                            r.paradoxes.len(),
                            if r.paradoxes.len() == 1 { "" } else { "es" }
                        ),
                        p.error,
                    )));
                    for x in &r.paradoxes {
                        lines.push(Line::from(Span::styled(
                            format!("• {}", x.description),
                            p.warn,
                        )));
                    }
                }
                lines
            }
            _ => Vec::new(),
        }
    }
}

/// How many lineages of `diff` are of `class`.
fn count(diff: &TimelineDiff, class: &str) -> usize {
    diff.lines.iter().filter(|l| l.class == class).count()
}

/// `2 incoming · 1 added · 0 kept · 0 convergent · 1 conflict · 1 data entry`.
pub fn summary_text(diff: &TimelineDiff) -> String {
    let conflicts = count(diff, "conflict");
    let mut text = format!(
        "{} incoming · {} added · {} kept · {} convergent · {} conflict{}",
        count(diff, "incoming"),
        count(diff, "added"),
        count(diff, "kept"),
        count(diff, "convergent"),
        conflicts,
        if conflicts == 1 { "" } else { "s" }
    );
    if !diff.data_entries.is_empty() {
        let n = diff.data_entries.len();
        text.push_str(&format!(
            " · {n} data entr{} to copy",
            if n == 1 { "y" } else { "ies" }
        ));
    }
    text
}

/// A class's glyph (readable without colour) and colour.
fn class_look(class: &str, p: &Palette) -> (&'static str, Style) {
    match class {
        "incoming" => ("→", p.ok),
        "added" => ("+", p.ok),
        "kept" => ("←", p.dim),
        "convergent" => ("=", p.dim),
        "conflict" => ("✗", p.error),
        _ => ("?", p.text),
    }
}

/// What a class means, in a line.
fn class_meaning(class: &str) -> &'static str {
    match class {
        "incoming" => "incoming: changed in A only; a merge brings A's outcome over",
        "added" => "added: new in A since the branch point; a merge adds it",
        "kept" => "kept: changed in B only; a merge leaves it alone",
        "convergent" => "convergent: changed on both sides to the same outcome",
        "conflict" => "conflict: changed on both sides, differently; the strategy decides",
        _ => "",
    }
}

/// An event in a line, its time first (what a change most often moves, kept in view when the
/// rest is cut): `1889-03-31 12:00 Eiffel Tower opens · Paris`.
fn event_text(e: &EventRecord) -> String {
    format!(
        "{} {} · {}",
        e.time.format("%Y-%m-%d %H:%M"),
        e.description,
        e.location
    )
}

/// One side of a lineage cut to `width`: its event, or that it is not there.
fn side_text(e: Option<&EventRecord>, width: usize) -> String {
    ellipsize(
        &e.map_or_else(|| "— (not there)".to_owned(), event_text),
        width,
    )
}

impl MergeWizard {
    /// A conflict was resolved: said; the wizard that sent it (`open`, if still waiting) shows
    /// it and asks for the review again; a completed merge changed events, else only the ⇄
    /// counts of the timelines changed.
    pub fn answer_resolved(open: Option<&mut Self>, result: &ResolveResult) -> Vec<Effect> {
        let done = result.merge_status == "merged";
        let said = if done {
            format!(
                "Resolved {}: merge {}{}, is complete.",
                result.resolved_event_id,
                result.merge_id,
                completed_by(result)
            )
        } else {
            format!(
                "Resolved {}; {} conflict{} still open.",
                result.resolved_event_id,
                result.remaining_conflicts,
                if result.remaining_conflicts == 1 {
                    ""
                } else {
                    "s"
                }
            )
        };
        let mut effects = vec![Effect::Info(said)];
        if let Some(w) = open.filter(|w| w.waiting()) {
            w.resolved(result);
            effects.extend(w.review_query().map(|q| Effect::Call(Call::Review(q))));
        }
        effects.push(Effect::Reload(if done {
            Reload::Events
        } else {
            Reload::Timelines
        }));
        effects
    }

    /// A merge was made, waits for review, or had nothing to do (into the timeline named
    /// `into`): said, and shown by the wizard that sent it (`open`, if still waiting).
    pub fn answer_merged(open: Option<&mut Self>, result: MergeResult, into: &str) -> Vec<Effect> {
        let said = match result.status.as_str() {
            "up_to_date" => format!("{into} is up to date: nothing was written."),
            "pending_review" => format!(
                "The merge into {into} waits for review: {} conflict{} to resolve.",
                result.conflicts,
                if result.conflicts == 1 { "" } else { "s" }
            ),
            _ => format!(
                "Merged into {into}: {} event{} written.",
                result.written.len(),
                if result.written.len() == 1 { "" } else { "s" }
            ),
        };
        if let Some(w) = open.filter(|w| w.waiting()) {
            w.merged(result);
        }
        vec![Effect::Info(said), Effect::Reload(Reload::Events)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::unit::{key, palette, screen, timeline};

    #[test]
    fn each_key_of_a_step_gives_one_command() {
        for list in [
            SIDES, DIFF, DIFF_ONLY, STRATEGY, CONFIRM, DONE, RESOLVE, REFUSED, WORKING,
        ] {
            for offer in list {
                for k in offer.keys {
                    let giving = list.iter().filter(|o| o.keys.contains(k)).count();
                    assert_eq!(giving, 1, "{k} in {}", offers::hint(list));
                }
            }
        }
    }

    #[test]
    fn a_review_is_offered_only_when_one_waits() {
        let all = tree();
        let mut w = MergeWizard::from_tree(&all, &all[2], false).expect("a wizard");
        w.key(key("enter"));
        w.show_diff(diff(&all[2].id, &all[1].id));
        assert!(!w.hint().contains("review"), "{}", w.hint());
        // r says why instead of asking for an empty review.
        assert!(w.key(key("r")).effects.is_empty());
        assert_eq!(
            w.refusal.as_deref(),
            Some("No merge into B waits for review.")
        );
    }

    fn tree() -> Vec<TimelineInfo> {
        let mut primary = timeline(0, "Primary");
        primary.created_at = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
        let mut tesla = timeline(1, "Tesla 1889");
        tesla.parent = Some(primary.id.clone());
        let mut stays = timeline(2, "Tesla stays");
        stays.parent = Some(tesla.id.clone());
        let mut moon = timeline(3, "Moon 1969");
        moon.parent = Some(primary.id.clone());
        vec![primary, tesla, stays, moon]
    }

    fn event(description: &str) -> EventRecord {
        EventRecord {
            event_id: "event-5678abcd".parse().expect("an event id"),
            description: description.into(),
            time: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            location: "Paris".into(),
            causes: Vec::new(),
            fixed_point: false,
            status: crate::model::EventStatus::OnSchedule,
            lineage: "event-5678abcd".parse().expect("an event id"),
            supersedes: None,
            superseded_by: None,
            author: None,
        }
    }

    fn diff(source: &TimelineId, destination: &TimelineId) -> TimelineDiff {
        TimelineDiff {
            source_timeline_id: source.clone(),
            destination_timeline_id: destination.clone(),
            base_timeline_id: source.clone(),
            lines: vec![DiffLine {
                lineage: "event-5678abcd".parse().expect("an event id"),
                class: "conflict".into(),
                base: Some(event("Tesla sails")),
                source: Some(event("Tesla stays in Paris")),
                destination: Some(event("Tesla sails to New York")),
            }],
            data_entries: Vec::new(),
        }
    }

    #[test]
    fn the_other_side_is_on_the_line_of_descent_parent_first() {
        let all = tree();
        let sides: Vec<(String, &str)> = relatives(&all, &all[1].id)
            .into_iter()
            .map(|s| (s.name, s.relation))
            .collect();
        assert_eq!(
            sides,
            [
                ("Primary".into(), "parent"),
                ("Tesla stays".into(), "branch")
            ]
        );
        let from_stays: Vec<&str> = relatives(&all, &all[2].id)
            .iter()
            .map(|s| s.relation)
            .collect();
        assert_eq!(from_stays, ["parent", "ancestor"]);
        let from_primary: Vec<String> = relatives(&all, &all[0].id)
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(from_primary, ["Tesla 1889", "Tesla stays", "Moon 1969"]);
        let alone = [timeline(0, "Primary")];
        assert!(MergeWizard::from_tree(&alone, &alone[0], true).is_err());
    }

    #[test]
    fn the_wizard_asks_a_diff_then_merges_only_on_y() {
        let all = tree();
        let mut w = MergeWizard::from_tree(&all, &all[2], false).expect("a wizard");
        let outcome = w.key(key("enter"));
        assert!(matches!(
            &outcome.effects[..],
            [Effect::Call(Call::Diff(q))] if q.destination_timeline_id == all[1].id
        ));
        assert!(w.loading && w.key(key("enter")).effects.is_empty());
        w.show_diff(diff(&all[2].id, &all[1].id));
        w.key(key("enter"));
        assert_eq!(w.step, MergeStep::Strategy);
        w.key(key("k"));
        w.key(key("k"));
        w.key(key("enter"));
        assert_eq!(w.step, MergeStep::Confirm);
        assert!(w.key(key("enter")).effects.is_empty(), "enter is no yes");
        let outcome = w.key(key("y"));
        let [Effect::Call(Call::Checked(Checked::Merge(req)))] = &outcome.effects[..] else {
            panic!("y merges, checked: {:?}", outcome.effects);
        };
        assert_eq!(req.conflict_resolution, MergeStrategy::SourceOverwrite);
        assert!(req.safety_check);
        assert!(w.waiting());
        // Refused for a paradox: n keeps it unmade, y again applies it without the check.
        w.paradox(
            Checked::Merge(req.clone()),
            "It would add a causal loop.".into(),
        );
        assert!(w.key(key("x")).effects.is_empty() && w.refused.is_some());
        w.key(key("n"));
        assert!(w.refused.is_none());
        assert!(
            w.refusal
                .as_deref()
                .is_some_and(|r| r.starts_with("Not merged"))
        );
        w.paradox(
            Checked::Merge(req.clone()),
            "It would add a causal loop.".into(),
        );
        let outcome = w.key(key("y"));
        assert!(matches!(
            &outcome.effects[..],
            [Effect::Call(Call::Unchecked(Checked::Merge(_)))]
        ));
    }

    #[test]
    fn paradoxes_taller_than_the_box_are_read_on_with_j_and_k_at_80_by_24() {
        let all = tree();
        let mut w = MergeWizard::from_tree(&all, &all[2], false).expect("a wizard");
        w.key(key("enter"));
        w.show_diff(diff(&all[2].id, &all[1].id));
        w.key(key("enter"));
        w.key(key("enter"));
        let outcome = w.key(key("y"));
        let [Effect::Call(Call::Checked(change))] = &outcome.effects[..] else {
            panic!("y merges, checked: {:?}", outcome.effects);
        };
        let p = palette();
        // One that fits: nothing to read on, so j/k are not offered.
        w.paradox(
            change.clone(),
            "Paradox: an event would come before its cause.".into(),
        );
        let fits = screen(80, 24, |f| w.render(f, f.area(), &p));
        assert!(fits.contains(APPLY_ANYWAY), "{fits}");
        assert!(!fits.contains("j/k"), "{fits}");
        let why: Vec<String> = (1..=30)
            .map(|n| format!("Paradox {n}: an event would come before its cause."))
            .collect();
        w.paradox(change.clone(), why.join("\n"));
        let first = screen(80, 24, |f| w.render(f, f.area(), &p));
        assert!(first.contains(APPLY_ANYWAY), "{first}");
        assert!(first.contains("j/k read on"), "{first}");
        assert!(!first.contains("Paradox 30:"), "cut at first: {first}");
        for _ in 0..40 {
            w.key(key("j"));
        }
        let end = screen(80, 24, |f| w.render(f, f.area(), &p));
        assert!(end.contains("Paradox 30:"), "read to the end: {end}");
        assert!(w.refused.is_some(), "still asking");
        // Back up: k undoes what j did, from the end (not from 40 lines past it).
        w.key(key("k"));
        let back = screen(80, 24, |f| w.render(f, f.area(), &p));
        assert!(!back.contains("Paradox 30:"), "{back}");
    }

    #[test]
    fn going_back_after_a_swap_offers_the_opened_timelines_relatives_again() {
        let all = tree();
        let mut w = MergeWizard::from_tree(&all, &all[1], false).expect("a wizard");
        w.key(key("enter"));
        w.show_diff(diff(&all[1].id, &all[0].id));
        w.key(key("tab"));
        assert_eq!(w.source.id, all[0].id, "tab swaps the sides");
        w.show_diff(diff(&all[0].id, &all[1].id));
        w.key(key("backspace"));
        assert_eq!(w.step, MergeStep::Sides);
        assert_eq!(
            w.source.id, all[1].id,
            "A is the timeline it was opened on again"
        );
        let outcome = w.key(key("enter"));
        assert!(matches!(
            &outcome.effects[..],
            [Effect::Call(Call::Diff(q))]
                if q.source_timeline_id == all[1].id && q.destination_timeline_id == all[0].id
        ));
    }

    #[test]
    fn a_review_that_failed_to_come_leaves_the_review_step() {
        let mut all = tree();
        all[1].pending_merges = 1; // r reviews only what waits
        all[1].pending_into = 1;
        let mut w = MergeWizard::from_tree(&all, &all[2], false).expect("a wizard");
        w.key(key("enter"));
        w.show_diff(diff(&all[2].id, &all[1].id));
        let asked = w.key(key("r"));
        assert!(matches!(
            &asked.effects[..],
            [Effect::Call(Call::Review(_))]
        ));
        w.failed(false);
        assert_eq!(
            w.step,
            MergeStep::Diff,
            "back where the review was asked from"
        );
    }

    #[test]
    fn a_fixed_point_keeps_its_outcome_and_b_resolves_checked() {
        let mut all = tree();
        all[1].pending_merges = 1; // r reviews only what waits
        all[1].pending_into = 1;
        let mut w = MergeWizard::from_tree(&all, &all[2], false).expect("a wizard");
        w.key(key("enter"));
        w.show_diff(diff(&all[2].id, &all[1].id));
        assert!(matches!(
            &w.key(key("r")).effects[..],
            [Effect::Call(Call::Review(q))] if q.merged_timeline_id == all[1].id
        ));
        w.show_review(ConflictReview {
            conflicts: vec![crate::service::ReviewConflict {
                event_id: "event-5678abcd".parse().expect("an event id"),
                source_outcome: "Tesla stays in Paris".into(),
                destination_outcome: "Tesla sails to New York".into(),
                merge_id: "mrg_review".parse().expect("a merge id"),
                source_timeline_id: all[2].id.clone(),
                base: Some(event("Tesla sails")),
                source: event("Tesla stays in Paris"),
                destination: event("Tesla sails to New York"),
                resolution: None,
                allowed: vec!["Keep Event B".into()],
            }],
            resolution_options: Vec::new(),
            merges: Vec::new(),
        });
        for refused in ["a", "c"] {
            assert!(w.key(key(refused)).effects.is_empty() && w.form.is_none());
            assert!(
                w.refusal
                    .as_deref()
                    .is_some_and(|r| r.contains("only Keep Event B"))
            );
        }
        let outcome = w.key(key("b"));
        let [Effect::Call(Call::Checked(Checked::Resolve(req)))] = &outcome.effects[..] else {
            panic!("b resolves, checked: {:?}", outcome.effects);
        };
        assert_eq!(req.resolution, ConflictResolution::KeepDestination);
        assert!(req.safety_check && w.waiting());
    }

    #[test]
    fn tab_swaps_the_sides_and_the_diff_alone_closes_on_enter() {
        let all = tree();
        let mut w = MergeWizard::from_tree(&all, &all[1], true).expect("a diff");
        w.key(key("enter"));
        w.show_diff(diff(&all[1].id, &all[0].id));
        let outcome = w.key(key("tab"));
        assert!(matches!(
            &outcome.effects[..],
            [Effect::Call(Call::Diff(q))]
                if q.source_timeline_id == all[0].id && q.destination_timeline_id == all[1].id
        ));
        w.show_diff(diff(&all[0].id, &all[1].id));
        assert!(w.key(key("enter")).close);
    }

    #[test]
    fn the_diff_is_side_by_side_when_wide_and_stacked_when_narrow() {
        let all = tree();
        let mut w = MergeWizard::from_tree(&all, &all[2], true).expect("a diff");
        w.key(key("enter"));
        w.show_diff(diff(&all[2].id, &all[1].id));
        let wide = screen(140, 24, |f| w.render(f, f.area(), &palette()));
        let row = wide
            .lines()
            .find(|l| l.contains("✗ conflict"))
            .unwrap_or_default();
        assert!(
            row.contains("Tesla stays in Paris") && row.contains("Tesla sails to New York"),
            "one row, both sides:\n{wide}"
        );
        let narrow = screen(80, 24, |f| w.render(f, f.area(), &palette()));
        let lines: Vec<&str> = narrow.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.contains("✗ conflict"))
            .unwrap_or_else(|| panic!("{narrow}"));
        assert!(
            lines[at + 1].contains("A 1970-01-01 00:00 Tesla stays in Paris"),
            "{narrow}"
        );
        assert!(
            lines[at + 2].contains("B 1970-01-01 00:00 Tesla sails to New York"),
            "{narrow}"
        );
        assert!(
            narrow.contains("base  1970-01-01 00:00 Tesla sails"),
            "{narrow}"
        );
    }
}

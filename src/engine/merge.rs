//! Merging a timeline into an ancestor or a descendant of it (guide §3): a three-way
//! comparison of both sides against the branch point's base, and the writes it decides, all in
//! one append with the merge record.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::ServiceError;
use crate::model::{Event, EventId, EventStatus, History, Instant, MergeId, TimelineId};
use crate::service::{
    DataEntry, Merge, MergeDecision, MergeRequest, MergeResult, MergeStrategy, WrittenEvent,
};
use imbl::ordmap::DiffItem;

use super::rules::{self, Ctx};
use super::world::{Op, World};

/// What a side's current event of a lineage says: its description and time.
type Outcome<'a> = (&'a str, Instant);

fn outcome(e: &Event) -> Outcome<'_> {
    (e.description.as_str(), e.time)
}

/// The event that stands for lineage `lineage` in `history`, if the lineage is there.
fn head<'h>(history: &'h History, lineage: &EventId) -> Option<&'h Event> {
    history.head_of(lineage).map(|e| &**e)
}

/// The timelines from `id` up to its root, `id` first.
fn ancestry(world: &World, id: &TimelineId) -> Vec<TimelineId> {
    let mut out = vec![id.clone()];
    let mut at = id.clone();
    while let Some(parent) = world.timelines.get(&at).and_then(|t| t.meta.parent.clone()) {
        if out.contains(&parent) {
            break;
        }
        out.push(parent.clone());
        at = parent;
    }
    out
}

/// The branch whose creation-time copy of its parent is the base of a merge between
/// `source` and `destination`: the child of the ancestor that lies on the path to the
/// descendant. Refuses timelines that are not on one line of descent.
fn base_branch(
    world: &World,
    source: &TimelineId,
    destination: &TimelineId,
) -> Result<TimelineId, ServiceError> {
    let up_from_source = ancestry(world, source);
    let up_from_destination = ancestry(world, destination);
    let (descendant_line, ancestor) = if let Some(i) =
        up_from_source.iter().position(|t| t == destination)
    {
        (&up_from_source[..i], destination)
    } else if let Some(i) = up_from_destination.iter().position(|t| t == source) {
        (&up_from_destination[..i], source)
    } else {
        let common = up_from_source
            .iter()
            .find(|t| up_from_destination.contains(t));
        return Err(ServiceError::Conflict(match common {
            Some(c) => format!(
                "timelines '{source}' and '{destination}' are not on one line of descent (neither \
                 is an ancestor of the other); merge each of them into their common ancestor \
                 '{c}' instead"
            ),
            None => format!(
                "timelines '{source}' and '{destination}' are not on one line of descent and \
                 share no ancestor, so they cannot be merged"
            ),
        }));
    };
    descendant_line
        .last()
        .cloned()
        .ok_or_else(|| ServiceError::Internal(format!("no branch between {ancestor} and itself")))
}

/// How one lineage compares across the base, the source and the destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    Incoming,
    Added,
    Conflict,
    Convergent,
    Kept,
}

impl Class {
    pub fn word(self) -> &'static str {
        match self {
            Class::Incoming => "incoming",
            Class::Added => "added",
            Class::Conflict => "conflict",
            Class::Convergent => "convergent",
            Class::Kept => "kept",
        }
    }
}

fn classify(base: Option<&Event>, s: Option<&Event>, d: Option<&Event>) -> Option<Class> {
    let changed = |side: Option<&Event>| side.map(outcome) != base.map(outcome);
    match (base, s, d) {
        (None, Some(_), None) => Some(Class::Added),
        (None, None, Some(_)) => Some(Class::Kept),
        (None, Some(s), Some(d)) => Some(if outcome(s) == outcome(d) {
            Class::Convergent
        } else {
            Class::Conflict
        }),
        (None, None, None) => None,
        (Some(_), Some(s), Some(d)) => match (changed(Some(s)), changed(Some(d))) {
            (false, false) => None,
            (true, false) => Some(Class::Incoming),
            (false, true) => Some(Class::Kept),
            (true, true) if outcome(s) == outcome(d) => Some(Class::Convergent),
            (true, true) => Some(Class::Conflict),
        },
        // Lineages never disappear from a timeline; a side without one has nothing to say.
        (Some(_), _, _) => None,
    }
}

/// Applies `op` to the working copy and keeps it.
fn push(work: &mut World, ops: &mut Vec<Op>, op: Op) -> Result<(), ServiceError> {
    work.apply(work.seq + 1, op.clone())
        .map_err(|e| ServiceError::Internal(format!("merge: {e}")))?;
    ops.push(op);
    Ok(())
}

/// The destination's event of each cause's lineage, so a copied event is caused by what
/// stands in the destination.
fn mapped_causes(source: &History, dest: &History, causes: &[EventId]) -> Vec<EventId> {
    causes
        .iter()
        .map(|c| {
            let lineage = source.get(c).map(|e| e.lineage.clone());
            lineage
                .and_then(|l| dest.head_of(&l))
                .map(|e| e.id.clone())
                .unwrap_or_else(|| c.clone())
        })
        .collect()
}

/// The changed lineages of a merge of one timeline into another, classified against the
/// branch point's base.
pub(super) struct Plan<'w> {
    /// The branch whose creation-time copy of its parent is the base.
    pub base_id: TimelineId,
    /// The base.
    pub base: &'w History,
    /// The source's history.
    pub s: &'w History,
    /// The destination's history.
    pub d: &'w History,
    /// Every lineage either side changed, except those neither changed in effect.
    pub classes: BTreeMap<EventId, Class>,
    /// The source's data entries the destination lacks (guide §3: entries are immutable, so
    /// these are the ones added in the source since the base; they never conflict), in
    /// (timestamp, id) order.
    pub data: Vec<&'w DataEntry>,
}

impl Plan<'_> {
    /// How many lineages are of class `c`.
    pub fn count(&self, c: Class) -> usize {
        self.classes.values().filter(|x| **x == c).count()
    }

    /// The conflicting lineages, in lineage order.
    pub fn conflicts(&self) -> impl Iterator<Item = &EventId> {
        self.classes
            .iter()
            .filter(|(_, c)| **c == Class::Conflict)
            .map(|(l, _)| l)
    }

    /// The base, source and destination events of lineage `l`.
    pub fn sides(&self, l: &EventId) -> (Option<&Event>, Option<&Event>, Option<&Event>) {
        (head(self.base, l), head(self.s, l), head(self.d, l))
    }
}

/// Classifies what merging `src` into `dst` would weigh. The cost grows with the lineages
/// changed since the branch point (the persistent maps' diff skips shared subtrees).
pub(super) fn plan<'w>(
    world: &'w World,
    src: &TimelineId,
    dst: &TimelineId,
) -> Result<Plan<'w>, ServiceError> {
    if src == dst {
        return Err(ServiceError::invalid(
            "destination_timeline_id",
            format!("is the source '{src}' too; name two different timelines"),
        ));
    }
    let s_state = rules::referenced(world, src)?;
    let d_state = rules::referenced(world, dst)?;
    let base_id = base_branch(world, src, dst)?;
    let base = world
        .timelines
        .get(&base_id)
        .and_then(|t| t.base.as_ref())
        .ok_or_else(|| ServiceError::Internal(format!("timeline {base_id} has no base")))?;
    let (s, d) = (&s_state.history, &d_state.history);
    let mut lineages: BTreeSet<EventId> = s.changed_lineages(base);
    lineages.extend(d.changed_lineages(base));
    let mut classes: BTreeMap<EventId, Class> = BTreeMap::new();
    for l in lineages {
        if let Some(c) = classify(head(base, &l), head(s, &l), head(d, &l)) {
            classes.insert(l, c);
        }
    }
    // Both sides share the maps they had at the branch point: the diff visits what changed.
    let data = d_state
        .data
        .diff(&s_state.data)
        .filter_map(|item| match item {
            DiffItem::Add(_, entry) => Some(&**entry),
            _ => None,
        })
        .collect();
    Ok(Plan {
        base_id,
        base,
        s,
        d,
        classes,
        data,
    })
}

/// What a conflict was decided for.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Choice {
    /// The source's outcome.
    Source,
    /// The destination keeps its own.
    Destination,
    /// A new outcome (Custom Merge).
    Custom(String, Instant),
}

/// What a merge writes into its destination.
pub(super) struct Writes {
    /// The ops, in the order they are logged.
    pub ops: Vec<Op>,
    /// What it decided for each lineage.
    pub decisions: Vec<MergeDecision>,
    /// The events it wrote.
    pub written: Vec<WrittenEvent>,
    /// The world with `ops` applied: the paradox check looks at it, so the writes are applied
    /// once.
    pub after: World,
}

/// The writes of a merge into `dst` (in order: changed lineages, then added ones in causal
/// order, then the source's data entries the destination lacks), what it decided for each
/// lineage, the events it wrote, and the world they make. `choose` decides each
/// conflict; `locked` says what to do instead when a fixed point would have to change. An
/// incoming change of a fixed point is left out, or refuses the merge when `strict`.
pub(super) fn writes(
    world: &World,
    ctx: &Ctx<'_>,
    plan: &Plan<'_>,
    dst: &TimelineId,
    choose: &dyn Fn(&EventId) -> Choice,
    (locked, strict): (&str, bool),
) -> Result<Writes, ServiceError> {
    let (s, d) = (plan.s, plan.d);
    let mut work = world.clone();
    let mut ops = Vec::new();
    let mut decisions = Vec::new();
    let mut written = Vec::new();
    for (l, class) in &plan.classes {
        let choice = match class {
            Class::Incoming => Choice::Source,
            Class::Conflict => choose(l),
            _ => continue,
        };
        let (Some(s_head), Some(d_head)) = (head(s, l), head(d, l)) else {
            continue;
        };
        let mut decision = MergeDecision {
            lineage: l.clone(),
            class: class.word().into(),
            decision: "destination".into(),
            source_event: Some(s_head.id.clone()),
            destination_event: Some(d_head.id.clone()),
            written_event: None,
        };
        if choice != Choice::Destination && d_head.fixed_point {
            if *class == Class::Incoming && !strict {
                // Never written: the destination keeps its fixed point.
                decisions.push(decision);
                continue;
            }
            return Err(ServiceError::EventLocked {
                event: d_head.id.to_string(),
                reason: format!(
                    "it is a fixed point in '{dst}', so the merge cannot give it another \
                     outcome; {locked}"
                ),
            });
        }
        match &choice {
            Choice::Destination => {}
            Choice::Source => {
                write_source_outcome(&mut work, &mut ops, ctx, dst, s_head, d_head)?;
                decision.decision = "source".into();
            }
            Choice::Custom(description, time) => {
                decision.decision = "custom".into();
                if (description.as_str(), *time) != outcome(d_head) {
                    let new = new_version(ctx, d_head, description.clone(), *time);
                    push_version(&mut work, &mut ops, ctx, dst, d_head, new)?;
                }
            }
        }
        if choice != Choice::Destination {
            let now = work
                .timelines
                .get(dst)
                .and_then(|t| t.history.head_of(l))
                .map(|e| e.id.clone())
                .ok_or_else(|| ServiceError::Internal(format!("merge lost lineage {l}")))?;
            decision.written_event = Some(now.clone());
            written.push(WrittenEvent {
                lineage: l.clone(),
                event_id: now,
            });
        }
        decisions.push(decision);
    }
    let added: Vec<&EventId> = causal_order(
        s,
        plan.classes
            .iter()
            .filter(|(_, c)| **c == Class::Added)
            .map(|(l, _)| l),
    );
    for l in added {
        let (Some(root), Some(s_head)) = (s.get(l), head(s, l)) else {
            continue;
        };
        let dest_now = &work
            .timelines
            .get(dst)
            .ok_or_else(|| ServiceError::unknown("timeline", dst))?
            .history;
        let mut first = (**root).clone();
        first.causes = mapped_causes(s, dest_now, &root.causes);
        first.superseded_by = None;
        first.supersedes = None;
        first.status = EventStatus::OnSchedule;
        let copy_head = (s_head.id != root.id).then(|| {
            let mut h = s_head.clone();
            h.causes = mapped_causes(s, dest_now, &s_head.causes);
            h
        });
        push(
            &mut work,
            &mut ops,
            Op::AddEvents {
                timeline: dst.clone(),
                events: vec![first],
                at: Some(ctx.now),
            },
        )?;
        if let Some(h) = copy_head {
            push(
                &mut work,
                &mut ops,
                Op::Manipulate {
                    timeline: dst.clone(),
                    old: root.id.clone(),
                    new: h,
                    at: Some(ctx.now),
                },
            )?;
        }
        decisions.push(MergeDecision {
            lineage: l.clone(),
            class: Class::Added.word().into(),
            decision: "source".into(),
            source_event: Some(s_head.id.clone()),
            destination_event: None,
            written_event: Some(s_head.id.clone()),
        });
        written.push(WrittenEvent {
            lineage: l.clone(),
            event_id: s_head.id.clone(),
        });
    }
    if !plan.data.is_empty() {
        push(
            &mut work,
            &mut ops,
            Op::CopyData {
                timeline: dst.clone(),
                entries: plan.data.iter().map(|e| (*e).clone()).collect(),
            },
        )?;
    }
    Ok(Writes {
        ops,
        decisions,
        written,
        after: work,
    })
}

/// The paradoxes the writes would add to `dst`: refused with `safety_check`, listed without it.
pub(super) fn checked(
    world: &World,
    ctx: &Ctx<'_>,
    dst: &TimelineId,
    writes: &Writes,
    safety_check: bool,
) -> Result<Vec<crate::paradox::Paradox>, ServiceError> {
    match rules::refuse_introduced_by(world, &writes.after, ctx, dst) {
        Ok(()) => Ok(Vec::new()),
        Err(ServiceError::ParadoxDetected { paradoxes, .. }) if !safety_check => Ok(paradoxes),
        Err(e) => Err(e),
    }
}

/// The pending merge of `src` into `dst`, if there is one.
pub(super) fn pending_between<'w>(
    world: &'w World,
    src: &TimelineId,
    dst: &TimelineId,
) -> Option<&'w Merge> {
    world.merges.values().map(|m| &**m).find(|m| {
        m.is_pending() && &m.source_timeline_id == src && &m.destination_timeline_id == dst
    })
}

/// Decides a merge: the ops to log (the writes into the destination, then the merge record;
/// none when it is up to date) and the answer. A `manual_review` merge with conflicts writes
/// only its record, pending: nothing lands until every conflict has a resolution. Asked again
/// while it is pending, with `manual_review`, it is completed once no conflict is left open.
pub fn merge(
    world: &World,
    ctx: &Ctx<'_>,
    req: &MergeRequest,
) -> Result<(Vec<Op>, MergeResult), ServiceError> {
    let (src, dst) = (&req.source_timeline_id, &req.destination_timeline_id);
    let plan = plan(world, src, dst)?;
    rules::require_open(&rules::referenced(world, dst)?.meta, ctx.now)?;
    let conflicts = plan.count(Class::Conflict);
    let mut result = MergeResult {
        status: "up_to_date".into(),
        merged_timeline_id: dst.clone(),
        conflicts_resolved: true,
        merge_id: None,
        incoming: plan.count(Class::Incoming),
        added: plan.count(Class::Added),
        conflicts,
        convergent: plan.count(Class::Convergent),
        kept: plan.count(Class::Kept),
        written: Vec::new(),
        data_entries: Vec::new(),
        paradoxes: Vec::new(),
    };
    if let Some(pending) = pending_between(world, src, dst) {
        let open = super::review::open_conflicts(&plan, &pending.resolutions);
        if open.is_empty() && req.conflict_resolution == MergeStrategy::ManualReview {
            // Nothing is left to review (resolved, or the destination changed so that no
            // conflict remains): asking again completes it.
            let done = super::review::complete(
                world,
                ctx,
                pending,
                &plan,
                &pending.resolutions,
                req.safety_check,
            )?;
            result.status = "merged".into();
            result.merge_id = Some(pending.merge_id.clone());
            result.written = done.written;
            result.data_entries = done.data_entries;
            result.paradoxes = done.paradoxes;
            return Ok((done.ops, result));
        }
        let next = if open.is_empty() {
            "it has no open conflict left: merge again with conflict_resolution 'manual_review' \
             to complete it"
                .to_owned()
        } else {
            format!(
                "resolve its {} open conflict(s) ({}; review-conflicts, resolve-conflict)",
                open.len(),
                open.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        return Err(ServiceError::Conflict(format!(
            "merge '{}' of '{src}' into '{dst}' is waiting for review: {next}, or abort it \
             (DELETE /v1/merges/{})",
            pending.merge_id, pending.merge_id
        )));
    }
    let record = |status: &str, decisions: Vec<MergeDecision>, merge_id: MergeId| Op::Merge {
        merge: Merge {
            merge_id,
            source_timeline_id: src.clone(),
            destination_timeline_id: dst.clone(),
            strategy: req.conflict_resolution,
            base_timeline_id: plan.base_id.clone(),
            by: ctx.traveller.clone(),
            at: ctx.now,
            status: status.into(),
            decisions,
            resolutions: Vec::new(),
            completed_by: None,
            completed_at: None,
        },
    };
    if req.conflict_resolution == MergeStrategy::ManualReview && conflicts > 0 {
        let merge_id = MergeId::from_ulid((ctx.mint)());
        let decisions = pending_decisions(&plan);
        result.status = PENDING.into();
        result.conflicts_resolved = false;
        result.merge_id = Some(merge_id.clone());
        return Ok((vec![record(PENDING, decisions, merge_id)], result));
    }
    let take_source = req.conflict_resolution == MergeStrategy::SourceOverwrite;
    let decided = writes(
        world,
        ctx,
        &plan,
        dst,
        &|_| {
            if take_source {
                Choice::Source
            } else {
                Choice::Destination
            }
        },
        (
            "merge with conflict_resolution 'destination_preserve'",
            take_source,
        ),
    )?;
    if decided.ops.is_empty() {
        return Ok((Vec::new(), result));
    }
    result.paradoxes = checked(world, ctx, dst, &decided, req.safety_check)?;
    result.data_entries = plan.data.iter().map(|e| e.data_id.clone()).collect();
    let Writes {
        mut ops,
        decisions,
        written,
        ..
    } = decided;
    result.written = written;
    let merge_id = MergeId::from_ulid((ctx.mint)());
    ops.push(record("merged", decisions, merge_id.clone()));
    result.status = "merged".into();
    result.merge_id = Some(merge_id);
    Ok((ops, result))
}

/// The status of a merge waiting for resolutions.
pub(super) const PENDING: &str = "pending_review";

/// A pending merge's record of what it weighed: every lineage but the kept ones, decided
/// `pending`.
fn pending_decisions(plan: &Plan<'_>) -> Vec<MergeDecision> {
    plan.classes
        .iter()
        .filter(|(_, c)| !matches!(c, Class::Kept | Class::Convergent))
        .map(|(l, c)| {
            let (_, s, d) = plan.sides(l);
            MergeDecision {
                lineage: l.clone(),
                class: c.word().into(),
                decision: "pending".into(),
                source_event: s.map(|e| e.id.clone()),
                destination_event: d.map(|e| e.id.clone()),
                written_event: None,
            }
        })
        .collect()
}

/// Makes `new` the destination's version of `d_head`'s lineage.
fn push_version(
    work: &mut World,
    ops: &mut Vec<Op>,
    ctx: &Ctx<'_>,
    dst: &TimelineId,
    d_head: &Event,
    new: Event,
) -> Result<(), ServiceError> {
    push(
        work,
        ops,
        Op::Manipulate {
            timeline: dst.clone(),
            old: d_head.id.clone(),
            new,
            at: Some(ctx.now),
        },
    )
}

/// A new version of `d_head` with another outcome, by the merging traveller.
fn new_version(ctx: &Ctx<'_>, d_head: &Event, description: String, time: Instant) -> Event {
    Event {
        id: EventId::from_ulid((ctx.mint)()),
        description,
        time,
        location: d_head.location.clone(),
        causes: d_head.causes.clone(),
        fixed_point: false,
        status: EventStatus::Manipulated,
        supersedes: Some(d_head.id.clone()),
        superseded_by: None,
        lineage: d_head.lineage.clone(),
        author: Some(ctx.traveller.clone()),
    }
}

/// Gives the destination's lineage the source's outcome: reverts back to it when it is an
/// earlier version there, otherwise a new version made by the merging traveller.
fn write_source_outcome(
    work: &mut World,
    ops: &mut Vec<Op>,
    ctx: &Ctx<'_>,
    dst: &TimelineId,
    s_head: &Event,
    d_head: &Event,
) -> Result<(), ServiceError> {
    let history = &work
        .timelines
        .get(dst)
        .ok_or_else(|| ServiceError::unknown("timeline", dst))?
        .history;
    // The chain of versions back from the destination's head.
    let mut chain = vec![d_head.id.clone()];
    let mut at = d_head.supersedes.clone();
    let mut steps = None;
    while let Some(prev) = at {
        let Some(e) = history.get(&prev) else { break };
        if outcome(e) == outcome(s_head) {
            steps = Some(chain.len());
            break;
        }
        chain.push(prev.clone());
        at = e.supersedes.clone();
    }
    match steps {
        Some(n) => {
            for head in chain.into_iter().take(n) {
                push(
                    work,
                    ops,
                    Op::Revert {
                        timeline: dst.clone(),
                        head,
                        at: Some(ctx.now),
                    },
                )?;
            }
        }
        None => {
            let new = new_version(ctx, d_head, s_head.description.clone(), s_head.time);
            push_version(work, ops, ctx, dst, d_head, new)?;
        }
    }
    Ok(())
}

/// The added lineages with each one's causes among them first.
fn causal_order<'a>(s: &History, added: impl Iterator<Item = &'a EventId>) -> Vec<&'a EventId> {
    let added: Vec<&EventId> = added.collect();
    let set: BTreeSet<&EventId> = added.iter().copied().collect();
    let mut done: BTreeSet<&EventId> = BTreeSet::new();
    let mut out = Vec::with_capacity(added.len());
    fn visit<'a>(
        l: &'a EventId,
        s: &History,
        set: &BTreeSet<&'a EventId>,
        done: &mut BTreeSet<&'a EventId>,
        out: &mut Vec<&'a EventId>,
    ) {
        if !done.insert(l) {
            return;
        }
        if let Some(h) = s.head_of(l) {
            for c in &h.causes {
                let cl = s.get(c).map(|e| e.lineage.clone());
                if let Some(cl) = cl
                    && let Some(member) = set.get(&cl)
                {
                    visit(member, s, set, done, out);
                }
            }
        }
        out.push(l);
    }
    for l in &added {
        visit(l, s, &set, &mut done, &mut out);
    }
    out
}

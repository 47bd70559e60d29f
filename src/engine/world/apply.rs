//! How each logged operation changes the state: [`World::apply`] checks the record's place in
//! the log and hands the operation to its own method here, one per [`Op`]. An `Err` names what
//! the log holds that cannot be (a corrupt log); everything else was validated before it was
//! logged.

use std::sync::Arc;

use imbl::{HashMap, OrdMap};

use super::{Op, TimelineState, World};
use crate::automation::{Due, Job, JobStatus, LogRecord, ScriptRecord, ScriptStatus};
use crate::model::{
    AnchorRecord, AnchorStatus, Event, EventId, History, Instant, Item, ItemId, Journey, MergeId,
    Position, ScheduleId, ScriptId, Timeline, TimelineId, Traveller, Whereabouts,
};
use crate::service::{AccessControl, Isolation, LogEntry, Merge, ReadStaleness, Restriction};

/// What a record that cannot be applied says.
type Applied = Result<(), String>;

impl World {
    /// Folds operation `op` of record `seq` (already checked to follow the last one) into the
    /// state.
    pub(super) fn apply_op(&mut self, seq: u64, op: Op) -> Applied {
        match op {
            Op::CreateTimeline { timeline } => self.create_timeline(timeline)?,
            Op::DeleteTimeline { id } => self.delete_timeline(&id),
            Op::AddEvents {
                timeline,
                events,
                at,
            } => self.add_events(&timeline, events, at)?,
            Op::Manipulate {
                timeline,
                old,
                new,
                at,
            } => self.manipulate(&timeline, &old, new, at)?,
            Op::Revert { timeline, head, at } => self.revert(&timeline, &head, at)?,
            Op::RegisterItem { item } => self.register_item(item),
            Op::SetAnchor { anchor } => self.set_anchor(anchor),
            Op::AdjustAnchor { id, environment } => {
                let anchor = self
                    .anchors
                    .get(&id)
                    .ok_or_else(|| format!("unknown anchor {id}"))?;
                let mut adjusted = (**anchor).clone();
                adjusted.details.environment = Some(environment);
                self.anchors.insert(id, Arc::new(adjusted));
            }
            Op::DeleteAnchor { id } => {
                let anchor = self
                    .anchors
                    .remove(&id)
                    .ok_or_else(|| format!("unknown anchor {id}"))?;
                self.owned_by(&anchor.owner).anchors.remove(&id);
            }
            Op::Travel { journey } => self.travel(journey),
            Op::Pause {
                traveller,
                time,
                at,
            } => self.pause(traveller, time, at),
            Op::Resume { traveller, at } => self.resume(traveller, at),
            Op::CreateScript { script } => self.create_script(script),
            Op::DeleteScript { id } => {
                self.scripts.remove(&id);
            }
            Op::CreateJob { job } => self.create_job(job),
            Op::CancelJob { id } => self.set_job_status(&id, JobStatus::Cancelled),
            Op::Merge { merge } => self.put_merge(merge),
            Op::Ran {
                due,
                succeeded,
                entries,
            } => self.ran(due, succeeded, entries),
            Op::StoreData { entry } => {
                let timeline = entry.timeline_id.clone();
                self.copy_data(&timeline, vec![entry])?;
            }
            Op::CopyData { timeline, entries } => self.copy_data(&timeline, entries)?,
            Op::SetReadStaleness { setting } => self.set_read_staleness(setting),
            Op::ResolveConflict { merge, resolution } => self.update_merge(&merge, |m| {
                m.resolutions.retain(|r| r.lineage != resolution.lineage);
                m.resolutions.push(resolution);
            })?,
            Op::MergeCompleted {
                merge,
                decisions,
                at,
                by,
            } => self.update_merge(&merge, |m| {
                m.status = "merged".into();
                m.decisions = decisions;
                m.completed_at = Some(at);
                m.completed_by = by;
            })?,
            Op::MergeAborted { merge, .. } => {
                self.update_merge(&merge, |m| m.status = "aborted".into())?;
            }
            Op::Isolate { isolation } => self.isolate(isolation)?,
            Op::LiftIsolation { id } => self.lift_isolation(&id)?,
            Op::SetAccessControl {
                timeline,
                access_control,
            } => self.set_access_control(timeline, access_control)?,
            Op::RestrictTraveller { restriction } => self.restrict(restriction),
            Op::ScanResult {
                head_seq,
                findings,
                not_listed,
                full,
                at,
            } => self.scans.record(head_seq, findings, not_listed, full, at),
            Op::AccessSummary { counters, dropped } => {
                self.apply_access_summary(counters, dropped);
            }
            Op::Remember {
                traveller,
                key,
                fingerprint,
                answer,
                at,
            } => self.keys.remember(
                traveller,
                key,
                super::Remembered {
                    fingerprint,
                    answer,
                    at,
                    seq,
                },
            ),
        }
        Ok(())
    }

    /// A new timeline: a branch starts from its parent's events, data, isolations and
    /// access-control list (shared, not copied).
    fn create_timeline(&mut self, timeline: Timeline) -> Applied {
        let (history, touched, base, data, isolated) = match &timeline.parent {
            Some(parent) => {
                let parent = self
                    .timelines
                    .get(parent)
                    .ok_or_else(|| format!("unknown parent timeline {parent}"))?;
                (
                    parent.history.clone(),
                    parent.touched.clone(),
                    Some(parent.history.clone()),
                    parent.data.clone(),
                    parent.isolated.clone(),
                )
            }
            None => (
                History::default(),
                HashMap::new(),
                None,
                OrdMap::new(),
                Default::default(),
            ),
        };
        let inherited = timeline
            .parent
            .as_ref()
            .and_then(|p| self.acls.get(p))
            .and_then(|acl| inherited(acl, &timeline));
        if let Some(acl) = inherited {
            self.acls.insert(timeline.id.clone(), acl);
        }
        self.timelines.insert(
            timeline.id.clone(),
            TimelineState {
                meta: Arc::new(timeline),
                history,
                touched,
                base,
                data,
                isolated,
            },
        );
        Ok(())
    }

    /// A deleted timeline: with its list, its data's index entries and its isolations.
    fn delete_timeline(&mut self, id: &TimelineId) {
        crate::metrics::forget_timeline(id);
        self.acls.remove(id);
        if let Some(state) = self.timelines.remove(id) {
            super::data::forget_timeline(&mut self.data_index, id, &state.data, &self.timelines);
        }
        let gone: Vec<_> = self
            .isolations
            .values()
            .filter(|i| &i.timeline_id == id)
            .map(|i| i.isolation_id.clone())
            .collect();
        for i in gone {
            self.isolations.remove(&i);
        }
    }

    /// The state of `timeline`, which the log names.
    fn timeline_mut(&mut self, timeline: &TimelineId) -> Result<&mut TimelineState, String> {
        self.timelines
            .get_mut(timeline)
            .ok_or_else(|| format!("unknown timeline {timeline}"))
    }

    /// Events added to `timeline` (`at`: when a traveller or automation added them).
    fn add_events(
        &mut self,
        timeline: &TimelineId,
        events: Vec<Event>,
        at: Option<Instant>,
    ) -> Applied {
        let state = self.timeline_mut(timeline)?;
        for event in events {
            if let Some(at) = at {
                state.touched.insert(event.id.clone(), at);
            }
            state.history.insert(event);
        }
        Ok(())
    }

    /// `old` replaced by `new` in its lineage; scripts watching the lineage fire.
    fn manipulate(
        &mut self,
        timeline: &TimelineId,
        old: &EventId,
        new: Event,
        at: Option<Instant>,
    ) -> Applied {
        let state = self.timeline_mut(timeline)?;
        let Some(lineage) = state.history.current(old).map(|e| e.lineage.clone()) else {
            return Err(format!("event {old} is not current in {timeline}"));
        };
        if let Some(at) = at {
            state.touched.insert(new.id.clone(), at);
        }
        state.history.supersede(old, new);
        self.trigger_scripts(timeline, &lineage);
        Ok(())
    }

    /// The lineage of `head` back to the version before it; scripts watching it fire.
    fn revert(&mut self, timeline: &TimelineId, head: &EventId, at: Option<Instant>) -> Applied {
        let state = self.timeline_mut(timeline)?;
        let restored = state
            .history
            .revert(head)
            .ok_or_else(|| format!("event {head} cannot be reverted"))?;
        if let Some(at) = at {
            state.touched.insert(restored.clone(), at);
        }
        let lineage = state.history.get(&restored).map(|e| e.lineage.clone());
        if let Some(lineage) = lineage {
            self.trigger_scripts(timeline, &lineage);
        }
        Ok(())
    }

    fn register_item(&mut self, item: Item) {
        self.owned_by(&item.owner).items.insert(item.id.clone());
        self.put_item(item);
    }

    fn set_anchor(&mut self, anchor: AnchorRecord) {
        self.owned_by(&anchor.owner)
            .anchors
            .insert(anchor.id.clone());
        self.anchors.insert(anchor.id.clone(), Arc::new(anchor));
    }

    /// A traveller's clock paused at `time` (their time in their timeline), from `at`.
    fn pause(&mut self, traveller: Traveller, time: Instant, at: Instant) {
        let mut position = self.position_of(&traveller, at);
        position.arrival_time = time;
        position.arrived_at = at;
        position.paused = true;
        self.set_position(traveller, position);
    }

    /// A traveller's clock running again from where it stood, from `at`.
    fn resume(&mut self, traveller: Traveller, at: Instant) {
        let mut position = self.position_of(&traveller, at);
        position.arrived_at = at;
        position.paused = false;
        self.set_position(traveller, position);
    }

    fn create_script(&mut self, script: ScriptRecord) {
        self.scripts.insert(script.id.clone(), Arc::new(script));
    }

    fn create_job(&mut self, job: Job) {
        self.jobs.insert(job.id.clone(), Arc::new(job));
    }

    /// Data entries put in `timeline` (stored there, or copied by a merge): the index names
    /// where each was stored, whoever holds a copy.
    fn copy_data(
        &mut self,
        timeline: &TimelineId,
        entries: Vec<crate::service::DataEntry>,
    ) -> Applied {
        let mut index = Vec::with_capacity(entries.len());
        let state = self.timeline_mut(timeline)?;
        for entry in entries {
            index.push((
                entry.data_id.clone(),
                (entry.timeline_id.clone(), entry.timestamp),
            ));
            state
                .data
                .insert((entry.timestamp, entry.data_id.clone()), Arc::new(entry));
        }
        self.data_index.extend(index);
        Ok(())
    }

    fn set_read_staleness(&mut self, setting: ReadStaleness) {
        self.read_staleness
            .insert(setting.traveller.clone(), setting);
    }

    /// An isolation in force: its lineages marked in its timeline.
    fn isolate(&mut self, isolation: Isolation) -> Applied {
        let state = self.timeline_mut(&isolation.timeline_id)?;
        for lineage in &isolation.members {
            state
                .isolated
                .insert(lineage.clone(), isolation.isolation_id.clone());
        }
        self.isolations
            .insert(isolation.isolation_id.clone(), Arc::new(isolation));
        Ok(())
    }

    /// An isolation lifted: its lineages no longer marked (unless another isolation holds
    /// them).
    fn lift_isolation(&mut self, id: &crate::model::IsolationId) -> Applied {
        let isolation = self
            .isolations
            .remove(id)
            .ok_or_else(|| format!("unknown isolation {id}"))?;
        if let Some(state) = self.timelines.get_mut(&isolation.timeline_id) {
            for lineage in &isolation.members {
                if state.isolated.get(lineage) == Some(id) {
                    state.isolated.remove(lineage);
                }
            }
        }
        Ok(())
    }

    /// A timeline's access-control list set, or removed (`None`).
    fn set_access_control(
        &mut self,
        timeline: TimelineId,
        access_control: Option<AccessControl>,
    ) -> Applied {
        if !self.timelines.contains_key(&timeline) {
            return Err(format!("unknown timeline {timeline}"));
        }
        match access_control {
            Some(acl) => self.acls.insert(timeline, Arc::new(acl)),
            None => self.acls.remove(&timeline),
        };
        Ok(())
    }

    /// A restriction put on a traveller; `unrestricted` lifts theirs.
    fn restrict(&mut self, restriction: Restriction) {
        if restriction.level == crate::service::RestrictionLevel::Unrestricted {
            self.restrictions.remove(&restriction.user_id);
        } else {
            self.restrictions
                .insert(restriction.user_id.clone(), Arc::new(restriction));
        }
    }

    /// Changes a recorded merge.
    fn update_merge(&mut self, id: &MergeId, change: impl FnOnce(&mut Merge)) -> Applied {
        let merge = self
            .merges
            .get(id)
            .ok_or_else(|| format!("unknown merge {id}"))?;
        let mut changed = (**merge).clone();
        change(&mut changed);
        self.put_merge(changed);
        Ok(())
    }

    /// Active scripts watching `lineage` in `timeline` fire on the next scheduler run.
    fn trigger_scripts(&mut self, timeline: &TimelineId, lineage: &EventId) {
        let watching: Vec<ScriptId> = self
            .scripts
            .values()
            .filter(|s| {
                s.status == ScriptStatus::Active
                    && &s.timeline == timeline
                    && self
                        .timelines
                        .get(timeline)
                        .and_then(|t| t.history.get(&s.trigger))
                        .is_some_and(|e| &e.lineage == lineage)
            })
            .map(|s| s.id.clone())
            .collect();
        for id in watching {
            if let Some(script) = self.scripts.get(&id) {
                let mut fired = (**script).clone();
                fired.triggered = true;
                self.scripts.insert(id, Arc::new(fired));
            }
        }
    }

    /// A job's status changed.
    fn set_job_status(&mut self, id: &ScheduleId, status: JobStatus) {
        if let Some(job) = self.jobs.get(id) {
            let mut changed = (**job).clone();
            changed.status = status;
            self.jobs.insert(id.clone(), Arc::new(changed));
        }
    }

    /// A script or job ran (or failed): its status, and what it did in its owner's log.
    fn ran(&mut self, due: Due, succeeded: bool, entries: Vec<LogEntry>) {
        let owner = match &due {
            Due::Script(id) => self.scripts.get(id).map(|s| s.owner.clone()),
            Due::Job(id) => self.jobs.get(id).map(|j| j.owner.clone()),
        };
        match &due {
            Due::Script(id) => {
                if let Some(script) = self.scripts.get(id) {
                    let mut ran = (**script).clone();
                    ran.triggered = false;
                    ran.status = if succeeded {
                        ScriptStatus::Fired
                    } else {
                        ScriptStatus::Failed
                    };
                    self.scripts.insert(id.clone(), Arc::new(ran));
                }
            }
            Due::Job(id) => self.set_job_status(
                id,
                if succeeded {
                    JobStatus::Done
                } else {
                    JobStatus::Failed
                },
            ),
        }
        if let Some(owner) = owner {
            for entry in entries {
                self.log_action(LogRecord {
                    owner: owner.clone(),
                    entry,
                });
            }
        }
    }

    /// A journey: what the traveller carries comes along, what they leave stays where they
    /// left it, a returned-to anchor is spent, and the traveller is where it arrived.
    fn travel(&mut self, mut journey: Journey) {
        journey
            .kind
            .get_or_insert_with(|| crate::model::JourneyKind::derived(journey.anchor.as_ref()));
        let owner = &journey.traveller;
        let ids: Vec<ItemId> = self.items_of(owner).map(|i| i.id.clone()).collect();
        for id in ids {
            let Some(item) = self.items.get(&id) else {
                continue;
            };
            let mut item = (**item).clone();
            if journey.items_transported.contains(&id) {
                let leaves_origin = item.origin_timeline == journey.from_timeline
                    && journey.to_timeline != journey.from_timeline;
                if item.taken_at.is_none() && leaves_origin {
                    item.taken_at = Some(journey.from_time);
                }
                item.whereabouts = Whereabouts::Carried;
            } else if item.whereabouts == Whereabouts::Carried {
                item.whereabouts = Whereabouts::Left {
                    timeline: journey.from_timeline.clone(),
                    time: journey.from_time,
                };
            } else {
                continue;
            }
            self.put_item(item);
        }
        if let Some(anchor_id) = &journey.anchor
            && let Some(anchor) = self.anchors.get(anchor_id)
        {
            let mut spent = (**anchor).clone();
            spent.status = AnchorStatus::Spent;
            self.anchors.insert(anchor_id.clone(), Arc::new(spent));
        }
        // A paused traveller arrives paused: their time stands at the arrival time, and the
        // pause still dates from when it began (a resume says how long it lasted).
        let paused_since = self
            .positions
            .get(owner)
            .filter(|p| p.paused)
            .map(|p| p.arrived_at);
        self.set_position(
            owner.clone(),
            Position {
                timeline: journey.to_timeline.clone(),
                arrival_time: journey.arrival_time,
                arrived_at: paused_since.unwrap_or(journey.departed_at),
                paused: paused_since.is_some(),
                location: journey.location.clone(),
            },
        );
        let traveller = journey.traveller.clone();
        self.owned_by(&traveller)
            .journeys
            .insert(journey.id.clone());
        self.journeys.insert(journey.id.clone(), Arc::new(journey));
    }
}

/// A branch's list: its base's, with its creator moved to `admin` (they made it). A name sits
/// on one list, as everywhere else: the creator is taken off `read` and `write`.
fn inherited(base: &AccessControl, branch: &crate::model::Timeline) -> Option<Arc<AccessControl>> {
    let creator = branch.created_by.clone()?;
    let mut permissions = base.permissions.clone();
    permissions.read.retain(|name| *name != creator);
    permissions.write.retain(|name| *name != creator);
    if !permissions.admin.contains(&creator) {
        permissions.admin.push(creator.clone());
    }
    Some(Arc::new(AccessControl {
        timeline_id: branch.id.clone(),
        permissions,
        set_by: creator,
        at: branch.created_at,
    }))
}

//! `timelines export` and `timelines import` on the engine: a timeline as a world file (see
//! [`crate::service::WorldFile`]), and a world file checked and turned into one write.
//!
//! An import is decided like any write, against the latest state under the writer lock: every
//! op it makes is applied to a copy of the world as it goes, so each check sees what the file
//! made so far, and the ops are appended in one batch or not at all. Every refusal names the
//! file's line and the field at fault (`line 14, timelines[0].events[3].time: ...`).

use std::collections::{HashMap, HashSet};
use std::fmt;

use super::rules::{self, Ctx};
use super::world::{Op, World};
use crate::error::ServiceError;
use crate::model::{
    Event, EventId, EventStatus, MergeId, Timeline, TimelineId, Window, opt_in_range,
};
use crate::service::{
    ImportProgress, ImportReport, ImportedTimeline, Remapped, WORLD_FORMAT, WORLD_VERSION,
    WorldEvent, WorldFile, WorldStep, WorldStepManipulate, WorldStepPendingMerge, WorldStepRevert,
    WorldTimeline,
};

/// Events per logged `AddEvents` record: a large import is many records of one batch.
const EVENTS_PER_RECORD: usize = 1000;

/// How often (in events) an import reports progress.
const PROGRESS_EVERY: usize = 1000;

/// A timeline of the store as a world file: every version of its events (a branch's inherited
/// ones too) in time order, and no parent.
pub fn export(world: &World, id: &TimelineId) -> Result<WorldFile, ServiceError> {
    let state = rules::addressed(world, id)?;
    let meta = &state.meta;
    let mut events: Vec<WorldEvent> = state
        .history
        .iter_all()
        .map(|e| WorldEvent {
            id: e.id.clone(),
            description: e.description.clone(),
            time: e.time,
            location: e.location.clone(),
            causes: e.causes.clone(),
            fixed_point: e.fixed_point,
            status: e.status,
            supersedes: e.supersedes.clone(),
            superseded_by: e.superseded_by.clone(),
        })
        .collect();
    events.sort_by(|a, b| (a.time, &a.id).cmp(&(b.time, &b.id)));
    Ok(WorldFile {
        format: Some(WORLD_FORMAT.into()),
        version: Some(WORLD_VERSION),
        timelines: vec![WorldTimeline {
            id: meta.id.clone(),
            name: meta.name.clone(),
            description: meta.description.clone(),
            variation: meta.variation.clone(),
            parent: None,
            window: Some(meta.window),
            destination_time: meta.destination_time,
            events,
            manipulations: Vec::new(),
        }],
        steps: Vec::new(),
    })
}

/// One step of a path into the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    /// A member of an object.
    Key(String),
    /// An element of an array.
    Index(usize),
}

/// Where in the file: `timelines[0].events[3].time`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JsonPath(Vec<Seg>);

impl JsonPath {
    fn key(&self, key: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Key(key.into()));
        p
    }

    fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Index(i));
        p
    }

    fn at(&self, key: &str, i: usize) -> Self {
        self.key(key).index(i)
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("the file");
        }
        for (n, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if n == 0 => f.write_str(k)?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// Parses a world file's text, naming the line and field of the first thing wrong.
pub fn parse(text: &str) -> Result<WorldFile, ServiceError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let file: WorldFile = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let line = inner.line();
        let field = if path == "." || path.is_empty() {
            "the file".to_owned()
        } else {
            path
        };
        // serde_json's message ends with its own "at line L column C".
        let message = inner.to_string();
        let message = match message.rfind(" at line ") {
            Some(cut) => format!("{} (column {})", &message[..cut], inner.column()),
            None => message,
        };
        let message = if field.ends_with("time") && inner.is_data() {
            format!("not an RFC 3339 date-time such as 1889-03-10T23:50:00Z: {message}")
        } else {
            message
        };
        ServiceError::invalid(format!("line {line}, {field}"), message)
    })?;
    de.end().map_err(|e| {
        ServiceError::invalid(
            format!("line {}, the file", e.line()),
            "text follows the end of the JSON document",
        )
    })?;
    Ok(file)
}

/// The 1-based line on which the value at `path` starts in `text` (the file's first line when
/// it cannot be found).
pub fn line_of(text: &str, path: &JsonPath) -> usize {
    let bytes = text.as_bytes();
    let offset = locate(bytes, &path.0).unwrap_or(0);
    1 + bytes[..offset.min(bytes.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
}

/// The offset of the value at `path`, walking the (already parsed, so valid) JSON.
fn locate(bytes: &[u8], path: &[Seg]) -> Option<usize> {
    let mut pos = skip_ws(bytes, 0);
    for seg in path {
        match (seg, bytes.get(pos)?) {
            (Seg::Key(key), b'{') => {
                pos = skip_ws(bytes, pos + 1);
                loop {
                    if bytes.get(pos)? == &b'}' {
                        return None;
                    }
                    let end = skip_string(bytes, pos)?;
                    let name: String = serde_json::from_slice(&bytes[pos..end]).ok()?;
                    pos = skip_ws(bytes, end);
                    pos = skip_ws(bytes, pos + 1); // the ':'
                    if name == *key {
                        break;
                    }
                    pos = skip_ws(bytes, skip_value(bytes, pos)?);
                    if bytes.get(pos)? == &b',' {
                        pos = skip_ws(bytes, pos + 1);
                    }
                }
            }
            (Seg::Index(index), b'[') => {
                pos = skip_ws(bytes, pos + 1);
                for _ in 0..*index {
                    if bytes.get(pos)? == &b']' {
                        return None;
                    }
                    pos = skip_ws(bytes, skip_value(bytes, pos)?);
                    if bytes.get(pos)? == &b',' {
                        pos = skip_ws(bytes, pos + 1);
                    }
                }
                if bytes.get(pos)? == &b']' {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(pos)
}

fn skip_ws(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos).is_some_and(u8::is_ascii_whitespace) {
        pos += 1;
    }
    pos
}

/// The offset just after the string starting at `pos`.
fn skip_string(bytes: &[u8], pos: usize) -> Option<usize> {
    let mut i = pos + 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The offset just after the value starting at `pos`.
fn skip_value(bytes: &[u8], pos: usize) -> Option<usize> {
    match bytes.get(pos)? {
        b'"' => skip_string(bytes, pos),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = pos;
            loop {
                match bytes.get(i)? {
                    b'"' => {
                        i = skip_string(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = pos;
            while bytes
                .get(i)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
            {
                i += 1;
            }
            Some(i)
        }
    }
}

/// What an import is decided with besides the world.
pub struct ImportInput<'a> {
    /// The file as parsed.
    pub file: &'a WorldFile,
    /// Its text, for line numbers.
    pub text: &'a str,
    /// Window of timelines that give none.
    pub default_window: Window,
    /// Refuse paradoxes a created timeline would hold.
    pub safety_check: bool,
    /// Told as events are checked.
    pub progress: Option<&'a ImportProgress>,
}

/// The ops that create the file's timelines on `world`, and the report: refused whole, with
/// the line and field at fault, on anything wrong.
pub fn decide(
    world: &World,
    ctx: &Ctx<'_>,
    input: &ImportInput<'_>,
) -> Result<(Vec<Op>, ImportReport), ServiceError> {
    let mut import = Import {
        scratch: world.clone(),
        ctx,
        input,
        ops: Vec::new(),
        timelines: HashMap::new(),
        created: Vec::new(),
        events: HashMap::new(),
        remapped: Vec::new(),
        done: 0,
        total: input
            .file
            .timelines
            .iter()
            .chain(input.file.steps.iter().filter_map(|s| match s {
                WorldStep::Branch(tl) => Some(tl),
                _ => None,
            }))
            .map(|tl| tl.events.len() + tl.manipulations.len())
            .sum(),
    };
    import.run()?;
    let report = import.finish()?;
    Ok((import.ops, report))
}

/// A timeline the import created.
struct Created {
    id: TimelineId,
    from: TimelineId,
    name: String,
    parent: Option<TimelineId>,
    path: JsonPath,
    events: usize,
}

/// An import being decided.
struct Import<'a> {
    /// The world with every op so far applied.
    scratch: World,
    ctx: &'a Ctx<'a>,
    input: &'a ImportInput<'a>,
    ops: Vec<Op>,
    /// File id -> id here, of the timelines created.
    timelines: HashMap<TimelineId, TimelineId>,
    created: Vec<Created>,
    /// Per timeline created (its id here): the file's event ids -> ids here, and where each
    /// event is in the file.
    events: HashMap<TimelineId, HashMap<EventId, (EventId, JsonPath)>>,
    remapped: Vec<Remapped>,
    done: usize,
    total: usize,
}

impl Import<'_> {
    /// A refusal at `path`.
    fn fault(&self, path: &JsonPath, message: impl Into<String>) -> ServiceError {
        ServiceError::invalid(
            format!("line {}, {path}", line_of(self.input.text, path)),
            message,
        )
    }

    /// A domain check's refusal, moved to `path` in the file.
    fn at<T>(&self, path: &JsonPath, checked: Result<T, ServiceError>) -> Result<T, ServiceError> {
        checked.map_err(|e| match e {
            ServiceError::InvalidInput { message, .. } => self.fault(path, message),
            e => self.fault(path, e.to_string()),
        })
    }

    fn apply(&mut self, op: Op) -> Result<(), ServiceError> {
        self.scratch
            .apply(self.scratch.seq + 1, op.clone())
            .map_err(|e| ServiceError::Internal(format!("import: {e}")))?;
        self.ops.push(op);
        Ok(())
    }

    fn advance(&mut self, by: usize) {
        let before = self.done / PROGRESS_EVERY;
        self.done += by;
        if let Some(progress) = self.input.progress
            && (self.done / PROGRESS_EVERY != before || self.done == self.total)
        {
            progress(self.done as u64, self.total as u64);
        }
    }

    fn run(&mut self) -> Result<(), ServiceError> {
        let file = self.input.file;
        let root = JsonPath::default();
        if let Some(format) = &file.format
            && format != WORLD_FORMAT
        {
            return Err(self.fault(
                &root.key("format"),
                format!("'{format}' is not a world file's format; expected '{WORLD_FORMAT}'"),
            ));
        }
        if let Some(version) = file.version
            && version != WORLD_VERSION
        {
            return Err(self.fault(
                &root.key("version"),
                format!(
                    "this chronoscope reads version {WORLD_VERSION} of the format, not {version}"
                ),
            ));
        }
        if file.timelines.is_empty() {
            return Err(self.fault(
                &root.key("timelines"),
                "holds no timeline: nothing to import",
            ));
        }
        for (i, tl) in file.timelines.iter().enumerate() {
            self.timeline(tl, &root.at("timelines", i))?;
        }
        for (k, step) in file.steps.iter().enumerate() {
            let path = root.at("steps", k);
            match step {
                WorldStep::Branch(tl) => self.timeline(tl, &path.key("branch"))?,
                WorldStep::Manipulate(WorldStepManipulate {
                    timeline,
                    event_id,
                    new_id,
                    description,
                    time,
                }) => {
                    let path = path.key("manipulate");
                    let here = self.own(timeline, &path.key("timeline"))?;
                    let change = Change {
                        event_id,
                        new_id,
                        description,
                        time: *time,
                        reverted: false,
                    };
                    self.manipulate(&here, &change, &path)?;
                }
                WorldStep::Revert(WorldStepRevert { timeline, head }) => {
                    let path = path.key("revert");
                    let here = self.own(timeline, &path.key("timeline"))?;
                    let head = self.event_here(&here, head);
                    let (op, _, _) = self.at(
                        &path.key("head"),
                        rules::revert(&self.scratch, self.ctx, &here, &head),
                    )?;
                    self.apply(op)?;
                }
                WorldStep::PendingMerge(WorldStepPendingMerge {
                    id,
                    source,
                    destination,
                    by,
                }) => {
                    let path = path.key("pending_merge");
                    let source = self.own(source, &path.key("source"))?;
                    let destination = self.own(destination, &path.key("destination"))?;
                    if !self.descends(&source, &destination) {
                        return Err(self.fault(
                            &path.key("source"),
                            "a pending merge's source is a branch of its destination \
                             (or a branch of one of its branches)",
                        ));
                    }
                    let merge_id = if self.scratch.merges.contains_key(id) {
                        let new = MergeId::from_ulid((self.ctx.mint)());
                        self.remap("merge", None, id.as_str(), new.as_str());
                        new
                    } else {
                        id.clone()
                    };
                    self.apply(Op::Merge {
                        merge: crate::service::Merge {
                            merge_id,
                            base_timeline_id: source.clone(),
                            source_timeline_id: source,
                            destination_timeline_id: destination,
                            strategy: crate::service::MergeStrategy::ManualReview,
                            by: by.clone(),
                            at: self.ctx.now,
                            status: "pending_review".into(),
                            decisions: Vec::new(),
                            resolutions: Vec::new(),
                            completed_by: None,
                            completed_at: None,
                        },
                    })?;
                }
            }
        }
        Ok(())
    }

    fn remap(&mut self, kind: &str, timeline: Option<&TimelineId>, from: &str, to: &str) {
        self.remapped.push(Remapped {
            kind: kind.into(),
            timeline: timeline.cloned(),
            from: from.into(),
            to: to.into(),
        });
    }

    /// A timeline the import created, by its id in the file: steps change only those.
    fn own(&self, id: &TimelineId, path: &JsonPath) -> Result<TimelineId, ServiceError> {
        self.timelines.get(id).cloned().ok_or_else(|| {
            self.fault(
                path,
                format!(
                    "no timeline '{id}' earlier in the file: an import changes only the \
                     timelines it creates"
                ),
            )
        })
    }

    /// Whether `timeline` branches, directly or not, from `ancestor`.
    fn descends(&self, timeline: &TimelineId, ancestor: &TimelineId) -> bool {
        let mut at = self.scratch.timelines.get(timeline);
        for _ in 0..=self.scratch.timelines.len() {
            match at.and_then(|t| t.meta.parent.as_ref()) {
                Some(parent) if parent == ancestor => return true,
                Some(parent) => at = self.scratch.timelines.get(parent),
                None => return false,
            }
        }
        false
    }

    /// An event named in a created timeline: the file's own event (by its id here), else the
    /// id as given (an inherited event).
    fn event_here(&self, timeline: &TimelineId, id: &EventId) -> EventId {
        self.events
            .get(timeline)
            .and_then(|m| m.get(id))
            .map_or_else(|| id.clone(), |(here, _)| here.clone())
    }

    fn timeline(&mut self, tl: &WorldTimeline, path: &JsonPath) -> Result<(), ServiceError> {
        if self.timelines.contains_key(&tl.id) {
            return Err(self.fault(
                &path.key("id"),
                format!("timeline '{}' appears twice in the file", tl.id),
            ));
        }
        let name = self.at(&path.key("name"), rules::text("name", &tl.name))?;
        let description = self.at(
            &path.key("description"),
            rules::optional_text("description", tl.description.as_ref()),
        )?;
        let variation = self.at(
            &path.key("variation"),
            rules::optional_text("variation", tl.variation.as_ref()),
        )?;
        let destination_time = self.at(
            &path.key("destination_time"),
            opt_in_range("destination_time", tl.destination_time).map_err(ServiceError::from),
        )?;
        let parent = match &tl.parent {
            None => None,
            Some(p) => match self.timelines.get(p) {
                Some(here) => Some(here.clone()),
                None if self.scratch.timelines.contains_key(p) => Some(p.clone()),
                None => {
                    return Err(self.fault(
                        &path.key("parent"),
                        format!("no timeline '{p}' earlier in the file or in the store"),
                    ));
                }
            },
        };
        let id = if self.scratch.timelines.contains_key(&tl.id) {
            let new = TimelineId::from_ulid((self.ctx.mint)());
            self.remap("timeline", None, tl.id.as_str(), new.as_str());
            new
        } else {
            tl.id.clone()
        };
        let window = tl.window.unwrap_or(if tl.id.is_primary() {
            Window::Unbounded
        } else {
            self.input.default_window
        });
        self.apply(Op::CreateTimeline {
            timeline: Timeline {
                id: id.clone(),
                name: name.clone(),
                description,
                variation,
                destination_time,
                created_at: self.ctx.now,
                window,
                parent: parent.clone(),
                created_by: Some(self.ctx.traveller.clone()),
            },
        })?;
        self.timelines.insert(tl.id.clone(), id.clone());
        self.created.push(Created {
            id: id.clone(),
            from: tl.id.clone(),
            name,
            parent,
            path: path.clone(),
            events: tl.events.len() + tl.manipulations.len(),
        });
        self.events.insert(id.clone(), HashMap::new());
        let events = self.versions(&id, &tl.events, path)?;
        for chunk in events.chunks(EVENTS_PER_RECORD) {
            self.apply(Op::AddEvents {
                timeline: id.clone(),
                events: chunk.to_vec(),
                at: Some(self.ctx.now),
            })?;
            self.advance(chunk.len());
        }
        for (k, m) in tl.manipulations.iter().enumerate() {
            let change = Change {
                event_id: &m.event_id,
                new_id: &m.new_id,
                description: &m.description,
                time: m.time,
                reverted: m.reverted,
            };
            self.manipulate(&id, &change, &path.at("manipulations", k))?;
            self.advance(1);
        }
        Ok(())
    }

    /// The id a new event of the file gets in `timeline`: its own unless the timeline holds
    /// it already (inherited from its parent); refused when the file gave it before.
    fn claim(
        &mut self,
        timeline: &TimelineId,
        id: &EventId,
        path: &JsonPath,
    ) -> Result<EventId, ServiceError> {
        if let Some((_, first)) = self.events.get(timeline).and_then(|m| m.get(id)) {
            return Err(self.fault(
                path,
                format!("event '{id}' appears twice in this timeline (first at {first})"),
            ));
        }
        let taken = self
            .scratch
            .timelines
            .get(timeline)
            .is_some_and(|t| t.history.get(id).is_some());
        let here = if taken {
            let new = EventId::from_ulid((self.ctx.mint)());
            self.remap("event", Some(timeline), id.as_str(), new.as_str());
            new
        } else {
            id.clone()
        };
        if let Some(m) = self.events.get_mut(timeline) {
            m.insert(id.clone(), (here.clone(), path.clone()));
        }
        Ok(here)
    }

    /// The file's events of `timeline` as the engine's, checked: ids, texts, times, causes,
    /// and each lineage's versions.
    fn versions(
        &mut self,
        timeline: &TimelineId,
        events: &[WorldEvent],
        path: &JsonPath,
    ) -> Result<Vec<Event>, ServiceError> {
        for (j, e) in events.iter().enumerate() {
            self.claim(timeline, &e.id, &path.at("events", j).key("id"))?;
        }
        let index: HashMap<&EventId, usize> =
            events.iter().enumerate().map(|(j, e)| (&e.id, j)).collect();
        let mut out = Vec::with_capacity(events.len());
        let mut current_of: HashMap<EventId, usize> = HashMap::new();
        for (j, e) in events.iter().enumerate() {
            let at = path.at("events", j);
            let here = |id: &EventId| self.event_here(timeline, id);
            let description = self.at(
                &at.key("description"),
                rules::text("description", &e.description),
            )?;
            let location = self.at(&at.key("location"), rules::text("location", &e.location))?;
            let time = self.at(
                &at.key("time"),
                crate::model::in_range("time", e.time).map_err(ServiceError::from),
            )?;
            let mut causes: Vec<EventId> = Vec::with_capacity(e.causes.len());
            for (c, cause) in e.causes.iter().enumerate() {
                let known = index.contains_key(cause)
                    || self
                        .scratch
                        .timelines
                        .get(timeline)
                        .is_some_and(|t| t.history.get(cause).is_some());
                if !known {
                    return Err(self.fault(
                        &at.at("causes", c),
                        format!(
                            "no event '{cause}' in this timeline (its own events in the file, \
                             or its parent's)"
                        ),
                    ));
                }
                let cause = here(cause);
                if !causes.contains(&cause) {
                    causes.push(cause);
                }
            }
            let own = |field: &str, id: &Option<EventId>| -> Result<(), ServiceError> {
                match id {
                    Some(id) if !index.contains_key(id) => Err(self.fault(
                        &at.key(field),
                        format!("no event '{id}' among this timeline's events in the file"),
                    )),
                    _ => Ok(()),
                }
            };
            own("supersedes", &e.supersedes)?;
            own("superseded_by", &e.superseded_by)?;
            let status_fault = |message: &str| Err(self.fault(&at.key("status"), message));
            match e.status {
                EventStatus::OnSchedule if e.supersedes.is_some() => {
                    return status_fault(
                        "an event that supersedes another is manipulated, superseded or reverted",
                    );
                }
                EventStatus::Manipulated | EventStatus::Reverted if e.supersedes.is_none() => {
                    return status_fault(
                        "a manipulated or reverted event names the version it replaced \
                         (supersedes)",
                    );
                }
                EventStatus::Superseded if e.superseded_by.is_none() => {
                    return status_fault("a superseded event names its successor (superseded_by)");
                }
                s if s.is_current() && e.superseded_by.is_some() => {
                    return status_fault("a current event has no successor (superseded_by)");
                }
                _ => {}
            }
            if let Some(next) = &e.superseded_by
                && let Some(&n) = index.get(next)
                && events[n].supersedes.as_ref() != Some(&e.id)
            {
                return Err(self.fault(
                    &at.key("superseded_by"),
                    format!(
                        "'{next}' does not name '{}' as the version it supersedes",
                        e.id
                    ),
                ));
            }
            // The lineage: the first version, following `supersedes` back.
            let mut root = j;
            for _ in 0..=events.len() {
                match events[root].supersedes.as_ref().and_then(|s| index.get(s)) {
                    Some(&before) => root = before,
                    None => break,
                }
            }
            if events[root].supersedes.is_some() {
                return Err(self.fault(
                    &at.key("supersedes"),
                    "the versions' supersedes go round in a circle",
                ));
            }
            if e.status.is_current()
                && let Some(first) = current_of.insert(events[root].id.clone(), j)
            {
                return Err(self.fault(
                    &at.key("status"),
                    format!(
                        "a lineage has one current version, and events[{first}] ('{}') is \
                         current too",
                        events[first].id
                    ),
                ));
            }
            out.push(Event {
                id: here(&e.id),
                description,
                time,
                location,
                causes,
                fixed_point: e.fixed_point,
                status: e.status,
                supersedes: e.supersedes.as_ref().map(here),
                superseded_by: e.superseded_by.as_ref().map(here),
                lineage: here(&events[root].id),
                author: None,
            });
        }
        Ok(out)
    }

    /// A manipulation of the file (in a timeline's `manipulations` or a `manipulate` step):
    /// the new version keeps the place and causes of the one it replaces.
    fn manipulate(
        &mut self,
        timeline: &TimelineId,
        change: &Change<'_>,
        path: &JsonPath,
    ) -> Result<(), ServiceError> {
        let old_id = self.event_here(timeline, change.event_id);
        let state = rules::referenced(&self.scratch, timeline)?;
        let old = match state.history.current(&old_id) {
            Some(_) => self.at(
                &path.key("event_id"),
                rules::manipulable(state, &old_id).cloned(),
            )?,
            None => {
                return Err(self.fault(
                    &path.key("event_id"),
                    format!(
                        "no current event '{}' in this timeline to manipulate",
                        change.event_id
                    ),
                ));
            }
        };
        let description = self.at(
            &path.key("description"),
            rules::text("description", change.description),
        )?;
        let time = self.at(
            &path.key("time"),
            crate::model::in_range("time", change.time).map_err(ServiceError::from),
        )?;
        let new_id = self.claim(timeline, change.new_id, &path.key("new_id"))?;
        self.apply(Op::Manipulate {
            timeline: timeline.clone(),
            old: old_id.clone(),
            new: Event {
                id: new_id.clone(),
                description,
                time,
                location: old.location.clone(),
                causes: old.causes.clone(),
                fixed_point: false,
                status: EventStatus::Manipulated,
                supersedes: Some(old_id),
                superseded_by: None,
                lineage: old.lineage.clone(),
                author: None,
            },
            at: Some(self.ctx.now),
        })?;
        if change.reverted {
            self.apply(Op::Revert {
                timeline: timeline.clone(),
                head: new_id,
                at: Some(self.ctx.now),
            })?;
        }
        Ok(())
    }

    /// Checks the created timelines for paradoxes their parents do not have, and reports.
    fn finish(&self) -> Result<ImportReport, ServiceError> {
        let mut timelines = Vec::with_capacity(self.created.len());
        for c in &self.created {
            let mut found = rules::standing_paradoxes(&self.scratch, self.ctx, &c.id)?;
            if let Some(parent) = &c.parent {
                let inherited = rules::standing_paradoxes(&self.scratch, self.ctx, parent)?;
                found.retain(|p| !inherited.contains(p));
            }
            if self.input.safety_check && !found.is_empty() {
                return Err(self.paradoxes(c, found));
            }
            timelines.push(ImportedTimeline {
                id: c.id.clone(),
                from: c.from.clone(),
                name: c.name.clone(),
                events: c.events,
                paradoxes: found,
            });
        }
        Ok(ImportReport {
            events: timelines.iter().map(|t| t.events).sum(),
            timelines,
            remapped: self.remapped.clone(),
        })
    }

    /// The refusal of a timeline that would hold `found`: each paradox said with the line and
    /// place in the file of its first event.
    fn paradoxes(&self, c: &Created, mut found: Vec<crate::paradox::Paradox>) -> ServiceError {
        let ids = self.events.get(&c.id);
        let reverse: HashMap<&EventId, &JsonPath> = ids
            .map(|m| m.values().map(|(here, path)| (here, path)).collect())
            .unwrap_or_default();
        for p in &mut found {
            let path = p
                .events
                .iter()
                .find_map(|e| reverse.get(e).copied())
                .unwrap_or(&c.path);
            // The path of an event's `id` names the event itself.
            let mut shown = path.clone();
            if shown.0.last() == Some(&Seg::Key("id".into())) {
                shown.0.pop();
            }
            p.description = format!(
                "line {}, {shown}: {}",
                line_of(self.input.text, &shown),
                p.description
            );
        }
        ServiceError::ParadoxDetected {
            timeline: c.from.to_string(),
            paradoxes: found,
        }
    }
}

/// A manipulation as the file gives it.
struct Change<'a> {
    event_id: &'a EventId,
    new_id: &'a EventId,
    description: &'a str,
    time: crate::model::Instant,
    reverted: bool,
}

/// The lineage of each of `events` (versions of one timeline, as a world file lists them):
/// the first version, following `supersedes` back within the list.
pub fn lineages(events: &[WorldEvent]) -> Vec<EventId> {
    let index: HashMap<&EventId, usize> =
        events.iter().enumerate().map(|(j, e)| (&e.id, j)).collect();
    events
        .iter()
        .enumerate()
        .map(|(j, _)| {
            let mut root = j;
            let mut seen = HashSet::new();
            while seen.insert(root) {
                match events[root].supersedes.as_ref().and_then(|s| index.get(s)) {
                    Some(&before) => root = before,
                    None => break,
                }
            }
            events[root].id.clone()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(segs: &[Seg]) -> JsonPath {
        JsonPath(segs.to_vec())
    }

    #[test]
    fn a_path_is_found_on_its_line() {
        let text = "{\n  \"timelines\": [\n    {\"id\": \"a\", \"events\": [\n      {\"id\": \"x\"},\n      {\"id\": \"y\", \"time\": \"bad\"}\n    ]}\n  ]\n}\n";
        let p = path(&[
            Seg::Key("timelines".into()),
            Seg::Index(0),
            Seg::Key("events".into()),
            Seg::Index(1),
            Seg::Key("time".into()),
        ]);
        assert_eq!(line_of(text, &p), 5);
        assert_eq!(p.to_string(), "timelines[0].events[1].time");
        let missing = path(&[Seg::Key("timelines".into()), Seg::Index(3)]);
        assert_eq!(line_of(text, &missing), 1);
    }

    #[test]
    fn a_bad_time_is_refused_with_its_line_and_field() {
        let text = "{\"timelines\": [{\"id\": \"a\", \"name\": \"A\", \"events\": [\n{\"id\": \"x\", \"description\": \"d\", \"location\": \"l\",\n \"time\": \"yesterday\"}]}]}";
        let e = parse(text).unwrap_err();
        let shown = e.to_string();
        assert!(
            shown.starts_with("line 3, timelines[0].events[0].time: "),
            "{shown}"
        );
    }

    #[test]
    fn a_missing_field_is_refused_naming_the_object() {
        let text = "{\"timelines\": [{\"id\": \"a\",\n \"events\": []}]}";
        let shown = parse(text).unwrap_err().to_string();
        assert!(shown.starts_with("line 2, timelines[0]: "), "{shown}");
        assert!(shown.contains("missing field `name`"), "{shown}");
    }
}

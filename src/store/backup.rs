//! Backups of the log: one portable file for SQLite and PostgreSQL stores.
//!
//! A backup is the log itself, as JSON lines, so that it restores into either backend and
//! can be read with `head` and `jq`:
//!
//! ```text
//! {"format":"chronoscope-backup","version":1,"fingerprint":"…","chain_from":1,"first":1,"last":3,"head":"…","made_at":"…","made_by":"ada","source":"sqlite:///…"}
//! {"seq":1,"link":"…","body":"{\"by\":null,…}"}
//! {"seq":2,"link":"…","body":"…"}
//! {"seq":3,"link":"…","body":"…"}
//! {"end":{"records":3,"seal":"…"}}
//! ```
//!
//! Every record keeps the link it has in the store (see [`super::chain`]), so the records prove
//! themselves and their order; the header names the head's link, and the end line seals the
//! header and the count with the log key. Whoever lacks the key can neither change, drop nor
//! reorder a record, nor change the header, nor cut the file short without it being refused.
//!
//! A backup is a prefix of the log: the records up to the last one committed when it began,
//! read in pages while writers go on appending after it.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use hmac::Mac;
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

use super::chain::{self, ChainMeta, Link, LogKey, hex, unhex};
use super::{Entry, Restoring, Store, StoreError};

/// The `format` every backup's header names.
pub const FORMAT: &str = "chronoscope-backup";

/// The layout version this build writes and reads.
pub const VERSION: u32 = 1;

/// How many records are read from the store, or sent to it, at once, at most…
const BATCH: u32 = 5_000;

/// …and about how many bytes of bodies: a log of big records (10,000 events each) is read and
/// written a few records at a time, so memory and each statement stay small.
const BATCH_BYTES: usize = 8 << 20;

/// The first line of a backup.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// The layout version ([`VERSION`]).
    pub version: u32,
    /// The log key's fingerprint, in hex (never the key).
    pub fingerprint: String,
    /// The first record the source's chain record said was linked as written.
    pub chain_from: u64,
    /// The first record in the file (always 1: a backup holds the whole log).
    pub first: u64,
    /// The last record in the file.
    pub last: u64,
    /// The last record's link, in hex (the genesis link for an empty log).
    pub head: String,
    /// When the backup began (RFC 3339, UTC).
    pub made_at: String,
    /// Who made it (`--as`, else the OS user).
    pub made_by: String,
    /// The store it was made from (no password).
    pub source: String,
}

/// A record's line.
#[derive(Serialize)]
struct RecordLine<'a> {
    seq: u64,
    link: String,
    body: &'a str,
}

/// The last line.
#[derive(Serialize, Deserialize)]
struct EndLine {
    end: End,
}

#[derive(Serialize, Deserialize)]
struct End {
    records: u64,
    seal: String,
}

/// Any line after the header, as read: a record, or the end.
#[derive(Deserialize)]
struct Line {
    seq: Option<u64>,
    link: Option<String>,
    body: Option<String>,
    end: Option<End>,
}

/// What a backup holds, as `backup`, `verify --backup` and `restore` report it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// The backup file.
    pub file: String,
    /// The store it was made from.
    pub source: String,
    /// Records, all verified.
    pub records: u64,
    /// The file's size.
    pub bytes: u64,
    /// The first record linked as written in the source.
    pub chain_from: u64,
    /// The head's link, shortened.
    pub head: String,
    /// When the backup was made, and by whom.
    pub made_at: String,
    /// Who made it.
    pub made_by: String,
    /// Timelines created in the log (branches included).
    pub timelines_created: u64,
    /// Timelines deleted in the log.
    pub timelines_deleted: u64,
    /// Events added (manipulations and reverts not counted).
    pub events_added: u64,
    /// When the first and the last records were decided (records older than the stamp have
    /// none).
    pub first_at: Option<String>,
    /// See `first_at`.
    pub last_at: Option<String>,
    /// How long the command took.
    pub seconds: f64,
}

impl Summary {
    /// Records handled per second.
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.records as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// What it holds, in one line (the file is named by the caller).
    pub fn describe(&self) -> String {
        let span = match (&self.first_at, &self.last_at) {
            (Some(first), Some(last)) => format!(", decided {first} to {last}"),
            _ => String::new(),
        };
        format!(
            "{} records (head {}…, chained from record {}): {} timelines created, {} deleted, {} \
             events added{span}; made {} by {} from {}; {} bytes",
            self.records,
            self.head,
            self.chain_from,
            self.timelines_created,
            self.timelines_deleted,
            self.events_added,
            self.made_at,
            self.made_by,
            self.source,
            self.bytes
        )
    }

    /// Counts what `body`, a record's envelope, does. A body that is not an envelope counts
    /// for nothing here: the links, not this tally, say whether a record is sound.
    fn tally(&mut self, body: &str) {
        #[derive(Deserialize)]
        struct Peek {
            at: Option<String>,
            change: Change,
        }
        #[derive(Deserialize)]
        struct Change {
            op: String,
            events: Option<Vec<serde::de::IgnoredAny>>,
        }
        let Ok(peek) = serde_json::from_str::<Peek>(body) else {
            return;
        };
        match peek.change.op.as_str() {
            "create_timeline" => self.timelines_created += 1,
            "delete_timeline" => self.timelines_deleted += 1,
            "add_events" => {
                self.events_added += peek.change.events.map_or(0, |e| e.len() as u64);
            }
            _ => {}
        }
        if let Some(at) = peek.at {
            if self.first_at.is_none() {
                self.first_at = Some(at.clone());
            }
            self.last_at = Some(at);
        }
    }
}

/// Why a backup could not be made, read or restored.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The file could not be read or written.
    #[error("{}: {reason}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// The file is not a sound backup: what is wrong, and where.
    #[error("{}{}: {reason}", path.display(), line.map(|l| format!(", line {l}")).unwrap_or_default())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// The line at fault, when one is.
        line: Option<u64>,
        /// What is wrong.
        reason: String,
    },
    /// The backup or the store was made with another log key.
    #[error(
        "{what} was chained with another log key (fingerprint {theirs}; this key is {ours}): name \
         the key file of the store it came from with --log-key-file"
    )]
    OtherKey {
        /// The backup file or the store.
        what: String,
        /// Its key's fingerprint, shortened.
        theirs: String,
        /// This key's, shortened.
        ours: String,
    },
    /// The store cannot be backed up as it is, or cannot take the backup.
    #[error("{0}")]
    Refused(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Ctrl-C: what was left behind, said.
    #[error("interrupted: {0}")]
    Interrupted(String),
}

/// The seal of a backup: its header line and its count under the log key, with a label of its
/// own so that it can pass for no link, snapshot seal or witness.
fn seal(key: &LogKey, header_line: &str, records: u64) -> hmac::Hmac<sha2::Sha256> {
    let mut mac = key.labelled(b"chronoscope-backup-v1");
    mac.update(header_line.as_bytes());
    mac.update(&[0]);
    mac.update(&records.to_be_bytes());
    mac
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Writes a backup of `store` to `to`: the records up to the last one committed now, each
/// link checked with `key` as it is read (a log that does not verify is not backed up). The
/// file is written under a temporary name beside `to` and moved into place, synced, only
/// when complete; with `replace`, an existing `to` is replaced, otherwise refused. `stop`
/// set (Ctrl-C) ends it early, leaving nothing behind.
pub async fn backup(
    store: &dyn Store,
    key: &LogKey,
    to: &Path,
    made_by: &str,
    replace: bool,
    progress: &ProgressBar,
    stop: &AtomicBool,
) -> Result<Summary, BackupError> {
    let started = Instant::now();
    let io = |reason: String| BackupError::Io {
        path: to.to_owned(),
        reason,
    };
    if !replace && to.exists() {
        return Err(io(
            "exists; choose another name, or give --replace to write over it".into(),
        ));
    }
    let source = store.describe();
    let last = store.last_seq().await?;
    let chain_from = match store.chain().await? {
        Some(meta) if meta.fingerprint == key.fingerprint() => meta.from,
        Some(meta) => {
            return Err(BackupError::OtherKey {
                what: source,
                theirs: chain::short(&meta.fingerprint),
                ours: chain::short(&key.fingerprint()),
            });
        }
        None if last == 0 => 1,
        None => {
            return Err(BackupError::Refused(format!(
                "{source} holds {last} records but no chain record: it cannot prove them, so no \
                 backup of it would. `chronoscope verify` says why"
            )));
        }
    };
    // The head's link as stored; it is checked when its record is reached.
    let head = match last {
        0 => key.genesis(),
        last => store
            .read_since(last - 1, 1)
            .await?
            .first()
            .and_then(|r| r.link)
            .ok_or_else(|| {
                BackupError::Refused(format!(
                    "{source}: record {last} has no link: `chronoscope verify` says more"
                ))
            })?,
    };
    let header = Header {
        format: FORMAT.into(),
        version: VERSION,
        fingerprint: hex(&key.fingerprint()),
        chain_from,
        first: 1,
        last,
        head: hex(&head),
        made_at: now(),
        made_by: made_by.to_owned(),
        source: source.clone(),
    };
    let header_line = serde_json::to_string(&header).map_err(|e| io(e.to_string()))?;

    let dir = match to.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    let temporary = tempfile::Builder::new()
        .prefix(".chronoscope-backup-")
        .tempfile_in(&dir)
        .map_err(|e| io(format!("cannot write in {}: {e}", dir.display())))?;
    let mut out = BufWriter::with_capacity(1 << 20, temporary.as_file());
    let write_err = |e: std::io::Error| io(format!("cannot be written: {e}"));
    writeln!(out, "{header_line}").map_err(write_err)?;

    let mut summary = Summary {
        file: to.display().to_string(),
        source,
        chain_from,
        head: chain::short(&head),
        made_at: header.made_at.clone(),
        made_by: header.made_by.clone(),
        ..Summary::default()
    };
    progress.set_length(last);
    let mut previous = key.genesis();
    let mut seen = 0u64;
    // One record first: its size says how many the next page can take.
    let mut page = 1;
    while seen < last {
        if stop.load(Ordering::Relaxed) {
            return Err(BackupError::Interrupted(format!(
                "no backup written to {} (after {seen} of {last} records)",
                to.display()
            )));
        }
        let want = u32::try_from(last - seen).map_or(page, |left| left.min(page));
        let records = store.read_since(seen, want).await?;
        // The next page sized after this one's bodies, from one record to a full batch.
        let bytes: usize = records.iter().map(|r| r.body.len()).sum::<usize>().max(1);
        page = u32::try_from(records.len() * BATCH_BYTES / bytes)
            .unwrap_or(BATCH)
            .clamp(1, BATCH);
        if records.is_empty() {
            return Err(BackupError::Refused(format!(
                "{}: the log ends at record {seen}, though it said {last} when the backup began",
                summary.source
            )));
        }
        for record in &records {
            previous = record.verify(key, &previous).map_err(|broken| {
                BackupError::Refused(format!(
                    "{}: {broken}. A backup of it would restore it broken; `chronoscope \
                         verify` says more",
                    summary.source
                ))
            })?;
            let line = RecordLine {
                seq: record.seq,
                link: hex(&previous),
                body: &record.body,
            };
            serde_json::to_writer(&mut out, &line).map_err(|e| io(e.to_string()))?;
            out.write_all(b"\n").map_err(write_err)?;
            summary.tally(&record.body);
            seen = record.seq;
        }
        progress.set_position(seen);
    }
    if previous != head {
        return Err(BackupError::Refused(format!(
            "{}: record {last} changed while the backup was made",
            summary.source
        )));
    }
    let tag = seal(key, &header_line, last).finalize().into_bytes();
    let end = EndLine {
        end: End {
            records: last,
            seal: hex(&tag),
        },
    };
    serde_json::to_writer(&mut out, &end).map_err(|e| io(e.to_string()))?;
    out.write_all(b"\n").map_err(write_err)?;
    out.flush().map_err(write_err)?;
    drop(out);
    temporary.as_file().sync_all().map_err(write_err)?;
    let placed = if replace {
        temporary.persist(to).map_err(|e| e.error)
    } else {
        temporary.persist_noclobber(to).map_err(|e| e.error)
    };
    placed.map_err(|e| io(format!("cannot be put in place: {e}")))?;
    if let Ok(dir) = File::open(&dir) {
        let _ = dir.sync_all();
    }
    summary.records = last;
    summary.bytes = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// A backup file, read line by line, every record checked against its link as it comes.
struct Reader<'k> {
    path: PathBuf,
    key: &'k LogKey,
    lines: BufReader<File>,
    line: u64,
    text: String,
    header: Header,
    header_line: String,
    previous: Link,
    next_seq: u64,
    ended: bool,
    summary: Summary,
}

impl<'k> Reader<'k> {
    /// Opens `path` and checks its header against `key`.
    fn open(path: &Path, key: &'k LogKey) -> Result<Self, BackupError> {
        let file = File::open(path).map_err(|e| BackupError::Io {
            path: path.to_owned(),
            reason: format!("cannot be read: {e}"),
        })?;
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut reader = Self {
            path: path.to_owned(),
            key,
            lines: BufReader::with_capacity(1 << 20, file),
            line: 0,
            text: String::new(),
            header: Header::default(),
            header_line: String::new(),
            previous: key.genesis(),
            next_seq: 1,
            ended: false,
            summary: Summary {
                file: path.display().to_string(),
                bytes,
                ..Summary::default()
            },
        };
        if !reader.read_line()? {
            return Err(reader.damaged(None, "is empty: it is not a chronoscope backup".into()));
        }
        let header: Header = serde_json::from_str(&reader.text).map_err(|e| {
            reader.damaged(
                Some(1),
                format!("is not a chronoscope backup (its first line is no backup header: {e})"),
            )
        })?;
        if header.format != FORMAT {
            return Err(reader.damaged(
                Some(1),
                format!("is not a chronoscope backup (format {:?})", header.format),
            ));
        }
        if header.version != VERSION {
            return Err(reader.damaged(
                Some(1),
                format!(
                    "is a backup in layout version {}, which this build (version {VERSION}) does \
                     not read: use the chronoscope that made it",
                    header.version
                ),
            ));
        }
        let fingerprint = unhex(&header.fingerprint).unwrap_or_default();
        if fingerprint.as_slice() != key.fingerprint().as_slice() {
            return Err(BackupError::OtherKey {
                what: path.display().to_string(),
                theirs: fingerprint
                    .get(..6)
                    .map_or_else(|| header.fingerprint.clone(), hex),
                ours: chain::short(&key.fingerprint()),
            });
        }
        if header.first != 1 || header.chain_from == 0 {
            return Err(reader.damaged(
                Some(1),
                "its header was changed (a backup starts at record 1)".into(),
            ));
        }
        reader.header_line = reader.text.clone();
        reader.summary.source = header.source.clone();
        reader.summary.chain_from = header.chain_from;
        reader.summary.made_at = header.made_at.clone();
        reader.summary.made_by = header.made_by.clone();
        reader.header = header;
        Ok(reader)
    }

    fn damaged(&self, line: Option<u64>, reason: String) -> BackupError {
        BackupError::Damaged {
            path: self.path.clone(),
            line,
            reason,
        }
    }

    /// The next line into `self.text`, without its end; `false` at the end of the file.
    fn read_line(&mut self) -> Result<bool, BackupError> {
        self.text.clear();
        let read = self
            .lines
            .read_line(&mut self.text)
            .map_err(|e| BackupError::Io {
                path: self.path.clone(),
                reason: format!("cannot be read (line {}): {e}", self.line + 1),
            })?;
        if read == 0 {
            return Ok(false);
        }
        self.line += 1;
        if self.text.ends_with('\n') {
            self.text.pop();
        }
        Ok(true)
    }

    /// Up to `max` more records, each verified; `None` once the end line was read and the
    /// whole file proven (its count, head and seal).
    fn next_batch(&mut self, max: usize) -> Result<Option<Vec<Entry>>, BackupError> {
        if self.ended {
            return Ok(None);
        }
        let mut batch = Vec::with_capacity(max.min(1024));
        let mut bytes = 0;
        while batch.len() < max && bytes < BATCH_BYTES {
            if !self.read_line()? {
                return Err(self.damaged(
                    None,
                    format!(
                        "is cut short after record {} (it has no end line): the backup is \
                         incomplete",
                        self.next_seq - 1
                    ),
                ));
            }
            let line = self.line;
            let parsed: Line = serde_json::from_str(&self.text)
                .map_err(|e| self.damaged(Some(line), format!("is not a backup line ({e})")))?;
            if let Some(end) = parsed.end {
                self.finish(end)?;
                return Ok(Some(batch));
            }
            let (Some(seq), Some(link), Some(body)) = (parsed.seq, parsed.link, parsed.body) else {
                return Err(self.damaged(
                    Some(line),
                    "is not a record (it lacks seq, link or body)".into(),
                ));
            };
            if seq != self.next_seq {
                let reason = if seq > self.next_seq {
                    format!(
                        "holds record {seq}, but record {} should come first: records are \
                         missing",
                        self.next_seq
                    )
                } else {
                    format!("holds record {seq} again, or out of order")
                };
                return Err(self.damaged(Some(line), reason));
            }
            let link = unhex(&link)
                .and_then(|l| Link::try_from(l.as_slice()).ok())
                .ok_or_else(|| {
                    self.damaged(Some(line), format!("record {seq}'s link is not a link"))
                })?;
            self.previous = chain::verify(self.key, &self.previous, seq, &body, Some(&link))
                .map_err(|broken| self.damaged(Some(line), broken.to_string()))?;
            self.summary.tally(&body);
            self.next_seq += 1;
            bytes += body.len();
            batch.push(Entry { body, link });
        }
        Ok(Some(batch))
    }

    /// The end line: the count, the head and the seal must be what the header and the records
    /// say; nothing may follow.
    fn finish(&mut self, end: End) -> Result<(), BackupError> {
        let line = Some(self.line);
        let records = self.next_seq - 1;
        if end.records != records || records != self.header.last {
            return Err(self.damaged(
                line,
                format!(
                    "the backup holds {records} records, but its header says {} and its end line \
                     {}: records were removed or added",
                    self.header.last, end.records
                ),
            ));
        }
        if unhex(&self.header.head).as_deref() != Some(self.previous.as_slice()) {
            return Err(self.damaged(
                Some(1),
                format!(
                    "its header names another head than record {records}'s link: it was changed"
                ),
            ));
        }
        let tag = unhex(&end.seal).unwrap_or_default();
        if seal(self.key, &self.header_line, records)
            .verify_slice(&tag)
            .is_err()
        {
            return Err(self.damaged(
                line,
                "its seal does not open with this log key: the header was changed".into(),
            ));
        }
        if self.read_line()? && !self.text.trim().is_empty() {
            return Err(self.damaged(Some(self.line), "follows the end line".into()));
        }
        self.ended = true;
        self.summary.records = records;
        self.summary.head = chain::short(&self.previous);
        Ok(())
    }
}

/// Checks a backup with `key` alone: every record's link, the header's head, the seal. Reports
/// what it holds.
pub async fn verify(
    path: &Path,
    key: &LogKey,
    progress: &ProgressBar,
    stop: &AtomicBool,
) -> Result<Summary, BackupError> {
    let started = Instant::now();
    let mut reader = Reader::open(path, key)?;
    progress.set_length(reader.header.last);
    while let Some(batch) = reader.next_batch(BATCH as usize)? {
        progress.inc(batch.len() as u64);
        if stop.load(Ordering::Relaxed) {
            return Err(BackupError::Interrupted(format!(
                "{} was checked up to record {} only",
                path.display(),
                reader.next_seq - 1
            )));
        }
        // A turn for Ctrl-C's handler between two batches.
        tokio::task::yield_now().await;
    }
    let mut summary = reader.summary;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// What a restore did: the backup's summary and the head the store now ends at.
#[derive(Clone, Debug)]
pub struct Restored {
    /// What the backup holds.
    pub summary: Summary,
    /// The chain record the store now has.
    pub meta: ChainMeta,
    /// Its last record and link.
    pub head: super::Head,
}

/// Restores the backup at `from` into `store`, which must hold no records: the whole file is
/// verified with `key` first, then read again (and verified again) into one transaction of
/// the store's, committed only after the end line proved the file whole. Interrupted (`stop`,
/// an error, a kill), the store is left empty.
pub async fn restore(
    store: &dyn Store,
    key: &LogKey,
    from: &Path,
    progress: &ProgressBar,
    stop: &AtomicBool,
) -> Result<Restored, BackupError> {
    let started = Instant::now();
    let records = store.last_seq().await?;
    if records > 0 {
        return Err(StoreError::NotEmpty {
            store: store.describe(),
            records,
        }
        .into());
    }
    progress.set_message("verifying");
    verify(from, key, progress, stop).await?;
    progress.set_message("restoring");
    progress.set_position(0);

    let mut reader = Reader::open(from, key)?;
    let meta = ChainMeta {
        fingerprint: key.fingerprint(),
        from: reader.header.chain_from,
    };
    let (batches, receiving) = tokio::sync::mpsc::channel(4);
    let feeding = async move {
        while let Some(batch) = reader.next_batch(BATCH as usize)? {
            if stop.load(Ordering::Relaxed) {
                return Err(BackupError::Interrupted(format!(
                    "{} was left empty",
                    store.describe()
                )));
            }
            let sent = batch.len() as u64;
            if batches.send(Restoring::Records(batch)).await.is_err() {
                // The store gave up: its own error says why.
                return Ok(reader);
            }
            progress.inc(sent);
        }
        let _ = batches.send(Restoring::Done).await;
        Ok(reader)
    };
    let (fed, written) = tokio::join!(feeding, store.restore(meta, receiving));
    let reader = fed?;
    written?;
    let head = super::Head {
        seq: reader.next_seq - 1,
        link: reader.previous,
    };
    let mut summary = reader.summary;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(Restored {
        summary,
        meta,
        head,
    })
}

#[cfg(test)]
mod tests;

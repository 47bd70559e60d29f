//! The witness: that a store's log is chained, and the last head this replica verified, kept
//! where whoever writes the database cannot reach it — a file in the data directory, sealed
//! with the log key under a label of its own.
//!
//! The chain proves every record against the one before it, but two facts about the whole log
//! live in the database and are the database writer's to change: *that* the log is chained (its
//! chain record) and *how long* it is. Without the chain record a store looks as if an older
//! version wrote it; without its last records a log still verifies, only shorter. Like a
//! Certificate Transparency witness keeps a log's signed head, each replica keeps the position
//! and link of the last head it verified, and every start, `chronoscope verify` and scan
//! compares the store with it ([`compare`]).
//!
//! The witness is written when a process starts, at most once every [`PERIOD`] while the head
//! moves, and when it stops in order; never on the write path. What it catches and what it
//! cannot are in the README ("A database writer without the log key").

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::chain::{Link, LogKey};
use super::chain::{hex, unhex};

/// How the witness files in a data directory are named: this, then 16 hex digits of the
/// SHA-256 of the store's description (one file per store the directory's replica serves).
pub const FILE_PREFIX: &str = "log-witness-";

/// While the head moves, the witness is written at most this often (see the module's doc).
pub const PERIOD: std::time::Duration = std::time::Duration::from_secs(1);

/// A position in the log and the link of the record there (the genesis link at 0).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The record.
    pub seq: u64,
    /// Its link.
    pub link: Link,
}

impl fmt::Debug for Head {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Head({} {})", self.seq, super::chain::short(&self.link))
    }
}

/// One deliberate acceptance of records the store no longer has (`chronoscope witness accept`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acceptance {
    /// When (RFC 3339).
    pub at: String,
    /// Who accepted it (`--as`, else the OS user).
    pub by: String,
    /// The head witnessed before.
    pub witnessed: u64,
    /// The store's head when it was accepted.
    pub store_head: u64,
    /// How many witnessed records were given up.
    pub lost: u64,
}

/// One restore from a backup into the store (`chronoscope restore`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restoration {
    /// When (RFC 3339).
    pub at: String,
    /// Who restored it (`--as`, else the OS user).
    pub by: String,
    /// The backup file, as named on the command line.
    pub file: String,
    /// When the backup was made, and by whom.
    pub made_at: String,
    /// See `made_at`.
    pub made_by: String,
    /// The store the backup was made from.
    pub source: String,
    /// The records it held.
    pub records: u64,
}

/// What a witness file says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witnessed {
    /// The store it is about, as the process described it.
    pub store: String,
    /// The first record the store's chain record said was linked as written.
    pub from: u64,
    /// The last head verified.
    pub head: Head,
    /// Losses accepted on purpose, oldest first.
    pub accepted: Vec<Acceptance>,
    /// Restores from backups, oldest first.
    pub restored: Vec<Restoration>,
}

/// The file's layout; the seal covers `witness` exactly as written.
#[derive(Serialize, Deserialize)]
struct Sealed {
    witness: Body,
    seal: String,
}

#[derive(Clone, Serialize, Deserialize)]
struct Body {
    version: u32,
    store: String,
    from: u64,
    seq: u64,
    link: String,
    #[serde(default)]
    accepted: Vec<Acceptance>,
    // Left out when empty: files written before restores existed seal the same bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    restored: Vec<Restoration>,
}

/// A witness file could not be read, opened or written.
#[derive(Debug, thiserror::Error)]
#[error("the witness file {}: {reason}", path.display())]
pub struct WitnessError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong, and what to do.
    pub reason: String,
}

/// One replica's witness of one store: the file, and what was last read or written to it.
#[derive(Clone)]
pub struct Witness(Arc<Inner>);

struct Inner {
    path: PathBuf,
    store: String,
    key: LogKey,
    /// What the file holds, once read or written; also serialises the writes.
    known: Mutex<Option<Witnessed>>,
}

impl fmt::Debug for Witness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Witness({})", self.0.path.display())
    }
}

impl Witness {
    /// The witness of the store described as `store`, kept in `data_dir`, sealed with `key`.
    pub fn new(data_dir: &Path, store: &str, key: &LogKey) -> Self {
        let digest = Sha256::digest(store.as_bytes());
        let name = format!("{FILE_PREFIX}{}", hex(&digest[..8]));
        Self(Arc::new(Inner {
            path: data_dir.join(name),
            store: store.to_owned(),
            key: key.clone(),
            known: Mutex::new(None),
        }))
    }

    /// This data directory's witness of `store`, one file per store: a SQLite file is named by
    /// its full path, PostgreSQL by user, host, port and database (so each replica, with its
    /// own `--data-dir`, keeps its own). A memory store has none: nothing of it outlives the
    /// process.
    pub fn for_store(data_dir: &Path, store: &dyn super::Store, key: &LogKey) -> Option<Self> {
        let described = store.describe();
        let identity = match described.strip_prefix("sqlite://") {
            Some(path) => std::fs::canonicalize(path)
                .map_or(described.clone(), |p| format!("sqlite://{}", p.display())),
            None if described == "memory" => return None,
            None => described,
        };
        Some(Self::new(data_dir, &identity, key))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.0.path
    }

    /// What the file says; `None` when there is none yet (this replica never witnessed the
    /// store). A file that does not open with the log key is an error, never ignored.
    pub fn load(&self) -> Result<Option<Witnessed>, WitnessError> {
        let witnessed = self.read()?;
        *self.known() = witnessed.clone();
        Ok(witnessed)
    }

    /// The file as it is now, checked, without remembering it.
    fn read(&self) -> Result<Option<Witnessed>, WitnessError> {
        let text = match std::fs::read_to_string(&self.0.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.error(format!("cannot be read: {e}"))),
        };
        let damaged = |why: String| {
            self.error(format!(
                "{why}: it was changed by something other than chronoscope, or written with \
                 another log key. Restore it from a backup of this data directory, or move it \
                 away to witness the store afresh from its current head (which then is trusted \
                 as it is)"
            ))
        };
        let sealed: Sealed = serde_json::from_str(&text)
            .map_err(|e| damaged(format!("is not a witness file ({e})")))?;
        let body = serde_json::to_vec(&sealed.witness)
            .map_err(|e| damaged(format!("cannot be encoded again ({e})")))?;
        let tag = unhex(&sealed.seal).ok_or_else(|| damaged("has no readable seal".into()))?;
        if !self.opens(&body, &tag) {
            return Err(damaged("does not open with this log key".into()));
        }
        let link = unhex(&sealed.witness.link)
            .and_then(|l| Link::try_from(l.as_slice()).ok())
            .ok_or_else(|| damaged("holds no readable link".into()))?;
        let witnessed = Witnessed {
            store: sealed.witness.store,
            from: sealed.witness.from,
            head: Head {
                seq: sealed.witness.seq,
                link,
            },
            accepted: sealed.witness.accepted,
            restored: sealed.witness.restored,
        };
        Ok(Some(witnessed))
    }

    /// Sets the witness to `head` of a log chained from record `from`, whatever it said before
    /// (keeping the acceptances and restores it lists). Written atomically (a temporary file,
    /// synced, renamed).
    pub fn record(&self, from: u64, head: Head) -> Result<(), WitnessError> {
        let mut known = self.known();
        self.write(&mut known, from, head, |_| {})
    }

    /// Moves the witness forward to `head`, when it is past what this process last wrote and
    /// what the file holds now (another process on the same data directory, a dashboard next
    /// to a server, may have moved it further): a head never moves back this way. Answers
    /// whether it wrote.
    pub fn advance(&self, from: u64, head: Head) -> Result<bool, WitnessError> {
        let mut known = self.known();
        let behind = |k: &Option<Witnessed>| {
            k.as_ref()
                .is_some_and(|k| k.head.seq >= head.seq && k.from == from)
        };
        if behind(&known) {
            return Ok(false);
        }
        let now = self.read()?;
        if behind(&now) {
            *known = now;
            return Ok(false);
        }
        if now.is_some() {
            *known = now;
        }
        self.write(&mut known, from, head, |_| {})?;
        Ok(true)
    }

    /// Sets the witness to `head`, recording `acceptance`: an operator gave up records.
    pub fn accept(
        &self,
        from: u64,
        head: Head,
        acceptance: Acceptance,
    ) -> Result<(), WitnessError> {
        let mut known = self.known();
        self.write(&mut known, from, head, |w| w.accepted.push(acceptance))
    }

    /// Sets the witness to the head of a store just restored from a backup, recording the
    /// restore: the replica neither refuses the store as shorter than what it witnessed before
    /// nor takes a later cut for granted.
    pub fn restored(
        &self,
        from: u64,
        head: Head,
        restoration: Restoration,
    ) -> Result<(), WitnessError> {
        let mut known = self.known();
        self.write(&mut known, from, head, |w| w.restored.push(restoration))
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Option<Witnessed>> {
        self.0.known.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `head` with what the file listed, changed by `note`.
    fn write(
        &self,
        known: &mut Option<Witnessed>,
        from: u64,
        head: Head,
        note: impl FnOnce(&mut Witnessed),
    ) -> Result<(), WitnessError> {
        let mut witnessed = Witnessed {
            store: self.0.store.clone(),
            from,
            head,
            accepted: known
                .as_ref()
                .map(|k| k.accepted.clone())
                .unwrap_or_default(),
            restored: known
                .as_ref()
                .map(|k| k.restored.clone())
                .unwrap_or_default(),
        };
        note(&mut witnessed);
        let body = Body {
            version: 1,
            store: self.0.store.clone(),
            from,
            seq: head.seq,
            link: hex(&head.link),
            accepted: witnessed.accepted.clone(),
            restored: witnessed.restored.clone(),
        };
        let bytes = serde_json::to_vec(&body).map_err(|e| self.error(e.to_string()))?;
        let sealed = Sealed {
            seal: hex(&self.seal(&bytes)),
            witness: body,
        };
        let mut text = serde_json::to_vec_pretty(&sealed).map_err(|e| self.error(e.to_string()))?;
        text.push(b'\n');
        let dir = self
            .0
            .path
            .parent()
            .ok_or_else(|| self.error("has no directory".into()))?;
        let failed = |e: std::io::Error| self.error(format!("cannot be written: {e}"));
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
        file.write_all(&text).map_err(failed)?;
        file.as_file().sync_all().map_err(failed)?;
        file.persist(&self.0.path).map_err(|e| failed(e.error))?;
        // The rename itself survives a crash once the directory is synced.
        if let Ok(dir) = std::fs::File::open(dir) {
            let _ = dir.sync_all();
        }
        *known = Some(witnessed);
        Ok(())
    }

    fn error(&self, reason: String) -> WitnessError {
        WitnessError {
            path: self.0.path.clone(),
            reason,
        }
    }

    fn mac(&self) -> Hmac<Sha256> {
        let mut mac = self.0.key.labelled(b"chronoscope-witness-v1");
        mac.update(self.0.store.as_bytes());
        mac.update(&[0]);
        mac
    }

    fn seal(&self, bytes: &[u8]) -> Link {
        let mut mac = self.mac();
        mac.update(bytes);
        mac.finalize().into_bytes().into()
    }

    /// Whether `tag` seals `bytes`, compared in constant time.
    fn opens(&self, bytes: &[u8], tag: &[u8]) -> bool {
        let mut mac = self.mac();
        mac.update(bytes);
        mac.verify_slice(tag).is_ok()
    }
}

/// How a store disagrees with what a replica witnessed. Every one means records that were
/// acknowledged are gone or can no longer be proven.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Disagreement {
    /// The store has no chain record, but its log was witnessed chained.
    Unchained {
        /// The witnessed head.
        witnessed: u64,
    },
    /// The chain record says another first record than the one witnessed.
    Rechained {
        /// What was witnessed.
        witnessed_from: u64,
        /// What the store says.
        from: u64,
    },
    /// The log ends before the witnessed head.
    Shorter {
        /// The witnessed head.
        witnessed: u64,
        /// The store's last record.
        last: u64,
    },
    /// The record at the witnessed head is another one.
    Replaced {
        /// The witnessed head.
        witnessed: u64,
    },
}

impl Disagreement {
    /// The first record it concerns.
    pub fn seq(&self) -> u64 {
        match *self {
            Self::Unchained { .. } | Self::Rechained { .. } => 1,
            Self::Shorter { last, .. } => last + 1,
            Self::Replaced { witnessed } => witnessed,
        }
    }

    /// How many witnessed records the store no longer proves: what `chronoscope witness accept
    /// --lost-records` must be told.
    pub fn lost(&self) -> u64 {
        match *self {
            Self::Shorter { witnessed, last } => witnessed - last,
            Self::Unchained { witnessed } | Self::Replaced { witnessed } => witnessed,
            Self::Rechained { .. } => 0,
        }
    }

    /// Whether `chronoscope witness accept` may settle it: only a store that verifies and is
    /// chained can take the place of the one witnessed.
    pub fn acceptable(&self) -> bool {
        matches!(self, Self::Shorter { .. } | Self::Replaced { .. })
    }

    /// The sentence for a person, naming the witness file `path` when it may be shown.
    pub fn explain(&self, path: Option<&Path>) -> String {
        let path = path.map_or_else(
            || "its witness".to_owned(),
            |p| format!("witness {}", p.display()),
        );
        let restore = "restore the store from a backup or a standby";
        let accept = |lost: u64| {
            format!(
                "; if you restored an older backup on purpose, accept the loss with \
                 `chronoscope witness accept --lost-records {lost}`"
            )
        };
        match *self {
            Self::Unchained { witnessed } => format!(
                "the store has no chain record, but this replica witnessed its log chained up \
                 to record {witnessed} ({path}): someone who can write the database removed it, \
                 as one would to have changed records linked again. Nothing is linked again on \
                 its own: {restore}; `chronoscope verify` names the records that no longer match"
            ),
            Self::Rechained {
                witnessed_from,
                from,
            } => format!(
                "the store's chain record says its records were linked as written from record \
                 {from}, but this replica witnessed {witnessed_from} ({path}): the chain record \
                 was rewritten; {restore}"
            ),
            Self::Shorter { witnessed, last } => format!(
                "the log ends at record {last}, but this replica witnessed it up to record \
                 {witnessed} ({path}): {} acknowledged records are gone; {restore}{}",
                witnessed - last,
                accept(witnessed - last)
            ),
            Self::Replaced { witnessed } => format!(
                "record {witnessed} is not the record this replica witnessed there ({path}): \
                 the log was replaced by another history; {restore}{}",
                accept(witnessed)
            ),
        }
    }
}

/// Compares what the store says now with what was witnessed: its chain record (`from`, `None`
/// without one), its last record, and the stored link of the record at the witnessed head
/// (`None` when it has none or is gone).
pub fn compare(
    witnessed: &Witnessed,
    from: Option<u64>,
    last_seq: u64,
    link_at_witnessed: Option<Link>,
) -> Option<Disagreement> {
    let head = witnessed.head;
    let Some(from) = from else {
        return Some(Disagreement::Unchained {
            witnessed: head.seq,
        });
    };
    if from != witnessed.from {
        return Some(Disagreement::Rechained {
            witnessed_from: witnessed.from,
            from,
        });
    }
    if last_seq < head.seq {
        return Some(Disagreement::Shorter {
            witnessed: head.seq,
            last: last_seq,
        });
    }
    let same = link_at_witnessed.is_some_and(|link| equal(&link, &head.link));
    if head.seq > 0 && !same {
        return Some(Disagreement::Replaced {
            witnessed: head.seq,
        });
    }
    None
}

/// Constant-time equality of two links.
fn equal(a: &Link, b: &Link) -> bool {
    a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(seq: u64, byte: u8) -> Head {
        Head {
            seq,
            link: [byte; 32],
        }
    }

    #[test]
    fn a_witness_reads_back_what_was_written_and_only_with_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let key = LogKey::from_bytes(b"k");
        let witness = Witness::new(dir.path(), "sqlite:///x.db", &key);
        assert_eq!(witness.load().unwrap(), None);
        witness.record(1, head(70, 7)).unwrap();
        let again = Witness::new(dir.path(), "sqlite:///x.db", &key);
        let read = again.load().unwrap().unwrap();
        assert_eq!((read.from, read.head), (1, head(70, 7)));
        // Another store has a file of its own.
        let other = Witness::new(dir.path(), "postgres://u@h:5432/db", &key);
        assert_ne!(other.path(), witness.path());
        assert_eq!(other.load().unwrap(), None);
        // Another key does not open it.
        let foreign = Witness::new(dir.path(), "sqlite:///x.db", &LogKey::from_bytes(b"j"));
        assert!(foreign.load().is_err());
        // Nor does a lower head written by hand.
        let text = std::fs::read_to_string(witness.path()).unwrap();
        std::fs::write(witness.path(), text.replace("\"seq\": 70", "\"seq\": 60")).unwrap();
        let err = again.load().unwrap_err().to_string();
        assert!(err.contains("does not open with this log key"), "{err}");
    }

    #[test]
    fn the_witness_only_advances_and_keeps_what_was_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let witness = Witness::new(dir.path(), "s", &LogKey::from_bytes(b"k"));
        assert!(witness.advance(1, head(5, 1)).unwrap());
        assert!(!witness.advance(1, head(4, 2)).unwrap());
        assert!(!witness.advance(1, head(5, 1)).unwrap());
        let acceptance = Acceptance {
            at: "2026-11-28T00:00:00Z".into(),
            by: "ada".into(),
            witnessed: 5,
            store_head: 3,
            lost: 2,
        };
        witness.accept(1, head(3, 3), acceptance.clone()).unwrap();
        assert!(witness.advance(1, head(9, 9)).unwrap());
        let read = witness.load().unwrap().unwrap();
        assert_eq!(read.head, head(9, 9));
        assert_eq!(read.accepted, [acceptance]);
    }

    #[test]
    fn a_store_is_compared_with_what_was_witnessed() {
        let witnessed = Witnessed {
            store: "s".into(),
            from: 1,
            head: head(70, 7),
            accepted: Vec::new(),
            restored: Vec::new(),
        };
        let same = Some([7; 32]);
        assert_eq!(compare(&witnessed, Some(1), 70, same), None);
        assert_eq!(compare(&witnessed, Some(1), 75, same), None);
        assert_eq!(
            compare(&witnessed, None, 70, same),
            Some(Disagreement::Unchained { witnessed: 70 })
        );
        assert_eq!(
            compare(&witnessed, Some(71), 70, same),
            Some(Disagreement::Rechained {
                witnessed_from: 1,
                from: 71
            })
        );
        let cut = compare(&witnessed, Some(1), 60, None).unwrap();
        assert_eq!(cut.lost(), 10);
        assert!(
            cut.explain(Some(Path::new("w")))
                .contains("10 acknowledged records are gone")
        );
        assert_eq!(
            compare(&witnessed, Some(1), 70, Some([8; 32])),
            Some(Disagreement::Replaced { witnessed: 70 })
        );
    }
}

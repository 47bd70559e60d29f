//! The log's keyed hash chain: every record carries a link that proves its content and its
//! place after the record before it (`spec/guide-operations.md` §5.4).
//!
//! `link_i = HMAC-SHA-256(K, link_{i-1} ‖ seq_i ‖ SHA-256(body_i))`, with `link_0 =
//! HMAC(K, "chronoscope-log-v1")`. `K`, the log key, lives outside the database (a file beside
//! the token secret, or one the operator names): whoever can write the database but does not
//! hold `K` cannot give a modified, inserted or reordered record a valid link. A plain hash
//! chain would not do: anyone who can change a record can recompute its hashes.
//!
//! Verification uses the *stored* previous link, so a modified body fails at exactly its
//! record, and a modified link at its record and the next.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// One record's link (or the chain's genesis).
pub type Link = [u8; 32];

/// Name of the generated log key file in the data directory.
pub const KEY_FILE: &str = "log-key";

/// Environment variable naming the log key file (as `--log-key-file` does).
pub const KEY_FILE_ENV: &str = "CHRONOSCOPE_LOG_KEY_FILE";

/// The key the chain is computed with. Never printed; cheap to clone.
#[derive(Clone)]
pub struct LogKey(Arc<[u8]>);

impl fmt::Debug for LogKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LogKey(fingerprint {})", short(&self.fingerprint()))
    }
}

impl LogKey {
    /// A key from its bytes.
    pub fn from_bytes(bytes: impl AsRef<[u8]>) -> Self {
        Self(Arc::from(bytes.as_ref()))
    }

    /// A fixed, public key for engines that tests and benchmarks build in memory. Records
    /// chained with it prove nothing against someone who edits the store on purpose; the
    /// binary always loads a real key ([`LogKey::load`]).
    pub fn development() -> Self {
        Self::from_bytes(b"chronoscope development log key (public: proves nothing)")
    }

    /// Loads the key: the file `explicit` names (which must exist: replicas share one file, and
    /// a fresh key made up on one of them would be refused by the store), else the file
    /// [`KEY_FILE`] in `data_dir`, generated with 32 random bytes and mode 0600 when missing,
    /// like the token secret.
    pub fn load(explicit: Option<&Path>, data_dir: &Path) -> Result<Self, KeyError> {
        let secret = match explicit {
            Some(path) => crate::auth::Secret::from_secret_file(path),
            None => crate::auth::Secret::from_file(&data_dir.join(KEY_FILE)),
        };
        secret
            .map(|s| Self::from_bytes(s.bytes()))
            .map_err(|e| KeyError {
                path: explicit.map_or_else(|| data_dir.join(KEY_FILE), Path::to_path_buf),
                reason: e.to_string(),
            })
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        <Hmac<Sha256> as Mac>::new_from_slice(&self.0).unwrap_or_else(|_| unreachable!())
    }

    /// A MAC under `label`, for tags that must never pass for a link or for one another (the
    /// snapshot seal, the witness).
    pub(crate) fn labelled(&self, label: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.mac();
        mac.update(label);
        mac
    }

    /// The link before record 1.
    pub fn genesis(&self) -> Link {
        let mut mac = self.mac();
        mac.update(b"chronoscope-log-v1");
        mac.finalize().into_bytes().into()
    }

    /// The link of record `seq` holding `body`, after `previous` (the genesis for record 1).
    pub fn link(&self, previous: &Link, seq: u64, body: &str) -> Link {
        self.link_mac(previous, seq, body)
            .finalize()
            .into_bytes()
            .into()
    }

    /// The MAC whose tag is [`LogKey::link`], to compare a stored link with in constant time.
    fn link_mac(&self, previous: &Link, seq: u64, body: &str) -> Hmac<Sha256> {
        let mut mac = self.mac();
        mac.update(previous);
        mac.update(&seq.to_be_bytes());
        mac.update(&Sha256::digest(body.as_bytes()));
        mac
    }

    /// What the store keeps to recognise this key without holding it.
    pub fn fingerprint(&self) -> Link {
        let mut mac = self.mac();
        mac.update(b"fingerprint");
        mac.finalize().into_bytes().into()
    }

    /// An authentication tag for `bytes` (a snapshot), under a label of its own so that it can
    /// never pass for a link.
    pub fn seal(&self, bytes: &[u8]) -> Link {
        let mut mac = self.mac();
        mac.update(b"chronoscope-snapshot-v1");
        mac.update(bytes);
        mac.finalize().into_bytes().into()
    }

    /// Whether `tag` is [`LogKey::seal`] of `bytes`, compared in constant time.
    pub fn opens(&self, bytes: &[u8], tag: &Link) -> bool {
        let mut mac = self.mac();
        mac.update(b"chronoscope-snapshot-v1");
        mac.update(bytes);
        mac.verify_slice(tag).is_ok()
    }

    /// A key of its own for `label` (HMAC of the label under this key), for what the replicas
    /// of one deployment prove to each other (forwarded writes, requests for the writer's
    /// lease): they are only sure to share the log key, and a derived key can never pass for
    /// a link, a seal or the log key itself.
    pub fn derive(&self, label: &str) -> [u8; 32] {
        let mut mac = self.mac();
        mac.update(b"chronoscope-derived-key-v1\n");
        mac.update(label.as_bytes());
        mac.finalize().into_bytes().into()
    }
}

/// The log key file could not be read or made.
#[derive(Debug, thiserror::Error)]
#[error("cannot use the log key {}: {reason}", path.display())]
pub struct KeyError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// What a store records about its chain: which key wrote it, and from which record on the
/// links were made as records were written (records before it were linked when the store
/// was upgraded, so they are proven only from then on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainMeta {
    /// [`LogKey::fingerprint`] of the key.
    pub fingerprint: Link,
    /// The first record linked when it was written.
    pub from: u64,
}

/// Why a record does not verify.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Broken {
    /// Its link does not match its content and the stored link before it.
    #[error(
        "record {seq} does not match its link: it, or the link stored before it, was changed \
         after it was written"
    )]
    Modified {
        /// The record.
        seq: u64,
    },
    /// It has no link, though the chain covers it.
    #[error(
        "record {seq} has no link: it was written or changed by something other than chronoscope"
    )]
    Unlinked {
        /// The record.
        seq: u64,
    },
}

impl Broken {
    /// The record.
    pub fn seq(&self) -> u64 {
        match self {
            Self::Modified { seq } | Self::Unlinked { seq } => *seq,
        }
    }
}

/// Checks one stored record against the stored link before it.
pub fn verify(
    key: &LogKey,
    previous: &Link,
    seq: u64,
    body: &str,
    link: Option<&Link>,
) -> Result<Link, Broken> {
    let link = link.ok_or(Broken::Unlinked { seq })?;
    // Compared in constant time (hmac's `verify_slice`), like a snapshot's seal: how long a
    // refusal takes tells nothing of how much of a forged link was right.
    match key.link_mac(previous, seq, body).verify_slice(link) {
        Ok(()) => Ok(*link),
        Err(_) => Err(Broken::Modified { seq }),
    }
}

/// `bytes` in lowercase hex (links, tags and nonces in files and headers).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes `text` spells in hex, if it is hex.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// The first bytes of a link or fingerprint in hex, to name it in messages.
pub fn short(link: &Link) -> String {
    hex(&link[..6])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_body_seq_or_predecessor_breaks_the_link() {
        let key = LogKey::from_bytes(b"k");
        let first = key.link(&key.genesis(), 1, r#"{"a":1}"#);
        assert_eq!(
            verify(&key, &key.genesis(), 1, r#"{"a":1}"#, Some(&first)),
            Ok(first)
        );
        for (previous, seq, body) in [
            (key.genesis(), 1, r#"{"a":2}"#),
            (key.genesis(), 2, r#"{"a":1}"#),
            (first, 1, r#"{"a":1}"#),
        ] {
            assert_eq!(
                verify(&key, &previous, seq, body, Some(&first)),
                Err(Broken::Modified { seq })
            );
        }
        assert_eq!(
            verify(&key, &key.genesis(), 1, "{}", None),
            Err(Broken::Unlinked { seq: 1 })
        );
    }

    #[test]
    fn another_key_gives_other_links_and_another_fingerprint() {
        let (a, b) = (LogKey::from_bytes(b"a"), LogKey::from_bytes(b"b"));
        assert_ne!(a.genesis(), b.genesis());
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_ne!(a.link(&a.genesis(), 1, "x"), b.link(&a.genesis(), 1, "x"));
        let tag = a.seal(b"snapshot");
        assert!(a.opens(b"snapshot", &tag));
        assert!(!b.opens(b"snapshot", &tag));
        assert!(!a.opens(b"snapshot!", &tag));
    }

    #[test]
    fn the_key_file_is_made_once_and_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let first = LogKey::load(None, dir.path()).unwrap();
        let again = LogKey::load(None, dir.path()).unwrap();
        assert_eq!(first.fingerprint(), again.fingerprint());
        let text = std::fs::read_to_string(dir.path().join(KEY_FILE)).unwrap();
        assert!(!format!("{first:?}").contains(text.trim()));
        // A named file must exist: a replica must not make up a key of its own.
        let missing = dir.path().join("nope");
        let err = LogKey::load(Some(&missing), dir.path()).unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
    }
}

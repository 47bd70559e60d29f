//! The temporal data operations (guide operations §6): data entries stored in a timeline,
//! plain or encrypted with the caller's key, the built-in indexes, and per-traveller
//! bounded-staleness reads.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use zeroize::Zeroizing;

use crate::model::{CacheId, DataId, Instant, TimelineId, Traveller};

/// A JSON object: what a data entry holds.
pub type DataObject = serde_json::Map<String, serde_json::Value>;

/// One immutable entry of a timeline's data, as stored and logged (`StoreData`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataEntry {
    /// Its id.
    pub data_id: DataId,
    /// The timeline it was stored in (branches made later see it too).
    pub timeline_id: TimelineId,
    /// The time the data is about.
    pub timestamp: Instant,
    /// What it holds.
    pub payload: DataPayload,
    /// Who stored it.
    pub stored_by: Traveller,
    /// When (wall clock).
    pub stored_at: Instant,
}

/// A data entry's content: the object itself, or only what decrypting it needs besides the key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DataPayload {
    /// Stored as sent.
    Plain {
        /// The object.
        data: DataObject,
    },
    /// Sealed with a key the service never keeps.
    Encrypted(Sealed),
}

/// An encrypted payload: everything but the key (SSE-C).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sealed {
    /// `AES-256-GCM`.
    pub algorithm: String,
    /// How the key was derived from the customer's.
    pub kdf: KdfParams,
    /// The KDF's random salt (16 bytes, base64).
    pub salt: String,
    /// The cipher's random nonce (12 bytes, base64).
    pub nonce: String,
    /// The ciphertext with its tag (base64).
    pub ciphertext: String,
}

/// Argon2id's parameters, kept with each entry so they can be raised later without breaking
/// older entries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KdfParams {
    /// `argon2id`.
    pub algorithm: String,
    /// Memory in KiB.
    pub memory_kib: u32,
    /// Passes.
    pub iterations: u32,
    /// Lanes.
    pub parallelism: u32,
}

/// A data entry as answered: the object when it is plain, never the ciphertext.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DataEntryInfo {
    /// Its id.
    #[schema(value_type = String)]
    pub data_id: DataId,
    /// The timeline it was stored in.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// The time the data is about.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
    /// Who stored it.
    #[schema(value_type = String)]
    pub stored_by: Traveller,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub stored_at: Instant,
    /// Whether it is encrypted (read it with `decrypt-data`).
    pub encrypted: bool,
    /// The object, when it is plain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub data: Option<DataObject>,
}

impl From<&DataEntry> for DataEntryInfo {
    fn from(e: &DataEntry) -> Self {
        let (encrypted, data) = match &e.payload {
            DataPayload::Plain { data } => (false, Some(data.clone())),
            DataPayload::Encrypted(_) => (true, None),
        };
        Self {
            data_id: e.data_id.clone(),
            timeline_id: e.timeline_id.clone(),
            timestamp: e.timestamp,
            stored_by: e.stored_by.clone(),
            stored_at: e.stored_at,
            encrypted,
            data,
        }
    }
}

/// `store-data`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StoreDataRequest {
    /// The timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// The time the data is about.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
    /// A JSON object of at most 64 KiB.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

/// `retrieve-data`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RetrieveDataQuery {
    /// The timeline.
    #[schema(value_type = String)]
    #[param(value_type = String)]
    pub timeline_id: TimelineId,
    /// The exact time the data was stored at.
    #[schema(value_type = String, format = DateTime)]
    #[param(value_type = String, format = DateTime)]
    pub timestamp: Instant,
    /// One entry at that time (default: the newest plain one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    #[param(value_type = Option<String>)]
    pub data_id: Option<DataId>,
}

/// What `retrieve-data` found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RetrievedData {
    /// The entry answered.
    #[schema(value_type = String)]
    pub data_id: DataId,
    /// Its object.
    #[schema(value_type = Object)]
    pub data: DataObject,
    /// Every entry at that time, oldest first (encrypted ones without their content).
    pub entries: Vec<DataEntryInfo>,
}

/// The customer's encryption key: never stored, logged, shown in `Debug`, nor fingerprinted;
/// wiped from memory when dropped.
#[derive(Clone, Deserialize, Serialize)]
#[serde(transparent)]
pub struct DataKey(Zeroizing<String>);

impl DataKey {
    /// Fewest characters of a key.
    pub const MIN_LEN: usize = 8;
    /// Most characters of a key.
    pub const MAX_LEN: usize = 1024;

    /// The key as text, for deriving the cipher key.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for DataKey {
    fn from(s: String) -> Self {
        Self(Zeroizing::new(s))
    }
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(redacted)")
    }
}

impl PartialEq for DataKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl utoipa::PartialSchema for DataKey {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some(
                "Your key (8 to 1024 characters). It is never stored: keep it, or the data is lost.",
            ))
            .min_length(Some(DataKey::MIN_LEN))
            .max_length(Some(DataKey::MAX_LEN))
            .into()
    }
}

impl ToSchema for DataKey {}

/// `encrypt-data`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EncryptDataRequest {
    /// The timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// A JSON object of at most 64 KiB.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
    /// Your key.
    pub encryption_key: DataKey,
    /// The time the data is about (default: your time if you are in the timeline, else its
    /// destination time, else now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub timestamp: Option<Instant>,
}

/// `decrypt-data`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DecryptDataRequest {
    /// The entry.
    #[schema(value_type = String)]
    pub data_id: DataId,
    /// The key it was encrypted with.
    pub encryption_key: DataKey,
}

/// Whether `decrypt-data` had anything to decrypt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecryptStatus {
    /// The entry was encrypted and the key opened it.
    Decrypted,
    /// The entry was stored plain; the key was not needed.
    NotEncrypted,
}

/// What `decrypt-data` read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DecryptedData {
    /// `decrypted` or `not_encrypted`.
    pub status: DecryptStatus,
    /// The object.
    #[schema(value_type = Object)]
    pub data: DataObject,
    /// The entry.
    #[schema(value_type = String)]
    pub data_id: DataId,
    /// Its timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// Its time.
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Instant,
}

/// `create-index`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct IndexRequest {
    /// `timestamp`, `location` or `timeline_id`.
    pub index_type: String,
    /// The timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
}

/// A built-in index, reported (nothing is created: it exists and is kept current on every
/// write).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct IndexReport {
    /// `idx_<timeline>_<type>`: stable, not minted.
    pub index_id: String,
    /// Its type.
    pub index_type: String,
    /// Its timeline.
    #[schema(value_type = String)]
    pub timeline_id: TimelineId,
    /// How many entries it holds now.
    pub entries: u64,
    /// The operations it answers.
    pub serves: Vec<String>,
    /// `on every write`.
    pub maintained: String,
}

/// `enable-caching`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CachingRequest {
    /// Seconds as a string or a number, or a duration (`10m`, `1h`, `PT1H`): 1 s to 1 d; `0`
    /// turns bounded-staleness reads off.
    #[schema(schema_with = cache_duration_schema)]
    pub cache_duration: serde_json::Value,
    /// `timeline` (every read) or `event` (event searches and `monitor-events`).
    pub cache_scope: String,
}

/// `cache_duration`: a string (seconds or a duration) or a whole number of seconds.
fn cache_duration_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
    let one_of = OneOfBuilder::new()
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(
                    "Seconds (`3600`) or a duration (`10m`, `1h30m`, `PT1H`)",
                )),
        )
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(0))
                .maximum(Some(MAX_STALENESS_SECS)),
        )
        .description(Some(
            "How stale your reads in scope may be: 1 s to 1 d; 0 turns it off",
        ))
        .build();
    Schema::OneOf(one_of)
}

/// The longest bounded staleness a traveller may ask for, in seconds (a day).
pub const MAX_STALENESS_SECS: u64 = 86_400;

/// Which reads a staleness setting covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CacheScope {
    /// Every read.
    Timeline,
    /// Event searches and `monitor-events`.
    Event,
}

/// Whether bounded-staleness reads are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CachingStatus {
    /// On.
    Enabled,
    /// Off: every read waits for the read barrier.
    Disabled,
}

/// A traveller's read-staleness setting, as logged (`SetReadStaleness`) and answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReadStaleness {
    /// Its id.
    #[schema(value_type = String)]
    pub cache_id: CacheId,
    /// Whose reads.
    #[schema(value_type = String)]
    pub traveller: Traveller,
    /// Which reads.
    pub scope: CacheScope,
    /// How stale a read in scope may be, in seconds (0: off).
    pub max_staleness: u64,
}

/// `enable-caching`'s answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CachingSetting {
    /// `enabled` or `disabled`.
    pub status: CachingStatus,
    /// The setting's id.
    #[schema(value_type = String)]
    pub cache_id: CacheId,
    /// Which reads.
    pub scope: CacheScope,
    /// Seconds.
    pub max_staleness: u64,
    /// What a read in scope is guaranteed to see.
    pub guarantee: String,
}

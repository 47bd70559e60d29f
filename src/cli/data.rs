//! `chronoscope data …`: temporal data entries (store, get, encrypt, decrypt), the built-in
//! indexes and bounded-staleness reads.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Subcommand;

use super::output::Output;
use crate::error::ServiceError;
use crate::model::{Instant, format_instant};
use crate::service::*;

/// `data …`.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Store a JSON object in a timeline at a time (entries are immutable: storing again adds one)
    Store {
        /// Timeline id
        timeline: String,
        /// The time it is about (RFC 3339, or UTC as 1889-03-10 23:50 or a date)
        #[arg(value_parser = super::parse_time)]
        timestamp: Instant,
        /// The object, as JSON, e.g. '{"event": "Project X Launch"}'
        data: String,
    },
    /// Show the newest plain entry stored at exactly a time (or the one --id names)
    Get {
        /// Timeline id
        timeline: String,
        /// The time (RFC 3339, or UTC as 1889-03-10 23:50 or a date)
        #[arg(value_parser = super::parse_time)]
        timestamp: Instant,
        /// One entry at that time
        #[arg(long)]
        id: Option<String>,
    },
    /// Encrypt a JSON object with your key and store only the ciphertext (the key is never kept:
    /// lose it and the data is lost)
    Encrypt {
        /// Timeline id
        timeline: String,
        /// The object, as JSON
        data: String,
        /// The time it is about (default: yours if you are in the timeline, else its
        /// destination time, else now)
        #[arg(long, value_parser = super::parse_time)]
        at: Option<Instant>,
        #[command(flatten)]
        key: KeyArgs,
    },
    /// Decrypt an entry with the key it was encrypted with (nothing is written)
    Decrypt {
        /// The entry's id
        id: String,
        #[command(flatten)]
        key: KeyArgs,
    },
    /// Report a built-in index: timestamp, location or timeline_id (nothing is created)
    Index {
        /// timestamp, location or timeline_id
        index_type: String,
        /// Timeline id
        #[arg(long, default_value = "primary")]
        timeline: String,
    },
    /// Let your own reads be up to a duration stale (seconds, 10m, PT1H; at most 1d); 0 turns it off
    Cache {
        /// Seconds or a duration
        duration: String,
        /// timeline (every read) or event (event searches and events monitor)
        #[arg(long, default_value = "timeline")]
        scope: String,
    },
    /// Withdraw a read-staleness setting (`data cache` printed its id): your reads wait for
    /// the read barrier again
    Uncache {
        /// The setting's id (cch_…)
        id: String,
    },
}

/// Where the encryption key comes from: never the command line, where other users' `ps` and
/// the shell's history would see it.
#[derive(clap::Args)]
pub struct KeyArgs {
    /// Read the key from this file (its first line), or from standard input with -
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// The key itself (read from the environment only)
    #[arg(
        long = "key-from-env",
        env = "CHRONOSCOPE_DATA_KEY",
        hide_env_values = true,
        hide = true
    )]
    key_env: Option<String>,
}

/// Never shows the key.
impl std::fmt::Debug for KeyArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyArgs")
            .field("key_file", &self.key_file)
            .field("key_env", &self.key_env.as_ref().map(|_| "(redacted)"))
            .finish()
    }
}

impl KeyArgs {
    fn key(self) -> Result<DataKey, ServiceError> {
        let refuse = |why: String| ServiceError::invalid("key", why);
        let text = match (self.key_file, self.key_env) {
            (Some(path), _) if path.as_os_str() == "-" => {
                let mut line = String::new();
                std::io::stdin()
                    .read_line(&mut line)
                    .map_err(|e| refuse(format!("cannot read the key from standard input: {e}")))?;
                line
            }
            (Some(path), _) => std::fs::read_to_string(&path)
                .map_err(|e| refuse(format!("cannot read {}: {e}", path.display())))?,
            (None, Some(key)) => key,
            (None, None) => {
                return Err(refuse(
                    "give the key with --key-file FILE (or - for standard input) or the environment variable CHRONOSCOPE_DATA_KEY".into(),
                ));
            }
        };
        // Wiped once its first line is taken (a key file ends with a line break).
        let text = zeroize::Zeroizing::new(text);
        Ok(DataKey::from(
            text.lines().next().unwrap_or_default().to_owned(),
        ))
    }
}

/// A JSON argument as the object it must be.
fn object(text: &str) -> Result<serde_json::Value, ServiceError> {
    // Where the text stops being JSON, in words, with the shape it must have: serde's own
    // words ("expected ident") mean nothing to a reader.
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        ServiceError::invalid(
            "data",
            format!(
                "is not JSON (it stops being JSON at line {}, column {}): give a JSON object, \
                 e.g. '{{\"event\": \"Project X Launch\"}}'",
                e.line(),
                e.column()
            ),
        )
    })?;
    if !value.is_object() {
        return Err(ServiceError::invalid(
            "data",
            r#"must be a JSON object, e.g. '{"event": "Project X Launch"}'"#,
        ));
    }
    Ok(value)
}

/// Runs one `data` subcommand.
pub async fn execute(
    command: DataCommand,
    service: &dyn TimelineService,
    out: &mut Output<'_>,
) -> Result<(), ServiceError> {
    match command {
        DataCommand::Store {
            timeline,
            timestamp,
            data,
        } => out.print(
            &service
                .store_data(StoreDataRequest {
                    timeline_id: timeline.parse()?,
                    timestamp,
                    data: object(&data)?,
                })
                .await?,
            entry,
        ),
        DataCommand::Get {
            timeline,
            timestamp,
            id,
        } => out.print(
            &service
                .retrieve_data(RetrieveDataQuery {
                    timeline_id: timeline.parse()?,
                    timestamp,
                    data_id: id.as_deref().map(str::parse).transpose()?,
                })
                .await?,
            |r| {
                let mut s = pretty(&r.data);
                if r.entries.len() > 1 {
                    let _ = writeln!(
                        s,
                        "({} entries at this time; this is {})",
                        r.entries.len(),
                        r.data_id
                    );
                }
                s
            },
        ),
        DataCommand::Encrypt {
            timeline,
            data,
            at,
            key,
        } => out.print(
            &service
                .encrypt_data(EncryptDataRequest {
                    timeline_id: timeline.parse()?,
                    data: object(&data)?,
                    encryption_key: key.key()?,
                    timestamp: at,
                })
                .await?,
            entry,
        ),
        DataCommand::Decrypt { id, key } => out.print(
            &service
                .decrypt_data(DecryptDataRequest {
                    data_id: id.parse()?,
                    encryption_key: key.key()?,
                })
                .await?,
            |d| pretty(&d.data),
        ),
        DataCommand::Index {
            index_type,
            timeline,
        } => out.print(
            &service
                .report_index(IndexRequest {
                    index_type,
                    timeline_id: timeline.parse()?,
                })
                .await?,
            |i| {
                format!(
                    "{}: {} entries, kept current {}; serves {}\n",
                    i.index_id,
                    i.entries,
                    i.maintained,
                    i.serves.join(", ")
                )
            },
        ),
        DataCommand::Uncache { id } => {
            let id: crate::model::CacheId = id.parse()?;
            service.disable_caching(&id).await?;
            out.print(&serde_json::json!({ "withdrawn": id }), |_| {
                format!("withdrew {id}; your reads wait for the read barrier again\n")
            })
        }
        DataCommand::Cache { duration, scope } => out.print(
            &service
                .enable_caching(CachingRequest {
                    cache_duration: serde_json::Value::String(duration),
                    cache_scope: scope,
                })
                .await?,
            |c| {
                let state = match c.status {
                    CachingStatus::Enabled => format!("enabled, up to {} s stale", c.max_staleness),
                    CachingStatus::Disabled => "disabled".to_owned(),
                };
                format!("{} {state}: {}\n", c.cache_id, c.guarantee)
            },
        ),
    }
}

/// An object, indented.
fn pretty(data: &DataObject) -> String {
    let mut s = serde_json::to_string_pretty(data).unwrap_or_default();
    s.push('\n');
    s
}

/// One entry, in a line.
fn entry(e: &DataEntryInfo) -> String {
    format!(
        "{} {} in {} at {}\n",
        e.data_id,
        if e.encrypted { "encrypted" } else { "stored" },
        e.timeline_id,
        format_instant(&e.timestamp)
    )
}

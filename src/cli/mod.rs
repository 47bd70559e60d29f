//! The command line: flags shared by every subcommand, and the scriptable subcommands.
//!
//! Every flag is written once here, with its environment variable, and `--help` shows both.
//! Subcommands talk to an `Arc<dyn TimelineService>`, so each works the same on the embedded
//! engine and, with `--remote`, on a server.

mod access;
mod commands;
mod data;
mod follow;
mod output;
mod transfer;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use commands::execute;
pub use output::Verdict;

use crate::engine::Seed;
use crate::model::{Instant, TimeRange, Window};

/// What the exit status of a command says, for scripts.
const EXIT_STATUSES: &str = "Exit status: 0 done (and nothing found); 1 the service or store \
    could not be reached, or `verify` found a bad record; 2 refused, or bad input or settings; \
    3 `detect-tampering` found tampering; 4 `check` or `stability`: the timeline is or would \
    be unstable; 5 `holds`: the event was altered; 6 `holds`: no such event in the timeline.";

/// chronoscope: a timeline travel service and the terminal dashboard that drives it.
///
/// Without a subcommand, opens the dashboard on the embedded engine (a SQLite file in the data
/// directory, seeded with the demo world on first run), or on a server with --remote.
#[derive(Debug, Parser)]
#[command(
    name = "chronoscope",
    version,
    propagate_version = true,
    after_help = EXIT_STATUSES
)]
pub struct Cli {
    /// Flags every subcommand shares.
    #[command(flatten)]
    pub global: Global,
    /// Dashboard settings (used when no subcommand is given).
    #[command(flatten)]
    pub dashboard: DashboardArgs,
    /// What to do; the dashboard when absent.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Flags every subcommand shares.
#[derive(Debug, Args, Clone)]
// Under their own heading, so each subcommand's own options come first in its --help.
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// Where the SQLite file and the server's token secret live [default: the user's data directory]
    #[arg(long, global = true, env = "CHRONOSCOPE_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// The store: sqlite://PATH or postgres://USER@HOST/DB [default: sqlite file in the data directory]
    #[arg(long, global = true, env = "CHRONOSCOPE_DATABASE", value_name = "URL")]
    pub database: Option<String>,

    /// The key that chains the log, so changes made to the store behind chronoscope's back are detected; every replica of one store needs the same file [default: `log-key` in the data directory, made when missing]
    #[arg(
        long,
        global = true,
        env = "CHRONOSCOPE_LOG_KEY_FILE",
        value_name = "FILE"
    )]
    pub log_key_file: Option<PathBuf>,

    /// What a new, empty store is filled with [default: demo for the dashboard and commands, none for serve]
    #[arg(long, global = true, env = "CHRONOSCOPE_SEED", value_enum)]
    pub seed: Option<Seed>,

    /// Talk to a chronoscope server at this URL instead of the embedded engine, e.g. https://host:8443 (a trailing /v1 is fine)
    #[arg(long, global = true, env = "CHRONOSCOPE_REMOTE", value_name = "URL")]
    pub remote: Option<String>,

    /// Also trust this CA certificate (PEM) for an https --remote, for a server whose certificate a private CA signed
    #[arg(long, global = true, env = "CHRONOSCOPE_CA_CERT", value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,

    /// Bearer token for --remote (see `chronoscope token`)
    #[arg(
        long,
        global = true,
        env = "CHRONOSCOPE_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,

    /// Act as this traveller on the embedded engine [default: your OS user name]
    #[arg(
        long = "as",
        global = true,
        env = "CHRONOSCOPE_TRAVELLER",
        value_name = "NAME"
    )]
    pub traveller: Option<String>,

    /// How long new timelines stay open, in words [default: 1 hour]; the embedded engine and
    /// `serve` only (a server decides for its own timelines, so --remote refuses it)
    #[arg(long, global = true, env = "CHRONOSCOPE_WINDOW", value_name = "WORDS")]
    pub window: Option<Window>,

    /// Print results as JSON (for scripts) instead of text
    #[arg(long, global = true, env = "CHRONOSCOPE_JSON")]
    pub json: bool,

    /// Log filter for diagnostics on stderr, e.g. info or chronoscope=debug
    #[arg(
        long,
        global = true,
        env = "CHRONOSCOPE_LOG",
        default_value = "warn",
        value_name = "FILTER"
    )]
    pub log: String,
}

/// Colour theme of the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ThemeArg {
    /// Light text on a dark terminal.
    Dark,
    /// Dark text on a light terminal.
    Light,
}

/// Dashboard settings.
#[derive(Debug, Args, Clone)]
pub struct DashboardArgs {
    /// How often the dashboard refreshes the anomaly monitor, e.g. 2s, 500ms
    #[arg(long, env = "CHRONOSCOPE_TICK", default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    pub tick: Duration,

    /// Let the mouse select rows and panes
    #[arg(long, env = "CHRONOSCOPE_MOUSE")]
    pub mouse: bool,

    /// A key map file overriding the default bindings
    #[arg(long, env = "CHRONOSCOPE_KEYMAP", value_name = "FILE")]
    pub keymap: Option<PathBuf>,

    /// Colour theme
    #[arg(long, env = "CHRONOSCOPE_THEME", value_enum, default_value = "dark")]
    pub theme: ThemeArg,
}

/// `link-unchained-store --help`: what the command makes permanent.
const LINK_UNCHAINED_ABOUT: &str = "\
Link the records of a store an older version of chronoscope wrote, before the log was chained.

Every record is linked as it is now, and from then on every start, `chronoscope verify` and \
scan proves it against the log key. So whatever the records say at this moment becomes the \
proven history: an edit made in the database before this command can never be told again. Run \
it once, on a store you trust as it is (a backup of it is wise), with the log key every replica \
will use.

No start links anything: a store that holds records and has no chain record is refused. A store \
whose chain record was removed (a record carries a link, or this data directory witnessed the \
store chained) is refused here too: someone who can write the database removed it, perhaps to \
have changed records linked again. Restore such a store from a backup or a standby; \
--despite-links links it anyway and says so loudly.";

/// `timelines export --help`: what the file holds.
const EXPORT_ABOUT: &str = "\
Write a timeline as a world file: JSON in the format `timelines import` reads, the one \
assets/worlds/demo.json is written in, one event per line.

The file holds the timeline (id, name, description, variation, window, destination time) and \
every version of its events, in time order: each with its id, time, location, description, \
causes and whether it is a fixed point, and for a changed lineage its status (manipulated, \
superseded or reverted) and the version it supersedes or was superseded by. A branch is \
written whole, with the events it inherited, and names no parent. Everything is read from one \
state of the store.

Written to standard output, or with --to to FILE: under a temporary name beside it, renamed \
into place only once complete (an interrupted export leaves no half file). With --to, --json \
prints a summary.";

/// `timelines import --help`: what the file holds, what happens to taken ids, what is refused.
const IMPORT_ABOUT: &str = "\
Create the timelines of a world file (what `timelines export` writes, or \
assets/worlds/demo.json) in the embedded store, or with --remote on the server, in one write: \
all of it or nothing.

The file: {\"format\": \"chronoscope-world\", \"version\": 1, \"timelines\": [...], \
\"steps\": [...]} (format, version and steps optional). A timeline has an id and a name, and \
may have a description, variation, window (\"2 hours\", \"unbounded\"), destination_time, \
parent (a timeline earlier in the file, or one in the store: the branch also holds its \
events), events and manipulations. An event has an id, time (RFC 3339), location and \
description, and may have causes (events of the same timeline, or of its parent), fixed_point, \
status (on_schedule, manipulated, superseded, reverted) and supersedes / superseded_by (the \
versions of its lineage in the same timeline).

Taken ids: a timeline keeps its id when the store has none with it; otherwise (primary, \
always) it gets a new tml_... id. An event keeps its id unless its timeline already holds one \
(inherited from its parent), and a pending merge its id unless taken. Every id changed is \
reported, old -> new, and references to it in the file follow it.

Refused whole, with nothing written, naming the line and the field at fault (line 14, \
timelines[0].events[3].time: ...): text that is not JSON, a field missing, unknown or of the \
wrong type, a bad time, an empty name or description, an id given twice, a cause, parent or \
version that does not exist, a manipulation of a fixed point, a step that changes a timeline \
the file does not create, another format version, and a timeline that would hold a paradox \
(an event before its cause, a causal loop) that its parent does not, unless \
--no-safety-check, which imports anyway and lists them.

A large import shows a progress bar (events checked, rate, time left) when stderr is a \
terminal, nothing otherwise; --json prints one JSON summary. A server takes the file as one \
request, so its --body-limit bounds the file's size.";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP service (https with --tls-cert and --tls-key)
    Serve(Box<ServeArgs>),
    /// Print a bearer token for the server that uses this data directory
    Token(TokenArgs),
    /// Check every record of the store (or, with --backup, of a backup file) against the log key and report the first bad one (read-only; exit status 1 when one is found)
    Verify(VerifyArgs),
    /// Write a backup of the store to FILE while servers go on serving: every record acknowledged before it began, each link checked, sealed with the log key
    #[command(long_about = BACKUP_ABOUT)]
    Backup(BackupArgs),
    /// Restore a backup into the store named by --database / --data-dir, which must be empty: verified whole first, written in one transaction
    #[command(long_about = RESTORE_ABOUT)]
    Restore(RestoreArgs),
    /// Link the records of a store an older version wrote, before the log was chained (a one-time operator step; no start does it)
    #[command(long_about = LINK_UNCHAINED_ABOUT)]
    LinkUnchainedStore(LinkUnchainedArgs),
    /// This data directory's witness of the store: show it, or accept records lost on purpose
    #[command(subcommand)]
    Witness(WitnessCommand),
    /// Show who you are and where you are
    Whoami,
    /// List, show, create and delete timelines
    #[command(subcommand)]
    Timelines(TimelineCommand),
    /// Search, add, manipulate and revert events
    #[command(subcommand)]
    Events(EventCommand),
    /// Recorded merges: list, show, and review, resolve or abort those waiting for review
    #[command(subcommand)]
    Merges(MergeCommand),
    /// Register and list your items
    #[command(subcommand)]
    Items(ItemCommand),
    /// Set and list your anchors (return tickets)
    #[command(subcommand)]
    Anchors(AnchorCommand),
    /// Travel to a timeline or return to one of your anchors; everything you carry comes
    /// along unless --item names which (or --travel-light none)
    Travel(TravelArgs),
    /// Travel to a time in your current timeline (or --timeline); everything you carry comes
    /// along unless --item names which (or --travel-light none)
    Jump(JumpArgs),
    /// Return to one of your active anchors; everything you carry comes along unless --item
    /// names which (or --travel-light none)
    Return(ReturnArgs),
    /// Switch to another timeline at your current time; everything you carry comes along
    Switch {
        /// Timeline id
        timeline: String,
    },
    /// Pause your own clock (the shared world goes on)
    Pause,
    /// Let your paused clock run on from where it stood
    Resume,
    /// Move forward in your timeline by a duration (10m, 1h30m, 1d, PT10M, P1M, ...);
    /// everything you carry comes along
    FastForward {
        /// The duration
        duration: String,
        /// Refuse the move if what you carry would add a paradox at the new time
        #[arg(long)]
        safety_check: bool,
    },
    /// Move back in your timeline by a duration (5m, 1h30m, 1d, PT5M, P1Y, ...); everything
    /// you carry comes along
    Rewind {
        /// The duration
        duration: String,
        /// Refuse the move if what you carry would add a paradox at the new time
        #[arg(long)]
        safety_check: bool,
    },
    /// List your journeys
    Journeys(PageArgs),
    /// Check proposed changes to a timeline for paradoxes (nothing is written; exit status 4 when it would be unstable)
    Check(CheckArgs),
    /// Scan a timeline for anomalies
    Monitor(MonitorArgs),
    /// Check a timeline as it stands for paradoxes, optionally only after an event (exit status 4 when it is unstable)
    Stability {
        /// Timeline id
        #[arg(default_value = "primary")]
        timeline: String,
        /// Only report paradoxes at or after this event's time
        #[arg(long)]
        after: Option<String>,
    },
    /// Say whether a significant event (an id or a description) still holds in a timeline (exit status 5 when it was altered, 6 when it is missing)
    Holds {
        /// The event id or its description
        event: String,
        /// Timeline id
        #[arg(long, default_value = "primary")]
        timeline: String,
    },
    /// Simulate a journey from one time to another (nothing is written): the time between them
    /// and whether arriving with what you carry would add a paradox
    Wormhole {
        /// Where the journey leaves (RFC 3339, or UTC as 1889-03-10 23:50 or a date)
        #[arg(value_parser = parse_time)]
        entry: Instant,
        /// Where it arrives
        #[arg(value_parser = parse_time)]
        exit: Instant,
        /// The timeline (default: where you are)
        #[arg(long)]
        timeline: Option<String>,
        /// Skip the paradox check
        #[arg(long)]
        no_check: bool,
    },
    /// Store, list and delete automation scripts
    #[command(subcommand)]
    Scripts(ScriptCommand),
    /// Schedule, list and cancel manipulations
    #[command(subcommand)]
    Schedules(ScheduleCommand),
    /// Record an outside system's trigger; its actions run at --at (now if past)
    Trigger(TriggerArgs),
    /// Print a shell completion script, e.g. `chronoscope completions bash > ~/.local/share/bash-completion/completions/chronoscope`
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `chronoscope man > chronoscope.1`, or write one page per command to a directory
    Man {
        /// Write chronoscope.1 and a page for every subcommand (chronoscope-serve.1, …) here instead
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
    /// Show the automation log
    Log {
        /// Only this timeline
        #[arg(long)]
        timeline: Option<String>,
        /// Only entries in this ISO 8601 interval
        #[arg(long, value_parser = parse_range)]
        range: Option<TimeRange>,
        /// Paging
        #[command(flatten)]
        page: PageArgs,
    },
    /// Check the stored log's hash chain and say whether anything bearing on a timeline was
    /// altered (records changed, deleted or cut off; another log key); exit status 3 when it was
    DetectTampering {
        /// Timeline id
        timeline: String,
        /// Check every record, not only those after the last scan (or, before any scan, after
        /// the newest snapshot); only a full scan clears what earlier scans found
        #[arg(long)]
        full: bool,
    },
    /// Prove a timeline's events and data entries as of a time against the verified log: the
    /// share that passes, and why the others do not
    ValidateIntegrity {
        /// Timeline id
        timeline: String,
        /// As of this time (RFC 3339, or UTC as 1889-03-10 23:50 or a date) [default: now]
        #[arg(long, value_parser = parse_time)]
        at: Option<Instant>,
    },
    /// Store and read data entries in a timeline, plain or encrypted with your key; report the
    /// built-in indexes; allow your reads to be boundedly stale
    #[command(subcommand)]
    Data(data::DataCommand),
    /// Who may read, write and administer timelines; restrictions on travellers (operators)
    #[command(subcommand)]
    Access(access::AccessCommand),
}

/// Actions of scripts and triggers.
#[derive(Debug, Args, Clone)]
pub struct ActionArgs {
    /// An action as KIND:EVENT, KIND being manipulate or revert (repeat for several), e.g. manipulate:event-6789efgh
    #[arg(long = "action", required = true, value_name = "KIND:EVENT")]
    pub actions: Vec<String>,
    /// New time for manipulate actions (RFC 3339, or UTC as 1889-03-10 23:50 or a date)
    #[arg(long, value_parser = parse_time)]
    pub new_time: Option<Instant>,
    /// New description for manipulate actions
    #[arg(long)]
    pub new_details: Option<String>,
}

/// `scripts …`.
#[derive(Debug, Subcommand)]
pub enum ScriptCommand {
    /// Store a script: when its trigger event is manipulated or reverted (or its check date
    /// passes while the trigger has the awaited status), its actions run once
    Create {
        /// A name for people
        name: String,
        /// The event whose changes fire it
        #[arg(long)]
        trigger: String,
        /// Timeline id
        #[arg(long, default_value = "primary")]
        timeline: String,
        /// Also fire when this time passes… (RFC 3339, or UTC as 1889-03-10 23:50 or a date)
        #[arg(long, value_parser = parse_time)]
        check_date: Option<Instant>,
        /// …while the trigger event has this status (on_schedule, manipulated, superseded, reverted)
        #[arg(long)]
        status_check: Option<String>,
        /// What it does
        #[command(flatten)]
        actions: ActionArgs,
    },
    /// List your scripts
    List(PageArgs),
    /// Delete one of your scripts
    Delete {
        /// Script id
        id: String,
    },
}

/// `schedules …`.
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Schedule a manipulation of an event at a wall-clock time
    Create {
        /// The event (its lineage's current head is changed)
        event: String,
        /// When to run (RFC 3339, or UTC as 1889-03-10 23:50 or a date)
        #[arg(long, value_parser = parse_time)]
        at: Instant,
        /// New time of the event
        #[arg(long, value_parser = parse_time)]
        new_time: Option<Instant>,
        /// New description of the event
        #[arg(long)]
        new_details: Option<String>,
        /// Timeline id
        #[arg(long, default_value = "primary")]
        timeline: String,
    },
    /// List your scheduled and triggered jobs
    List(PageArgs),
    /// Cancel a job that has not run yet
    Cancel {
        /// Schedule id
        id: String,
    },
}

/// `trigger`.
#[derive(Debug, Args)]
pub struct TriggerArgs {
    /// The outside system calling, e.g. "CI pipeline"
    #[arg(long)]
    pub system: String,
    /// Its build status, recorded
    #[arg(long)]
    pub build_status: Option<String>,
    /// When to run the actions (RFC 3339, or UTC as 1889-03-10 23:50 or a date; now if past or absent)
    #[arg(long, value_parser = parse_time)]
    pub at: Option<Instant>,
    /// Timeline id
    #[arg(long, default_value = "primary")]
    pub timeline: String,
    /// What to do
    #[command(flatten)]
    pub actions: ActionArgs,
}

/// `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on
    #[arg(
        long,
        env = "CHRONOSCOPE_LISTEN",
        default_value = "127.0.0.1:8080",
        value_name = "ADDR"
    )]
    pub listen: String,
    /// With several replicas on PostgreSQL: the address at which the other replicas reach this one, e.g. http://10.0.0.5:8080, or https://replica-1.example:8443 with --tls-cert (its certificate must be valid for that name). While this replica holds the writer's lease, the others send it the writes they receive (never a client's token or encryption key), so that one replica decides them all [default: http://ADDR when --listen names one address and there is no --tls-cert; none when it listens on every address (0.0.0.0, [::]) or over https without this flag: then the lease moves to whichever replica has writes, which is slower]
    #[arg(long, env = "CHRONOSCOPE_ADVERTISE_URL", value_name = "URL")]
    pub advertise_url: Option<String>,
    /// CA certificates (PEM) that sign the other replicas' certificates, when they advertise https addresses signed by a private CA (the platform's roots are trusted too)
    #[arg(long, env = "CHRONOSCOPE_REPLICA_CA_CERT", value_name = "FILE")]
    pub replica_ca_cert: Option<PathBuf>,
    /// HS256 secret for tokens, at least 32 bytes; prefer the environment variable or --jwt-secret-file, since a flag shows in `ps` [default: the `jwt-secret` file in the data directory, created if missing]
    #[arg(
        long,
        env = "CHRONOSCOPE_JWT_SECRET",
        value_name = "SECRET",
        hide_env_values = true,
        conflicts_with = "jwt_secret_file"
    )]
    pub jwt_secret: Option<String>,
    /// Read the HS256 secret (at least 32 bytes, surrounding whitespace ignored) from this file
    #[arg(long, env = "CHRONOSCOPE_JWT_SECRET_FILE", value_name = "FILE")]
    pub jwt_secret_file: Option<PathBuf>,
    /// Also accept your identity provider's tokens (RS256, ES256, …), verified with the JSON Web Key Set in this file (read at start); `sub` names the traveller, `scope` or `scp` grants read/write/admin
    #[arg(
        long,
        env = "CHRONOSCOPE_JWKS_FILE",
        value_name = "FILE",
        conflicts_with = "jwks_url"
    )]
    pub jwks_file: Option<PathBuf>,
    /// Like --jwks-file, with the key set fetched from this URL at start, again when its Cache-Control max-age runs out (1 minute to 1 day, 15 minutes without one), and early when a token names an unknown key id
    #[arg(long, env = "CHRONOSCOPE_JWKS_URL", value_name = "URL")]
    pub jwks_url: Option<String>,
    /// The `iss` the identity provider's tokens must carry (checked when set)
    #[arg(long, env = "CHRONOSCOPE_JWT_ISSUER", value_name = "ISSUER")]
    pub jwt_issuer: Option<String>,
    /// An audience the identity provider's tokens' `aud` must name; required with --jwks-file or --jwks-url (unless --jwt-any-audience), since a token the provider issued for another service would otherwise be accepted here with its scopes
    #[arg(long, env = "CHRONOSCOPE_JWT_AUDIENCE", value_name = "AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// Accept the identity provider's tokens whatever their audience: say so only when every token it issues is meant for this server
    #[arg(
        long,
        env = "CHRONOSCOPE_JWT_ANY_AUDIENCE",
        conflicts_with = "jwt_audience"
    )]
    pub jwt_any_audience: bool,
    /// What the identity provider's travellers are called here: this prefix before their `sub` (`grace` becomes `idp:grace` in access lists, restrictions and the access log), so that they and the server's own tokens' travellers can never name each other; the server's own tokens may not use it. `-` for none (one shared namespace: a provider's `root` is then the same traveller as a minted `root`)
    #[arg(
        long,
        env = "CHRONOSCOPE_JWT_SUBJECT_PREFIX",
        value_name = "PREFIX",
        default_value = crate::auth::jwks::DEFAULT_SUBJECT_PREFIX
    )]
    pub jwt_subject_prefix: String,
    /// Requests per second allowed per traveller (0 = no limit)
    #[arg(long, env = "CHRONOSCOPE_RATE_LIMIT", default_value_t = 50)]
    pub rate_limit: u32,
    /// Requests a traveller may send in a burst above the rate
    #[arg(long, env = "CHRONOSCOPE_RATE_BURST", default_value_t = 100)]
    pub rate_burst: u32,
    /// Requests per second allowed per client address, checked before authentication (0 = no limit; behind a proxy every client shares its address)
    #[arg(long, env = "CHRONOSCOPE_ADDRESS_RATE_LIMIT", default_value_t = 500)]
    pub address_rate_limit: u32,
    /// Requests a client address may send in a burst above its rate
    #[arg(long, env = "CHRONOSCOPE_ADDRESS_RATE_BURST", default_value_t = 1000)]
    pub address_rate_burst: u32,
    /// Largest request body accepted, in bytes
    #[arg(long, env = "CHRONOSCOPE_BODY_LIMIT", default_value_t = 1024 * 1024)]
    pub body_limit: usize,
    /// Longest a request may take before it is answered 503, e.g. 30s
    #[arg(long, env = "CHRONOSCOPE_REQUEST_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Longest a client may take to send a request's headers (over https also the TLS handshake), e.g. 10s; an HTTP/1.1 connection waiting for its next request is closed after it too
    #[arg(long, env = "CHRONOSCOPE_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = parse_positive_duration)]
    pub header_read_timeout: Duration,
    /// Close a connection on which no byte has been sent or received for this long, e.g. 60s (keep it above --request-timeout)
    #[arg(long, env = "CHRONOSCOPE_IDLE_TIMEOUT", default_value = "60s", value_parser = parse_positive_duration)]
    pub idle_timeout: Duration,
    /// On SIGTERM or Ctrl-C, how long requests in flight may go on before their connections are closed, e.g. 10s
    #[arg(long, env = "CHRONOSCOPE_SHUTDOWN_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub shutdown_timeout: Duration,
    /// Serve https with this certificate chain (PEM); needs --tls-key
    #[arg(
        long,
        env = "CHRONOSCOPE_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert
    #[arg(
        long,
        env = "CHRONOSCOPE_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// Write a snapshot of the state beside the log once this many records were appended since the newest one, so a start replays only the records after it (0 = never write snapshots; any replica may write them, and every start reads the newest usable one)
    #[arg(
        long,
        env = "CHRONOSCOPE_SNAPSHOT_RECORDS",
        default_value_t = 20_000,
        value_name = "N"
    )]
    pub snapshot_records: u64,
    /// Also write a snapshot once this long has passed since the newest one and anything was appended, e.g. 10m (at most one every 30s per process)
    #[arg(long, env = "CHRONOSCOPE_SNAPSHOT_INTERVAL", default_value = "10m", value_parser = parse_duration)]
    pub snapshot_interval: Duration,
    /// Least time between two queries of the log's head by the read barrier (PostgreSQL), from 0 (back to back) to 1s, e.g. 1ms. Every read waits for one such query sent after it arrived, so that it sees every write any replica acknowledged before it; one query serves every read that arrived before it was sent. An interval caps the database queries a replica makes for reads at one per interval, and makes reads wait up to one interval longer
    #[arg(long, env = "CHRONOSCOPE_READ_INDEX_INTERVAL", default_value = "0", value_parser = parse_read_index_interval)]
    pub read_index_interval: Duration,
    /// Idempotency keys remembered per traveller (at least 1; give every replica the same value): beyond it, that traveller's oldest keys are forgotten first, and a retry with a forgotten key is carried out again
    #[arg(long, env = "CHRONOSCOPE_IDEMPOTENCY_KEYS_PER_TRAVELLER", default_value_t = crate::engine::idempotency::DEFAULT_KEYS_PER_TRAVELLER as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub idempotency_keys_per_traveller: u32,
    /// Monitor streams (GET /v1/monitor-timeline/stream) one traveller may have open at once; beyond it, 429 with Retry-After
    #[arg(long, env = "CHRONOSCOPE_MAX_STREAMS_PER_TRAVELLER", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub max_streams_per_traveller: u32,
    /// Monitor streams the server keeps open at once, everyone's; beyond it, 429 with Retry-After (streams of one timeline share one scan per change, so a stream costs its connection)
    #[arg(long, env = "CHRONOSCOPE_MAX_STREAMS", default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub max_streams: u32,
    /// Serve Prometheus metrics on GET /metrics at this address (a listener of its own, without authentication) [default: off]
    #[arg(long, env = "CHRONOSCOPE_METRICS_LISTEN", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// How often the reads counted for the access log are appended to the log, e.g. 10s (refused attempts go within a second, and everything on an orderly stop; a kill -9 loses at most this interval of read counts, never a write)
    #[arg(long, env = "CHRONOSCOPE_ACCESS_LOG_FLUSH", default_value = "10s", value_parser = parse_access_log_duration)]
    pub access_log_flush: Duration,
    /// How long the access log keeps what it counted in memory, e.g. 90d (older summaries stay in the op log only)
    #[arg(long, env = "CHRONOSCOPE_ACCESS_LOG_RETENTION", default_value = "90d", value_parser = parse_access_log_duration)]
    pub access_log_retention: Duration,
    /// How long a traveller waits between two scans of the log (detect-tampering, validate-integrity: each reads the stored log), e.g. 5s; sooner is 429 with Retry-After. Operators (admin scope) are not held; 0 holds nobody
    #[arg(long, env = "CHRONOSCOPE_SCAN_COOLDOWN", default_value = "5s", value_parser = parse_duration)]
    pub scan_cooldown: Duration,
}

const BACKUP_ABOUT: &str = "\
Write a backup of the store named by --database / --data-dir (SQLite or PostgreSQL) to FILE.

Servers may go on serving and writing meanwhile: the backup holds every record up to the last \
one committed when it began (every write acknowledged before it began), nothing later. Each \
record's link is checked with the log key as it is read; a log that does not verify is not \
backed up (`chronoscope verify` says why).

The file is one portable format for both stores (JSON lines: a header naming the log key's \
fingerprint, the first and last record, the head's link, when and by whom; the records with \
their links; an end line sealing it with the log key). It is written under a temporary name \
beside FILE and moved into place only when complete: an interrupted backup (Ctrl-C, a kill) \
leaves no FILE. Keep the log key file with it: without the key it can be neither verified nor \
restored.

Shows a progress bar on a terminal; --json prints one summary.";

const RESTORE_ABOUT: &str = "\
Restore a backup (`chronoscope backup`) into the store named by --database / --data-dir.

The store must hold no records: a new SQLite file, or a new PostgreSQL database (refused \
otherwise, before anything is read). The backup is verified whole with the log key (every link, \
the header's head, the seal) before anything is written, then written in one transaction: a \
kill or Ctrl-C at any moment leaves the store empty or complete, never half. A backup made with \
another log key is refused: name the key file of the store it came from with --log-key-file \
(and give the same file to the servers that will use the store).

This data directory's witness of the store is set to the backup's head, recording the restore \
(`chronoscope witness show`). Replicas with data directories of their own that witnessed a \
longer log refuse it at start until their operator runs `chronoscope witness accept`.";

/// `verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Check this backup file instead of the store (needs only the log key)
    #[arg(long, value_name = "FILE")]
    pub backup: Option<PathBuf>,
}

/// `backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// Where to write the backup
    pub file: PathBuf,
    /// Write over FILE if it exists (it is replaced only once the new backup is complete)
    #[arg(long)]
    pub replace: bool,
}

/// `restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The backup file
    pub file: PathBuf,
}

/// `link-unchained-store`.
#[derive(Debug, Args)]
pub struct LinkUnchainedArgs {
    /// Link the store even though a record carries a link or this data directory witnessed it
    /// chained: its chain record was removed, and whatever was changed in it becomes proven
    #[arg(long)]
    pub despite_links: bool,
}

/// `chronoscope witness ...`.
#[derive(Debug, Subcommand)]
pub enum WitnessCommand {
    /// Print what this data directory's witness of the store holds (the head last verified)
    Show,
    /// Accept, on purpose, that the store lacks records this data directory witnessed (an older
    /// backup restored): checks the store, records who accepted how many, and witnesses its
    /// head from now on
    Accept {
        /// How many witnessed records the store lacks, as the refusal said (it must match)
        #[arg(long, value_name = "N")]
        lost_records: u64,
    },
}

/// `token`.
#[derive(Debug, Args)]
pub struct TokenArgs {
    /// The traveller the token names (its `sub`)
    #[arg(long, env = "CHRONOSCOPE_TOKEN_SUBJECT")]
    pub subject: String,
    /// Scopes, comma-separated: read, write, admin
    #[arg(
        long,
        env = "CHRONOSCOPE_TOKEN_SCOPE",
        default_value = "read,write",
        value_delimiter = ','
    )]
    pub scope: Vec<String>,
    /// How long the token is valid, e.g. 24h, 30m, 7d
    #[arg(long, env = "CHRONOSCOPE_TOKEN_TTL", default_value = "24h", value_parser = parse_duration)]
    pub ttl: Duration,
    /// HS256 secret, at least 32 bytes; prefer the environment variable or --jwt-secret-file [default: the server's, from the data directory]
    #[arg(
        long,
        env = "CHRONOSCOPE_JWT_SECRET",
        hide_env_values = true,
        conflicts_with = "jwt_secret_file"
    )]
    pub jwt_secret: Option<String>,
    /// Read the HS256 secret from this file
    #[arg(long, env = "CHRONOSCOPE_JWT_SECRET_FILE", value_name = "FILE")]
    pub jwt_secret_file: Option<PathBuf>,
}

/// Paging flags of list commands.
#[derive(Debug, Args, Clone, Default)]
pub struct PageArgs {
    /// Most results to show (1 to 1000)
    #[arg(long)]
    pub limit: Option<u32>,
    /// Continue after this cursor (printed at the end of a page)
    #[arg(long)]
    pub cursor: Option<String>,
}

/// `timelines …`.
#[derive(Debug, Subcommand)]
pub enum TimelineCommand {
    /// List timelines
    List {
        /// Only those open (travellable) or closed now
        #[arg(long, value_enum)]
        status: Option<TimelineStatusArg>,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Show one timeline
    Show {
        /// Timeline id
        id: String,
    },
    /// Create a timeline branching from a base (primary by default)
    Create {
        /// Its name
        name: String,
        /// Where journeys into it arrive (RFC 3339, or UTC as 1889-03-10 23:50 or a date), e.g. 1889-03-10T23:50:00Z
        #[arg(long, value_parser = parse_time)]
        destination_time: Option<Instant>,
        /// The timeline to branch from
        #[arg(long, default_value = "primary")]
        base: String,
        /// What it is for
        #[arg(long)]
        description: Option<String>,
        /// How it differs from its base (a parallel timeline)
        #[arg(long)]
        variation: Option<String>,
    },
    /// Delete a timeline (refused while it has branches or travellers)
    Delete {
        /// Timeline id
        id: String,
    },
    /// Write a timeline and every version of its events as a world file (JSON, the format
    /// `timelines import` reads), to stdout or --to FILE
    #[command(long_about = EXPORT_ABOUT)]
    Export {
        /// Timeline id
        id: String,
        /// Write the file here instead of stdout (under a temporary name beside it, renamed
        /// into place once complete)
        #[arg(long, value_name = "FILE")]
        to: Option<PathBuf>,
    },
    /// Create the timelines of a world file (JSON) in one write: ids kept or remapped when
    /// taken, refused whole on bad input or a paradox
    #[command(long_about = IMPORT_ABOUT)]
    Import {
        /// The world file (`-`: standard input)
        file: PathBuf,
        /// Import even if a timeline would hold paradoxes its parent does not (they are listed)
        #[arg(long)]
        no_safety_check: bool,
    },
    /// Merge SOURCE into DESTINATION (one must descend from the other): what the source
    /// changed since the branch point is written into the destination in one write
    Merge {
        /// The timeline whose changes are brought over
        source: String,
        /// The timeline written into
        destination: String,
        /// How a lineage both sides changed differently is treated; by default, as in the
        /// dashboard's wizard and the HTTP interface, the merge waits for each conflict's
        /// resolution (`merges resolve`)
        #[arg(long, value_enum, default_value = "manual-review")]
        strategy: MergeStrategyArg,
        /// Apply even if the merge adds paradoxes (they are listed)
        #[arg(long)]
        no_safety_check: bool,
    },
    /// What merging SOURCE into DESTINATION would weigh, lineage by lineage (incoming, added,
    /// kept, convergent, conflict); nothing is written
    Diff {
        /// The source side (A)
        source: String,
        /// The destination side (B)
        destination: String,
    },
}

/// `timelines merge --strategy`; each also as the server and the dashboard write it
/// (`source_overwrite`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MergeStrategyArg {
    /// The source's outcome wins
    #[value(alias = "source_overwrite")]
    SourceOverwrite,
    /// The destination keeps its outcome
    #[value(alias = "destination_preserve")]
    DestinationPreserve,
    /// Each conflict waits for a resolution
    #[value(alias = "manual_review")]
    ManualReview,
}

/// `merges …`.
#[derive(Debug, Subcommand)]
pub enum MergeCommand {
    /// List recorded merges, oldest first
    List(PageArgs),
    /// Show one merge, lineage by lineage
    Show {
        /// Merge id
        id: String,
    },
    /// The conflicts of the merges waiting for review into DESTINATION, recomputed now
    Review {
        /// The destination timeline
        destination: String,
        /// Only this pending merge
        #[arg(long = "merge")]
        merge_id: Option<String>,
    },
    /// Resolve a conflict: "Keep Event A" (source), "Keep Event B" (destination) or "Custom
    /// Merge" (give --description and/or --time); the last resolution completes the merge
    Resolve {
        /// The lineage, or any event of it on either side
        event: String,
        /// keep-source or keep_source (A), keep-destination or keep_destination (B), or custom; the guide's words ('Keep Event A') work too
        resolution: String,
        /// Custom Merge: the new description
        #[arg(long)]
        description: Option<String>,
        /// Custom Merge: the new time (RFC 3339, or UTC as 1889-03-10 23:50 or a date)
        #[arg(long, value_parser = parse_time)]
        time: Option<Instant>,
        /// The pending merge, when several conflict on the lineage
        #[arg(long = "merge")]
        merge_id: Option<String>,
        /// Complete even if the merge adds paradoxes (they are listed)
        #[arg(long)]
        no_safety_check: bool,
    },
    /// Abort a merge waiting for review; its destination is untouched
    Abort {
        /// Merge id
        id: String,
    },
}

/// `events …`.
#[derive(Debug, Subcommand)]
pub enum EventCommand {
    /// Search a timeline's events by location and time range
    Search {
        /// Timeline id [default: where you are]
        #[arg(long)]
        timeline: Option<String>,
        /// Location, matched case-insensitively, whole or in part
        #[arg(long)]
        location: Option<String>,
        /// ISO 8601 interval: start/end, start/duration or duration/end (either end may be
        /// 1889-03-10 23:50 or a date), or one date for that whole day
        #[arg(long, value_parser = parse_range)]
        range: Option<TimeRange>,
        /// Paging
        #[command(flatten)]
        page: PageArgs,
    },
    /// Watch a timeline's events from where you are: each with when it last changed, whether
    /// an open anomaly names it, and whether it lies in your past or future
    Monitor {
        /// Timeline id [default: where you are]
        #[arg(long)]
        timeline: Option<String>,
        /// Location, matched case-insensitively, whole or in part
        #[arg(long)]
        location: Option<String>,
        /// ISO 8601 interval: start/end, start/duration or duration/end (either end may be
        /// 1889-03-10 23:50 or a date), or one date for that whole day
        #[arg(long, value_parser = parse_range)]
        range: Option<TimeRange>,
        /// Then print each change as it comes: + new, ~ changed state, - no longer stands
        /// (Ctrl-C ends; paging does not apply)
        #[arg(long)]
        follow: bool,
        /// Paging
        #[command(flatten)]
        page: PageArgs,
    },
    /// Add an event to a timeline
    Add {
        /// What happened
        description: String,
        /// When (RFC 3339, or UTC as 1889-03-10 23:50 or a date)
        #[arg(long, value_parser = parse_time)]
        time: Instant,
        /// Where
        #[arg(long)]
        location: String,
        /// Timeline id
        #[arg(long, default_value = "primary")]
        timeline: String,
        /// An event it depends on (repeat for several)
        #[arg(long = "cause")]
        causes: Vec<String>,
        /// Make it a fixed point (it can never be manipulated)
        #[arg(long)]
        fixed_point: bool,
        /// Check for paradoxes first and refuse an event that would add any
        #[arg(long)]
        safety_check: bool,
    },
    /// Manipulate an event: its lineage gets a new head
    Manipulate {
        /// Event id
        id: String,
        /// Timeline id [default: where you are]
        #[arg(long)]
        timeline: Option<String>,
        /// New description
        #[arg(long)]
        description: Option<String>,
        /// New time (RFC 3339, or UTC as 1889-03-10 23:50 or a date)
        #[arg(long, value_parser = parse_time)]
        time: Option<Instant>,
        /// What was done, recorded with the change
        #[arg(long)]
        action: Option<String>,
        /// Check for paradoxes first and refuse a change that would add any
        #[arg(long)]
        safety_check: bool,
    },
    /// Undo the latest manipulation of an event's lineage
    Revert {
        /// Event id (the manipulated event or any of its lineage)
        id: String,
        /// Timeline id [default: where you are]
        #[arg(long)]
        timeline: Option<String>,
        /// Check for paradoxes first and refuse a revert that would add any
        #[arg(long)]
        safety_check: bool,
    },
    /// Correct dissonance: move each named event that happens before one of its causes to
    /// one second after its latest cause (refused whole if that cannot restore order)
    Align {
        /// Event ids (1 to 100)
        #[arg(required = true)]
        ids: Vec<String>,
        /// Timeline id [default: where you are]
        #[arg(long)]
        timeline: Option<String>,
    },
    /// Isolate an event, or the causal loop through it: the paradox checks stop at it
    Isolate {
        /// Event id (a current event)
        event: String,
        /// Timeline id [default: where you are]
        #[arg(long)]
        timeline: Option<String>,
        /// Isolate the event alone instead of its causal loop
        #[arg(long)]
        event_only: bool,
        /// What the isolation is for
        #[arg(long)]
        description: Option<String>,
    },
    /// Lift an isolation: the checks apply again
    Lift {
        /// Isolation id
        id: String,
    },
}

/// `items …`.
#[derive(Debug, Subcommand)]
pub enum ItemCommand {
    /// Register an item found where you are
    Register {
        /// What it is
        description: String,
    },
    /// Go and pick an item up at a time and place in your timeline (a journey there first when
    /// the time is not yours); one you already picked up here and carry is left as it is
    Retrieve {
        /// What it is
        description: String,
        /// Where it is [default: where you are]
        #[arg(long)]
        location: Option<String>,
        /// When it is there (RFC 3339, or UTC as 1889-03-10 23:50 or a date) [default: your time]
        #[arg(long, value_parser = parse_time)]
        time: Option<Instant>,
    },
    /// List your items
    List(PageArgs),
}

/// `anchors …`.
#[derive(Debug, Subcommand)]
pub enum AnchorCommand {
    /// Set an anchor in your current timeline
    Set {
        /// The time to return to (RFC 3339, or UTC as 1889-03-10 23:50 or a date), e.g. 2024-09-16T05:04:00Z [default: your time now, where you are, as the dashboard's `a` sets it]
        #[arg(value_parser = parse_time)]
        timestamp: Option<Instant>,
        /// What it is for
        #[arg(long)]
        description: Option<String>,
        /// How finely the timestamp is given: second, millisecond, microsecond or nanosecond
        #[arg(long, value_parser = parse_accuracy)]
        accuracy: Option<crate::model::Accuracy>,
        /// An environmental condition to record, KEY=VALUE (repeatable)
        #[arg(long = "env", value_name = "KEY=VALUE")]
        environment: Vec<String>,
        /// A quantum-state parameter to record, KEY=VALUE (repeatable)
        #[arg(long = "quantum", value_name = "KEY=VALUE")]
        quantum_state: Vec<String>,
    },
    /// List your anchors
    List {
        /// Only those you can still return to
        #[arg(long)]
        active: bool,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Delete one of your anchors (active or spent)
    Delete {
        /// The anchor
        id: String,
    },
    /// Can you still return to an anchor, and safely?
    Stability {
        /// The anchor
        id: String,
    },
    /// Replace an active anchor's recorded environment
    Adjust {
        /// The anchor
        id: String,
        /// A condition of the new environment, KEY=VALUE (repeatable); true/false and numbers are typed
        #[arg(
            long = "env",
            value_name = "KEY=VALUE",
            required_unless_present = "clear_env"
        )]
        environment: Vec<String>,
        /// Clear the recorded environment instead
        #[arg(long, conflicts_with = "environment")]
        clear_env: bool,
    },
}

/// `travel`.
#[derive(Debug, Args)]
pub struct TravelArgs {
    /// A timeline id, or one of your anchor ids to return (or use --to-time)
    #[arg(required_unless_present = "to_time")]
    pub destination: Option<String>,
    /// Travel to this time in the timeline you are in instead
    #[arg(long, value_parser = parse_time, conflicts_with = "destination")]
    pub to_time: Option<Instant>,
    /// With --to-time: the place you arrive at
    #[arg(long, requires = "to_time")]
    pub location: Option<String>,
    #[arg(long = "item", help = ITEM_HELP)]
    pub items: Vec<String>,
    #[arg(long, conflicts_with = "items", help = TRAVEL_LIGHT_HELP)]
    pub travel_light: bool,
}

/// What a journey carries, said the same way by every command that makes one (`travel`,
/// `jump`, `return`; the dashboard's wizard pre-selects everything you carry).
const ITEM_HELP: &str = "An item to carry (repeat for several); without --item, everything you \
                         carry comes along; with it, only the items named";
/// `--travel-light`, the same on every command that makes a journey.
const TRAVEL_LIGHT_HELP: &str = "Carry nothing: every item you carry stays behind";

/// `jump`.
#[derive(Debug, Args)]
pub struct JumpArgs {
    /// The time to arrive at (RFC 3339, or UTC as 1889-03-10 23:50 or a date)
    #[arg(value_parser = parse_time)]
    pub time: Instant,
    /// The place you arrive at
    #[arg(long)]
    pub location: Option<String>,
    /// The timeline to travel in (default: the one you are in)
    #[arg(long)]
    pub timeline: Option<String>,
    #[arg(long = "item", help = ITEM_HELP)]
    pub items: Vec<String>,
    #[arg(long, conflicts_with = "items", help = TRAVEL_LIGHT_HELP)]
    pub travel_light: bool,
    /// Refuse the journey if what you carry would add a paradox at the arrival
    #[arg(long)]
    pub safety_check: bool,
}

/// A timeline status, for `timelines list --status`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum TimelineStatusArg {
    /// Within its window: can be travelled to and changed
    Open,
    /// Past its window: read and search only
    Closed,
}

/// `return`.
#[derive(Debug, Args)]
pub struct ReturnArgs {
    /// One of your active anchor ids
    pub anchor: String,
    #[arg(long = "item", help = ITEM_HELP)]
    pub items: Vec<String>,
    #[arg(long, conflicts_with = "items", help = TRAVEL_LIGHT_HELP)]
    pub travel_light: bool,
}

/// `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Timeline id
    #[arg(default_value = "primary")]
    pub timeline: String,
    /// An event to move (its id) or add (a description), optionally `@TIME` (RFC 3339, UTC as 1889-03-10 23:50, or a date), e.g. "Retrieve the blueprint@1889-03-10T23:50:00Z"
    #[arg(long = "event")]
    pub events: Vec<String>,
    /// An item to bring into the timeline
    #[arg(long = "item")]
    pub items: Vec<String>,
}

/// `monitor`.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Timeline id
    #[arg(default_value = "primary")]
    pub timeline: String,
    /// Only events in this ISO 8601 interval
    #[arg(long, value_parser = parse_range, conflicts_with = "follow")]
    pub range: Option<TimeRange>,
    /// Keep watching: print the anomalies now, then each one that appears (+) or resolves (-)
    /// as it happens, until interrupted (Ctrl-C). A lost connection to a server is resumed
    /// where it left off. With --json, one JSON object per line.
    #[arg(long, short = 'f')]
    pub follow: bool,
}

fn parse_accuracy(s: &str) -> Result<crate::model::Accuracy, String> {
    serde_json::from_value(serde_json::Value::String(s.to_owned()))
        .map_err(|_| "expected second, millisecond, microsecond or nanosecond".to_owned())
}

fn parse_time(s: &str) -> Result<Instant, String> {
    crate::model::parse_typed_instant("time", s).map_err(|e| e.to_string())
}

/// A range of history as a person types it, as the dashboard's search reads it: an ISO 8601
/// interval (`START/END`, `START/P1M`, `P1M/END`) with either end as `1889-03-10 23:50`, a
/// date or RFC 3339, or one date alone for that whole day.
fn parse_range(s: &str) -> Result<TimeRange, String> {
    TimeRange::parse_typed("range", s).map_err(|e| e.to_string())
}

/// A wall-clock range as a person types it: `START/END`, `START/P1D`, one date for that whole
/// day (`2026-11-27`), or an ISO 8601 duration alone for that long up to now (`PT1H`: the last
/// hour).
fn parse_recent_range(s: &str) -> Result<TimeRange, String> {
    let text = s.trim();
    if text.starts_with('P') && !text.contains('/') {
        let now = crate::model::format_instant(&chrono::Utc::now());
        return TimeRange::parse("range", &format!("{text}/{now}")).map_err(|e| e.to_string());
    }
    TimeRange::parse_typed("range", text).map_err(|e| e.to_string())
}

/// Longest duration a flag takes (ten years): far beyond any sensible tick, timeout or
/// token lifetime, and far from the overflow of the clocks it is added to.
pub const MAX_DURATION_SECS: u64 = 10 * 366 * 86_400;

/// Parses a duration as `humantime` reads it (`500ms`, `2s`, `30m`, `24h`, `7d`, `1h 30m`…; a
/// bare number is seconds), at most ten years.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let too_long = || format!("'{s}' is too long: at most 3660d (ten years)");
    // A bare number has always meant seconds here; humantime wants a unit.
    let parsed = if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| too_long())
    } else {
        humantime::parse_duration(s).map_err(|e| match e {
            humantime::DurationError::NumberOverflow => too_long(),
            e => format!("'{s}' is not a duration like 500ms, 2s, 30m, 24h, 7d or 1h 30m ({e})"),
        })
    }?;
    if parsed.as_secs() > MAX_DURATION_SECS
        || (parsed.as_secs() == MAX_DURATION_SECS && parsed.subsec_nanos() > 0)
    {
        return Err(too_long());
    }
    Ok(parsed)
}

/// A duration above zero, for the access log's flush interval and retention.
fn parse_access_log_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!("'{s}': give more than 0"));
    }
    Ok(d)
}

/// A duration above zero, for timeouts that would cut every connection at once.
fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!(
            "'{s}' would close every connection at once; give more than 0"
        ));
    }
    Ok(d)
}

/// `--read-index-interval`: a duration of at most a second, since a read under load may wait
/// that long.
fn parse_read_index_interval(s: &str) -> Result<Duration, String> {
    let interval = parse_duration(s)?;
    if interval > Duration::from_secs(1) {
        return Err(format!(
            "'{s}' is too long: at most 1s, since a read under load may wait one interval"
        ));
    }
    Ok(interval)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_read_like_people_write_them() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        // Units combined, as humantime reads them.
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5_400)));
        assert_eq!(parse_duration("2m30s"), Ok(Duration::from_secs(150)));
        for huge in ["3661d", "99999999999999999h", "18446744073709551615ms"] {
            let err = parse_duration(huge).unwrap_err();
            assert!(err.contains("at most 3660d"), "{huge}: {err}");
        }
    }

    #[test]
    fn the_read_index_interval_is_at_most_a_second() {
        assert_eq!(parse_read_index_interval("0"), Ok(Duration::ZERO));
        assert_eq!(
            parse_read_index_interval("5ms"),
            Ok(Duration::from_millis(5))
        );
        let err = parse_read_index_interval("2s").unwrap_err();
        assert!(err.contains("at most 1s"), "{err}");
    }

    proptest::proptest! {
        /// `--ttl`, `--tick`, `--request-timeout`: any text gets an answer, never a panic, and
        /// what is accepted is at most ten years.
        #[test]
        fn duration_flags_never_panic(n in proptest::num::u64::ANY, unit in "(ms|s|m|h|d|y|)", noise in "\\PC{0,20}") {
            for text in [format!("{n}{unit}"), noise.clone()] {
                if let Ok(d) = parse_duration(&text) {
                    proptest::prop_assert!(d.as_secs() <= MAX_DURATION_SECS);
                }
            }
        }
    }

    #[test]
    fn every_flag_names_its_environment_variable_in_help() {
        let help = Cli::command().render_long_help().to_string();
        for var in [
            "CHRONOSCOPE_DATA_DIR",
            "CHRONOSCOPE_DATABASE",
            "CHRONOSCOPE_SEED",
            "CHRONOSCOPE_TICK",
            "CHRONOSCOPE_CA_CERT",
        ] {
            assert!(help.contains(var), "{var} missing from --help");
        }
    }
}

//! `chronoscope`: parses arguments and wires the faces together (DESIGN §2).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use color_eyre::eyre::{Result, WrapErr, eyre};

use chronoscope::cli::{Cli, Command, Global, ServeArgs, ThemeArg, TokenArgs};
use chronoscope::engine::{Engine, EngineConfig, Seed, SystemClock};
use chronoscope::error::ServiceError;
use chronoscope::model::Traveller;
use chronoscope::service::prelude::*;

mod backups;

fn main() -> ExitCode {
    install_reporters();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version are answers; with --json a mistake in the arguments is a problem too.
        Err(e) if e.use_stderr() && json_asked() => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            let detail = first.trim_start_matches("error: ").to_owned();
            eprintln!(
                "{}",
                problem_json(&ServiceError::invalid("arguments", detail))
            );
            return ExitCode::from(2);
        }
        Err(e) => e.exit(),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let json = cli.global.json;
    // align has no safety check to leave out: its refusal says another way on.
    let aligning = matches!(
        cli.command,
        Some(chronoscope::cli::Command::Events(
            chronoscope::cli::EventCommand::Align { .. }
        ))
    );
    let failure = match runtime.block_on(run(cli)) {
        Ok(()) => return ExitCode::SUCCESS,
        Err(Failed::Report(e)) => match e.downcast::<Explained>() {
            // A service error met on the way (connecting, say) is sorted like the command's own.
            Ok(Explained(e)) => failed(e),
            Err(e) => match e.downcast::<Misconfigured>() {
                Ok(Misconfigured(what)) => Failed::Misconfigured(what),
                Err(e) => Failed::Report(e),
            },
        },
        Err(user) => user,
    };
    match failure {
        Failed::User(e) => {
            // The user's own mistake or a refusal: what to change, never a crash report.
            if json {
                eprintln!("{}", problem_json(&e));
            } else if let ServiceError::RateLimited { retry_after_secs } = e {
                // The command waited already (see `connect`): say so, and what is left to do.
                eprintln!(
                    "error: {}: still refused after waiting as long as a command does (at most \
                     {} times and {} s in all; the server asks for {retry_after_secs} s more): \
                     run fewer commands at once, or ask for a higher `serve --rate-limit`",
                    e.problem_type().title,
                    COMMAND_RATE_LIMIT_RETRY.attempts,
                    COMMAND_RATE_LIMIT_RETRY.total_wait.as_secs()
                );
            } else {
                eprintln!("error: {}", e.explain());
                if matches!(e, ServiceError::ParadoxDetected { .. }) {
                    eprintln!(
                        "{}",
                        if aligning {
                            ALIGN_WAY_ON
                        } else {
                            PARADOX_WAY_ON
                        }
                    );
                }
            }
            ExitCode::from(2)
        }
        Failed::Misconfigured(what) => {
            // Settings the operator must change: bad input as much as a wrong argument is.
            if json {
                eprintln!("{}", problem_json(&ServiceError::invalid("settings", what)));
            } else {
                eprintln!("error: {what}");
            }
            ExitCode::from(2)
        }
        Failed::Down(e) => {
            // Not a bug: the message says all there is (what could not be reached, and why).
            if json {
                eprintln!("{}", problem_json(&e));
            } else {
                eprintln!("error: {}", e.explain());
            }
            ExitCode::FAILURE
        }
        Failed::Finding(what) => {
            // With --json the finding is in the report on stdout, for the script to read.
            if !json {
                eprintln!("error: {what}");
            }
            ExitCode::FAILURE
        }
        Failed::Found(status) => ExitCode::from(status),
        Failed::Report(e) => {
            if json {
                let e = match e.downcast::<Explained>() {
                    Ok(Explained(e)) => e,
                    Err(e) => ServiceError::Internal(format!("{e:#}")),
                };
                eprintln!("{}", problem_json(&e));
            } else {
                eprintln!("Error: {e:?}");
            }
            ExitCode::FAILURE
        }
    }
}

/// What to do after a safety check refused a change for its paradoxes.
const PARADOX_WAY_ON: &str = "nothing was written. To apply it anyway, run it again without the \
    safety check (--no-safety-check for a merge, a resolution or an import; without \
    --safety-check otherwise); to settle a causal loop first, `events isolate` contains it and `events align` \
    moves an event after its causes.";

/// What to do after `events align` was refused: the move itself would leave a paradox.
const ALIGN_WAY_ON: &str = "nothing was written: no move puts these events in order without \
    leaving a paradox. `events isolate` contains a causal loop; `events manipulate` moves an event \
    (a cause or an effect named above) where you choose.";

/// Whether `--json` (or `CHRONOSCOPE_JSON`) was asked for, when the arguments did not parse.
fn json_asked() -> bool {
    std::env::args_os().skip(1).any(|a| a == "--json")
        || std::env::var("CHRONOSCOPE_JSON")
            .is_ok_and(|v| matches!(v.as_str(), "1" | "true" | "yes" | "on"))
}

/// A service error carried in a report, so that `--json` can still print its problem.
#[derive(Debug)]
struct Explained(ServiceError);

impl std::fmt::Display for Explained {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.explain())
    }
}

impl std::error::Error for Explained {}

/// How a run failed: a refusal or bad input (a 4xx problem), a service that is down, or a
/// real failure (the report).
enum Failed {
    User(ServiceError),
    /// A server or store that cannot be reached or answer now (5xx, not a bug): one line,
    /// exit status 1.
    Down(ServiceError),
    /// A bug or an I/O failure: the whole report, with a backtrace when asked for.
    Report(color_eyre::Report),
    /// What a check found (`verify`): said in one line, exit status 1, never a crash report.
    Finding(String),
    /// Settings that cannot work, said in one line (exit status 2): the operator's to change.
    Misconfigured(String),
    /// What a command found and printed (tampering, a timeline that would be unstable): its
    /// own exit status, nothing more said.
    Found(u8),
}

/// Settings that cannot work (a flag naming a file that is not there, say), carried in a
/// report so that it is printed as one line instead of a crash report.
#[derive(Debug)]
struct Misconfigured(String);

impl std::fmt::Display for Misconfigured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Misconfigured {}

fn misconfigured(what: impl Into<String>) -> color_eyre::Report {
    color_eyre::Report::new(Misconfigured(what.into()))
}

impl From<color_eyre::Report> for Failed {
    fn from(e: color_eyre::Report) -> Self {
        Self::Report(e)
    }
}

/// Sorts a service error: the user's (4xx), a service that is down, or a bug.
fn failed(e: ServiceError) -> Failed {
    match e {
        ServiceError::Internal(_) => Failed::Report(explain(e)),
        _ if (400..500).contains(&e.problem_type().status) => Failed::User(e),
        _ => Failed::Down(e),
    }
}

/// The store at `url`, or why it cannot be opened: a database that cannot be reached, or a
/// URL that names none, is said in one line; anything else is a report.
async fn open_store(url: &str) -> Result<Arc<dyn chronoscope::store::Store>> {
    use chronoscope::store::StoreError;
    chronoscope::store::open(url).await.map_err(|e| match e {
        StoreError::Unavailable(why) => explain(ServiceError::Unavailable(format!(
            "cannot open the store {url}: {why}"
        ))),
        e => color_eyre::Report::new(e).wrap_err(format!("cannot open the store {url}")),
    })
}

/// A user error as `--json` prints it: the problem body the server would answer with.
fn problem_json(e: &ServiceError) -> serde_json::Value {
    let kind = e.problem_type();
    serde_json::json!({
        "type": format!("/problems/{}", kind.slug),
        "title": kind.title,
        "status": kind.status,
        "detail": e.to_string(),
    })
}

/// color-eyre reports errors and panics: a panic gets the whole report (message, location, how
/// to see the backtrace); an error, which says what to do about it, only its chain of causes.
/// No colour under `NO_COLOR` or when stderr is not a terminal. The dashboard chains its
/// terminal restore in front of the panic report (`chronoscope::tui`).
fn install_reporters() {
    use color_eyre::config::{HookBuilder, Theme};
    use std::io::IsTerminal;
    let colour = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stderr().is_terminal();
    let theme = || if colour { Theme::dark() } else { Theme::new() };
    if let Ok((panic_hook, _)) = HookBuilder::default().theme(theme()).try_into_hooks() {
        panic_hook.install();
    }
    if let Ok((_, eyre_hook)) = HookBuilder::default()
        .theme(theme())
        .display_env_section(false)
        .display_location_section(false)
        .try_into_hooks()
    {
        let _ = eyre_hook.install();
    }
}

/// A service error as a person reads it (see [`ServiceError::explain`]).
fn explain(e: ServiceError) -> color_eyre::Report {
    color_eyre::Report::new(Explained(e))
}

/// The commands that work on this machine's store or data directory (or serve it), which
/// `--remote` cannot point at a server: run with it, they would act on a local store while the
/// person meant the server's (a "backup of the server" that holds nothing).
fn local_only(command: &Command) -> Option<&'static str> {
    match command {
        Command::Serve(_) => Some("serve"),
        Command::Token(_) => Some("token"),
        Command::Verify(_) => Some("verify"),
        Command::Backup(_) => Some("backup"),
        Command::Restore(_) => Some("restore"),
        Command::LinkUnchainedStore(_) => Some("link-unchained-store"),
        Command::Witness(_) => Some("witness"),
        _ => None,
    }
}

async fn run(cli: Cli) -> std::result::Result<(), Failed> {
    let global = cli.global;
    if let (Some(url), Some(name)) = (&global.remote, cli.command.as_ref().and_then(local_only)) {
        return Err(Failed::Misconfigured(format!(
            "`{name}` works on a store on this machine (--database or --data-dir), not through \
             a server, yet --remote (or CHRONOSCOPE_REMOTE) names {url}: run it where the \
             server's store is reachable, without --remote (unset CHRONOSCOPE_REMOTE)"
        )));
    }
    match cli.command {
        None => Ok(dashboard(&global, cli.dashboard).await?),
        Some(Command::Serve(args)) => {
            init_logging(&global.log);
            Ok(serve(&global, *args).await?)
        }
        Some(Command::Token(args)) => Ok(token(&global, args)?),
        Some(Command::Verify(args)) => match &args.backup {
            Some(file) => backups::verify(&global, file).await,
            None => verify(&global).await,
        },
        Some(Command::Backup(args)) => backups::backup(&global, args).await,
        Some(Command::Restore(args)) => {
            init_logging(&global.log);
            backups::restore(&global, args).await
        }
        Some(Command::LinkUnchainedStore(args)) => {
            init_logging(&global.log);
            link_unchained_store(&global, args).await
        }
        Some(Command::Witness(command)) => witness_command(&global, command).await,
        Some(Command::Completions { shell }) => {
            // Rendered first: the generator panics when it cannot write (a closed pipe).
            let mut script = Vec::new();
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "chronoscope", &mut script);
            Ok(print_bytes(&script).wrap_err("cannot write the completion script")?)
        }
        Some(Command::Man { out_dir: Some(dir) }) => {
            std::fs::create_dir_all(&dir)
                .and_then(|()| {
                    clap_mangen::generate_to(<Cli as clap::CommandFactory>::command(), &dir)
                })
                .wrap_err_with(|| format!("cannot write the manual pages to {}", dir.display()))?;
            eprintln!("manual pages written to {}", dir.display());
            Ok(())
        }
        Some(Command::Man { out_dir: None }) => {
            let mut page = Vec::new();
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
                .render(&mut page)
                .wrap_err("cannot render the manual page")?;
            Ok(print_bytes(&page).wrap_err("cannot write the manual page")?)
        }
        Some(command) => {
            init_logging(&global.log);
            let (service, _, engine) = connect(&global, Seed::Demo, Face::Command).await?;
            let mut stdout = std::io::stdout().lock();
            let done =
                chronoscope::cli::execute(command, service.as_ref(), global.json, &mut stdout)
                    .await
                    .map_err(failed)
                    .and_then(|found| match found.exit_status() {
                        0 => Ok(()),
                        status => Err(Failed::Found(status)),
                    });
            // What the command wrote is witnessed before the process exits.
            if let Some(engine) = engine
                && let Err(e) = engine.record_witness().await
            {
                tracing::warn!(%e, "recording the head in the witness failed");
            }
            done
        }
    }
}

/// Writes `bytes` to stdout; a reader that stopped early (`| head`) is not an error.
fn print_bytes(bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        done => done,
    }
}

fn init_logging(filter: &str) {
    let mut filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // A refused certificate is explained in the error itself; the verifier's own log line
    // would say it twice, less clearly. Still shown when asked for by name.
    if !filter.to_string().contains("rustls")
        && let Ok(quiet) = "rustls_platform_verifier=off".parse()
    {
        filter = filter.add_directive(quiet);
    }
    // Colours only on a terminal, and not there when NO_COLOR is set: a log redirected to a
    // file or a pipe stays plain text.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .try_init();
}

/// The data directory: the flag, or the user's data directory. One we create is owner-only;
/// one that exists (a home, a shared directory) keeps its permissions: what is secret in it
/// is created owner-only file by file (the token secret, the SQLite file, see
/// [`private_database_file`]).
fn data_dir(global: &Global) -> Result<PathBuf> {
    let dir = match &global.data_dir {
        Some(dir) => dir.clone(),
        None => directories::ProjectDirs::from("", "", "chronoscope")
            .map(|p| p.data_dir().to_path_buf())
            .ok_or_else(|| misconfigured("cannot find your data directory; pass --data-dir"))?,
    };
    if !dir.is_dir() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&dir)
            .wrap_err_with(|| format!("cannot create the data directory {}", dir.display()))?;
    }
    Ok(dir)
}

/// Creates the default SQLite file empty and owner-only before SQLite opens it, so that the
/// database (and its -wal and -shm files, which SQLite gives the database's permissions) is
/// private even in a data directory others can read. An existing file is left as it is.
fn private_database_file(path: &Path) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).wrap_err_with(|| format!("cannot create {}", path.display())),
    }
}

fn database_url(global: &Global, dir: &Path) -> String {
    global
        .database
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", dir.join("chronoscope.db").display()))
}

/// The embedded engine on the configured store.
async fn open_engine(global: &Global, default_seed: Seed) -> Result<Arc<Engine>> {
    open_engine_keeping(
        global,
        default_seed,
        EngineConfig::default().access_log_retention,
    )
    .await
}

/// [`open_engine`], keeping what the access log folded for `access_log_retention`.
async fn open_engine_keeping(
    global: &Global,
    default_seed: Seed,
    access_log_retention: std::time::Duration,
) -> Result<Arc<Engine>> {
    let dir = data_dir(global)?;
    let url = database_url(global, &dir);
    if global.database.is_none() {
        private_database_file(&dir.join("chronoscope.db"))?;
    }
    let store = open_store(&url).await?;
    let log_key = log_key(global, &dir)?;
    let witness = witness_of(store.as_ref(), &dir, &log_key);
    Engine::open(
        store,
        Arc::new(SystemClock),
        EngineConfig {
            default_window: global
                .window
                .unwrap_or(EngineConfig::default().default_window),
            log_key,
            access_log_retention,
            witness,
        },
        global.seed.unwrap_or(default_seed),
    )
    .await
    .map_err(explain)
}

/// The log key: `--log-key-file`, else the one in the data directory (made when missing).
fn log_key(global: &Global, dir: &Path) -> Result<chronoscope::store::LogKey> {
    chronoscope::store::LogKey::load(global.log_key_file.as_deref(), dir)
        .map_err(|e| misconfigured(e.to_string()))
}

/// This data directory's witness of `store` (see `chronoscope::store::witness`).
fn witness_of(
    store: &dyn chronoscope::store::Store,
    dir: &Path,
    key: &chronoscope::store::LogKey,
) -> Option<chronoscope::store::Witness> {
    chronoscope::store::Witness::for_store(dir, store, key)
}

/// The store, the log key and the data directory's witness of the store, for the commands
/// that check or link a store without serving it.
async fn store_key_witness(
    global: &Global,
) -> Result<(
    Arc<dyn chronoscope::store::Store>,
    chronoscope::store::LogKey,
    Option<chronoscope::store::Witness>,
)> {
    let dir = data_dir(global)?;
    let url = database_url(global, &dir);
    let store = open_store(&url).await?;
    let key = log_key(global, &dir)?;
    let witness = witness_of(store.as_ref(), &dir, &key);
    Ok((store, key, witness))
}

/// What `witness` holds (nothing without one); an unreadable or unsealed file is a finding.
fn witnessed(
    witness: Option<&chronoscope::store::Witness>,
) -> std::result::Result<Option<chronoscope::store::witness::Witnessed>, Failed> {
    match witness {
        Some(w) => w.load().map_err(|e| Failed::Finding(e.to_string())),
        None => Ok(None),
    }
}

/// `chronoscope verify`: every record of the store against the log key, and the store against
/// this data directory's witness; a sound store moves the witness forward to its head.
async fn verify(global: &Global) -> std::result::Result<(), Failed> {
    let (store, key, witness) = store_key_witness(global).await?;
    let witnessed = witnessed(witness.as_ref())?;
    let audit = chronoscope::engine::audit::audit_witnessed(
        store.as_ref(),
        &key,
        witnessed.as_ref().zip(witness.as_ref().map(|w| w.path())),
    )
    .await
    .map_err(explain)?;
    if let (Some(witness), Some(head), Some(from)) = (&witness, audit.head, audit.chain_from) {
        witness
            .advance(from, head)
            .map_err(|e| Failed::Finding(e.to_string()))?;
    }
    if global.json {
        let text = serde_json::to_string_pretty(&audit).wrap_err("cannot encode the report")?;
        println!("{text}");
    } else if audit.is_sound() {
        let from = audit
            .chain_from
            .filter(|&from| from > 1)
            .map(|from| {
                format!(
                    "; records before {from} were written before the log was chained and are \
                     proven since the upgrade"
                )
            })
            .unwrap_or_default();
        println!(
            "{}: all {} records verify{from}",
            audit.store, audit.verified
        );
    }
    match audit.problem {
        None => Ok(()),
        Some(problem) => Err(Failed::Finding(format!(
            "{}: {} ({} records before it verify)",
            audit.store, problem.reason, audit.verified
        ))),
    }
}

/// `chronoscope link-unchained-store`: links a store an older version wrote, on purpose.
async fn link_unchained_store(
    global: &Global,
    args: chronoscope::cli::LinkUnchainedArgs,
) -> std::result::Result<(), Failed> {
    let (store, key, witness) = store_key_witness(global).await?;
    let witnessed = witnessed(witness.as_ref())?;
    let linked = chronoscope::engine::witnessing::link_unchained_store(
        store.as_ref(),
        &key,
        witnessed.as_ref(),
        args.despite_links,
    )
    .await
    .map_err(failed)?;
    if args.despite_links && (linked.had_links_from.is_some() || witnessed.is_some()) {
        eprintln!(
            "WARNING: linked a store whose chain record was removed (record {} carried a link{}): \
             whatever was changed in it is now proven; restore it from a backup if you did not \
             mean this",
            linked.had_links_from.unwrap_or(0),
            if witnessed.is_some() {
                ", and this data directory had witnessed it chained"
            } else {
                ""
            }
        );
    }
    tracing::warn!(
        records = linked.records,
        store = %store.describe(),
        by = %local_traveller(global).map(|t| t.to_string()).unwrap_or_default(),
        "linked the records of an unchained store on the operator's command"
    );
    if let Some(witness) = &witness {
        witness
            .record(linked.from, linked.head)
            .map_err(|e| Failed::Finding(e.to_string()))?;
    }
    println!(
        "{}: linked {} records as they are now; they are proven from now on",
        store.describe(),
        linked.records
    );
    Ok(())
}

/// `chronoscope witness ...`.
async fn witness_command(
    global: &Global,
    command: chronoscope::cli::WitnessCommand,
) -> std::result::Result<(), Failed> {
    use chronoscope::cli::WitnessCommand;
    let (store, key, witness) = store_key_witness(global).await?;
    let Some(witness) = witness else {
        return Err(Failed::User(ServiceError::Unsupported(format!(
            "{} keeps nothing after the process: it has no witness",
            store.describe()
        ))));
    };
    let witnessed = witness.load().map_err(|e| Failed::Finding(e.to_string()))?;
    match command {
        WitnessCommand::Show => {
            let Some(w) = witnessed else {
                println!(
                    "{}: no witness in {} yet (the first start or `chronoscope verify` writes one)",
                    store.describe(),
                    witness.path().display()
                );
                return Ok(());
            };
            if global.json {
                let shown = serde_json::json!({
                    "file": witness.path().display().to_string(),
                    "store": w.store,
                    "chain_from": w.from,
                    "head_seq": w.head.seq,
                    "head_link": chronoscope::store::chain::short(&w.head.link),
                    "accepted": w.accepted,
                    "restored": w.restored,
                });
                println!("{shown:#}");
            } else {
                println!(
                    "{}: witnessed up to record {} (link {}…), chained from record {}, in {}",
                    w.store,
                    w.head.seq,
                    chronoscope::store::chain::short(&w.head.link),
                    w.from,
                    witness.path().display()
                );
                for a in &w.accepted {
                    println!(
                        "  {} {} accepted the loss of {} records (witnessed {}, store at {})",
                        a.at, a.by, a.lost, a.witnessed, a.store_head
                    );
                }
                for r in &w.restored {
                    println!(
                        "  {} {} restored {} records from {} (made {} by {} from {})",
                        r.at, r.by, r.records, r.file, r.made_at, r.made_by, r.source
                    );
                }
            }
            Ok(())
        }
        WitnessCommand::Accept { lost_records } => {
            let Some(w) = witnessed else {
                return Err(Failed::User(ServiceError::Conflict(format!(
                    "there is no witness of {} in this data directory: nothing to accept",
                    store.describe()
                ))));
            };
            // The store must prove itself, whatever it lacks.
            let audit = chronoscope::engine::audit::audit(store.as_ref(), &key)
                .await
                .map_err(explain)?;
            let (Some(head), Some(from)) = (audit.head, audit.chain_from) else {
                let reason = audit.problem.map(|p| p.reason).unwrap_or_default();
                return Err(Failed::Finding(format!(
                    "{}: the store itself does not verify, so it cannot take the witnessed \
                     one's place: {reason}",
                    audit.store
                )));
            };
            let found = chronoscope::engine::witnessing::disagreement(
                store.as_ref(),
                &w,
                Some(from),
                audit.verified,
            )
            .await
            .map_err(|e| explain(e.into()))?;
            let Some(found) = found else {
                println!(
                    "{}: the store holds every record witnessed (up to {}): nothing to accept",
                    audit.store, w.head.seq
                );
                return Ok(());
            };
            if !found.acceptable() {
                return Err(Failed::Finding(found.explain(Some(witness.path()))));
            }
            if found.lost() != lost_records {
                return Err(Failed::User(ServiceError::invalid(
                    "lost-records",
                    format!(
                        "the store lacks {} witnessed records, not {lost_records}: {}",
                        found.lost(),
                        found.explain(Some(witness.path()))
                    ),
                )));
            }
            let by = local_traveller(global)?.to_string();
            let acceptance = chronoscope::store::witness::Acceptance {
                at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                by: by.clone(),
                witnessed: w.head.seq,
                store_head: head.seq,
                lost: lost_records,
            };
            witness
                .accept(from, head, acceptance)
                .map_err(|e| Failed::Finding(e.to_string()))?;
            eprintln!(
                "{by} accepted that {} lacks {lost_records} records this data directory \
                 witnessed (up to {}); witnessing it from record {} on. Recorded in {}",
                audit.store,
                w.head.seq,
                head.seq,
                witness.path().display()
            );
            Ok(())
        }
    }
}

/// The traveller on the embedded engine: `--as`, else the OS user.
fn local_traveller(global: &Global) -> Result<Traveller> {
    let name = global
        .traveller
        .clone()
        .or_else(|| std::env::var("USER").ok())
        .or_else(|| std::env::var("USERNAME").ok())
        .unwrap_or_else(|| "traveller".into());
    name.parse::<Traveller>().map_err(|e| explain(e.into()))
}

/// Who uses a connection: a one-shot command waits out a server's rate limit (saying so on
/// stderr); the dashboard, which owns the terminal, shows the refusal instead.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Face {
    Command,
    Dashboard,
}

/// How long a command waits out 429s: many parallel runs share one traveller's limit, and
/// each waits its turn (150 runs at once against 5 requests a second all finish).
const COMMAND_RATE_LIMIT_RETRY: chronoscope::client::RateLimitRetry =
    chronoscope::client::RateLimitRetry {
        attempts: 30,
        total_wait: std::time::Duration::from_secs(60),
    };

/// The service every command talks to, and a label saying where it lives.
async fn connect(
    global: &Global,
    default_seed: Seed,
    face: Face,
) -> Result<(Arc<dyn TimelineService>, String, Option<Arc<Engine>>)> {
    if let Some(url) = &global.remote {
        if let Some(window) = global.window {
            // The interface has no window to ask for: the server's own `serve --window` decides.
            // Bad input, so one line, not a report with a backtrace.
            return Err(explain(ServiceError::invalid(
                "window",
                format!(
                    "--window / CHRONOSCOPE_WINDOW ({window}) applies to the embedded engine \
                     and `serve` only: with --remote the server decides how long new timelines \
                     stay open (its `serve --window`). Drop the flag or unset CHRONOSCOPE_WINDOW"
                ),
            )));
        }
        let token = global.token.clone().ok_or_else(|| {
            explain(ServiceError::invalid(
                "token",
                "--remote needs --token (see `chronoscope token --help`)",
            ))
        })?;
        let mut client = chronoscope::client::RemoteClient::builder(url, token);
        if let Some(ca) = &global.ca_cert {
            client = client.ca_cert(ca);
        }
        if face == Face::Command {
            let shown = url.clone();
            client = client
                .retry_rate_limited(COMMAND_RATE_LIMIT_RETRY)
                .on_rate_limit_wait(move |waiting| {
                    let why = if waiting.status == 429 {
                        "asked to wait (too many requests for now, or a scan of the log within \
                         its cooldown)"
                    } else {
                        "is unavailable for now"
                    };
                    eprintln!(
                        "note: {shown} {why}; waiting {:.1} s and trying again (at most {} \
                         times and {} s in all)",
                        waiting.wait.as_secs_f32(),
                        COMMAND_RATE_LIMIT_RETRY.attempts,
                        COMMAND_RATE_LIMIT_RETRY.total_wait.as_secs()
                    );
                });
        }
        let client = client.build().map_err(explain)?;
        let label = format!("server {}", client.base_url());
        return Ok((Arc::new(client), label, None));
    }
    let engine = open_engine(global, default_seed).await?;
    // Due scripts and jobs run while this process lives; each run is atomic, so a one-shot
    // command that exits mid-run loses nothing.
    engine.spawn_scheduler(SCHEDULER_PERIOD);
    // The dashboard's reads reach the access log as a server's do; a one-shot command exits
    // before a flush (its writes are in the log by themselves).
    engine.spawn_access_log(chronoscope::engine::access_log::DEFAULT_FLUSH);
    let label = format!("embedded {}", engine.describe_store());
    let session = Arc::new(engine.session(local_traveller(global)?));
    Ok((session, label, Some(engine)))
}

/// How often the embedded scheduler looks for due scripts and jobs.
const SCHEDULER_PERIOD: std::time::Duration = std::time::Duration::from_millis(500);

async fn dashboard(global: &Global, args: chronoscope::cli::DashboardArgs) -> Result<()> {
    let (service, source, _) = connect(global, Seed::Demo, Face::Dashboard).await?;
    let options = chronoscope::tui::TuiOptions {
        tick: args.tick,
        mouse: args.mouse,
        keymap: args.keymap,
        theme: match args.theme {
            ThemeArg::Dark => chronoscope::tui::Theme::Dark,
            ThemeArg::Light => chronoscope::tui::Theme::Light,
        },
        source,
    };
    chronoscope::tui::run(service, options).await
}

/// The token secret: `--jwt-secret-file`, else the flag or environment, else the data
/// directory's generated file.
fn secret(
    global: &Global,
    explicit: Option<&str>,
    file: Option<&Path>,
) -> Result<chronoscope::auth::Secret> {
    if let Some(file) = file {
        return chronoscope::auth::Secret::from_secret_file(file)
            .map_err(|e| misconfigured(e.to_string()));
    }
    let dir = data_dir(global)?;
    chronoscope::auth::Secret::load(explicit, &dir).map_err(|e| misconfigured(e.to_string()))
}

fn token(global: &Global, args: TokenArgs) -> Result<()> {
    if let Some(bad) = args
        .scope
        .iter()
        .find(|s| chronoscope::auth::Scope::parse(s.trim()).is_none())
    {
        return Err(explain(ServiceError::invalid(
            "scope",
            format!("'{bad}' is not a scope; use read, write or admin"),
        )));
    }
    let scopes = chronoscope::auth::Scopes::parse(&args.scope.join(" "));
    // Checked before a secret is read or created: a mistake here leaves nothing behind.
    let subject = args
        .subject
        .parse::<chronoscope::model::Traveller>()
        .map_err(|e| explain(e.into()))?;
    let given = args.jwt_secret.as_deref().filter(|s| !s.trim().is_empty());
    let secret = if given.is_none() && args.jwt_secret_file.is_none() {
        // The data directory's secret: only a server on that directory checks with it.
        let dir = data_dir(global)?;
        let path = dir.join(chronoscope::auth::SECRET_FILE);
        let (secret, created) = chronoscope::auth::Secret::open_file(&path)
            .map_err(|e| misconfigured(e.to_string()))?;
        let what = if created {
            "created a new token secret"
        } else {
            "signed with the token secret"
        };
        eprintln!(
            "note: {what} in {file}; only a server started with the data directory {dir} \
             (or with --jwt-secret-file {file}) accepts this token",
            file = path.display(),
            dir = dir.display(),
        );
        secret
    } else {
        secret(global, given, args.jwt_secret_file.as_deref())?
    };
    let token = chronoscope::auth::issue_token(&secret, subject.as_str(), &scopes, args.ttl)
        .map_err(|e| eyre!("{e}"))?;
    println!("{token}");
    Ok(())
}

/// The identity provider's keys, from `--jwks-file` or `--jwks-url`. A URL's set is fetched
/// once now (a failure is logged, and retried while the server runs, so an identity provider
/// that is down does not keep the server from starting) and kept current in the background.
async fn identity_keys(args: &ServeArgs) -> Result<Option<Arc<chronoscope::auth::IdentityKeys>>> {
    use chronoscope::auth::{IdentityChecks, IdentityKeys};
    let checks = IdentityChecks {
        issuer: args.jwt_issuer.clone().filter(|s| !s.trim().is_empty()),
        audience: args.jwt_audience.clone().filter(|s| !s.trim().is_empty()),
        subject_prefix: match args.jwt_subject_prefix.as_str() {
            "-" => String::new(),
            prefix => prefix.to_owned(),
        },
    };
    let has_checks = checks.issuer.is_some() || checks.audience.is_some();
    if args.jwks_file.is_some() || args.jwks_url.is_some() {
        checks
            .require_audience(args.jwt_any_audience)
            .map_err(|e| misconfigured(e.to_string()))?;
        if checks.subject_prefix.trim() != checks.subject_prefix
            || checks.subject_prefix.chars().any(char::is_control)
        {
            return Err(misconfigured(
                "--jwt-subject-prefix may not hold spaces at its ends or control characters",
            ));
        }
    }
    if let Some(path) = &args.jwks_file {
        return Ok(Some(
            IdentityKeys::from_file(path, checks).map_err(|e| misconfigured(e.to_string()))?,
        ));
    }
    let Some(url) = &args.jwks_url else {
        if has_checks {
            return Err(misconfigured(
                "--jwt-issuer and --jwt-audience check an identity provider's tokens: give its \
                 keys with --jwks-file or --jwks-url",
            ));
        }
        return Ok(None);
    };
    let url = reqwest::Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| {
            misconfigured(format!(
                "--jwks-url {url} is not an http:// or https:// URL"
            ))
        })?;
    chronoscope::tls::install_default_provider();
    let http = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(5))
        .timeout(std::time::Duration::from_secs(10))
        .user_agent(concat!("chronoscope/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| eyre!("cannot set up the HTTP client for --jwks-url: {e}"))?;
    let keys = IdentityKeys::at_url(&url, checks);
    let first_wait = match keys.fetch(&http, &url).await {
        Ok(keep) => keep,
        Err(e) => {
            tracing::warn!(%e, "the identity provider's keys could not be fetched; its tokens \
                                are refused until a retry succeeds");
            chronoscope::auth::jwks::RETRY_AFTER_FAILURE
        }
    };
    tokio::spawn(Arc::clone(&keys).refresh_from(http, url, first_wait));
    Ok(Some(keys))
}

/// `--advertise-url`, checked: where the other replicas send writes while this one holds the
/// writer's lease. `None` when not given (see [`default_advertised_url`]).
fn checked_advertise_url(given: Option<&str>, tls: bool) -> Result<Option<String>> {
    let Some(given) = given.map(str::trim).filter(|g| !g.is_empty()) else {
        return Ok(None);
    };
    let bad = |why: &str| eyre!("--advertise-url {given}: {why}");
    let url = reqwest::Url::parse(given).map_err(|e| {
        bad(&format!(
            "not a URL ({e}); give one like http://10.0.0.5:8080"
        ))
    })?;
    match (url.scheme(), tls) {
        ("http", false) | ("https", true) => {}
        ("https", false) => {
            return Err(bad(
                "this replica serves plain http (no --tls-cert): give an http:// address, or \
                 serve https with --tls-cert and --tls-key",
            ));
        }
        ("http", true) => {
            return Err(bad(
                "this replica serves https only: give its https:// address, with a name its \
                 certificate is valid for",
            ));
        }
        _ => {
            return Err(bad(
                "give an http:// address (or https:// when serving with --tls-cert)",
            ));
        }
    }
    if url.host_str().is_none()
        || url.path() != "/"
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
    {
        return Err(bad(
            "give only a scheme, a host and a port, e.g. http://10.0.0.5:8080",
        ));
    }
    Ok(Some(url.as_str().trim_end_matches('/').to_owned()))
}

/// Without `--advertise-url`: this server's own address, when that is one address over plain
/// http.
fn default_advertised_url(address: std::net::SocketAddr, tls: bool) -> Option<String> {
    (!tls && !address.ip().is_unspecified()).then(|| format!("http://{address}"))
}

async fn serve(global: &Global, args: ServeArgs) -> Result<()> {
    let secret = secret(
        global,
        args.jwt_secret.as_deref(),
        args.jwt_secret_file.as_deref(),
    )?;
    let identity = identity_keys(&args).await?;
    // Certificates and the metrics listener are checked before the store is opened, so a typo
    // in a path costs nothing.
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(chronoscope::tls::server_config(cert, key)?),
        _ => None,
    };
    let advertise = checked_advertise_url(args.advertise_url.as_deref(), tls.is_some())?;
    let replica_ca = match &args.replica_ca_cert {
        Some(path) => Some(
            chronoscope::tls::read_ca_bundle(path).map_err(|e| eyre!("--replica-ca-cert: {e}"))?,
        ),
        None => None,
    };
    let metrics = match &args.metrics_listen {
        Some(addr) => {
            // Installed before the router is built, so that the router records.
            let handle = chronoscope::metrics::install().map_err(|e| eyre!("{e}"))?;
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .wrap_err_with(|| format!("cannot listen for metrics on {addr}"))?;
            Some((listener, handle))
        }
        None => None,
    };
    // Before the log is folded: the cap applies as keys are remembered.
    chronoscope::engine::idempotency::set_keys_per_traveller(
        args.idempotency_keys_per_traveller as usize,
    );
    let engine = open_engine_keeping(global, Seed::None, args.access_log_retention).await?;
    engine.spawn_scheduler(SCHEDULER_PERIOD);
    engine.spawn_access_log(args.access_log_flush);
    engine.pace_reads(args.read_index_interval);
    engine.cool_scans(args.scan_cooldown);
    let snapshots = chronoscope::engine::SnapshotPolicy {
        every_records: args.snapshot_records,
        every: args.snapshot_interval,
    };
    engine.spawn_snapshots(snapshots);
    // Kept for the snapshot written once the service has stopped.
    let kept = Arc::clone(&engine);
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .wrap_err_with(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    if let Some(url) = advertise.or_else(|| default_advertised_url(address, tls.is_some())) {
        engine
            .advertise_writer(&url)
            .await
            .map_err(|why| eyre!("--advertise-url {url}: {why}"))?;
    }
    engine.learn_lease_holder();
    let scheme = if tls.is_some() { "https" } else { "http" };
    eprintln!(
        "chronoscope serving on {scheme}://{address} (store: {})",
        engine.describe_store()
    );
    if tls.is_none() && !address.ip().is_loopback() {
        tracing::warn!(
            "serving plain HTTP on {address}, which is not a loopback address: bearer tokens \
             cross the network unencrypted. Pass --tls-cert and --tls-key, or put a \
             TLS-terminating proxy in front"
        );
    }
    let metrics = match metrics {
        Some((listener, handle)) => {
            let at = listener.local_addr()?;
            eprintln!("metrics on http://{at}/metrics");
            // Runs until the service has stopped (below).
            Some(tokio::spawn(chronoscope::metrics::serve(
                listener,
                handle,
                std::future::pending(),
            )))
        }
        None => None,
    };
    let config = chronoscope::server::ServerConfig {
        secret,
        identity,
        rate_limit: chronoscope::server::RateLimit {
            per_second: f64::from(args.rate_limit),
            burst: args.rate_burst,
        },
        address_rate_limit: chronoscope::server::RateLimit {
            per_second: f64::from(args.address_rate_limit),
            burst: args.address_rate_burst,
        },
        body_limit: args.body_limit,
        request_timeout: args.request_timeout,
        heartbeat: chronoscope::server::ServerConfig::DEFAULT_HEARTBEAT,
        header_read_timeout: args.header_read_timeout,
        idle_timeout: args.idle_timeout,
        shutdown_timeout: args.shutdown_timeout,
        max_streams_per_traveller: args.max_streams_per_traveller as usize,
        max_streams: args.max_streams as usize,
        replica_ca,
    };
    let shutdown = chronoscope::server::shutdown_signal();
    let served = match tls {
        Some(tls) => chronoscope::server::run_tls(listener, tls, config, engine, shutdown).await,
        None => chronoscope::server::run(listener, config, engine, shutdown).await,
    };
    if let Some(metrics) = metrics {
        // Scrapes are cheap and repeatable: no need to let one finish.
        metrics.abort();
    }
    // Stopped by a signal (not by an error): a long tail becomes a snapshot, so the next start
    // replays little. A failure is logged; the log is intact either way.
    if served.is_ok() {
        // The reads and refusals counted since the last flush go into the log first, so
        // the snapshot holds them too.
        if let Err(e) = kept.flush_access_log().await {
            tracing::warn!(%e, "flushing the access log before stopping failed");
        }
        // The other replicas may write at once, not once this process has ended.
        kept.release_writer_lease().await;
        if let Err(e) = kept.record_witness().await {
            tracing::warn!(%e, "recording the head in the witness before stopping failed");
        }
        match kept.snapshot_before_exit(snapshots).await {
            Ok(Some(seq)) => {
                eprintln!("chronoscope wrote a snapshot at record {seq} before stopping")
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(%e, "writing a snapshot before stopping failed; the log is intact")
            }
        }
    }
    served.wrap_err("the server stopped with an error")
}

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
use chronoscope::service::TimelineService;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A service error as a person reads it: the problem's title, then the detail.
fn explain(e: ServiceError) -> color_eyre::Report {
    eyre!("{}: {e}", e.problem_type().title)
}

async fn run(cli: Cli) -> Result<()> {
    let global = cli.global;
    match cli.command {
        None => dashboard(&global, cli.dashboard).await,
        Some(Command::Serve(args)) => {
            init_logging(&global.log);
            serve(&global, args).await
        }
        Some(Command::Token(args)) => token(&global, args),
        Some(command) => {
            init_logging(&global.log);
            let (service, _) = connect(&global, Seed::Demo).await?;
            let mut stdout = std::io::stdout().lock();
            chronoscope::cli::execute(command, service.as_ref(), global.json, &mut stdout)
                .await
                .map_err(explain)
        }
    }
}

fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// The data directory: the flag, or the user's data directory; created owner-only.
fn data_dir(global: &Global) -> Result<PathBuf> {
    let dir = match &global.data_dir {
        Some(dir) => dir.clone(),
        None => directories::ProjectDirs::from("", "", "chronoscope")
            .map(|p| p.data_dir().to_path_buf())
            .ok_or_else(|| eyre!("cannot find your data directory; pass --data-dir"))?,
    };
    std::fs::create_dir_all(&dir)
        .wrap_err_with(|| format!("cannot create the data directory {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    }
    Ok(dir)
}

fn database_url(global: &Global, dir: &Path) -> String {
    global
        .database
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", dir.join("chronoscope.db").display()))
}

/// The embedded engine on the configured store.
async fn open_engine(global: &Global, default_seed: Seed) -> Result<Arc<Engine>> {
    let dir = data_dir(global)?;
    let url = database_url(global, &dir);
    let store = chronoscope::store::open(&url)
        .await
        .wrap_err_with(|| format!("cannot open the store {url}"))?;
    Engine::open(
        store,
        Arc::new(SystemClock),
        EngineConfig {
            default_window: global.window,
        },
        global.seed.unwrap_or(default_seed),
    )
    .await
    .map_err(explain)
}

/// The traveller on the embedded engine: `--as`, else the OS user.
fn local_traveller(global: &Global) -> Result<Traveller> {
    let name = global
        .traveller
        .clone()
        .or_else(|| std::env::var("USER").ok())
        .or_else(|| std::env::var("USERNAME").ok())
        .unwrap_or_else(|| "traveller".into());
    name.parse().map_err(explain)
}

/// The service every command talks to, and a label saying where it lives.
async fn connect(
    global: &Global,
    default_seed: Seed,
) -> Result<(Arc<dyn TimelineService>, String)> {
    if let Some(url) = &global.remote {
        let token = global
            .token
            .clone()
            .ok_or_else(|| eyre!("--remote needs --token (see `chronoscope token --help`)"))?;
        let client = chronoscope::client::RemoteClient::new(url, token).map_err(explain)?;
        return Ok((Arc::new(client), format!("server {url}")));
    }
    let engine = open_engine(global, default_seed).await?;
    // Due scripts and jobs run while this process lives; each run is atomic, so a one-shot
    // command that exits mid-run loses nothing.
    engine.spawn_scheduler(SCHEDULER_PERIOD);
    let label = format!("embedded {}", engine.describe_store());
    Ok((Arc::new(engine.session(local_traveller(global)?)), label))
}

/// How often the embedded scheduler looks for due scripts and jobs.
const SCHEDULER_PERIOD: std::time::Duration = std::time::Duration::from_millis(500);

async fn dashboard(global: &Global, args: chronoscope::cli::DashboardArgs) -> Result<()> {
    let (service, source) = connect(global, Seed::Demo).await?;
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

fn secret(global: &Global, explicit: Option<&str>) -> Result<chronoscope::auth::Secret> {
    let dir = data_dir(global)?;
    chronoscope::auth::Secret::load(explicit, &dir).map_err(|e| eyre!("{e}"))
}

fn token(global: &Global, args: TokenArgs) -> Result<()> {
    if let Some(bad) = args
        .scope
        .iter()
        .find(|s| chronoscope::auth::Scope::parse(s.trim()).is_none())
    {
        return Err(eyre!("'{bad}' is not a scope; use read, write or admin"));
    }
    let scopes = chronoscope::auth::Scopes::parse(&args.scope.join(" "));
    let secret = secret(global, args.jwt_secret.as_deref())?;
    let token = chronoscope::auth::issue_token(&secret, &args.subject, &scopes, args.ttl)
        .map_err(|e| eyre!("{e}"))?;
    println!("{token}");
    Ok(())
}

async fn serve(global: &Global, args: ServeArgs) -> Result<()> {
    let secret = secret(global, args.jwt_secret.as_deref())?;
    let engine = open_engine(global, Seed::None).await?;
    engine.spawn_scheduler(SCHEDULER_PERIOD);
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .wrap_err_with(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    eprintln!(
        "chronoscope serving on http://{address} (store: {})",
        engine.describe_store()
    );
    let config = chronoscope::server::ServerConfig {
        secret,
        rate_limit: chronoscope::server::RateLimit {
            per_second: f64::from(args.rate_limit),
            burst: args.rate_burst,
        },
        body_limit: args.body_limit,
        request_timeout: args.request_timeout,
    };
    chronoscope::server::run(
        listener,
        config,
        engine,
        chronoscope::server::shutdown_signal(),
    )
    .await
    .wrap_err("the server stopped with an error")
}

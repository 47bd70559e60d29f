//! Several `chronoscope serve` replicas sharing one PostgreSQL database.
//!
//! Two real server processes (A and B) take a mixed workload at the same time while scheduled
//! manipulations fall due; A is SIGKILLed in the middle of it. Then, through B and through a
//! third replica C started afterwards: every job ran exactly once, no acknowledged write is
//! lost, and the replicas give identical answers.
//!
//! The rate limiter is in-memory per process, so a limit applies per replica, not per cluster;
//! this test runs with `--rate-limit 0`.

mod pki;
mod support;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// The log key every replica here shares.
const LOG_KEY: &str = "replicas-test-log-key-0123456789abcdef0123456789abcdef";
/// Shared by every replica, so one token works on all of them.
const SECRET: &str = "replicas-test-secret-0123456789-abcdef";
/// The traveller the workload acts as.
const SUBJECT: &str = "replica-tester";
/// Scheduled manipulations, each on its own event.
const JOBS: usize = 30;
/// Spacing of the jobs' due times.
/// The jobs fall due in two waves, each all at one instant, so that both schedulers find the
/// same jobs due and race for them; A is killed at a random moment within one scheduler period
/// (500 ms) after the second wave falls due, so sometimes in the middle of running it.
const WAVE_GAP: Duration = Duration::from_millis(1000);
const KILL_WITHIN_MS: u64 = 600;
/// From scheduling to the first job falling due: room to schedule them all first.
const FIRST_DUE_AFTER: Duration = Duration::from_millis(2500);
/// Items and events written by the workload.
const ITEMS: usize = 200;
const EVENTS: usize = 100;
/// Items registered through both replicas at the same moment.
const CONTESTED: usize = 10;
/// Concurrent workload clients.
const CLIENTS: usize = 12;
/// Pause between one client's requests, so the workload spans the kill.
const PACE: Duration = Duration::from_millis(150);
/// Unpaced writers hitting A from shortly before the kill, and how many writes each may send.
const BURSTS: usize = 4;
const BURST_LEAD: Duration = Duration::from_millis(300);
const BURST_MAX: usize = 2000;
/// Bounds for anything that waits on a process or the network; none is a speed expectation.
const STARTUP_LIMIT: Duration = Duration::from_secs(20);
const REQUEST_LIMIT: Duration = Duration::from_secs(10);
const SCENARIO_LIMIT: Duration = Duration::from_secs(120);
/// How long after the last job's due time every job must have run: several scheduler periods
/// (500 ms) plus slack for a loaded machine.
const JOBS_SETTLE_LIMIT: Duration = Duration::from_secs(15);

/// One `chronoscope serve` process, killed (SIGKILL) and reaped when dropped.
struct Replica {
    name: &'static str,
    base: String,
    /// Where its Prometheus metrics are served (`http://host:port`).
    metrics: String,
    child: Option<Child>,
    stderr: Arc<Mutex<String>>,
    _data_dir: tempfile::TempDir,
}

impl Replica {
    /// Starts a replica on a free loopback port and waits until it says where it listens.
    fn start(exe: &Path, name: &'static str, database: &str) -> Replica {
        Replica::start_with(exe, name, database, SECRET, &[])
    }

    /// [`Replica::start`] with token secret `secret` and `extra` arguments to `serve`.
    fn start_with(
        exe: &Path,
        name: &'static str,
        database: &str,
        secret: &str,
        extra: &[&str],
    ) -> Replica {
        let data_dir = tempfile::tempdir().unwrap();
        // Replicas of one store chain its log with one key, each from its own copy of the file.
        let key_file = data_dir.path().join("shared-log-key");
        {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&key_file)
                .unwrap();
            file.write_all(LOG_KEY.as_bytes()).unwrap();
        }
        let mut child = Command::new(exe)
            .arg("--data-dir")
            .arg(data_dir.path())
            .arg("--log-key-file")
            .arg(&key_file)
            .args(["--database", database, "--seed", "none", "--log", "warn"])
            .arg("serve")
            .args(
                (!extra.contains(&"--listen"))
                    .then_some(["--listen", "127.0.0.1:0"])
                    .into_iter()
                    .flatten(),
            )
            .args([
                "--rate-limit",
                "0",
                "--address-rate-limit",
                "0",
                "--metrics-listen",
                "127.0.0.1:0",
            ])
            .args(["--jwt-secret", secret])
            .args(extra)
            .env_remove("CHRONOSCOPE_REMOTE")
            .env_remove("CHRONOSCOPE_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        // Drains stderr for the whole life of the process (a full pipe would stall it) and
        // keeps it for failure messages.
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                for (said, what) in [
                    ("serving on http://", "api"),
                    ("serving on https://", "api-tls"),
                    ("metrics on http://", "metrics"),
                ] {
                    if let Some(rest) = line.split_once(said).map(|(_, r)| r) {
                        let addr = rest
                            .split_whitespace()
                            .next()
                            .unwrap_or_default()
                            .trim_end_matches("/metrics")
                            .to_owned();
                        let _ = tx.send((what, addr));
                    }
                }
                let mut all = sink.lock().unwrap_or_else(|e| e.into_inner());
                all.push_str(&line);
                all.push('\n');
            }
        });
        let mut replica = Replica {
            name,
            base: String::new(),
            metrics: String::new(),
            child: Some(child),
            stderr,
            _data_dir: data_dir,
        };
        while replica.base.is_empty() || replica.metrics.is_empty() {
            match rx.recv_timeout(STARTUP_LIMIT) {
                Ok(("api", addr)) => replica.base = format!("http://{addr}"),
                Ok(("api-tls", addr)) => replica.base = format!("https://{addr}"),
                Ok((_, addr)) => replica.metrics = format!("http://{addr}"),
                Err(e) => {
                    let status = replica.child.as_mut().map(Child::try_wait);
                    replica.kill();
                    panic!(
                        "replica {name} did not start ({e}; exit status {status:?}); its stderr:\n{}",
                        replica.stderr()
                    );
                }
            }
        }
        replica
    }

    /// SIGKILL, then reap. Idempotent.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// An HTTP client acting as [`SUBJECT`].
#[derive(Clone)]
struct Api {
    http: reqwest::Client,
    token: String,
}

/// A response: status, JSON body (`Null` when empty), and whether a next page was announced.
#[derive(Debug)]
struct Answer {
    status: u16,
    body: Value,
    more: bool,
    location: Option<String>,
}

impl Api {
    fn new(token: String) -> Api {
        // reqwest is built without a crypto provider of its own: chronoscope's is installed.
        chronoscope::tls::install_default_provider();
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(REQUEST_LIMIT)
            .build()
            .unwrap();
        Api { http, token }
    }

    /// [`Api::new`], trusting the CA certificate `ca` (PEM) besides the platform's roots.
    fn trusting(token: String, ca: &Path) -> Api {
        chronoscope::tls::install_default_provider();
        let pem = std::fs::read(ca).unwrap();
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(REQUEST_LIMIT)
            .tls_certs_merge(reqwest::Certificate::from_pem_bundle(&pem).unwrap())
            .build()
            .unwrap();
        Api { http, token }
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<Answer, reqwest::Error> {
        let resp = req.bearer_auth(&self.token).send().await?;
        let status = resp.status().as_u16();
        let more = resp.headers().contains_key(reqwest::header::LINK);
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = resp.bytes().await?;
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        let more = more || body.get("next_cursor").is_some_and(|c| !c.is_null());
        Ok(Answer {
            status,
            body,
            more,
            location,
        })
    }

    async fn get(&self, base: &str, path: &str) -> Result<Answer, reqwest::Error> {
        self.send(self.http.get(format!("{base}{path}"))).await
    }

    async fn post(&self, base: &str, path: &str, body: &Value) -> Result<Answer, reqwest::Error> {
        self.send(self.http.post(format!("{base}{path}")).json(body))
            .await
    }

    /// A GET that must answer 200 with everything on one page.
    async fn read_all(&self, replica: &str, base: &str, path: &str) -> Value {
        let answer = self
            .get(base, path)
            .await
            .unwrap_or_else(|e| panic!("GET {path} on {replica}: {e}"));
        assert_eq!(
            answer.status, 200,
            "GET {path} on {replica}: {:?}",
            answer.body
        );
        assert!(!answer.more, "GET {path} on {replica} needs a second page");
        answer.body
    }
}

/// Runs `exe` with `args` to completion (bounded) and returns its stdout.
async fn run(exe: &Path, args: &[&str]) -> String {
    let out = tokio::process::Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(STARTUP_LIMIT, out)
        .await
        .unwrap_or_else(|_| panic!("`chronoscope {}` hung", args.join(" ")))
        .unwrap();
    assert!(
        out.status.success(),
        "`chronoscope {}`: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The server binary under test, pinned in `dir`: Cargo puts every build of this package at the
/// same path, so a rebuild (from another checkout sharing the target directory, say) could swap
/// the file between replicas. A hard link (or copy) keeps the one checked here to be this
/// package's build.
async fn pinned_binary(dir: &Path) -> PathBuf {
    let built = Path::new(env!("CARGO_BIN_EXE_chronoscope"));
    let pinned = dir.join("chronoscope");
    if std::fs::hard_link(built, &pinned).is_err() {
        std::fs::copy(built, &pinned).unwrap();
    }
    let version = run(&pinned, &["--version"]).await;
    assert_eq!(
        version,
        format!("chronoscope {}", env!("CARGO_PKG_VERSION")),
        "{} is not this package's build; rebuild and rerun",
        built.display()
    );
    pinned
}

/// A token for [`SUBJECT`] from the real `token` command, signed with [`SECRET`].
async fn token(exe: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().to_str().unwrap();
    run(
        exe,
        &[
            "--data-dir",
            dir,
            "token",
            "--subject",
            SUBJECT,
            "--jwt-secret",
            SECRET,
        ],
    )
    .await
}

/// Waits until `/healthz` answers 200.
async fn wait_healthy(api: &Api, replica: &Replica) {
    let deadline = tokio::time::Instant::now() + STARTUP_LIMIT;
    loop {
        if let Ok(answer) = api.get(&replica.base, "/healthz").await
            && answer.status == 200
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "replica {} never became healthy; its stderr:\n{}",
            replica.name,
            replica.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn str_field<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string `{field}` in {v}"))
}

/// One write of the workload.
#[derive(Clone, Copy, Debug)]
enum Write {
    Item(usize),
    Event(usize),
    /// An item written to A as fast as it answers, around the kill.
    Burst(usize, usize),
}

impl Write {
    fn request(self) -> (&'static str, Value) {
        match self {
            Write::Item(n) => (
                "/v1/items?view=full",
                json!({ "description": format!("workload item {n}") }),
            ),
            Write::Burst(k, n) => (
                "/v1/items?view=full",
                json!({ "description": format!("burst item {k}-{n}") }),
            ),
            Write::Event(n) => (
                "/v1/timeline/primary/events?view=full",
                json!({
                    "description": format!("workload event {n}"),
                    "time": format!("1900-01-01T{:02}:{:02}:00Z", n / 60, n % 60),
                    "location": "Hill Valley",
                }),
            ),
        }
    }
}

/// How a replica words the answer to a write it sent on to the writer's lease holder and got
/// no answer for (`server::forward`).
const IN_DOUBT: &str = "may or may not have been made";

/// What the workload saw.
#[derive(Debug, Default)]
struct Seen {
    /// Acknowledged items: id -> (the body the replica answered, which replica).
    items: BTreeMap<String, (Value, &'static str)>,
    /// Acknowledged events, likewise.
    events: BTreeMap<String, (Value, &'static str)>,
    /// Writes sent to A that got no answer because A was killed meanwhile.
    cut_by_kill: usize,
    /// Burst writes sent.
    bursts: usize,
    /// Writes refused with 503 because the other replica kept winning the race for the log's
    /// next record (see `record`): the description of each.
    busy: Vec<(String, &'static str)>,
    /// Anything else that went wrong.
    failures: Vec<String>,
    /// The last full item list A answered before it was killed.
    a_items: Option<Value>,
    /// Cross-replica reads of a just-acknowledged item.
    read_after_write: usize,
}

/// Notes the answer to `write` sent via `name`; `cut` when it went to A and A is killed now.
/// Returns the id of what an acknowledgement created.
fn record(
    seen: &Mutex<Seen>,
    write: Write,
    name: &'static str,
    cut: bool,
    result: Result<Answer, reqwest::Error>,
) -> Option<String> {
    let mut seen = seen.lock().unwrap();
    match result {
        Ok(answer) if (200..300).contains(&answer.status) => {
            let (id_field, map) = match write {
                Write::Item(_) | Write::Burst(..) => ("id", &mut seen.items),
                Write::Event(_) => ("event_id", &mut seen.events),
            };
            let id = str_field(&answer.body, id_field).to_owned();
            assert!(
                map.insert(id.clone(), (answer.body, name)).is_none(),
                "{id} acknowledged twice"
            );
            Some(id)
        }
        // Sent on to the replica holding the writer's lease, which was killed before it
        // answered: the write may or may not have been made (checked like a cut write).
        Ok(answer) if answer.status == 503 && answer.body.to_string().contains(IN_DOUBT) => {
            seen.cut_by_kill += 1;
            None
        }
        // The engine retries a write that lost the race for the next record a few times, then
        // answers 503 (nothing written). Under a steady stream of writes through another
        // replica this happens; it is reported, and checked below to have written nothing.
        Ok(answer) if answer.status == 503 && answer.body["error"]["kind"] == "unavailable" => {
            let (_, body) = write.request();
            seen.busy
                .push((str_field(&body, "description").to_owned(), name));
            None
        }
        Ok(answer) => {
            seen.failures.push(format!(
                "{write:?} via {name}: {} {}",
                answer.status, answer.body
            ));
            None
        }
        Err(_) if cut => {
            seen.cut_by_kill += 1;
            None
        }
        Err(e) => {
            seen.failures
                .push(format!("{write:?} via {name}: no answer: {e}"));
            None
        }
    }
}

/// Writes items to A without pause until A is killed, so that writes are in flight then.
async fn burst(api: Api, k: usize, a: String, a_killed: Arc<AtomicBool>, seen: Arc<Mutex<Seen>>) {
    // Bounded even if the kill never comes.
    for n in 0..BURST_MAX {
        if a_killed.load(Ordering::SeqCst) {
            return;
        }
        let write = Write::Burst(k, n);
        let (path, body) = write.request();
        seen.lock().unwrap().bursts += 1;
        let result = api.post(&a, path, &body).await;
        record(&seen, write, "A", a_killed.load(Ordering::SeqCst), result);
    }
}

/// Runs one workload client: its share of the writes, alternating replicas (B only once A is
/// killed), with a read now and then.
async fn client(
    api: Api,
    k: usize,
    writes: Vec<Write>,
    a: String,
    b: String,
    a_killed: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
) {
    for (j, write) in writes.into_iter().enumerate() {
        let use_a = (k + j).is_multiple_of(2) && !a_killed.load(Ordering::SeqCst);
        let (name, base, other) = if use_a { ("A", &a, &b) } else { ("B", &b, &a) };
        let (path, body) = write.request();
        let result = api.post(base, path, &body).await;
        let ack = record(
            &seen,
            write,
            name,
            use_a && a_killed.load(Ordering::SeqCst),
            result,
        );
        // Read-your-writes across replicas: an item A acknowledged is there on B at once.
        if let (Some(id), Write::Item(_), true) = (&ack, write, use_a && j % 3 == 0) {
            let answer = api.get(other, &format!("/v1/items/{id}?view=full")).await;
            let mut seen = seen.lock().unwrap();
            match answer {
                Ok(answer) if answer.status == 200 => seen.read_after_write += 1,
                Ok(answer) => seen.failures.push(format!(
                    "item {id} acknowledged by A, then GET on B: {} {}",
                    answer.status, answer.body
                )),
                Err(e) => seen
                    .failures
                    .push(format!("item {id} acknowledged by A, then GET on B: {e}")),
            }
        }
        if j % 4 == 3 {
            let answer = api.get(base, "/v1/items?view=full&limit=1000").await;
            let mut seen = seen.lock().unwrap();
            match answer {
                Ok(answer) if answer.status == 200 => {
                    if use_a {
                        seen.a_items = Some(answer.body);
                    }
                }
                Ok(answer) => seen.failures.push(format!(
                    "listing items via {name}: {} {}",
                    answer.status, answer.body
                )),
                Err(_) if use_a && a_killed.load(Ordering::SeqCst) => {}
                Err(e) => seen
                    .failures
                    .push(format!("listing items via {name}: no answer: {e}")),
            }
        }
        tokio::time::sleep(PACE).await;
    }
}

/// A scheduled job as the test set it up.
#[derive(Debug)]
struct Job {
    target: String,
    due: DateTime<Utc>,
    new_details: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_one_state_and_run_each_job_once_when_one_is_killed() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    tokio::time::timeout(SCENARIO_LIMIT, scenario(&db.url))
        .await
        .expect("the replicas scenario did not finish in time");
}

async fn scenario(database: &str) {
    let bin_dir = tempfile::tempdir().unwrap();
    let exe = pinned_binary(bin_dir.path()).await;
    let api = Api::new(token(&exe).await);
    // A first, so exactly one process seeds the empty store.
    let mut a = Replica::start(&exe, "A", database);
    wait_healthy(&api, &a).await;
    let b = Replica::start(&exe, "B", database);
    wait_healthy(&api, &b).await;

    // The events the jobs rewrite, half through each replica.
    let mut targets = Vec::new();
    for i in 0..JOBS {
        let base = if i % 2 == 0 { &a.base } else { &b.base };
        let answer = api
            .post(
                base,
                "/v1/timeline/primary/events?view=full",
                &json!({
                    "description": format!("target {i}"),
                    "time": format!("1800-01-01T00:{i:02}:00Z"),
                    "location": "Courthouse",
                }),
            )
            .await
            .unwrap();
        assert_eq!(answer.status, 201, "{}", answer.body);
        targets.push(str_field(&answer.body, "event_id").to_owned());
    }

    // The same item registered through both replicas at once: one registers it, the other
    // answers 409 naming it (a write is decided on the latest state, across replicas).
    let mut contested = HashMap::new();
    for d in 0..CONTESTED {
        let body = json!({ "description": format!("contested item {d}") });
        let (on_a, on_b) = tokio::join!(
            api.post(&a.base, "/v1/items?view=full", &body),
            api.post(&b.base, "/v1/items?view=full", &body),
        );
        let mut answers = [on_a.unwrap(), on_b.unwrap()];
        answers.sort_by_key(|a| a.status);
        let [won, lost] = answers;
        assert_eq!(won.status, 200, "{won:?}");
        let id = str_field(&won.body, "id").to_owned();
        let busy = lost.status == 503 && lost.body["error"]["kind"] == "unavailable";
        if !busy {
            assert_eq!(lost.status, 409, "{lost:?}");
            assert_eq!(lost.location, Some(format!("/v1/items/{id}")));
        }
        contested.insert(id, won.body);
    }

    // Jobs falling due in two waves, scheduled half through each replica.
    let first_due = Utc::now() + FIRST_DUE_AFTER;
    let mut jobs: HashMap<String, Job> = HashMap::new();
    for (i, target) in targets.iter().enumerate() {
        let due = if i < JOBS / 2 {
            first_due
        } else {
            first_due + WAVE_GAP
        };
        let base = if i % 2 == 0 { &a.base } else { &b.base };
        let new_details = format!("rewritten by job {i}");
        let answer = api
            .post(
                base,
                "/v1/schedule-manipulation?view=full",
                &json!({
                    "event_id": target,
                    "scheduled_time": rfc3339(due),
                    "manipulation_details": { "new_details": new_details },
                }),
            )
            .await
            .unwrap();
        assert_eq!(answer.status, 201, "{}", answer.body);
        let id = str_field(&answer.body, "schedule_id").to_owned();
        jobs.insert(
            id,
            Job {
                target: target.clone(),
                due,
                new_details,
            },
        );
    }
    assert!(
        Utc::now() < first_due,
        "scheduling took too long for the test's timing"
    );

    // The workload: items and events interleaved, dealt round-robin to the clients.
    let mut writes: Vec<Vec<Write>> = vec![Vec::new(); CLIENTS];
    let all = (0..ITEMS.max(EVENTS)).flat_map(|n| {
        let item = (n < ITEMS).then_some(Write::Item(n));
        let event = (n < EVENTS).then_some(Write::Event(n));
        item.into_iter().chain(event)
    });
    for (n, write) in all.enumerate() {
        writes[n % CLIENTS].push(write);
    }
    let a_killed = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let clients: Vec<_> = writes
        .into_iter()
        .enumerate()
        .map(|(k, w)| {
            tokio::spawn(client(
                api.clone(),
                k,
                w,
                a.base.clone(),
                b.base.clone(),
                Arc::clone(&a_killed),
                Arc::clone(&seen),
            ))
        })
        .collect();

    // Kill A just after the second wave fell due, with writes in flight.
    let kill_after = Duration::from_millis(rand::random_range(0..KILL_WITHIN_MS));
    let kill_at = first_due + WAVE_GAP + kill_after;
    if let Ok(wait) = (kill_at - BURST_LEAD - Utc::now()).to_std() {
        tokio::time::sleep(wait).await;
    }
    let bursts: Vec<_> = (0..BURSTS)
        .map(|k| {
            tokio::spawn(burst(
                api.clone(),
                k,
                a.base.clone(),
                Arc::clone(&a_killed),
                Arc::clone(&seen),
            ))
        })
        .collect();
    if let Ok(wait) = (kill_at - Utc::now()).to_std() {
        tokio::time::sleep(wait).await;
    }
    a_killed.store(true, Ordering::SeqCst);
    a.kill();
    let killed_at = Utc::now();

    for c in clients.into_iter().chain(bursts) {
        tokio::time::timeout(SCENARIO_LIMIT, c)
            .await
            .expect("a workload client hung")
            .expect("a workload client panicked");
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    eprintln!(
        "workload: {} items ({} of {} burst writes) and {} events acknowledged ({} by A), \
         {} writes cut by the kill, {} refused as busy ({} by B), {} cross-replica reads after writes",
        seen.items.len(),
        seen.items
            .values()
            .filter(|(i, _)| str_field(i, "description").starts_with("burst"))
            .count(),
        seen.bursts,
        seen.events.len(),
        seen.items
            .values()
            .chain(seen.events.values())
            .filter(|(_, r)| *r == "A")
            .count(),
        seen.cut_by_kill,
        seen.busy.len(),
        seen.busy.iter().filter(|(_, r)| *r == "B").count(),
        seen.read_after_write,
    );
    assert!(
        seen.failures.is_empty(),
        "requests failed other than by the kill:\n{}\nB's stderr:\n{}",
        seen.failures.join("\n"),
        b.stderr()
    );
    assert_eq!(
        seen.items.len() + seen.events.len() + seen.cut_by_kill + seen.busy.len(),
        ITEMS + EVENTS + seen.bursts,
        "every write is acknowledged or cut by the kill"
    );
    assert!(seen.read_after_write > 0 && seen.a_items.is_some());

    // Every job has run by a few scheduler periods after the last falls due.
    let last_due = jobs.values().map(|j| j.due).max().unwrap();
    let settle_by = tokio::time::Instant::now()
        + (last_due - Utc::now()).to_std().unwrap_or_default()
        + JOBS_SETTLE_LIMIT;
    let schedules = loop {
        let body = api
            .read_all("B", &b.base, "/v1/schedules?view=full&limit=1000")
            .await;
        let pending = body
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| str_field(s, "status") == "scheduled")
            .count();
        if pending == 0 {
            break body;
        }
        assert!(
            tokio::time::Instant::now() < settle_by,
            "{pending} jobs never ran; B's stderr:\n{}",
            b.stderr()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let schedules = schedules.as_array().unwrap();
    assert_eq!(schedules.len(), JOBS);
    for s in schedules {
        let id = str_field(s, "schedule_id");
        assert!(jobs.contains_key(id), "unknown schedule {s}");
        assert_eq!(str_field(s, "status"), "done", "{s}");
    }

    // Exactly one log entry per job, done, no earlier than its due time.
    let log = api
        .read_all("B", &b.base, "/v1/automation-log?view=full&limit=1000")
        .await;
    let entries = log["log_entries"].as_array().unwrap();
    let mut runs: HashMap<&str, Vec<&Value>> = HashMap::new();
    for e in entries {
        runs.entry(str_field(e, "source")).or_default().push(e);
    }
    let mut made: HashMap<&str, &str> = HashMap::new(); // target -> event the job made
    let mut before_kill = 0;
    let mut latest = chrono::TimeDelta::zero();
    for (id, job) in &jobs {
        let ran = runs.get(id.as_str()).map_or(&[][..], Vec::as_slice);
        assert_eq!(ran.len(), 1, "job {id} ran {} times: {ran:?}", ran.len());
        let entry = ran[0];
        assert_eq!(str_field(entry, "outcome"), "done", "{entry}");
        assert_eq!(str_field(entry, "event_id"), job.target);
        let at: DateTime<Utc> = str_field(entry, "timestamp").parse().unwrap();
        assert!(at >= job.due, "job {id} due {} ran early at {at}", job.due);
        if at < killed_at {
            before_kill += 1;
        }
        latest = latest.max(at - job.due);
        made.insert(&job.target, str_field(entry, "new_event_id"));
    }
    assert_eq!(entries.len(), JOBS, "stray log entries: {log}");
    eprintln!(
        "jobs: {before_kill} of {JOBS} ran before A was killed ({kill_after:?} after the second \
         wave fell due), the rest after; the latest ran {} ms after its due time",
        latest.num_milliseconds()
    );

    // The rewritten lineages: each current head directly supersedes the original (one
    // manipulation), and is the event the log names.
    let events = api
        .read_all("B", &b.base, "/v1/search-events?view=full&limit=1000")
        .await;
    let events = events["events"].as_array().unwrap();
    let by_id: HashMap<&str, &Value> = events
        .iter()
        .map(|e| (str_field(e, "event_id"), e))
        .collect();
    assert_eq!(by_id.len(), events.len(), "an event is listed twice");
    for job in jobs.values() {
        let heads: Vec<&&Value> = by_id
            .values()
            .filter(|e| str_field(e, "lineage") == job.target)
            .collect();
        assert_eq!(heads.len(), 1, "lineage {}: {heads:?}", job.target);
        let head = heads[0];
        assert_eq!(str_field(head, "event_id"), made[job.target.as_str()]);
        assert_eq!(str_field(head, "supersedes"), job.target, "{head}");
        assert_eq!(str_field(head, "description"), job.new_details);
    }
    // Writes cut by the kill may or may not have landed; nothing else is there.
    assert!(events.len() <= JOBS + EVENTS);
    for e in events {
        let d = str_field(e, "description");
        assert!(
            d.starts_with("workload event ") || d.starts_with("rewritten by job "),
            "an event nobody wrote is listed: {e}"
        );
    }

    // No acknowledged write is lost, and each reads back exactly as it was acknowledged.
    for (id, (acked, via)) in &seen.events {
        assert_eq!(
            by_id.get(id.as_str()).copied(),
            Some(acked),
            "event acknowledged by {via} is lost or changed"
        );
    }
    let items_b = api
        .read_all("B", &b.base, "/v1/items?view=full&limit=1000")
        .await;
    let items: HashMap<&str, &Value> = items_b
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (str_field(i, "id"), i))
        .collect();
    for (id, (acked, via)) in &seen.items {
        assert_eq!(
            items.get(id.as_str()).copied(),
            Some(acked),
            "item acknowledged by {via} is lost or changed"
        );
    }
    // Writes cut by the kill may or may not have landed; nothing else is there, and nothing twice.
    let descriptions: HashSet<&str> = items
        .values()
        .map(|i| str_field(i, "description"))
        .collect();
    assert_eq!(
        descriptions.len(),
        items.len(),
        "an item was registered twice"
    );
    assert!(items.len() <= ITEMS + seen.bursts + CONTESTED);
    for (id, won) in &contested {
        assert_eq!(
            items.get(id.as_str()).copied(),
            Some(won),
            "contested item {id}"
        );
    }
    let events_described: HashSet<&str> =
        events.iter().map(|e| str_field(e, "description")).collect();
    for (refused, _) in &seen.busy {
        assert!(
            !descriptions.contains(refused.as_str())
                && !events_described.contains(refused.as_str()),
            "a write answered 503 was written anyway: {refused}"
        );
    }
    assert!(
        descriptions
            .iter()
            .all(|d| ["workload item ", "burst item ", "contested item "]
                .iter()
                .any(|p| d.starts_with(p))),
        "an item nobody wrote is listed"
    );
    eprintln!(
        "{} writes cut by the kill landed anyway",
        items.len() - seen.items.len() - contested.len()
            + (events.len() - JOBS - seen.events.len())
    );

    // A's last answer agrees with B's: every item A listed is there, unchanged.
    for item in seen.a_items.as_ref().unwrap().as_array().unwrap() {
        assert_eq!(
            items.get(str_field(item, "id")).copied(),
            Some(item),
            "A listed an item B does not have"
        );
    }

    // A replica started now replays the same state: identical answers to B's.
    let c = Replica::start(&exe, "C", database);
    wait_healthy(&api, &c).await;
    for path in [
        "/v1/items?view=full&limit=1000",
        "/v1/search-events?view=full&limit=1000",
        "/v1/automation-log?view=full&limit=1000",
        "/v1/schedules?view=full&limit=1000",
        "/v1/timelines?view=full",
    ] {
        let on_b = api.read_all("B", &b.base, path).await;
        let on_c = api.read_all("C", &c.base, path).await;
        assert_eq!(on_b, on_c, "B and C disagree on {path}");
    }
}

// ---------------------------------------------------------------- the writer's lease

/// Writers per replica in the lease scenario, each writing as fast as it is answered, and the
/// most each writes per phase (a bound, so the check at the end reads a few pages at most).
const LEASE_WRITERS: usize = 3;
const LEASE_WRITES_MAX: usize = 400;
/// How long both replicas write at once.
const CONTENDED_FOR: Duration = Duration::from_secs(3);
/// How long both take writes before the lease's holder is killed, with writes in flight.
const BEFORE_KILL: Duration = Duration::from_millis(800);
/// The budget for a takeover: after the holder is killed, a write sent to the survivor is
/// acknowledged within this long ("within a few seconds").
const TAKEOVER_LIMIT: Duration = Duration::from_secs(5);

/// What a replica's `/metrics` says: each series without labels, by name.
async fn scrape(replica: &Replica) -> HashMap<String, f64> {
    let text = reqwest::Client::builder()
        .no_proxy()
        .timeout(REQUEST_LIMIT)
        .build()
        .unwrap()
        .get(format!("{}/metrics", replica.metrics))
        .send()
        .await
        .unwrap_or_else(|e| panic!("scraping {}: {e}", replica.name))
        .text()
        .await
        .unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_owned(), value.parse().ok()?))
        })
        .collect()
}

fn series(scraped: &HashMap<String, f64>, name: &str) -> f64 {
    scraped.get(name).copied().unwrap_or(0.0)
}

/// What one writer of the lease scenario saw.
#[derive(Default)]
struct Wrote {
    failures: Vec<String>,
    /// Writes cut by the kill: no answer, or the answer that the write is in doubt.
    cut: usize,
}

/// Registers items through `base` as fast as it answers until `stop`, each acknowledged one
/// noted in `acked` (id -> description). After `dies` is set, writes without an answer, or
/// answered as in doubt, are cut by a kill, not failures.
async fn write_items(
    api: Api,
    base: String,
    label: String,
    stop: Arc<AtomicBool>,
    dies: Arc<AtomicBool>,
    acked: Arc<Mutex<BTreeMap<String, String>>>,
) -> Wrote {
    let mut wrote = Wrote::default();
    for n in 0..LEASE_WRITES_MAX {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let description = format!("lease item {label}-{n}");
        let answer = api
            .post(
                &base,
                "/v1/items?view=full",
                &json!({ "description": description }),
            )
            .await;
        let dying = dies.load(Ordering::SeqCst);
        match answer {
            Ok(answer) if answer.status == 200 => {
                let id = str_field(&answer.body, "id").to_owned();
                acked.lock().unwrap().insert(id, description);
            }
            Ok(answer)
                if dying && answer.status == 503 && answer.body.to_string().contains(IN_DOUBT) =>
            {
                wrote.cut += 1;
            }
            Ok(answer) => wrote
                .failures
                .push(format!("{description}: {} {}", answer.status, answer.body)),
            Err(_) if dying => {
                wrote.cut += 1;
                break;
            }
            Err(e) => wrote
                .failures
                .push(format!("{description}: no answer: {e}")),
        }
    }
    wrote
}

/// Every item `replica` lists, following its pages: id -> description.
async fn all_items(api: &Api, replica: &Replica) -> BTreeMap<String, String> {
    let mut items = BTreeMap::new();
    let mut path = "/v1/items?view=full&limit=1000".to_owned();
    loop {
        let resp = api
            .http
            .get(format!("{}{path}", replica.base))
            .bearer_auth(&api.token)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "listing items on {}", replica.name);
        let next = resp
            .headers()
            .get(reqwest::header::LINK)
            .and_then(|v| v.to_str().ok())
            .and_then(|l| {
                l.strip_prefix('<')?
                    .split_once('>')
                    .map(|(u, _)| u.to_owned())
            });
        let page: Value = resp.json().await.unwrap();
        for item in page.as_array().unwrap() {
            items.insert(
                str_field(item, "id").to_owned(),
                str_field(item, "description").to_owned(),
            );
        }
        match next {
            Some(next) => path = next,
            None => return items,
        }
    }
}

/// Two replicas writing flat out at once: the one holding the writer's lease makes every
/// write, the other sends it the writes it receives, so at most 5 % of appends find their place
/// taken (without the lease, over half did). Then the holder is killed while both write: the
/// survivor takes the lease and acknowledges a write within seconds, and every write either
/// acknowledged is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_writes_for_both_and_a_survivor_takes_the_writer_lease_over() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    tokio::time::timeout(SCENARIO_LIMIT, lease_scenario(&db.url))
        .await
        .expect("the lease scenario did not finish in time");
}

/// Starts `LEASE_WRITERS` writers on each of `replicas`, labelled with `phase`.
fn start_writers(
    api: &Api,
    replicas: &[&Replica],
    phase: &str,
    stop: &Arc<AtomicBool>,
    dies: &Arc<AtomicBool>,
    acked: &Arc<Mutex<BTreeMap<String, String>>>,
) -> Vec<tokio::task::JoinHandle<Wrote>> {
    let mut writers = Vec::new();
    for replica in replicas {
        for k in 0..LEASE_WRITERS {
            writers.push(tokio::spawn(write_items(
                api.clone(),
                replica.base.clone(),
                format!("{}{phase}{k}", replica.name),
                Arc::clone(stop),
                Arc::clone(dies),
                Arc::clone(acked),
            )));
        }
    }
    writers
}

/// Waits for `writers`; fails on any failure; returns the writes cut by a kill.
async fn finish(writers: Vec<tokio::task::JoinHandle<Wrote>>) -> usize {
    let mut cut = 0;
    for writer in writers {
        let wrote = writer.await.unwrap();
        assert!(
            wrote.failures.is_empty(),
            "writes failed: {:?}",
            wrote.failures
        );
        cut += wrote.cut;
    }
    cut
}

async fn lease_scenario(database: &str) {
    let bin_dir = tempfile::tempdir().unwrap();
    let exe = pinned_binary(bin_dir.path()).await;
    let api = Api::new(token(&exe).await);
    let a = Replica::start(&exe, "A", database);
    wait_healthy(&api, &a).await;
    let b = Replica::start(&exe, "B", database);
    wait_healthy(&api, &b).await;
    let acked = Arc::new(Mutex::new(BTreeMap::new()));
    let never = Arc::new(AtomicBool::new(false));

    // Both take writes at once.
    let stop = Arc::new(AtomicBool::new(false));
    let writers = start_writers(&api, &[&a, &b], "", &stop, &never, &acked);
    tokio::time::sleep(CONTENDED_FOR).await;
    stop.store(true, Ordering::SeqCst);
    finish(writers).await;
    let (on_a, on_b) = (scrape(&a).await, scrape(&b).await);
    let sum = |name: &str| series(&on_a, name) + series(&on_b, name);
    let appends = sum("chronoscope_commit_batch_ops_count");
    let lost = sum("chronoscope_commit_races_lost_total");
    let forwarded = sum("chronoscope_writes_forwarded_total");
    let written = acked.lock().unwrap().len();
    eprintln!(
        "contended: {written} items in {appends} appends, {lost} lost a race, {forwarded} \
         forwarded; the lease taken {} times by A, {} by B",
        series(&on_a, "chronoscope_writer_lease_taken_total"),
        series(&on_b, "chronoscope_writer_lease_taken_total"),
    );
    assert!(appends > 0.0, "no append counted: {on_a:?}");
    assert!(
        lost <= 0.05 * appends,
        "{lost} of {appends} appends lost a race (budget: 5 %)"
    );
    assert!(
        forwarded > 0.0,
        "the replica without the lease sent no write on to its holder"
    );
    for replica in [&a, &b] {
        let by_it = acked
            .lock()
            .unwrap()
            .values()
            .filter(|d| d.starts_with(&format!("lease item {}", replica.name)))
            .count();
        assert!(by_it > 0, "{} acknowledged no write", replica.name);
    }

    // The holder is killed while both take writes.
    let held = |scraped: &HashMap<String, f64>| series(scraped, "chronoscope_writer_lease_held");
    // Read again should the lease be passing just then (a replica's access-log summary).
    let (mut a_holds, mut b_holds) = (0.0, 0.0);
    for _ in 0..20 {
        (a_holds, b_holds) = (held(&scrape(&a).await), held(&scrape(&b).await));
        if a_holds + b_holds == 1.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        a_holds + b_holds,
        1.0,
        "exactly one replica holds the lease (A: {a_holds}, B: {b_holds})"
    );
    let (mut holder, other) = if a_holds == 1.0 { (a, b) } else { (b, a) };
    let dies = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let writers = start_writers(&api, &[&holder, &other], "-last", &stop, &dies, &acked);
    tokio::time::sleep(BEFORE_KILL).await;
    dies.store(true, Ordering::SeqCst);
    holder.kill();
    let killed = tokio::time::Instant::now();
    stop.store(true, Ordering::SeqCst);
    let cut = finish(writers).await;

    // The survivor takes over: a write sent to it now is acknowledged within seconds. Sent as
    // a client should, with an Idempotency-Key, and sent again while the answer is that it is
    // in doubt (it went to the dead holder on a connection kept from before).
    let mut answer = None;
    for _ in 0..3 {
        let sent = api
            .send(
                api.http
                    .post(format!("{}/v1/items?view=full", other.base))
                    .header("Idempotency-Key", "after-the-kill")
                    .json(&json!({ "description": "after the kill" })),
            )
            .await
            .unwrap();
        let in_doubt = sent.status == 503 && sent.body.to_string().contains(IN_DOUBT);
        answer = Some(sent);
        if !in_doubt {
            break;
        }
    }
    let answer = answer.unwrap();
    let took = killed.elapsed();
    assert_eq!(answer.status, 200, "{}", answer.body);
    acked.lock().unwrap().insert(
        str_field(&answer.body, "id").to_owned(),
        "after the kill".to_owned(),
    );
    eprintln!(
        "{} acknowledged its first write {} ms after {} (the lease holder) was killed; {cut} \
         writes cut by the kill",
        other.name,
        took.as_millis(),
        holder.name
    );
    assert!(
        took <= TAKEOVER_LIMIT,
        "{} took {took:?} to write after the lease holder was killed",
        other.name
    );
    assert_eq!(
        held(&scrape(&other).await),
        1.0,
        "{} holds the lease now",
        other.name
    );

    // Nothing acknowledged is lost; what was cut by the kill may or may not be there.
    let items = all_items(&api, &other).await;
    let acked = acked.lock().unwrap();
    for (id, description) in acked.iter() {
        assert_eq!(
            items.get(id),
            Some(description),
            "an acknowledged item is lost or changed"
        );
    }
    assert!(
        items.len() <= acked.len() + cut,
        "{} items listed, {} acknowledged and {cut} cut by the kill",
        items.len(),
        acked.len()
    );
}

// ---------------------------------------------------------------- a database co-tenant

/// The second replica's token secret in the co-tenant scenario: replicas need share only the
/// log key.
const OTHER_SECRET: &str = "replicas-test-other-secret-fedcba9876543210";
/// A customer's encryption key, which must never leave the replica it was sent to.
const CUSTOMER_KEY: &str = "customer-key-c0ffee-must-stay-on-its-replica";
/// The writer's lease: `postgres_lease.rs`'s advisory lock key ("chrono").
const LEASE_KEY: i64 = 0x6368_726f_6e6f;
/// What the rogue answers every request with.
const FORGED: &str = "forged-by-the-rogue";

/// A token from the real `token` command for `subject` with `scope`, signed with `secret`.
async fn token_for(exe: &Path, secret: &str, subject: &str, scope: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().to_str().unwrap();
    run(
        exe,
        &[
            "--data-dir",
            dir,
            "token",
            "--subject",
            subject,
            "--scope",
            scope,
            "--jwt-secret",
            secret,
        ],
    )
    .await
}

/// A rogue HTTP listener: records every request that reaches it, whole, and answers each with a
/// forged `201` carrying made-up signatures.
async fn rogue_listener() -> (u16, Arc<Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let sink = Arc::clone(&sink);
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let read = tokio::time::timeout(Duration::from_secs(2), conn.read(&mut buf));
                    match read.await {
                        Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
                        _ => break,
                    }
                    if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if got.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                sink.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&got).into_owned());
                let body = format!(
                    r#"{{"id":"{FORGED}","description":"{FORGED}","data_id":"{FORGED}","status":"{FORGED}"}}"#
                );
                let answer = format!(
                    "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: \
                     {}\r\nx-chronoscope-answer: {}\r\nx-chronoscope-replica: {}\r\nconnection: \
                     close\r\n\r\n{body}",
                    body.len(),
                    "00".repeat(32),
                    "00".repeat(32),
                );
                let _ = conn.write_all(answer.as_bytes()).await;
                let _ = conn.shutdown().await;
            });
        }
    });
    (port, heard)
}

/// Who holds the writer's lease: the backend pid and connection name, as anyone may read them.
async fn lease_holder(conn: &mut sqlx::PgConnection) -> Option<(i32, String)> {
    sqlx::query_as(
        "SELECT l.pid, a.application_name \
         FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
           AND l.classid = ($1::bigint)::oid AND l.objid = ($2::bigint)::oid \
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .bind(LEASE_KEY >> 32)
    .bind(LEASE_KEY & 0xffff_ffff)
    .fetch_optional(conn)
    .await
    .unwrap()
}

/// Registers an item through `base`: it must be made (200, an id that is no forgery).
async fn register(api: &Api, replica: &Replica, description: &str) -> (String, String) {
    let answer = api
        .post(
            &replica.base,
            "/v1/items?view=full",
            &json!({ "description": description }),
        )
        .await
        .unwrap_or_else(|e| panic!("{description} through {}: {e}", replica.name));
    assert_eq!(
        answer.status, 200,
        "{description} through {}: {}",
        replica.name, answer.body
    );
    assert!(
        !answer.body.to_string().contains(FORGED),
        "a forged answer was passed to a client: {}",
        answer.body
    );
    (
        str_field(&answer.body, "id").to_owned(),
        description.to_owned(),
    )
}

/// A database co-tenant (a plain database login, no chronoscope secret) poses as the writer:
/// it names its connection after a replica with its own address, asks for the lease on the
/// notification channel (unsigned, forged, and replaying the replicas' own requests) and takes
/// the advisory lock. Nothing of a client's reaches it (no token, no Authorization header, no
/// customer key, no write), no client gets its forged answer, every write is made and listed,
/// and its requests for the lease move nothing. The two replicas have different token
/// secrets and one log key, and still forward to each other once a genuine one holds the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_co_tenant_posing_as_the_writer_gets_no_token_key_or_write() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    tokio::time::timeout(SCENARIO_LIMIT, co_tenant_scenario(&db.url))
        .await
        .expect("the co-tenant scenario did not finish in time");
}

async fn co_tenant_scenario(database: &str) {
    use sqlx::Connection;
    use std::str::FromStr;
    let bin_dir = tempfile::tempdir().unwrap();
    let exe = pinned_binary(bin_dir.path()).await;
    let (port, heard) = rogue_listener().await;

    // The co-tenant: a plain login, named like a replica, holding the lock before anyone.
    let options = sqlx::postgres::PgConnectOptions::from_str(database)
        .unwrap()
        .application_name(&format!("chronoscope evil http://127.0.0.1:{port}"));
    let mut rogue = sqlx::PgConnection::connect_with(&options).await.unwrap();
    let mut overheard = sqlx::postgres::PgListener::connect(database).await.unwrap();
    overheard.listen("chronoscope_lease").await.unwrap();
    let requests = Arc::new(Mutex::new(Vec::<String>::new()));
    let kept = Arc::clone(&requests);
    tokio::spawn(async move {
        while let Ok(notice) = overheard.recv().await {
            kept.lock().unwrap().push(notice.payload().to_owned());
        }
    });
    let notify =
        |payload: String| sqlx::query("SELECT pg_notify('chronoscope_lease', $1)").bind(payload);
    notify("evil".into()).execute(&mut rogue).await.unwrap();
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(LEASE_KEY)
        .execute(&mut rogue)
        .await
        .unwrap();

    // Two replicas, different token secrets, one log key; nothing but the clients' writes
    // moves the lease (no access-log summaries meanwhile).
    let quiet = ["--access-log-flush", "1h"];
    let a = Replica::start_with(&exe, "A", database, SECRET, &quiet);
    let b = Replica::start_with(&exe, "B", database, OTHER_SECRET, &quiet);
    let member_a = Api::new(token_for(&exe, SECRET, SUBJECT, "read,write").await);
    let member_b = Api::new(token_for(&exe, OTHER_SECRET, SUBJECT, "read,write").await);
    let operator = Api::new(token_for(&exe, SECRET, "doc-brown", "read,write,admin").await);
    wait_healthy(&member_a, &a).await;
    wait_healthy(&member_b, &b).await;
    let tokens = [&member_a.token, &member_b.token, &operator.token];
    let mut members = BTreeMap::new();
    let mut operators = BTreeMap::new();

    // While the co-tenant holds the lock: members' and an operator's writes, and a customer's
    // key, through both replicas.
    for n in 0..3 {
        members.extend([register(&member_a, &a, &format!("co-tenant A{n}")).await]);
        members.extend([register(&member_b, &b, &format!("co-tenant B{n}")).await]);
        operators.extend([register(&operator, &a, &format!("co-tenant operator {n}")).await]);
    }
    let mut sealed = Vec::new();
    for (api, replica) in [(&member_a, &a), (&member_b, &b)] {
        let answer = api
            .post(
                &replica.base,
                "/v1/encrypt-data",
                &json!({
                    "timeline_id": "primary",
                    "data": { "flux": "1.21 gigawatts" },
                    "encryption_key": CUSTOMER_KEY,
                }),
            )
            .await
            .unwrap();
        assert_eq!(
            answer.status, 201,
            "encrypt-data on {}: {}",
            replica.name, answer.body
        );
        assert!(!answer.body.to_string().contains(FORGED), "{}", answer.body);
        sealed.push(str_field(&answer.body, "data_id").to_owned());
    }
    notify("evil".into()).execute(&mut rogue).await.unwrap();

    // The co-tenant lets go; a replica takes the lease with its next write.
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(LEASE_KEY)
        .execute(&mut rogue)
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    let mut n = 0;
    let held = loop {
        members.extend([register(&member_a, &a, &format!("after the co-tenant {n}")).await]);
        n += 1;
        if let Some((pid, name)) = lease_holder(&mut rogue).await
            && name.starts_with("chronoscope ")
            && !name.contains("evil")
        {
            break (pid, name);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no replica took the writer's lease after the co-tenant let it go"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    // Its requests for the lease move nothing: unsigned, forged, or replayed from what the
    // replicas asked while it held the lock.
    let replayed = requests.lock().unwrap().clone();
    assert!(
        replayed.iter().any(|r| r != "evil"),
        "the replicas never asked for the lease while the co-tenant held it: {replayed:?}"
    );
    let forged = format!(
        "{} 9999999999 {} {}",
        "ab".repeat(4),
        "00".repeat(16),
        "11".repeat(32)
    );
    for payload in ["evil".to_owned(), forged].into_iter().chain(replayed) {
        notify(payload).execute(&mut rogue).await.unwrap();
    }
    // A genuine request moves the lease within milliseconds (MIN_HOLD is 20 ms).
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        lease_holder(&mut rogue).await,
        Some(held.clone()),
        "the co-tenant's requests moved the writer's lease"
    );

    // Writes through both replicas, tokens of either secret: the one without the lease sends
    // them to the one with it.
    for n in 0..5 {
        members.extend([register(&member_a, &a, &format!("forwarded A{n}")).await]);
        members.extend([register(&member_b, &b, &format!("forwarded B{n}")).await]);
    }
    let forwarded = series(&scrape(&a).await, "chronoscope_writes_forwarded_total")
        + series(&scrape(&b).await, "chronoscope_writes_forwarded_total");
    assert!(
        forwarded > 0.0,
        "replicas with different token secrets did not forward to the holder ({held:?})"
    );
    // A customer's entry opens on the other replica with the customer's key.
    let opened = member_b
        .post(
            &b.base,
            "/v1/decrypt-data",
            &json!({ "data_id": sealed[0], "encryption_key": CUSTOMER_KEY }),
        )
        .await
        .unwrap();
    assert_eq!(opened.status, 200, "{}", opened.body);
    assert_eq!(
        opened.body["data"]["flux"], "1.21 gigawatts",
        "{}",
        opened.body
    );

    // Nothing of a client's reached the co-tenant: only challenges, which it failed.
    let heard = heard.lock().unwrap().clone();
    assert!(
        !heard.is_empty(),
        "the replicas never turned to the co-tenant"
    );
    for request in &heard {
        let lower = request.to_ascii_lowercase();
        assert!(
            request.starts_with("GET /replica/challenge HTTP/1.1\r\n"),
            "the co-tenant was sent more than a challenge:\n{request}"
        );
        for secret in tokens.iter().map(|t| t.as_str()).chain([CUSTOMER_KEY]) {
            assert!(
                !request.contains(secret),
                "a secret reached the co-tenant:\n{request}"
            );
        }
        for header in [
            "authorization",
            "bearer",
            "x-chronoscope-forwarded",
            "encryption_key",
        ] {
            assert!(
                !lower.contains(header),
                "{header} reached the co-tenant:\n{request}"
            );
        }
    }

    // Every acknowledged write is there, on both replicas (each asked with a token of its own
    // secret).
    let operator_b = Api::new(token_for(&exe, OTHER_SECRET, "doc-brown", "read,write,admin").await);
    for (replica, member, operator) in [(&a, &member_a, &operator), (&b, &member_b, &operator_b)] {
        for (api, wrote) in [(member, &members), (operator, &operators)] {
            let items = all_items(api, replica).await;
            for (id, description) in wrote {
                assert_eq!(
                    items.get(id),
                    Some(description),
                    "an acknowledged write is not listed on {}",
                    replica.name
                );
            }
        }
    }
}

/// Replicas serving https only, each advertising an https address (`--advertise-url`) whose
/// certificate a private CA signed (`--replica-ca-cert`): the one without the writer's lease
/// forwards to the one with it over https, and every write is made once and listed on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_serving_https_forward_writes_to_each_other_over_https() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    tokio::time::timeout(SCENARIO_LIMIT, https_scenario(&db.url))
        .await
        .expect("the https scenario did not finish in time");
}

async fn https_scenario(database: &str) {
    let bin_dir = tempfile::tempdir().unwrap();
    let exe = pinned_binary(bin_dir.path()).await;
    let pki = pki::Pki::new();
    let (cert, key, ca) = (pki.cert(), pki.key(), pki.ca());
    let (cert, key, ca) = (
        cert.to_str().unwrap(),
        key.to_str().unwrap(),
        ca.to_str().unwrap(),
    );
    let start = |name: &'static str| {
        // A free port, named before the replica listens on it: its address is advertised.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let listen = format!("127.0.0.1:{port}");
        let advertise = format!("https://localhost:{port}");
        Replica::start_with(
            &exe,
            name,
            database,
            SECRET,
            &[
                "--listen",
                &listen,
                "--tls-cert",
                cert,
                "--tls-key",
                key,
                "--advertise-url",
                &advertise,
                "--replica-ca-cert",
                ca,
                "--access-log-flush",
                "1h",
            ],
        )
    };
    let api = Api::trusting(token(&exe).await, &pki.ca());
    let a = start("A");
    let b = start("B");
    assert!(a.base.starts_with("https://"), "{}", a.base);
    wait_healthy(&api, &a).await;
    wait_healthy(&api, &b).await;
    let mut wrote = BTreeMap::new();
    for n in 0..10 {
        wrote.extend([register(&api, &a, &format!("over https A{n}")).await]);
        wrote.extend([register(&api, &b, &format!("over https B{n}")).await]);
    }
    let forwarded = series(&scrape(&a).await, "chronoscope_writes_forwarded_total")
        + series(&scrape(&b).await, "chronoscope_writes_forwarded_total");
    assert!(
        forwarded > 0.0,
        "no write was forwarded between replicas serving https; A:\n{}\nB:\n{}",
        a.stderr(),
        b.stderr()
    );
    for replica in [&a, &b] {
        let items = all_items(&api, replica).await;
        for (id, description) in &wrote {
            assert_eq!(items.get(id), Some(description), "on {}", replica.name);
        }
    }
}

// ---------------------------------------------------------------- what is forwarded

/// Waits until `holder` holds the writer's lease and `other` does not.
async fn wait_for_holder(holder: &Replica, other: &Replica) {
    let held = |scraped: &HashMap<String, f64>| series(scraped, "chronoscope_writer_lease_held");
    for _ in 0..100 {
        if held(&scrape(holder).await) == 1.0 && held(&scrape(other).await) == 0.0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} did not come to hold the lease alone", holder.name);
}

/// The lease moves only for writes. Every write a follower receives is made by the lease
/// holder, whatever its method or path: a GET that writes (`retrieve-item`), writes outside
/// `/v1/` (`/api/v1/travel`, `/api/v1/manipulate-event`); each used to be made on the
/// follower, which took the lease for it. A POST that only reads (`paradox-checks`, the scans
/// of the log) is answered where it arrives. And a client knocking with a bad token ten times a second gets
/// every refusal into the access log without the follower taking the lease to append it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_moves_only_for_writes_whatever_a_follower_receives() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    tokio::time::timeout(SCENARIO_LIMIT, forwarding_scenario(&db.url))
        .await
        .expect("the forwarding scenario did not finish in time");
}

async fn forwarding_scenario(database: &str) {
    let bin_dir = tempfile::tempdir().unwrap();
    let exe = pinned_binary(bin_dir.path()).await;
    let api = Api::new(token(&exe).await);
    let a = Replica::start(&exe, "A", database);
    wait_healthy(&api, &a).await;
    // B's read counts are not flushed while this runs: that append is not what is measured.
    let b = Replica::start_with(&exe, "B", database, SECRET, &["--access-log-flush", "1h"]);
    wait_healthy(&api, &b).await;

    // A timeline with an event, made through A, which holds the lease after.
    let timeline = api
        .post(&a.base, "/v1/timelines", &json!({ "name": "forwarded" }))
        .await
        .unwrap();
    assert_eq!(timeline.status, 201, "{}", timeline.body);
    let timeline = str_field(&timeline.body, "id").to_owned();
    let event = api
        .post(
            &a.base,
            &format!("/v1/timeline/{timeline}/events"),
            &json!({ "description": "the lamp is lit", "time": "1955-11-05T06:00:00Z",
                     "location": "Hill Valley" }),
        )
        .await
        .unwrap();
    assert_eq!(event.status, 201, "{}", event.body);
    let event = str_field(&event.body, "event_id").to_owned();
    wait_for_holder(&a, &b).await;
    let before = scrape(&b).await;

    let travelled = api
        .post(
            &b.base,
            "/api/v1/travel",
            &json!({ "destination_time": "1969-07-20T20:17:00Z", "location": "Houston" }),
        )
        .await
        .unwrap();
    assert_eq!(travelled.status, 200, "{}", travelled.body);
    let manipulated = api
        .post(
            &b.base,
            "/api/v1/manipulate-event",
            &json!({ "event_id": event, "timeline_id": timeline, "action": "the lamp is out" }),
        )
        .await
        .unwrap();
    assert_eq!(manipulated.status, 200, "{}", manipulated.body);
    let picked = api
        .get(&b.base, "/v1/retrieve-item?item_description=a%20lamp")
        .await
        .unwrap();
    assert_eq!(picked.status, 200, "{}", picked.body);
    let checked = api
        .post(
            &b.base,
            "/v1/paradox-checks",
            &json!({ "timeline_id": timeline, "proposed_changes": [] }),
        )
        .await
        .unwrap();
    assert_eq!(checked.status, 200, "{}", checked.body);
    // The scans of the log read the stored log every replica shares: answered by B (a reader's
    // tamper scan records nothing).
    let validated = api
        .post(
            &b.base,
            "/v1/validate-integrity",
            &json!({ "timeline_id": timeline }),
        )
        .await
        .unwrap();
    assert_eq!(validated.status, 200, "{}", validated.body);
    let reader = Api::new(token_for(&exe, SECRET, "reader", "read").await);
    let scanned = reader
        .post(
            &b.base,
            "/v1/detect-tampering",
            &json!({ "timeline_id": timeline }),
        )
        .await
        .unwrap();
    assert_eq!(scanned.status, 200, "{}", scanned.body);
    assert_eq!(
        scanned.body["tampering_detected"], false,
        "{}",
        scanned.body
    );

    let after = scrape(&b).await;
    let moved = |name: &str| series(&after, name) - series(&before, name);
    assert_eq!(
        moved("chronoscope_writer_lease_taken_total"),
        0.0,
        "B took the writer's lease for a write it should have forwarded"
    );
    assert_eq!(
        moved("chronoscope_writes_forwarded_total"),
        3.0,
        "B forwards the three writes and answers the paradox check and the scans itself"
    );
    // A client with a bad token knocks on B ten times a second: each refusal is counted in
    // the access log (service-wide: it names no timeline), within a second, without moving the
    // lease (B hands its counts to A).
    let knocks = 30;
    for _ in 0..knocks {
        let refused = api
            .http
            .get(format!("{}/v1/timelines", b.base))
            .bearer_auth("not-a-token")
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let operator = Api::new(token_for(&exe, SECRET, "root", "read,write,admin").await);
    let mut counted = 0;
    for _ in 0..50 {
        let log = operator
            .get(
                &a.base,
                &format!("/v1/access-logs?timeline_id={timeline}&view=full&service_wide=true"),
            )
            .await
            .unwrap();
        assert_eq!(log.status, 200, "{}", log.body);
        counted = log.body["logs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["user_id"] == "unknown" && e["durable"] == true)
            .map(|e| e["count"].as_u64().unwrap())
            .sum::<u64>();
        if counted == knocks {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        counted, knocks,
        "A's access log should hold every refusal B counted"
    );

    let after = scrape(&b).await;
    let moved = |name: &str| series(&after, name) - series(&before, name);
    assert_eq!(
        moved("chronoscope_writer_lease_taken_total"),
        0.0,
        "B took the writer's lease for its access log"
    );
    assert!(
        moved("chronoscope_access_counts_handed_total") >= 1.0,
        "B handed no access-log counts to A"
    );

    // Made, and seen through both.
    let events = api
        .get(
            &a.base,
            &format!("/v1/timeline/{timeline}/events?view=full"),
        )
        .await
        .unwrap();
    assert!(
        events.body.to_string().contains("the lamp is out"),
        "the manipulation forwarded by B is not on A: {}",
        events.body
    );
}

//! Work whose cost grows with history — a monitor scan, a check of the log's links, a page of
//! past versions, a look-up by description — runs here, never on the runtime's workers: on a
//! few threads of its own (one per core, at most four) at a lower scheduling priority than the
//! request path (`nice` +5 on Linux). A cheap request therefore waits for a core only as long
//! as the kernel takes to hand it one, however many heavy reads run beside it; the heavy reads
//! share what the request path leaves.
//!
//! Bounded and visible: at most one job per thread runs at once, the others wait in order
//! (`chronoscope_heavy_jobs_waiting`), and a job whose caller gave up (a timeout, a closed
//! connection) is dropped unrun when its turn comes.
//!
//! Which reads are heavy is said at every read: `EngineSession::read(Heavy, …)` runs here,
//! `read(Inline, …)` on the request's worker (see `engine::session::place`).

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, mpsc};

use crate::error::ServiceError;

/// One job: runs the work and hands its answer back, unless its caller is gone.
type Job = Box<dyn FnOnce() + Send>;

/// The threads' name, as `top -H` and a profile show it.
pub const THREAD_NAME: &str = "chronoscope-heavy";

/// How much lower the heavy threads' priority is (Linux `nice`).
const NICENESS: i32 = 5;

struct Pool {
    jobs: mpsc::Sender<Job>,
    threads: usize,
}

static POOL: LazyLock<Pool> = LazyLock::new(|| {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4);
    let (jobs, queue) = mpsc::channel::<Job>();
    let queue = Arc::new(Mutex::new(queue));
    for _ in 0..threads {
        let queue = Arc::clone(&queue);
        // A thread that cannot be started leaves the others to do the work.
        let _ = std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || {
                lower_priority();
                loop {
                    let job = {
                        let queue = queue.lock().unwrap_or_else(|e| e.into_inner());
                        queue.recv()
                    };
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                }
            });
    }
    Pool { jobs, threads }
});

static WAITING: AtomicI64 = AtomicI64::new(0);

#[cfg(target_os = "linux")]
fn lower_priority() {
    // SAFETY: setpriority only reads its arguments; `0` names the calling thread on Linux,
    // whose threads each have their own niceness. Failing leaves the priority as it was.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, NICENESS);
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

/// How many threads run heavy work.
pub fn threads() -> usize {
    POOL.threads
}

/// Runs `work` on a heavy thread and answers what it answers; `what` names it in the error a
/// panic becomes.
pub(crate) async fn run<T: Send + 'static>(
    what: &'static str,
    work: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    waiting(1);
    let job: Job = Box::new(move || {
        waiting(-1);
        if answer.is_closed() {
            return;
        }
        let _ = answer.send(std::panic::catch_unwind(AssertUnwindSafe(work)));
    });
    if POOL.jobs.send(job).is_err() {
        waiting(-1);
        return Err(ServiceError::Internal(format!(
            "{what}: no thread to run it"
        )));
    }
    match answered.await {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) => Err(ServiceError::Internal(format!("{what} failed"))),
        Err(_) => Err(ServiceError::Internal(format!("{what} was dropped"))),
    }
}

/// Runs `work` on a heavy thread with nobody waiting for its end (a recount whose answer is
/// kept, not returned); `what` names it in the warning a panic becomes.
pub(crate) fn detach(what: &'static str, work: impl FnOnce() + Send + 'static) {
    waiting(1);
    let job: Job = Box::new(move || {
        waiting(-1);
        if std::panic::catch_unwind(AssertUnwindSafe(work)).is_err() {
            tracing::warn!("{what} failed");
        }
    });
    if POOL.jobs.send(job).is_err() {
        waiting(-1);
        tracing::warn!("{what}: no thread to run it");
    }
}

fn waiting(by: i64) {
    let now = WAITING.fetch_add(by, Ordering::Relaxed) + by;
    metrics::gauge!(crate::metrics::HEAVY_WAITING).set(now as f64);
}

/// **Test only.** Takes every heavy thread until the answer is dropped, once each has started
/// waiting: work sent meanwhile cannot end before, whatever else runs.
#[cfg(any(test, feature = "test-hooks"))]
pub async fn hold_every_thread() -> HeldThreads {
    let mut releases = Vec::new();
    let mut started = Vec::new();
    for _ in 0..threads() {
        let (release, held) = mpsc::channel::<()>();
        let (taken, is_taken) = tokio::sync::oneshot::channel::<()>();
        releases.push(release);
        started.push(is_taken);
        let job: Job = Box::new(move || {
            let _ = taken.send(());
            let _ = held.recv();
        });
        waiting(1);
        let _ = POOL.jobs.send(Box::new(move || {
            waiting(-1);
            job();
        }));
    }
    for s in started {
        let _ = s.await;
    }
    HeldThreads {
        _releases: releases,
    }
}

/// Every heavy thread, held until dropped.
#[cfg(any(test, feature = "test-hooks"))]
pub struct HeldThreads {
    _releases: Vec<mpsc::Sender<()>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    /// A caller that gives up while its job waits (a timeout, a closed connection): the job is
    /// dropped when its turn comes, not run.
    #[tokio::test]
    async fn a_job_whose_caller_gave_up_is_dropped_unrun() {
        let held = hold_every_thread().await;
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        let waited = tokio::time::timeout(
            Duration::from_millis(50),
            run("a test job", move || {
                flag.store(true, Ordering::SeqCst);
                Ok(())
            }),
        )
        .await;
        assert!(waited.is_err(), "the job waits while every thread is held");
        drop(held);
        // Every thread free again: a job sent now runs after the dropped one's turn.
        for _ in 0..threads() {
            run("a later job", || Ok(())).await.expect("it runs");
        }
        assert!(!ran.load(Ordering::SeqCst), "the given-up job ran");
    }

    /// Heavy work runs on the named threads, at a lower priority than the caller's.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn heavy_work_runs_on_its_threads_at_a_lower_priority() {
        // SAFETY: getpriority only reads; `0` names the calling thread.
        let here = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let (name, there) = run("a test job", || {
            let name = std::thread::current().name().map(str::to_owned);
            // SAFETY: as above, on the heavy thread.
            Ok((name, unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }))
        })
        .await
        .expect("it runs");
        assert_eq!(name.as_deref(), Some(THREAD_NAME));
        assert_eq!(
            there,
            (here + NICENESS).min(19),
            "niceness {here} → {there}"
        );
    }
}

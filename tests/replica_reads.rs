//! What replicas agree on: a write acknowledged by one replica is seen by the next read on any
//! other, while reads share their store queries; and anomalies carry the same id, kind and
//! `detected_at` for every viewer, on every replica and after every restart.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use chronoscope::engine::{Engine, ManualClock, SystemClock};
use chronoscope::model::{Instant, TimelineId, Traveller};
use chronoscope::paradox::ParadoxKind;
use chronoscope::service::prelude::*;
use chronoscope::service::{AnomalyKind, NewEvent, NewItem, PageRequest};
use chronoscope::store::{self};

async fn replica(url: &str) -> Arc<Engine> {
    support::engine_on(store::open(url).await.unwrap(), Arc::new(SystemClock)).await
}

/// One engine on a log of its own, in memory: its head queries cost nothing.
async fn memory_engine() -> Arc<Engine> {
    support::memory_engine().await
}

fn traveller(name: &str) -> Traveller {
    name.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_acknowledged_by_one_replica_is_seen_by_the_next_read_on_the_other() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    let (a, b) = (replica(&db.url).await, replica(&db.url).await);
    // Other travellers read and write on both replicas the whole time.
    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..4)
        .map(|n| {
            let engine = Arc::clone(if n % 2 == 0 { &a } else { &b });
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let me = engine.session(traveller(&format!("load{n}")));
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    if i.is_multiple_of(4) {
                        me.register_item(NewItem {
                            description: format!("load {i}"),
                        })
                        .await
                        .unwrap();
                    } else {
                        me.list_timelines(PageRequest::default()).await.unwrap();
                    }
                }
            })
        })
        .collect();
    let before = b.read_stats();
    for i in 0..300 {
        if i == 150 {
            // The second half with paced rounds (`serve --read-index-interval 1ms`).
            for replica in [&a, &b] {
                replica.pace_reads(std::time::Duration::from_millis(1));
            }
        }
        // Each way round: A acknowledges, B reads at once; then B acknowledges, A reads.
        let (writer, reader) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let item = writer
            .session(traveller("ada"))
            .register_item(NewItem {
                description: format!("probe {i}"),
            })
            .await
            .unwrap();
        let seen = reader.session(traveller("ada")).get_item(&item.id).await;
        assert_eq!(seen.as_ref(), Ok(&item), "write {i} was not seen");
    }
    stop.store(true, Ordering::Relaxed);
    for task in load {
        task.await.unwrap();
    }
    let after = b.read_stats();
    // A query per read would be no batching at all: with two travellers reading back to back
    // on B the whole time (and paced rounds half of it), some of its reads share a query.
    let (queries, reads) = (
        after.head_queries - before.head_queries,
        after.reads - before.reads,
    );
    assert!(
        queries < reads,
        "{queries} head queries for {reads} reads: none shared ({before:?} -> {after:?})"
    );
}

#[tokio::test]
async fn reads_arriving_together_share_one_store_query() {
    let engine = memory_engine().await;
    let before = engine.read_stats();
    let reads = (0..200).map(|n| {
        let me = engine.session(traveller(&format!("t{n}")));
        tokio::spawn(async move { me.whoami().await })
    });
    for read in futures::future::join_all(reads).await {
        read.unwrap().unwrap();
    }
    let after = engine.read_stats();
    assert_eq!(after.reads - before.reads, 200);
    // The first read's round may have been sent before the others arrived; they share the next.
    assert!(
        after.head_queries - before.head_queries <= 2,
        "200 reads that arrived together asked {} times",
        after.head_queries - before.head_queries
    );
}

/// `serve --read-index-interval`: a replica asks the store at most once per interval, however
/// many reads it serves, and the reads share the rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paced_reads_ask_at_most_once_per_interval() {
    let engine = memory_engine().await;
    // Eight readers back to back for about 400 ms, rounds at least 50 ms apart.
    let interval = std::time::Duration::from_millis(50);
    engine.pace_reads(interval);
    let before = engine.read_stats();
    let started = std::time::Instant::now();
    let readers: Vec<_> = (0..8)
        .map(|n| {
            let me = engine.session(traveller(&format!("busy{n}")));
            tokio::spawn(async move {
                while started.elapsed() < std::time::Duration::from_millis(400) {
                    me.list_timelines(PageRequest::default()).await.unwrap();
                }
            })
        })
        .collect();
    for reader in readers {
        reader.await.unwrap();
    }
    let elapsed = started.elapsed();
    let after = engine.read_stats();
    let (reads, queries) = (
        after.reads - before.reads,
        after.head_queries - before.head_queries,
    );
    // The first round is sent at once; after it, one per interval at most.
    let most = 1 + (elapsed.as_millis() / interval.as_millis()) as u64 + 1;
    assert!(
        queries <= most,
        "{queries} head queries for {reads} reads in {elapsed:?}, more than one per {interval:?}"
    );
    assert!(
        reads >= 2 * queries,
        "reads did not share rounds: {reads} reads, {queries} queries"
    );
}

fn instant(s: &str) -> Instant {
    s.parse().unwrap()
}

async fn engine_at(url: &str, clock: &Arc<ManualClock>) -> Arc<Engine> {
    support::engine_on(store::open(url).await.unwrap(), Arc::clone(clock) as Arc<_>).await
}

/// Makes a causal-order paradox in `primary` at the clock's time: the cause is moved after its
/// effect.
async fn make_a_paradox(engine: &Arc<Engine>) {
    let ada = engine.session(traveller("ada"));
    let event = |description: &str, time: &str, causes| NewEvent {
        description: description.into(),
        time: instant(time),
        location: "Geneva".into(),
        causes,
        fixed_point: false,
        safety_check: false,
    };
    let cause = ada
        .add_event(
            &TimelineId::primary(),
            event("cause", "1900-01-01T00:00:00Z", vec![]),
        )
        .await
        .unwrap();
    ada.add_event(
        &TimelineId::primary(),
        event(
            "effect",
            "1900-01-02T00:00:00Z",
            vec![cause.event_id.clone()],
        ),
    )
    .await
    .unwrap();
    ada.manipulate_event(support::manipulation(
        None,
        &cause.event_id,
        support::retimed("1900-01-03T00:00:00Z"),
    ))
    .await
    .unwrap();
}

/// The anomalies of `primary` as bob is shown them through `engine`: (id, kind, date).
async fn anomalies(engine: &Arc<Engine>) -> Vec<(String, AnomalyKind, Instant)> {
    shown(engine, "bob").await.0
}

#[tokio::test]
async fn an_anomaly_keeps_its_id_kind_and_date_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("c.db").display());
    let clock = Arc::new(ManualClock::new(instant("2030-01-01T00:00:00Z")));
    let first = {
        let engine = engine_at(&url, &clock).await;
        make_a_paradox(&engine).await;
        clock.advance(chrono::TimeDelta::hours(1));
        anomalies(&engine).await
    };
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(
        first[0].1,
        AnomalyKind::Paradox(ParadoxKind::Grandfather),
        "ada's doing, whoever looks"
    );
    assert_eq!(
        first[0].2,
        instant("2030-01-01T00:00:00Z"),
        "when it was made"
    );
    clock.advance(chrono::TimeDelta::days(2));
    let engine = engine_at(&url, &clock).await;
    assert_eq!(anomalies(&engine).await, first, "the same after a restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_postgres_replicas_date_an_anomaly_alike() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    let (clock_a, clock_b) = (
        Arc::new(ManualClock::new(instant("2030-01-01T00:00:00Z"))),
        Arc::new(ManualClock::new(instant("2030-01-05T00:00:00Z"))),
    );
    let a = engine_at(&db.url, &clock_a).await;
    let b = engine_at(&db.url, &clock_b).await;
    make_a_paradox(&a).await;
    // B first looks days later by its own clock; A looks again later still.
    let seen_by_b = anomalies(&b).await;
    clock_a.advance(chrono::TimeDelta::days(9));
    assert_eq!(anomalies(&a).await, seen_by_b);
    assert_eq!(seen_by_b[0].2, instant("2030-01-01T00:00:00Z"));
}

/// What `who` is shown of `primary`'s anomalies through `engine`: (id, kind, date) as the
/// monitor reports them, and the count the timelines list shows.
async fn shown(engine: &Arc<Engine>, who: &str) -> (Vec<(String, AnomalyKind, Instant)>, usize) {
    let session = engine.session(traveller(who)).with_admin(false);
    let report = support::monitor(&session, &TimelineId::primary()).await;
    let listed = support::listed(&session, &TimelineId::primary())
        .await
        .paradoxes;
    let anomalies = report
        .anomalies
        .into_iter()
        .map(|a| (a.anomaly_id.to_string(), a.kind, a.detected_at))
        .collect();
    (anomalies, listed)
}

/// Ada makes a paradox of her own doing through A. Whoever looks, through either replica, is
/// shown one anomaly: the same id, kind and date, and the list counts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_postgres_replicas_show_every_traveller_the_same_anomaly() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    let clock = Arc::new(ManualClock::new(instant("2030-01-01T00:00:00Z")));
    let (a, b) = (
        engine_at(&db.url, &clock).await,
        engine_at(&db.url, &clock).await,
    );
    make_a_paradox(&a).await;
    let by_ada_on_a = shown(&a, "ada").await;
    let (anomalies, listed) = &by_ada_on_a;
    assert_eq!(
        anomalies.iter().map(|a| a.1).collect::<Vec<_>>(),
        [AnomalyKind::Paradox(ParadoxKind::Grandfather)],
        "{anomalies:?}"
    );
    assert_eq!(
        *listed,
        anomalies.len(),
        "the list counts what the monitor shows"
    );
    for (engine, replica, who) in [(&b, "B", "bob"), (&b, "B", "ada"), (&a, "A", "bob")] {
        assert_eq!(
            shown(engine, who).await,
            by_ada_on_a,
            "{who} on {replica} is shown what ada is on A"
        );
    }
    // And over HTTP, as two dashboards on the two replicas read it.
    let ada_on_a = monitor_over_http(&a, "ada").await;
    assert_eq!(ada_on_a[0]["anomaly_id"], by_ada_on_a.0[0].0.as_str());
    assert_eq!(monitor_over_http(&b, "bob").await, ada_on_a);
}

/// `GET /v1/monitor-timeline?timeline_id=primary&view=full` through a server over `engine`,
/// with a token of `who`: the anomalies as JSON.
async fn monitor_over_http(engine: &Arc<Engine>, who: &str) -> serde_json::Value {
    use chronoscope::auth::{Scope, Scopes, Secret, issue_token};
    use tower::ServiceExt;
    let secret = Secret::from_bytes("replica reads test secret, long enough for HS256").unwrap();
    let scopes: Scopes = [Scope::Read].into_iter().collect();
    let token = issue_token(&secret, who, &scopes, std::time::Duration::from_secs(60)).unwrap();
    let router = chronoscope::server::build_router(
        chronoscope::server::ServerConfig::new(secret),
        Arc::clone(engine),
    );
    let req = axum::http::Request::get("/v1/monitor-timeline?timeline_id=primary&view=full")
        .header("authorization", format!("Bearer {token}"))
        .body(axum::body::Body::empty())
        .unwrap();
    let resp = router.oneshot(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    serde_json::from_slice::<serde_json::Value>(&body).unwrap()["anomalies"].clone()
}

#[tokio::test]
async fn appends_are_pushed_to_the_other_replicas_but_not_back_to_their_writer() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    let (a, b) = (
        store::open(&db.url).await.unwrap(),
        store::open(&db.url).await.unwrap(),
    );
    let (mut to_a, mut to_b) = (a.pushed_heads().unwrap(), b.pushed_heads().unwrap());
    // Listening starts in the background; appends repeat until B hears one.
    let mut last = 0;
    let heard = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            last += 1;
            a.append(last, &[entry(&format!("{{\"n\": {last}}}"))])
                .await
                .unwrap();
            if tokio::time::timeout(std::time::Duration::from_millis(200), to_b.changed())
                .await
                .is_ok()
            {
                return *to_b.borrow_and_update();
            }
        }
    })
    .await
    .expect("B heard of A's appends");
    assert!(heard >= 1 && heard <= last, "{heard} of {last}");
    assert!(
        !to_a.has_changed().unwrap(),
        "A is not told of its own appends"
    );
    b.append(last + 1, &[entry("{}")]).await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(5), to_a.changed())
        .await
        .expect("A hears of B's append")
        .unwrap();
    assert_eq!(*to_a.borrow(), last + 1);
}

/// A record for a test of the store alone (nothing folds it, so its link is not checked).
fn entry(body: &str) -> chronoscope::store::Entry {
    chronoscope::store::Entry {
        body: body.to_owned(),
        link: [0; 32],
    }
}

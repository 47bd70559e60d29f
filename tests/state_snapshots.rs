//! Snapshots of the folded state: a start from a snapshot plus the tail of the log gives the
//! state a full replay gives; a damaged snapshot or one of another format is ignored; both
//! stores keep and hand back snapshots; branches keep sharing their parent's structure.

mod support;

use std::sync::Arc;

use chronoscope::engine::snapshot::{self, SnapshotError};
use chronoscope::engine::{
    Engine, EngineConfig, Envelope, ManualClock, Op, Seed, World, append_ops,
};
use chronoscope::model::{Event, EventId, EventStatus, Timeline, TimelineId, parse_instant};
use chronoscope::service::NewItem;
use chronoscope::service::prelude::*;
use chronoscope::store::{self, LogKey, MemoryStore, NewSnapshot, Store};
use proptest::prelude::*;

fn timeline(id: &str, parent: Option<&str>) -> Timeline {
    Timeline {
        variation: Some("what if".into()),
        ..support::timeline_record(
            id.parse().unwrap(),
            parent.map(|p| p.parse().unwrap()),
            parse_instant("t", "2026-01-01T00:00:00Z").unwrap(),
        )
    }
}

fn event(id: &str, minutes: i64, causes: Vec<EventId>) -> Event {
    Event {
        fixed_point: minutes % 13 == 0,
        ..support::event_record(
            id.parse().unwrap(),
            parse_instant("t", "2000-01-01T00:00:00Z").unwrap()
                + chrono::Duration::minutes(minutes),
            format!("event at +{minutes}m"),
            format!("Place {}", minutes % 5),
            causes,
        )
    }
}

/// One step of a random log, resolved against the world when it is applied.
#[derive(Clone, Debug)]
enum Step {
    /// A branch of the `pick`th timeline.
    Branch {
        pick: usize,
    },
    /// An event, maybe caused by a current one, maybe naming one that comes later.
    Add {
        pick: usize,
        minutes: i64,
        cause: Option<usize>,
        ahead: bool,
    },
    Manipulate {
        pick: usize,
        event: usize,
        minutes: i64,
    },
    Revert {
        pick: usize,
        event: usize,
    },
    Delete {
        pick: usize,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        1 => any::<usize>().prop_map(|pick| Step::Branch { pick }),
        6 => (any::<usize>(), 0i64..5_000, proptest::option::of(any::<usize>()), proptest::bool::weighted(0.1))
            .prop_map(|(pick, minutes, cause, ahead)| Step::Add { pick, minutes, cause, ahead }),
        3 => (any::<usize>(), any::<usize>(), 0i64..5_000)
            .prop_map(|(pick, event, minutes)| Step::Manipulate { pick, event, minutes }),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(pick, event)| Step::Revert { pick, event }),
        1 => any::<usize>().prop_map(|pick| Step::Delete { pick }),
    ]
}

/// Turns `step` into an op valid in `world`, if there is one.
fn op_for(world: &World, step: &Step, fresh: &mut u32) -> Option<Op> {
    let ids: Vec<&TimelineId> = world.timelines.keys().collect();
    let pick = |p: usize| ids[p % ids.len()].clone();
    *fresh += 1;
    let new_id = format!("evt_{fresh}");
    match step {
        Step::Branch { pick: p } => Some(Op::CreateTimeline {
            timeline: timeline(&format!("tml_{fresh}"), Some(pick(*p).as_str())),
        }),
        Step::Add {
            pick: p,
            minutes,
            cause,
            ahead,
        } => {
            let tl = pick(*p);
            let current: Vec<EventId> = world.timelines[&tl]
                .history
                .iter()
                .map(|e| e.id.clone())
                .collect();
            let mut causes: Vec<EventId> = cause
                .filter(|_| !current.is_empty())
                .map(|c| vec![current[c % current.len()].clone()])
                .unwrap_or_default();
            if *ahead {
                causes.push(format!("evt_{}", *fresh + 1).parse().unwrap());
            }
            Some(Op::AddEvents {
                timeline: tl,
                events: vec![event(&new_id, *minutes, causes)],
                at: (minutes % 2 == 0).then(|| parse_instant("t", "2026-02-01T00:00:00Z").unwrap()),
            })
        }
        Step::Manipulate {
            pick: p,
            event: e,
            minutes,
        } => {
            let tl = pick(*p);
            let current: Vec<Arc<Event>> = world.timelines[&tl].history.iter().cloned().collect();
            let old = current.get(e % current.len().max(1))?;
            let mut new = event(&new_id, *minutes, old.causes.clone());
            new.status = EventStatus::Manipulated;
            Some(Op::Manipulate {
                timeline: tl,
                old: old.id.clone(),
                new,
                at: Some(parse_instant("t", "2026-03-01T00:00:00Z").unwrap()),
            })
        }
        Step::Revert { pick: p, event: e } => {
            let tl = pick(*p);
            let heads: Vec<Arc<Event>> = world.timelines[&tl]
                .history
                .iter()
                .filter(|e| e.supersedes.is_some())
                .cloned()
                .collect();
            let head = heads.get(e % heads.len().max(1))?;
            Some(Op::Revert {
                timeline: tl,
                head: head.id.clone(),
                at: None,
            })
        }
        Step::Delete { pick: p } => {
            // As the engine does: never `primary`, never a timeline with branches.
            let tl = pick(*p);
            let has_branches = world
                .timelines
                .values()
                .any(|t| t.meta.parent.as_ref() == Some(&tl));
            (!tl.is_primary() && !has_branches).then_some(Op::DeleteTimeline { id: tl })
        }
    }
}

/// A random log: `primary`, then the steps that make valid ops.
fn log_of(steps: &[Step]) -> Vec<Op> {
    let mut world = World::default();
    let mut ops = vec![Op::CreateTimeline {
        timeline: timeline("primary", None),
    }];
    world.apply(1, ops[0].clone()).unwrap();
    let mut fresh = 0;
    for step in steps {
        if let Some(op) = op_for(&world, step, &mut fresh) {
            world.apply(world.seq + 1, op.clone()).unwrap();
            ops.push(op);
        }
    }
    ops
}

fn fold(ops: &[Op], mut world: World) -> World {
    for op in ops {
        let seq = world.seq + 1;
        world.apply(seq, op.clone()).unwrap();
    }
    world
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// Snapshot at k, read back, plus the tail, is the full replay; so is the snapshot itself.
    #[test]
    fn snapshot_plus_tail_is_the_full_replay(
        steps in proptest::collection::vec(step(), 0..80),
        cut in any::<prop::sample::Index>(),
    ) {
        let ops = log_of(&steps);
        let full = fold(&ops, World::default());
        let k = cut.index(ops.len() + 1);
        let at_k = fold(&ops[..k], World::default());
        let bytes = encoded(&at_k);
        let read = decoded(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(read.first_difference(&at_k), None);
        let resumed = fold(&ops[k..], read);
        prop_assert_eq!(resumed.first_difference(&full), None);
    }
}

/// A journey of ada's within primary, with id `id`.
fn journey_op(id: &str) -> Op {
    let journey = serde_json::json!({
        "id": id, "traveller": "ada", "destination": "primary",
        "from_timeline": "primary", "from_time": "2026-01-01T00:00:00Z",
        "to_timeline": "primary", "arrival_time": "1955-11-05T06:00:00Z",
        "departed_at": "2026-01-01T00:00:01Z", "items_transported": [], "items_left": [],
        "anchor": null, "location": "Hill Valley",
    });
    Op::Travel {
        journey: serde_json::from_value(journey).expect("a journey"),
    }
}

/// A process that writes snapshots keeps the JSON of the journeys it wrote and encodes only
/// the ones made since (a busy server's journeys grow without end): what it writes is, byte
/// for byte, what encoding the world afresh writes, and reads back as the world. Journeys added
/// in the middle of the order (a smaller id) are written where they belong. Full chunks of
/// journeys are parts, named in the bytes, not held in them: the bytes stay the size of the
/// chunk not yet full.
#[test]
fn a_snapshot_reusing_the_journeys_written_before_is_the_same_snapshot() {
    let mut world = fold(
        &[Op::CreateTimeline {
            timeline: timeline("primary", None),
        }],
        World::default(),
    );
    let mut kept = snapshot::Kept::default();
    let mut made = 0;
    let mut sizes = Vec::new();
    // Less than a chunk, two chunks and a bit, nothing new, one in the middle of the order.
    for (round, more) in [3000, 6000, 0, 1].into_iter().enumerate() {
        let ops: Vec<Op> = (0..more)
            .map(|_| {
                made += 1;
                if round == 3 {
                    journey_op("jrn_00000100a")
                } else {
                    journey_op(&format!("jrn_{made:08}"))
                }
            })
            .collect();
        world = fold(&ops, world);
        let reused = snapshot::encode_kept(&world, &key(), &mut kept);
        let fresh = snapshot::encode(&world, &key());
        assert!(
            reused == fresh.bytes,
            "round {round}: the snapshot reusing kept journeys differs from a fresh one"
        );
        let parts = kept.parts();
        assert_eq!(
            parts.len(),
            made / 4096,
            "round {round}: one part per full chunk"
        );
        assert!(
            parts
                .iter()
                .zip(fresh.parts())
                .all(|(a, b)| a.id == b.id && a.bytes == b.bytes),
            "round {round}: the parts differ from a fresh encoding's"
        );
        let read = snapshot::decode(&reused, &parts, &key()).expect("the snapshot reads back");
        assert_eq!(read.first_difference(&world), None, "round {round}");
        assert_eq!(read.journeys.len(), made, "round {round}");
        sizes.push(reused.len());
        // Without its parts, or with one altered, it is not read.
        if let Some(first) = parts.first() {
            assert!(matches!(
                snapshot::decode(&reused, &parts[1..], &key()),
                Err(SnapshotError::Damaged(why)) if why.contains("missing")
            ));
            let mut altered = first.bytes.to_vec();
            altered[10] ^= 1;
            let mut swapped = parts.clone();
            swapped[0].bytes = &altered;
            assert!(matches!(
                snapshot::decode(&reused, &swapped, &key()),
                Err(SnapshotError::Damaged(why)) if why.contains("does not match")
            ));
        }
    }
    // 9,000 journeys write fewer bytes than 3,000: two chunks went to parts.
    assert!(sizes[1] < sizes[0], "{sizes:?}");
}

/// The key every engine here uses ([`EngineConfig::default`]'s).
fn key() -> LogKey {
    LogKey::development()
}

/// The bytes of `world`'s snapshot, small enough a world to need no parts.
/// A snapshot of `bytes` in `format` folding the log up to `seq`, naming no parts.
fn snapshot_of(format: u32, seq: u64, bytes: &[u8]) -> NewSnapshot<'_> {
    NewSnapshot {
        format,
        seq,
        bytes,
        parts: &[],
    }
}

fn encoded(world: &World) -> Vec<u8> {
    let encoded = snapshot::encode(world, &key());
    assert!(
        encoded.parts().is_empty(),
        "a small world's snapshot has parts"
    );
    encoded.bytes
}

/// The world of a snapshot that names no parts.
fn decoded(bytes: &[u8]) -> Result<World, SnapshotError> {
    snapshot::decode(bytes, &[], &key())
}

async fn open(store: Arc<dyn Store>) -> Arc<Engine> {
    let clock = ManualClock::new(support::t("2026-06-01T00:00:00Z"));
    support::engine_on(store, Arc::new(clock)).await
}

/// The state a full replay of `store`'s log gives, without any snapshot.
/// Asserts that an engine started on `store` (from a snapshot or not) holds the world a replay
/// of the whole log gives: that world.
async fn assert_a_start_replays_the_log(store: &Arc<dyn Store>) -> Arc<World> {
    let world = open(Arc::clone(store)).await.snapshot().await.unwrap();
    assert_eq!(world.first_difference(&full_replay(&**store).await), None);
    world
}

async fn full_replay(store: &dyn Store) -> World {
    let mut world = World::default();
    loop {
        let records = store.read_since(world.seq, 10_000).await.unwrap();
        if records.is_empty() {
            return world;
        }
        for r in records {
            // As the engine folds a record: with the accesses it is (the access log).
            let envelope = Envelope::decode(&r.body).unwrap();
            world
                .apply_recorded(
                    r.seq,
                    envelope.by.as_ref(),
                    envelope.at,
                    envelope.change,
                    EngineConfig::default().access_log_retention,
                )
                .unwrap();
        }
    }
}

/// A log with branches and a few hundred events; a snapshot is taken after `at_snapshot` ops.
fn sample_log() -> Vec<Op> {
    let steps: Vec<Step> = (0..400usize)
        .map(|i| match i % 23 {
            0 => Step::Branch { pick: i / 23 },
            7 | 15 => Step::Manipulate {
                pick: i,
                event: i * 7,
                minutes: (i * 37 % 5000) as i64,
            },
            11 => Step::Revert { pick: i, event: i },
            _ => Step::Add {
                pick: i / 3,
                minutes: (i * 53 % 5000) as i64,
                cause: Some(i * 11),
                ahead: i % 31 == 0,
            },
        })
        .collect();
    log_of(&steps)
}

#[tokio::test]
async fn an_engine_starts_from_the_snapshot_and_replays_the_tail() {
    let ops = sample_log();
    let (head, tail) = ops.split_at(ops.len() * 2 / 3);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    append_ops(&*store, &key(), head).await.unwrap();
    let first = open(Arc::clone(&store)).await;
    assert_eq!(
        first.write_snapshot().await.unwrap(),
        Some(head.len() as u64)
    );
    append_ops(&*store, &key(), tail).await.unwrap();
    let listed = store.snapshots().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].seq, head.len() as u64);

    let world = assert_a_start_replays_the_log(&store).await;
    assert_eq!(world.seq, ops.len() as u64);
}

/// With the snapshot's timelines swapped for others, a start that trusted it would show them.
/// Ignoring a bad snapshot is only visible if a trusted one would change what is seen.
async fn store_with_bad_snapshot(bad: impl FnOnce(Vec<u8>) -> Vec<u8>) -> Arc<dyn Store> {
    let ops = sample_log();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    append_ops(&*store, &key(), &ops).await.unwrap();
    let world = fold(&ops, World::default());
    let bytes = bad(encoded(&world));
    store
        .put_snapshot(snapshot_of(snapshot::FORMAT, world.seq, &bytes))
        .await
        .unwrap();
    store
}

#[tokio::test]
async fn a_damaged_snapshot_is_ignored_and_the_log_replayed() {
    let ops = sample_log();
    let good = encoded(&fold(&ops, World::default()));
    for at in [3, 40, good.len() / 2, good.len() - 1] {
        let mut flipped = good.clone();
        flipped[at] ^= 0x20;
        assert!(
            decoded(&flipped).is_err(),
            "a flipped byte at {at} went unnoticed"
        );
    }
    assert_eq!(
        decoded(&good[..good.len() - 10]).err(),
        Some(SnapshotError::Damaged(format!(
            "{} bytes of body where {} were written",
            good.len() - 96 - 10,
            good.len() - 96
        )))
    );

    let store = store_with_bad_snapshot(|mut b| {
        let last = b.len() - 1;
        b[last] ^= 1;
        b
    })
    .await;
    assert_a_start_replays_the_log(&store).await;
}

#[tokio::test]
async fn a_snapshot_of_another_format_is_ignored_and_the_log_replayed() {
    let ops = sample_log();
    let mut other = encoded(&fold(&ops, World::default()));
    other[8..12].copy_from_slice(&(snapshot::FORMAT + 1).to_le_bytes());
    assert_eq!(
        decoded(&other).err(),
        Some(SnapshotError::OtherFormat {
            found: snapshot::FORMAT + 1
        })
    );

    // Listed with the other format, as a newer version would store it: never read.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    append_ops(&*store, &key(), &ops).await.unwrap();
    let empty = World::default();
    store
        .put_snapshot(snapshot_of(
            snapshot::FORMAT + 1,
            ops.len() as u64,
            &encoded(&empty),
        ))
        .await
        .unwrap();
    assert_a_start_replays_the_log(&store).await;

    // And one that says this format in its row but another inside is refused too.
    let store = store_with_bad_snapshot(|mut b| {
        b[8..12].copy_from_slice(&(snapshot::FORMAT + 1).to_le_bytes());
        b
    })
    .await;
    assert_a_start_replays_the_log(&store).await;
}

/// What trusting a wrong snapshot would look like: the test above must be able to fail.
#[tokio::test]
async fn a_valid_snapshot_is_what_a_start_shows() {
    let ops = sample_log();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    append_ops(&*store, &key(), &ops).await.unwrap();
    // A well-formed snapshot of a *different* world at the same position: trusted (it checks
    // out), so the start shows it. This is why only checked snapshots may be used.
    let mut other = fold(&ops[..ops.len() / 2], World::default());
    other.seq = ops.len() as u64;
    store
        .put_snapshot(snapshot_of(snapshot::FORMAT, other.seq, &encoded(&other)))
        .await
        .unwrap();
    let engine = open(Arc::clone(&store)).await;
    let world = engine.snapshot().await.unwrap();
    assert!(
        world
            .first_difference(&full_replay(&*store).await)
            .is_some()
    );
}

/// A branch written against its parent: the snapshot of a world with many branches of a big
/// timeline stays about the size of the timeline, not of every branch's copy of it.
#[test]
fn branches_are_stored_as_their_differences() {
    let n = 5_000;
    let mut ops = vec![Op::CreateTimeline {
        timeline: timeline("primary", None),
    }];
    ops.push(Op::AddEvents {
        timeline: TimelineId::primary(),
        events: (0..n)
            .map(|i| event(&format!("evt_p{i}"), i, vec![]))
            .collect(),
        at: None,
    });
    let one = encoded(&fold(&ops, World::default())).len();
    for b in 0..20 {
        ops.push(Op::CreateTimeline {
            timeline: timeline(&format!("tml_b{b}"), Some("primary")),
        });
        ops.push(Op::AddEvents {
            timeline: format!("tml_b{b}").parse().unwrap(),
            events: vec![event(&format!("evt_b{b}"), 7, vec![])],
            at: None,
        });
        // The parent moves on after the branch.
        ops.push(Op::AddEvents {
            timeline: TimelineId::primary(),
            events: vec![event(&format!("evt_q{b}"), 9, vec![])],
            at: None,
        });
    }
    let world = fold(&ops, World::default());
    let bytes = encoded(&world);
    assert!(
        bytes.len() < one * 3 / 2,
        "20 branches of a {n}-event timeline: {} bytes, the timeline alone {one}",
        bytes.len()
    );
    let read = decoded(&bytes).unwrap();
    assert_eq!(read.first_difference(&world), None);
}

/// A world made through the service (items, anchors, journeys, automation, keys) survives too.
#[tokio::test]
async fn the_demo_world_with_travellers_survives_a_snapshot() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(
        parse_instant("t", "2026-06-01T00:00:00Z").unwrap(),
    ));
    let engine = Engine::open(
        Arc::clone(&store),
        clock,
        EngineConfig::default(),
        Seed::Demo,
    )
    .await
    .unwrap();
    let ada = engine.session("ada".parse().unwrap());
    for i in 0..5 {
        ada.register_item(NewItem {
            description: format!("item {i}"),
        })
        .await
        .unwrap();
    }
    engine.write_snapshot().await.unwrap();
    ada.register_item(NewItem {
        description: "after the snapshot".into(),
    })
    .await
    .unwrap();
    let world = assert_a_start_replays_the_log(&store).await;
    let bytes = encoded(&world);
    assert_eq!(decoded(&bytes).unwrap().first_difference(&world), None);
}

/// Writes two snapshots and a third, reads the newest back, and checks only the newest two
/// are kept, on `store`.
async fn store_keeps_and_returns_snapshots(store: Arc<dyn Store>) {
    let ops = sample_log();
    append_ops(&*store, &key(), &ops).await.unwrap();
    let engine = open(Arc::clone(&store)).await;
    assert!(store.snapshots().await.unwrap().is_empty());
    for _ in 0..3 {
        engine.write_snapshot().await.unwrap();
    }
    let listed = store.snapshots().await.unwrap();
    assert_eq!(listed.len(), store::SNAPSHOTS_KEPT, "{listed:?}");
    assert!(listed[0].id > listed[1].id);
    assert_eq!(listed[0].seq, ops.len() as u64);
    assert_eq!(listed[0].format, snapshot::FORMAT);
    let bytes = store.read_snapshot(listed[0].id).await.unwrap();
    assert_eq!(bytes.len() as u64, listed[0].bytes);
    let world = decoded(&bytes).unwrap();
    assert_eq!(world.first_difference(&full_replay(&*store).await), None);
}

#[tokio::test]
async fn sqlite_stores_and_loads_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("c.db").display());
    store_keeps_and_returns_snapshots(store::open(&url).await.unwrap()).await;

    // The start reads the snapshot, not the log under it: with record 2 unreadable, a full
    // replay would fail.
    let store = store::open(&url).await.unwrap();
    let expected = full_replay(&*store).await;
    let sql = |q: &'static str| {
        let path = dir.path().join("c.db");
        async move {
            use sqlx::Connection;
            let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
            let mut conn = sqlx::SqliteConnection::connect_with(&options)
                .await
                .unwrap();
            sqlx::query(q).execute(&mut conn).await.unwrap();
            conn.close().await.unwrap();
        }
    };
    sql("UPDATE op_log SET body = 'garbled:' || body WHERE seq = 2").await;
    let world = open(store::open(&url).await.unwrap())
        .await
        .snapshot()
        .await
        .unwrap();
    assert_eq!(world.first_difference(&expected), None);
    sql("UPDATE op_log SET body = substr(body, 9) WHERE seq = 2").await;

    // A damaged chunk in the file: ignored, and the start replays the log.
    {
        use sqlx::Connection;
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(dir.path().join("c.db"));
        let mut conn = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        let flipped = sqlx::query(
            "UPDATE snapshot_chunk SET data = CAST(zeroblob(length(data)) AS BLOB) \
             WHERE n = 0",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        assert!(flipped.rows_affected() >= 1);
        conn.close().await.unwrap();
    }
    let store = store::open(&url).await.unwrap();
    assert_a_start_replays_the_log(&store).await;
}

#[tokio::test]
async fn postgres_stores_and_loads_snapshots() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    store_keeps_and_returns_snapshots(store::open(&db.url).await.unwrap()).await;

    // A second replica joins from the snapshot another one wrote: with record 2 unreadable, a
    // full replay would fail.
    let store = store::open(&db.url).await.unwrap();
    let expected = full_replay(&*store).await;
    let sql = |q: &'static str| {
        let url = db.url.clone();
        async move {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
            sqlx::query(q).execute(&mut conn).await.unwrap();
            conn.close().await.unwrap();
        }
    };
    sql("UPDATE op_log SET body = 'garbled:' || body WHERE seq = 2").await;
    let replica = open(store::open(&db.url).await.unwrap()).await;
    let world = replica.snapshot().await.unwrap();
    assert_eq!(world.first_difference(&expected), None);
    sql("UPDATE op_log SET body = substr(body, 9) WHERE seq = 2").await;
    assert_eq!(full_replay(&*store).await.first_difference(&expected), None);
}

/// Where a test of parts runs: the database behind a store, asked directly.
enum Db {
    Memory,
    Sqlite(std::path::PathBuf),
    Postgres(String),
}

impl Db {
    async fn exec(&self, query: &'static str) {
        use sqlx::Connection;
        match self {
            Db::Memory => unreachable!("a memory store has no database to ask"),
            Db::Sqlite(path) => sqlite_exec(path, &[query]).await,
            Db::Postgres(url) => {
                let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
                sqlx::query(query).execute(&mut conn).await.unwrap();
                conn.close().await.unwrap();
            }
        }
    }

    async fn count(&self, query: &'static str) -> i64 {
        use sqlx::Connection;
        match self {
            Db::Memory => unreachable!("a memory store has no database to ask"),
            Db::Sqlite(path) => sqlite_count(path, query).await,
            Db::Postgres(url) => {
                let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
                let n = sqlx::query_scalar(query)
                    .fetch_one(&mut conn)
                    .await
                    .unwrap();
                conn.close().await.unwrap();
                n
            }
        }
    }
}

/// `count` journeys of ada's, numbered from `from`.
fn journeys_from(from: usize, count: usize) -> Vec<Op> {
    (from..from + count)
        .map(|n| journey_op(&format!("jrn_{n:08}")))
        .collect()
}

/// A server taking writes at full rate makes journeys without end, and each snapshot used to
/// write all of them again. Now the full chunks of journeys are parts stored once: a second
/// snapshot names the parts of the first and stores only the chunk filled since; a start reads
/// them back (and only them: the log under the snapshot is unreadable); the parts no kept
/// snapshot names are deleted; and an altered part makes the snapshot unusable, never a
/// different world.
async fn snapshots_share_their_parts(store: Arc<dyn Store>, url: &str, db: Db) {
    let mut ops = vec![Op::CreateTimeline {
        timeline: timeline("primary", None),
    }];
    ops.extend(journeys_from(0, 9_000));
    append_ops(&*store, &key(), &ops).await.unwrap();
    let engine = open(Arc::clone(&store)).await;
    engine.write_snapshot().await.unwrap();
    let first = store.snapshots().await.unwrap()[0].clone();
    let first_parts = store.read_snapshot_parts(first.id).await.unwrap();
    assert_eq!(first_parts.len(), 2, "9,000 journeys: two full chunks");

    let more = journeys_from(9_000, 4_000);
    append_ops(&*store, &key(), &more).await.unwrap();
    ops.extend(more);
    let engine = open(Arc::clone(&store)).await;
    engine.write_snapshot().await.unwrap();
    let second = store.snapshots().await.unwrap()[0].clone();
    let second_parts = store.read_snapshot_parts(second.id).await.unwrap();
    assert_eq!(second_parts.len(), 3, "13,000 journeys: three full chunks");
    assert_eq!(
        second_parts[..2],
        first_parts[..],
        "the second snapshot names the first one's parts"
    );
    // The bytes hold the chunk not yet full (808 and 2,712 journeys), not the 13,000.
    assert!(
        second.bytes < 2 * first.bytes + 4096 && second.bytes < 1_000_000,
        "first {} bytes, second {}",
        first.bytes,
        second.bytes
    );
    if !matches!(db, Db::Memory) {
        assert_eq!(
            db.count("SELECT COUNT(*) FROM snapshot_part").await,
            3,
            "a part two snapshots name is stored once"
        );
    }

    // A third snapshot: the first is no longer kept, but its parts are still named.
    let more = journeys_from(13_000, 10);
    append_ops(&*store, &key(), &more).await.unwrap();
    ops.extend(more);
    open(Arc::clone(&store))
        .await
        .write_snapshot()
        .await
        .unwrap();
    let listed = store.snapshots().await.unwrap();
    assert_eq!(listed.len(), store::SNAPSHOTS_KEPT);
    assert!(listed.iter().all(|s| s.id != first.id));

    // A journey in the middle of the order moves every chunk after it: once two more snapshots
    // are written, no kept snapshot names the parts before, and they are deleted.
    let middle = vec![journey_op("jrn_00000100a")];
    append_ops(&*store, &key(), &middle).await.unwrap();
    ops.extend(middle);
    for _ in 0..2 {
        open(Arc::clone(&store))
            .await
            .write_snapshot()
            .await
            .unwrap();
    }

    let expected = fold(&ops, World::default());
    if matches!(db, Db::Memory) {
        let world = open(Arc::clone(&store)).await.snapshot().await.unwrap();
        assert_eq!(world.first_difference(&expected), None);
        return;
    }
    assert_eq!(
        db.count("SELECT COUNT(*) FROM snapshot_part").await,
        3,
        "the parts no kept snapshot names are deleted"
    );
    // With record 2 unreadable only the snapshot, parts and all, can give the world.
    db.exec("UPDATE op_log SET body = 'garbled:' || body WHERE seq = 2")
        .await;
    let world = open(store::open(url).await.unwrap())
        .await
        .snapshot()
        .await
        .unwrap();
    assert_eq!(world.first_difference(&expected), None);
    assert_eq!(world.journeys.len(), 13_011);

    // An altered part: neither kept snapshot is used (both name it), so the start replays the
    // log, which cannot get past record 2.
    db.exec(match db {
        Db::Postgres(_) => {
            "UPDATE snapshot_part SET data = decode(repeat('00', length(data)), 'hex')"
        }
        _ => "UPDATE snapshot_part SET data = CAST(zeroblob(length(data)) AS BLOB)",
    })
    .await;
    let refused = Engine::open(
        store::open(url).await.unwrap(),
        Arc::new(ManualClock::new(support::t("2026-06-01T00:00:00Z"))),
        EngineConfig::default(),
        Seed::None,
    )
    .await;
    assert!(
        refused.is_err(),
        "a start used a snapshot whose part was altered"
    );
    db.exec("UPDATE op_log SET body = substr(body, 9) WHERE seq = 2")
        .await;
    assert_eq!(
        assert_a_start_replays_the_log(&store)
            .await
            .first_difference(&expected),
        None
    );
}

#[tokio::test]
async fn memory_snapshots_share_their_parts() {
    snapshots_share_their_parts(Arc::new(MemoryStore::new()), "memory:", Db::Memory).await;
}

#[tokio::test]
async fn sqlite_snapshots_share_their_parts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parts.db");
    let url = format!("sqlite://{}", path.display());
    let store = store::open(&url).await.unwrap();
    snapshots_share_their_parts(store, &url, Db::Sqlite(path)).await;
}

#[tokio::test]
async fn postgres_snapshots_share_their_parts() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    let store = store::open(&db.url).await.unwrap();
    snapshots_share_their_parts(store, &db.url, Db::Postgres(db.url.clone())).await;
}

/// `serve`'s background task writes a snapshot once enough records were appended.
#[tokio::test]
async fn the_background_task_writes_a_snapshot_when_due() {
    let ops = sample_log();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    append_ops(&*store, &key(), &ops).await.unwrap();
    let engine = open(Arc::clone(&store)).await;
    engine.spawn_snapshots(chronoscope::engine::SnapshotPolicy {
        every_records: 100,
        every: std::time::Duration::from_secs(3600),
    });
    // The task looks once a second; give it a few.
    let mut listed = Vec::new();
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        listed = store.snapshots().await.unwrap();
        if !listed.is_empty() {
            break;
        }
    }
    assert_eq!(listed.len(), 1, "no snapshot was written");
    assert_eq!(listed[0].seq, ops.len() as u64);
}

/// Waits up to 5 s for a snapshot of `engine`'s head in `store`.
async fn snapshot_of_the_head(store: &dyn Store, engine: &Engine, what: &str) {
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let newest = store.snapshots().await.unwrap().first().map(|s| s.seq);
        if newest == Some(engine.snapshot().await.unwrap().seq) {
            return;
        }
    }
    panic!("{what}: no snapshot of the head within 5 s");
}

/// Snapshots due by records follow one another as fast as they are written (no 30 s spacing),
/// so the tail a start replays stays bounded under any write rate.
#[tokio::test]
async fn snapshots_due_by_records_are_not_held_back_by_time() {
    let ops = sample_log();
    let (head, tail) = ops.split_at(ops.len() / 2);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    append_ops(&*store, &key(), head).await.unwrap();
    let engine = open(Arc::clone(&store)).await;
    engine.spawn_snapshots(chronoscope::engine::SnapshotPolicy {
        every_records: 50,
        every: std::time::Duration::from_secs(3600),
    });
    snapshot_of_the_head(&*store, &engine, "the first").await;
    append_ops(&*store, &key(), tail).await.unwrap();
    // Another process's appends, folded in by a read.
    assert_eq!(engine.snapshot().await.unwrap().seq, ops.len() as u64);
    snapshot_of_the_head(&*store, &engine, "the second, seconds after the first").await;
}

/// A graceful stop writes a snapshot when the tail after the newest one is long, and none
/// when it is short.
#[tokio::test]
async fn a_graceful_stop_writes_a_snapshot_when_the_tail_is_long() {
    let ops = sample_log();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    append_ops(&*store, &key(), &ops[..ops.len() - 10])
        .await
        .unwrap();
    let engine = open(Arc::clone(&store)).await;
    let policy = chronoscope::engine::SnapshotPolicy {
        every_records: 100,
        every: std::time::Duration::from_secs(3600),
    };
    assert!(store.snapshots().await.unwrap().is_empty());
    let written = engine.snapshot_before_exit(policy).await.unwrap();
    assert_eq!(written, Some(ops.len() as u64 - 10));
    assert_eq!(
        store.snapshots().await.unwrap()[0].seq,
        ops.len() as u64 - 10
    );
    // Ten records more: replaying them is quick, no snapshot.
    append_ops(&*store, &key(), &ops[ops.len() - 10..])
        .await
        .unwrap();
    engine.snapshot().await.unwrap();
    assert_eq!(engine.snapshot_before_exit(policy).await.unwrap(), None);
    // With snapshots turned off, none either.
    let off = chronoscope::engine::SnapshotPolicy {
        every_records: 0,
        ..policy
    };
    assert_eq!(engine.snapshot_before_exit(off).await.unwrap(), None);
    // A restart from it equals a replay of the whole log.
    assert_a_start_replays_the_log(&store).await;
}

/// The size of a SQLite store on disk: the file and its WAL.
fn sqlite_size(path: &std::path::Path) -> u64 {
    let wal = path.with_extension("db-wal");
    [path, wal.as_path()]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// Runs `queries` on a connection of its own to the SQLite file at `path`, then empties the WAL
/// into the file, as a crash followed by a restart would leave it.
async fn sqlite_exec(path: &std::path::Path, queries: &[&'static str]) {
    use sqlx::Connection;
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    for q in queries {
        sqlx::query(*q).execute(&mut conn).await.unwrap();
    }
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
}

async fn sqlite_count(path: &std::path::Path, query: &'static str) -> i64 {
    use sqlx::Connection;
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    let n = sqlx::query_scalar(query)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    n
}

/// A snapshot cut short by a crash: its row, never completed, and 32 MB of its chunks.
const PARTLY_WRITTEN: &[&str] = &[
    "INSERT INTO snapshot (id, format, seq, bytes) VALUES (1000, 2, 1, 67108864)",
    "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 15) \
     INSERT INTO snapshot_chunk (snapshot_id, n, data) SELECT 1000, i, zeroblob(2097152) FROM n",
];

/// A crash in the middle of writing a snapshot leaves its chunks in the file; the next open
/// deletes them and the file shrinks back, whether it was made with incremental auto-vacuum
/// (this version) or without (older ones: converted once).
#[tokio::test]
async fn sqlite_a_partly_written_snapshot_is_gone_after_open_and_the_file_shrinks() {
    for older_file in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (path, url) = sqlite_file(&dir);
        // The store and the engine are closed at once: the crash is staged on a closed file.
        snapshotted_sample_log(&url).await;
        if older_file {
            sqlite_exec(&path, &["PRAGMA auto_vacuum = NONE", "VACUUM"]).await;
        }
        let whole = sqlite_size(&path);
        sqlite_exec(&path, PARTLY_WRITTEN).await;
        let crashed = sqlite_size(&path);
        assert!(crashed > whole + 30_000_000, "{whole} -> {crashed} bytes");

        let store = store::open(&url).await.unwrap();
        let reopened = sqlite_size(&path);
        assert!(
            reopened < whole + 1_000_000,
            "older file: {older_file}; {whole} bytes, {crashed} after the crash, {reopened} after open"
        );
        assert_partly_written_snapshot_gone(&path).await;
        // The complete snapshot is kept and still starts the engine.
        assert_eq!(store.snapshots().await.unwrap().len(), 1);
        assert_a_start_replays_the_log(&store).await;
    }
}

/// The SQLite file `c.db` in `dir`: its path and its store URL.
fn sqlite_file(dir: &tempfile::TempDir) -> (std::path::PathBuf, String) {
    let path = dir.path().join("c.db");
    let url = format!("sqlite://{}", path.display());
    (path, url)
}

/// The store at `url` holding the sample log, and an engine started on it that wrote a
/// snapshot of it.
async fn snapshotted_sample_log(url: &str) -> (Arc<dyn Store>, Arc<Engine>) {
    let store = store::open(url).await.unwrap();
    append_ops(&*store, &key(), &sample_log()).await.unwrap();
    let engine = open(Arc::clone(&store)).await;
    engine.write_snapshot().await.unwrap();
    (store, engine)
}

/// Neither the row nor the chunks of the partly written snapshot ([`PARTLY_WRITTEN`]) are left.
async fn assert_partly_written_snapshot_gone(path: &std::path::Path) {
    assert_eq!(
        sqlite_count(path, "SELECT COUNT(*) FROM snapshot WHERE complete = 0").await,
        0
    );
    assert_eq!(
        sqlite_count(
            path,
            "SELECT COUNT(*) FROM snapshot_chunk WHERE snapshot_id = 1000"
        )
        .await,
        0
    );
}

/// A snapshot left incomplete while a process runs is deleted once a newer one is complete,
/// and the file gives its pages back.
#[tokio::test]
async fn sqlite_a_newer_complete_snapshot_deletes_an_incomplete_one() {
    let dir = tempfile::tempdir().unwrap();
    let (path, url) = sqlite_file(&dir);
    let (_store, engine) = snapshotted_sample_log(&url).await;
    let whole = sqlite_size(&path);
    sqlite_exec(&path, PARTLY_WRITTEN).await;
    assert!(sqlite_size(&path) > whole + 30_000_000);

    engine.write_snapshot().await.unwrap();
    assert_partly_written_snapshot_gone(&path).await;
    // The file itself: its WAL keeps the size it grew to until the next open truncates it
    // (bounded by the writer's checkpoints).
    let file = |p: &std::path::Path| std::fs::metadata(p).unwrap().len();
    let after = file(&path);
    assert!(
        after < whole + 4_000_000,
        "{whole} bytes before, {after} after"
    );
}

/// An incomplete snapshot row (an older version's, or a hand-made one) is deleted when a
/// replica connects, chunks and all.
#[tokio::test]
async fn postgres_an_incomplete_snapshot_is_deleted_at_connect() {
    let Some(db) = support::fresh_postgres().await else {
        return;
    };
    let store = store::open(&db.url).await.unwrap();
    append_ops(&*store, &key(), &sample_log()).await.unwrap();
    open(Arc::clone(&store))
        .await
        .write_snapshot()
        .await
        .unwrap();
    let sql = |q: &'static str| {
        let url = db.url.clone();
        async move {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
            let n: i64 = sqlx::query_scalar(q).fetch_one(&mut conn).await.unwrap();
            conn.close().await.unwrap();
            n
        }
    };
    sql(
        "WITH s AS (INSERT INTO snapshot (format, seq, bytes) VALUES (2, 1, 4) RETURNING id) \
         INSERT INTO snapshot_chunk (snapshot_id, n, data) SELECT id, 0, '\\x00010203' FROM s \
         RETURNING snapshot_id",
    )
    .await;
    assert_eq!(sql("SELECT COUNT(*) FROM snapshot").await, 2);

    let _replica = store::open(&db.url).await.unwrap();
    assert_eq!(
        sql("SELECT COUNT(*) FROM snapshot WHERE NOT complete").await,
        0
    );
    assert_eq!(
        sql(
            "SELECT COUNT(*) FROM snapshot_chunk WHERE snapshot_id NOT IN \
                    (SELECT id FROM snapshot WHERE complete)"
        )
        .await,
        0
    );
    assert_eq!(store.snapshots().await.unwrap().len(), 1);
}

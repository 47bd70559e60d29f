//! Properties of merges (issue 26 part 3), on random branch histories: a branch and its base
//! both add, manipulate and revert at random, then the branch is merged into its base.
//! - merging twice answers `up_to_date` and writes nothing;
//! - `source_overwrite` leaves every lineage the source changed equal to the source;
//! - `destination_preserve` never changes a lineage the destination changed;
//! - a merge that would add a paradox is refused whole: nothing is written;
//! - the source's data entries stored since the branch point are copied, the destination's
//!   own are kept, and none goes back to the source.

use std::collections::BTreeMap;

use chronoscope::error::ServiceError;
use chronoscope::model::{DataId, EventId, Instant, TimelineId};
use chronoscope::service::*;
use proptest::prelude::*;

mod support;

use support::{Fresh, branch_of, named, new_event, t};

type Outcomes = BTreeMap<EventId, (String, Instant)>;

/// One change to a timeline, resolved against its current events when made.
#[derive(Clone, Debug)]
enum Change {
    Add { minutes: i64, cause: Option<usize> },
    Manipulate { pick: usize, minutes: Option<i64> },
    Revert { pick: usize },
    Store { minutes: i64 },
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0i64..600, proptest::option::of(any::<usize>()))
            .prop_map(|(minutes, cause)| Change::Add { minutes, cause }),
        (any::<usize>(), proptest::option::of(0i64..600))
            .prop_map(|(pick, minutes)| Change::Manipulate { pick, minutes }),
        any::<usize>().prop_map(|pick| Change::Revert { pick }),
        (0i64..600).prop_map(|minutes| Change::Store { minutes }),
    ]
}

fn at(minutes: i64) -> String {
    (t("1950-01-01T00:00:00Z") + chrono::Duration::minutes(minutes))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The first 1000 events of `tl` as `who` finds them.
async fn events(who: &dyn TimelineService, tl: &TimelineId) -> Page<EventRecord> {
    who.search_events(SearchQuery {
        timeline_id: Some(tl.clone()),
        page: PageRequest::first(1000),
        ..Default::default()
    })
    .await
    .expect("search")
}

async fn outcomes(who: &dyn TimelineService, tl: &TimelineId) -> Outcomes {
    let page = events(who, tl).await;
    assert!(page.next_cursor.is_none());
    page.items
        .into_iter()
        .map(|e| (e.lineage, (e.description, e.time)))
        .collect()
}

/// Makes `change` in `tl`; a data entry stored is added to `stored`.
async fn make(
    who: &dyn TimelineService,
    tl: &TimelineId,
    change: &Change,
    n: &mut u32,
    stored: &mut Vec<(Instant, DataId)>,
) {
    let page = events(who, tl).await;
    let current = page.items;
    *n += 1;
    let pick = |i: usize| current.get(i % current.len().max(1));
    match change {
        Change::Add { minutes, cause } => {
            let causes: Vec<&EventId> = cause
                .and_then(pick)
                .map(|e| vec![&e.event_id])
                .unwrap_or_default();
            let _ = who
                .add_event(
                    tl,
                    new_event(&format!("added {n}"), &at(*minutes), "Lab", &causes),
                )
                .await;
        }
        Change::Manipulate { pick: i, minutes } => {
            if let Some(e) = pick(*i) {
                let _ = who
                    .manipulate_event(ManipulateRequest {
                        event_id: e.event_id.clone(),
                        timeline_id: Some(tl.clone()),
                        new_outcome: NewOutcome {
                            description: Some(format!("changed {n}")),
                            changes: vec![OutcomeChange {
                                action: None,
                                time: minutes.map(|m| t(&at(m))),
                            }],
                        },
                        safety_check: false,
                    })
                    .await;
            }
        }
        Change::Store { minutes } => {
            let entry = who
                .store_data(StoreDataRequest {
                    timeline_id: tl.clone(),
                    timestamp: t(&at(*minutes)),
                    data: serde_json::json!({ "n": *n }),
                })
                .await
                .expect("store");
            stored.push((entry.timestamp, entry.data_id));
        }
        Change::Revert { pick: i } => {
            if let Some(e) = pick(*i) {
                let _ = who
                    .revert_event(RevertRequest {
                        event_id: e.event_id.clone(),
                        timeline_id: Some(tl.clone()),
                        safety_check: false,
                    })
                    .await;
            }
        }
    }
}

async fn scenario(
    initial: Vec<i64>,
    in_source: Vec<Change>,
    in_destination: Vec<Change>,
    overwrite: bool,
) {
    let fresh = Fresh::new().await;
    let ada = fresh.engine.session("ada".parse().expect("name"));
    let d = ada.create_timeline(named("D")).await.expect("create D").id;
    for (i, m) in initial.iter().enumerate() {
        ada.add_event(&d, new_event(&format!("first {i}"), &at(*m), "Lab", &[]))
            .await
            .expect("add");
    }
    let s = ada
        .create_timeline(branch_of("S", &d))
        .await
        .expect("branch")
        .id;
    let base = outcomes(&ada, &d).await;
    let mut n = 0;
    let (mut s_entries, mut d_entries) = (Vec::new(), Vec::new());
    for c in &in_source {
        make(&ada, &s, c, &mut n, &mut s_entries).await;
    }
    for c in &in_destination {
        make(&ada, &d, c, &mut n, &mut d_entries).await;
    }
    let holds = |tl: TimelineId, (at, id): (Instant, DataId)| {
        let ada = ada.clone();
        async move {
            ada.retrieve_data(RetrieveDataQuery {
                timeline_id: tl,
                timestamp: at,
                data_id: Some(id),
            })
            .await
            .is_ok()
        }
    };
    let before = outcomes(&ada, &d).await;
    let src = outcomes(&ada, &s).await;
    let strategy = if overwrite {
        MergeStrategy::SourceOverwrite
    } else {
        MergeStrategy::DestinationPreserve
    };
    let req = MergeRequest {
        source_timeline_id: s.clone(),
        destination_timeline_id: d.clone(),
        conflict_resolution: strategy,
        safety_check: true,
    };
    let records = |page: Page<Merge>| page.items.len();
    let merges_before = records(ada.list_merges(PageRequest::default()).await.expect("list"));
    match ada.merge_timelines(req.clone()).await {
        Err(ServiceError::ParadoxDetected { .. }) => {
            assert_eq!(outcomes(&ada, &d).await, before, "a refused merge wrote");
            for e in &s_entries {
                assert!(
                    !holds(d.clone(), e.clone()).await,
                    "a refused merge copied {e:?}"
                );
            }
            assert_eq!(
                records(ada.list_merges(PageRequest::default()).await.expect("list")),
                merges_before
            );
            return;
        }
        Err(e) => panic!("unexpected refusal: {e:?}"),
        Ok(r) if r.status == "up_to_date" => {
            assert_eq!(outcomes(&ada, &d).await, before, "up_to_date wrote");
        }
        Ok(r) => assert_eq!(r.status, "merged"),
    }
    let after = outcomes(&ada, &d).await;
    // Entries are copied whatever the strategy; the destination's own stay, none go back.
    for e in &s_entries {
        assert!(
            holds(d.clone(), e.clone()).await,
            "the source's {e:?} copied"
        );
    }
    for e in &d_entries {
        assert!(
            holds(d.clone(), e.clone()).await,
            "the destination's {e:?} kept"
        );
        assert!(
            !holds(s.clone(), e.clone()).await,
            "{e:?} went to the source"
        );
    }
    for (l, o) in &src {
        let source_changed = base.get(l) != Some(o);
        let dest_changed = base.get(l) != before.get(l);
        if source_changed && (overwrite || !dest_changed) {
            assert_eq!(after.get(l), Some(o), "lineage {l}: the source's outcome");
        }
    }
    for (l, o) in &before {
        if base.get(l) != Some(o) && !overwrite {
            assert_eq!(
                after.get(l),
                Some(o),
                "lineage {l}: the destination's change kept"
            );
        }
        assert!(after.contains_key(l), "lineage {l} disappeared");
    }
    let merges = records(ada.list_merges(PageRequest::default()).await.expect("list"));
    let again = ada.merge_timelines(req).await.expect("merging again");
    assert_eq!(again.status, "up_to_date", "{again:?}");
    assert_eq!(outcomes(&ada, &d).await, after);
    assert_eq!(
        records(ada.list_merges(PageRequest::default()).await.expect("list")),
        merges
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn merges_keep_their_promises(
        initial in proptest::collection::vec(0i64..600, 1..8),
        in_source in proptest::collection::vec(change(), 0..10),
        in_destination in proptest::collection::vec(change(), 0..10),
        overwrite in any::<bool>(),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(scenario(initial, in_source, in_destination, overwrite));
    }
}

/// The data entries a merge copied are in a snapshot as the fold has them (the start-up state
/// equals the replay), also once the timeline they were stored in is deleted: the copy still
/// answers `retrieve-data` in the destination, before and after a start from the snapshot.
#[tokio::test]
async fn copied_data_entries_survive_a_snapshot_and_their_source() {
    use chronoscope::engine::{EngineConfig, snapshot};
    let fresh = Fresh::new().await;
    let ada = fresh.session("ada");
    let a = ada.create_timeline(named("A")).await.expect("create A").id;
    let b = ada
        .create_timeline(branch_of("B", &a))
        .await
        .expect("branch B")
        .id;
    let at = t("1950-01-01T00:00:00Z");
    let entry = ada
        .store_data(StoreDataRequest {
            timeline_id: b.clone(),
            timestamp: at,
            data: serde_json::json!({"from": "B"}),
        })
        .await
        .expect("store in B");
    let merged = ada
        .merge_timelines(MergeRequest {
            source_timeline_id: b.clone(),
            destination_timeline_id: a.clone(),
            conflict_resolution: MergeStrategy::SourceOverwrite,
            safety_check: true,
        })
        .await
        .expect("merge B into A");
    assert_eq!(merged.data_entries, std::slice::from_ref(&entry.data_id));
    let key = EngineConfig::default().log_key;
    let round_trip = |world: &chronoscope::engine::World| {
        let encoded = snapshot::encode(world, &key);
        snapshot::decode(&encoded.bytes, &encoded.parts(), &key).expect("the snapshot reads back")
    };
    let folded = fresh.engine.snapshot().await.expect("the state");
    assert_eq!(round_trip(&folded).first_difference(&folded), None);

    ada.delete_timeline(&b).await.expect("delete B");
    let folded = fresh.engine.snapshot().await.expect("the state");
    let started = round_trip(&folded);
    assert_eq!(started.first_difference(&folded), None);
    assert!(
        started.data_index.contains_key(&entry.data_id),
        "the copy is still found by its id"
    );
    let got = ada
        .retrieve_data(RetrieveDataQuery {
            timeline_id: a.clone(),
            timestamp: at,
            data_id: Some(entry.data_id.clone()),
        })
        .await
        .expect("the copy in A");
    assert_eq!(
        serde_json::Value::Object(got.data),
        serde_json::json!({"from": "B"})
    );
}

//! Properties of merges (issue 26 part 3), on random branch histories: a branch and its base
//! both add, manipulate and revert at random, then the branch is merged into its base.
//! - merging twice answers `up_to_date` and writes nothing;
//! - `source_overwrite` leaves every lineage the source changed equal to the source;
//! - `destination_preserve` never changes a lineage the destination changed;
//! - a merge that would add a paradox is refused whole: nothing is written.

use std::collections::BTreeMap;

use chronoscope::error::ServiceError;
use chronoscope::model::{EventId, Instant, TimelineId};
use chronoscope::service::*;
use proptest::prelude::*;

mod support;

use support::{Fresh, named, new_event, t};

type Outcomes = BTreeMap<EventId, (String, Instant)>;

/// One change to a timeline, resolved against its current events when made.
#[derive(Clone, Debug)]
enum Change {
    Add { minutes: i64, cause: Option<usize> },
    Manipulate { pick: usize, minutes: Option<i64> },
    Revert { pick: usize },
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0i64..600, proptest::option::of(any::<usize>()))
            .prop_map(|(minutes, cause)| Change::Add { minutes, cause }),
        (any::<usize>(), proptest::option::of(0i64..600))
            .prop_map(|(pick, minutes)| Change::Manipulate { pick, minutes }),
        any::<usize>().prop_map(|pick| Change::Revert { pick }),
    ]
}

fn at(minutes: i64) -> String {
    (t("1950-01-01T00:00:00Z") + chrono::Duration::minutes(minutes))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

async fn outcomes(who: &dyn TimelineService, tl: &TimelineId) -> Outcomes {
    let page = who
        .search_events(SearchQuery {
            timeline_id: Some(tl.clone()),
            page: PageRequest {
                limit: Some(1000),
                cursor: None,
            },
            ..Default::default()
        })
        .await
        .expect("search");
    assert!(page.next_cursor.is_none());
    page.items
        .into_iter()
        .map(|e| (e.lineage, (e.description, e.time)))
        .collect()
}

async fn make(who: &dyn TimelineService, tl: &TimelineId, change: &Change, n: &mut u32) {
    let page = who
        .search_events(SearchQuery {
            timeline_id: Some(tl.clone()),
            page: PageRequest {
                limit: Some(1000),
                cursor: None,
            },
            ..Default::default()
        })
        .await
        .expect("search");
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
        .create_timeline(NewTimeline {
            base_timeline_id: Some(d.clone()),
            ..named("S")
        })
        .await
        .expect("branch")
        .id;
    let base = outcomes(&ada, &d).await;
    let mut n = 0;
    for c in &in_source {
        make(&ada, &s, c, &mut n).await;
    }
    for c in &in_destination {
        make(&ada, &d, c, &mut n).await;
    }
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

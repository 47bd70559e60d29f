//! Every rule of DESIGN §3 the engine enforces, through the `TimelineService` trait, each
//! refusal included. A refused call must leave the stored log untouched.

use std::sync::Arc;

use chrono::Duration;
use chronoscope::engine::{Engine, ManualClock};
use chronoscope::error::ServiceError;
use chronoscope::model::{
    AnchorStatus, EventId, EventStatus, Instant, ItemId, TimelineId, TimelineStatus, Whereabouts,
};
use chronoscope::service::*;
use chronoscope::store::{MemoryStore, Store};

#[macro_use]
mod support;

use support::{
    Fresh, all_events, bound_for, described, engine_on, manipulation, monitor, named, new_event,
    retimed, revert, t, timelines, trip,
};

struct World {
    engine: Arc<Engine>,
    clock: Arc<ManualClock>,
    store: Arc<MemoryStore>,
}

impl World {
    async fn new() -> Self {
        let fresh = Fresh::new().await;
        Self {
            engine: fresh.engine,
            clock: fresh.clock,
            store: fresh.store,
        }
    }

    /// A new world, and ada's view of it.
    async fn with_ada() -> (Self, impl TimelineService + use<>) {
        let w = Self::new().await;
        let ada = w.ada();
        (w, ada)
    }

    fn ada(&self) -> impl TimelineService + use<> {
        self.engine.session("ada".parse().expect("name"))
    }

    fn bob(&self) -> impl TimelineService + use<> {
        self.engine.session("bob".parse().expect("name"))
    }

    /// Adds the event `description` at `time` in `location`, caused by `causes`, to the primary
    /// timeline as ada.
    async fn event(
        &self,
        description: &str,
        time: &str,
        location: &str,
        causes: &[&EventId],
    ) -> EventRecord {
        let event = new_event(description, time, location, causes);
        let added = self.ada().add_event(&primary(), event).await;
        added.expect("event added")
    }

    async fn log_len(&self) -> u64 {
        self.store.last_seq().await.expect("memory store")
    }

    /// A new timeline named `name`, branched by ada from primary.
    async fn branch(&self, name: &str) -> TimelineInfo {
        let created = self.ada().create_timeline(named(name)).await;
        created.expect("timeline created")
    }

    /// Why adding `event` to `timeline` as ada is refused (nothing written).
    async fn refused_event(&self, timeline: &TimelineId, event: NewEvent) -> ServiceError {
        self.refused(self.ada().add_event(timeline, event)).await
    }

    /// Why ada's `trip` is refused (nothing written).
    async fn refused_trip(&self, trip: TravelRequest) -> ServiceError {
        self.refused(self.ada().travel(trip)).await
    }

    /// Asserts `call` fails with `expected` (compared by variant) and writes nothing.
    async fn refused<T: std::fmt::Debug>(
        &self,
        call: impl std::future::Future<Output = ServiceResult<T>>,
    ) -> ServiceError {
        let before = self.log_len().await;
        let err = call.await.expect_err("the call should be refused");
        assert_eq!(
            self.log_len().await,
            before,
            "a refused call wrote to the log"
        );
        err
    }
}

fn primary() -> TimelineId {
    TimelineId::primary()
}

/// The ids of the items `service` lists (up to 1000), sorted.
async fn sorted_item_ids(service: &impl TimelineService) -> Vec<ItemId> {
    let page = service.list_items(PageRequest::first(1000)).await;
    let mut ids = Vec::from_iter(page.unwrap().items.into_iter().map(|i| i.id));
    ids.sort();
    ids
}

/// A proposed event called `description` at the instant written `time`.
fn event_at(description: &str, time: &str) -> ProposedChange {
    ProposedChange {
        event: Some(description.into()),
        time: Some(t(time)),
        item_id: None,
    }
}

/// A proposed change that only brings the item `item` along.
fn carrying(item: &ItemId) -> ProposedChange {
    ProposedChange {
        item_id: Some(item.clone()),
        ..Default::default()
    }
}

/// The refusal of a second registration of the item `id`.
fn item_exists(id: &ItemId) -> ServiceError {
    ServiceError::AlreadyExists {
        location: format!("/v1/items/{id}"),
    }
}

/// An item described `description`, to register.
fn new_item(description: &str) -> NewItem {
    NewItem {
        description: description.into(),
    }
}

#[tokio::test]
async fn primary_always_exists_is_unbounded_and_cannot_be_deleted() {
    let w = World::new().await;
    let list = w
        .ada()
        .list_timelines(PageRequest::default())
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    let p = &list.items[0];
    assert_eq!(p.id, primary());
    assert_eq!(p.window.to_string(), "unbounded");
    w.clock.advance(Duration::days(10_000));
    assert_eq!(
        w.ada().get_timeline(&primary()).await.unwrap().status,
        TimelineStatus::Open
    );
    let err = w.refused(w.ada().delete_timeline(&primary())).await;
    assert_matches!(err, ServiceError::Conflict(_));
}

#[tokio::test]
async fn a_timeline_needs_a_name_and_a_known_base() {
    let w = World::new().await;
    for bad in [named(""), named("   "), NewTimeline::default()] {
        let err = w.refused(w.ada().create_timeline(bad)).await;
        assert_matches!(err, ServiceError::InvalidInput { ref field, .. } if field == "name");
    }
    let err = w
        .refused(w.ada().create_timeline(NewTimeline {
            base_timeline_id: Some("tml_nope".parse().unwrap()),
            ..named("x")
        }))
        .await;
    assert_matches!(err, ServiceError::UnknownReference { .. });
    // A description alone names the timeline (the guide operations send only that).
    let tl = w
        .ada()
        .create_timeline(NewTimeline {
            description: Some("Tesla mission".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(tl.name, "Tesla mission");
    assert_eq!(tl.parent, Some(primary()));
}

#[tokio::test]
async fn a_timeline_closes_after_its_window_and_then_refuses_travel_and_changes() {
    let w = World::new().await;
    let e = w.event("launch", "2025-01-01T00:00:00Z", "Cape", &[]).await;
    let tl = w.branch("short").await;
    assert_eq!(tl.window.to_string(), "1 hour");
    assert_eq!(tl.status, TimelineStatus::Open);
    w.clock.advance(Duration::minutes(60));
    assert_eq!(
        w.ada().get_timeline(&tl.id).await.unwrap().status,
        TimelineStatus::Closed
    );
    let travel = trip(&tl.id, &[]);
    let err = w.refused(w.ada().travel(travel)).await;
    assert_matches!(err, ServiceError::TimelineClosed { .. });
    let err = w
        .refused_event(&tl.id, new_event("x", "2025-01-01T00:00:00Z", "y", &[]))
        .await;
    assert_matches!(err, ServiceError::TimelineClosed { .. });
    let manipulate = manipulation(Some(&tl.id), &e.event_id, NewOutcome::default());
    let err = w.refused(w.ada().manipulate_event(manipulate)).await;
    assert_matches!(err, ServiceError::TimelineClosed { .. });
    // Still readable and searchable.
    let found = w
        .ada()
        .search_events(SearchQuery {
            timeline_id: Some(tl.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(found.items.len(), 1);
}

#[tokio::test]
async fn a_branch_sees_its_base_as_it_was_and_never_changes_it() {
    let w = World::new().await;
    let a = w.event("a", "2025-01-01T00:00:00Z", "Paris", &[]).await;
    let branch = w.branch("branch").await;
    assert_eq!(branch.event_count, 1);
    // Changes in the base after branching do not reach the branch…
    w.event("b", "2025-02-01T00:00:00Z", "Paris", &[]).await;
    assert_eq!(
        w.ada().get_timeline(&branch.id).await.unwrap().event_count,
        1
    );
    // …and changes in the branch do not reach the base.
    let m = w
        .ada()
        .manipulate_event(manipulation(
            Some(&branch.id),
            &a.event_id,
            described("a, changed"),
        ))
        .await
        .unwrap();
    let base_a = w
        .ada()
        .check_timeline(SignificantEventQuery {
            timeline_id: primary(),
            significant_event: a.event_id.to_string(),
        })
        .await
        .unwrap();
    assert_eq!(base_a.status, "holds");
    let branch_a = w
        .ada()
        .check_timeline(SignificantEventQuery {
            timeline_id: branch.id.clone(),
            significant_event: a.event_id.to_string(),
        })
        .await
        .unwrap();
    assert_eq!(branch_a.status, "altered");
    assert_eq!(branch_a.event.unwrap().event_id, m.new_event_id);
}

#[tokio::test]
async fn deleting_is_refused_with_branches_or_travellers_and_keeps_journeys() {
    let w = World::new().await;
    let err = w
        .refused(w.ada().delete_timeline(&"tml_nope".parse().unwrap()))
        .await;
    assert_matches!(err, ServiceError::NotFound { .. });

    let parent = w.branch("parent").await;
    let child = w
        .ada()
        .create_timeline(support::branch_of("child", &parent.id))
        .await
        .unwrap();
    let err = w.refused(w.ada().delete_timeline(&parent.id)).await;
    assert!(
        matches!(err, ServiceError::Conflict(ref m) if m.contains(child.id.as_str())),
        "{err:?}"
    );

    w.bob().travel(trip(&child.id, &[])).await.unwrap();
    let err = w.refused(w.ada().delete_timeline(&child.id)).await;
    assert_matches!(err, ServiceError::Conflict(ref m) if m.contains("traveller"));

    w.bob().travel(trip("primary", &[])).await.unwrap();
    w.ada().delete_timeline(&child.id).await.unwrap();
    w.ada().delete_timeline(&parent.id).await.unwrap();
    let err = w.ada().get_timeline(&child.id).await.unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }));
    let journeys = w.bob().list_journeys(PageRequest::default()).await.unwrap();
    assert_eq!(
        journeys.items.len(),
        2,
        "journeys into a deleted timeline stay in history"
    );
}

#[tokio::test]
async fn adding_events_validates_every_field() {
    let w = World::new().await;
    let unknown: EventId = "nope".parse().unwrap();
    let cases = [
        new_event("", "2025-01-01T00:00:00Z", "Paris", &[]),
        new_event("x", "2025-01-01T00:00:00Z", " ", &[]),
        new_event(&"x".repeat(1001), "2025-01-01T00:00:00Z", "Paris", &[]),
    ];
    for bad in cases {
        let err = w.refused(w.ada().add_event(&primary(), bad)).await;
        assert_matches!(err, ServiceError::InvalidInput { .. });
    }
    let err = w
        .refused_event(
            &primary(),
            new_event("x", "2025-01-01T00:00:00Z", "Paris", &[&unknown]),
        )
        .await;
    assert_matches!(err, ServiceError::UnknownReference { .. });
    let err = w
        .refused(w.ada().add_event(
            &"tml_nope".parse().unwrap(),
            new_event("x", "2025-01-01T00:00:00Z", "Paris", &[]),
        ))
        .await;
    assert_matches!(err, ServiceError::NotFound { .. });
}

#[tokio::test]
async fn manipulation_creates_a_new_head_rewires_effects_and_revert_restores() {
    let (w, ada) = World::with_ada().await;
    let cause = w.event("launch", "2025-01-01T00:00:00Z", "Cape", &[]).await;
    let effect = w
        .event(
            "deploy",
            "2025-01-02T00:00:00Z",
            "Orbit",
            &[&cause.event_id],
        )
        .await;
    let m = ada
        .manipulate_event(manipulation(
            Some(&primary()),
            &cause.event_id,
            NewOutcome {
                description: Some("launch scrubbed".into()),
                changes: vec![OutcomeChange {
                    action: Some("delay".into()),
                    time: Some(t("2025-01-01T06:00:00Z")),
                }],
            },
        ))
        .await
        .unwrap();
    assert_eq!(m.status, "applied");
    assert_ne!(m.new_event_id, cause.event_id);
    assert_eq!(m.original_event_id, cause.event_id);
    assert_eq!(m.time, t("2025-01-01T06:00:00Z"));

    let all = all_events(&ada).await;
    let ids: Vec<_> = all.iter().map(|e| e.event_id.clone()).collect();
    assert!(
        !ids.contains(&cause.event_id),
        "the superseded event left the timeline"
    );
    let new = all.iter().find(|e| e.event_id == m.new_event_id).unwrap();
    assert_eq!(new.status, EventStatus::Manipulated);
    assert_eq!(new.lineage, cause.event_id);
    let deploy = all.iter().find(|e| e.event_id == effect.event_id).unwrap();
    assert_eq!(deploy.causes, vec![m.new_event_id.clone()]);

    // The superseded event can no longer be manipulated directly.
    let err = w
        .refused(ada.manipulate_event(manipulation(
            Some(&primary()),
            &cause.event_id,
            NewOutcome::default(),
        )))
        .await;
    assert_matches!(err, ServiceError::EventLocked { ref reason, .. } if reason.contains("superseded"));

    // Reverting by the lineage's first id undoes the latest change.
    let r = ada.revert_event(revert(&cause.event_id)).await.unwrap();
    assert_eq!(r.status, "reverted");
    assert_eq!(r.original_event_id, cause.event_id);
    assert_eq!(r.reverted_event_id, m.new_event_id);
    let after = all_events(&ada).await;
    let restored = after.iter().find(|e| e.event_id == cause.event_id).unwrap();
    assert_eq!(restored.status, EventStatus::OnSchedule);
    assert_eq!(restored.description, "launch");
    let deploy = after
        .iter()
        .find(|e| e.event_id == effect.event_id)
        .unwrap();
    assert_eq!(deploy.causes, vec![cause.event_id.clone()]);

    let err = w.refused(ada.revert_event(revert(&m.new_event_id))).await;
    assert_matches!(err, ServiceError::EventLocked { .. });
    let err = w.refused(ada.revert_event(revert(&effect.event_id))).await;
    assert_matches!(err, ServiceError::EventLocked { ref reason, .. } if reason.contains("never manipulated"));
}

#[tokio::test]
async fn fixed_points_and_unknown_events_cannot_be_manipulated() {
    let w = World::new().await;
    let fixed = w
        .ada()
        .add_event(
            &primary(),
            NewEvent {
                fixed_point: true,
                safety_check: false,
                ..new_event(
                    "moon landing",
                    "1969-07-20T20:17:00Z",
                    "Sea of Tranquility",
                    &[],
                )
            },
        )
        .await
        .unwrap();
    let req = |id: &EventId| manipulation(Some(&primary()), id, NewOutcome::default());
    let err = w
        .refused(w.ada().manipulate_event(req(&fixed.event_id)))
        .await;
    assert_matches!(err, ServiceError::EventLocked { ref reason, .. } if reason.contains("fixed point"));
    let err = w
        .refused(w.ada().manipulate_event(req(&"nope".parse().unwrap())))
        .await;
    assert_matches!(err, ServiceError::UnknownReference { .. });
    let plain = w.event("tea", "1970-01-01T00:00:00Z", "London", &[]).await;
    let err = w
        .refused(w.ada().manipulate_event(ManipulateRequest {
            new_outcome: described("  "),
            ..req(&plain.event_id)
        }))
        .await;
    assert_matches!(err, ServiceError::InvalidInput { ref field, .. } if field == "new_outcome.description");
    // A manipulation that changes nothing (no outcome, or the same description and time) is
    // refused, saying what the event already is.
    for new_outcome in [
        NewOutcome::default(),
        NewOutcome {
            description: Some("tea".into()),
            changes: vec![],
        },
    ] {
        let err = w
            .refused(w.ada().manipulate_event(ManipulateRequest {
                new_outcome,
                ..req(&plain.event_id)
            }))
            .await;
        assert_matches!(err, ServiceError::InvalidInput { ref field, ref message } if field == "new_outcome" && message.contains("changes nothing") && message.contains("'tea'"));
    }
}

#[tokio::test]
async fn items_record_their_origin_and_are_unique_per_description_and_timeline() {
    let (w, ada) = World::with_ada().await;
    let tl = ada
        .create_timeline(bound_for("Tesla", "1889-03-10T23:50:00Z"))
        .await
        .unwrap();
    ada.travel(trip(&tl.id, &[])).await.unwrap();
    w.clock.advance(Duration::minutes(5));
    let item = ada
        .register_item(new_item("Tesla's blueprint"))
        .await
        .unwrap();
    assert_eq!(item.origin_timeline, tl.id);
    assert_eq!(
        item.origin_time,
        t("1889-03-10T23:55:00Z"),
        "the traveller's time flows"
    );

    let err = w
        .refused(w.ada().register_item(new_item("tesla's BLUEPRINT ")))
        .await;
    assert_eq!(err, item_exists(&item.id));
    // Another traveller's copy is another item, and the first is invisible to them.
    let bobs = w
        .bob()
        .register_item(new_item("Tesla's blueprint"))
        .await
        .unwrap();
    assert_ne!(bobs.id, item.id);
    let err = w.bob().get_item(&item.id).await.unwrap_err();
    assert!(matches!(err, ServiceError::NotFound { .. }));
    assert_eq!(
        w.bob()
            .list_items(PageRequest::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let err = w.refused(w.ada().register_item(new_item(" "))).await;
    assert!(matches!(err, ServiceError::InvalidInput { .. }));
}

#[tokio::test]
async fn travel_arrives_at_the_destination_time_and_carries_only_listed_items() {
    let (w, ada) = World::with_ada().await;
    let keep = ada.register_item(new_item("compass")).await.unwrap();
    let drop = ada.register_item(new_item("umbrella")).await.unwrap();
    let tl = ada
        .create_timeline(bound_for("Tesla", "1889-03-10T23:50:00Z"))
        .await
        .unwrap();
    let j = ada.travel(trip(&tl.id, &[&keep.id])).await.unwrap();
    assert_eq!(j.arrival_time, t("1889-03-10T23:50:00Z"));
    assert_eq!(j.items_transported, vec![keep.id.clone()]);
    assert_eq!(j.items_left.len(), 1);
    assert_eq!(j.items_left[0].item_id, drop.id);
    // Said the same to every face: no HTTP field name.
    let why = &j.items_left[0].reason;
    assert!(why.starts_with("not taken along"), "{why}");
    assert!(!why.contains("items_transported"), "{why}");
    let me = ada.whoami().await.unwrap();
    assert_eq!(me.timeline_id, tl.id);
    assert_eq!(me.time, t("1889-03-10T23:50:00Z"));
    let left = ada.get_item(&drop.id).await.unwrap();
    assert!(
        matches!(left.whereabouts, Whereabouts::Left { ref timeline, .. } if timeline.is_primary())
    );

    // The umbrella is in primary, not with the traveller: listing it leaves it where it is.
    let j = ada
        .travel(trip(&tl.id, &[&keep.id, &drop.id]))
        .await
        .unwrap();
    assert_eq!(j.items_transported, vec![keep.id.clone()]);
    assert!(
        j.items_left[0]
            .reason
            .contains("left in timeline 'primary'")
    );

    // Back in primary, where it was left, it can be picked up again.
    let j = ada.travel(trip("primary", &[&keep.id])).await.unwrap();
    assert_eq!(
        j.arrival_time,
        w.clock_now(),
        "primary has no destination time: now"
    );
    let j = ada
        .travel(trip(&tl.id, &[&keep.id, &drop.id]))
        .await
        .unwrap();
    assert_eq!(j.items_transported.len(), 2);
    assert_eq!(
        ada.list_journeys(PageRequest::default())
            .await
            .unwrap()
            .items
            .len(),
        4
    );
}

impl World {
    fn clock_now(&self) -> Instant {
        use chronoscope::engine::Clock;
        self.clock.now()
    }
}

#[tokio::test]
async fn travel_refuses_what_cannot_be_done() {
    let w = World::new().await;
    let bobs = w.bob().register_item(new_item("hat")).await.unwrap();
    let err = w.refused_trip(trip("tml_nowhere", &[])).await;
    assert_matches!(err, ServiceError::UnknownReference { .. });
    let err = w.refused_trip(trip("", &[])).await;
    assert_matches!(err, ServiceError::InvalidInput { .. });
    let err = w.refused_trip(trip("no spaces allowed", &[])).await;
    assert_matches!(err, ServiceError::UnknownReference { .. });
    let err = w.refused_trip(trip("primary", &[&bobs.id])).await;
    assert_matches!(err, ServiceError::UnknownReference { ref what, .. } if what == "item");
    let mine = w.ada().register_item(new_item("hat")).await.unwrap();
    let err = w.refused_trip(trip("primary", &[&mine.id, &mine.id])).await;
    assert_matches!(err, ServiceError::InvalidInput { .. });
}

#[tokio::test]
async fn anchors_are_return_tickets_spent_on_return() {
    let (w, ada) = World::with_ada().await;
    let home = ada
        .set_anchor(NewAnchor {
            timestamp: t("2024-09-16T05:04:00Z"),
            description: Some("Home Base".into()),
        })
        .await
        .unwrap();
    assert_eq!(home.status, AnchorStatus::Active);
    assert!(home.timeline.is_primary());
    let err = w
        .refused(ada.set_anchor(NewAnchor {
            timestamp: t("2024-09-16T07:04:00+02:00"),
            description: Some("Home Base".into()),
        }))
        .await;
    assert_eq!(
        err,
        ServiceError::AlreadyExists {
            location: format!("/v1/anchors/{}", home.id)
        }
    );
    // Bob cannot see or use Ada's anchor; his own at the same time is fine.
    let err = w.refused(w.bob().travel(trip(&home.id, &[]))).await;
    assert_matches!(err, ServiceError::UnknownReference { .. });
    w.bob()
        .set_anchor(NewAnchor {
            timestamp: home.timestamp,
            description: None,
        })
        .await
        .unwrap();

    let tl = ada.create_timeline(named("away")).await.unwrap();
    ada.travel(trip(&tl.id, &[])).await.unwrap();
    let back = ada.travel(trip(&home.id, &[])).await.unwrap();
    assert_eq!(back.arrival_time, home.timestamp);
    assert!(back.to_timeline.is_primary());
    assert_eq!(back.anchor.as_ref(), Some(&home.id));
    assert_eq!(
        ada.get_anchor(&home.id).await.unwrap().status,
        AnchorStatus::Spent
    );
    let err = w.refused(ada.travel(trip(&home.id, &[]))).await;
    assert_matches!(err, ServiceError::InvalidInput { ref message, .. } if message.contains("spent"));
    // A spent anchor no longer blocks a new one at the same time.
    ada.set_anchor(NewAnchor {
        timestamp: home.timestamp,
        description: None,
    })
    .await
    .unwrap();
}

/// DESIGN §3's worked mission, run twice by the same traveller against the same engine.
#[tokio::test]
async fn the_whole_mission_succeeds_again_and_again() {
    let (w, ada) = World::with_ada().await;
    for round in 0..2 {
        let anchor = ada
            .set_anchor(NewAnchor {
                timestamp: w.clock_now(),
                description: Some("home".into()),
            })
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        let tl = ada
            .create_timeline(bound_for(
                "Tesla blueprint retrieval",
                "1889-03-10T23:50:00Z",
            ))
            .await
            .unwrap();
        let there = ada.travel(trip(&tl.id, &[])).await.unwrap();
        assert_eq!(there.arrival_time, t("1889-03-10T23:50:00Z"));
        let blueprint = ada
            .register_item(new_item("Tesla's blueprint"))
            .await
            .unwrap();
        assert_eq!(blueprint.origin_timeline, tl.id);
        let check = ada
            .check_paradox(ParadoxCheckRequest {
                timeline_id: tl.id.clone(),
                proposed_changes: vec![
                    event_at("Retrieve the blueprint", "1889-03-10T23:50:00Z"),
                    carrying(&blueprint.id),
                ],
            })
            .await
            .unwrap();
        assert!(check.is_stable, "round {round}: {:?}", check.paradoxes);
        let back = ada
            .travel(trip(&anchor.id, &[&blueprint.id]))
            .await
            .unwrap();
        assert_eq!(back.items_transported, vec![blueprint.id.clone()]);
        assert_eq!(back.arrival_time, anchor.timestamp);
        assert_eq!(
            ada.get_anchor(&anchor.id).await.unwrap().status,
            AnchorStatus::Spent
        );
        w.clock.advance(Duration::minutes(1));
    }
}

#[tokio::test]
async fn paradox_checks_validate_each_proposed_change() {
    let w = World::new().await;
    let item = w.ada().register_item(new_item("key")).await.unwrap();
    let bobs = w.bob().register_item(new_item("key")).await.unwrap();
    let check = |changes: Vec<ProposedChange>| ParadoxCheckRequest {
        timeline_id: primary(),
        proposed_changes: changes,
    };
    let both = ProposedChange {
        event: Some("x".into()),
        time: None,
        item_id: Some(item.id.clone()),
    };
    let err = w.ada().check_paradox(check(vec![both])).await.unwrap_err();
    assert_matches!(err, ServiceError::InvalidInput { ref field, .. } if field == "proposed_changes[0]");
    let err = w
        .ada()
        .check_paradox(check(vec![ProposedChange::default()]))
        .await
        .unwrap_err();
    assert_matches!(err, ServiceError::InvalidInput { .. });
    let err = w
        .ada()
        .check_paradox(check(vec![carrying(&bobs.id)]))
        .await
        .unwrap_err();
    assert_matches!(err, ServiceError::UnknownReference { .. });
    let err = w
        .ada()
        .check_paradox(ParadoxCheckRequest {
            timeline_id: "tml_nope".parse().unwrap(),
            proposed_changes: vec![],
        })
        .await
        .unwrap_err();
    assert_matches!(err, ServiceError::UnknownReference { .. });
    let fine = w.ada().check_paradox(check(vec![])).await.unwrap();
    assert!(fine.is_stable);
}

#[tokio::test]
async fn search_pages_through_results_in_time_order() {
    let w = World::new().await;
    for i in 0..25 {
        w.event(
            &format!("e{i}"),
            &format!("2025-01-{:02}T00:00:00Z", i + 1),
            if i % 2 == 0 { "Geneva" } else { "Paris" },
            &[],
        )
        .await;
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = w
            .ada()
            .search_events(SearchQuery {
                location: Some("gEnEv".into()),
                page: PageRequest {
                    limit: Some(5),
                    cursor: cursor.clone(),
                },
                ..Default::default()
            })
            .await
            .unwrap();
        seen.extend(page.items.into_iter().map(|e| e.description));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let expected: Vec<String> = (0..25).step_by(2).map(|i| format!("e{i}")).collect();
    assert_eq!(seen, expected);
    let range =
        chronoscope::model::TimeRange::parse("time_range", "2025-01-10T00:00:00Z/P3D").unwrap();
    let page = w
        .ada()
        .search_events(SearchQuery {
            time_range: Some(range),
            ..Default::default()
        })
        .await
        .unwrap();
    let names: Vec<_> = page.items.iter().map(|e| e.description.as_str()).collect();
    assert_eq!(names, ["e9", "e10", "e11", "e12"]);
    for bad in [Some(0), Some(1001)] {
        let err = w
            .ada()
            .search_events(SearchQuery {
                page: PageRequest {
                    limit: bad,
                    cursor: None,
                },
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert!(matches!(err, ServiceError::InvalidInput { ref field, .. } if field == "limit"));
    }
    let err = w
        .ada()
        .search_events(SearchQuery {
            page: PageRequest {
                limit: None,
                cursor: Some("garbage".into()),
            },
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::InvalidInput { ref field, .. } if field == "cursor"));
}

#[tokio::test]
async fn a_second_engine_on_the_same_store_sees_every_write() {
    let w = World::new().await;
    let tl = w.branch("shared").await;
    let other = engine_on(w.store.clone(), w.clock.clone()).await;
    let ada2 = other.session("ada".parse().unwrap());
    assert_eq!(ada2.get_timeline(&tl.id).await.unwrap().name, "shared");
    // Both write; each sees the other's writes and none is lost.
    w.clock.advance(Duration::seconds(1));
    ada2.create_timeline(named("from the other")).await.unwrap();
    w.clock.advance(Duration::seconds(1));
    w.ada()
        .create_timeline(named("from the first"))
        .await
        .unwrap();
    let names: Vec<_> = timelines(&w.ada())
        .await
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(
        names,
        ["Primary", "shared", "from the other", "from the first"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_on_two_engines_lose_nothing() {
    let w = World::new().await;
    let other = engine_on(w.store.clone(), w.clock.clone()).await;
    let mut tasks = Vec::new();
    for i in 0..100 {
        let engine = if i % 2 == 0 {
            w.engine.clone()
        } else {
            other.clone()
        };
        tasks.push(tokio::spawn(async move {
            engine
                .session("ada".parse().unwrap())
                .register_item(new_item(&format!("item {i}")))
                .await
        }));
    }
    let mut acknowledged = Vec::new();
    for task in tasks {
        acknowledged.push(task.await.unwrap().expect("every write is acknowledged").id);
    }
    // Every acknowledged item is in the shared log exactly once, and both engines see all.
    assert_eq!(w.log_len().await, 1 + 100);
    for engine in [&w.engine, &other] {
        let items = engine
            .session("ada".parse().unwrap())
            .list_items(PageRequest::first(1000))
            .await
            .unwrap()
            .items;
        let mut ids: Vec<_> = items.into_iter().map(|i| i.id).collect();
        ids.sort();
        let mut expected = acknowledged.clone();
        expected.sort();
        assert_eq!(ids, expected);
    }
}

#[tokio::test]
async fn a_write_never_refuses_on_what_another_process_changed_meanwhile() {
    let w = World::new().await;
    let other = engine_on(w.store.clone(), w.clock.clone()).await;
    // The other engine creates a timeline this one has not read yet…
    let tl = other
        .session("ada".parse().unwrap())
        .create_timeline(named("made elsewhere"))
        .await
        .unwrap();
    // …and travelling there through this engine works rather than "unknown timeline".
    let journey = w.ada().travel(trip(&tl.id, &[])).await.unwrap();
    assert_eq!(journey.to_timeline, tl.id);
}

/// A store whose appends take a while, so callers can go away in the middle of one.
struct SlowAppends;

#[async_trait::async_trait]
impl support::StoreHooks for SlowAppends {
    fn describe(&self, _: &dyn Store) -> String {
        "slow memory".into()
    }

    async fn lock(&self) -> Result<(), chronoscope::store::StoreError> {
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn callers_going_away_mid_append_cost_the_others_nothing() {
    let clock = Arc::new(ManualClock::new(t("2026-11-22T10:00:00Z")));
    let store = Arc::new(support::Hooked::memory(SlowAppends));
    let engine = engine_on(store.clone(), clock.clone()).await;
    let mut tasks = Vec::new();
    for i in 0..240 {
        let engine = engine.clone();
        tasks.push(tokio::spawn(async move {
            let ada = engine.session("ada".parse().unwrap());
            let write = ada.register_item(new_item(&format!("item {i}")));
            if i % 2 == 0 {
                // Half the callers give up after a moment, like a client disconnecting.
                let _ = tokio::time::timeout(std::time::Duration::from_millis(2), write).await;
                None
            } else {
                Some(write.await)
            }
        }));
    }
    let mut acknowledged = Vec::new();
    for task in tasks {
        if let Some(answer) = task.await.unwrap() {
            acknowledged.push(answer.expect("a caller that waits is always answered").id);
        }
    }
    assert_eq!(acknowledged.len(), 120);
    // A fresh engine replaying the log agrees with the live one, and holds every answer given.
    let fresh = engine_on(store, clock).await;
    let listed =
        |e: Arc<Engine>| async move { sorted_item_ids(&e.session("ada".parse().unwrap())).await };
    let (live, replayed) = (listed(engine).await, listed(fresh).await);
    assert_eq!(live, replayed);
    for id in &acknowledged {
        assert!(replayed.contains(id), "acknowledged {id} is missing");
    }
}

/// A store shared with a rival process that always appends a moment before this engine takes
/// the write lock, as a busy second replica would: every optimistic append of this engine loses
/// its race.
struct Rival {
    rival: Arc<Engine>,
    written: std::sync::atomic::AtomicU32,
}

#[async_trait::async_trait]
impl support::StoreHooks for Rival {
    fn describe(&self, _: &dyn Store) -> String {
        "memory with a rival".into()
    }

    async fn lock(&self) -> Result<(), chronoscope::store::StoreError> {
        let n = self
            .written
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.rival
            .session("rival".parse().unwrap())
            .register_item(new_item(&format!("written by the rival, {n}")))
            .await
            .unwrap();
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_that_always_lose_the_race_still_succeed() {
    let clock = Arc::new(ManualClock::new(t("2026-11-22T10:00:00Z")));
    let shared = Arc::new(MemoryStore::new());
    let open = |store: Arc<dyn Store>| {
        let clock = clock.clone();
        async move { engine_on(store, clock).await }
    };
    let rival = open(shared.clone()).await;
    let engine = open(Arc::new(support::Hooked::new(
        shared.clone(),
        Rival {
            rival: rival.clone(),
            written: Default::default(),
        },
    )))
    .await;

    // Writers keep arriving while earlier ones are deciding again, as under steady load.
    let mut tasks = Vec::new();
    for i in 0..400 {
        let ada = engine.session("ada".parse().unwrap());
        tasks.push(tokio::spawn(async move {
            ada.register_item(new_item(&format!("item {i}"))).await
        }));
        if i % 20 == 19 {
            tokio::time::sleep(std::time::Duration::from_micros(300)).await;
        }
    }
    let mut acknowledged = Vec::new();
    for task in tasks {
        acknowledged.push(task.await.unwrap().expect("every write succeeds").id);
    }

    // Everything acknowledged is in the log, and so is everything the rival wrote: each lost
    // race cost a second decision, never an error.
    let fresh = open(shared).await;
    let items = |who: &str| {
        let session = fresh.session(who.parse().unwrap());
        async move {
            session
                .list_items(PageRequest::first(1000))
                .await
                .unwrap()
                .items
        }
    };
    let mut mine: Vec<_> = items("ada").await.into_iter().map(|i| i.id).collect();
    mine.sort();
    acknowledged.sort();
    assert_eq!(mine, acknowledged);
    assert!(!items("rival").await.is_empty());
}

#[tokio::test]
async fn a_safety_checked_event_or_revert_is_refused_only_for_paradoxes_it_adds() {
    let (w, ada) = World::with_ada().await;
    let treaty = w
        .event("Treaty", "1860-06-01T12:00:00Z", "Turin", &[])
        .await;

    // An event before its own cause: refused with the paradox named, nothing written.
    let early = NewEvent {
        safety_check: true,
        ..new_event(
            "Treaty celebrated",
            "1855-06-01T12:00:00Z",
            "Turin",
            &[&treaty.event_id],
        )
    };
    let err = w.refused(ada.add_event(&primary(), early.clone())).await;
    let ServiceError::ParadoxDetected { paradoxes, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(paradoxes.len(), 1, "{paradoxes:?}");
    assert!(
        paradoxes[0].events.contains(&treaty.event_id),
        "{paradoxes:?}"
    );

    // Without the check the same event is written, and the paradox stands.
    ada.add_event(
        &primary(),
        NewEvent {
            safety_check: false,
            ..early
        },
    )
    .await
    .unwrap();
    // A paradox that stands already does not refuse an unrelated, checked event.
    ada.add_event(
        &primary(),
        NewEvent {
            safety_check: true,
            ..new_event("Picnic", "1900-01-01T12:00:00Z", "Turin", &[])
        },
    )
    .await
    .expect("a standing paradox is not this event's doing");

    // A revert that would put an effect before its cause: refused when checked.
    let moved = ada
        .manipulate_event(manipulation(
            None,
            &treaty.event_id,
            retimed("1800-06-01T12:00:00Z"),
        ))
        .await
        .unwrap();
    w.event(
        "Anniversary",
        "1830-06-01T12:00:00Z",
        "Turin",
        &[&moved.new_event_id],
    )
    .await;
    let revert = RevertRequest {
        event_id: moved.new_event_id.clone(),
        timeline_id: None,
        safety_check: true,
    };
    let err = w.refused(ada.revert_event(revert.clone())).await;
    assert_matches!(err, ServiceError::ParadoxDetected { .. });
    let done = ada
        .revert_event(RevertRequest {
            safety_check: false,
            ..revert
        })
        .await
        .expect("applied when asked to without the check");
    assert_eq!(done.original_event_id, treaty.event_id);
}

#[tokio::test]
async fn a_check_refuses_an_event_id_that_names_nothing() {
    let w = World::new().await;
    let check = |event: &str| ParadoxCheckRequest {
        timeline_id: primary(),
        proposed_changes: vec![ProposedChange {
            event: Some(event.into()),
            ..ProposedChange::default()
        }],
    };
    for typo in [
        "evt_01JTYPO0000000000000000",
        "experiment-initiaton",
        "abcd1235",
    ] {
        let err = w.ada().check_paradox(check(typo)).await.unwrap_err();
        assert!(
            matches!(err, ServiceError::UnknownReference { ref id, .. } if id == typo),
            "{typo}: {err:?}"
        );
    }
    // Words are a new event's description, as before.
    for words in ["Coronation", "Retrieve the blueprint"] {
        let report = w.ada().check_paradox(check(words)).await.unwrap();
        assert!(report.is_stable, "{words}: {report:?}");
    }
}

#[tokio::test]
async fn every_traveller_sees_the_same_anomalies_and_the_list_counts_them() {
    let w = World::new().await;
    let tl = w.branch("shared").await.id;
    let cause = w
        .ada()
        .add_event(&tl, new_event("cause", "1900-01-02T00:00:00Z", "Bern", &[]))
        .await
        .unwrap()
        .event_id;
    // Ada's event happens before its cause: her own doing, whoever looks.
    w.ada()
        .add_event(
            &tl,
            new_event("effect", "1900-01-01T00:00:00Z", "Bern", &[&cause]),
        )
        .await
        .unwrap();
    // Within the last tenth of the one-hour window: a warning besides the paradox.
    w.clock.advance(Duration::minutes(55));
    let (by_ada, ada_count) = look(&w.ada(), &tl).await;
    let (by_bob, bob_count) = look(&w.bob(), &tl).await;
    let seen = |v: &[Anomaly]| {
        v.iter()
            .map(|a| (a.anomaly_id.to_string(), a.kind))
            .collect::<Vec<_>>()
    };
    assert_eq!(seen(&by_ada), seen(&by_bob));
    assert_eq!(
        by_bob.iter().map(|a| a.kind).collect::<Vec<_>>(),
        [
            AnomalyKind::Paradox(chronoscope::paradox::ParadoxKind::Grandfather),
            AnomalyKind::WindowClosing
        ]
    );
    assert_eq!(
        (ada_count, bob_count),
        (2, 2),
        "the list counts what the monitor shows"
    );
}

/// The monitor's anomalies of `tl` as `who` sees them, and the count the timelines list shows.
async fn look(who: &dyn TimelineService, tl: &TimelineId) -> (Vec<Anomaly>, usize) {
    let report = monitor(who, tl).await;
    let listed = timelines(who)
        .await
        .into_iter()
        .find(|t| &t.id == tl)
        .unwrap();
    (report.anomalies, listed.paradoxes)
}

/// A traveller who arrived at the last second of year 9999 stays there as their clock runs on:
/// `whoami` answers the last printable instant, never `+10000-…`, which RFC 3339 cannot write.
#[tokio::test]
async fn a_travellers_clock_stops_at_the_last_printable_instant() {
    let (w, ada) = World::with_ada().await;
    ada.travel_to_time(TimeTravelRequest {
        destination_time: t("9999-12-31T23:59:59Z"),
        location: None,
    })
    .await
    .unwrap();
    w.clock.advance(chrono::Duration::seconds(2));
    let me = ada.whoami().await.unwrap();
    assert_eq!(me.time, chronoscope::model::MAX_INSTANT);
    let json = serde_json::to_string(&me).unwrap();
    assert!(
        json.contains("\"9999-12-31T23:59:59.999999999Z\"") && !json.contains("+10000"),
        "{json}"
    );
}

/// Finding B7 (2026-11-27): a traveller listed under `read` who branches a timeline becomes the
/// branch's admin, and sits on that one list only, not on `read` as well.
#[tokio::test]
async fn the_creator_of_a_branch_sits_under_admin_only() {
    let fresh = support::Fresh::new().await;
    let root = fresh.session("root");
    let name = |n: &str| n.parse::<chronoscope::model::Traveller>().expect("name");
    root.set_access_control(SetAccessControlRequest {
        timeline_id: TimelineId::primary(),
        permissions: Some(Permissions {
            admin: vec![name("root")],
            write: vec![],
            read: vec![name("bob"), name("tom")],
        }),
    })
    .await
    .expect("list set");
    let bob = fresh.session("bob");
    let branch = bob
        .create_timeline(NewTimeline {
            base_timeline_id: Some(TimelineId::primary()),
            ..support::named("Bob's branch")
        })
        .await
        .expect("bob may branch what he may read");
    let view = root.access_control(&branch.id).await.expect("view");
    let lists = view
        .access_control
        .expect("the branch inherits a list")
        .permissions;
    assert_eq!(lists.admin, [name("root"), name("bob")]);
    assert_eq!(lists.read, [name("tom")], "bob is on one list only");
    assert!(lists.write.is_empty());
}

/// The monitor finds the items that may be in a timeline from an index, not a pass over every
/// item: the index names every item registered in a timeline, left in it, or carried by a
/// traveller in it, however items and travellers moved — and not the items elsewhere.
#[tokio::test]
async fn the_items_a_timeline_may_hold_are_indexed_as_items_and_travellers_move() {
    let w = World::new().await;
    let a = w.branch("A").await.id;
    let b = w.branch("B").await.id;
    let (ada, bob) = (w.ada(), w.bob());
    let compass = register(&ada, "Compass").await;
    let _lamp = register(&ada, "Lamp").await;
    let coin = register(&bob, "Coin").await;
    // Ada carries the compass to A (the lamp stays behind), finds a map there, and goes on
    // to B carrying nothing.
    let travel = |to: &TimelineId, items: Vec<ItemId>| TravelRequest {
        destination: to.to_string(),
        items_transported: items,
    };
    ada.travel(travel(&a, vec![compass.clone()]))
        .await
        .expect("to A");
    let map = register(&ada, "Map").await;
    ada.travel(travel(&b, vec![])).await.expect("to B");

    let world = w.engine.snapshot().await.expect("world");
    for timeline in [primary(), a.clone(), b.clone()] {
        let here: std::collections::BTreeSet<ItemId> = world
            .items
            .values()
            .filter(|item| {
                let owner_in = || {
                    world
                        .positions
                        .get(&item.owner)
                        .map_or(timeline.is_primary(), |p| p.timeline == timeline)
                };
                item.origin_timeline == timeline
                    || matches!(&item.whereabouts, Whereabouts::Left { timeline: t, .. } if *t == timeline)
                    || (item.whereabouts == Whereabouts::Carried && owner_in())
            })
            .map(|item| item.id.clone())
            .collect();
        let maybe: std::collections::BTreeSet<ItemId> = world
            .items_maybe_in(&timeline)
            .into_iter()
            .map(|item| item.id.clone())
            .collect();
        assert!(
            maybe.is_superset(&here),
            "{timeline}: {here:?} may be there, the index names {maybe:?}"
        );
        if timeline != primary() {
            assert!(!maybe.contains(&coin), "{timeline}: bob never left primary");
        }
    }
    let in_a: Vec<ItemId> = world
        .items_maybe_in(&a)
        .into_iter()
        .map(|item| item.id.clone())
        .collect();
    assert!(in_a.contains(&map) && in_a.contains(&compass), "{in_a:?}");
}

/// A Custom Merge refused for a paradox names the destination's event as it stands: the version
/// the resolution would have written never comes to be (F5).
#[tokio::test]
async fn a_refused_custom_merge_names_the_event_as_it_stands_not_the_version_it_would_have_made() {
    let w = World::new().await;
    let cause = w.event("cause", "1900-02-01T12:00:00Z", "Lab", &[]).await;
    let x = w
        .event("x", "1900-02-01T13:00:00Z", "Lab", &[&cause.event_id])
        .await;
    let b = w.branch("B").await;
    let ada = w.ada();
    let change = |tl: &TimelineId, text: &str| {
        ada.manipulate_event(manipulation(Some(tl), &x.event_id, described(text)))
    };
    change(&b.id, "x in B").await.expect("B changes x");
    let in_a = change(&primary(), "x in A").await.expect("A changes x");
    let pending = w
        .ada()
        .merge_timelines(MergeRequest {
            source_timeline_id: b.id.clone(),
            destination_timeline_id: primary(),
            conflict_resolution: MergeStrategy::ManualReview,
            safety_check: true,
        })
        .await
        .expect("merge waits for review");
    assert_eq!(pending.status, "pending_review");
    let known: Vec<EventId> = all_events(&w.ada())
        .await
        .into_iter()
        .map(|e| e.event_id)
        .collect();
    let mut before_its_cause = retimed("1900-02-01T11:00:00Z");
    before_its_cause.description = Some("x, custom".into());
    for _ in 0..2 {
        let err = w
            .refused(w.ada().resolve_conflict(ResolveRequest {
                event_id: x.event_id.clone(),
                resolution: ConflictResolution::Custom,
                new_outcome: Some(before_its_cause.clone()),
                merge_id: None,
                merged_timeline_id: None,
                safety_check: true,
            }))
            .await;
        let said = names_only_known_events(&err, &in_a.new_event_id, &known);
        assert!(said.contains("'x, custom'"), "{said}");
    }
}

/// Asserts `err` is a paradox refusal that names `event` and, in its events and its words,
/// only events of `known` (none minted for the check). Answers its words.
fn names_only_known_events(err: &ServiceError, event: &EventId, known: &[EventId]) -> String {
    let ServiceError::ParadoxDetected { paradoxes, .. } = err else {
        panic!("{err:?}");
    };
    let named: Vec<&EventId> = paradoxes.iter().flat_map(|p| &p.events).collect();
    assert!(named.contains(&event), "{err:?}");
    assert!(named.iter().all(|e| known.contains(e)), "{err:?}");
    let said = err.explain();
    assert!(said.contains(event.as_str()), "{said}");
    for word in said.split(|c: char| !c.is_alphanumeric() && c != '_') {
        if word.starts_with("evt_") {
            assert!(known.iter().any(|k| k.as_str() == word), "{word} in {said}");
        }
    }
    said
}

/// Registers the item `what` as `who`, where they are.
async fn register(who: &dyn TimelineService, what: &str) -> ItemId {
    let req = NewItem {
        description: what.into(),
    };
    who.register_item(req).await.expect("item registered").id
}

/// An align refused for a paradox names the events by the ids they have: the version the
/// refused move would have made never comes to be (and would be a new id on every try).
#[tokio::test]
async fn a_refused_align_names_the_event_as_it_stands_not_the_version_it_would_have_made() {
    let w = World::new().await;
    let cause = w.event("cause", "1900-02-01T12:00:00Z", "Lab", &[]).await;
    let first = w
        .event("first", "1900-02-01T10:00:00Z", "Lab", &[&cause.event_id])
        .await;
    // Moving `first` after its cause would put this unnamed effect before it.
    w.event("effect", "1900-02-01T11:00:00Z", "Lab", &[&first.event_id])
        .await;
    let known: Vec<EventId> = all_events(&w.ada())
        .await
        .into_iter()
        .map(|e| e.event_id)
        .collect();
    for _ in 0..2 {
        let err = w
            .refused(w.ada().correct_dissonance(DissonanceRequest {
                timeline_id: primary(),
                conflicting_events: vec![first.event_id.clone()],
            }))
            .await;
        names_only_known_events(&err, &first.event_id, &known);
    }
}

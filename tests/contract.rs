//! The contract suite (DESIGN §2): the same scenarios run against the embedded `Engine` and
//! against `RemoteClient -> server -> Engine`; both faces must give the same answers, errors
//! included.
//!
//! Each scenario in `contract/scenarios.rs` becomes a module with two tests: `embedded` runs it
//! on the engine; `remote` runs it through a real server on a loopback port, then runs it on a
//! fresh engine too and asserts that every recorded answer is the same on both faces; `postgres`
//! runs it on an engine over a fresh PostgreSQL database and compares it with the in-memory one
//! (skipped without a server unless CHRONOSCOPE_REQUIRE_POSTGRES=1). `over_tls` runs every
//! scenario once more with the server speaking https behind a private CA made for the test.

#[path = "contract/face.rs"]
mod face;
#[path = "pki/mod.rs"]
mod pki;
#[path = "contract/remote.rs"]
mod remote;
#[path = "contract/scenarios.rs"]
mod scenarios;
// Shared with the store suite; the contract suite needs only its fresh databases.
#[path = "support/mod.rs"]
mod support;

use face::Face;

/// Runs `scenario` on `face`, then on a fresh embedded engine, and asserts that both recorded
/// the same answers.
macro_rules! answers_as_embedded {
    ($face:expr, $scenario:ident) => {{
        let other = $face;
        scenarios::$scenario(&other).await;
        let embedded = Face::embedded().await;
        scenarios::$scenario(&embedded).await;
        face::assert_same_answers(&embedded, &other);
    }};
}

macro_rules! contract {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            use super::*;

            #[tokio::test]
            async fn embedded() {
                let face = Face::embedded().await;
                scenarios::$scenario(&face).await;
            }

            #[tokio::test]
            async fn remote() {
                answers_as_embedded!(Face::remote().await, $scenario);
            }

            /// The engine on PostgreSQL answers exactly like the engine on memory.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let Some(database) = support::fresh_postgres().await else {
                    return;
                };
                let store = chronoscope::store::open(&database.url)
                    .await
                    .expect("the PostgreSQL store opens");
                answers_as_embedded!(Face::embedded_on(store).await, $scenario);
            }
        }
    )*

        /// Every scenario through `RemoteClient -> https server -> Engine` answers exactly like
        /// the engine in-process.
        #[tokio::test]
        async fn over_tls() {
            $(answers_as_embedded!(Face::remote_tls().await, $scenario);)*
        }
    };
}

contract! {
    timelines_list_create_get,
    merge_timelines,
    correct_dissonance,
    timeline_delete_refusals,
    events_add_and_search,
    manipulate_revert_and_check_timeline,
    closed_timeline_refuses_changes,
    items_register_get_list,
    anchors_set_get_list,
    anchors_precise_adjust_stability,
    anchors_delete,
    wormhole_simulation,
    travel_timeline_anchor_and_time,
    mission_runs_twice,
    travellers_are_isolated,
    paradox_check_validation,
    monitor_clean_timeline,
    automation_answers,
    guide_travel_switch_and_return,
    guide_fast_forward_and_rewind,
    guide_pause_and_resume,
    guide_retrieve_item_and_safety_check,
    guide_monitor_events_and_lists,
    integrity_of_a_sound_store,
    temporal_data,
    merge_manual_review,
    merge_completion_and_data,
    isolation_overlay,
    access_control_on_every_face,
    restrictions_on_every_face,
    access_log_on_every_face,
}

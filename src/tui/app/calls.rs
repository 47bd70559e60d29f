//! The background calls: each is spawned in its [`Slot`] with the slot's next generation, and
//! answers on the queue as [`Msg::Done`]. What the tick keeps fresh, what a pane asks for, and
//! the [`Call`]s components answer with are all sent from here.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;

use super::App;
use crate::error::ServiceError;
use crate::model::TimelineId;
use crate::service::{
    AnchorListQuery, AnchorRef, LogQuery, MonitorQuery, PageRequest, SearchQuery,
    SignificantEventQuery, TimelineService,
};
use crate::tui::action::{Msg, Reply, Slot};
use crate::tui::anchors::AnchorRow;
use crate::tui::confirm::Checked;
use crate::tui::effect::Call;
use crate::tui::modal::Modal;
use crate::tui::panes::PaneId;
use crate::tui::panes::wizard::Verdict;

/// Longest a background call may take before it counts as the service being unavailable.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest a change may take: longer than the client's own budget for it (30 s a try, sent
/// again with the same `Idempotency-Key` up to twice), so the dashboard never gives up on a
/// change the server may still make, and a person never sends it again as a second change.
const MUTATION_TIMEOUT: Duration = Duration::from_secs(100);
const _: () = assert!(
    MUTATION_TIMEOUT.as_secs() > 3 * crate::client::DEFAULT_REQUEST_TIMEOUT.as_secs(),
    "a change outlives every try the client makes of it"
);
/// Most rows of a list fetched (timelines, journeys, the picture's events), in pages of
/// [`PageRequest::MAX_LIMIT`].
const MAX_ROWS: usize = 10_000;
/// Most anchors whose stability the anchors list checks (one call each).
const CHECKED_ANCHORS: usize = 200;

impl App {
    /// Runs `call` in the background; its answer comes back as [`Msg::Done`] in `slot`.
    pub(super) fn spawn<F>(&mut self, slot: Slot, call: F)
    where
        F: Future<Output = Result<Reply, ServiceError>> + Send + 'static,
    {
        let generation = self.generation(slot) + 1;
        self.generations.insert(slot, generation);
        *self.in_flight.entry(slot).or_default() += 1;
        let tx = self.tx.clone();
        tokio::spawn(async move {
            // A call that panics still answers, as an error: else its slot stays pending and
            // the spinner runs for good.
            let call = AssertUnwindSafe(call).catch_unwind();
            let limit = if slot == Slot::Mutation {
                MUTATION_TIMEOUT
            } else {
                CALL_TIMEOUT
            };
            let result = match tokio::time::timeout(limit, call).await {
                Ok(Ok(result)) => result,
                Ok(Err(panic)) => Err(ServiceError::Internal(format!(
                    "the call failed unexpectedly ({})",
                    panic_message(panic.as_ref())
                ))),
                Err(_) => Err(ServiceError::Unavailable(format!(
                    "no answer within {} s",
                    limit.as_secs()
                ))),
            };
            // The receiver is gone only when the dashboard is closing.
            let _ = tx.send(Msg::Done {
                slot,
                generation,
                result,
            });
        });
    }

    /// Refreshes what the tick keeps fresh; `force` also re-asks slots already waiting.
    pub(super) fn refresh(&mut self, force: bool) {
        if force || !self.pending(Slot::Whoami) {
            self.request_whoami();
        }
        if force || !self.pending(Slot::Timelines) {
            self.request_timelines();
        }
        // While changes are pushed the monitor needs no polling.
        let polled = force || !self.follower.is_live();
        if polled && !self.monitor.frozen && (force || !self.pending(Slot::Monitor)) {
            self.request_monitor();
        }
        if self.lower == PaneId::Log && (force || !self.pending(Slot::Log)) {
            self.request_log();
        }
        if let Some(Modal::Access(screen)) = &self.modal
            && let Some(call) = screen.refetch()
            && (force || !self.pending(Slot::Security))
        {
            self.call(call);
        }
    }

    /// Asks who and where the traveller is (the header, and whether the service answers).
    pub(super) fn request_whoami(&mut self) {
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Whoami, async move {
            svc.whoami().await.map(Reply::Whoami)
        });
    }

    /// Fetches the list of timelines, and your rights on those with an access-control list
    /// (what the timelines pane marks read-only, and the dashboard refuses to change). Rights
    /// that cannot be listed leave the ones known before: the service checks every change.
    pub(super) fn request_timelines(&mut self) {
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Timelines, async move {
            let list = all_pages(|page| svc.list_timelines(page)).await?;
            let rights = all_pages(|page| svc.list_access_controls(page)).await.ok();
            Ok(Reply::Timelines(list, rights))
        });
    }

    /// Scans the watched timeline for anomalies.
    pub(super) fn request_monitor(&mut self) {
        let Some(timeline) = self.monitor.timeline.clone() else {
            return;
        };
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Monitor, async move {
            svc.monitor_timeline(MonitorQuery {
                timeline_id: timeline,
                time_range: None,
            })
            .await
            .map(Reply::Monitor)
        });
    }

    /// Fetches the automation log.
    pub(super) fn request_log(&mut self) {
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Log, async move {
            svc.automation_log(LogQuery {
                page: PageRequest::first(PageRequest::MAX_LIMIT),
                ..LogQuery::default()
            })
            .await
            .map(|p| Reply::Log(p.items))
        });
    }

    /// Searches the selected timeline with the inputs as they are.
    pub(super) fn request_search(&mut self) {
        let query = match self.search.query() {
            Ok(q) => q,
            Err(e) => {
                self.search.invalid();
                return self.flash_error(e);
            }
        };
        let timeline = self
            .timelines
            .selected()
            .map(|t| t.id.clone())
            .unwrap_or_else(TimelineId::primary);
        self.search.timeline = Some(timeline.clone());
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Search, async move {
            svc.search_events(SearchQuery {
                timeline_id: Some(timeline),
                location: query.location,
                time_range: query.range,
                page: PageRequest::first(PageRequest::MAX_LIMIT),
            })
            .await
            .map(|p| Reply::Search(p.items))
        });
    }

    /// Looks up the causes of the event in the detail view that the results do not hold (the
    /// search's range or location left them out), so the detail names them.
    pub(super) fn request_causes(&mut self) {
        let (Some(event), Some(timeline)) = (self.search.selected(), self.search.timeline.clone())
        else {
            return;
        };
        let unnamed = self.search.unnamed_causes(event);
        if unnamed.is_empty() {
            return;
        }
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Causes, async move {
            let mut found = Vec::new();
            for id in unnamed {
                let query = SignificantEventQuery {
                    timeline_id: timeline.clone(),
                    significant_event: id.to_string(),
                };
                // The lineage's event that stands now; a cause that cannot be found stays an id.
                if let Ok(check) = svc.check_timeline(query).await
                    && let Some(mut record) = check.event
                {
                    record.event_id = id;
                    found.push(record);
                }
            }
            Ok(Reply::Causes(found))
        });
    }

    /// Asks for your anchors and items (the travel wizard offers them; the delete question
    /// names the anchors in the timeline it deletes).
    pub(super) fn request_wizard_data(&mut self) {
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::WizardData, async move {
            let anchors = svc
                .list_anchors(PageRequest::first(PageRequest::MAX_LIMIT))
                .await?;
            let items = svc
                .list_items(PageRequest::first(PageRequest::MAX_LIMIT))
                .await?;
            Ok(Reply::WizardData {
                anchors: anchors.items,
                items: items.items,
            })
        });
    }

    /// Fetches the traveller's anchors, spent ones too, and checks each one's stability (up to
    /// [`CHECKED_ANCHORS`]), for the anchors list if it is open.
    pub(super) fn request_anchors(&mut self) {
        let Some(Modal::Anchors(list)) = &mut self.modal else {
            return;
        };
        list.loading = true;
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Anchors, async move {
            let anchors = all_pages(|page| {
                svc.find_anchors(AnchorListQuery {
                    include_spent: Some(true),
                    limit: page.limit,
                    cursor: page.cursor,
                })
            })
            .await?;
            let mut rows = Vec::with_capacity(anchors.len());
            for (i, anchor) in anchors.into_iter().enumerate() {
                let stability = if i < CHECKED_ANCHORS {
                    let anchor_id = anchor.id.clone();
                    // One that cannot be checked is listed as unchecked, not dropped.
                    svc.check_anchor_stability(AnchorRef { anchor_id })
                        .await
                        .ok()
                } else {
                    None
                };
                rows.push(AnchorRow { anchor, stability });
            }
            Ok(Reply::Anchors(rows))
        });
    }

    /// Fetches the traveller's journeys (they open in a modal).
    pub(super) fn request_journeys(&mut self) {
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Journeys, async move {
            all_pages(|page| svc.list_journeys(page))
                .await
                .map(Reply::Journeys)
        });
    }

    /// Fetches the events of `timeline`, past versions too (up to the row limit), and the
    /// traveller's anchors.
    pub(super) fn request_picture(&mut self, timeline: TimelineId) {
        let svc = Arc::clone(&self.service);
        self.spawn(Slot::Picture, async move {
            let query = |page: PageRequest| SearchQuery {
                timeline_id: Some(timeline.clone()),
                location: None,
                time_range: None,
                page,
            };
            let mut events = all_pages(|page| svc.event_versions(query(page))).await?;
            events.truncate(MAX_ROWS);
            let anchors = all_pages(|page| svc.list_anchors(page)).await?;
            Ok(Reply::Picture {
                timeline,
                events,
                anchors,
            })
        });
    }

    /// Fetches the picture's data again if it is open (something it shows has changed).
    pub(super) fn refresh_picture(&mut self) {
        if let Some(Modal::Picture(p)) = &self.modal {
            let timeline = p.timeline.clone();
            self.request_picture(timeline);
        }
    }

    /// Sends what a component asked for. A change goes in [`Slot::Mutation`], never stale and
    /// always reported; a safety-checked one is kept so a refusal can ask "apply anyway?".
    ///
    /// A change your rights on its timeline (or an operator's restriction) do not allow is
    /// refused here, before anything is sent.
    pub(super) fn call(&mut self, call: Call) {
        let refused = match &call {
            // A new timeline is shared state too: no restricted traveller makes one.
            Call::Create(_) => self.restricted().or_else(|| self.read_only_token()),
            _ => self
                .written_by(&call)
                .and_then(|(timeline, needed)| self.refusal(&timeline, needed)),
        };
        if let Some(why) = refused {
            return self.refuse_unsent(why);
        }
        let svc = Arc::clone(&self.service);
        match call {
            Call::Create(req) => self.spawn(Slot::Mutation, async move {
                svc.create_timeline(req).await.map(Reply::Created)
            }),
            Call::Delete(id, name) => self.spawn(Slot::Mutation, async move {
                svc.delete_timeline(&id)
                    .await
                    .map(|()| Reply::Deleted(id, name))
            }),
            Call::Checked(change) => {
                self.checking = Some(change.clone());
                self.spawn(Slot::Mutation, send(change, svc, true));
            }
            Call::Unchecked(change) => self.spawn(Slot::Mutation, send(change, svc, false)),
            Call::Anchor(req) => self.spawn(Slot::Mutation, async move {
                svc.set_anchor(req).await.map(Reply::AnchorSet)
            }),
            Call::Item(req) => self.spawn(Slot::Mutation, async move {
                svc.register_item(req).await.map(Reply::ItemRegistered)
            }),
            Call::CheckDraft(req) => self.spawn(Slot::Mutation, async move {
                Verdict::ask(svc, req).await.map(Reply::Checked)
            }),
            Call::WizardCheck(req) => self.spawn(Slot::WizardCheck, async move {
                Verdict::ask(svc, req).await.map(Reply::WizardCheck)
            }),
            Call::Travel(req) => self.spawn(Slot::Mutation, async move {
                svc.travel(req).await.map(Reply::Journey)
            }),
            Call::TravelInTime(req) => self.spawn(Slot::Mutation, async move {
                svc.travel_in_time(req).await.map(Reply::Journey)
            }),
            Call::Clock(pause) => self.spawn(Slot::Mutation, async move {
                let state = if pause {
                    svc.pause_time().await
                } else {
                    svc.resume_time().await
                };
                state.map(Reply::Clock)
            }),
            Call::Shift(req, forward) => self.spawn(Slot::Mutation, async move {
                let duration = req.duration.clone();
                let journey = if forward {
                    svc.fast_forward(req).await
                } else {
                    svc.rewind(req).await
                };
                journey.map(|journey| Reply::Shifted {
                    journey,
                    forward,
                    duration,
                })
            }),
            Call::AdjustAnchor(req) => self.spawn(Slot::Mutation, async move {
                svc.adjust_anchor(req).await.map(Reply::AnchorAdjusted)
            }),
            Call::DeleteAnchor(id, name) => self.spawn(Slot::Mutation, async move {
                svc.delete_anchor(AnchorRef {
                    anchor_id: id.clone(),
                })
                .await
                .map(|()| Reply::AnchorDeleted(id, name))
            }),
            Call::CheckAnchors => self.request_anchors(),
            Call::Diff(query) => self.spawn(Slot::Diff, async move {
                svc.diff_timelines(query).await.map(Reply::Diff)
            }),
            Call::Review(query) => self.spawn(Slot::Diff, async move {
                svc.review_conflicts(query).await.map(Reply::Review)
            }),
            Call::Isolate(req) => self.spawn(Slot::Mutation, async move {
                svc.isolate_event(req).await.map(Reply::Isolated)
            }),
            Call::Align(req, description) => self.spawn(Slot::Mutation, async move {
                svc.correct_dissonance(req)
                    .await
                    .map(|r| Reply::Aligned(r, description))
            }),
            Call::AccessControl(timeline) => self.spawn(Slot::Security, async move {
                svc.access_control(&timeline)
                    .await
                    .map(Reply::AccessControl)
            }),
            Call::SetAccess(req) => self.spawn(Slot::Mutation, async move {
                svc.set_access_control(req).await.map(Reply::AccessSet)
            }),
            Call::AccessLog(query) => self.spawn(Slot::AccessLog, async move {
                svc.access_logs(query).await.map(Reply::AccessLog)
            }),
            Call::Restrictions => self.spawn(Slot::Security, async move {
                all_pages(|page| svc.list_restrictions(page))
                    .await
                    .map(Reply::Restrictions)
            }),
            Call::Restrict(req) => self.spawn(Slot::Mutation, async move {
                svc.restrict_time_travel(req).await.map(Reply::Restricted)
            }),
            Call::Tamper(query) => self.spawn(Slot::Integrity, async move {
                svc.detect_tampering(query).await.map(Reply::Tamper)
            }),
            Call::Validate(query) => self.spawn(Slot::Integrity, async move {
                svc.validate_integrity(query).await.map(Reply::Integrity)
            }),
        }
    }
}

/// What a panic said, when it said it with a string (as `panic!` and `expect` do).
fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

/// Sends `change`, with or without the safety check.
async fn send(
    mut change: Checked,
    svc: Arc<dyn TimelineService>,
    safety_check: bool,
) -> Result<Reply, ServiceError> {
    match &mut change {
        Checked::AddEvent(timeline, req) => {
            req.safety_check = safety_check;
            svc.add_event(timeline, req.clone())
                .await
                .map(Reply::EventAdded)
        }
        Checked::Manipulate(req) => {
            req.safety_check = safety_check;
            svc.manipulate_event(req.clone())
                .await
                .map(Reply::Manipulated)
        }
        Checked::Revert(req) => {
            req.safety_check = safety_check;
            svc.revert_event(req.clone()).await.map(Reply::Reverted)
        }
        Checked::Merge(req) => {
            req.safety_check = safety_check;
            svc.merge_timelines(req.clone()).await.map(Reply::Merged)
        }
        Checked::Resolve(req) => {
            req.safety_check = safety_check;
            svc.resolve_conflict(req.clone()).await.map(Reply::Resolved)
        }
    }
}

/// Every page of a list, up to [`MAX_ROWS`] rows.
async fn all_pages<T, F, Fut>(mut list: F) -> Result<Vec<T>, ServiceError>
where
    F: FnMut(PageRequest) -> Fut,
    Fut: Future<Output = Result<crate::service::Page<T>, ServiceError>>,
{
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = list(PageRequest {
            limit: Some(PageRequest::MAX_LIMIT),
            cursor,
        })
        .await?;
        all.extend(page.items);
        match page.next_cursor {
            Some(next) if all.len() < MAX_ROWS => cursor = Some(next),
            _ => return Ok(all),
        }
    }
}

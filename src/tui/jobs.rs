//! The service side of the components' calls: each [`Call`] a component answers with becomes
//! one background job in its [`Slot`], whose answer comes back as a [`Reply`]. The loop
//! spawns it (with a timeout and a generation, see `app/calls.rs`); nothing here reads the
//! dashboard's state.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::error::ServiceError;
use crate::service::AnchorRef;
use crate::service::prelude::*;
use crate::tui::action::{Reply, Slot};
use crate::tui::effect::{Call, Checked};
use crate::tui::paging::all_pages;
use crate::tui::panes::wizard::Verdict;

/// A call on its way: what the service answers, as the message the loop routes.
pub type Job = Pin<Box<dyn Future<Output = Result<Reply, ServiceError>> + Send>>;

/// Lifts the isolation `id`.
async fn lift(
    svc: Arc<dyn TimelineService>,
    id: crate::model::IsolationId,
) -> Result<Reply, ServiceError> {
    svc.lift_isolation(&id).await?;
    Ok(Reply::Lifted(id))
}

/// The slot and the job of `call`; `None` for the one call that needs its component open (the
/// anchors list fetches its own rows, `App::request_anchors`).
pub fn job(call: Call, svc: Arc<dyn TimelineService>) -> Option<(Slot, Job)> {
    Some(match call {
        Call::Create(req) => (
            Slot::Mutation,
            Box::pin(async move { svc.create_timeline(req).await.map(Reply::Created) }),
        ),
        Call::Delete(id, name) => (
            Slot::Mutation,
            Box::pin(async move {
                svc.delete_timeline(&id)
                    .await
                    .map(|()| Reply::Deleted(id, name))
            }),
        ),
        Call::Checked(change) => (Slot::Mutation, Box::pin(send(change, svc, true))),
        Call::Unchecked(change) => (Slot::Mutation, Box::pin(send(change, svc, false))),
        Call::Anchor(req) => (
            Slot::Mutation,
            Box::pin(async move { svc.set_anchor(req).await.map(Reply::AnchorSet) }),
        ),
        Call::Item(req) => (
            Slot::Mutation,
            Box::pin(async move { svc.register_item(req).await.map(Reply::ItemRegistered) }),
        ),
        Call::CheckDraft(req) => (
            Slot::Mutation,
            Box::pin(async move { Verdict::ask(svc, req).await.map(Reply::Checked) }),
        ),
        Call::WizardCheck(req) => (
            Slot::WizardCheck,
            Box::pin(async move { Verdict::ask(svc, req).await.map(Reply::WizardCheck) }),
        ),
        Call::Travel(req) => (
            Slot::Mutation,
            Box::pin(async move { svc.travel(req).await.map(Reply::Journey) }),
        ),
        Call::TravelInTime(req) => (
            Slot::Mutation,
            Box::pin(async move { svc.travel_in_time(req).await.map(Reply::Journey) }),
        ),
        Call::Clock(pause) => (
            Slot::Mutation,
            Box::pin(async move {
                let state = if pause {
                    svc.pause_time().await
                } else {
                    svc.resume_time().await
                };
                state.map(Reply::Clock)
            }),
        ),
        Call::Shift(req, forward) => (
            Slot::Mutation,
            Box::pin(async move {
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
        ),
        Call::AdjustAnchor(req) => (
            Slot::Mutation,
            Box::pin(async move { svc.adjust_anchor(req).await.map(Reply::AnchorAdjusted) }),
        ),
        Call::DeleteAnchor(id, name) => (
            Slot::Mutation,
            Box::pin(async move {
                svc.delete_anchor(AnchorRef {
                    anchor_id: id.clone(),
                })
                .await
                .map(|()| Reply::AnchorDeleted(id, name))
            }),
        ),
        Call::CheckAnchors => return None,
        Call::Journeys => (
            Slot::Journeys,
            Box::pin(async move {
                all_pages(|page| svc.list_journeys(page))
                    .await
                    .map(Reply::Journeys)
            }),
        ),
        Call::Diff(query) => (
            Slot::Diff,
            Box::pin(async move { svc.diff_timelines(query).await.map(Reply::Diff) }),
        ),
        Call::Review(query) => (
            Slot::Diff,
            Box::pin(async move { svc.review_conflicts(query).await.map(Reply::Review) }),
        ),
        Call::Isolate(req) => (
            Slot::Mutation,
            Box::pin(async move { svc.isolate_event(req).await.map(Reply::Isolated) }),
        ),
        Call::Lift(_, id) => (Slot::Mutation, Box::pin(lift(svc, id))),
        Call::Align(req, description) => (
            Slot::Mutation,
            Box::pin(async move {
                svc.correct_dissonance(req)
                    .await
                    .map(|r| Reply::Aligned(r, description))
            }),
        ),
        Call::AccessControl(timeline) => (
            Slot::Security,
            Box::pin(async move {
                svc.access_control(&timeline)
                    .await
                    .map(Reply::AccessControl)
            }),
        ),
        Call::SetAccess(req) => (
            Slot::Mutation,
            Box::pin(async move { svc.set_access_control(req).await.map(Reply::AccessSet) }),
        ),
        Call::AccessLog(query) => (
            Slot::AccessLog,
            Box::pin(async move { svc.access_logs(query).await.map(Reply::AccessLog) }),
        ),
        Call::Restrictions => (
            Slot::Security,
            Box::pin(async move {
                all_pages(|page| svc.list_restrictions(page))
                    .await
                    .map(Reply::Restrictions)
            }),
        ),
        Call::Restrict(req) => (
            Slot::Mutation,
            Box::pin(async move { svc.restrict_time_travel(req).await.map(Reply::Restricted) }),
        ),
        Call::Tamper(query) => (
            Slot::Integrity,
            Box::pin(async move { svc.detect_tampering(query).await.map(Reply::Tamper) }),
        ),
        Call::Validate(query) => (
            Slot::Integrity,
            Box::pin(async move { svc.validate_integrity(query).await.map(Reply::Integrity) }),
        ),
    })
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

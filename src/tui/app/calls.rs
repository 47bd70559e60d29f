//! Sending the background calls (through the [`Requests`](crate::tui::requests::Requests)
//! store, answering on the queue as [`Msg::Done`]): what the tick keeps fresh, what each pane
//! fetches (the pane says what), and the [`Call`]s components answer with.

use std::future::Future;
use std::sync::Arc;

use super::App;
use crate::error::ServiceError;
use crate::model::TimelineId;
use crate::tui::action::{Reply, Slot};
use crate::tui::effect::Call;
use crate::tui::jobs;
use crate::tui::modal::Modal;
use crate::tui::panes::PaneId;
use crate::tui::panes::log::LogPane;
use crate::tui::panes::timelines::TimelinesPane;
use crate::tui::panes::wizard::Wizard;
use crate::tui::picture::Picture;

impl App {
    /// Runs `call` in the background; its answer comes back as [`Msg::Done`] in `slot`.
    pub(super) fn spawn<F>(&mut self, slot: Slot, call: F)
    where
        F: Future<Output = Result<Reply, ServiceError>> + Send + 'static,
    {
        self.requests.spawn(slot, call);
    }

    /// Runs `job` in the background in `slot`, its answer put in the message by `reply`.
    fn fetch<T, F>(&mut self, slot: Slot, job: F, reply: fn(T) -> Reply)
    where
        F: Future<Output = Result<T, ServiceError>> + Send + 'static,
        T: Send + 'static,
    {
        self.spawn(slot, async move { job.await.map(reply) });
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
        if polled && !self.panes.monitor.frozen && (force || !self.pending(Slot::Monitor)) {
            self.request_monitor();
        }
        if self.panes.lower == PaneId::Log && (force || !self.pending(Slot::Log)) {
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
        self.fetch(
            Slot::Whoami,
            async move { svc.whoami().await },
            Reply::Whoami,
        );
    }

    /// Fetches what the timelines pane lists.
    pub(super) fn request_timelines(&mut self) {
        let job = TimelinesPane::fetch(Arc::clone(&self.service));
        self.fetch(Slot::Timelines, job, |(list, rights)| {
            Reply::Timelines(list, rights)
        });
    }

    /// Scans the watched timeline for anomalies.
    pub(super) fn request_monitor(&mut self) {
        if let Some(job) = self.panes.monitor.fetch(Arc::clone(&self.service)) {
            self.fetch(Slot::Monitor, job, Reply::Monitor);
        }
    }

    /// Fetches the automation log.
    pub(super) fn request_log(&mut self) {
        let job = LogPane::fetch(Arc::clone(&self.service));
        self.fetch(Slot::Log, job, Reply::Log);
    }

    /// Searches the selected timeline with the inputs as they are.
    pub(super) fn request_search(&mut self) {
        let timeline = self
            .panes
            .timelines
            .selected()
            .map(|t| t.id.clone())
            .unwrap_or_else(TimelineId::primary);
        match self.panes.search.fetch(timeline, Arc::clone(&self.service)) {
            Ok(job) => self.fetch(Slot::Search, job, Reply::Search),
            Err(why) => self.flash_error(why),
        }
    }

    /// Looks up the causes the detail of the selected event names, if any are missing.
    pub(super) fn request_causes(&mut self) {
        if let Some(job) = self.panes.search.fetch_causes(Arc::clone(&self.service)) {
            self.fetch(Slot::Causes, job, Reply::Causes);
        }
    }

    /// Asks for your anchors and items (the wizard's lists; the delete question's anchors).
    pub(super) fn request_wizard_data(&mut self) {
        let job = Wizard::fetch_data(Arc::clone(&self.service));
        self.fetch(Slot::WizardData, job, |(anchors, items)| {
            Reply::WizardData { anchors, items }
        });
    }

    /// Fetches the rows of the anchors list, if it is open.
    pub(super) fn request_anchors(&mut self) {
        let svc = Arc::clone(&self.service);
        if let Some(Modal::Anchors(list)) = &mut self.modal {
            let job = list.fetch(svc);
            self.fetch(Slot::Anchors, job, Reply::Anchors);
        }
    }

    /// Fetches what the picture of `timeline` shows.
    pub(super) fn request_picture(&mut self, timeline: TimelineId) {
        let job = Picture::fetch(timeline.clone(), Arc::clone(&self.service));
        self.spawn(Slot::Picture, async move {
            let (events, anchors) = job.await?;
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
        let refused = self.rights().refused_call(&call);
        if let Some(why) = refused {
            return self.refuse_unsent(why);
        }
        match call {
            // The list shows it is loading; its rows are checked one by one.
            Call::CheckAnchors => self.request_anchors(),
            call => {
                if let Call::Checked(change) = &call {
                    self.checking = Some(change.clone());
                }
                if let Some((slot, job)) = jobs::job(call, Arc::clone(&self.service)) {
                    self.spawn(slot, job);
                }
            }
        }
    }
}

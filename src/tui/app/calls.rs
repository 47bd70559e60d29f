//! Sending the background calls (through the [`Requests`](crate::tui::requests::Requests)
//! store, answering on the queue as [`Msg::Done`]): what the tick keeps fresh, what each pane
//! fetches (the pane says what), and the [`Call`]s components answer with.

use std::sync::Arc;

use super::App;
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
        self.requests.fetch(
            Slot::Whoami,
            async move { svc.whoami().await },
            Reply::Whoami,
        );
    }

    /// Fetches what the timelines pane lists.
    pub(super) fn request_timelines(&mut self) {
        let job = TimelinesPane::fetch(Arc::clone(&self.service));
        self.requests.fetch(Slot::Timelines, job, |(list, rights)| {
            Reply::Timelines(list, rights)
        });
    }

    /// Scans the watched timeline for anomalies.
    pub(super) fn request_monitor(&mut self) {
        if let Some(job) = self.panes.monitor.fetch(Arc::clone(&self.service)) {
            self.requests.fetch(Slot::Monitor, job, Reply::Monitor);
        }
    }

    /// Fetches the automation log.
    pub(super) fn request_log(&mut self) {
        let job = LogPane::fetch(Arc::clone(&self.service));
        self.requests.fetch(Slot::Log, job, Reply::Log);
    }

    /// Searches the selected timeline with the inputs as they are.
    pub(super) fn request_search(&mut self) {
        let timeline = self
            .panes
            .timelines
            .selected()
            .map(|t| t.id.clone())
            .unwrap_or_else(TimelineId::primary);
        let svc = Arc::clone(&self.service);
        self.panes
            .search
            .send_search(timeline, svc, &mut self.requests);
    }

    /// Looks up the causes the detail of the selected event names, if any are missing.
    pub(super) fn request_causes(&mut self) {
        let svc = Arc::clone(&self.service);
        self.panes.search.send_causes(svc, &mut self.requests);
    }

    /// Asks for your anchors and items (the wizard's lists; the delete question's anchors).
    pub(super) fn request_wizard_data(&mut self) {
        let job = Wizard::fetch_data(Arc::clone(&self.service));
        self.requests
            .fetch(Slot::WizardData, job, |(anchors, items)| {
                Reply::WizardData { anchors, items }
            });
    }

    /// Fetches the rows of the anchors list, if it is open.
    pub(super) fn request_anchors(&mut self) {
        let svc = Arc::clone(&self.service);
        if let Some(Modal::Anchors(list)) = &mut self.modal {
            let job = list.fetch(svc);
            self.requests.fetch(Slot::Anchors, job, Reply::Anchors);
        }
    }

    /// Fetches the picture's data again if it is open (something it shows has changed).
    pub(super) fn refresh_picture(&mut self) {
        if let Some(Modal::Picture(p)) = &self.modal {
            let job = Picture::fetch(p.timeline.clone(), Arc::clone(&self.service));
            self.requests.spawn(Slot::Picture, job);
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
                let checked = call.checked().cloned();
                let Some((slot, job)) = jobs::job(call, Arc::clone(&self.service)) else {
                    return;
                };
                // A change is not sent into what the header says is gone.
                if let Some(why) = self.connection.unsent().filter(|_| slot == Slot::Mutation) {
                    return self.refuse_unsent(why);
                }
                self.checking = checked;
                self.requests.spawn(slot, job);
            }
        }
    }
}

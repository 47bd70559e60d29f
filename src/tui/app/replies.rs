//! The answers: what a finished background call does to the connection, the panes and the
//! modal on top. A refusal stays under the form that asked; a safety check's refusal asks
//! whether to apply the change anyway; any other error becomes a flash.

use super::{App, Connection};
use crate::error::ServiceError;
use crate::model::{AnchorStatus, TimelineId};
use crate::service::{ClockState, RestrictionLevel};
use crate::tui::action::{Action, Reply, Slot};
use crate::tui::confirm::{Checked, Confirm};
use crate::tui::forms::conditions_text;
use crate::tui::modal::Modal;
use crate::tui::time_controls::spoken;
use crate::tui::widgets::fmt_time;

impl App {
    /// The answer of a call that is still the newest of its `slot`.
    pub(super) fn on_answer(&mut self, slot: Slot, result: Result<Reply, ServiceError>) {
        self.connection_after(&result);
        let pending_form =
            slot == Slot::Mutation && self.modal.as_ref().is_some_and(Modal::pending_form);
        let checked = if slot == Slot::Mutation {
            self.checking.take()
        } else {
            None
        };
        match result {
            // The safety check found paradoxes: say which and ask before applying anyway.
            // The merge wizard asks itself, with the paradoxes in its last step.
            // Only the wizard that sent it (one closed meanwhile and opened again is another).
            Err(e @ ServiceError::ParadoxDetected { .. })
                if matches!(checked, Some(Checked::Merge(_) | Checked::Resolve(_)))
                    && matches!(&self.modal, Some(Modal::Merge(w)) if w.waiting()) =>
            {
                if let (Some(Modal::Merge(w)), Some(change)) = (&mut self.modal, checked) {
                    w.paradox(change, e.explain());
                }
            }
            Err(e @ ServiceError::ParadoxDetected { .. }) if checked.is_some() => {
                let form = match self.modal.take() {
                    Some(Modal::Form(mut form)) if pending_form => {
                        form.pending = false;
                        Some(form)
                    }
                    other => {
                        self.modal = other;
                        None
                    }
                };
                match checked {
                    Some(change) if self.modal.is_none() => {
                        self.modal = Some(Modal::Confirm(Confirm::ApplyAnyway {
                            change,
                            why: e.explain(),
                            form,
                        }));
                    }
                    // Something else is on screen now: say it, don't ask over it.
                    _ => self.on_error(slot, e),
                }
            }
            Ok(reply) => {
                // What the user asked for worked: an error left by an earlier attempt is stale.
                if !slot.is_background() && self.flash.as_ref().is_some_and(|f| f.error) {
                    self.flash = None;
                }
                if pending_form {
                    self.modal = self.modal.take().and_then(Modal::answered);
                }
                self.on_reply(reply)
            }
            // Refused: the form stays as it was typed, with the reason under it.
            Err(e) if pending_form && !matches!(e, ServiceError::Unavailable(_)) => {
                if let Some(modal) = &mut self.modal {
                    let field = match &e {
                        ServiceError::InvalidInput { field, .. } => Some(field.as_str()),
                        _ => None,
                    };
                    modal.refused(Some(e.explain()), field);
                }
            }
            Err(e) => {
                if pending_form && let Some(modal) = &mut self.modal {
                    modal.refused(None, None);
                }
                self.on_error(slot, e)
            }
        }
    }

    /// Causes looked up arrived: the detail names them, and a correct-dissonance question
    /// waiting for them says where the event goes.
    fn causes_arrived(&mut self, causes: Vec<crate::service::EventRecord>) {
        self.search.name_causes(causes);
        if let Some(Modal::Confirm(Confirm::Align(_, event, cause @ None))) = &mut self.modal {
            *cause = self.search.latest_cause(event).map(Box::new);
        }
    }

    /// What an answer says of the connection: the service is gone, refuses the token,
    /// answers only who you are (restricted to `no_access`), or answers.
    fn connection_after(&mut self, result: &Result<Reply, ServiceError>) {
        let next = match result {
            Err(e @ ServiceError::Unavailable(why)) if crate::client::is_lasting(e) => {
                Connection::Unusable(why.clone())
            }
            Err(ServiceError::Unavailable(why)) => Connection::Disconnected(why.clone()),
            Err(ServiceError::Unauthorized(why)) => Connection::TokenRefused(why.clone()),
            Ok(Reply::Whoami(me)) => {
                no_access(me).map_or(Connection::Connected, Connection::Restricted)
            }
            // At no_access only who you are is answered: nothing else lifts it.
            _ if matches!(self.connection, Connection::Restricted(_)) => self.connection.clone(),
            Ok(_) => Connection::Connected,
            // Any other answer is an answer: the server is there.
            Err(_) if self.connection == Connection::Connecting => Connection::Connected,
            Err(_) => return,
        };
        if next == Connection::Connected && self.connection != Connection::Connected {
            match self.connection {
                Connection::Connecting => {}
                Connection::Restricted(_) => self.flash_info("Your restriction was lifted."),
                _ => self.flash_info("Reconnected."),
            }
            // A stream lost meanwhile is opened again now, not after its pause.
            self.reopen_stream();
        } else if next == Connection::Connected && self.follower.unreached() {
            // The server answers: a stream that could not reach it is opened again now (its
            // "connection refused" would otherwise stand beside "connected" until its pause
            // ends).
            self.reopen_stream();
        }
        self.connection = next;
    }

    /// An error the user should see, unless the header already says it; a wizard waiting on
    /// the call stops waiting.
    fn on_error(&mut self, slot: Slot, e: ServiceError) {
        // A screen that shows why itself (a security screen) needs no flash saying it again.
        if let Some(modal) = &mut self.modal
            && modal.call_failed(slot, &e.explain())
        {
            return;
        }
        // The header and its banner already say the service is gone or refuses the token;
        // don't repeat it every tick.
        let said = match e {
            ServiceError::Unavailable(_) | ServiceError::Unauthorized(_) => true,
            ServiceError::TravelRestricted { .. } => {
                matches!(self.connection, Connection::Restricted(_))
            }
            _ => false,
        };
        if slot.is_background() && said {
            return;
        }
        // A timeline we knew is unknown now: deleted elsewhere, which is news, not an error of
        // a request the user made.
        if let ServiceError::UnknownReference { what, id } = &e
            && what == "timeline"
        {
            if self.said_gone.iter().any(|gone| gone.to_string() == *id) {
                return;
            }
            if let Some(t) = self.timelines.all.iter().find(|t| t.id.to_string() == *id) {
                let (id, name) = (t.id.clone(), t.name.clone());
                return self.timeline_gone(id, &name);
            }
        }
        self.flash_error(e.explain());
    }

    /// Says once that the timeline `id` was deleted, and asks for the list again.
    fn timeline_gone(&mut self, id: TimelineId, name: &str) {
        if self.said_gone.insert(id) {
            self.flash_info(format!("Timeline '{name}' was deleted."));
        }
        if !self.pending(Slot::Timelines) {
            self.request_timelines();
        }
    }

    /// A successful answer, put where it belongs.
    fn on_reply(&mut self, reply: Reply) {
        match reply {
            Reply::Whoami(status) => {
                self.timelines.me = Some(status.traveller.clone());
                self.whoami = Some(status);
                self.last_refresh = Some(self.now());
            }
            Reply::Timelines(list, rights) => {
                if let Some(rights) = rights {
                    self.timelines.set_rights(rights);
                }
                let first = !self.timelines.loaded;
                let searched = self
                    .search
                    .timeline
                    .as_ref()
                    .map(|id| (id.clone(), self.timelines.name_of(id)));
                let pictured = match &self.modal {
                    Some(Modal::Picture(p)) => {
                        Some((p.timeline.clone(), self.timelines.name_of(&p.timeline)))
                    }
                    _ => None,
                };
                self.timelines.set(list);
                // A deleted timeline's results would offer events that are gone: the search
                // moves to the timeline selected now, and says why.
                let mut search_again = false;
                if let Some((gone, name)) = searched
                    && self.timelines.get(&gone).is_none()
                {
                    search_again = self.search.searched;
                    self.search.forget();
                    if self.said_gone.insert(gone) {
                        self.flash_info(format!("Timeline '{name}' was deleted."));
                    }
                }
                // The picture of a deleted timeline would show events that are gone: closed.
                if let Some((gone, name)) = pictured
                    && self.timelines.get(&gone).is_none()
                {
                    self.modal = None;
                    if self.said_gone.insert(gone) {
                        self.flash_info(format!("Timeline '{name}' was deleted."));
                    }
                }
                if let Some(id) = self.select_after_refresh.take() {
                    self.timelines.select(&id);
                } else if first
                    && let Some(here) = self.whoami.as_ref().map(|w| w.timeline_id.clone())
                {
                    self.timelines.select(&here);
                }
                self.selection_changed();
                if search_again && !self.pending(Slot::Search) {
                    self.request_search();
                }
            }
            Reply::Search(results) => {
                self.search.set_results(results);
                // Marked from what the monitor knows now: with changes pushed, the next monitor
                // report may be a long way off.
                if self.monitor.timeline.is_some() && self.monitor.timeline == self.search.timeline
                {
                    let report = self.monitor.open_report(self.now());
                    self.search.mark_troubled(&report);
                }
            }
            Reply::Causes(causes) => self.causes_arrived(causes),
            Reply::Monitor(report) => {
                self.search.mark_troubled(&report);
                if self.monitor.timeline.as_ref() == Some(&report.timeline_id) {
                    self.monitor.apply(report);
                }
            }
            Reply::Log(entries) => self.log.set(entries),
            Reply::WizardData { anchors, items } => {
                let now = self.now();
                let preselect = self.timelines.selected().map(|t| t.id.clone());
                match &mut self.modal {
                    Some(Modal::Wizard(w)) => {
                        w.set_data(&self.timelines.all, anchors, items, now, preselect.as_ref())
                    }
                    Some(Modal::Confirm(Confirm::DeleteTimeline(id, _, named @ None))) => {
                        *named = Some(
                            anchors
                                .iter()
                                .filter(|a| &a.timeline == id && a.status == AnchorStatus::Active)
                                .map(|a| a.named())
                                .collect(),
                        );
                    }
                    _ => {}
                }
            }
            Reply::WizardCheck(report) => {
                if let Some(Modal::Wizard(w)) = &mut self.modal {
                    w.checked(report);
                }
            }
            Reply::Journey(journey) => {
                let to = self.timelines.name_of(&journey.to_timeline);
                let place = journey
                    .location
                    .as_ref()
                    .map(|l| format!(", in {l}"))
                    .unwrap_or_default();
                self.flash_info(format!(
                    "Arrived in {to} at {}{place}.",
                    fmt_time(&journey.arrival_time)
                ));
                if let Some(Modal::Wizard(w)) = &mut self.modal {
                    w.arrived(journey);
                }
                self.refresh(true);
            }
            Reply::Created(t) => {
                self.flash_info(format!("Created timeline {} ({}).", t.name, t.id));
                self.select_after_refresh = Some(t.id);
                self.request_timelines();
            }
            Reply::Deleted(id, name) => {
                self.said_gone.insert(id);
                self.flash_info(format!("Deleted timeline {name}."));
                self.request_timelines();
            }
            Reply::EventAdded(e) => {
                self.flash_info(format!("Added event {} ({}).", e.description, e.event_id));
                self.after_event_change();
            }
            Reply::Manipulated(r) => {
                self.flash_info(format!(
                    "Manipulated: '{}' now happens at {}.",
                    r.description,
                    fmt_time(&r.time)
                ));
                self.after_event_change();
            }
            Reply::Reverted(r) => {
                self.flash_info(format!(
                    "Reverted {}; {} stands again.",
                    r.reverted_event_id, r.original_event_id
                ));
                self.after_event_change();
            }
            Reply::AnchorSet(a) => self.flash_info(format!(
                "Anchor {} set at {}.",
                a.description
                    .as_ref()
                    .map_or_else(|| a.id.to_string(), |d| format!("'{d}'")),
                fmt_time(&a.timestamp)
            )),
            Reply::ItemRegistered(i) => {
                self.flash_info(format!("Registered {} ({}).", i.description, i.id))
            }
            Reply::Checked(report) => self.modal = Some(Modal::Report(report, 0)),
            Reply::Journeys(journeys) => self.modal = Some(Modal::Journeys(journeys, 0)),
            Reply::Picture {
                timeline,
                events,
                anchors,
            } => {
                if let Some(Modal::Picture(p)) = &mut self.modal {
                    p.show(&timeline, events, anchors);
                }
            }
            Reply::Clock(state) => self.on_clock(state),
            Reply::Shifted {
                journey,
                forward,
                duration,
            } => {
                let verb = if forward { "Fast-forwarded" } else { "Rewound" };
                let mut text = format!(
                    "{verb} {}: you are in {} at {}",
                    spoken(&duration),
                    self.timelines.name_of(&journey.to_timeline),
                    fmt_time(&journey.arrival_time)
                );
                if self.whoami.as_ref().is_some_and(|w| w.position.paused) {
                    text.push_str(", your clock still paused");
                }
                text.push('.');
                if !journey.items_left.is_empty() {
                    let n = journey.items_left.len();
                    text.push_str(&format!(
                        " {n} item{} stayed behind (see J).",
                        if n == 1 { "" } else { "s" }
                    ));
                }
                self.flash_info(text);
                self.refresh(true);
                self.refresh_picture();
            }
            Reply::Anchors(rows) => {
                if let Some(Modal::Anchors(list)) = &mut self.modal {
                    list.show(rows);
                }
            }
            Reply::AnchorAdjusted(anchor) => {
                let name = anchor
                    .description
                    .as_ref()
                    .map_or_else(|| anchor.id.to_string(), |d| format!("'{d}'"));
                let now = anchor
                    .details
                    .environment
                    .as_ref()
                    .filter(|e| !e.is_empty())
                    .map_or_else(|| "nothing".to_owned(), conditions_text);
                self.flash_info(format!("Anchor {name} now records {now}."));
                self.request_anchors();
            }
            Reply::AnchorDeleted(id, name) => {
                self.flash_info(format!("Deleted anchor {name} ({id})."));
                self.request_anchors();
            }
            Reply::Isolated(isolation) => {
                let members = isolation.members.len();
                let contained = isolation.contained.len();
                let mut text = format!(
                    "Isolated {members} event{} ({}); {contained} paradox{} contained",
                    if members == 1 { "" } else { "s" },
                    isolation.isolation_id,
                    if contained == 1 { "" } else { "es" }
                );
                // What the timeline's ⚠ still counts, and why isolating did not clear it.
                if !isolation.left.is_empty() {
                    let left = isolation.left.len();
                    let named: Vec<String> = isolation
                        .left
                        .iter()
                        .map(|p| self.paradox_in_short(p))
                        .collect();
                    text.push_str(&format!(
                        "; {left} paradox{} left inside the isolation: {} — {}",
                        if left == 1 { "" } else { "es" },
                        named.join("; "),
                        if members > 1 {
                            "order among its members still counts, and no move puts a loop in \
                             order, so it stays while the loop does"
                        } else {
                            "an isolation stops only what crosses its edge"
                        }
                    ));
                }
                text.push('.');
                self.flash_info(text);
                self.after_event_change();
            }
            Reply::Aligned(result, description) => {
                let text = match result.moves.as_slice() {
                    [] => format!("Nothing to align: '{description}' happens after its causes."),
                    [one] => format!(
                        "Aligned: '{description}' moved from {} to {}.",
                        fmt_time(&one.from),
                        fmt_time(&one.to)
                    ),
                    moves => format!("Aligned: {} events moved.", moves.len()),
                };
                self.flash_info(text);
                self.after_event_change();
            }
            Reply::Review(review) => {
                if let Some(Modal::Merge(w)) = &mut self.modal {
                    w.show_review(review);
                }
            }
            Reply::Resolved(result) => {
                let done = result.merge_status == "merged";
                self.flash_info(if done {
                    format!(
                        "Resolved {}: merge {}{}, is complete.",
                        result.resolved_event_id,
                        result.merge_id,
                        crate::tui::merge::completed_by(&result)
                    )
                } else {
                    format!(
                        "Resolved {}; {} conflict{} still open.",
                        result.resolved_event_id,
                        result.remaining_conflicts,
                        if result.remaining_conflicts == 1 {
                            ""
                        } else {
                            "s"
                        }
                    )
                });
                let mut again = None;
                if let Some(Modal::Merge(w)) = &mut self.modal
                    && w.waiting()
                {
                    w.resolved(&result);
                    again = w.review_query();
                }
                if let Some(query) = again {
                    self.call(crate::tui::effect::Call::Review(query));
                }
                if done {
                    self.after_event_change();
                } else {
                    self.request_timelines();
                }
            }
            Reply::Diff(diff) => {
                if let Some(Modal::Merge(w)) = &mut self.modal {
                    w.show_diff(diff);
                }
            }
            Reply::AccessControl(view) => {
                if let Some(Modal::Access(screen)) = &mut self.modal
                    && screen.timeline == view.timeline_id
                {
                    screen.show(view);
                }
            }
            Reply::AccessSet(set) => {
                let name = self.timelines.name_of(&set.timeline_id);
                self.flash_info(match &set.access_control {
                    Some(_) => format!("Access to {name} changed."),
                    None => format!("{name} has no access-control list now."),
                });
                let mut again = None;
                if let Some(Modal::Access(screen)) = &mut self.modal
                    && screen.timeline == set.timeline_id
                {
                    screen.changed(&set);
                    again = Some(screen.fetch());
                }
                if let Some(call) = again {
                    self.call(call);
                }
                // Your rights (the read-only marks) may have changed with it.
                self.request_timelines();
            }
            Reply::AccessLog(log) => {
                if let Some(Modal::Access(screen)) = &mut self.modal {
                    screen.show_log(log);
                }
            }
            Reply::Restrictions(rows) => {
                if let Some(Modal::Restrictions(screen)) = &mut self.modal {
                    screen.show(rows);
                }
            }
            Reply::Restricted(r) => {
                let who = &r.restriction.user_id;
                self.flash_info(if r.restriction.level == RestrictionLevel::Unrestricted {
                    format!("{who} is not restricted now.")
                } else {
                    format!(
                        "{who} is restricted to {}: they may do {}.",
                        r.restriction.level.as_str(),
                        r.restriction.level.allows_them()
                    )
                });
                if matches!(self.modal, Some(Modal::Restrictions(_))) {
                    self.call(crate::tui::effect::Call::Restrictions);
                }
                self.request_whoami();
            }
            Reply::Tamper(report) => {
                if let Some(Modal::Integrity(screen)) = &mut self.modal
                    && screen.running.is_some()
                {
                    screen.scanned(report);
                }
            }
            Reply::Integrity(report) => {
                if let Some(Modal::Integrity(screen)) = &mut self.modal
                    && screen.running.is_some()
                {
                    screen.validated(report);
                }
            }
            Reply::Merged(result) => {
                let into = self.timelines.name_of(&result.merged_timeline_id);
                self.flash_info(match result.status.as_str() {
                    "up_to_date" => format!("{into} is up to date: nothing was written."),
                    "pending_review" => format!(
                        "The merge into {into} waits for review: {} conflict{} to resolve.",
                        result.conflicts,
                        if result.conflicts == 1 { "" } else { "s" }
                    ),
                    _ => format!(
                        "Merged into {into}: {} event{} written.",
                        result.written.len(),
                        if result.written.len() == 1 { "" } else { "s" }
                    ),
                });
                if let Some(Modal::Merge(w)) = &mut self.modal
                    && w.waiting()
                {
                    w.merged(result);
                }
                self.after_event_change();
            }
        }
    }

    /// The clock was paused or resumed (or already was): the header says so at once, and
    /// where the service puts you is asked again.
    fn on_clock(&mut self, state: ClockState) {
        let key = self.keymap.key_for(Action::PauseResume);
        let at = fmt_time(&state.time);
        let text = match state.status.as_str() {
            "paused" => format!(
                "Your clock is paused at {at}: your time stands still, the world goes on. \
                 Press {key} to resume."
            ),
            "already_paused" => format!("Your clock was already paused at {at}."),
            "resumed" => format!("Your clock runs again, on from {at}."),
            _ => format!("Your clock was not paused; it runs on from {at}."),
        };
        if let Some(w) = &mut self.whoami {
            w.timeline_id = state.position.timeline.clone();
            w.time = state.time;
            w.position = state.position;
        }
        self.flash_info(text);
        self.request_whoami();
    }

    /// An event changed: what shows events is asked again.
    fn after_event_change(&mut self) {
        if self.search.searched {
            self.request_search();
        }
        self.request_monitor();
        self.request_timelines();
        self.refresh_picture();
    }
}

/// Why you see nothing new, when an operator restricted you to `no_access` (operators are
/// never restricted).
fn no_access(me: &crate::service::TravellerStatus) -> Option<String> {
    let r = me.restriction.as_ref().filter(|_| !me.operator)?;
    (r.level == RestrictionLevel::NoAccess).then(|| {
        format!(
            "An operator ({}) restricted you to no_access at {}: the service answers nothing but \
             who you are",
            r.set_by,
            fmt_time(&r.at)
        )
    })
}

impl App {
    /// A paradox in few words: an effect before its cause by the events' descriptions (as the
    /// search shows them, shortened), anything else in the checker's words.
    fn paradox_in_short(&self, p: &crate::paradox::Paradox) -> String {
        use crate::paradox::ParadoxKind;
        let name = |id: &crate::model::EventId| {
            self.search
                .results
                .iter()
                .find(|e| &e.event_id == id)
                .map_or_else(
                    || id.to_string(),
                    |e| format!("'{}'", crate::tui::widgets::ellipsize(&e.description, 44)),
                )
        };
        match (p.kind, p.events.as_slice()) {
            (ParadoxKind::CausalOrder | ParadoxKind::Grandfather, [effect, cause]) => {
                format!("{} before its cause {}", name(effect), name(cause))
            }
            _ => p.description.trim_end_matches('.').to_owned(),
        }
    }
}

//! Drawing a frame: the chrome's layout, each pane with what it needs to know, the footer, and
//! the modal on top.

use ratatui::Frame;

use super::App;
use crate::tui::action::{Action, Slot};
use crate::tui::chrome::{self, Header};
use crate::tui::modal::Modal;
use crate::tui::panes::{Ctx, PaneId};

impl App {
    /// Draws the whole screen.
    pub fn draw(&mut self, frame: &mut Frame<'_>) {
        let command_line = matches!(self.modal, Some(Modal::Command(_)));
        let banner = self.connection.banner();
        let screen = chrome::layout(
            frame.area(),
            self.flash.as_ref(),
            command_line,
            banner.as_deref(),
        );
        self.areas = screen.panes;
        let here_name = self
            .whoami
            .as_ref()
            .map(|w| (w, self.timelines.name_of(&w.timeline_id)));
        Header {
            palette: &self.palette,
            source: &self.source,
            connection: &self.connection,
            link: &self.follower.link,
            whoami: here_name,
            last_refresh: self.last_refresh.as_ref(),
            spinner: self.busy().then_some(self.spinner),
        }
        .render(frame, screen.header);
        let p = self.palette;
        if let Some(banner) = &banner {
            chrome::render_banner(frame, screen.banner, banner, &p);
        }
        let now = self.now();
        let here = self.whoami.as_ref().map(|w| w.timeline_id.clone());
        let offline = self.connection.offline();
        let ctx = |focused: bool, pending: bool| Ctx {
            palette: &p,
            now,
            focused,
            here: here.as_ref(),
            pending,
            offline,
        };
        let c = ctx(
            self.focus == PaneId::Timelines,
            self.pending(Slot::Timelines) && !self.timelines.loaded,
        );
        self.timelines.render(frame, screen.panes.timelines, &c);
        let search_name = self
            .search
            .timeline
            .clone()
            .or_else(|| self.timelines.selected().map(|t| t.id.clone()))
            .map(|id| self.timelines.name_of(&id))
            .unwrap_or_else(|| "primary".into());
        let c = ctx(self.focus == PaneId::Search, self.pending(Slot::Search));
        self.search
            .render(frame, screen.panes.search, &c, &search_name);
        match self.lower {
            PaneId::Log => {
                let c = ctx(self.focus == PaneId::Log, self.pending(Slot::Log));
                self.log.render(frame, screen.panes.lower, &c);
            }
            _ => {
                let name = self
                    .monitor
                    .timeline
                    .as_ref()
                    .map(|id| self.timelines.name_of(id))
                    .unwrap_or_default();
                let c = ctx(
                    self.focus == PaneId::Monitor,
                    self.pending(Slot::Monitor) && self.monitor.status.is_none(),
                );
                self.monitor.render(frame, screen.panes.lower, &c, &name);
            }
        }
        // The footer: the command line while it is open, else the flash or the key hints of
        // where the keys go.
        if let Some(Modal::Command(line)) = &mut self.modal {
            line.render(frame, screen.footer, self.flash.as_ref(), &p);
        } else {
            let hints = if matches!(self.modal, Some(Modal::Picture(_))) {
                chrome::picture_hints()
            } else if self.timelines.filter_input.is_some() || self.search.editing.is_some() {
                chrome::input_hints()
            } else {
                self.keymap.hints(self.context())
            };
            let whole = self.keymap.key_for(Action::LastMessage);
            let flash = self.flash.as_ref();
            chrome::render_footer(frame, screen.footer, flash, hints, &whole, &p);
        }
        if let Some(mut modal) = self.modal.take() {
            modal.render(frame, screen.body, &self.around());
            self.modal = Some(modal);
        }
    }
}

//! Drawing a frame: the chrome's layout, each pane with what it needs to know, the footer, and
//! the modal on top.

use ratatui::Frame;

use super::App;
use crate::tui::action::{Action, Slot};
use crate::tui::chrome::{self, Header};
use crate::tui::modal::Modal;
use crate::tui::panes::{Busy, Ctx};

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
            .map(|w| (w, self.panes.timelines.name_of(&w.timeline_id)));
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
        let here = self.whoami.as_ref().map(|w| w.timeline_id.clone());
        let ctx = Ctx {
            palette: &p,
            now: self.now(),
            focused: false,
            here: here.as_ref(),
            pending: false,
            offline: self.connection.offline(),
        };
        let busy = Busy {
            timelines: self.pending(Slot::Timelines),
            search: self.pending(Slot::Search),
            monitor: self.pending(Slot::Monitor),
            log: self.pending(Slot::Log),
        };
        let places = [
            screen.panes.timelines,
            screen.panes.search,
            screen.panes.lower,
        ];
        self.panes.render(frame, places, ctx, busy);
        // The footer: the command line while it is open, else the flash or the key hints of
        // where the keys go.
        if let Some(Modal::Command(line)) = &mut self.modal {
            line.render(frame, screen.footer, self.flash.as_ref(), &p);
        } else {
            let hints = if matches!(self.modal, Some(Modal::Picture(_))) {
                chrome::picture_hints()
            } else if self.panes.timelines.filter_input.is_some()
                || self.panes.search.editing.is_some()
            {
                chrome::input_hints()
            } else {
                let rights = self.rights();
                self.keymap
                    .hints_where(self.context(), |a| rights.refused_action(a).is_none())
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

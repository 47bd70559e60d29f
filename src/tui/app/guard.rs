//! Refusing before sending, with the reasons [`Rights`] gives: a form or wizard waiting for
//! the change shows the reason, and the footer says it.

use super::App;
use crate::tui::security::rights::Rights;

impl App {
    /// What the dashboard knows of your rights.
    pub(super) fn rights(&self) -> Rights<'_> {
        Rights {
            whoami: self.whoami.as_ref(),
            timelines: &self.panes.timelines,
        }
    }

    /// Refuses a change without sending it: a form or wizard waiting for it shows `why` and
    /// stops waiting, and the footer says it.
    pub(super) fn refuse_unsent(&mut self, why: String) {
        if let Some(modal) = &mut self.modal
            && modal.pending_form()
        {
            modal.refused(Some(why.clone()), None);
        }
        self.flash_error(why);
    }
}

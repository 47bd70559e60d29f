//! Automation: scripts, scheduled and externally triggered manipulations, the automation log.

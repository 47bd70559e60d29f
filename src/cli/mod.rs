//! The command line: flags shared by every subcommand, and the scriptable subcommands.

//! `chronoscope access …`: who may read, write and administer a timeline, and the restrictions
//! operators put on travellers (guide operations §5.1–5.2).

use std::fmt::Write as _;

use clap::{Subcommand, ValueEnum};

use super::PageArgs;
use super::output::human::format_instant;
use super::output::{Output, human};
use crate::error::ServiceError;
use crate::model::Traveller;
use crate::service::*;

/// `access …`.
#[derive(Debug, Subcommand)]
pub enum AccessCommand {
    /// Show a timeline's access-control list and your right on it
    Show {
        /// Timeline id
        timeline: String,
    },
    /// List the timelines you may see that have an access-control list, with your right
    List(PageArgs),
    /// Set a timeline's lists (replacing them): names are token subjects; admin gives write
    /// and read, write gives read. Needs the admin right on the timeline
    Set {
        /// Timeline id
        timeline: String,
        /// Who may read (comma-separated names; the flag may repeat)
        #[arg(long, value_delimiter = ',')]
        read: Vec<String>,
        /// Who may read and write
        #[arg(long, value_delimiter = ',')]
        write: Vec<String>,
        /// Who may read, write and administer (a non-operator must keep their own name here)
        #[arg(long, value_delimiter = ',')]
        admin: Vec<String>,
    },
    /// Remove a timeline's lists: every traveller may read and write it again
    Remove {
        /// Timeline id
        timeline: String,
    },
    /// Restrict a traveller, or lift their restriction (operators only)
    Restrict {
        /// The traveller (a token's subject)
        user: String,
        /// How far
        #[arg(value_enum)]
        level: LevelArg,
    },
    /// List the restrictions in force (operators only)
    Restrictions(PageArgs),
    /// Show a timeline's access log: who read, changed, travelled into, administered or was
    /// refused it, per minute (needs the admin right on the timeline)
    Log {
        /// Timeline id
        timeline: String,
        /// Wall-clock times of the accesses: START/END, START/P1D, one date (that whole day)
        /// or a duration alone (PT1H: the last hour); default: the last 24 hours
        #[arg(long, value_parser = super::parse_recent_range)]
        range: Option<crate::model::TimeRange>,
        /// Also the entries that named no timeline (service-wide; operators only)
        #[arg(long)]
        service_wide: bool,
        /// Paging
        #[command(flatten)]
        page: PageArgs,
    },
}

/// `restrict`'s levels; each also as the server, the README and the dashboard write it
/// (`no_access`).
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LevelArg {
    /// Nothing but whoami
    #[value(alias = "no_access")]
    NoAccess,
    /// Reads only: no journey, no change
    #[value(alias = "read_only")]
    ReadOnly,
    /// Reads, returning to their own anchors, pausing and resuming, their anchors and items
    #[value(alias = "limited_access")]
    LimitedAccess,
    /// Lift the restriction
    Unrestricted,
}

impl From<LevelArg> for RestrictionLevel {
    fn from(level: LevelArg) -> Self {
        match level {
            LevelArg::NoAccess => Self::NoAccess,
            LevelArg::ReadOnly => Self::ReadOnly,
            LevelArg::LimitedAccess => Self::LimitedAccess,
            LevelArg::Unrestricted => Self::Unrestricted,
        }
    }
}

/// Names as given on the command line, each checked.
fn names(field: &str, given: Vec<String>) -> Result<Vec<Traveller>, ServiceError> {
    given
        .iter()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .map(|n| {
            n.parse()
                .map_err(|e: crate::model::InvalidValue| ServiceError::invalid(field, e.message))
        })
        .collect()
}

fn page(args: &PageArgs) -> PageRequest {
    PageRequest {
        limit: args.limit,
        cursor: args.cursor.clone(),
    }
}

/// Runs an `access` command.
pub async fn execute(
    command: AccessCommand,
    service: &dyn TimelineService,
    out: &mut Output<'_>,
) -> Result<(), ServiceError> {
    match command {
        AccessCommand::Show { timeline } => {
            let id = timeline.parse()?;
            let view = service.access_control(&id).await?;
            // A branch's list copied from its base when it was made says so (who branched it
            // set nothing); the timeline says whether it is one.
            let made = service.get_timeline(&id).await.ok();
            out.print(&view, |v| shown(v, made.as_ref()))
        }
        AccessCommand::List(args) => {
            let listed = service.list_access_controls(page(&args)).await?;
            out.print(&listed, |p| {
                human::page_table(p, &["TIMELINE", "YOUR RIGHT", "NAMES"], |v| {
                    let p = v.access_control.as_ref().map(|a| &a.permissions);
                    vec![
                        v.timeline_id.to_string(),
                        v.your_right.as_str().to_owned(),
                        p.map_or(0, |p| p.read.len() + p.write.len() + p.admin.len())
                            .to_string(),
                    ]
                })
            })
        }
        AccessCommand::Set {
            timeline,
            read,
            write,
            admin,
        } => {
            let permissions = Permissions {
                read: names("read", read)?,
                write: names("write", write)?,
                admin: names("admin", admin)?,
            };
            if permissions == Permissions::default() {
                return Err(ServiceError::invalid(
                    "permissions",
                    "name at least one traveller with --read, --write or --admin (to open the \
                     timeline to everyone, use `access remove`)",
                ));
            }
            let set = service
                .set_access_control(SetAccessControlRequest {
                    timeline_id: timeline.parse()?,
                    permissions: Some(permissions),
                })
                .await?;
            out.print(&set, set_text)
        }
        AccessCommand::Remove { timeline } => {
            let set = service
                .set_access_control(SetAccessControlRequest {
                    timeline_id: timeline.parse()?,
                    permissions: None,
                })
                .await?;
            out.print(&set, set_text)
        }
        AccessCommand::Restrict { user, level } => {
            let done = service
                .restrict_time_travel(RestrictRequest {
                    user_id: user.parse().map_err(|e: crate::model::InvalidValue| {
                        ServiceError::invalid("user", e.message)
                    })?,
                    restriction_level: level.into(),
                })
                .await?;
            out.print(&done, |r| {
                let level = r.restriction.level;
                if level == RestrictionLevel::Unrestricted {
                    format!("{} is no longer restricted\n", r.restriction.user_id)
                } else {
                    format!(
                        "{} is restricted to {}: they may do {}\n",
                        r.restriction.user_id,
                        level.as_str(),
                        level.allows_them()
                    )
                }
            })
        }
        AccessCommand::Restrictions(args) => {
            let listed = service.list_restrictions(page(&args)).await?;
            out.print(&listed, |p| {
                human::page_table(p, &["TRAVELLER", "LEVEL", "SET BY", "AT"], |r| {
                    vec![
                        r.user_id.to_string(),
                        r.level.as_str().to_owned(),
                        r.set_by.to_string(),
                        format_instant(&r.at),
                    ]
                })
            })
        }
        AccessCommand::Log {
            timeline,
            range,
            service_wide,
            page: args,
        } => {
            let log = service
                .access_logs(AccessLogQuery {
                    timeline_id: timeline.parse()?,
                    time_range: range,
                    page: page(&args),
                    service_wide,
                })
                .await?;
            out.print(&log, log_text)
        }
    }
}

/// An action as the API writes it, a refusal in capitals so it stands out.
fn action_word(action: AccessAction) -> &'static str {
    match action {
        AccessAction::Read => "read",
        AccessAction::Write => "write",
        AccessAction::Travel => "travel",
        AccessAction::Admin => "admin",
        AccessAction::UnauthorizedAccessAttempt => "UNAUTHORIZED_ACCESS_ATTEMPT",
    }
}

/// An access log as a table, refusals marked, counts not yet durable starred.
fn log_text(log: &AccessLog) -> String {
    if log.logs.is_empty() {
        let mut s = "no access in that range\n".to_owned();
        if log.dropped > 0 {
            let _ = writeln!(
                s,
                "{} accesses were not counted (too many at once)",
                log.dropped
            );
        }
        return s;
    }
    let rows = log
        .logs
        .iter()
        .map(|e| {
            let refused = e.outcome == "refused";
            let mut count = e.count.to_string();
            if !e.durable {
                count.push('*');
            }
            let mut user = e.user_id.clone();
            if e.scope == "service" {
                user.push_str(" (service)");
            }
            vec![
                e.timestamp.format("%Y-%m-%d %H:%M").to_string(),
                user,
                action_word(e.action).to_owned(),
                e.operation.clone(),
                count,
                if refused {
                    "REFUSED".to_owned()
                } else {
                    e.outcome.clone()
                },
            ]
        })
        .collect();
    let mut s = human::table(
        &[
            "MINUTE (UTC)",
            "USER",
            "ACTION",
            "OPERATION",
            "COUNT",
            "OUTCOME",
        ],
        rows,
    );
    if log.logs.iter().any(|e| !e.durable) {
        s.push_str("* counted by the server, not yet written to the log\n");
    }
    if log.dropped > 0 {
        let _ = writeln!(
            s,
            "{} accesses were not counted (too many at once)",
            log.dropped
        );
    }
    if let Some(cursor) = &log.next_cursor {
        let _ = writeln!(s, "more: --cursor '{cursor}'");
    }
    s
}

/// The lists, one per line.
fn lists(p: &Permissions) -> String {
    let mut s = String::new();
    for (name, list) in [("admin", &p.admin), ("write", &p.write), ("read", &p.read)] {
        let names: Vec<&str> = list.iter().map(Traveller::as_str).collect();
        let shown = if names.is_empty() {
            "-".to_owned()
        } else {
            names.join(", ")
        };
        let _ = writeln!(s, "  {name:<5}  {shown}");
    }
    s
}

/// A list as `access show` prints it; `made` is its timeline, when known, to tell a branch's
/// list copied from its base from one set since.
fn shown(v: &AccessControlView, made: Option<&crate::service::TimelineInfo>) -> String {
    let copied = |acl: &crate::service::AccessControl| {
        let t = made?;
        let by = t.created_by.as_ref()?;
        let parent = t.parent.as_ref()?;
        acl.copied_at_branching(by, &t.created_at).then(|| {
            format!(
                "copied from {parent} when {by} branched it, at {}",
                format_instant(&acl.at)
            )
        })
    };
    let mut s = match &v.access_control {
        None => format!(
            "timeline {} has no access-control list: every traveller may read and write it, {}\n",
            v.timeline_id,
            match made.map(|t| t.created_by.as_ref()) {
                Some(Some(by)) => format!("and its creator, {by}, administers it"),
                Some(None) => "and only operators administer it (nobody created it)".to_owned(),
                None => "and its creator administers it".to_owned(),
            }
        ),
        Some(acl) => format!(
            "timeline {} ({}):\n{}",
            v.timeline_id,
            copied(acl).unwrap_or_else(|| format!(
                "set by {} at {}",
                acl.set_by,
                format_instant(&acl.at)
            )),
            lists(&acl.permissions)
        ),
    };
    let _ = write!(s, "your right: {}", v.your_right.as_str());
    if v.read_only_token {
        s.push_str(" (your token allows reading only)");
    }
    s.push('\n');
    s
}

fn set_text(r: &AccessControlSet) -> String {
    match &r.access_control {
        Some(acl) => format!(
            "access control set on {}:\n{}",
            r.timeline_id,
            lists(&acl.permissions)
        ),
        None => format!(
            "access control removed from {}: every traveller may read and write it\n",
            r.timeline_id
        ),
    }
}

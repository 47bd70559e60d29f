//! `simulate-wormhole`: a journey's dry run (the time difference, and the paradox check of
//! arriving with what one carries). Reads only.

use chrono::{Datelike, Months};

use crate::error::ServiceError;
use crate::model::{Instant, Whereabouts, in_range};
use crate::monitor::WindowPhase;
use crate::paradox::{self, Change};
use crate::service::{Direction, WormholeRequest, WormholeSimulation, WormholeStability};

use super::rules::{self, Ctx};
use super::world::World;

/// Simulates leaving `entry_point` for `exit_point` with what the caller carries.
pub fn simulate(
    world: &World,
    ctx: &Ctx<'_>,
    req: &WormholeRequest,
) -> Result<WormholeSimulation, ServiceError> {
    in_range("entry_point", req.entry_point)?;
    in_range("exit_point", req.exit_point)?;
    let position = world.position_of(ctx.traveller, ctx.now);
    let timeline = req
        .timeline_id
        .clone()
        .unwrap_or_else(|| position.timeline.clone());
    let state = rules::referenced(world, &timeline)?;
    let carried: Vec<_> = world
        .items_of(ctx.traveller)
        .filter(|i| i.whereabouts == Whereabouts::Carried)
        .map(|i| i.id.clone())
        .collect();
    let mut paradoxes = Vec::new();
    let mut refused = None;
    let stability = if !req.stability_check.unwrap_or(true) {
        WormholeStability::NotChecked
    } else if WindowPhase::of(&state.meta, ctx.now) == WindowPhase::Closed {
        refused = Some(format!(
            "timeline {timeline} has closed: the journey would be refused"
        ));
        WormholeStability::Unstable
    } else {
        let items = rules::items_of(world, ctx.traveller);
        let changes: Vec<Change> = carried
            .iter()
            .map(|id| Change::BringItem {
                item: id.clone(),
                time: req.exit_point,
            })
            .collect();
        let subject = rules::subject(ctx, state, &position, &items);
        paradoxes = paradox::check(&subject, &changes)
            .into_iter()
            .filter(|p| p.items.iter().any(|i| carried.contains(i)))
            .collect();
        if paradoxes.is_empty() {
            WormholeStability::Stable
        } else {
            WormholeStability::Unstable
        }
    };
    Ok(WormholeSimulation {
        timeline_id: timeline,
        stability,
        time_difference: calendar_words(req.entry_point, req.exit_point),
        direction: if req.exit_point > req.entry_point {
            Direction::Future
        } else {
            Direction::Past
        },
        items: carried,
        paradoxes,
        refused,
    })
}

/// The time between two instants in calendar words, its two largest units: "100 years",
/// "3 days 4 hours", "0 seconds".
pub fn calendar_words(a: Instant, b: Instant) -> String {
    let (from, to) = if a <= b { (a, b) } else { (b, a) };
    let mut months = (i64::from(to.year()) - i64::from(from.year())) * 12 + i64::from(to.month())
        - i64::from(from.month());
    let add = |m: i64| {
        u32::try_from(m)
            .ok()
            .and_then(|m| from.checked_add_months(Months::new(m)))
    };
    while months > 0 && add(months).is_none_or(|t| t > to) {
        months -= 1;
    }
    let months = months.max(0);
    let rest = to - add(months).unwrap_or(from);
    let units = [
        (months / 12, "year"),
        (months % 12, "month"),
        (rest.num_days(), "day"),
        (rest.num_hours() % 24, "hour"),
        (rest.num_minutes() % 60, "minute"),
        (rest.num_seconds() % 60, "second"),
    ];
    let words: Vec<String> = units
        .iter()
        .filter(|(n, _)| *n > 0)
        .take(2)
        .map(|(n, unit)| format!("{n} {unit}{}", if *n == 1 { "" } else { "s" }))
        .collect();
    if words.is_empty() {
        "0 seconds".to_owned()
    } else {
        words.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::calendar_words;

    fn t(s: &str) -> crate::model::Instant {
        s.parse().expect("a time")
    }

    #[test]
    fn differences_read_as_calendar_words() {
        let cases = [
            ("2024-09-01T00:00:00Z", "1924-09-01T00:00:00Z", "100 years"),
            (
                "2024-09-01T00:00:00Z",
                "2024-09-04T04:00:00Z",
                "3 days 4 hours",
            ),
            (
                "2024-01-31T00:00:00Z",
                "2024-03-01T00:00:00Z",
                "1 month 1 day",
            ),
            ("2024-09-01T00:00:00Z", "2024-09-01T00:00:00Z", "0 seconds"),
            (
                "2024-09-01T00:00:00Z",
                "2025-09-01T00:01:01Z",
                "1 year 1 minute",
            ),
        ];
        for (a, b, words) in cases {
            assert_eq!(calendar_words(t(a), t(b)), words, "{a} → {b}");
        }
    }
}

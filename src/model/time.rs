//! Time types: instants, ISO 8601 intervals and the timeline window.
//!
//! Every instant is UTC inside; input accepts any RFC 3339 offset.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::error::ServiceError;

/// An instant, always UTC. Serialized as RFC 3339 with a `Z`.
pub type Instant = DateTime<Utc>;

/// Parses an RFC 3339 date-time with any offset and converts it to UTC.
pub fn parse_instant(field: &str, s: &str) -> Result<Instant, ServiceError> {
    DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            ServiceError::invalid(
                field,
                format!("'{s}' is not an RFC 3339 date-time like 1889-03-10T23:50:00Z ({e})"),
            )
        })
}

/// Formats an instant the way every response does: RFC 3339, UTC, `Z`.
pub fn format_instant(t: &Instant) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// A closed time interval `[start, end]`, parsed from ISO 8601 `start/end`,
/// `start/duration` or `duration/end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeRange {
    /// First instant inside the range.
    pub start: Instant,
    /// Last instant inside the range.
    pub end: Instant,
}

impl TimeRange {
    /// Parses an interval, naming `field` in the error.
    pub fn parse(field: &str, s: &str) -> Result<Self, ServiceError> {
        let expected = "expected an ISO 8601 interval: start/end, start/duration or duration/end, \
                        e.g. 2025-07-01T00:00:00Z/2025-07-31T23:59:59Z or 2025-07-01T00:00:00Z/P1M";
        let Some((a, b)) = s.trim().split_once('/') else {
            return Err(ServiceError::invalid(field, format!("'{s}': {expected}")));
        };
        let (start, end) = match (a.starts_with('P'), b.starts_with('P')) {
            (false, false) => (parse_instant(field, a)?, parse_instant(field, b)?),
            (false, true) => {
                let start = parse_instant(field, a)?;
                (start, add_iso_duration(field, start, b, 1)?)
            }
            (true, false) => {
                let end = parse_instant(field, b)?;
                (add_iso_duration(field, end, a, -1)?, end)
            }
            (true, true) => {
                return Err(ServiceError::invalid(
                    field,
                    format!("'{s}': two durations give no position in time; {expected}"),
                ));
            }
        };
        // Written end first, it is still the same stretch of time.
        let (start, end) = if end < start {
            (end, start)
        } else {
            (start, end)
        };
        Ok(Self { start, end })
    }

    /// Whether `t` lies inside the range (both ends included).
    pub fn contains(&self, t: &Instant) -> bool {
        self.start <= *t && *t <= self.end
    }
}

impl Serialize for TimeRange {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TimeRange {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        TimeRange::parse("time_range", &text).map_err(serde::de::Error::custom)
    }
}

impl utoipa::PartialSchema for TimeRange {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some(
                "An ISO 8601 interval: start/end, start/duration or duration/end (either way round)",
            ))
            .examples([serde_json::json!(
                "2025-07-01T00:00:00Z/2025-07-31T23:59:59Z"
            )])
            .into()
    }
}

impl utoipa::ToSchema for TimeRange {}

impl fmt::Display for TimeRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}",
            format_instant(&self.start),
            format_instant(&self.end)
        )
    }
}

/// Adds (sign 1) or subtracts (sign -1) an ISO 8601 duration such as `P1Y2M3DT4H5M6S` or `P2W`.
/// Years and months are calendar units, so `P1M` from January 31st lands on the last day of February.
fn add_iso_duration(field: &str, at: Instant, s: &str, sign: i32) -> Result<Instant, ServiceError> {
    let bad = || {
        ServiceError::invalid(
            field,
            format!("'{s}' is not an ISO 8601 duration like P1D, PT12M or P1Y2M3DT4H"),
        )
    };
    let body = s.strip_prefix('P').ok_or_else(bad)?;
    if body.is_empty() {
        return Err(bad());
    }
    let (date_part, time_part) = match body.split_once('T') {
        Some((d, t)) if !t.is_empty() => (d, Some(t)),
        Some(_) => return Err(bad()),
        None => (body, None),
    };
    let mut months: i64 = 0;
    let mut exact = Duration::zero();
    for (part, is_time) in [(date_part, false), (time_part.unwrap_or(""), true)] {
        let mut number = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() {
                number.push(c);
                continue;
            }
            let n: i64 = number.parse().map_err(|_| bad())?;
            number.clear();
            match (is_time, c) {
                (false, 'Y') => months += n.checked_mul(12).ok_or_else(bad)?,
                (false, 'M') => months += n,
                (false, 'W') => exact += Duration::try_weeks(n).ok_or_else(bad)?,
                (false, 'D') => exact += Duration::try_days(n).ok_or_else(bad)?,
                (true, 'H') => exact += Duration::try_hours(n).ok_or_else(bad)?,
                (true, 'M') => exact += Duration::try_minutes(n).ok_or_else(bad)?,
                (true, 'S') => exact += Duration::try_seconds(n).ok_or_else(bad)?,
                _ => return Err(bad()),
            }
        }
        if !number.is_empty() {
            return Err(bad());
        }
    }
    let months = u32::try_from(months).map_err(|_| bad())?;
    let moved = if sign > 0 {
        at.checked_add_months(chrono::Months::new(months))
            .and_then(|t| t.checked_add_signed(exact))
    } else {
        at.checked_sub_months(chrono::Months::new(months))
            .and_then(|t| t.checked_sub_signed(exact))
    };
    moved.ok_or_else(bad)
}

/// How long a timeline stays open to travel into, counted from its creation.
/// Written in words: `12 minutes`, `1 hour 30 minutes`, `unbounded`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Window {
    /// Never closes (the primary timeline).
    Unbounded,
    /// Closes this many seconds after creation.
    Seconds(i64),
}

impl Window {
    /// The length as a duration, `None` when unbounded.
    pub fn duration(&self) -> Option<Duration> {
        match self {
            Window::Unbounded => None,
            Window::Seconds(s) => Some(Duration::seconds(*s)),
        }
    }
}

const WINDOW_UNITS: [(&str, i64); 5] = [
    ("week", 7 * 86_400),
    ("day", 86_400),
    ("hour", 3_600),
    ("minute", 60),
    ("second", 1),
];

impl FromStr for Window {
    type Err = ServiceError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            ServiceError::invalid(
                "window",
                format!(
                    "'{s}' is not a window; write a length in words like '12 minutes', \
                     '1 hour 30 minutes' or 'unbounded'"
                ),
            )
        };
        let text = s.trim().to_ascii_lowercase();
        if text == "unbounded" {
            return Ok(Window::Unbounded);
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.is_empty() || !words.len().is_multiple_of(2) {
            return Err(bad());
        }
        let mut total: i64 = 0;
        for pair in words.chunks(2) {
            let n: i64 = pair[0].parse().map_err(|_| bad())?;
            let unit = pair[1].trim_end_matches(',');
            let unit = unit.strip_suffix('s').unwrap_or(unit);
            let (_, secs) = WINDOW_UNITS
                .iter()
                .find(|(name, _)| *name == unit)
                .ok_or_else(bad)?;
            total = n
                .checked_mul(*secs)
                .and_then(|v| total.checked_add(v))
                .ok_or_else(bad)?;
        }
        if total <= 0 {
            return Err(bad());
        }
        Ok(Window::Seconds(total))
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Window::Seconds(mut left) = *self else {
            return f.write_str("unbounded");
        };
        let mut parts = Vec::new();
        for (name, secs) in WINDOW_UNITS {
            let n = left / secs;
            if n > 0 {
                parts.push(format!("{n} {name}{}", if n == 1 { "" } else { "s" }));
                left -= n * secs;
            }
        }
        f.write_str(&parts.join(" "))
    }
}

impl utoipa::PartialSchema for Window {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some(
                "How long the timeline stays open, in words, or 'unbounded'",
            ))
            .examples([serde_json::json!("12 minutes")])
            .into()
    }
}

impl utoipa::ToSchema for Window {}

impl TryFrom<String> for Window {
    type Error = ServiceError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Window> for String {
    fn from(w: Window) -> String {
        w.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Instant {
        parse_instant("t", s).unwrap()
    }

    #[test]
    fn instants_accept_any_offset_and_print_utc() {
        let at = t("2025-07-15T16:32:00+02:00");
        assert_eq!(format_instant(&at), "2025-07-15T14:32:00Z");
        assert!(parse_instant("time", "yesterday").is_err());
        assert!(parse_instant("time", "2025-02-30T00:00:00Z").is_err());
    }

    #[test]
    fn ranges_take_all_three_iso_forms() {
        let r =
            TimeRange::parse("time_range", "2025-07-01T00:00:00Z/2025-07-31T00:00:00Z").unwrap();
        assert_eq!(r.end, t("2025-07-31T00:00:00Z"));
        let r = TimeRange::parse("time_range", "2025-01-31T00:00:00Z/P1M").unwrap();
        assert_eq!(r.end, t("2025-02-28T00:00:00Z"));
        let r = TimeRange::parse("time_range", "PT12M/2025-07-01T00:12:00Z").unwrap();
        assert_eq!(r.start, t("2025-07-01T00:00:00Z"));
        let r = TimeRange::parse("time_range", "2025-07-01T00:00:00Z/P1DT2H").unwrap();
        assert_eq!(r.end, t("2025-07-02T02:00:00Z"));
    }

    #[test]
    fn a_range_written_end_first_is_the_same_range() {
        let forward = TimeRange::parse("r", "2025-07-01T00:00:00Z/2025-07-31T00:00:00Z").unwrap();
        let backward = TimeRange::parse("r", "2025-07-31T00:00:00Z/2025-07-01T00:00:00Z").unwrap();
        assert_eq!(backward, forward);
        assert_eq!(forward.start, t("2025-07-01T00:00:00Z"));
    }

    #[test]
    fn ranges_reject_what_is_not_an_interval() {
        for bad in [
            "",
            "2025-07-01",
            "P1D/P2D",
            "2025-07-01T00:00:00Z/P",
            "2025-07-01T00:00:00Z/P1X",
            "2025-07-01T00:00:00Z/PT",
        ] {
            let err = TimeRange::parse("time_range", bad).unwrap_err();
            assert!(err.to_string().contains("time_range") || err.to_string().contains(bad));
        }
    }

    #[test]
    fn windows_read_and_write_words() {
        assert_eq!(
            "12 minutes".parse::<Window>().unwrap(),
            Window::Seconds(720)
        );
        assert_eq!(
            "1 hour 30 minutes".parse::<Window>().unwrap(),
            Window::Seconds(5400)
        );
        assert_eq!("unbounded".parse::<Window>().unwrap(), Window::Unbounded);
        assert_eq!(Window::Seconds(3600).to_string(), "1 hour");
        assert_eq!(Window::Seconds(5400).to_string(), "1 hour 30 minutes");
        for bad in ["", "12", "minutes", "0 minutes", "-3 hours", "3 fortnights"] {
            assert!(bad.parse::<Window>().is_err(), "{bad} should be refused");
        }
    }
}

//! Time types: instants, ISO 8601 intervals and the timeline window.
//!
//! Every instant is UTC inside; input accepts any RFC 3339 offset.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::InvalidValue;

/// An instant, always UTC. Serialized as RFC 3339 with a `Z`.
pub type Instant = DateTime<Utc>;

/// First year accepted from input, on every face (HTTP bodies and queries, CLI, dashboard).
pub const MIN_YEAR: i32 = 1;
/// Last year accepted from input. Far enough from chrono's own limits that arithmetic on an
/// accepted instant (a traveller's clock running on, a window added) cannot overflow.
pub const MAX_YEAR: i32 = 9999;
/// The last instant the service accepts or prints, 9999-12-31T23:59:59.999999999Z: past it
/// RFC 3339 has no four-digit year. Computed times (a traveller's clock running on, a window's
/// end) saturate here; input past it is refused ([`in_range`]).
pub const MAX_INSTANT: Instant = match chrono::NaiveDate::from_ymd_opt(MAX_YEAR, 12, 31) {
    Some(day) => match day.and_hms_nano_opt(23, 59, 59, 999_999_999) {
        Some(t) => t.and_utc(),
        None => DateTime::<Utc>::MAX_UTC,
    },
    None => DateTime::<Utc>::MAX_UTC,
};

/// The accepted range, as error messages state it.
pub const ACCEPTED_RANGE: &str =
    "years 0001 to 9999 (0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z)";

/// Refuses an instant outside [`MIN_YEAR`]..=[`MAX_YEAR`], naming `field` and the range.
pub fn in_range(field: &str, t: Instant) -> Result<Instant, InvalidValue> {
    use chrono::Datelike;
    if (MIN_YEAR..=MAX_YEAR).contains(&t.year()) {
        Ok(t)
    } else {
        Err(InvalidValue::new(
            field,
            format!(
                "{} is outside the accepted range: {ACCEPTED_RANGE}",
                t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
            ),
        ))
    }
}

/// [`in_range`] for an optional instant.
pub fn opt_in_range(field: &str, t: Option<Instant>) -> Result<Option<Instant>, InvalidValue> {
    t.map(|t| in_range(field, t)).transpose()
}

/// Parses an RFC 3339 date-time with any offset and converts it to UTC; the result must lie
/// in the accepted range of years ([`ACCEPTED_RANGE`]).
pub fn parse_instant(field: &str, s: &str) -> Result<Instant, InvalidValue> {
    let t = DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            InvalidValue::new(
                field,
                format!("'{s}' is not an RFC 3339 date-time like 1889-03-10T23:50:00Z ({e})"),
            )
        })?;
    in_range(field, t)
}

/// The forms [`parse_typed_instant`] accepts, as messages and placeholders state them.
pub const TYPED_FORMS: &str = "1889-03-10 23:50, 1889-03-10 23:50:00, 1889-03-10 (UTC) or RFC 3339";

/// Parses a time as a person types it at a terminal: as the dashboard shows times
/// (`1889-03-10 23:50:00`, seconds optional, UTC), a date alone (its midnight, UTC), or RFC 3339
/// with any offset. The accepted range of years is that of [`parse_instant`].
pub fn parse_typed_instant(field: &str, s: &str) -> Result<Instant, InvalidValue> {
    let text = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return in_range(field, t.with_timezone(&Utc));
    }
    let naive = [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ]
    .iter()
    .find_map(|f| chrono::NaiveDateTime::parse_from_str(text, f).ok())
    .or_else(|| {
        chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
    });
    match naive {
        Some(t) => in_range(field, t.and_utc()),
        None => Err(InvalidValue::new(
            field,
            match wrong_part(text) {
                Some(part) => format!("'{text}' is not a time: {part}; write {TYPED_FORMS}"),
                None => format!("'{text}' is not a time; write {TYPED_FORMS}"),
            },
        )),
    }
}

/// Which part of a time typed in the shape `YYYY-MM-DD[ HH:MM[:SS]]` is wrong (a month 13, a
/// 30 February, an hour 24), or `None` when the text does not have that shape.
fn wrong_part(text: &str) -> Option<String> {
    let (date, time) = match text.split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t.trim())),
        None => (text, None),
    };
    let number = |s: &str| -> Option<u32> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let mut ymd = date.splitn(3, '-');
    let (year, month, day) = (
        number(ymd.next()?)?,
        number(ymd.next()?)?,
        number(ymd.next()?)?,
    );
    if !(1..=12).contains(&month) {
        return Some(format!("month {month} is not 1 to 12"));
    }
    let first = chrono::NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, 1)?;
    let days = first
        .checked_add_months(chrono::Months::new(1))?
        .signed_duration_since(first)
        .num_days();
    if day == 0 || i64::from(day) > days {
        return Some(format!(
            "day {day} is not in {} {year}, which has {days} days",
            first.format("%B")
        ));
    }
    // An offset or fractions (RFC 3339) are not checked part by part.
    let time = time.filter(|t| !t.contains(['+', '-', 'Z', 'z', '.']))?;
    let mut hms = time.split(':');
    for (part, limit) in [("hour", 23), ("minute", 59), ("second", 59)] {
        let Some(value) = hms.next() else { break };
        match number(value) {
            Some(v) if v > limit => return Some(format!("{part} {v} is not 0 to {limit}")),
            Some(_) => {}
            None => return Some(format!("the {part} '{value}' is not a number")),
        }
    }
    None
}

/// Formats an instant the way every response does: RFC 3339, UTC, `Z`.
pub fn format_instant(t: &Instant) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// A wall-clock span in whole seconds as the duration grammar writes it: `2d3h4m5s`, `45s`,
/// `0s` (negative spans, a clock set back, count as zero).
pub fn describe_elapsed(span: Duration) -> String {
    let mut left = span.num_seconds().max(0);
    let mut out = String::new();
    for (unit, secs) in [("d", 86_400), ("h", 3_600), ("m", 60)] {
        if left >= secs {
            out.push_str(&format!("{}{unit}", left / secs));
            left %= secs;
        }
    }
    if left > 0 || out.is_empty() {
        out.push_str(&format!("{left}s"));
    }
    out
}

/// A closed time interval `[start, end]`, parsed from ISO 8601 `start/end`,
/// `start/duration` or `duration/end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimeRange {
    /// First instant inside the range.
    pub start: Instant,
    /// Last instant inside the range.
    pub end: Instant,
}

impl TimeRange {
    /// Parses an interval, naming `field` in the error.
    pub fn parse(field: &str, s: &str) -> Result<Self, InvalidValue> {
        let expected = "expected an ISO 8601 interval: start/end, start/duration or duration/end, \
                        e.g. 2025-07-01T00:00:00Z/2025-07-31T23:59:59Z or 2025-07-01T00:00:00Z/P1M";
        let Some((a, b)) = s.trim().split_once('/') else {
            return Err(InvalidValue::new(field, format!("'{s}': {expected}")));
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
                return Err(InvalidValue::new(
                    field,
                    format!("'{s}': two durations give no position in time; {expected}"),
                ));
            }
        };
        let (start, end) = (in_range(field, start)?, in_range(field, end)?);
        // Written end first, it is still the same stretch of time.
        let (start, end) = if end < start {
            (end, start)
        } else {
            (start, end)
        };
        Ok(Self { start, end })
    }

    /// Parses a range as a person types it: either end in any form of [`parse_typed_instant`]
    /// (`1889-03-10 23:50/P1D`, `1889-03-10/1889-03-12`), a duration on one side, or a date
    /// alone for that whole day.
    pub fn parse_typed(field: &str, s: &str) -> Result<Self, InvalidValue> {
        let text = s.trim();
        let Some((a, b)) = text.split_once('/') else {
            let start = parse_typed_instant(field, text).map_err(|_| {
                InvalidValue::new(field, format!("'{text}': {}", Self::TYPED_FORMS))
            })?;
            let is_date = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok();
            let end = if is_date {
                add_iso_duration(field, start, "P1D", 1)? - Duration::seconds(1)
            } else {
                start
            };
            return Ok(Self {
                start,
                end: in_range(field, end)?,
            });
        };
        let side = |x: &str| -> Result<String, InvalidValue> {
            let x = x.trim();
            if x.starts_with('P') {
                Ok(x.to_owned())
            } else {
                parse_typed_instant(field, x).map(|t| format_instant(&t))
            }
        };
        Self::parse(field, &format!("{}/{}", side(a)?, side(b)?))
    }

    /// The forms [`TimeRange::parse_typed`] accepts, as messages state them.
    pub const TYPED_FORMS: &str = "write START/END, START/P1M (a duration) or one date for \
        that day; a time is 1889-03-10 23:50, a date or RFC 3339 (UTC)";

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
fn add_iso_duration(field: &str, at: Instant, s: &str, sign: i32) -> Result<Instant, InvalidValue> {
    let bad = || {
        InvalidValue::new(
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
    // Every step is checked: numbers come straight from the request.
    let too_long = || {
        InvalidValue::new(
            field,
            format!("'{s}' reaches outside the accepted range: {ACCEPTED_RANGE}"),
        )
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
            let (add_months, add_exact) = match (is_time, c) {
                (false, 'Y') => (n.checked_mul(12), Some(Duration::zero())),
                (false, 'M') => (Some(n), Some(Duration::zero())),
                (false, 'W') => (Some(0), Duration::try_weeks(n)),
                (false, 'D') => (Some(0), Duration::try_days(n)),
                (true, 'H') => (Some(0), Duration::try_hours(n)),
                (true, 'M') => (Some(0), Duration::try_minutes(n)),
                (true, 'S') => (Some(0), Duration::try_seconds(n)),
                _ => return Err(bad()),
            };
            months = add_months
                .and_then(|m| months.checked_add(m))
                .ok_or_else(too_long)?;
            exact = add_exact
                .and_then(|d| exact.checked_add(&d))
                .ok_or_else(too_long)?;
        }
        if !number.is_empty() {
            return Err(bad());
        }
    }
    let months = u32::try_from(months).map_err(|_| too_long())?;
    let moved = if sign > 0 {
        at.checked_add_months(chrono::Months::new(months))
            .and_then(|t| t.checked_add_signed(exact))
    } else {
        at.checked_sub_months(chrono::Months::new(months))
            .and_then(|t| t.checked_sub_signed(exact))
    };
    moved.ok_or_else(too_long)
}

/// A stretch of a traveller's time for `fast-forward` and `rewind`: `10m`, `1h`, `1d`, `2w`,
/// `30s` and combinations (`1h30m`; `m` is minutes), or ISO 8601 (`PT10M`, `P1D`, `P2W`,
/// `P1M`, `P1Y2M3DT4H`). Months and years exist only in the ISO form and follow the calendar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TravelDuration {
    /// Calendar months (years are 12 months).
    pub months: u32,
    /// Everything else, in seconds.
    pub seconds: i64,
}

/// The longest stretch accepted, about 10,000 years: more cannot stay inside 0001–9999.
const MAX_DURATION_SECS: i64 = 10_000 * 31_556_952;

impl TravelDuration {
    /// Parses `s`, naming `field` in every refusal; zero is refused.
    pub fn parse(field: &str, s: &str) -> Result<Self, InvalidValue> {
        let text = s.trim();
        let bad = |why: &str| {
            InvalidValue::new(
                field,
                format!(
                    "'{text}' {why}; write a positive duration such as 10m, 1h30m, 1d, 2w, or \
                     ISO 8601 such as PT10M, P1D, P1M, P1Y"
                ),
            )
        };
        if text.is_empty() {
            return Err(bad("is empty"));
        }
        let parsed = if let Some(iso) = text.strip_prefix(['P', 'p']) {
            Self::parse_iso(iso)
        } else {
            Self::parse_compact(text)
        }
        .ok_or_else(|| bad("is not a duration"))?;
        if parsed.months == 0 && parsed.seconds == 0 {
            return Err(bad("is zero"));
        }
        if parsed.months > 10_000 * 12 || parsed.seconds > MAX_DURATION_SECS {
            return Err(bad("is longer than 10000 years"));
        }
        Ok(parsed)
    }

    fn parse_compact(text: &str) -> Option<Self> {
        let mut seconds: i64 = 0;
        let mut number = String::new();
        for c in text.chars() {
            if c.is_ascii_digit() {
                number.push(c);
                continue;
            }
            let unit = match c {
                's' => 1,
                'm' => 60,
                'h' => 3_600,
                'd' => 86_400,
                'w' => 7 * 86_400,
                _ => return None,
            };
            let n: i64 = number.parse().ok()?;
            number.clear();
            seconds = seconds.checked_add(n.checked_mul(unit)?)?;
        }
        number.is_empty().then_some(Self { months: 0, seconds })
    }

    fn parse_iso(text: &str) -> Option<Self> {
        let mut months: u32 = 0;
        let mut seconds: i64 = 0;
        let mut number = String::new();
        let mut in_time = false;
        let mut any = false;
        for c in text.chars() {
            let c = c.to_ascii_uppercase();
            if c.is_ascii_digit() {
                number.push(c);
                continue;
            }
            if c == 'T' {
                if in_time || !number.is_empty() {
                    return None;
                }
                in_time = true;
                continue;
            }
            let n: u64 = number.parse().ok()?;
            number.clear();
            any = true;
            match (in_time, c) {
                (false, 'Y') => {
                    months = months.checked_add(u32::try_from(n).ok()?.checked_mul(12)?)?
                }
                (false, 'M') => months = months.checked_add(u32::try_from(n).ok()?)?,
                (false, 'W') => {
                    seconds =
                        seconds.checked_add(i64::try_from(n).ok()?.checked_mul(7 * 86_400)?)?
                }
                (false, 'D') => {
                    seconds = seconds.checked_add(i64::try_from(n).ok()?.checked_mul(86_400)?)?
                }
                (true, 'H') => {
                    seconds = seconds.checked_add(i64::try_from(n).ok()?.checked_mul(3_600)?)?
                }
                (true, 'M') => {
                    seconds = seconds.checked_add(i64::try_from(n).ok()?.checked_mul(60)?)?
                }
                (true, 'S') => seconds = seconds.checked_add(i64::try_from(n).ok()?)?,
                _ => return None,
            }
        }
        (any && number.is_empty()).then_some(Self { months, seconds })
    }

    /// `t` moved forward (`forward`) or back by this duration, inside 0001–9999 (`field` is
    /// named when the result falls outside).
    pub fn shift(&self, field: &str, t: Instant, forward: bool) -> Result<Instant, InvalidValue> {
        let outside = || {
            InvalidValue::new(
                field,
                format!("the result falls outside the accepted range: {ACCEPTED_RANGE}"),
            )
        };
        let months = chrono::Months::new(self.months);
        let span = Duration::try_seconds(self.seconds).ok_or_else(outside)?;
        let moved = if forward {
            t.checked_add_months(months)
                .and_then(|t| t.checked_add_signed(span))
        } else {
            t.checked_sub_months(months)
                .and_then(|t| t.checked_sub_signed(span))
        }
        .ok_or_else(outside)?;
        in_range(field, moved).map_err(|_| outside())
    }
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
            Window::Seconds(s) => Duration::try_seconds(*s),
        }
    }
}

/// Longest window accepted: 10,000 years, so that an accepted creation time plus the window
/// stays far inside chrono's range.
pub const MAX_WINDOW_SECS: i64 = 10_000 * 31_556_952;

const WINDOW_UNITS: [(&str, i64); 5] = [
    ("week", 7 * 86_400),
    ("day", 86_400),
    ("hour", 3_600),
    ("minute", 60),
    ("second", 1),
];

impl FromStr for Window {
    type Err = InvalidValue;
    /// Parses a window given as input, at most [`MAX_WINDOW_SECS`] long.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match Window::parse_words(s)? {
            Window::Seconds(n) if n > MAX_WINDOW_SECS => Err(window_too_long(s)),
            w => Ok(w),
        }
    }
}

fn window_too_long(s: &str) -> InvalidValue {
    InvalidValue::new(
        "window",
        format!(
            "'{s}' is longer than the longest window, 10000 years; for a timeline that never \
             closes write 'unbounded'"
        ),
    )
}

impl Window {
    /// Parses the words without the input cap (records already in a log are read as written).
    fn parse_words(s: &str) -> Result<Self, InvalidValue> {
        let too_long = || window_too_long(s);
        let bad = || {
            InvalidValue::new(
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
                .ok_or_else(too_long)?;
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
    type Error = InvalidValue;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Window::parse_words(&s)
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

    #[test]
    fn elapsed_spans_read_in_the_duration_grammar() {
        assert_eq!(describe_elapsed(Duration::seconds(0)), "0s");
        assert_eq!(describe_elapsed(Duration::seconds(-5)), "0s");
        assert_eq!(describe_elapsed(Duration::seconds(45)), "45s");
        assert_eq!(describe_elapsed(Duration::seconds(3_600)), "1h");
        assert_eq!(
            describe_elapsed(Duration::seconds(2 * 86_400 + 3 * 3_600 + 4 * 60 + 5)),
            "2d3h4m5s"
        );
    }

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
    fn a_typed_time_that_is_wrong_says_which_part_is() {
        let said = |s: &str| parse_typed_instant("time", s).unwrap_err().to_string();
        for (typed, part) in [
            ("1889-13-10 23:50", "month 13 is not 1 to 12"),
            (
                "1889-02-29",
                "day 29 is not in February 1889, which has 28 days",
            ),
            (
                "1888-02-30 10:00",
                "day 30 is not in February 1888, which has 29 days",
            ),
            (
                "1889-04-00",
                "day 0 is not in April 1889, which has 30 days",
            ),
            ("1889-03-10 24:00", "hour 24 is not 0 to 23"),
            ("1889-03-10T23:60", "minute 60 is not 0 to 59"),
            ("1889-03-10 23:50:61", "second 61 is not 0 to 59"),
            ("1889-03-10 noon", "the hour 'noon' is not a number"),
        ] {
            let message = said(typed);
            assert!(
                message.contains(&format!("'{typed}' is not a time: {part}; write")),
                "{message}"
            );
        }
        // Text not shaped like a date says only what to write.
        let message = said("yesterday");
        assert!(
            message.contains("'yesterday' is not a time; write 1889-03-10 23:50"),
            "{message}"
        );
        // What parses still does.
        assert!(parse_typed_instant("time", "1888-02-29 23:59:59").is_ok());
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
    fn instants_outside_years_1_to_9999_are_refused_naming_the_range() {
        assert!(parse_instant("time", "0001-01-01T00:00:00Z").is_ok());
        assert!(parse_instant("time", "9999-12-31T23:59:59Z").is_ok());
        for bad in [
            "0000-12-31T23:59:59Z",
            "0001-01-01T00:00:00+01:00", // year 0 in UTC
            "9999-12-31T23:59:59-01:00", // year 10000 in UTC
        ] {
            let err = parse_instant("time", bad).unwrap_err().to_string();
            assert!(err.contains("years 0001 to 9999"), "{bad}: {err}");
        }
        let far = DateTime::<Utc>::MAX_UTC;
        let err = in_range("destination_time", far).unwrap_err().to_string();
        assert!(
            err.contains("destination_time") && err.contains("years 0001 to 9999"),
            "{err}"
        );
    }

    #[test]
    fn ranges_that_reach_outside_the_accepted_years_are_refused() {
        for bad in [
            "2025-01-01T00:00:00Z/P100000000000D100000000000D",
            "2025-01-01T00:00:00Z/P100000000000D",
            "2025-01-01T00:00:00Z/P9223372036854775807Y",
            "2025-01-01T00:00:00Z/P8000Y",
            "P2025Y1D/2025-01-01T00:00:00Z",
            "2025-01-01T00:00:00Z/PT9223372036854775807S",
            "2025-01-01T00:00:00Z/P1W9223372036854775807D",
        ] {
            let err = TimeRange::parse("time_range", bad).unwrap_err().to_string();
            assert!(err.contains("years 0001 to 9999"), "{bad}: {err}");
        }
        let r = TimeRange::parse("time_range", "0001-01-01T00:00:00Z/P9998Y").unwrap();
        assert_eq!(r.end, t("9999-01-01T00:00:00Z"));
    }

    #[test]
    fn a_traveller_at_the_edge_of_time_does_not_overflow() {
        let p = crate::model::Position {
            timeline: crate::model::TimelineId::primary(),
            arrival_time: DateTime::<Utc>::MAX_UTC,
            arrived_at: t("2025-01-01T00:00:00Z"),
            paused: false,
            location: None,
        };
        assert_eq!(p.time_at(t("2026-01-01T00:00:00Z")), MAX_INSTANT);
    }

    #[test]
    fn a_traveller_who_arrived_at_the_last_second_stays_printable() {
        let p = crate::model::Position {
            timeline: crate::model::TimelineId::primary(),
            arrival_time: parse_instant("time", "9999-12-31T23:59:59Z").unwrap(),
            arrived_at: t("2025-01-01T00:00:00Z"),
            paused: false,
            location: None,
        };
        let later = p.time_at(t("2025-01-01T00:00:02Z"));
        assert_eq!(later, MAX_INSTANT);
        assert_eq!(format_instant(&later), "9999-12-31T23:59:59.999999999Z");
        let json = serde_json::to_string(&later).unwrap();
        assert_eq!(json, "\"9999-12-31T23:59:59.999999999Z\"");
    }

    #[test]
    fn a_window_reaching_past_the_last_year_closes_at_the_last_instant() {
        let tl = crate::model::Timeline {
            id: crate::model::TimelineId::primary(),
            name: "p".into(),
            description: None,
            variation: None,
            destination_time: None,
            created_at: t("9900-01-01T00:00:00Z"),
            window: "10000 weeks".parse().unwrap(),
            parent: None,
            created_by: None,
        };
        assert_eq!(tl.closes_at(), Some(MAX_INSTANT));
        let window = Window::Seconds(MAX_WINDOW_SECS);
        let tl = crate::model::Timeline { window, ..tl };
        assert_eq!(tl.closes_at(), Some(MAX_INSTANT));
    }

    #[test]
    fn the_last_instant_is_accepted_and_a_nanosecond_later_refused() {
        assert_eq!(
            parse_instant("time", "9999-12-31T23:59:59.999999999Z").unwrap(),
            MAX_INSTANT
        );
        let past = MAX_INSTANT + Duration::nanoseconds(1);
        let err = in_range("time", past).unwrap_err().to_string();
        assert!(err.contains("years 0001 to 9999"), "{err}");
    }

    #[test]
    fn windows_longer_than_ten_thousand_years_are_refused() {
        assert!("10000 weeks".parse::<Window>().is_ok());
        for bad in [
            "1000000 weeks",
            "9223372036854775807 seconds",
            "1000000000000 weeks",
        ] {
            let err = bad.parse::<Window>().unwrap_err().to_string();
            assert!(err.contains("10000 years"), "{bad}: {err}");
        }
        // A window already in a log is read back as written.
        let long: Window = String::from("1000000 weeks").try_into().unwrap();
        assert_eq!(long, Window::Seconds(1_000_000 * 7 * 86_400));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Whatever the text, the interval parser answers (Ok or an error), never panics.
        #[test]
        fn interval_parsing_never_panics(
            start in "[0-9]{1,5}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})",
            duration in "P([0-9]{0,20}[YMWD]){0,4}(T([0-9]{0,20}[HMS]){0,3})?",
            noise in "\\PC{0,40}",
            order in 0..4u8,
        ) {
            let text = match order {
                0 => format!("{start}/{duration}"),
                1 => format!("{duration}/{start}"),
                2 => format!("{start}/{start}"),
                _ => noise,
            };
            if let Ok(r) = TimeRange::parse("time_range", &text) {
                proptest::prop_assert!(r.start <= r.end);
                proptest::prop_assert!(in_range("r", r.start).is_ok() && in_range("r", r.end).is_ok());
            }
        }

        /// Whatever the words, the window parser answers, never panics, and what it accepts
        /// gives a closing time for any accepted creation time.
        #[test]
        fn window_parsing_never_panics(
            n in proptest::num::i64::ANY,
            unit in "(week|day|hour|minute|second)s?",
            rest in "\\PC{0,30}",
        ) {
            for text in [format!("{n} {unit}"), rest.clone(), format!("{n} {unit} {rest}")] {
                if let Ok(Window::Seconds(s)) = text.parse::<Window>() {
                    let tl = crate::model::Timeline {
                        id: crate::model::TimelineId::primary(),
                        name: "t".into(),
                        description: None,
                        variation: None,
                        destination_time: None,
                        created_at: t("9999-12-31T23:59:59Z"),
                        window: Window::Seconds(s),
                        parent: None,
                        created_by: None,
                    };
                    proptest::prop_assert!(tl.closes_at().is_some());
                }
            }
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

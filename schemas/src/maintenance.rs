//! Maintenance windows: when a cluster lets new versions of its works in. Pure: `now` is an
//! argument, no clock is read. Here, beside the other contracts, because both sides read the
//! same syntax: the agent's `--maintenance-window` and the hub's cluster setting (checked by the
//! hub when an operator sets it, applied by the agent).
//!
//! A window is `SCHEDULE;DURATION;TIME_ZONE`, as Rancher Fleet's `Schedule`: a standard
//! five-field cron schedule (minute hour day-of-month month day-of-week) read in an IANA time
//! zone, opening the window at each of its times for DURATION (`2h`, `90m`, `1h30m`). The time
//! zone may be left out (`0 22 * * *;2h`): UTC.
//!
//! Daylight saving time follows vixie-cron (and the Open Cron Pattern Specification, which the
//! `croner` crate implements): a start in the hour the clock skips opens at the first minute
//! after the gap; a start in the hour the clock repeats opens once, the first time. The duration
//! is elapsed time, so a 2h window that spans a change of the clock is open for 2 hours.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// Annotation on the hub's view of a cluster (the `ManagedCluster` the hub signs and sends its
/// agent) that carries the maintenance windows set on the hub, one per line.
pub const HUB_WINDOWS_ANNOTATION: &str = "ocm-edge.io/maintenance-windows";

/// The longest window: a week. A longer one is a schedule written wrongly, not a window.
pub const MAX_DURATION: TimeDelta = TimeDelta::days(7);

/// How a window is written, for error messages.
pub const WINDOW_SYNTAX: &str = "write SCHEDULE;DURATION;TIME_ZONE, e.g. '0 22 * * 1-5;6h;Europe/Berlin' \
     (five cron fields: minute hour day-of-month month day-of-week; a duration in h, m and s; an \
     IANA time zone, UTC when left out)";

/// A window that cannot be used, with what to change. Not retryable: the input is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    #[error("maintenance window {window:?}: {reason}; {WINDOW_SYNTAX}")]
    Shape { window: String, reason: String },
    #[error(
        "maintenance window {window:?}: schedule {schedule:?} is not a five-field cron schedule ({reason}); {WINDOW_SYNTAX}"
    )]
    Schedule {
        window: String,
        schedule: String,
        reason: String,
    },
    #[error(
        "maintenance window {window:?}: schedule {schedule:?} never opens (no such date); give days that exist, e.g. '0 2 28 2 *'"
    )]
    NeverOpens { window: String, schedule: String },
    #[error(
        "maintenance window {window:?}: duration {duration:?} {reason}; give it in h, m and s, e.g. 90m or 1h30m, above 0 and at most 7 days (168h)"
    )]
    Duration {
        window: String,
        duration: String,
        reason: String,
    },
    #[error(
        "maintenance window {window:?}: time zone {zone:?} is not an IANA time zone; give one such as Europe/Berlin, America/New_York or UTC"
    )]
    TimeZone { window: String, zone: String },
}

/// One maintenance window, checked: its schedule parses and opens some day, its duration is
/// positive and at most [`MAX_DURATION`], its time zone exists.
#[derive(Clone)]
pub struct MaintenanceWindow {
    text: String,
    schedule: Cron,
    duration: TimeDelta,
    zone: Tz,
}

impl fmt::Debug for MaintenanceWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("MaintenanceWindow")
            .field(&self.text)
            .finish()
    }
}

impl fmt::Display for MaintenanceWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for MaintenanceWindow {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl FromStr for MaintenanceWindow {
    type Err = WindowError;

    fn from_str(text: &str) -> Result<Self, WindowError> {
        let text = text.trim();
        let window = text.to_owned();
        let parts: Vec<&str> = text.split(';').map(str::trim).collect();
        let (schedule_text, duration_text, zone_text) = match parts.as_slice() {
            [s, d] => (*s, *d, "UTC"),
            [s, d, z] => (*s, *d, *z),
            _ => {
                return Err(WindowError::Shape {
                    window,
                    reason: format!("{} part(s) separated by ';', not 2 or 3", parts.len()),
                });
            }
        };
        let schedule = parse_schedule(schedule_text).map_err(|reason| WindowError::Schedule {
            window: window.clone(),
            schedule: schedule_text.to_owned(),
            reason,
        })?;
        let duration = parse_duration(duration_text).map_err(|reason| WindowError::Duration {
            window: window.clone(),
            duration: duration_text.to_owned(),
            reason,
        })?;
        let zone: Tz = zone_text.parse().map_err(|_| WindowError::TimeZone {
            window: window.clone(),
            zone: zone_text.to_owned(),
        })?;
        // A schedule such as `0 0 30 2 *` parses but never comes: refuse it now rather than
        // hold every update for ever. Searched from a fixed date, not the clock.
        let reference = zone.with_ymd_and_hms(2000, 1, 1, 0, 0, 0).single();
        if reference.is_none_or(|r| schedule.find_next_occurrence(&r, true).is_err()) {
            return Err(WindowError::NeverOpens {
                window,
                schedule: schedule_text.to_owned(),
            });
        }
        Ok(MaintenanceWindow {
            text: window,
            schedule,
            duration,
            zone,
        })
    }
}

impl MaintenanceWindow {
    /// The window as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// When the window that is open at `now` opened, or `None` when it is closed. A window is
    /// open from each time of its schedule (included) for its duration (excluded).
    pub fn opened_at(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let earliest = now.checked_sub_signed(self.duration)?;
        // The first start after `now - duration`: the window is open when it is not after now.
        let start = self
            .schedule
            .find_next_occurrence(&earliest.with_timezone(&self.zone), false)
            .ok()?
            .with_timezone(&Utc);
        (start <= now).then_some(start)
    }

    /// Whether updates may be applied at `now`.
    pub fn is_open(&self, now: DateTime<Utc>) -> bool {
        self.opened_at(now).is_some()
    }

    /// When the window next opens: `now` when it is open, `None` when the schedule has no
    /// time left (beyond year 5000).
    pub fn next_open(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if self.is_open(now) {
            return Some(now);
        }
        self.schedule
            .find_next_occurrence(&now.with_timezone(&self.zone), false)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }
}

/// Whether any of `windows` is open at `now` (no window at all: always open).
pub fn any_open(windows: &[MaintenanceWindow], now: DateTime<Utc>) -> bool {
    windows.is_empty() || windows.iter().any(|w| w.is_open(now))
}

/// The earliest time one of `windows` opens, from `now` on.
pub fn next_open(windows: &[MaintenanceWindow], now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    windows.iter().filter_map(|w| w.next_open(now)).min()
}

/// Every window of `texts`, checked; the first that cannot be read is the error.
///
/// # Errors
/// [`WindowError`] for the first bad window.
pub fn parse_all<S: AsRef<str>>(texts: &[S]) -> Result<Vec<MaintenanceWindow>, WindowError> {
    texts.iter().map(|t| t.as_ref().parse()).collect()
}

/// The windows in a [`HUB_WINDOWS_ANNOTATION`] value (one per line, blank lines skipped).
///
/// # Errors
/// [`WindowError`] for the first bad window.
pub fn from_annotation(value: &str) -> Result<Vec<MaintenanceWindow>, WindowError> {
    let lines: Vec<&str> = value.lines().filter(|l| !l.trim().is_empty()).collect();
    parse_all(&lines)
}

/// The [`HUB_WINDOWS_ANNOTATION`] value for `windows`.
pub fn to_annotation(windows: &[MaintenanceWindow]) -> String {
    windows
        .iter()
        .map(MaintenanceWindow::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether updates may be applied at `now` under two sets of windows that must both allow it
/// (the edge's and the hub's; an empty set allows any time).
pub fn both_open(a: &[MaintenanceWindow], b: &[MaintenanceWindow], now: DateTime<Utc>) -> bool {
    any_open(a, now) && any_open(b, now)
}

/// The earliest time from `now` on when both sets of windows are open ([`both_open`]); `None`
/// when none is found within the next 64 openings.
pub fn next_both_open(
    a: &[MaintenanceWindow],
    b: &[MaintenanceWindow],
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let next = |ws: &[MaintenanceWindow], t| {
        if ws.is_empty() {
            Some(t)
        } else {
            next_open(ws, t)
        }
    };
    let mut t = now;
    for _ in 0..64 {
        // Each step moves to the next opening of one side at or after the other's: `t` only
        // grows, and stops where both are open.
        let ta = next(a, t)?;
        let tb = next(b, ta)?;
        if any_open(a, tb) {
            return Some(tb);
        }
        t = tb;
    }
    None
}

fn parse_schedule(text: &str) -> Result<Cron, String> {
    let fields = text.split_whitespace().count();
    if fields != 5 && !text.starts_with('@') {
        return Err(format!("{fields} field(s)"));
    }
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(text)
        .map_err(|e| e.to_string())
}

/// `1h30m`, `90m`, `45s`, `2h`: whole numbers with a unit each.
fn parse_duration(text: &str) -> Result<TimeDelta, String> {
    if text.is_empty() {
        return Err("is empty".to_owned());
    }
    let mut total = TimeDelta::zero();
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let n: i64 = digits
            .parse()
            .map_err(|_| format!("has no number before {c:?}"))?;
        digits.clear();
        let part = match c {
            'h' => TimeDelta::try_hours(n),
            'm' => TimeDelta::try_minutes(n),
            's' => TimeDelta::try_seconds(n),
            _ => return Err(format!("has the unit {c:?}, not h, m or s")),
        }
        .ok_or_else(|| "is too long".to_owned())?;
        total = total
            .checked_add(&part)
            .ok_or_else(|| "is too long".to_owned())?;
    }
    if !digits.is_empty() {
        return Err(format!("ends in {digits:?} without a unit"));
    }
    if total <= TimeDelta::zero() {
        return Err("is zero".to_owned());
    }
    if total > MAX_DURATION {
        return Err("is longer than 7 days".to_owned());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(s: &str) -> MaintenanceWindow {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .with_timezone(&Utc)
    }

    #[test]
    fn a_nightly_window_is_open_from_its_start_for_its_duration_only() {
        let w = window("0 22 * * *;2h;UTC");
        assert!(!w.is_open(utc("2026-03-10T21:59:59Z")));
        assert!(w.is_open(utc("2026-03-10T22:00:00Z")));
        assert!(w.is_open(utc("2026-03-10T23:59:59Z")));
        assert!(!w.is_open(utc("2026-03-11T00:00:00Z")));
        assert_eq!(
            w.opened_at(utc("2026-03-10T23:00:00Z")),
            Some(utc("2026-03-10T22:00:00Z"))
        );
    }

    #[test]
    fn a_window_that_crosses_midnight_is_open_on_both_days_and_follows_the_weekdays_of_its_start() {
        // Fridays 23:00 for 3 hours: open until 02:00 on Saturday, not on Friday at 01:00.
        let w = window("0 23 * * FRI;3h;UTC");
        // 2026-03-13 is a Friday.
        assert!(!w.is_open(utc("2026-03-13T01:00:00Z")));
        assert!(w.is_open(utc("2026-03-13T23:30:00Z")));
        assert!(w.is_open(utc("2026-03-14T01:59:00Z")));
        assert!(!w.is_open(utc("2026-03-14T02:00:00Z")));
        assert_eq!(
            w.next_open(utc("2026-03-14T02:00:00Z")),
            Some(utc("2026-03-20T23:00:00Z"))
        );
    }

    #[test]
    fn the_time_zone_places_the_window_and_it_moves_in_utc_when_the_clock_changes() {
        // 22:00 in Berlin: 21:00 UTC in winter (CET), 20:00 UTC in summer (CEST).
        let w = window("0 22 * * *;1h;Europe/Berlin");
        assert!(w.is_open(utc("2026-03-27T21:30:00Z")));
        assert!(!w.is_open(utc("2026-03-28T20:30:00Z")));
        // Berlin moves to summer time on 2026-03-29.
        assert!(w.is_open(utc("2026-03-29T20:30:00Z")));
        assert!(!w.is_open(utc("2026-03-29T21:30:00Z")));
        assert_eq!(
            w.next_open(utc("2026-03-28T23:00:00Z")),
            Some(utc("2026-03-29T20:00:00Z"))
        );
    }

    #[test]
    fn a_start_in_the_hour_the_clock_skips_opens_right_after_the_gap() {
        // New York skips 02:00-03:00 on 2026-03-08: a 02:30 start opens at 03:00 EDT (07:00 UTC).
        let w = window("30 2 * * *;1h;America/New_York");
        assert_eq!(
            w.next_open(utc("2026-03-08T05:00:00Z")),
            Some(utc("2026-03-08T07:00:00Z"))
        );
        assert!(w.is_open(utc("2026-03-08T07:30:00Z")));
        assert!(!w.is_open(utc("2026-03-08T08:00:00Z")));
        // The day after, 02:30 EDT again (06:30 UTC).
        assert_eq!(
            w.next_open(utc("2026-03-08T08:00:00Z")),
            Some(utc("2026-03-09T06:30:00Z"))
        );
    }

    #[test]
    fn a_start_in_the_hour_the_clock_repeats_opens_once_and_lasts_its_elapsed_duration() {
        // New York repeats 01:00-02:00 on 2026-11-01: 01:30 EDT is 05:30 UTC, 01:30 EST 06:30.
        let w = window("30 1 * * *;1h;America/New_York");
        assert_eq!(
            w.next_open(utc("2026-11-01T04:00:00Z")),
            Some(utc("2026-11-01T05:30:00Z"))
        );
        assert!(w.is_open(utc("2026-11-01T06:15:00Z")));
        // One hour of elapsed time, and no second opening at the repeated 01:30.
        assert!(!w.is_open(utc("2026-11-01T06:30:00Z")));
        assert!(!w.is_open(utc("2026-11-01T07:00:00Z")));
        assert_eq!(
            w.next_open(utc("2026-11-01T06:30:00Z")),
            Some(utc("2026-11-02T06:30:00Z"))
        );
    }

    #[test]
    fn a_window_that_spans_the_change_of_the_clock_lasts_its_elapsed_duration() {
        // Berlin, 01:00 for 3 hours on 2026-03-29 (02:00 -> 03:00): 00:00 UTC to 03:00 UTC,
        // that is 01:00 CET to 05:00 CEST on the wall clock.
        let w = window("0 1 * * *;3h;Europe/Berlin");
        assert!(w.is_open(utc("2026-03-29T02:59:00Z")));
        assert!(!w.is_open(utc("2026-03-29T03:00:00Z")));
    }

    #[test]
    fn several_windows_open_when_any_does_and_next_open_is_the_earliest() {
        let ws = [window("0 22 * * *;1h"), window("0 6 * * SAT,SUN;4h")];
        // 2026-03-14 is a Saturday.
        assert!(any_open(&ws, utc("2026-03-14T07:00:00Z")));
        assert!(any_open(&ws, utc("2026-03-14T22:30:00Z")));
        assert!(!any_open(&ws, utc("2026-03-14T12:00:00Z")));
        assert_eq!(
            next_open(&ws, utc("2026-03-13T23:30:00Z")),
            Some(utc("2026-03-14T06:00:00Z"))
        );
        assert!(any_open(&[], utc("2026-03-14T12:00:00Z")));
        assert_eq!(
            next_open(&ws, utc("2026-03-14T07:00:00Z")),
            Some(utc("2026-03-14T07:00:00Z"))
        );
    }

    #[test]
    fn bad_windows_are_refused_with_the_field_and_how_to_write_it() {
        let err = |s: &str| s.parse::<MaintenanceWindow>().unwrap_err();
        assert!(matches!(err("0 22 * * *"), WindowError::Shape { .. }));
        assert!(matches!(err("0 22 * *;1h"), WindowError::Schedule { .. }));
        assert!(matches!(
            err("0 0 22 * * *;1h"),
            WindowError::Schedule { .. }
        ));
        assert!(matches!(
            err("61 22 * * *;1h"),
            WindowError::Schedule { .. }
        ));
        assert!(matches!(
            err("0 0 30 2 *;1h"),
            WindowError::NeverOpens { .. }
        ));
        assert!(matches!(err("0 22 * * *;0m"), WindowError::Duration { .. }));
        assert!(matches!(err("0 22 * * *;2d"), WindowError::Duration { .. }));
        assert!(matches!(err("0 22 * * *;2"), WindowError::Duration { .. }));
        assert!(matches!(
            err("0 22 * * *;169h"),
            WindowError::Duration { .. }
        ));
        let zone = err("0 22 * * *;1h;Mars/Olympus");
        assert!(matches!(zone, WindowError::TimeZone { .. }));
        let text = zone.to_string();
        assert!(
            text.contains("Mars/Olympus") && text.contains("Europe/Berlin"),
            "{text}"
        );
        let text = err("0 22 * *;1h").to_string();
        assert!(text.contains("'0 22 * * 1-5;6h;Europe/Berlin'"), "{text}");
    }

    #[test]
    fn with_the_edges_and_the_hubs_windows_updates_wait_until_both_are_open() {
        // Edge: nights 22:00-02:00; hub: weekends. 2026-03-13 is a Friday.
        let edge = [window("0 22 * * *;4h")];
        let hub = [window("0 0 * * SAT,SUN;24h")];
        assert!(
            !both_open(&edge, &hub, utc("2026-03-13T23:00:00Z")),
            "Friday night"
        );
        assert!(
            both_open(&edge, &hub, utc("2026-03-14T01:00:00Z")),
            "Saturday 01:00"
        );
        assert!(
            !both_open(&edge, &hub, utc("2026-03-14T12:00:00Z")),
            "Saturday noon"
        );
        assert_eq!(
            next_both_open(&edge, &hub, utc("2026-03-12T12:00:00Z")),
            Some(utc("2026-03-14T00:00:00Z")),
            "Friday's night window is open when the weekend starts"
        );
        assert_eq!(
            next_both_open(&edge, &hub, utc("2026-03-14T12:00:00Z")),
            Some(utc("2026-03-14T22:00:00Z"))
        );
        assert_eq!(
            next_both_open(&[], &hub, utc("2026-03-13T12:00:00Z")),
            Some(utc("2026-03-14T00:00:00Z"))
        );
        // Never both open: none found.
        let never = [window("0 12 * * *;1h")];
        assert_eq!(
            next_both_open(&edge, &never, utc("2026-03-13T12:30:00Z")),
            None
        );
    }

    #[test]
    fn the_hubs_windows_go_to_the_agent_one_per_line() {
        let ws = [
            window("0 22 * * *;4h"),
            window("0 6 * * SAT;2h;Europe/Berlin"),
        ];
        let value = to_annotation(&ws);
        assert_eq!(value, "0 22 * * *;4h\n0 6 * * SAT;2h;Europe/Berlin");
        assert_eq!(from_annotation(&value).unwrap(), ws);
        assert!(from_annotation("0 22 * *;4h").is_err());
    }

    #[test]
    fn durations_add_their_parts() {
        assert_eq!(parse_duration("1h30m"), Ok(TimeDelta::minutes(90)));
        assert_eq!(parse_duration("45s"), Ok(TimeDelta::seconds(45)));
        assert_eq!(parse_duration("168h"), Ok(MAX_DURATION));
    }
}

//! Maintenance: when the cluster lets new versions of its works in (issue 31).
//!
//! Outside its maintenance windows, or while someone at the machine holds updates
//! (`ocm-edge-agent hold`), the agent still receives and stores every new version of a work, and
//! keeps reconciling the version on the cluster (drift is still corrected), but applies no new
//! version and removes no work until the gate opens; the work's status says `Held` with the
//! reason and the next window, so the hub's rollouts wait for the cluster instead of failing it.
//!
//! - [`window`]: maintenance windows (cron schedule, duration, time zone), pure, from the
//!   contracts crate (`ocm_edge_schemas::maintenance`): the hub checks the same syntax.
//! - [`hold`]: the hold file in the data dir, which `hold` / `release` write while the agent runs.
//! - this file: [`gate`], whether updates may be applied now, and the `Held` condition. Pure.

pub mod hold;
pub use ocm_edge_schemas::maintenance as window;

use chrono::{DateTime, SecondsFormat, Utc};
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus};
use ocm_edge_schemas::api::work::{
    REASON_HELD_ON_SITE, REASON_OUTSIDE_MAINTENANCE_WINDOW, REASON_UPDATES_ALLOWED, WORK_HELD,
};

pub use hold::Hold;
pub use window::{MaintenanceWindow, WindowError};

/// Annotation on a ManifestWork: `"true"` lets its removal go ahead while updates are held (a
/// delete waits for the gate otherwise).
pub const ANNOTATION_DELETE_WHILE_HELD: &str = "ocm-edge.io/delete-while-held";

/// The maintenance windows the hub set, as this agent read them from the hub's view: the
/// windows, or why they cannot be read (a newer hub's syntax or time zone).
pub type HubWindows = Result<Vec<MaintenanceWindow>, String>;

/// [`gate`] with the hub's windows as read: windows this agent cannot read hold every update
/// (a hold on site still says so first). A window that cannot be read must not let a version in
/// at a time the hub did not allow: nothing new is applied until the hub sends windows this
/// agent reads.
pub fn gate_with_hub(
    edge: &[MaintenanceWindow],
    hub: &HubWindows,
    hold: Option<&Hold>,
    now: DateTime<Utc>,
) -> Gate {
    match (hub, hold) {
        (Ok(hub), _) => gate(edge, hub, hold, now),
        (Err(_), Some(_)) => gate(edge, &[], hold, now),
        (Err(error), None) => Gate::Closed(Closed {
            reason: REASON_OUTSIDE_MAINTENANCE_WINDOW,
            next_window: None,
            why: format!(
                "the maintenance windows set on the hub cannot be read by this agent ({error}); \
                 updates are held until the hub's windows are ones it reads (`ocm-edge cluster \
                 maintenance` on the hub) or the agent is upgraded"
            ),
        }),
    }
}

/// Whether updates may be applied now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// No hold, and a window is open (or none is declared).
    Open,
    /// Updates wait.
    Closed(Closed),
}

/// Why updates wait, and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    /// [`REASON_HELD_ON_SITE`] or [`REASON_OUTSIDE_MAINTENANCE_WINDOW`].
    pub reason: &'static str,
    /// The next time a window opens (`None` for a hold, which lasts until released).
    pub next_window: Option<DateTime<Utc>>,
    /// Why, in words, for the condition's message and the log.
    pub why: String,
}

impl Gate {
    /// Whether updates may be applied.
    pub fn is_open(&self) -> bool {
        matches!(self, Gate::Open)
    }
}

/// The gate at `now`: closed by a hold whatever the windows say, else by the windows: the
/// edge's own (`--maintenance-window`) and the hub's (its view of the cluster) must both be open
/// (a side that declares none is always open).
pub fn gate(
    edge: &[MaintenanceWindow],
    hub: &[MaintenanceWindow],
    hold: Option<&Hold>,
    now: DateTime<Utc>,
) -> Gate {
    if let Some(hold) = hold {
        let note = if hold.note.is_empty() {
            String::new()
        } else {
            format!(" ({})", hold.note)
        };
        return Gate::Closed(Closed {
            reason: REASON_HELD_ON_SITE,
            next_window: None,
            why: format!(
                "updates held on site since {}{note}; `ocm-edge-agent release` on the machine lets them in",
                rfc3339(hold.since)
            ),
        });
    }
    if window::both_open(edge, hub, now) {
        return Gate::Open;
    }
    let next_window = window::next_both_open(edge, hub, now);
    let list = |side: &str, ws: &[MaintenanceWindow]| {
        (!ws.is_empty()).then(|| {
            let ws: Vec<&str> = ws.iter().map(MaintenanceWindow::as_str).collect();
            format!("{side}: {}", ws.join(" | "))
        })
    };
    let list = [list("edge", edge), list("hub", hub)]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; ");
    let why = match next_window {
        Some(t) => format!(
            "outside the maintenance windows ({list}); the next opens at {}",
            rfc3339(t)
        ),
        None => format!("outside the maintenance windows ({list}); none opens again"),
    };
    Gate::Closed(Closed {
        reason: REASON_OUTSIDE_MAINTENANCE_WINDOW,
        next_window,
        why,
    })
}

/// The work condition `Held=True` for a version that waits (`generation`), with the gate's
/// reason; its message names the version waiting and the one still reconciled (if any).
pub fn held_condition(
    closed: &Closed,
    generation: i64,
    waiting_version: i64,
    on_cluster_version: Option<i64>,
) -> Condition {
    let on_cluster = match on_cluster_version {
        Some(v) => format!("version {v} stays applied and reconciled"),
        None => "nothing of it is applied yet".to_owned(),
    };
    Condition::new(
        WORK_HELD,
        ConditionStatus::True,
        closed.reason,
        format!(
            "version {waiting_version} is stored and waits: {}; {on_cluster}",
            closed.why
        ),
    )
    .with_observed_generation(generation)
}

/// The work condition `Held=False` once a version that waited is applied.
pub fn released_condition(generation: i64) -> Condition {
    Condition::new(
        WORK_HELD,
        ConditionStatus::False,
        REASON_UPDATES_ALLOWED,
        "the version that waited is applied",
    )
    .with_observed_generation(generation)
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn nightly() -> Vec<MaintenanceWindow> {
        vec!["0 22 * * *;2h;UTC".parse().unwrap()]
    }

    #[test]
    fn without_windows_or_hold_updates_go_ahead() {
        assert_eq!(
            gate(&[], &[], None, utc("2026-03-10T12:00:00Z")),
            Gate::Open
        );
    }

    #[test]
    fn outside_every_window_the_gate_is_closed_until_the_next_one() {
        let Gate::Closed(c) = gate(&nightly(), &[], None, utc("2026-03-10T12:00:00Z")) else {
            panic!("open at noon");
        };
        assert_eq!(c.reason, REASON_OUTSIDE_MAINTENANCE_WINDOW);
        assert_eq!(c.next_window, Some(utc("2026-03-10T22:00:00Z")));
        assert!(c.why.contains("2026-03-10T22:00:00Z"), "{}", c.why);
        assert!(gate(&nightly(), &[], None, utc("2026-03-10T23:00:00Z")).is_open());
    }

    #[test]
    fn the_hubs_windows_close_the_gate_too_and_both_sides_are_named() {
        let weekends: Vec<MaintenanceWindow> = vec!["0 0 * * SAT,SUN;24h".parse().unwrap()];
        // Tuesday 23:00: the edge's night window is open, the hub's weekend is not.
        let Gate::Closed(c) = gate(&nightly(), &weekends, None, utc("2026-03-10T23:00:00Z")) else {
            panic!("open outside the hub's windows");
        };
        // Friday's night window closes at midnight, when the weekend starts: Saturday night.
        assert_eq!(c.next_window, Some(utc("2026-03-14T22:00:00Z")));
        assert!(
            c.why.contains("edge: 0 22 * * *;2h;UTC") && c.why.contains("hub: 0 0 * * SAT,SUN;24h"),
            "{}",
            c.why
        );
        assert!(gate(&[], &weekends, None, utc("2026-03-14T12:00:00Z")).is_open());
    }

    #[test]
    fn a_hold_closes_the_gate_even_in_a_window_until_released() {
        let hold = Hold {
            since: utc("2026-03-10T21:00:00Z"),
            note: "line 3 running".to_owned(),
        };
        let Gate::Closed(c) = gate(&nightly(), &[], Some(&hold), utc("2026-03-10T23:00:00Z"))
        else {
            panic!("a hold lets updates in");
        };
        assert_eq!(c.reason, REASON_HELD_ON_SITE);
        assert_eq!(c.next_window, None);
        assert!(
            c.why.contains("line 3 running") && c.why.contains("release"),
            "{}",
            c.why
        );
    }

    #[test]
    fn the_held_condition_names_the_waiting_version_and_the_one_on_the_cluster() {
        let Gate::Closed(c) = gate(&nightly(), &[], None, utc("2026-03-10T12:00:00Z")) else {
            panic!()
        };
        let held = held_condition(&c, 3, 3, Some(2));
        assert_eq!(held.type_, WORK_HELD);
        assert_eq!(held.status, ConditionStatus::True);
        assert_eq!(held.observed_generation, 3);
        assert!(
            held.message.contains("version 3 is stored"),
            "{}",
            held.message
        );
        assert!(
            held.message.contains("version 2 stays applied"),
            "{}",
            held.message
        );
    }
    #[test]
    fn hub_windows_this_agent_cannot_read_hold_every_update() {
        let unreadable: HubWindows =
            Err("time zone \"Mars/Olympus\" is not an IANA time zone".into());
        let Gate::Closed(c) = gate_with_hub(&[], &unreadable, None, utc("2026-03-10T23:00:00Z"))
        else {
            panic!("open")
        };
        assert_eq!(c.reason, REASON_OUTSIDE_MAINTENANCE_WINDOW);
        assert_eq!(c.next_window, None);
        assert!(
            c.why.contains("Mars/Olympus") && c.why.contains("held"),
            "{}",
            c.why
        );
        // Even inside the edge's own window.
        assert!(
            !gate_with_hub(&nightly(), &unreadable, None, utc("2026-03-10T23:00:00Z")).is_open()
        );
        // A hold on site says so first.
        let hold = Hold {
            since: utc("2026-03-10T20:00:00Z"),
            note: String::new(),
        };
        let Gate::Closed(c) =
            gate_with_hub(&[], &unreadable, Some(&hold), utc("2026-03-10T23:00:00Z"))
        else {
            panic!("open")
        };
        assert_eq!(c.reason, REASON_HELD_ON_SITE);
        // Windows it reads are what they say.
        assert!(
            gate_with_hub(&nightly(), &Ok(vec![]), None, utc("2026-03-10T23:00:00Z")).is_open()
        );
    }
}

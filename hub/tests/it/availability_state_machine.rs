//! The availability state machine with simulated time: every transition, stale wills, taint
//! timeAdded, deadline exactness, API-server health and recovery.

use chrono::{DateTime, TimeDelta, Utc};
use ocm_edge_hub::availability::{
    AvailabilityConfig, AvailabilityError, ClusterAvailability, DEFAULT_GRACE_MULTIPLIER,
    REASON_AVAILABLE, REASON_CONNECTION_LOST, REASON_KUBE_API_SERVER_UNAVAILABLE,
    REASON_LEASE_UPDATE_STOPPED, Signal,
};
use ocm_edge_schemas::api::cluster::{
    MANAGED_CLUSTER_CONDITION_AVAILABLE, ManagedClusterStatus, TAINT_UNAVAILABLE,
    TAINT_UNREACHABLE, Taint, TaintEffect,
};
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, Time};
use ocm_edge_schemas::wire::cluster_events::{Presence, PresenceState};

use ConditionStatus::{False, True, Unknown};

/// `secs` (fractions allowed) after a fixed start.
fn t(secs: f64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap()
        + TimeDelta::milliseconds((secs * 1000.0).round() as i64)
}

fn cfg() -> AvailabilityConfig {
    AvailabilityConfig::default()
}

fn birth(seq: u64) -> Signal {
    Signal::Birth {
        connection_seq: seq,
    }
}

fn death(seq: u64) -> Signal {
    Signal::Death {
        connection_seq: seq,
    }
}

fn renew() -> Signal {
    Signal::LeaseRenewed {
        lease_duration_seconds: Some(60),
    }
}

fn health(healthy: bool) -> Signal {
    Signal::ApiServerHealth {
        healthy,
        message: if healthy {
            String::new()
        } else {
            "livez: 503".into()
        },
    }
}

/// A cluster with a 60 s lease, tracked from t=0, born (session 1) at t=0.
fn live() -> ClusterAvailability {
    let mut a = ClusterAvailability::new(60, t(0.0));
    a.observe(&cfg(), birth(1), t(0.0));
    a
}

fn taint_key(a: &ClusterAvailability) -> Option<&str> {
    a.taint().map(|t| t.key.as_str())
}

fn taint_added(a: &ClusterAvailability) -> Option<Time> {
    a.taint().and_then(|t| t.time_added)
}

#[test]
fn a_newly_tracked_cluster_has_no_condition_and_is_tainted_unreachable_until_the_agent_speaks() {
    let mut a = ClusterAvailability::new(60, t(0.0));
    assert!(
        a.condition().is_none(),
        "OCM: absent until the agent reports"
    );
    assert_eq!(taint_key(&a), Some(TAINT_UNREACHABLE));
    assert_eq!(taint_added(&a), Some(Time::new(t(0.0))));
    assert_eq!(a.taint().unwrap().effect, TaintEffect::NoSelect);
    assert_eq!(a.next_deadline(&cfg()), Some(t(90.0)));

    let tr = a.observe(&cfg(), Signal::Tick, t(89.0));
    assert!(!tr.changed);
    assert!(a.condition().is_none());

    let tr = a.observe(&cfg(), birth(1), t(10.0));
    assert!(tr.changed);
    assert_eq!(a.status(), True);
    assert_eq!(a.condition().unwrap().reason, REASON_AVAILABLE);
    assert_eq!(taint_key(&a), None);
}

#[test]
fn a_cluster_that_never_speaks_becomes_unknown_when_its_first_grace_period_ends() {
    let mut a = ClusterAvailability::new(60, t(0.0));
    let tr = a.observe(&cfg(), Signal::Tick, t(90.0));
    assert!(tr.changed);
    assert_eq!(a.status(), Unknown);
    assert_eq!(a.condition().unwrap().reason, REASON_LEASE_UPDATE_STOPPED);
    assert_eq!(
        taint_added(&a),
        Some(Time::new(t(0.0))),
        "the same taint keeps its timeAdded"
    );
    assert_eq!(tr.next_deadline, None);
}

/// Each row: signals fed in order (seconds, signal), then the expected status, reason and taint.
#[test]
fn every_transition_of_the_available_condition() {
    type Row = (
        &'static str,
        Vec<(f64, Signal)>,
        ConditionStatus,
        &'static str,
        Option<&'static str>,
    );
    let rows: Vec<Row> = vec![
        ("birth", vec![(0.0, birth(1))], True, REASON_AVAILABLE, None),
        (
            "renewal",
            vec![(0.0, birth(1)), (20.0, renew())],
            True,
            REASON_AVAILABLE,
            None,
        ),
        (
            "api server unhealthy",
            vec![(0.0, birth(1)), (5.0, health(false))],
            False,
            REASON_KUBE_API_SERVER_UNAVAILABLE,
            Some(TAINT_UNAVAILABLE),
        ),
        (
            "api server healthy again",
            vec![(0.0, birth(1)), (5.0, health(false)), (9.0, health(true))],
            True,
            REASON_AVAILABLE,
            None,
        ),
        (
            "will of the current session",
            vec![(0.0, birth(1)), (30.0, death(1))],
            Unknown,
            REASON_CONNECTION_LOST,
            Some(TAINT_UNREACHABLE),
        ),
        (
            "will of a newer session",
            vec![(0.0, birth(1)), (30.0, death(2))],
            Unknown,
            REASON_CONNECTION_LOST,
            Some(TAINT_UNREACHABLE),
        ),
        (
            "stale will",
            vec![(0.0, birth(1)), (10.0, birth(2)), (11.0, death(1))],
            True,
            REASON_AVAILABLE,
            None,
        ),
        (
            "half-open link",
            vec![(0.0, birth(1)), (20.0, renew()), (110.0, Signal::Tick)],
            Unknown,
            REASON_LEASE_UPDATE_STOPPED,
            Some(TAINT_UNREACHABLE),
        ),
        (
            "birth after the will",
            vec![(0.0, birth(1)), (30.0, death(1)), (40.0, birth(2))],
            True,
            REASON_AVAILABLE,
            None,
        ),
        (
            "renewal after the will",
            vec![(0.0, birth(1)), (30.0, death(1)), (40.0, renew())],
            True,
            REASON_AVAILABLE,
            None,
        ),
        (
            "renewal after the lease expired",
            vec![(0.0, birth(1)), (90.0, Signal::Tick), (95.0, renew())],
            True,
            REASON_AVAILABLE,
            None,
        ),
        (
            "recovered but its api server is down",
            vec![
                (0.0, birth(1)),
                (5.0, health(false)),
                (30.0, death(1)),
                (40.0, birth(2)),
            ],
            False,
            REASON_KUBE_API_SERVER_UNAVAILABLE,
            Some(TAINT_UNAVAILABLE),
        ),
        (
            "unreachable beats unhealthy",
            vec![(0.0, birth(1)), (5.0, health(false)), (30.0, death(1))],
            Unknown,
            REASON_CONNECTION_LOST,
            Some(TAINT_UNREACHABLE),
        ),
        (
            "will while the lease had expired",
            vec![(0.0, birth(1)), (90.0, Signal::Tick), (100.0, death(1))],
            Unknown,
            REASON_CONNECTION_LOST,
            Some(TAINT_UNREACHABLE),
        ),
    ];
    for (name, steps, status, reason, taint) in rows {
        let mut a = ClusterAvailability::new(60, t(0.0));
        for (at, signal) in steps {
            a.observe(&cfg(), signal, t(at));
        }
        assert_eq!(a.status(), status, "{name}");
        assert_eq!(a.condition().unwrap().reason, reason, "{name}");
        assert_eq!(taint_key(&a), taint, "{name}");
        if let Some(t) = a.taint() {
            assert_eq!(t.effect, TaintEffect::NoSelect, "{name}");
        }
    }
}

#[test]
fn a_stale_will_does_not_mark_a_live_cluster_unreachable_and_is_reported_stale() {
    // The broker publishes the will of a taken-over connection after the new one's birth.
    let mut a = live();
    a.observe(&cfg(), birth(2), t(10.0));
    let tr = a.observe(&cfg(), death(1), t(10.5));
    assert!(tr.stale);
    assert!(!tr.changed);
    assert_eq!(a.status(), True);
    assert_eq!(a.taint(), None);
    assert_eq!(a.connection_seq(), Some(2));
    // The current session's will still counts.
    let tr = a.observe(&cfg(), death(2), t(20.0));
    assert!(!tr.stale && tr.changed);
    assert_eq!(a.status(), Unknown);
}

#[test]
fn the_will_taints_the_cluster_at_the_instant_it_arrives() {
    // keepalive 10 s: the broker publishes the will within 15 s of the link breaking; the hub
    // acts on arrival, so the taint is stamped within 1.5 x keepalive + 1 s of the cut.
    let keepalive = 10.0;
    for will_delay in [0.2, 7.0, 1.5 * keepalive] {
        let cut = 33.0;
        let mut a = live();
        a.observe(&cfg(), renew(), t(30.0));
        let tr = a.observe(&cfg(), death(1), t(cut + will_delay));
        assert!(tr.changed);
        assert_eq!(a.status(), Unknown);
        let added = taint_added(&a).unwrap().as_datetime();
        assert!(
            added <= t(cut + 1.5 * keepalive + 1.0),
            "delay {will_delay}"
        );
        assert_eq!(added, Time::new(t(cut + will_delay)).as_datetime());
        assert_eq!(
            tr.next_deadline, None,
            "nothing to tick until the agent is back"
        );
    }
}

#[test]
fn the_lease_deadline_is_exact() {
    // (lease seconds, multiplier, grace in seconds)
    let rows = [
        (60, DEFAULT_GRACE_MULTIPLIER, 90.0),
        (5, 1.5, 7.5),
        (60, 5.0, 300.0),
        (10, 2.0, 20.0),
    ];
    for (lease, multiplier, grace) in rows {
        let config = AvailabilityConfig::new(multiplier).unwrap();
        let start = |at: f64| {
            let mut a = ClusterAvailability::new(lease, t(0.0));
            a.observe(&config, birth(1), t(0.0));
            let tr = a.observe(
                &config,
                Signal::LeaseRenewed {
                    lease_duration_seconds: Some(lease),
                },
                t(at),
            );
            assert_eq!(
                tr.next_deadline,
                Some(t(at + grace)),
                "lease {lease} x {multiplier}"
            );
            a
        };
        let mut a = start(100.0);
        a.observe(&config, Signal::Tick, t(100.0 + grace - 1.0));
        assert_eq!(
            a.status(),
            True,
            "lease {lease} x {multiplier}: 1 s before the grace ends"
        );
        let mut a = start(100.0);
        a.observe(&config, Signal::Tick, t(100.0 + grace - 0.001));
        assert_eq!(
            a.status(),
            True,
            "lease {lease} x {multiplier}: 1 ms before"
        );
        let mut a = start(100.0);
        let tr = a.observe(&config, Signal::Tick, t(100.0 + grace));
        assert!(tr.changed);
        assert_eq!(
            a.status(),
            Unknown,
            "lease {lease} x {multiplier}: at the grace"
        );
        assert_eq!(
            a.condition().unwrap().last_transition_time,
            Some(Time::new(t(100.0 + grace)))
        );
    }
}

#[test]
fn the_unreachable_taint_keeps_its_time_added_across_ticks_and_reasons() {
    let mut a = live();
    a.observe(&cfg(), Signal::Tick, t(90.0));
    let added = taint_added(&a);
    assert_eq!(added, Some(Time::new(t(90.0))));
    for at in [91.0, 200.0, 5000.0] {
        let tr = a.observe(&cfg(), Signal::Tick, t(at));
        assert!(!tr.changed, "nothing to publish at {at}");
        assert_eq!(taint_added(&a), added);
    }
    // The will arrives late: the reason changes, the taint (and its time) stays.
    let tr = a.observe(&cfg(), death(1), t(6000.0));
    assert!(tr.changed);
    assert_eq!(a.condition().unwrap().reason, REASON_CONNECTION_LOST);
    assert_eq!(taint_added(&a), added);
    assert_eq!(
        a.condition().unwrap().last_transition_time,
        Some(Time::new(t(90.0)))
    );
}

#[test]
fn switching_between_unavailable_and_unreachable_restamps_the_taint() {
    let mut a = live();
    a.observe(&cfg(), health(false), t(5.0));
    assert_eq!(taint_key(&a), Some(TAINT_UNAVAILABLE));
    assert_eq!(taint_added(&a), Some(Time::new(t(5.0))));
    a.observe(&cfg(), health(false), t(25.0));
    assert_eq!(
        taint_added(&a),
        Some(Time::new(t(5.0))),
        "same taint, same time"
    );
    a.observe(&cfg(), death(1), t(30.0));
    assert_eq!(taint_key(&a), Some(TAINT_UNREACHABLE));
    assert_eq!(taint_added(&a), Some(Time::new(t(30.0))));
    a.observe(&cfg(), birth(2), t(40.0));
    assert_eq!(
        taint_key(&a),
        Some(TAINT_UNAVAILABLE),
        "the API server is still reported down"
    );
    assert_eq!(taint_added(&a), Some(Time::new(t(40.0))));
    a.observe(&cfg(), health(true), t(50.0));
    assert_eq!(a.taint(), None);
    assert_eq!(
        a.condition().unwrap().last_transition_time,
        Some(Time::new(t(50.0)))
    );
}

#[test]
fn an_unhealthy_api_server_reports_the_agents_message() {
    let mut a = live();
    a.observe(&cfg(), health(false), t(5.0));
    let c = a.condition().unwrap();
    assert_eq!(
        (c.status, c.reason.as_str(), c.message.as_str()),
        (False, REASON_KUBE_API_SERVER_UNAVAILABLE, "livez: 503")
    );
    a.observe(
        &cfg(),
        Signal::ApiServerHealth {
            healthy: false,
            message: String::new(),
        },
        t(6.0),
    );
    assert_eq!(
        a.condition().unwrap().message,
        "The kube-apiserver is not ok"
    );
}

#[test]
fn renewals_of_a_live_cluster_change_nothing_to_publish_but_push_the_deadline() {
    let mut a = live();
    let ltt = a.condition().unwrap().last_transition_time;
    for at in [20.0, 40.0, 60.0, 80.0, 100.0] {
        let tr = a.observe(&cfg(), renew(), t(at));
        assert!(!tr.changed, "at {at}");
        assert_eq!(tr.next_deadline, Some(t(at + 90.0)));
    }
    assert_eq!(a.condition().unwrap().last_transition_time, ltt);
    a.observe(&cfg(), Signal::Tick, t(189.0));
    assert_eq!(a.status(), True);
}

#[test]
fn the_lease_duration_follows_the_agent_down_to_five_seconds() {
    let rows = [
        (Some(30), 30),
        (Some(5), 5),
        (Some(1), 5),
        (Some(0), 60),
        (Some(-3), 60),
        (None, 60),
    ];
    for (sent, in_force) in rows {
        let mut a = live();
        let tr = a.observe(
            &cfg(),
            Signal::LeaseRenewed {
                lease_duration_seconds: sent,
            },
            t(10.0),
        );
        assert_eq!(a.lease_duration_seconds(), in_force, "{sent:?}");
        let grace = TimeDelta::milliseconds(i64::from(in_force) * 1500);
        assert_eq!(tr.next_deadline, Some(t(10.0) + grace), "{sent:?}");
    }
}

#[test]
fn after_a_hub_restart_the_grace_period_runs_from_the_restart() {
    let mut a = live();
    a.observe(&cfg(), renew(), t(10.0));
    // Stored, then restored 1000 s later.
    let stored = serde_json::to_string(&a).unwrap();
    let mut restored: ClusterAvailability = serde_json::from_str(&stored).unwrap();
    assert_eq!(restored, a);
    restored.resume(t(1010.0));
    let tr = restored.observe(&cfg(), Signal::Tick, t(1010.0));
    assert!(
        !tr.changed,
        "no cluster flaps to Unknown because the hub was away"
    );
    assert_eq!(tr.next_deadline, Some(t(1100.0)));
    restored.observe(&cfg(), Signal::Tick, t(1100.0));
    assert_eq!(restored.status(), Unknown);
}

#[test]
fn a_restored_unknown_cluster_keeps_its_taint_until_it_proves_alive() {
    let mut a = live();
    a.observe(&cfg(), death(1), t(30.0));
    a.resume(t(500.0));
    let tr = a.observe(&cfg(), Signal::Tick, t(500.0));
    assert!(!tr.changed);
    assert_eq!(taint_added(&a), Some(Time::new(t(30.0))));
    // Its birth was missed while the hub was down; its next renewal brings it back.
    a.observe(&cfg(), renew(), t(510.0));
    assert_eq!(a.status(), True);
}

#[test]
fn a_birth_with_a_lower_sequence_starts_a_new_session() {
    // An agent whose data directory was wiped counts from 1 again.
    let mut a = live();
    a.observe(&cfg(), birth(57), t(5.0));
    a.observe(&cfg(), death(57), t(10.0));
    a.observe(&cfg(), birth(1), t(20.0));
    assert_eq!(a.status(), True);
    assert_eq!(a.connection_seq(), Some(1));
    a.observe(&cfg(), death(1), t(30.0));
    assert_eq!(a.status(), Unknown, "its own wills count again");
}

#[test]
fn apply_to_writes_the_condition_and_taint_and_keeps_everything_else() {
    let user_taint = Taint {
        key: "example.com/maintenance".into(),
        value: "yes".into(),
        effect: TaintEffect::PreferNoSelect,
        time_added: None,
    };
    let joined = Condition::new(
        "ManagedClusterJoined",
        True,
        "ManagedClusterJoined",
        "joined",
    );
    let mut conditions = vec![joined.clone()];
    let mut taints = vec![user_taint.clone()];

    let mut a = ClusterAvailability::new(60, t(0.0));
    assert!(a.apply_to(&mut conditions, &mut taints));
    assert_eq!(taints.len(), 2);
    assert!(!a.apply_to(&mut conditions, &mut taints), "idempotent");

    a.observe(&cfg(), birth(1), t(1.0));
    assert!(a.apply_to(&mut conditions, &mut taints));
    assert_eq!(taints, vec![user_taint.clone()]);
    assert_eq!(conditions[0], joined);
    assert_eq!(conditions[1].type_, MANAGED_CLUSTER_CONDITION_AVAILABLE);
    assert_eq!(conditions[1].status, True);

    a.observe(&cfg(), health(false), t(2.0));
    assert!(a.apply_to(&mut conditions, &mut taints));
    assert_eq!(taints[1].key, TAINT_UNAVAILABLE);
    assert_eq!(conditions.len(), 2);
    assert!(!a.apply_to(&mut conditions, &mut taints));
}

#[test]
fn signals_are_read_from_presence_and_cluster_status_events() {
    let online = Presence {
        state: PresenceState::Online,
        connection_seq: 7,
    };
    let offline = Presence {
        state: PresenceState::Offline,
        connection_seq: 7,
    };
    assert_eq!(Signal::from_presence(&online), birth(7));
    assert_eq!(Signal::from_presence(&offline), death(7));

    let status = |s: ConditionStatus, message: &str| ManagedClusterStatus {
        conditions: vec![Condition::new(
            MANAGED_CLUSTER_CONDITION_AVAILABLE,
            s,
            "r",
            message,
        )],
        ..Default::default()
    };
    assert_eq!(
        Signal::from_cluster_status(&status(True, "")),
        Some(health(true))
    );
    assert_eq!(
        Signal::from_cluster_status(&status(False, "livez: 503")),
        Some(health(false))
    );
    assert_eq!(Signal::from_cluster_status(&status(Unknown, "")), None);
    assert_eq!(
        Signal::from_cluster_status(&ManagedClusterStatus::default()),
        None
    );
}

#[test]
fn the_grace_multiplier_must_be_at_least_one() {
    assert_eq!(AvailabilityConfig::default().grace_multiplier, 1.5);
    assert!(AvailabilityConfig::new(1.0).is_ok());
    for bad in [0.5, 0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(
                AvailabilityConfig::new(bad),
                Err(AvailabilityError::InvalidGraceMultiplier(_))
            ),
            "{bad}"
        );
    }
}

#[test]
fn adopting_a_stored_cluster_keeps_its_condition_and_taint_time() {
    let mut unknown = Condition::new(
        MANAGED_CLUSTER_CONDITION_AVAILABLE,
        Unknown,
        REASON_LEASE_UPDATE_STOPPED,
        "",
    );
    unknown.last_transition_time = Some(Time::new(t(5.0)));
    let stored_taint = Taint {
        key: TAINT_UNREACHABLE.into(),
        value: String::new(),
        effect: TaintEffect::NoSelect,
        time_added: Some(Time::new(t(5.0))),
    };
    let mut conditions = vec![unknown.clone()];
    let mut taints = vec![stored_taint.clone()];
    let mut a = ClusterAvailability::adopt(60, &conditions, &taints, t(100.0));
    assert!(
        !a.apply_to(&mut conditions, &mut taints),
        "nothing changes on adoption"
    );
    assert_eq!(
        a.next_deadline(&cfg()),
        None,
        "Unknown until it proves alive"
    );
    a.observe(&cfg(), renew(), t(110.0));
    assert_eq!(a.status(), True);

    // An available cluster stays available for a grace period counted from the adoption.
    let mut available = Condition::new(
        MANAGED_CLUSTER_CONDITION_AVAILABLE,
        True,
        REASON_AVAILABLE,
        "",
    );
    available.last_transition_time = Some(Time::new(t(5.0)));
    let mut a = ClusterAvailability::adopt(60, &[available.clone()], &[], t(100.0));
    assert_eq!(a.taint(), None);
    assert_eq!(a.condition(), Some(&available));
    assert_eq!(a.next_deadline(&cfg()), Some(t(190.0)));
    a.observe(&cfg(), Signal::Tick, t(190.0));
    assert_eq!(a.status(), Unknown);

    // A cluster never heard from is tainted unreachable, keeping a stored taint's time.
    let a = ClusterAvailability::adopt(60, &[], std::slice::from_ref(&stored_taint), t(100.0));
    assert_eq!(a.taint(), Some(&stored_taint));
    let a = ClusterAvailability::adopt(60, &[], &[], t(100.0));
    assert_eq!(taint_added(&a), Some(Time::new(t(100.0))));
}

#[test]
fn a_lease_renewal_is_timed_by_the_hub_not_by_the_agents_clock() {
    use ocm_edge_schemas::api::lease::Lease;
    let mut lease: Lease = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "managed-cluster-lease", "namespace": "edge-1"},
        "spec": {"leaseDurationSeconds": 10, "renewTime": "2001-01-01T00:00:00.000000Z"}
    }))
    .unwrap();
    let mut a = live();
    let tr = a.observe(&cfg(), Signal::from_lease(&lease), t(50.0));
    assert_eq!(
        tr.next_deadline,
        Some(t(65.0)),
        "10 s x 1.5 from the hub's now"
    );
    lease.spec.lease_duration_seconds = None;
    assert_eq!(
        Signal::from_lease(&lease),
        Signal::LeaseRenewed {
            lease_duration_seconds: None
        }
    );
}

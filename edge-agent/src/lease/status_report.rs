//! When the cluster status goes out again because the cluster's facts changed (capacity,
//! allocatable, nodes, version, claims). Pure: the caller passes `now` and what it read.
//!
//! The facts are read every `interval` (a minute by default) on the health tick, never with a
//! lease renewal, and the status goes out only when they differ from the last status sent, so an
//! idle cluster whose facts stay put costs no byte more. It also goes out when the hub's answer
//! to the join request changes (the hub drops the statuses of a cluster it has not accepted, so
//! the one sent on connect is lost until then), and after every join request (the hub takes a
//! join request's claims as the cluster's, and it carries only the operator's: the status after
//! it puts the detected ones back).

use chrono::{DateTime, Utc};

use super::schedule::LeaseSchedule;
use crate::applier::facts::ClusterFacts;
use crate::registration::Registration;

/// What the last cluster status carried, and when the facts are next read.
#[derive(Debug, Clone)]
pub struct StatusReport {
    reads: LeaseSchedule,
    sent: Option<Sent>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Sent {
    facts: Option<ClusterFacts>,
    hub: HubAnswer,
}

/// Where the cluster stands with the hub when a status is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubAnswer {
    /// The hub's answer to the join request, as last heard.
    pub registration: Registration,
    /// Join requests sent so far.
    pub join_requests: u64,
}

impl StatusReport {
    /// Facts read every `interval`; nothing sent yet.
    pub fn new(interval: std::time::Duration) -> Self {
        StatusReport {
            reads: LeaseSchedule::every(interval),
            sent: None,
        }
    }

    /// Whether the facts are due to be read again at `now` (always before the first read).
    pub fn read_due(&self, now: DateTime<Utc>) -> bool {
        self.reads.due(now)
    }

    /// The facts were read (or tried) at `now`.
    pub fn read(&mut self, now: DateTime<Utc>) {
        self.reads.renewed(now);
    }

    /// Whether a status must go out for `facts` (the last read; `None`: never read) where the
    /// cluster stands at `hub`: true when either differs from the last status sent, or none was
    /// sent.
    pub fn must_send(&self, facts: Option<&ClusterFacts>, hub: HubAnswer) -> bool {
        self.sent
            .as_ref()
            .is_none_or(|sent| sent.facts.as_ref() != facts || sent.hub != hub)
    }

    /// A status carrying `facts` went out where the cluster stood at `hub`.
    pub fn sent(&mut self, facts: Option<&ClusterFacts>, hub: HubAnswer) {
        self.sent = Some(Sent {
            facts: facts.cloned(),
            hub,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::TimeZone;
    use ocm_edge_schemas::api::meta::Quantity;

    use super::*;

    fn t(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + s, 0).unwrap()
    }

    fn accepted(join_requests: u64) -> HubAnswer {
        HubAnswer {
            registration: Registration::Accepted,
            join_requests,
        }
    }

    fn facts(cpu: &str) -> ClusterFacts {
        let mut f = ClusterFacts {
            nodes: 1,
            ..ClusterFacts::default()
        };
        f.allocatable.insert("cpu".into(), Quantity(cpu.into()));
        f
    }

    #[test]
    fn facts_are_read_once_per_interval_not_on_every_tick() {
        let mut report = StatusReport::new(Duration::from_secs(60));
        assert!(report.read_due(t(0)), "the first read is due at once");
        report.read(t(0));
        assert!(!report.read_due(t(5)));
        assert!(!report.read_due(t(59)));
        assert!(report.read_due(t(60)));
    }

    #[test]
    fn unchanged_facts_send_nothing_and_changed_ones_send_once() {
        let mut report = StatusReport::new(Duration::from_secs(60));
        assert!(
            report.must_send(Some(&facts("4")), accepted(0)),
            "nothing was sent yet"
        );
        report.sent(Some(&facts("4")), accepted(0));
        assert!(!report.must_send(Some(&facts("4")), accepted(0)));
        assert!(report.must_send(Some(&facts("8")), accepted(0)));
        report.sent(Some(&facts("8")), accepted(0));
        assert!(!report.must_send(Some(&facts("8")), accepted(0)));
    }

    #[test]
    fn facts_read_for_the_first_time_are_sent() {
        let mut report = StatusReport::new(Duration::from_secs(60));
        // Connected while the API server was down: a status without facts.
        report.sent(None, accepted(0));
        assert!(!report.must_send(None, accepted(0)));
        assert!(report.must_send(Some(&facts("4")), accepted(0)));
    }

    #[test]
    fn a_join_request_since_the_last_status_sends_the_status_again() {
        let mut report = StatusReport::new(Duration::from_secs(60));
        report.sent(Some(&facts("4")), accepted(1));
        assert!(!report.must_send(Some(&facts("4")), accepted(1)));
        assert!(report.must_send(Some(&facts("4")), accepted(2)));
    }

    #[test]
    fn the_hubs_acceptance_sends_the_status_again() {
        let mut report = StatusReport::new(Duration::from_secs(60));
        let pending = HubAnswer {
            registration: Registration::Pending,
            join_requests: 1,
        };
        // Sent on connect, while pending: the hub drops it.
        report.sent(Some(&facts("4")), pending);
        assert!(!report.must_send(Some(&facts("4")), pending));
        assert!(report.must_send(Some(&facts("4")), accepted(1)));
    }
}

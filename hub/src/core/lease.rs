//! Leases: agents renew, the hub sets `ManagedClusterConditionAvailable`.
//!
//! Like OCM's hub lease controller: True on every renewal; Unknown once no renewal arrived for
//! `lease_grace_multiplier x leaseDurationSeconds` (OCM: 5 x). Renewal times are the hub's clock at
//! reception, not the agent's `renewTime`, so a skewed agent clock cannot keep a dead cluster
//! available. [`HubCore::lease_tick`] returns the next deadline so the shell can sleep until then.

use chrono::{DateTime, TimeDelta, Utc};
use ocm_edge_schemas::api::cluster::MANAGED_CLUSTER_CONDITION_AVAILABLE;
use ocm_edge_schemas::api::lease::Lease;
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, find_condition, set_condition};

use super::{Acceptance, Change, ClusterRecord, HubCore, time};

impl HubCore {
    /// How long a cluster may go without renewing before it becomes Unknown.
    pub fn grace_period(&self, record: &ClusterRecord) -> TimeDelta {
        TimeDelta::seconds(
            i64::from(record.lease_duration_seconds.max(1))
                * i64::from(self.config().lease_grace_multiplier.max(1)),
        )
    }

    /// A lease renewal from an accepted cluster.
    pub(crate) fn lease_renewal(&self, cluster: &str, lease: &Lease, now: DateTime<Utc>) -> Change {
        let Some(record) = self.cluster(cluster) else {
            return Change::default();
        };
        let mut record = record.clone();
        let at = time(now);
        record.last_lease = Some(at);
        if let Some(secs) = lease.spec.lease_duration_seconds
            && secs > 0
        {
            record.lease_duration_seconds = secs;
        }
        let changed = set_condition(
            &mut record.conditions,
            Condition::new(
                MANAGED_CLUSTER_CONDITION_AVAILABLE,
                ConditionStatus::True,
                "ManagedClusterAvailable",
                "Managed cluster is available",
            ),
            at,
        );
        if changed {
            self.publish_cluster(record)
        } else {
            // Only the renewal time moved: store it, nothing for the agent to hear.
            Change {
                records: vec![super::Record::Cluster(Box::new(record))],
                outbound: vec![],
            }
        }
    }

    /// Marks Unknown every accepted cluster whose grace period has passed, and returns the next
    /// time something may expire (`None` when nothing can).
    pub fn lease_tick(&self, now: DateTime<Utc>) -> (Change, Option<DateTime<Utc>>) {
        let mut change = Change::default();
        let mut next: Option<DateTime<Utc>> = None;
        for record in self.clusters() {
            if record.acceptance != Acceptance::Accepted {
                continue;
            }
            let Some(last) = record.last_lease else {
                continue;
            };
            let already_unknown =
                find_condition(&record.conditions, MANAGED_CLUSTER_CONDITION_AVAILABLE)
                    .is_some_and(|c| c.status == ConditionStatus::Unknown);
            if already_unknown {
                continue;
            }
            let base = match self.grace_start() {
                Some(start) => last.as_datetime().max(start),
                None => last.as_datetime(),
            };
            let deadline = base + self.grace_period(record);
            if now >= deadline {
                let mut record = record.clone();
                set_condition(
                    &mut record.conditions,
                    Condition::new(
                        MANAGED_CLUSTER_CONDITION_AVAILABLE,
                        ConditionStatus::Unknown,
                        "ManagedClusterLeaseUpdateStopped",
                        "Registration agent stopped updating its lease.",
                    ),
                    time(now),
                );
                change.extend(self.publish_cluster(record));
            } else {
                next = Some(next.map_or(deadline, |n| n.min(deadline)));
            }
        }
        (change, next)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    fn available(core: &HubCore, cluster: &str) -> Option<ConditionStatus> {
        find_condition(
            &core.cluster(cluster).unwrap().conditions,
            MANAGED_CLUSTER_CONDITION_AVAILABLE,
        )
        .map(|c| c.status)
    }

    #[test]
    fn a_renewal_makes_the_cluster_available_and_tells_the_agent_once() {
        let mut core = accepted_core(&["edge-1"]);
        let first = step(&mut core, lease("edge-1"), 10);
        assert_eq!(available(&core, "edge-1"), Some(ConditionStatus::True));
        assert_eq!(hub_views(&first).len(), 1);
        let second = step(&mut core, lease("edge-1"), 70);
        assert!(second.outbound.is_empty(), "no news for the agent");
        assert_eq!(
            core.cluster("edge-1")
                .unwrap()
                .last_lease
                .unwrap()
                .as_datetime(),
            t(70)
        );
    }

    #[test]
    fn availability_becomes_unknown_only_after_the_grace_period() {
        // lease 60 s x multiplier 5 = 300 s of grace.
        let cases = [
            (10 + 299, Some(ConditionStatus::True)),
            (10 + 300, Some(ConditionStatus::Unknown)),
        ];
        for (at, expected) in cases {
            let mut core = accepted_core(&["edge-1"]);
            step(&mut core, lease("edge-1"), 10);
            let (change, _) = core.lease_tick(t(at));
            core.apply(&change.records);
            assert_eq!(available(&core, "edge-1"), expected, "at {at}");
        }
    }

    #[test]
    fn the_tick_returns_the_earliest_deadline_and_publishes_the_unknown_view() {
        let mut core = accepted_core(&["a", "b"]);
        step(&mut core, lease("a"), 10);
        step(&mut core, lease("b"), 100);
        let (change, next) = core.lease_tick(t(200));
        assert!(change.is_empty());
        assert_eq!(next, Some(t(310)));
        let (change, next) = core.lease_tick(t(310));
        core.apply(&change.records);
        let views = hub_views(&change);
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].metadata.name, "a");
        assert_eq!(next, Some(t(400)));
        assert_eq!(available(&core, "a"), Some(ConditionStatus::Unknown));
        // An Unknown cluster does not fire again until it renews.
        let (change, _) = core.lease_tick(t(320));
        assert!(change.is_empty());
        step(&mut core, lease("a"), 330);
        assert_eq!(available(&core, "a"), Some(ConditionStatus::True));
    }

    #[test]
    fn an_accepted_cluster_that_never_renews_goes_unknown_after_the_grace_period() {
        let mut core = accepted_core(&["silent"]);
        let (change, next) = core.lease_tick(t(1));
        assert!(change.is_empty());
        assert_eq!(next, Some(t(300)), "accepted at t=0");
        let (change, _) = core.lease_tick(t(300));
        core.apply(&change.records);
        assert_eq!(available(&core, "silent"), Some(ConditionStatus::Unknown));
    }

    #[test]
    fn after_a_restart_the_grace_period_runs_from_the_restart_not_the_last_renewal_heard() {
        let mut core = accepted_core(&["edge-1"]);
        step(&mut core, lease("edge-1"), 10);
        // The hub was down from t=20 to t=1000 and restarts with the stored state.
        let mut restarted = HubCore::restore(
            cfg(),
            core.clusters().cloned().collect(),
            vec![],
            Default::default(),
        );
        restarted.set_grace_start(t(1000));
        let (change, next) = restarted.lease_tick(t(1000));
        assert!(
            change.is_empty(),
            "no cluster flaps to Unknown because the hub was away"
        );
        assert_eq!(next, Some(t(1300)));
        let (change, _) = restarted.lease_tick(t(1300));
        restarted.apply(&change.records);
        assert_eq!(
            available(&restarted, "edge-1"),
            Some(ConditionStatus::Unknown)
        );
    }

    #[test]
    fn the_grace_multiplier_is_configurable() {
        let mut core = HubCore::new(super::super::CoreConfig {
            lease_grace_multiplier: 2,
            ..cfg()
        });
        step(&mut core, join("edge-1"), 0);
        let c = core.accept("edge-1", t(0)).unwrap();
        core.apply(&c.records);
        let (_, next) = core.lease_tick(t(1));
        assert_eq!(next, Some(t(120)));
    }
}

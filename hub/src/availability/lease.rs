//! Availability in the core: feeds each accepted cluster's [`ClusterAvailability`] (the pure
//! state machine of [`crate::availability`]) with what the agent and the broker say, and writes
//! what it decides into the cluster record: `ManagedClusterConditionAvailable` and OCM's taints
//! (`.../unreachable` when Unknown, `.../unavailable` when False, effect NoSelect, timeAdded
//! stamped by the hub).
//!
//! Signals: the agent's birth and MQTT will (presence, with its connection sequence number so a
//! stale will is ignored), lease renewals, the API-server health in the agent's cluster status,
//! and ticks at the deadline [`HubCore::availability_tick`] returns. Renewal times are the hub's
//! clock at reception, not the agent's `renewTime`, so a skewed agent clock cannot keep a dead
//! cluster available.

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::ManagedClusterStatus;
use ocm_edge_schemas::api::lease::Lease;

use crate::availability::{ClusterAvailability, Signal};
use crate::core::{Change, ClusterRecord, ClusterState, HubCore, Presence, Record, counter, time};

impl HubCore {
    /// Starts tracking a cluster's availability at `now` (on acceptance). A cluster whose agent
    /// is online (its birth arrived before the acceptance) counts as alive at once.
    pub(crate) fn start_availability(&self, record: &mut ClusterRecord, now: DateTime<Utc>) {
        let mut a = ClusterAvailability::new(record.lease_duration_seconds, now);
        if let Some(p) = record.presence.filter(|p| p.online) {
            a.observe(
                &self.config().availability,
                Signal::Birth {
                    connection_seq: p.connection_seq,
                },
                now,
            );
        }
        a.apply_to(&mut record.conditions, &mut record.taints);
        record.availability = Some(a);
    }

    /// Feeds `signal` to an accepted cluster's availability; the record is stored, and the hub's
    /// view published when the condition or a taint changed.
    fn observe(&self, mut record: ClusterRecord, signal: Signal, now: DateTime<Utc>) -> Change {
        if record.acceptance != ClusterState::Accepted {
            return Change {
                records: vec![Record::Cluster(Box::new(record))],
                outbound: vec![],
            };
        }
        let mut a = record
            .availability
            .take()
            .unwrap_or_else(|| ClusterAvailability::new(record.lease_duration_seconds, now));
        let t = a.observe(&self.config().availability, signal, now);
        if t.stale {
            tracing::info!(cluster = %record.name, "stale MQTT will ignored (older connection)");
            return self.count(counter::STALE_WILL);
        }
        record.lease_duration_seconds = a.lease_duration_seconds();
        let changed = a.apply_to(&mut record.conditions, &mut record.taints);
        record.availability = Some(a);
        if changed || t.changed {
            self.publish_cluster(record)
        } else {
            // Only the time of the last proof of life moved: store it, nothing for the agent.
            Change {
                records: vec![Record::Cluster(Box::new(record))],
                outbound: vec![],
            }
        }
    }

    /// A lease renewal from an accepted cluster.
    pub(crate) fn lease_renewal(&self, cluster: &str, lease: &Lease, now: DateTime<Utc>) -> Change {
        let Some(record) = self.cluster(cluster) else {
            return Change::default();
        };
        let mut record = record.clone();
        record.last_lease = Some(time(now));
        self.observe(record, Signal::from_lease(lease), now)
    }

    /// The agent's birth or will. A will older than the latest birth is stale and ignored.
    pub(crate) fn presence(&self, cluster: &str, presence: Presence, now: DateTime<Utc>) -> Change {
        let Some(record) = self.cluster(cluster) else {
            let mut change = self.count(counter::IGNORED_NOT_ACCEPTED);
            change
                .records
                .push(Record::UnknownPresence(cluster.to_owned(), presence));
            return change;
        };
        if let Some(old) = record.presence
            && !presence.online
            && presence.connection_seq < old.connection_seq
        {
            return self.count(counter::STALE_WILL);
        }
        let mut record = record.clone();
        record.presence = Some(presence);
        let signal = if presence.online {
            Signal::Birth {
                connection_seq: presence.connection_seq,
            }
        } else {
            Signal::Death {
                connection_seq: presence.connection_seq,
            }
        };
        self.observe(record, signal, now)
    }

    /// What the agent reports about its cluster (claims, capacity, version, its conditions);
    /// its Available condition is its own view of its API server.
    pub(crate) fn cluster_status(
        &self,
        cluster: &str,
        status: ManagedClusterStatus,
        now: DateTime<Utc>,
    ) -> Change {
        let Some(record) = self.cluster(cluster) else {
            return Change::default();
        };
        let mut record = record.clone();
        if !status.cluster_claims.is_empty() {
            record.claims = status.cluster_claims.clone();
        }
        let signal = Signal::from_cluster_status(&status);
        let claims_or_resources_changed = record.reported.allocatable != status.allocatable
            || record.reported.capacity != status.capacity
            || record.reported.cluster_claims != status.cluster_claims;
        record.reported = status;
        let mut change = match signal {
            Some(signal) => self.observe(record, signal, now),
            None => Change {
                records: vec![Record::Cluster(Box::new(record))],
                outbound: vec![],
            },
        };
        if claims_or_resources_changed && change.outbound.is_empty() {
            // Placements read claims and allocatable resources from the hub's view.
            if let Some(Record::Cluster(c)) = change.records.last() {
                change
                    .outbound
                    .push(crate::core::Outbound::HubView(Box::new(
                        crate::registration::hub_view(c),
                    )));
            }
        }
        change
    }

    /// Re-evaluates every accepted cluster whose deadline has passed, and returns the next time
    /// something may expire (`None` when nothing can).
    pub fn availability_tick(&self, now: DateTime<Utc>) -> (Change, Option<DateTime<Utc>>) {
        let cfg = &self.config().availability;
        let mut change = Change::default();
        let mut next: Option<DateTime<Utc>> = None;
        for record in self.clusters() {
            if record.acceptance != ClusterState::Accepted {
                continue;
            }
            let Some(deadline) = record
                .availability
                .as_ref()
                .and_then(|a| a.next_deadline(cfg))
            else {
                continue;
            };
            if now >= deadline {
                let c = self.observe(record.clone(), Signal::Tick, now);
                if let Some(d) = c.records.iter().find_map(|r| match r {
                    Record::Cluster(c) => {
                        c.availability.as_ref().and_then(|a| a.next_deadline(cfg))
                    }
                    _ => None,
                }) {
                    next = Some(next.map_or(d, |n| n.min(d)));
                }
                change.extend(c);
            } else {
                next = Some(next.map_or(deadline, |n| n.min(deadline)));
            }
        }
        (change, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testkit::*;
    use ocm_edge_schemas::api::cluster::{
        MANAGED_CLUSTER_CONDITION_AVAILABLE, TAINT_UNAVAILABLE, TAINT_UNREACHABLE,
    };
    use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, find_condition};

    fn available(core: &HubCore, cluster: &str) -> Option<ConditionStatus> {
        find_condition(
            &core.cluster(cluster).unwrap().conditions,
            MANAGED_CLUSTER_CONDITION_AVAILABLE,
        )
        .map(|c| c.status)
    }

    fn taint_keys(core: &HubCore, cluster: &str) -> Vec<String> {
        core.cluster(cluster)
            .unwrap()
            .taints
            .iter()
            .map(|t| t.key.clone())
            .collect()
    }

    fn tick(core: &mut HubCore, secs: i64) -> Option<DateTime<Utc>> {
        let (change, next) = core.availability_tick(t(secs));
        core.apply(&change.records);
        next
    }

    #[test]
    fn an_accepted_cluster_is_unreachable_until_it_proves_alive() {
        let mut core = accepted_core(&["edge-1"]);
        assert_eq!(taint_keys(&core, "edge-1"), vec![TAINT_UNREACHABLE]);
        assert_eq!(available(&core, "edge-1"), None);
        let change = step(&mut core, lease("edge-1"), 10);
        assert_eq!(available(&core, "edge-1"), Some(ConditionStatus::True));
        assert!(taint_keys(&core, "edge-1").is_empty());
        let views = hub_views(&change);
        assert_eq!(views.len(), 1);
        assert!(views[0].spec.taints.is_empty());
        let again = step(&mut core, lease("edge-1"), 20);
        assert!(again.outbound.is_empty(), "no news for the agent");
    }

    #[test]
    fn the_will_of_the_current_connection_taints_the_cluster_unreachable_at_once() {
        let mut core = accepted_core(&["edge-1"]);
        step(&mut core, presence("edge-1", true, 3), 1);
        assert_eq!(available(&core, "edge-1"), Some(ConditionStatus::True));
        let change = step(&mut core, presence("edge-1", false, 3), 2);
        assert_eq!(available(&core, "edge-1"), Some(ConditionStatus::Unknown));
        let view = &hub_views(&change)[0];
        assert_eq!(view.spec.taints[0].key, TAINT_UNREACHABLE);
        assert_eq!(
            view.spec.taints[0].time_added.unwrap().as_datetime(),
            t(2),
            "timeAdded is the hub's clock when the taint appeared"
        );
        step(&mut core, presence("edge-1", true, 4), 5);
        assert_eq!(available(&core, "edge-1"), Some(ConditionStatus::True));
        assert!(taint_keys(&core, "edge-1").is_empty());
    }

    #[test]
    fn a_birth_heard_before_the_join_request_makes_a_later_older_will_stale() {
        let mut core = core();
        step(&mut core, presence("edge-1", true, 7), 0);
        step(&mut core, join("edge-1"), 0);
        let c = core.accept("edge-1", t(1)).unwrap();
        core.apply(&c.records);
        assert_eq!(available(&core, "edge-1"), Some(ConditionStatus::True));
        step(&mut core, presence("edge-1", false, 6), 2);
        assert_eq!(available(&core, "edge-1"), Some(ConditionStatus::True));
    }

    #[test]
    fn a_stale_will_does_not_mark_a_live_cluster() {
        let mut core = accepted_core(&["edge-1"]);
        step(&mut core, presence("edge-1", true, 5), 1);
        let change = step(&mut core, presence("edge-1", false, 4), 2);
        assert!(change.outbound.is_empty());
        assert_eq!(available(&core, "edge-1"), Some(ConditionStatus::True));
        assert_eq!(core.counters().get(counter::STALE_WILL), 1);
    }

    #[test]
    fn a_silent_cluster_becomes_unknown_at_its_deadline_and_the_tick_says_when() {
        // lease 60 s x default grace 1.5 = 90 s.
        let mut core = accepted_core(&["a", "b"]);
        step(&mut core, lease("a"), 10);
        step(&mut core, lease("b"), 100);
        assert_eq!(tick(&mut core, 50), Some(t(100)));
        assert_eq!(available(&core, "a"), Some(ConditionStatus::True));
        assert_eq!(tick(&mut core, 100), Some(t(190)));
        assert_eq!(available(&core, "a"), Some(ConditionStatus::Unknown));
        assert_eq!(taint_keys(&core, "a"), vec![TAINT_UNREACHABLE]);
        step(&mut core, lease("a"), 120);
        assert_eq!(available(&core, "a"), Some(ConditionStatus::True));
    }

    #[test]
    fn an_unhealthy_api_server_taints_the_cluster_unavailable() {
        let mut core = accepted_core(&["edge-1"]);
        let mut status = ManagedClusterStatus::default();
        status.conditions.push(Condition::new(
            MANAGED_CLUSTER_CONDITION_AVAILABLE,
            ConditionStatus::False,
            "ManagedClusterKubeAPIServerUnavailable",
            "livez failed",
        ));
        let change = core.cluster_status("edge-1", status, t(3));
        core.apply(&change.records);
        assert_eq!(available(&core, "edge-1"), Some(ConditionStatus::False));
        assert_eq!(taint_keys(&core, "edge-1"), vec![TAINT_UNAVAILABLE]);
    }

    #[test]
    fn a_cluster_stored_without_availability_tracking_keeps_its_condition_after_an_upgrade() {
        let mut core = accepted_core(&["edge-1"]);
        step(&mut core, lease("edge-1"), 10);
        let mut old: Vec<ClusterRecord> = core.clusters().cloned().collect();
        old[0].availability = None;
        let mut restarted = HubCore::restore(cfg(), old, vec![], Default::default(), None);
        restarted.set_grace_start(t(1000));
        assert_eq!(available(&restarted, "edge-1"), Some(ConditionStatus::True));
        assert!(taint_keys(&restarted, "edge-1").is_empty());
        assert_eq!(tick(&mut restarted, 1000), Some(t(1090)));
    }

    #[test]
    fn after_a_restart_the_grace_period_runs_from_the_restart_not_the_last_renewal_heard() {
        let mut core = accepted_core(&["edge-1"]);
        step(&mut core, lease("edge-1"), 10);
        let mut restarted = HubCore::restore(
            cfg(),
            core.clusters().cloned().collect(),
            vec![],
            Default::default(),
            None,
        );
        restarted.set_grace_start(t(1000));
        assert_eq!(tick(&mut restarted, 1000), Some(t(1090)));
        assert_eq!(available(&restarted, "edge-1"), Some(ConditionStatus::True));
        tick(&mut restarted, 1090);
        assert_eq!(
            available(&restarted, "edge-1"),
            Some(ConditionStatus::Unknown)
        );
    }
}

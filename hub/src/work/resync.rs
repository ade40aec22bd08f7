//! Resync in both directions (docs/reference/protocol.md section 6).
//!
//! - Spec: an agent says which bundle versions it holds; the hub answers with every bundle that is
//!   newer or missing, a delete for every bundle being deleted, and a bare delete for every
//!   resourceID it no longer has. An empty or all-unknown list is answered too (maestro does not).
//! - Status: after every (re)subscribe the hub tells each accepted cluster which status hashes it
//!   holds, in batches; an empty list asks for everything.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use ocm_edge_schemas::wire::event_type::Action;
use ocm_edge_schemas::wire::resync::{ResourceVersionList, StatusHash, StatusHashList};

use crate::core::{Change, ClusterState, HubCore, Outbound, Record, WorkRecord};

impl HubCore {
    /// Answers a `spec.resync_request` from an accepted cluster.
    pub(crate) fn spec_resync(
        &self,
        cluster: &str,
        held: &ResourceVersionList,
        now: DateTime<Utc>,
    ) -> Change {
        let held_versions: HashMap<&str, i64> = held
            .resource_versions
            .iter()
            .map(|v| (v.resource_id.as_str(), v.resource_version))
            .collect();
        let resync_response = |work: &WorkRecord| {
            Outbound::Spec(Box::new(self.spec_event(
                work,
                Some(Action::ResyncResponse),
                now,
            )))
        };
        let mut change = Change::default();
        let mut ours = HashSet::new();
        for work in self.works_of(cluster) {
            ours.insert(work.resource_id.as_str());
            let agent_version = held_versions.get(work.resource_id.as_str()).copied();
            match (work.deleting, agent_version) {
                // Being deleted and the agent no longer holds it: nothing left to confirm.
                (Some(_), None) => change.records.push(Record::ForgetWork(work.key.clone())),
                (Some(_), Some(_)) => change.outbound.push(resync_response(work)),
                (None, Some(v)) if v == work.resource_version => {}
                (None, Some(v)) if v > work.resource_version => {
                    // The agent holds a newer version of this resourceid than the hub: the work
                    // was re-created under the same name (same UUID v5) or the hub's store is
                    // older than the agent's. Agents drop lower versions, so move past theirs.
                    if v < i64::from(i32::MAX) {
                        let mut bumped = work.clone();
                        bumped.resource_version = v + 1;
                        change.outbound.push(resync_response(&bumped));
                        change.records.push(Record::Work(Box::new(bumped)));
                    }
                }
                (None, _) => change.outbound.push(resync_response(work)),
            }
        }
        for v in &held.resource_versions {
            if !ours.contains(v.resource_id.as_str()) {
                change
                    .outbound
                    .push(Outbound::Spec(Box::new(self.bare_delete(cluster, v, now))));
            }
        }
        change
    }

    /// `status.resync_request` messages for one cluster: the hashes the hub holds, at most
    /// `status_resync_batch` per message; one empty list when it holds none.
    pub fn status_resync_requests(&self, cluster: &str) -> Vec<Outbound> {
        let hashes: Vec<StatusHash> = self
            .works_of(cluster)
            .filter_map(|w| {
                w.status_hash.as_ref().map(|h| StatusHash {
                    resource_id: w.resource_id.clone(),
                    status_hash: h.clone(),
                })
            })
            .collect();
        let batch = self.config().status_resync_batch.max(1);
        let lists = if hashes.is_empty() {
            vec![StatusHashList::default()]
        } else {
            hashes
                .chunks(batch)
                .map(|c| StatusHashList {
                    status_hashes: c.to_vec(),
                })
                .collect()
        };
        lists
            .into_iter()
            .map(|hashes| Outbound::StatusResyncRequest {
                cluster: cluster.to_owned(),
                hashes,
            })
            .collect()
    }

    /// The spec of every work of an accepted cluster that its agent has not confirmed yet: the
    /// status the hub holds is for an older version or there is none, or the work is being
    /// deleted. Sent again after every (re)subscribe, because the hub stores a change before
    /// it publishes it and may stop in between, and a broker that restarts loses what it had
    /// not delivered; agents apply a version they already hold again at no harm. A converged
    /// fleet sends nothing.
    pub fn unconfirmed_specs(&self, now: DateTime<Utc>) -> Change {
        Change {
            records: vec![],
            outbound: self
                .works()
                .filter(|w| w.deleting.is_some() || w.status_version != Some(w.resource_version))
                .filter(|w| self.is_accepted(&w.key.cluster))
                .map(|w| Outbound::Spec(Box::new(self.spec_event(w, None, now))))
                .collect(),
        }
    }

    /// Status resync requests for every accepted cluster (after every (re)subscribe).
    pub fn status_resync_all(&self) -> Change {
        Change {
            records: vec![],
            outbound: self
                .clusters()
                .filter(|c| c.acceptance == ClusterState::Accepted)
                .flat_map(|c| self.status_resync_requests(&c.name))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testkit::*;
    use crate::core::{CoreConfig, WorkKey};
    use ocm_edge_schemas::wire::resync::ResourceVersion;

    fn held(entries: &[(&str, i64)]) -> ResourceVersionList {
        ResourceVersionList {
            resource_versions: entries
                .iter()
                .map(|(id, v)| ResourceVersion {
                    resource_id: (*id).to_owned(),
                    resource_version: *v,
                })
                .collect(),
        }
    }

    fn resync(core: &mut HubCore, cluster: &str, list: ResourceVersionList) -> Change {
        step(
            core,
            crate::core::AgentInput::SpecResyncRequest {
                cluster: cluster.into(),
                versions: list,
                transfer: None,
            },
            50,
        )
    }

    #[test]
    fn spec_resync_sends_what_is_missing_or_newer_and_nothing_that_is_current() {
        let mut core = core_with_work("a", "web");
        let id = core
            .work(&WorkKey::new("a", "web"))
            .unwrap()
            .resource_id
            .clone();
        // (agent holds, number of spec events expected)
        let cases: Vec<(Vec<(&str, i64)>, usize)> =
            vec![(vec![], 1), (vec![(&id, 1)], 0), (vec![(&id, 0)], 1)];
        for (list, expected) in cases {
            let change = resync(&mut core, "a", held(&list));
            let sent = specs(&change);
            assert_eq!(sent.len(), expected, "{list:?}");
            for s in sent {
                assert_eq!(s.action, Action::ResyncResponse);
                assert!(s.bundle.is_some());
            }
        }
    }

    #[test]
    fn an_agent_holding_a_newer_version_of_a_recreated_work_gets_a_version_past_its_own() {
        let mut core = core_with_work("a", "web");
        let key = WorkKey::new("a", "web");
        let id = core.work(&key).unwrap().resource_id.clone();
        let change = resync(&mut core, "a", held(&[(&id, 7)]));
        let sent = specs(&change);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].resource_version, 8);
        assert!(sent[0].bundle.is_some());
        assert_eq!(core.work(&key).unwrap().resource_version, 8);
        // Next time the agent holds 8: nothing to send.
        assert!(specs(&resync(&mut core, "a", held(&[(&id, 8)]))).is_empty());
    }

    #[test]
    fn an_empty_list_gets_every_work_of_the_cluster_and_only_of_that_cluster() {
        let mut core = core_with_work("a", "web");
        step(&mut core, join("b"), 0);
        let c = core.accept("b", t(0)).unwrap();
        core.apply(&c.records);
        let (c, _) = core
            .write_works(&work_input("db", 1), &clusters(&["a", "b"]), false, t(1))
            .unwrap();
        core.apply(&c.records);
        let change = resync(&mut core, "a", held(&[]));
        let mut names: Vec<_> = specs(&change)
            .iter()
            .map(|s| s.metadata.as_ref().unwrap().name.clone())
            .collect();
        names.sort();
        assert_eq!(names, ["db", "web"]);
        assert!(specs(&change).iter().all(|s| s.cluster == "a"));
    }

    #[test]
    fn unknown_resource_ids_get_a_bare_delete_with_the_agents_version() {
        let mut core = core_with_work("a", "web");
        let change = resync(&mut core, "a", held(&[("gone-1", 3), ("gone-2", 1)]));
        let sent = specs(&change);
        // the hub's own work (missing on the agent) plus two bare deletes
        assert_eq!(sent.len(), 3);
        let bare: Vec<_> = sent.iter().filter(|s| s.metadata.is_none()).collect();
        assert_eq!(bare.len(), 2);
        assert_eq!(bare[0].resource_id, "gone-1");
        assert_eq!(bare[0].resource_version, 3);
        assert_eq!(bare[0].deletion_timestamp, Some(t(50)));
        assert!(bare[0].bundle.is_none());
        assert_eq!(bare[0].cluster, "a");
    }

    #[test]
    fn a_work_of_another_cluster_is_unknown_to_this_cluster() {
        let mut core = core_with_work("a", "web");
        step(&mut core, join("b"), 0);
        let c = core.accept("b", t(0)).unwrap();
        core.apply(&c.records);
        let id = core
            .work(&WorkKey::new("a", "web"))
            .unwrap()
            .resource_id
            .clone();
        let change = resync(&mut core, "b", held(&[(&id, 1)]));
        let sent = specs(&change);
        assert_eq!(sent.len(), 1);
        assert!(sent[0].metadata.is_none(), "bare delete, not a's work");
    }

    #[test]
    fn works_being_deleted_are_resent_as_deletes_or_forgotten_when_the_agent_lacks_them() {
        let mut core = core_with_work("a", "web");
        let key = WorkKey::new("a", "web");
        let id = core.work(&key).unwrap().resource_id.clone();
        let c = core.delete_work(&key, t(5)).unwrap();
        core.apply(&c.records);
        let change = resync(&mut core, "a", held(&[(&id, 1)]));
        let sent = specs(&change);
        assert_eq!(sent.len(), 1);
        assert!(sent[0].deletion_timestamp.is_some());
        assert!(sent[0].metadata.is_some());
        assert!(core.work(&key).is_some());
        let change = resync(&mut core, "a", held(&[]));
        assert!(specs(&change).is_empty());
        assert!(core.work(&key).is_none());
    }

    #[test]
    fn a_spec_resync_from_a_cluster_that_is_not_accepted_gets_no_spec_only_its_view() {
        let mut core = core_with_work("a", "web");
        step(&mut core, join("p"), 0);
        let change = resync(&mut core, "p", held(&[("x", 1)]));
        assert!(specs(&change).is_empty());
        assert_eq!(hub_views(&change).len(), 1);
        assert_eq!(change.outbound.len(), 1, "{:?}", change.outbound);
    }

    #[test]
    fn specs_no_agent_confirmed_are_sent_again_and_confirmed_ones_are_not() {
        let mut core = core_with_work("a", "web");
        let key = WorkKey::new("a", "web");
        let id = core.work(&key).unwrap().resource_id.clone();
        let unconfirmed = |core: &HubCore| -> Vec<(i64, bool)> {
            specs(&core.unconfirmed_specs(t(60)))
                .iter()
                .map(|s| (s.resource_version, s.deletion_timestamp.is_some()))
                .collect()
        };
        assert_eq!(unconfirmed(&core), [(1, false)], "created, no status yet");
        step(&mut core, status_input("a", &id, 1, "10", applied()), 2);
        assert_eq!(core.work(&key).unwrap().status_version, Some(1));
        assert!(
            unconfirmed(&core).is_empty(),
            "the agent confirmed version 1"
        );

        // Stored as version 2, then the hub stops before publishing it: a status for version 1
        // is all it hears, and version 2 stays unconfirmed until the agent reports on it.
        let (c, _) = core
            .write_works(&work_input("web", 2), &clusters(&["a"]), true, t(3))
            .unwrap();
        core.apply(&c.records);
        step(&mut core, status_input("a", &id, 1, "11", applied()), 4);
        let sent = specs(&core.unconfirmed_specs(t(60)));
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].resource_version, 2);
        assert_eq!(sent[0].action, Action::UpdateRequest);
        assert!(sent[0].bundle.is_some());
        assert_eq!(core.work(&key).unwrap().status_version, Some(1));
        step(&mut core, status_input("a", &id, 2, "12", applied()), 5);
        assert!(
            unconfirmed(&core).is_empty(),
            "the agent confirmed version 2"
        );

        let c = core.delete_work(&key, t(6)).unwrap();
        core.apply(&c.records);
        assert_eq!(unconfirmed(&core), [(2, true)], "a delete until Deleted");

        // A denied cluster is sent nothing.
        let c = core.deny("a", t(7)).unwrap();
        core.apply(&c.records);
        assert!(unconfirmed(&core).is_empty());
    }

    #[test]
    fn works_stored_before_status_versions_were_kept_take_theirs_from_the_status() {
        let mut core = core_with_work("a", "web");
        let key = WorkKey::new("a", "web");
        let (c, _) = core
            .write_works(&work_input("web", 2), &clusters(&["a"]), true, t(1))
            .unwrap();
        core.apply(&c.records);
        let observed = |generation: i64| {
            let mut status = applied();
            for c in &mut status.conditions {
                c.observed_generation = generation;
            }
            status
        };
        let stored = |generation: Option<i64>| {
            let mut w = core.work(&key).unwrap().clone();
            w.status = generation.map(observed);
            w.status_version = None;
            HubCore::restore(
                cfg(),
                core.clusters().cloned().collect(),
                vec![w],
                Default::default(),
                None,
            )
        };
        let current = stored(Some(2));
        assert_eq!(current.work(&key).unwrap().status_version, Some(2));
        assert!(current.unconfirmed_specs(t(60)).outbound.is_empty());
        let behind = stored(Some(1));
        assert_eq!(behind.work(&key).unwrap().status_version, Some(1));
        assert_eq!(specs(&behind.unconfirmed_specs(t(60))).len(), 1);
        let none = stored(None);
        assert_eq!(none.work(&key).unwrap().status_version, None);
        assert_eq!(specs(&none.unconfirmed_specs(t(60))).len(), 1);
    }

    #[test]
    fn a_status_equal_to_the_last_one_but_for_a_newer_version_confirms_it() {
        let mut core = core_with_work("a", "web");
        let key = WorkKey::new("a", "web");
        let id = core.work(&key).unwrap().resource_id.clone();
        step(&mut core, status_input("a", &id, 1, "10", applied()), 2);
        let (c, _) = core
            .write_works(&work_input("web", 2), &clusters(&["a"]), true, t(3))
            .unwrap();
        core.apply(&c.records);
        // Same conditions as version 1's status, hence the same hash.
        step(&mut core, status_input("a", &id, 2, "11", applied()), 4);
        assert_eq!(core.work(&key).unwrap().status_version, Some(2));
        assert!(core.unconfirmed_specs(t(60)).outbound.is_empty());
    }

    #[test]
    fn status_resync_requests_carry_stored_hashes_in_batches() {
        let mut core = HubCore::new(CoreConfig {
            status_resync_batch: 2,
            ..cfg()
        });
        step(&mut core, join("a"), 0);
        let c = core.accept("a", t(0)).unwrap();
        core.apply(&c.records);
        assert_eq!(
            core.status_resync_requests("a"),
            vec![Outbound::StatusResyncRequest {
                cluster: "a".into(),
                hashes: StatusHashList::default()
            }],
            "no statuses yet: one empty list asks for everything"
        );
        for name in ["w1", "w2", "w3"] {
            let (c, _) = core
                .write_works(&work_input(name, 1), &clusters(&["a"]), false, t(1))
                .unwrap();
            core.apply(&c.records);
            let id = core
                .work(&WorkKey::new("a", name))
                .unwrap()
                .resource_id
                .clone();
            step(&mut core, status_input("a", &id, 1, "10", applied()), 2);
        }
        let requests = core.status_resync_requests("a");
        let sizes: Vec<usize> = requests
            .iter()
            .map(|r| match r {
                Outbound::StatusResyncRequest { hashes, .. } => hashes.status_hashes.len(),
                _ => 0,
            })
            .collect();
        assert_eq!(sizes, [2, 1]);
        assert_eq!(core.status_resync_all().outbound.len(), 2);
    }
}

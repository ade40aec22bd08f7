//! OCM's cluster-set controllers on the hub: the `default` and `global` sets, and the status
//! conditions of every set and binding.
//!
//! - `default` (ExclusiveClusterSetLabel) holds every accepted cluster the operator puts in no
//!   other set (registration labels it so at acceptance); `global` (LabelSelector, empty
//!   selector) selects every accepted cluster. The hub creates them when they are missing, as
//!   OCM's default-clusterset controller does, and they cannot be deleted.
//! - A set's `ClusterSetEmpty` condition says whether it selects any accepted cluster (reason
//!   `NoClusterMatched`, or `ClustersSelected` with the count); a binding's `Bound` condition
//!   whether its set exists (`ClusterSetBound` / `ClusterSetNotFound`). Placements use only
//!   bindings whose set exists, which is what `Bound` shows.
//!
//! Pure: each returns the records that change something, so running it after every batch that
//! touches the fleet writes nothing when memberships stay the same.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::{
    CLUSTER_SET_BINDING_BOUND, CLUSTER_SET_EMPTY, DEFAULT_CLUSTER_SET, GLOBAL_CLUSTER_SET,
    ManagedClusterSelector, ManagedClusterSet, ManagedClusterSetSpec, SelectorType,
};
use ocm_edge_schemas::api::meta::set_condition;
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, LabelSelector, ObjectMeta};

use super::clusterset::selects_labels;
use crate::core::objects::{ObjectKey, ObjectKind, StoredObject};
use crate::core::{Change, ClusterState, HubCore, Record, time};

/// Whether `name` is one of the sets the hub keeps for itself (`default`, `global`).
pub fn is_builtin_set(name: &str) -> bool {
    name == DEFAULT_CLUSTER_SET || name == GLOBAL_CLUSTER_SET
}

/// The `default` set as the hub creates it.
pub fn default_set() -> ManagedClusterSet {
    ManagedClusterSet {
        metadata: ObjectMeta::named(DEFAULT_CLUSTER_SET),
        spec: ManagedClusterSetSpec {
            cluster_selector: ManagedClusterSelector {
                selector_type: Some(SelectorType::ExclusiveClusterSetLabel),
                label_selector: None,
            },
        },
        ..Default::default()
    }
}

/// The `global` set as the hub creates it: an empty label selector selects every cluster.
pub fn global_set() -> ManagedClusterSet {
    ManagedClusterSet {
        metadata: ObjectMeta::named(GLOBAL_CLUSTER_SET),
        spec: ManagedClusterSetSpec {
            cluster_selector: ManagedClusterSelector {
                selector_type: Some(SelectorType::LabelSelector),
                label_selector: Some(LabelSelector::default()),
            },
        },
        ..Default::default()
    }
}

/// A set's `ClusterSetEmpty` condition for `count` selected clusters (OCM's wording).
pub fn empty_condition(count: usize) -> Condition {
    if count == 0 {
        Condition::new(
            CLUSTER_SET_EMPTY,
            ConditionStatus::True,
            "NoClusterMatched",
            "No ManagedCluster selected",
        )
    } else {
        Condition::new(
            CLUSTER_SET_EMPTY,
            ConditionStatus::False,
            "ClustersSelected",
            format!("{count} ManagedClusters selected"),
        )
    }
}

/// A binding's `Bound` condition, by whether its set exists (OCM's wording).
pub fn bound_condition(set: &str, exists: bool) -> Condition {
    if exists {
        Condition::new(
            CLUSTER_SET_BINDING_BOUND,
            ConditionStatus::True,
            "ClusterSetBound",
            format!("bound to ManagedClusterSet {set}"),
        )
    } else {
        Condition::new(
            CLUSTER_SET_BINDING_BOUND,
            ConditionStatus::False,
            "ClusterSetNotFound",
            format!("ManagedClusterSet {set} does not exist"),
        )
    }
}

impl HubCore {
    /// Creates the `default` and `global` sets when they are missing (run when the hub starts;
    /// also labels into `default` an accepted cluster stored without any set, as a hub of an
    /// earlier version accepted them).
    pub fn ensure_builtin_cluster_sets(&self, now: DateTime<Utc>) -> Change {
        let mut change = Change::default();
        for set in [default_set(), global_set()] {
            let key = ObjectKey::new(ObjectKind::ManagedClusterSet, "", &set.metadata.name);
            if self.objects().get(&key).is_some() {
                continue;
            }
            // Created as an operator's apply creates one (uid, creation time, generation).
            match self.apply_object(StoredObject::ClusterSet(Box::new(set)), now) {
                Ok((created, _, _)) => {
                    tracing::info!(set = %key.name, "created the built-in cluster set");
                    change.extend(created);
                }
                Err(e) => tracing::error!(error = %e, "cannot create a built-in cluster set"),
            }
        }
        for record in self.clusters() {
            if record.acceptance == ClusterState::Accepted
                && !crate::registration::in_a_set(&record.labels)
            {
                let mut record = record.clone();
                crate::registration::put_in_default_set(&mut record.labels);
                change.extend(self.publish_cluster(record));
            }
        }
        change
    }

    /// The `ClusterSetEmpty` condition of every set and the `Bound` condition of every binding,
    /// written where they changed.
    pub fn reconcile_cluster_sets(&self, now: DateTime<Utc>) -> Change {
        let mut change = Change::default();
        let sets = self.objects().cluster_sets();
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for record in self
            .clusters()
            .filter(|c| c.acceptance == ClusterState::Accepted)
        {
            for set in &sets {
                if selects_labels(set, &record.labels) {
                    *counts.entry(set.metadata.name.as_str()).or_default() += 1;
                }
            }
        }
        let at = time(now);
        for set in &sets {
            let count = counts.get(set.metadata.name.as_str()).copied().unwrap_or(0);
            let mut updated = set.clone();
            if set_condition(&mut updated.status.conditions, empty_condition(count), at) {
                change
                    .records
                    .push(Record::Object(Box::new(StoredObject::ClusterSet(
                        Box::new(updated),
                    ))));
            }
        }
        for binding in self.objects().bindings() {
            let set = &binding.spec.cluster_set;
            let exists = sets.iter().any(|s| &s.metadata.name == set);
            let mut updated = binding.clone();
            if set_condition(
                &mut updated.status.conditions,
                bound_condition(set, exists),
                at,
            ) {
                change
                    .records
                    .push(Record::Object(Box::new(StoredObject::Binding(Box::new(
                        updated,
                    )))));
            }
        }
        change
    }
}

#[cfg(test)]
mod tests {
    use ocm_edge_schemas::api::cluster::LABEL_CLUSTER_SET;
    use ocm_edge_schemas::api::meta::{find_condition, is_condition_true};

    use super::*;
    use crate::core::testkit::*;
    use crate::placement::testkit::{mk_binding, mk_set};

    fn set_of(core: &HubCore, name: &str) -> ManagedClusterSet {
        match core
            .objects()
            .get(&ObjectKey::new(ObjectKind::ManagedClusterSet, "", name))
        {
            Some(StoredObject::ClusterSet(s)) => (**s).clone(),
            other => panic!("no set {name}: {other:?}"),
        }
    }

    #[test]
    fn the_hub_creates_default_and_global_once_and_a_new_cluster_lands_in_default() {
        let mut core = core();
        let created = core.ensure_builtin_cluster_sets(t(0));
        assert_eq!(created.records.len(), 2);
        core.apply(&created.records);
        assert!(core.ensure_builtin_cluster_sets(t(0)).is_empty());
        assert!(!set_of(&core, DEFAULT_CLUSTER_SET).metadata.uid.is_empty());

        step(&mut core, join("edge-1"), 0);
        let accepted = core.accept("edge-1", t(1)).unwrap();
        core.apply(&accepted.records);
        assert_eq!(
            core.cluster("edge-1")
                .unwrap()
                .labels
                .get(LABEL_CLUSTER_SET),
            Some(&DEFAULT_CLUSTER_SET.to_owned())
        );
        let statuses = core.reconcile_cluster_sets(t(2));
        core.apply(&statuses.records);
        for name in [DEFAULT_CLUSTER_SET, GLOBAL_CLUSTER_SET] {
            let c = find_condition(&set_of(&core, name).status.conditions, CLUSTER_SET_EMPTY)
                .cloned()
                .unwrap();
            assert_eq!(c.status, ConditionStatus::False, "{name}");
            assert_eq!(c.message, "1 ManagedClusters selected", "{name}");
        }
        // Nothing changed: nothing written.
        assert!(core.reconcile_cluster_sets(t(3)).is_empty());
    }

    #[test]
    fn a_set_is_empty_until_a_cluster_is_labelled_into_it_and_a_binding_is_bound_while_its_set_exists()
     {
        let mut core = core();
        for object in [
            StoredObject::ClusterSet(Box::new(mk_set("eu"))),
            StoredObject::Binding(Box::new(mk_binding("team-a", "eu"))),
        ] {
            let (c, _, _) = core.apply_object(object, t(0)).unwrap();
            core.apply(&c.records);
        }
        let c = core.reconcile_cluster_sets(t(1));
        core.apply(&c.records);
        let eu = set_of(&core, "eu");
        assert!(is_condition_true(&eu.status.conditions, CLUSTER_SET_EMPTY));
        let bound = core.objects().bindings()[0].clone();
        assert!(is_condition_true(
            &bound.status.conditions,
            CLUSTER_SET_BINDING_BOUND
        ));

        step(&mut core, join("edge-1"), 2);
        let c = core.accept("edge-1", t(2)).unwrap();
        core.apply(&c.records);
        let labels = BTreeMap::from([(LABEL_CLUSTER_SET.to_owned(), "eu".to_owned())]);
        let c = core.label_cluster("edge-1", &labels, &[]).unwrap();
        core.apply(&c.records);
        let c = core.reconcile_cluster_sets(t(3));
        core.apply(&c.records);
        let empty = find_condition(&set_of(&core, "eu").status.conditions, CLUSTER_SET_EMPTY)
            .cloned()
            .unwrap();
        assert_eq!(
            (empty.status, empty.reason.as_str()),
            (ConditionStatus::False, "ClustersSelected")
        );

        let gone = core
            .delete_object(
                &ObjectKey::new(ObjectKind::ManagedClusterSet, "", "eu"),
                t(4),
            )
            .unwrap();
        core.apply(&gone.records);
        let c = core.reconcile_cluster_sets(t(4));
        core.apply(&c.records);
        let unbound = find_condition(
            &core.objects().bindings()[0].status.conditions,
            CLUSTER_SET_BINDING_BOUND,
        )
        .cloned()
        .unwrap();
        assert_eq!(
            (unbound.status, unbound.reason.as_str()),
            (ConditionStatus::False, "ClusterSetNotFound")
        );
    }

    #[test]
    fn the_fleet_reconcile_writes_set_conditions_when_a_label_changes_and_skips_them_otherwise() {
        let mut core = core();
        let (c, _, _) = core
            .apply_object(StoredObject::ClusterSet(Box::new(mk_set("eu"))), t(0))
            .unwrap();
        core.apply(&c.records);
        step(&mut core, join("edge-1"), 0);
        let c = core.accept("edge-1", t(1)).unwrap();
        core.apply(&c.records);
        core.reconcile_fleet(t(1));
        let empty = |core: &HubCore| {
            is_condition_true(&set_of(core, "eu").status.conditions, CLUSTER_SET_EMPTY)
        };
        assert!(empty(&core));
        // A lease renewal changes no label: nothing for the sets to write.
        step(&mut core, lease("edge-1"), 2);
        assert!(core.reconcile_fleet(t(2)).is_empty());
        let labels = BTreeMap::from([(LABEL_CLUSTER_SET.to_owned(), "eu".to_owned())]);
        let c = core.label_cluster("edge-1", &labels, &[]).unwrap();
        core.apply(&c.records);
        core.reconcile_fleet(t(3));
        assert!(!empty(&core));
    }
}

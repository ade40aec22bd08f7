//! What the hub owns of a cluster besides its acceptance: its labels (and so its cluster sets)
//! and the taints an operator puts on it.
//!
//! - While a cluster is pending, its labels are those its agent sends, except the set label
//!   (`cluster.open-cluster-management.io/clusterset`): a cluster never chooses its own set.
//! - At `ocm-edge cluster accept` the operator takes them, edits them or drops them
//!   ([`LabelEdit`]); a cluster accepted into no set goes to the `default` set, as in OCM.
//! - Once accepted, only the hub changes them (`ocm-edge cluster label`, `clusterset set`):
//!   [`super::join`] keeps what the agent sends apart as reported labels.
//!
//! Pure: each returns the change, with the hub's view for the agent, and placements follow
//! because a cluster record touches the fleet.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::{DEFAULT_CLUSTER_SET, LABEL_CLUSTER_SET, SelectorType, Taint};
use ocm_edge_schemas::validate::validate_label;

use super::RegistrationError;
use crate::availability::is_availability_taint;
use crate::core::objects::{ObjectKey, ObjectKind, StoredObject};
use crate::core::{Change, ClusterState, HubCore, time};

/// Whether `labels` put the cluster in a set (ExclusiveClusterSetLabel).
pub fn in_a_set(labels: &BTreeMap<String, String>) -> bool {
    labels.contains_key(LABEL_CLUSTER_SET)
}

/// Puts a cluster in no set into the `default` set (OCM's default-clusterset controller).
pub fn put_in_default_set(labels: &mut BTreeMap<String, String>) {
    if !in_a_set(labels) {
        labels.insert(LABEL_CLUSTER_SET.to_owned(), DEFAULT_CLUSTER_SET.to_owned());
    }
}

/// The labels an agent asks for, as the hub takes them while its cluster is pending: all but
/// the set label.
pub fn from_agent(sent: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut labels = sent.clone();
    labels.remove(LABEL_CLUSTER_SET);
    labels
}

/// A change of a cluster's labels by an operator: `drop_agent_labels` starts from none, then
/// `set` is added (overwriting) and the keys in `remove` are removed. (Who applies it puts a
/// cluster left in no set in `default`: [`put_in_default_set`].)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelEdit {
    /// Labels to set.
    pub set: BTreeMap<String, String>,
    /// Label keys to remove (after setting).
    pub remove: Vec<String>,
    /// Start from no labels (at acceptance: none of those the agent sent are taken).
    pub drop_agent_labels: bool,
}

impl LabelEdit {
    /// Applies the edit to `labels`; changes nothing when a label is invalid.
    ///
    /// # Errors
    /// [`RegistrationError::InvalidChange`] naming the invalid label.
    pub fn apply_to(&self, labels: &mut BTreeMap<String, String>) -> Result<(), RegistrationError> {
        for (k, v) in &self.set {
            validate_label(k, v).map_err(|e| RegistrationError::InvalidChange(e.to_string()))?;
        }
        if self.drop_agent_labels {
            labels.clear();
        }
        labels.extend(self.set.clone());
        for k in &self.remove {
            labels.remove(k);
        }
        Ok(())
    }
}

impl HubCore {
    /// Sets the labels `set` and removes the keys `remove` of an accepted cluster (in that
    /// order); a cluster left in no set goes to `default`. Nothing changes when a label is
    /// invalid or nothing would change.
    ///
    /// # Errors
    /// [`RegistrationError::UnknownCluster`], [`RegistrationError::NotAccepted`] (a pending
    /// cluster's labels are set when it is accepted), [`RegistrationError::InvalidChange`].
    pub fn label_cluster(
        &self,
        cluster: &str,
        set: &BTreeMap<String, String>,
        remove: &[String],
    ) -> Result<Change, RegistrationError> {
        let mut record = self.known_cluster(cluster)?;
        if record.acceptance != ClusterState::Accepted {
            return Err(RegistrationError::NotAccepted(cluster.to_owned()));
        }
        let before = record.labels.clone();
        LabelEdit {
            set: set.clone(),
            remove: remove.to_vec(),
            drop_agent_labels: false,
        }
        .apply_to(&mut record.labels)?;
        put_in_default_set(&mut record.labels);
        if record.labels == before {
            return Ok(Change::default());
        }
        tracing::info!(%cluster, labels = ?record.labels, "cluster labelled by the hub");
        Ok(self.publish_cluster(record))
    }

    /// Puts accepted clusters in the ExclusiveClusterSetLabel set `set` (their set label), all
    /// or nothing.
    ///
    /// # Errors
    /// [`RegistrationError::UnknownClusterSet`], [`RegistrationError::InvalidChange`] for a
    /// LabelSelector set or no cluster, and those of [`HubCore::label_cluster`] for a cluster.
    pub fn set_cluster_set(
        &self,
        set: &str,
        clusters: &[String],
    ) -> Result<Change, RegistrationError> {
        let key = ObjectKey::new(ObjectKind::ManagedClusterSet, "", set);
        match self.objects().get(&key) {
            Some(StoredObject::ClusterSet(s))
                if s.spec.cluster_selector.selector_type.unwrap_or_default()
                    == SelectorType::ExclusiveClusterSetLabel => {}
            Some(_) => {
                return Err(RegistrationError::InvalidChange(format!(
                    "cluster set {set:?} selects its clusters by a label selector, not by \
                     membership: give the clusters the labels it selects \
                     (`ocm-edge cluster label NAME k=v`)"
                )));
            }
            None => return Err(RegistrationError::UnknownClusterSet(set.to_owned())),
        }
        if clusters.is_empty() {
            return Err(RegistrationError::InvalidChange(
                "no cluster named: give them with --clusters a,b".to_owned(),
            ));
        }
        let labels = BTreeMap::from([(LABEL_CLUSTER_SET.to_owned(), set.to_owned())]);
        let mut change = Change::default();
        let mut seen = BTreeSet::new();
        for cluster in clusters.iter().filter(|c| seen.insert(c.as_str())) {
            change.extend(self.label_cluster(cluster, &labels, &[])?);
        }
        Ok(change)
    }

    /// Puts the taints `add` on a known cluster (one with the same key and effect is replaced;
    /// `timeAdded` is the hub's `now` unless the taint is already there as it is) and removes
    /// every taint whose key is in `remove`. The availability taints (`unreachable`,
    /// `unavailable`) are the hub's own and refused either way.
    ///
    /// # Errors
    /// [`RegistrationError::UnknownCluster`], [`RegistrationError::InvalidChange`].
    pub fn taint_cluster(
        &self,
        cluster: &str,
        add: &[Taint],
        remove: &[String],
        now: DateTime<Utc>,
    ) -> Result<Change, RegistrationError> {
        let mut record = self.known_cluster(cluster)?;
        for key in add
            .iter()
            .map(|t| t.key.as_str())
            .chain(remove.iter().map(String::as_str))
        {
            if is_availability_taint(key) {
                return Err(RegistrationError::InvalidChange(format!(
                    "taint {key:?} is the hub's own: it follows the cluster's availability \
                     (tolerate it in a placement instead)"
                )));
            }
        }
        for t in add {
            validate_label(&t.key, &t.value)
                .map_err(|e| RegistrationError::InvalidChange(format!("taint: {e}")))?;
        }
        let before = record.taints.clone();
        for t in add {
            let same = |e: &Taint| e.key == t.key && e.effect == t.effect;
            let kept = record
                .taints
                .iter()
                .find(|e| same(e) && e.value == t.value)
                .and_then(|e| e.time_added);
            record.taints.retain(|e| !same(e));
            record.taints.push(Taint {
                time_added: kept.or_else(|| Some(time(now))),
                ..t.clone()
            });
        }
        record
            .taints
            .retain(|t| is_availability_taint(&t.key) || !remove.contains(&t.key));
        if record.taints == before {
            return Ok(Change::default());
        }
        tracing::info!(%cluster, taints = ?record.taints, "cluster taints changed by the hub");
        Ok(self.publish_cluster(record))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use ocm_edge_schemas::api::cluster::{TAINT_UNREACHABLE, TaintEffect};

    use super::*;
    use crate::core::testkit::*;

    #[test]
    fn the_hub_labels_a_cluster_and_refuses_an_invalid_label_whole() {
        const SET: &str = "cluster.open-cluster-management.io/clusterset";
        let mut core = core();
        step(
            &mut core,
            join_labelled("edge-1", &[(SET, "eu"), ("old", "x")]),
            0,
        );
        let c = core.accept("edge-1", t(1)).unwrap();
        core.apply(&c.records);
        let set = BTreeMap::from([
            (SET.to_owned(), "payments".to_owned()),
            ("tier".to_owned(), "canary".to_owned()),
        ]);
        let change = core
            .label_cluster("edge-1", &set, &["old".to_owned()])
            .unwrap();
        core.apply(&change.records);
        assert_eq!(core.cluster("edge-1").unwrap().labels, set);
        assert_eq!(hub_views(&change)[0].metadata.labels, set);
        // The same again changes nothing and stores nothing.
        assert!(core.label_cluster("edge-1", &set, &[]).unwrap().is_empty());

        let bad = BTreeMap::from([
            ("ok".to_owned(), "yes".to_owned()),
            ("tier".to_owned(), "not valid".to_owned()),
        ]);
        let e = core.label_cluster("edge-1", &bad, &[]).unwrap_err();
        assert!(e.to_string().contains("\"tier\"=\"not valid\""), "{e}");
        assert!(e.to_string().contains("nothing was changed"), "{e}");
        assert_eq!(core.cluster("edge-1").unwrap().labels, set);
        assert_eq!(
            core.label_cluster("ghost", &set, &[]),
            Err(RegistrationError::UnknownCluster("ghost".into()))
        );
    }

    #[test]
    fn an_operator_takes_edits_or_drops_a_pending_clusters_labels_at_accept_and_chooses_its_set() {
        const SET: &str = "cluster.open-cluster-management.io/clusterset";
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let sent = [(SET, "payments"), ("site", "lyon"), ("tier", "canary")];
        let accepted = |edit: LabelEdit| {
            let mut core = core();
            step(&mut core, join_labelled("edge-1", &sent), 0);
            // Pending, it cannot be labelled: its labels are set at acceptance.
            assert_eq!(
                core.label_cluster("edge-1", &labels(&[("a", "b")]), &[]),
                Err(RegistrationError::NotAccepted("edge-1".into()))
            );
            let c = core.accept_with("edge-1", &edit, t(1)).unwrap();
            core.apply(&c.records);
            core.cluster("edge-1").unwrap().labels.clone()
        };
        // Taken as sent, but for the set: the cluster goes to `default`.
        assert_eq!(
            accepted(LabelEdit::default()),
            labels(&[(SET, "default"), ("site", "lyon"), ("tier", "canary")])
        );
        // Edited: a set chosen, a label removed, one added.
        assert_eq!(
            accepted(LabelEdit {
                set: labels(&[(SET, "eu"), ("region", "west")]),
                remove: vec!["tier".into()],
                drop_agent_labels: false,
            }),
            labels(&[(SET, "eu"), ("region", "west"), ("site", "lyon")])
        );
        // Dropped.
        assert_eq!(
            accepted(LabelEdit {
                drop_agent_labels: true,
                ..LabelEdit::default()
            }),
            labels(&[(SET, "default")])
        );
        // An invalid label accepts nothing.
        let mut core = core();
        step(&mut core, join_labelled("edge-1", &sent), 0);
        let bad = LabelEdit {
            set: labels(&[("tier", "not valid")]),
            ..LabelEdit::default()
        };
        assert!(matches!(
            core.accept_with("edge-1", &bad, t(1)),
            Err(RegistrationError::InvalidChange(_))
        ));
        assert_eq!(
            core.cluster("edge-1").unwrap().acceptance,
            ClusterState::Pending
        );
    }

    #[test]
    fn clusterset_set_moves_accepted_clusters_all_or_nothing() {
        const SET: &str = "cluster.open-cluster-management.io/clusterset";
        let mut core = core();
        let builtin = core.ensure_builtin_cluster_sets(t(0));
        core.apply(&builtin.records);
        for name in ["edge-1", "edge-2", "edge-3"] {
            step(&mut core, join(name), 0);
        }
        for name in ["edge-1", "edge-2"] {
            let c = core.accept(name, t(1)).unwrap();
            core.apply(&c.records);
        }
        let set_of = |core: &HubCore, c: &str| core.cluster(c).unwrap().labels[SET].clone();
        let names = |n: &[&str]| n.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        // Unknown set, a LabelSelector set, a pending or unknown cluster: nothing moves.
        assert_eq!(
            core.set_cluster_set("eu", &names(&["edge-1"])),
            Err(RegistrationError::UnknownClusterSet("eu".into()))
        );
        assert!(matches!(
            core.set_cluster_set("global", &names(&["edge-1"])),
            Err(RegistrationError::InvalidChange(_))
        ));
        let (c, _, _) = core
            .apply_object(
                StoredObject::ClusterSet(Box::new(crate::placement::testkit::mk_set("eu"))),
                t(2),
            )
            .unwrap();
        core.apply(&c.records);
        assert_eq!(
            core.set_cluster_set("eu", &names(&["edge-1", "edge-3"])),
            Err(RegistrationError::NotAccepted("edge-3".into()))
        );
        assert_eq!(
            core.set_cluster_set("eu", &names(&["edge-1", "ghost"])),
            Err(RegistrationError::UnknownCluster("ghost".into()))
        );
        assert_eq!(set_of(&core, "edge-1"), "default");
        // Both move, and back to default.
        let c = core
            .set_cluster_set("eu", &names(&["edge-1", "edge-2"]))
            .unwrap();
        core.apply(&c.records);
        assert_eq!(
            (set_of(&core, "edge-1"), set_of(&core, "edge-2")),
            ("eu".to_owned(), "eu".to_owned())
        );
        assert_eq!(hub_views(&c).len(), 2);
        let c = core
            .set_cluster_set("default", &names(&["edge-2"]))
            .unwrap();
        core.apply(&c.records);
        assert_eq!(set_of(&core, "edge-2"), "default");
        // Removing the set label puts a cluster back in `default`.
        let c = core
            .label_cluster("edge-1", &BTreeMap::new(), &[SET.to_owned()])
            .unwrap();
        core.apply(&c.records);
        assert_eq!(set_of(&core, "edge-1"), "default");
    }

    fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect,
            time_added: None,
        }
    }

    #[test]
    fn the_hub_taints_a_cluster_beside_its_availability_taint_and_stamps_when() {
        let mut core = core();
        step(&mut core, join("edge-1"), 0);
        let c = core.accept("edge-1", t(1)).unwrap();
        core.apply(&c.records);
        // The cluster goes unreachable: the hub's own taint.
        core.apply(&core.availability_tick(t(10_000)).0.records);
        let has_unreachable = |core: &HubCore| {
            core.cluster("edge-1")
                .unwrap()
                .taints
                .iter()
                .any(|t| t.key == TAINT_UNREACHABLE)
        };
        assert!(has_unreachable(&core));

        let maintenance = taint("maintenance", "firmware", TaintEffect::NoSelect);
        let change = core
            .taint_cluster("edge-1", std::slice::from_ref(&maintenance), &[], t(20))
            .unwrap();
        core.apply(&change.records);
        let stored = |core: &HubCore| {
            core.cluster("edge-1")
                .unwrap()
                .taints
                .iter()
                .find(|t| t.key == "maintenance")
                .cloned()
        };
        let first = stored(&core).unwrap();
        assert_eq!(first.time_added, Some(time(t(20))));
        assert_eq!(hub_views(&change)[0].spec.taints.len(), 2);
        assert!(has_unreachable(&core));
        // The same taint again changes nothing (its time stays); another value replaces it.
        assert!(
            core.taint_cluster("edge-1", std::slice::from_ref(&maintenance), &[], t(30))
                .unwrap()
                .is_empty()
        );
        let other = taint("maintenance", "disk", TaintEffect::NoSelect);
        let change = core.taint_cluster("edge-1", &[other], &[], t(40)).unwrap();
        core.apply(&change.records);
        assert_eq!(stored(&core).unwrap().value, "disk");
        assert_eq!(stored(&core).unwrap().time_added, Some(time(t(40))));

        // The availability taint is the hub's: neither added nor removed by hand.
        for (add, remove) in [
            (
                vec![taint(TAINT_UNREACHABLE, "", TaintEffect::NoSelect)],
                vec![],
            ),
            (vec![], vec![TAINT_UNREACHABLE.to_owned()]),
        ] {
            let e = core
                .taint_cluster("edge-1", &add, &remove, t(50))
                .unwrap_err();
            assert!(e.to_string().contains("the hub's own"), "{e}");
        }
        let bad = taint("bad key!", "", TaintEffect::PreferNoSelect);
        let e = core
            .taint_cluster("edge-1", &[bad], &[], t(50))
            .unwrap_err();
        assert!(e.to_string().contains("nothing was changed"), "{e}");

        let change = core
            .taint_cluster("edge-1", &[], &["maintenance".to_owned()], t(60))
            .unwrap();
        core.apply(&change.records);
        assert_eq!(stored(&core), None);
        assert!(
            has_unreachable(&core),
            "removing a taint by hand kept the hub's own"
        );
    }
}

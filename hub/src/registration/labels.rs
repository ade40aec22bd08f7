//! What the hub owns of an accepted cluster besides its acceptance: its labels (and so its
//! cluster sets) and the taints an operator puts on it. An agent cannot change either once its
//! cluster is accepted ([`super::join`] keeps the labels it sends apart); `ocm-edge cluster
//! label` and `ocm-edge cluster taint` can (admin role). Pure: each returns the change, with the
//! hub's view for the agent, and placements follow because a cluster record touches the fleet.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::Taint;
use ocm_edge_schemas::validate::validate_label;

use super::RegistrationError;
use crate::availability::is_availability_taint;
use crate::core::{Change, HubCore, time};

impl HubCore {
    /// Sets the labels `set` and removes the keys `remove` of a known cluster (in that order).
    /// Nothing changes when a label is invalid or nothing would change.
    ///
    /// # Errors
    /// [`RegistrationError::UnknownCluster`], [`RegistrationError::InvalidChange`].
    pub fn label_cluster(
        &self,
        cluster: &str,
        set: &BTreeMap<String, String>,
        remove: &[String],
    ) -> Result<Change, RegistrationError> {
        let mut record = self.known_cluster(cluster)?;
        for (k, v) in set {
            validate_label(k, v).map_err(|e| RegistrationError::InvalidChange(e.to_string()))?;
        }
        let before = record.labels.clone();
        record.labels.extend(set.clone());
        for k in remove {
            record.labels.remove(k);
        }
        if record.labels == before {
            return Ok(Change::default());
        }
        tracing::info!(%cluster, labels = ?record.labels, "cluster labelled by the hub");
        Ok(self.publish_cluster(record))
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

//! Drift corrections, counted: an apply, for the same version of a work, that finds an object
//! no longer as the agent's last apply left it (changed or deleted and made again on the
//! cluster) and so puts it back.
//!
//! An object is known by what every write changes: its uid (a deleted and created object has a
//! new one) and its `metadata.generation` (the API server raises it on changes to the spec, not
//! to the status, so a Deployment's controller does not count), or its `resourceVersion` for an
//! object that has no generation (a ConfigMap: any write to it counts, an added label too).
//! Only strategies that put an object back count: `Update` and server-side apply without
//! `ignoreFields` (with them, a change to an ignored field is left alone on purpose);
//! `CreateOnly` and `ReadOnly` never correct anything.

use std::collections::HashMap;

use serde_json::Value;

use crate::work::plan::ApplyStrategy;

/// What the applies of one reconcile of a work left, by object key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marks {
    /// The version of the work these applies were of.
    version: i64,
    objects: HashMap<String, Mark>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Mark {
    uid: String,
    written: Written,
}

/// What the last write to an object changed, as far as the API server counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Written {
    Generation(i64),
    /// For an object without a generation.
    ResourceVersion(String),
}

impl Mark {
    fn of(live: &Value) -> Option<Self> {
        let meta = live.get("metadata")?;
        let uid = meta.get("uid").and_then(Value::as_str)?.to_owned();
        let written = match meta.get("generation").and_then(Value::as_i64) {
            Some(g) => Written::Generation(g),
            None => Written::ResourceVersion(meta.get("resourceVersion")?.as_str()?.to_owned()),
        };
        Some(Self { uid, written })
    }
}

/// Whether an apply with `strategy` puts a changed object back.
pub fn corrects(strategy: &ApplyStrategy) -> bool {
    match strategy {
        ApplyStrategy::Update => true,
        ApplyStrategy::ServerSideApply { ignore_fields, .. } => ignore_fields.is_empty(),
        ApplyStrategy::CreateOnly | ApplyStrategy::ReadOnly => false,
    }
}

impl Marks {
    /// The marks of a reconcile of `version`, empty.
    pub fn new(version: i64) -> Self {
        Self {
            version,
            objects: HashMap::new(),
        }
    }

    /// Records what the apply of `key` left (`live`, the object the apply returned); true when
    /// `previous`, the last reconcile of the same version, left it otherwise: a drift this
    /// apply corrected. An object without a uid is not recorded.
    pub fn record(&mut self, previous: Option<&Marks>, key: &str, live: &Value) -> bool {
        let Some(mark) = Mark::of(live) else {
            return false;
        };
        let drifted = previous
            .filter(|p| p.version == self.version)
            .and_then(|p| p.objects.get(key))
            .is_some_and(|before| *before != mark);
        self.objects.insert(key.to_owned(), mark);
        drifted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(uid: &str, generation: Option<i64>, rv: &str) -> Value {
        let mut meta = json!({"name": "web", "uid": uid, "resourceVersion": rv});
        if let Some(g) = generation {
            meta["generation"] = json!(g);
        }
        json!({"metadata": meta})
    }

    fn reconcile(previous: Option<&Marks>, version: i64, live: &Value) -> (Marks, bool) {
        let mut next = Marks::new(version);
        let drifted = next.record(previous, "apps/v1/Deployment/ns/web", live);
        (next, drifted)
    }

    #[test]
    fn an_object_changed_or_made_again_between_two_applies_of_one_version_is_a_correction() {
        let (first, drifted) = reconcile(None, 3, &object("a", Some(1), "10"));
        assert!(!drifted, "the first apply of a version corrects nothing");
        // The status moved (resourceVersion), the spec did not (generation): no drift.
        let (same, drifted) = reconcile(Some(&first), 3, &object("a", Some(1), "17"));
        assert!(!drifted);
        // Someone edited the spec (generation 2) and the apply put it back (generation 3).
        let (edited, drifted) = reconcile(Some(&same), 3, &object("a", Some(3), "25"));
        assert!(drifted);
        // Deleted behind the agent's back and made again: a new uid, even at generation 1.
        let (_, drifted) = reconcile(Some(&edited), 3, &object("b", Some(3), "30"));
        assert!(drifted);
    }

    #[test]
    fn a_new_version_of_the_work_changes_objects_without_counting_drift() {
        let (first, _) = reconcile(None, 3, &object("a", Some(1), "10"));
        let (_, drifted) = reconcile(Some(&first), 4, &object("a", Some(2), "11"));
        assert!(!drifted);
    }

    #[test]
    fn an_object_without_a_generation_is_known_by_its_resource_version() {
        let (first, _) = reconcile(None, 1, &object("a", None, "10"));
        let (same, drifted) = reconcile(Some(&first), 1, &object("a", None, "10"));
        assert!(!drifted);
        let (_, drifted) = reconcile(Some(&same), 1, &object("a", None, "12"));
        assert!(drifted);
    }

    #[test]
    fn only_strategies_that_put_an_object_back_correct_drift() {
        assert!(corrects(&ApplyStrategy::Update));
        assert!(!corrects(&ApplyStrategy::CreateOnly));
        assert!(!corrects(&ApplyStrategy::ReadOnly));
        let ssa = |ignore_fields| ApplyStrategy::ServerSideApply {
            force: false,
            field_manager: "m".into(),
            ignore_fields,
        };
        assert!(corrects(&ssa(Vec::new())));
        // A change to an ignored field is left on the cluster on purpose: no correction.
        assert!(!corrects(&ssa(vec![
            crate::work::plan::IgnoredField::json_path(
                ".spec.replicas",
                ocm_edge_schemas::api::work::IgnoreFieldsCondition::OnSpokeChange,
            )
        ])));
    }
}

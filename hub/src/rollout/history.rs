//! The revisions of a ManifestWorkReplicaSet's template, for `rollout undo` and automatic abort
//! (OCM's enhancement "Support Rollback for ManifestWorkReplicaSet", where ControllerRevisions
//! hold them; here the set's record does). A revision is the template with its `perCluster`
//! (what a cluster's work is rendered from), named by a hash of both. Pure.
//!
//! The enhancement names revisions with Kubernetes' FNV-32 hash and bumps a collision count when
//! two templates share a name; ocm-edge keeps every revision's content next to its name and
//! names it with SHA-256, so two templates never share one and no collision count is needed.

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::replicaset::{
    DEFAULT_REVISION_HISTORY_LIMIT, ManifestWorkReplicaSetSpec, PerCluster,
};
use ocm_edge_schemas::api::work::ManifestWorkSpec;
use serde::{Deserialize, Serialize};

/// One kept revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revision {
    /// Grows with every new or restored revision.
    pub revision: i64,
    /// [`revision_hash`] of its content.
    pub hash: String,
    /// When it became the spec's (again).
    pub created: DateTime<Utc>,
    /// Its template.
    pub template: ManifestWorkSpec,
    /// Its per-cluster values and overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_cluster: Option<PerCluster>,
    /// It was an earlier revision brought back (an undo): OCM's FoundNewRevision.
    #[serde(default)]
    pub restored: bool,
}

impl Revision {
    /// `spec` with this revision's template and per-cluster values.
    pub fn apply_to(&self, spec: &ManifestWorkReplicaSetSpec) -> ManifestWorkReplicaSetSpec {
        ManifestWorkReplicaSetSpec {
            manifest_work_template: self.template.clone(),
            per_cluster: self.per_cluster.clone(),
            ..spec.clone()
        }
    }
}

/// An aborted rollout (OCM's `abortedTime`): the update revision it stopped, the revision it
/// returned to, when, and the clusters sent back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aborted {
    /// The revision whose rollout stopped.
    pub revision: String,
    /// The revision the clusters went back to.
    pub to: String,
    /// When.
    pub at: DateTime<Utc>,
    /// The clusters sent back.
    #[serde(default)]
    pub clusters: std::collections::BTreeSet<String>,
}

/// The revision name of a spec's template and per-cluster values: 10 hex digits of SHA-256.
pub fn revision_hash(spec: &ManifestWorkReplicaSetSpec) -> String {
    let content =
        serde_json::to_vec(&(&spec.manifest_work_template, &spec.per_cluster)).unwrap_or_default();
    let digest = ring::digest::digest(&ring::digest::SHA256, &content);
    hex::encode(&digest.as_ref()[..5])
}

/// How many revisions besides the current and the update one are kept.
pub fn history_limit(spec: &ManifestWorkReplicaSetSpec) -> usize {
    usize::try_from(
        spec.revision_history_limit
            .unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT),
    )
    .unwrap_or(0)
}

/// Makes `spec`'s revision the newest of `history`: nothing when it already is; an earlier one
/// with the same content moves to the end with a new number (marked restored); otherwise a new
/// one is added. Then the oldest revisions beyond the limit go, never `keep` (the current
/// revision, what an abort returns to) nor the newest.
pub fn record(
    history: &mut Vec<Revision>,
    spec: &ManifestWorkReplicaSetSpec,
    keep: &str,
    now: DateTime<Utc>,
) {
    let hash = revision_hash(spec);
    if history.last().is_some_and(|r| r.hash == hash) {
        return;
    }
    let number = history.iter().map(|r| r.revision).max().unwrap_or(0) + 1;
    let restored = history.iter().any(|r| r.hash == hash);
    history.retain(|r| r.hash != hash);
    history.push(Revision {
        revision: number,
        hash,
        created: now,
        template: spec.manifest_work_template.clone(),
        per_cluster: spec.per_cluster.clone(),
        restored,
    });
    let limit = history_limit(spec);
    while history.len() > limit + 1 {
        let newest = history.len() - 1;
        match history
            .iter()
            .enumerate()
            .position(|(i, r)| i != newest && r.hash != keep)
        {
            Some(oldest) => {
                history.remove(oldest);
            }
            None => break,
        }
    }
}

/// The revision to go back to: `to` when given; else the current revision (the last one rolled
/// out everywhere, `current`) when the template is another; else the newest one before the
/// template's (`kubectl rollout undo`).
///
/// # Errors
/// What is missing, with what is kept.
pub fn undo_target<'a>(
    history: &'a [Revision],
    to: Option<i64>,
    current: &str,
    template: &str,
) -> Result<&'a Revision, String> {
    if to.is_none()
        && current != template
        && let Some(r) = history.iter().find(|r| r.hash == current)
    {
        return Ok(r);
    }
    let kept = || {
        let numbers: Vec<String> = history.iter().map(|r| r.revision.to_string()).collect();
        if numbers.is_empty() {
            "none yet".to_owned()
        } else {
            numbers.join(", ")
        }
    };
    match to {
        Some(n) => history.iter().find(|r| r.revision == n).ok_or_else(|| {
            format!(
                "no revision {n} (kept: {}; see ocm-edge rollout history)",
                kept()
            )
        }),
        None => history
            .iter()
            .rev()
            .find(|r| r.hash != template)
            .ok_or_else(|| {
                format!(
                    "no earlier revision to go back to (kept: {}; see ocm-edge rollout history)",
                    kept()
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(greeting: &str, limit: Option<i32>) -> ManifestWorkReplicaSetSpec {
        serde_json::from_value(json!({
            "revisionHistoryLimit": limit,
            "manifestWorkTemplate": {"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"},
                 "data": {"greeting": greeting}}]}}}))
        .unwrap()
    }

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + s, 0).unwrap()
    }

    fn numbers(history: &[Revision]) -> Vec<(i64, String)> {
        history
            .iter()
            .map(|r| {
                (
                    r.revision,
                    r.template.workload.manifests[0].0["data"]["greeting"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn a_new_template_is_a_new_revision_and_an_old_one_comes_back_with_a_new_number() {
        let mut h = Vec::new();
        record(&mut h, &spec("a", None), "", t(0));
        record(&mut h, &spec("a", None), "", t(1));
        record(&mut h, &spec("b", None), "", t(2));
        assert_eq!(numbers(&h), [(1, "a".into()), (2, "b".into())]);
        assert_ne!(h[0].hash, h[1].hash);
        record(&mut h, &spec("a", None), "", t(3));
        assert_eq!(numbers(&h), [(2, "b".into()), (3, "a".into())]);
        assert!(h[1].restored && !h[0].restored);
        assert_eq!(h[1].created, t(3));
        // The limit counts only the revisions besides the newest.
        assert_eq!(
            revision_hash(&spec("a", Some(3))),
            revision_hash(&spec("a", None))
        );
    }

    #[test]
    fn the_history_is_bounded_but_keeps_the_current_revision() {
        let mut h = Vec::new();
        record(&mut h, &spec("good", Some(2)), "", t(0));
        let good = h[0].hash.clone();
        for (i, g) in ["b1", "b2", "b3", "b4"].into_iter().enumerate() {
            record(&mut h, &spec(g, Some(2)), &good, t(i as i64 + 1));
        }
        assert_eq!(
            numbers(&h),
            [(1, "good".into()), (4, "b3".into()), (5, "b4".into())]
        );
        let mut none = Vec::new();
        for g in ["x", "y"] {
            record(&mut none, &spec(g, Some(0)), "", t(0));
        }
        assert_eq!(numbers(&none), [(2, "y".into())]);
    }

    #[test]
    fn undo_goes_to_the_previous_revision_or_the_one_named() {
        let mut h = Vec::new();
        for g in ["a", "b", "c"] {
            record(&mut h, &spec(g, None), "", t(0));
        }
        let (first, third) = (h[0].hash.clone(), h[2].hash.clone());
        // Nothing rolled out everywhere yet: the one before the template's.
        assert_eq!(undo_target(&h, None, "", &third).unwrap().revision, 2);
        // Revision 1 is the last rolled out everywhere: undo goes there, not to the unproven 2.
        assert_eq!(undo_target(&h, None, &first, &third).unwrap().revision, 1);
        assert_eq!(
            undo_target(&h, Some(2), &first, &third).unwrap().revision,
            2
        );
        let e = undo_target(&h, Some(9), "", &third).unwrap_err();
        assert!(e.contains("no revision 9 (kept: 1, 2, 3"), "{e}");
        let only = h[0].hash.clone();
        let e = undo_target(&h[..1], None, &only, &only).unwrap_err();
        assert!(e.contains("no earlier revision"), "{e}");
    }
}

//! [`ManifestWorkReplicaSet`] (work.open-cluster-management.io/v1alpha1): one ManifestWork per
//! cluster chosen by Placements, rolled out with a [`RolloutStrategy`]
//! (cluster.open-cluster-management.io/v1alpha1 rollout types).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::meta::{Condition, IntOrString, LabelSelector, ObjectMeta, resource};
use super::work::ManifestWorkSpec;

/// Label on generated ManifestWorks: `<namespace>.<name>` of their ManifestWorkReplicaSet.
pub const LABEL_MANIFEST_WORK_REPLICA_SET: &str =
    "work.open-cluster-management.io/manifestworkreplicaset";
/// Label on generated ManifestWorks: the Placement that selected the cluster.
pub const LABEL_PLACEMENT_NAME: &str = "work.open-cluster-management.io/placementname";
/// Condition: the referenced placements exist and have decisions.
pub const CONDITION_PLACEMENT_VERIFIED: &str = "PlacementVerified";
/// Condition: the rollout of every placement is complete.
pub const CONDITION_PLACEMENT_ROLLED_OUT: &str = "PlacementRolledOut";
/// Condition: a ManifestWork exists for every selected cluster.
pub const CONDITION_MANIFESTWORK_APPLIED: &str = "ManifestworkApplied";
/// Reason: no PlacementDecision found.
pub const REASON_PLACEMENT_DECISION_NOT_FOUND: &str = "PlacementDecisionNotFound";
/// Reason: the placement selected no cluster.
pub const REASON_PLACEMENT_DECISION_EMPTY: &str = "PlacementDecisionEmpty";
/// Reason: all is as expected.
pub const REASON_AS_EXPECTED: &str = "AsExpected";
/// Reason: still processing.
pub const REASON_PROCESSING: &str = "Processing";
/// Reason: something is not as expected.
pub const REASON_NOT_AS_EXPECTED: &str = "NotAsExpected";
/// Reason: a rollout is progressing.
pub const REASON_PROGRESSING: &str = "Progressing";
/// Reason: a rollout is complete.
pub const REASON_COMPLETE: &str = "Complete";
/// Condition (OCM enhancement "Support Rollback for ManifestWorkReplicaSet"): where the rollout
/// of the update revision is.
pub const CONDITION_PROGRESSING: &str = "Progressing";
/// Reason (Progressing True): a revision never rolled out before is rolling out.
pub const REASON_NEW_REVISION_CREATED: &str = "NewRevisionCreated";
/// Reason (Progressing True): an earlier revision (an undo) is rolling out again.
pub const REASON_FOUND_NEW_REVISION: &str = "FoundNewRevision";
/// Reason (Progressing False): the update revision succeeded on every selected cluster.
pub const REASON_NEW_REVISION_AVAILABLE: &str = "NewRevisionAvailable";
/// Reason (Progressing False): the rollout was aborted and rolled back to the current revision.
pub const REASON_ROLLOUT_ABORTED: &str = "RolloutAborted";
/// Reason (Progressing False): more clusters failed than maxFailures allows; not rolled back.
pub const REASON_PROGRESS_DEADLINE_EXCEEDED: &str = "ProgressDeadlineExceeded";
/// Reason (PlacementRolledOut False): the rollout stopped on failures.
pub const REASON_ROLLOUT_DEGRADED: &str = "RolloutDegraded";
/// Label on generated ManifestWorks: the revision (hash) of the template they carry.
pub const LABEL_CONTROLLER_HASH: &str = "work.open-cluster-management.io/controller-hash";
/// Revisions kept when `revisionHistoryLimit` is not set (OCM's proposed default).
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// Deploys a ManifestWork to every cluster its placements select (namespaced).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkReplicaSet {
    /// `work.open-cluster-management.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ManifestWorkReplicaSet`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Template and placements.
    #[serde(default)]
    pub spec: ManifestWorkReplicaSetSpec,
    /// Rollout progress.
    #[serde(
        default,
        skip_serializing_if = "ManifestWorkReplicaSetStatus::is_empty"
    )]
    pub status: ManifestWorkReplicaSetStatus,
}
resource!(
    ManifestWorkReplicaSet,
    "work.open-cluster-management.io/v1alpha1",
    "ManifestWorkReplicaSet",
    [metadata, spec, status]
);

/// Spec of a [`ManifestWorkReplicaSet`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkReplicaSetSpec {
    /// The spec of every generated ManifestWork.
    #[serde(default)]
    pub manifest_work_template: ManifestWorkSpec,
    /// Placements (in the same namespace) and how to roll out to each.
    #[serde(default)]
    pub placement_refs: Vec<LocalPlacementReference>,
    /// Background (default) or Foreground.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cascade_deletion_policy: Option<CascadeDeletionPolicy>,
    /// Earlier revisions of the template kept for `rollout undo` and automatic abort (OCM
    /// enhancement "Support Rollback for ManifestWorkReplicaSet"); 10 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// ocm-edge: per-cluster values and overrides. When present, the hub renders the template
    /// for each cluster (its `{{ ... }}` placeholders, then the overrides) before signing it, so
    /// the agent verifies what it applies. Absent: every cluster gets the template as written
    /// (OCM's behaviour).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_cluster: Option<PerCluster>,
}

/// ocm-edge: what differs between the clusters of a [`ManifestWorkReplicaSet`].
///
/// A cluster's `.Values` are `values`, merged (RFC 7386) with `clusterSets` of each set the
/// cluster belongs to (by set name), then with `clusters` of its own name: the most specific
/// wins. Overrides are applied to the template in ascending `priority` (then in list order), so
/// the highest priority has the last word; placeholders are rendered after the overrides.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PerCluster {
    /// Values every cluster has (a JSON object).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub values: serde_json::Value,
    /// Values by ManagedClusterSet name, for the clusters of that set.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub cluster_sets: std::collections::BTreeMap<String, serde_json::Value>,
    /// Values by cluster name.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub clusters: std::collections::BTreeMap<String, serde_json::Value>,
    /// Patches for the clusters they select.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<ClusterOverride>,
}

/// ocm-edge: a patch of the template for some clusters. A cluster is selected when it matches
/// every selector given (`clusterSelector`, `clusterSets`, `clusters`); with none, every cluster.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterOverride {
    /// Named in errors and in `rollout status`.
    pub name: String,
    /// Applied in ascending priority (0 when absent): the highest has the last word.
    #[serde(default, skip_serializing_if = "super::meta::is_zero_i32")]
    pub priority: i32,
    /// Clusters whose labels match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<LabelSelector>,
    /// Clusters in any of these ManagedClusterSets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_sets: Vec<String>,
    /// Clusters by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<String>,
    /// The manifests patched (every one when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<ManifestTarget>,
    /// An RFC 7386 JSON merge patch of each target manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_patch: Option<serde_json::Value>,
    /// An RFC 6902 JSON patch of each target manifest (after `mergePatch`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_patch: Vec<serde_json::Value>,
}

/// ocm-edge: which manifests of a template an override patches; every field given must match.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestTarget {
    /// The manifest's `apiVersion`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The manifest's `kind`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The manifest's `metadata.namespace`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The manifest's `metadata.name`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

impl ManifestTarget {
    /// Whether `manifest` is one of the targets.
    pub fn matches(&self, manifest: &serde_json::Value) -> bool {
        let field = |path: &[&str]| {
            let mut v = manifest;
            for p in path {
                v = match v.get(p) {
                    Some(v) => v,
                    None => return "",
                };
            }
            v.as_str().unwrap_or("")
        };
        (self.api_version.is_empty() || field(&["apiVersion"]) == self.api_version)
            && (self.kind.is_empty() || field(&["kind"]) == self.kind)
            && (self.namespace.is_empty() || field(&["metadata", "namespace"]) == self.namespace)
            && (self.name.is_empty() || field(&["metadata", "name"]) == self.name)
    }
}

/// Whether deleting the set waits for its ManifestWorks to be gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum CascadeDeletionPolicy {
    /// Delete the set without waiting.
    #[default]
    Background,
    /// Delete the set after its works are gone.
    Foreground,
}

/// A Placement in the set's namespace.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalPlacementReference {
    /// Placement name.
    #[serde(default)]
    pub name: String,
    /// How to roll out (All when absent).
    #[serde(default, skip_serializing_if = "RolloutStrategy::is_empty")]
    pub rollout_strategy: RolloutStrategy,
}

/// Rollout type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum RolloutType {
    /// Every cluster at once.
    #[default]
    All,
    /// Clusters in batches of maxConcurrency, mandatory groups first.
    Progressive,
    /// One decision group after the other.
    ProgressivePerGroup,
}

/// How a work reaches the selected clusters.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    /// All, Progressive or ProgressivePerGroup.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<RolloutType>,
    /// Options for All.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<RolloutAll>,
    /// Options for Progressive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progressive: Option<RolloutProgressive>,
    /// Options for ProgressivePerGroup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progressive_per_group: Option<RolloutProgressivePerGroup>,
    /// What to do when more clusters fail than maxFailures allows (OCM enhancement "Support
    /// Rollback for ManifestWorkReplicaSet"): absent, stop; `AbortAll`, stop and roll the
    /// clusters that have not succeeded back to the current (last fully rolled out) revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_strategy: Option<FailureStrategy>,
}

/// What a rollout does on failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum FailureStrategy {
    /// Abort the rollout and roll back to the current revision.
    AbortAll,
}

impl RolloutStrategy {
    /// Whether nothing is configured (meaning All).
    pub fn is_empty(&self) -> bool {
        self == &RolloutStrategy::default()
    }

    /// The effective type (All when unset).
    pub fn effective_type(&self) -> RolloutType {
        self.type_.unwrap_or_default()
    }
}

/// Timing and failure budget shared by every rollout type.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutConfig {
    /// How long a cluster must stay successful before the rollout moves on (Go duration, e.g. `5m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_success_time: Option<String>,
    /// How long to wait for a cluster before counting it failed: a Go duration or `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline: Option<String>,
    /// Failures tolerated before the rollout stops: a count or a percentage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failures: Option<IntOrString>,
}

impl RolloutConfig {
    /// `minSuccessTime` as a duration (zero when absent); `None` when malformed.
    pub fn min_success_duration(&self) -> Option<Duration> {
        self.min_success_time
            .as_deref()
            .map_or(Some(Duration::ZERO), parse_go_duration)
    }

    /// `progressDeadline` as a duration; `Ok(None)` for no deadline (absent or `None`),
    /// `Err(())` when malformed.
    #[allow(clippy::result_unit_err)]
    pub fn progress_deadline_duration(&self) -> Result<Option<Duration>, ()> {
        match self.progress_deadline.as_deref() {
            None | Some("None") | Some("") => Ok(None),
            Some(text) => parse_go_duration(text).map(Some).ok_or(()),
        }
    }
}

/// Options of the All rollout.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutAll {
    /// Timing and failure budget.
    #[serde(flatten)]
    pub config: RolloutConfig,
}

/// A decision group that must succeed before the rest.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandatoryDecisionGroup {
    /// By name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group_name: String,
    /// By index (0 omitted, as in Go).
    #[serde(default, skip_serializing_if = "super::meta::is_zero_i32")]
    pub group_index: i32,
}

/// Options of the Progressive rollout.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutProgressive {
    /// Timing and failure budget.
    #[serde(flatten)]
    pub config: RolloutConfig,
    /// Groups rolled out first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mandatory_decision_groups: Vec<MandatoryDecisionGroup>,
    /// Clusters updated at once: a count or a percentage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<IntOrString>,
}

/// Options of the ProgressivePerGroup rollout.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutProgressivePerGroup {
    /// Timing and failure budget.
    #[serde(flatten)]
    pub config: RolloutConfig,
    /// Groups rolled out first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mandatory_decision_groups: Vec<MandatoryDecisionGroup>,
}

/// Status of a [`ManifestWorkReplicaSet`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkReplicaSetStatus {
    /// PlacementVerified, PlacementRolledOut, ManifestworkApplied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Totals over all placements; always written.
    #[serde(default)]
    pub summary: ManifestWorkReplicaSetSummary,
    /// Per placement (JSON name `placementSummary`, as in Go); always written.
    #[serde(default, rename = "placementSummary")]
    pub placements_summary: Vec<PlacementSummary>,
    /// The last revision that succeeded on every selected cluster (what an abort returns to).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_revision: String,
    /// The revision of the spec's template (the one rolling out).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub update_revision: String,
    /// When the rollout of the update revision was aborted (absent while it is not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted_time: Option<super::meta::Time>,
}

impl ManifestWorkReplicaSetStatus {
    /// Whether nothing was computed yet.
    pub fn is_empty(&self) -> bool {
        self == &ManifestWorkReplicaSetStatus::default()
    }
}

/// Counts of generated ManifestWorks by state; every field always written.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkReplicaSetSummary {
    /// Works managed.
    #[serde(default)]
    pub total: i64,
    /// Works Progressing.
    #[serde(default)]
    pub progressing: i64,
    /// Works Available.
    #[serde(default)]
    pub available: i64,
    /// Works Degraded.
    #[serde(default)]
    pub degraded: i64,
    /// Works Applied.
    #[serde(default)]
    pub applied: i64,
    /// Works that will exist when the rollout is done.
    #[serde(default)]
    pub desired_total: i64,
    /// Clusters running the current revision.
    #[serde(default)]
    pub updated: i64,
}

/// Progress of one placement.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementSummary {
    /// Placement name.
    #[serde(default)]
    pub name: String,
    /// e.g. `2/4`: groups whose works are all Available, out of all groups.
    #[serde(default)]
    pub available_decision_groups: String,
    /// Counts for this placement.
    #[serde(default)]
    pub summary: ManifestWorkReplicaSetSummary,
}

/// Parses a Go duration such as `90s`, `5m`, `1h30m`, `250ms` (units h, m, s, ms, us, µs, ns;
/// decimal fractions allowed). `None` when malformed or negative.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return None;
        }
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * seconds_per_unit;
    }
    Duration::try_from_secs_f64(total).ok()
}

//! Scheduling types: [`Placement`] and [`PlacementDecision`] (cluster.open-cluster-management.io/v1beta1)
//! and [`AddOnPlacementScore`] (v1alpha1), with OCM's labels, conditions and prioritizer names.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::cluster::TaintEffect;
use super::meta::{
    Condition, IntOrString, LabelSelector, LabelSelectorRequirement, ObjectMeta, Time, is_zero_i32,
    resource,
};

/// Label on a PlacementDecision naming its Placement.
pub const LABEL_PLACEMENT: &str = "cluster.open-cluster-management.io/placement";
/// Label on a PlacementDecision with its decision group index.
pub const LABEL_DECISION_GROUP_INDEX: &str =
    "cluster.open-cluster-management.io/decision-group-index";
/// Label on a PlacementDecision with its decision group name.
pub const LABEL_DECISION_GROUP_NAME: &str =
    "cluster.open-cluster-management.io/decision-group-name";
/// At most this many clusters per PlacementDecision object.
pub const MAX_DECISIONS_PER_PLACEMENT_DECISION: usize = 100;
/// Placement condition: enough clusters were selected.
pub const PLACEMENT_SATISFIED: &str = "PlacementSatisfied";
/// Placement condition: the placement cannot be evaluated (e.g. a missing set binding).
pub const PLACEMENT_MISCONFIGURED: &str = "PlacementMisconfigured";

/// Built-in prioritizer: spread decisions evenly over clusters.
pub const PRIORITIZER_BALANCE: &str = "Balance";
/// Built-in prioritizer: keep existing decisions.
pub const PRIORITIZER_STEADY: &str = "Steady";
/// Built-in prioritizer: most allocatable CPU.
pub const PRIORITIZER_RESOURCE_ALLOCATABLE_CPU: &str = "ResourceAllocatableCPU";
/// Built-in prioritizer: most allocatable memory.
pub const PRIORITIZER_RESOURCE_ALLOCATABLE_MEMORY: &str = "ResourceAllocatableMemory";
/// Built-in prioritizer: spread over topology (with spreadPolicy).
pub const PRIORITIZER_SPREAD: &str = "Spread";

/// Selects clusters from bound ManagedClusterSets (namespaced).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// `cluster.open-cluster-management.io/v1beta1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Placement`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What to select.
    #[serde(default)]
    pub spec: PlacementSpec,
    /// What was selected.
    #[serde(default, skip_serializing_if = "PlacementStatus::is_empty")]
    pub status: PlacementStatus,
}
resource!(
    Placement,
    "cluster.open-cluster-management.io/v1beta1",
    "Placement",
    [metadata, spec, status]
);

/// Spec of a [`Placement`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementSpec {
    /// Sets to select from; all bound sets when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_sets: Vec<String>,
    /// How many clusters; all that match when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_of_clusters: Option<i32>,
    /// Filters (ORed; each ANDs its selectors).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predicates: Vec<ClusterPredicate>,
    /// How clusters are scored.
    #[serde(default, skip_serializing_if = "PrioritizerPolicy::is_empty")]
    pub prioritizer_policy: PrioritizerPolicy,
    /// How decisions spread over a topology.
    #[serde(default, skip_serializing_if = "SpreadPolicy::is_empty")]
    pub spread_policy: SpreadPolicy,
    /// Taints this placement tolerates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// How decisions are grouped.
    #[serde(default, skip_serializing_if = "DecisionStrategy::is_empty")]
    pub decision_strategy: DecisionStrategy,
    /// The order of the clusters in each PlacementDecision: by name (the default) or by score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<PlacementSortBy>,
    /// How often a score change that does not change which clusters are selected is written
    /// into the decisions: `^[0-9]+[hms]$`, default `1m` ([`PlacementSpec::score_rate_limit`]).
    #[serde(
        default,
        rename = "scoreRateLimit",
        skip_serializing_if = "Option::is_none"
    )]
    pub score_rate_limit_text: Option<String>,
}

/// [`PlacementSpec::sort_by`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub enum PlacementSortBy {
    /// Alphanumerically by cluster name.
    #[default]
    ClusterName,
    /// By score, highest first, then by cluster name.
    Score,
}

/// OCM's default `scoreRateLimit`.
pub const DEFAULT_SCORE_RATE_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

impl PlacementSpec {
    /// `scoreRateLimit` as a duration ([`DEFAULT_SCORE_RATE_LIMIT`] when absent).
    ///
    /// # Errors
    /// The value does not match OCM's pattern `^[0-9]+[hms]$`; the message says how to write it.
    pub fn score_rate_limit(&self) -> Result<std::time::Duration, String> {
        let Some(text) = self.score_rate_limit_text.as_deref() else {
            return Ok(DEFAULT_SCORE_RATE_LIMIT);
        };
        let bad = || {
            format!(
                "spec.scoreRateLimit {text:?} is not a number followed by h, m or s (e.g. 30s, 5m, 1h)"
            )
        };
        let unit = text.chars().last().ok_or_else(bad)?;
        let digits = &text[..text.len() - unit.len_utf8()];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let n: u64 = digits.parse().map_err(|_| bad())?;
        let seconds = match unit {
            'h' => n.checked_mul(3600),
            'm' => n.checked_mul(60),
            's' => Some(n),
            _ => None,
        }
        .ok_or_else(bad)?;
        Ok(std::time::Duration::from_secs(seconds))
    }
}

/// One filter of a placement.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPredicate {
    /// Selectors a cluster must all satisfy.
    #[serde(default)]
    pub required_cluster_selector: ClusterSelector,
}

/// Label, claim and CEL selectors, ANDed (also used as a decision group's selector).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSelector {
    /// Over cluster labels.
    #[serde(default, skip_serializing_if = "LabelSelector::is_empty")]
    pub label_selector: LabelSelector,
    /// Over cluster claims.
    #[serde(default, skip_serializing_if = "ClusterClaimSelector::is_empty")]
    pub claim_selector: ClusterClaimSelector,
    /// CEL expressions over the ManagedCluster.
    #[serde(default, skip_serializing_if = "ClusterCelSelector::is_empty")]
    pub cel_selector: ClusterCelSelector,
}

/// Requirements over cluster claims (ANDed).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterClaimSelector {
    /// Requirements, with claim names as keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

impl ClusterClaimSelector {
    /// Whether there are no requirements.
    pub fn is_empty(&self) -> bool {
        self.match_expressions.is_empty()
    }
}

/// CEL expressions over a ManagedCluster (ANDed).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCelSelector {
    /// Expressions using `managedCluster`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cel_expressions: Vec<String>,
}

impl ClusterCelSelector {
    /// Whether there are no expressions.
    pub fn is_empty(&self) -> bool {
        self.cel_expressions.is_empty()
    }
}

/// How prioritizer configurations combine with the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum PrioritizerPolicyMode {
    /// The configurations adjust the default prioritizers.
    #[default]
    Additive,
    /// Only the configured prioritizers are used.
    Exact,
}

/// How clusters are scored.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizerPolicy {
    /// Additive (default) or Exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<PrioritizerPolicyMode>,
    /// Prioritizers and their weights.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configurations: Vec<PrioritizerConfig>,
}

impl PrioritizerPolicy {
    /// Whether nothing is configured.
    pub fn is_empty(&self) -> bool {
        self.mode.is_none() && self.configurations.is_empty()
    }
}

/// A prioritizer and its weight.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizerConfig {
    /// Which score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_coordinate: Option<ScoreCoordinate>,
    /// Weight in [-10, 10]; 0 (omitted) means the default of 1.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub weight: i32,
}

/// Where a score comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum ScoreCoordinateType {
    /// A built-in prioritizer (`builtIn`).
    #[default]
    BuiltIn,
    /// An AddOnPlacementScore (`addOn`).
    AddOn,
}

/// Identifies a score.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScoreCoordinate {
    /// BuiltIn or AddOn.
    #[serde(rename = "type", default)]
    pub type_: ScoreCoordinateType,
    /// Built-in prioritizer name, e.g. [`PRIORITIZER_BALANCE`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub built_in: String,
    /// Add-on score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on: Option<AddOnScore>,
}

/// A score in an AddOnPlacementScore.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnScore {
    /// Name of the AddOnPlacementScore in each cluster namespace.
    #[serde(default)]
    pub resource_name: String,
    /// Name of the score inside it.
    #[serde(default)]
    pub score_name: String,
}

/// Spread constraints.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpreadPolicy {
    /// The constraints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spread_constraints: Vec<SpreadConstraintsTerm>,
}

impl SpreadPolicy {
    /// Whether there are no constraints.
    pub fn is_empty(&self) -> bool {
        self.spread_constraints.is_empty()
    }
}

/// Whether a topology key is a label or a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum TopologyKeyType {
    /// A cluster label.
    #[default]
    Label,
    /// A cluster claim.
    Claim,
}

/// What to do when a spread constraint cannot be met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum UnsatisfiableMaxSkewAction {
    /// Select anyway, preferring less skew.
    #[default]
    ScheduleAnyway,
    /// Do not select.
    DoNotSchedule,
}

/// One spread constraint.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpreadConstraintsTerm {
    /// Label or claim name.
    #[serde(default)]
    pub topology_key: String,
    /// Label or Claim.
    #[serde(default)]
    pub topology_key_type: TopologyKeyType,
    /// Allowed skew (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_skew: Option<i32>,
    /// ScheduleAnyway (default) or DoNotSchedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_unsatisfiable: Option<UnsatisfiableMaxSkewAction>,
}

/// Toleration operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum TolerationOperator {
    /// Key and value must match.
    #[default]
    Equal,
    /// Key must match; any value.
    Exists,
}

/// Lets a placement select clusters with matching taints.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    /// Taint key; empty with Exists matches every key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// Equal (default) or Exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<TolerationOperator>,
    /// Taint value for Equal.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// Taint effect; empty matches every effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<TaintEffect>,
    /// How long after the taint's timeAdded it is tolerated; forever when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// How decisions are grouped (for rollouts).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionStrategy {
    /// Group definitions.
    #[serde(default, skip_serializing_if = "GroupStrategy::is_empty")]
    pub group_strategy: GroupStrategy,
}

impl DecisionStrategy {
    /// Whether no grouping is configured.
    pub fn is_empty(&self) -> bool {
        self.group_strategy.is_empty()
    }
}

/// Decision groups.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupStrategy {
    /// Named groups, each with a selector.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decision_groups: Vec<DecisionGroup>,
    /// Group size for the rest: a count or a percentage (default "100%").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters_per_decision_group: Option<IntOrString>,
}

impl GroupStrategy {
    /// Whether nothing is configured.
    pub fn is_empty(&self) -> bool {
        self.decision_groups.is_empty() && self.clusters_per_decision_group.is_none()
    }
}

/// A named group of decisions.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionGroup {
    /// Group name (label on its PlacementDecisions).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group_name: String,
    /// Which selected clusters belong to the group.
    #[serde(default)]
    pub group_cluster_selector: ClusterSelector,
}

/// Status of a [`Placement`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementStatus {
    /// How many clusters were selected; always written.
    #[serde(default)]
    pub number_of_selected_clusters: i32,
    /// Groups of decisions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decision_groups: Vec<DecisionGroupStatus>,
    /// PlacementSatisfied, PlacementMisconfigured; always written.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// When the scores in the decisions last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_score_update_time: Option<Time>,
}

impl PlacementStatus {
    /// Whether nothing was computed yet.
    pub fn is_empty(&self) -> bool {
        self == &PlacementStatus::default()
    }
}

/// Status of one decision group; every field always written.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionGroupStatus {
    /// Index, from 0.
    #[serde(default)]
    pub decision_group_index: i32,
    /// Name from the strategy (empty for generated groups).
    #[serde(default)]
    pub decision_group_name: String,
    /// Names of the PlacementDecisions of this group.
    #[serde(default)]
    pub decisions: Vec<String>,
    /// Clusters in the group (JSON name `clusterCount`, as in Go).
    #[serde(default, rename = "clusterCount")]
    pub clusters_count: i32,
}

/// Selected clusters of a Placement (at most 100 per object; namespaced).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementDecision {
    /// `cluster.open-cluster-management.io/v1beta1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `PlacementDecision`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata, labelled with [`LABEL_PLACEMENT`] and the group labels.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The decisions.
    #[serde(default)]
    pub status: PlacementDecisionStatus,
}
resource!(
    PlacementDecision,
    "cluster.open-cluster-management.io/v1beta1",
    "PlacementDecision",
    [metadata, status]
);

/// Decisions of a [`PlacementDecision`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementDecisionStatus {
    /// Selected clusters; always written.
    #[serde(default)]
    pub decisions: Vec<ClusterDecision>,
}

/// One selected cluster.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDecision {
    /// The cluster.
    #[serde(default)]
    pub cluster_name: String,
    /// Why (may be empty); always written.
    #[serde(default)]
    pub reason: String,
    /// The cluster's total score from the placement's prioritizers (left out when 0, as OCM's
    /// `omitzero`).
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub score: i64,
}

fn is_zero_i64(n: &i64) -> bool {
    *n == 0
}

/// Scores an add-on publishes for its cluster (v1alpha1, in the cluster namespace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnPlacementScore {
    /// `cluster.open-cluster-management.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `AddOnPlacementScore`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The scores.
    #[serde(default)]
    pub status: AddOnPlacementScoreStatus,
}
resource!(
    AddOnPlacementScore,
    "cluster.open-cluster-management.io/v1alpha1",
    "AddOnPlacementScore",
    [metadata, status]
);

/// Scores of an [`AddOnPlacementScore`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnPlacementScoreStatus {
    /// Conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Scores in [-100, 100].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<AddOnPlacementScoreItem>,
    /// After this time the scores are stale and count as 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<Time>,
}

/// One named score.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddOnPlacementScoreItem {
    /// Score name.
    #[serde(default)]
    pub name: String,
    /// Score in [-100, 100].
    #[serde(default)]
    pub value: i32,
}

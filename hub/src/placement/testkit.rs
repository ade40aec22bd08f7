//! Builders for placement objects, for tests and demos:
//! `mk_cluster("c1").label("env", "prod").taint(TAINT_UNREACHABLE, NoSelect, Some(t(0)))`.

use chrono::{DateTime, TimeDelta, Utc};
use ocm_edge_schemas::api::cluster::{
    LABEL_CLUSTER_SET, ManagedCluster, ManagedClusterClaim, ManagedClusterSelector,
    ManagedClusterSet, ManagedClusterSetBinding, SelectorType, Taint, TaintEffect,
};
use ocm_edge_schemas::api::meta::{
    IntOrString, LabelSelector, LabelSelectorOperator, LabelSelectorRequirement, ObjectMeta,
    Quantity, Time,
};
use ocm_edge_schemas::api::placement::{
    AddOnPlacementScore, AddOnPlacementScoreItem, AddOnScore, ClusterDecision, ClusterPredicate,
    ClusterSelector, DecisionGroup, LABEL_PLACEMENT, Placement, PlacementDecision, PlacementSortBy,
    PrioritizerConfig, PrioritizerPolicyMode, ScoreCoordinate, ScoreCoordinateType,
    SpreadConstraintsTerm, Toleration, TolerationOperator, TopologyKeyType,
    UnsatisfiableMaxSkewAction,
};

use super::{ScheduleOutcome, SchedulingInput, schedule};

/// `secs` seconds after a fixed instant (2027-01-15T08:00:00Z).
pub fn t(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default() + TimeDelta::seconds(secs)
}

/// A cluster builder.
#[derive(Debug, Clone)]
pub struct ClusterBuilder(ManagedCluster);

/// A cluster named `name`, accepted, in no set.
pub fn mk_cluster(name: &str) -> ClusterBuilder {
    let mut c = ManagedCluster::new(name);
    c.spec.hub_accepts_client = true;
    ClusterBuilder(c)
}

impl ClusterBuilder {
    /// Adds a label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0.metadata.labels.insert(key.into(), value.into());
        self
    }

    /// Puts the cluster in an ExclusiveClusterSetLabel set.
    pub fn set(self, set: &str) -> Self {
        self.label(LABEL_CLUSTER_SET, set)
    }

    /// Adds a claim to `status.clusterClaims`.
    pub fn claim(mut self, name: &str, value: &str) -> Self {
        self.0.status.cluster_claims.push(ManagedClusterClaim {
            name: name.into(),
            value: value.into(),
        });
        self
    }

    /// Adds a taint without value.
    pub fn taint(self, key: &str, effect: TaintEffect, added: Option<DateTime<Utc>>) -> Self {
        self.taint_value(key, "", effect, added)
    }

    /// Adds a taint with a value.
    pub fn taint_value(
        mut self,
        key: &str,
        value: &str,
        effect: TaintEffect,
        added: Option<DateTime<Utc>>,
    ) -> Self {
        self.0.spec.taints.push(Taint {
            key: key.into(),
            value: value.into(),
            effect,
            time_added: added.map(Time::new),
        });
        self
    }

    /// Sets allocatable and capacity of `resource` (e.g. `"cpu"`, `"4"`).
    pub fn allocatable(mut self, resource: &str, quantity: &str) -> Self {
        let q = Quantity(quantity.into());
        self.0.status.allocatable.insert(resource.into(), q.clone());
        self.0.status.capacity.insert(resource.into(), q);
        self
    }

    /// Marks the cluster as being deleted.
    pub fn deleting(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time::new(t(0)));
        self
    }

    /// The cluster.
    pub fn build(self) -> ManagedCluster {
        self.0
    }
}

impl From<ClusterBuilder> for ManagedCluster {
    fn from(b: ClusterBuilder) -> Self {
        b.0
    }
}

/// An ExclusiveClusterSetLabel set.
pub fn mk_set(name: &str) -> ManagedClusterSet {
    ManagedClusterSet {
        metadata: ObjectMeta::named(name),
        ..Default::default()
    }
}

/// A LabelSelector set selecting `match_labels`.
pub fn mk_label_set(name: &str, match_labels: &[(&str, &str)]) -> ManagedClusterSet {
    let mut set = mk_set(name);
    set.spec.cluster_selector = ManagedClusterSelector {
        selector_type: Some(SelectorType::LabelSelector),
        label_selector: Some(labels(match_labels)),
    };
    set
}

/// A label selector with `matchLabels`.
pub fn labels(match_labels: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: match_labels
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect(),
        match_expressions: Vec::new(),
    }
}

/// A requirement `key op values`.
pub fn requirement(
    key: &str,
    operator: LabelSelectorOperator,
    values: &[&str],
) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.into(),
        operator,
        values: values.iter().map(|v| (*v).to_string()).collect(),
    }
}

/// A binding of `set` in `namespace`.
pub fn mk_binding(namespace: &str, set: &str) -> ManagedClusterSetBinding {
    let mut b = ManagedClusterSetBinding {
        metadata: ObjectMeta::namespaced(namespace, set),
        ..Default::default()
    };
    b.spec.cluster_set = set.into();
    b
}

/// `Exists` toleration of `key` (empty: every key).
pub fn exists(key: &str) -> Toleration {
    Toleration {
        key: key.into(),
        operator: Some(TolerationOperator::Exists),
        ..Default::default()
    }
}

/// `Equal` toleration of `key=value`.
pub fn equal(key: &str, value: &str) -> Toleration {
    Toleration {
        key: key.into(),
        operator: Some(TolerationOperator::Equal),
        value: value.into(),
        ..Default::default()
    }
}

/// Refines a toleration.
pub trait TolerationExt {
    /// Only for this effect.
    fn effect(self, effect: TaintEffect) -> Self;
    /// For `seconds` after the taint's timeAdded.
    fn seconds(self, seconds: i64) -> Self;
}

impl TolerationExt for Toleration {
    fn effect(mut self, effect: TaintEffect) -> Self {
        self.effect = Some(effect);
        self
    }
    fn seconds(mut self, seconds: i64) -> Self {
        self.toleration_seconds = Some(seconds);
        self
    }
}

/// A placement builder.
#[derive(Debug, Clone)]
pub struct PlacementBuilder(Placement);

/// A placement `namespace/name` with an empty spec.
pub fn mk_placement(namespace: &str, name: &str) -> PlacementBuilder {
    let mut p = Placement {
        metadata: ObjectMeta::namespaced(namespace, name),
        ..Default::default()
    };
    p.metadata.uid = format!("uid-{name}");
    PlacementBuilder(p)
}

impl PlacementBuilder {
    /// numberOfClusters.
    pub fn number(mut self, n: i32) -> Self {
        self.0.spec.number_of_clusters = Some(n);
        self
    }

    /// spec.clusterSets.
    pub fn cluster_sets(mut self, sets: &[&str]) -> Self {
        self.0.spec.cluster_sets = sets.iter().map(|s| (*s).to_string()).collect();
        self
    }

    /// A predicate with a label selector.
    pub fn predicate_labels(self, match_labels: &[(&str, &str)]) -> Self {
        self.predicate(ClusterSelector {
            label_selector: labels(match_labels),
            ..Default::default()
        })
    }

    /// A predicate.
    pub fn predicate(mut self, selector: ClusterSelector) -> Self {
        self.0.spec.predicates.push(ClusterPredicate {
            required_cluster_selector: selector,
        });
        self
    }

    /// A toleration.
    pub fn toleration(mut self, toleration: Toleration) -> Self {
        self.0.spec.tolerations.push(toleration);
        self
    }

    /// Exact mode.
    pub fn exact(mut self) -> Self {
        self.0.spec.prioritizer_policy.mode = Some(PrioritizerPolicyMode::Exact);
        self
    }

    /// A built-in prioritizer configuration.
    pub fn prioritizer(mut self, built_in: &str, weight: i32) -> Self {
        self.0
            .spec
            .prioritizer_policy
            .configurations
            .push(PrioritizerConfig {
                score_coordinate: Some(ScoreCoordinate {
                    type_: ScoreCoordinateType::BuiltIn,
                    built_in: built_in.into(),
                    add_on: None,
                }),
                weight,
            });
        self
    }

    /// An add-on score configuration.
    pub fn addon(mut self, resource_name: &str, score_name: &str, weight: i32) -> Self {
        self.0
            .spec
            .prioritizer_policy
            .configurations
            .push(PrioritizerConfig {
                score_coordinate: Some(ScoreCoordinate {
                    type_: ScoreCoordinateType::AddOn,
                    built_in: String::new(),
                    add_on: Some(AddOnScore {
                        resource_name: resource_name.into(),
                        score_name: score_name.into(),
                    }),
                }),
                weight,
            });
        self
    }

    /// `sortBy: Score`.
    pub fn sort_by_score(mut self) -> Self {
        self.0.spec.sort_by = Some(PlacementSortBy::Score);
        self
    }

    /// `scoreRateLimit`.
    pub fn score_rate_limit(mut self, limit: &str) -> Self {
        self.0.spec.score_rate_limit_text = Some(limit.into());
        self
    }

    /// A spread constraint.
    pub fn spread(
        mut self,
        key: &str,
        key_type: TopologyKeyType,
        max_skew: Option<i32>,
        when: Option<UnsatisfiableMaxSkewAction>,
    ) -> Self {
        self.0
            .spec
            .spread_policy
            .spread_constraints
            .push(SpreadConstraintsTerm {
                topology_key: key.into(),
                topology_key_type: key_type,
                max_skew,
                when_unsatisfiable: when,
            });
        self
    }

    /// A named decision group selecting `match_labels`.
    pub fn group(mut self, name: &str, match_labels: &[(&str, &str)]) -> Self {
        self.0
            .spec
            .decision_strategy
            .group_strategy
            .decision_groups
            .push(DecisionGroup {
                group_name: name.into(),
                group_cluster_selector: ClusterSelector {
                    label_selector: labels(match_labels),
                    ..Default::default()
                },
            });
        self
    }

    /// clustersPerDecisionGroup.
    pub fn per_group(mut self, value: IntOrString) -> Self {
        self.0
            .spec
            .decision_strategy
            .group_strategy
            .clusters_per_decision_group = Some(value);
        self
    }

    /// The placement.
    pub fn build(self) -> Placement {
        self.0
    }
}

impl From<PlacementBuilder> for Placement {
    fn from(b: PlacementBuilder) -> Self {
        b.0
    }
}

/// A PlacementDecision `<placement>-decision-<index>` of `placement` in `namespace`.
pub fn mk_decision(
    namespace: &str,
    placement: &str,
    index: usize,
    clusters: &[&str],
) -> PlacementDecision {
    let mut pd = PlacementDecision {
        metadata: ObjectMeta::namespaced(namespace, format!("{placement}-decision-{index}")),
        ..Default::default()
    };
    pd.metadata
        .labels
        .insert(LABEL_PLACEMENT.into(), placement.into());
    pd.status.decisions = clusters
        .iter()
        .map(|c| ClusterDecision {
            cluster_name: (*c).to_string(),
            ..Default::default()
        })
        .collect();
    pd
}

/// An AddOnPlacementScore `resource` in `cluster`'s namespace.
pub fn mk_score(
    cluster: &str,
    resource: &str,
    scores: &[(&str, i32)],
    valid_until: Option<DateTime<Utc>>,
) -> AddOnPlacementScore {
    let mut s = AddOnPlacementScore {
        metadata: ObjectMeta::namespaced(cluster, resource),
        ..Default::default()
    };
    s.status.scores = scores
        .iter()
        .map(|(name, value)| AddOnPlacementScoreItem {
            name: (*name).into(),
            value: *value,
        })
        .collect();
    s.status.valid_until = valid_until.map(Time::new);
    s
}

/// Everything the scheduler reads, owned, for tests.
#[derive(Debug, Clone, Default)]
pub struct World {
    /// Clusters.
    pub clusters: Vec<ManagedCluster>,
    /// Sets.
    pub sets: Vec<ManagedClusterSet>,
    /// Bindings.
    pub bindings: Vec<ManagedClusterSetBinding>,
    /// PlacementDecisions.
    pub decisions: Vec<PlacementDecision>,
    /// AddOnPlacementScores.
    pub scores: Vec<AddOnPlacementScore>,
}

impl World {
    /// `clusters` in set `set`, bound in `namespace` (the set label is added).
    pub fn bound(namespace: &str, set: &str, clusters: Vec<ClusterBuilder>) -> Self {
        World {
            clusters: clusters.into_iter().map(|c| c.set(set).build()).collect(),
            sets: vec![mk_set(set)],
            bindings: vec![mk_binding(namespace, set)],
            ..Default::default()
        }
    }

    /// The scheduler's input for `placement`.
    pub fn input<'a>(&'a self, placement: &'a Placement) -> SchedulingInput<'a> {
        SchedulingInput {
            placement,
            clusters: &self.clusters,
            cluster_sets: &self.sets,
            bindings: &self.bindings,
            decisions: &self.decisions,
            scores: &self.scores,
        }
    }

    /// Schedules `placement` at `now`.
    pub fn schedule(&self, placement: &Placement, now: DateTime<Utc>) -> ScheduleOutcome {
        schedule(&self.input(placement), now)
    }

    /// Schedules and then stores the outcome's decisions as the placement's current ones
    /// (what the shell does), returning the outcome.
    pub fn schedule_and_bind(
        &mut self,
        placement: &Placement,
        now: DateTime<Utc>,
    ) -> ScheduleOutcome {
        let outcome = self.schedule(placement, now);
        self.decisions
            .retain(|pd| !super::decision::belongs_to(pd, placement));
        self.decisions.extend(outcome.decisions.iter().cloned());
        outcome
    }
}

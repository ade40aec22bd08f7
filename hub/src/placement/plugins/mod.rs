//! The scheduler's plugins, one file each as in OCM's `pkg/placement/plugins`:
//! filters ([`predicate`], [`tainttoleration`]) and prioritizers ([`balance`], [`steady`],
//! [`resource`], [`addon`], [`spread`]).
//!
//! Filters decide per cluster; prioritizers give every feasible cluster an integer score in
//! [-100, 100] that the scheduler multiplies by the prioritizer's weight and sums. Which
//! prioritizers run, and with what weight, comes from [`prioritizers`] (OCM's `getWeights`
//! and `getPrioritizers` in `schedule.go`).

pub mod addon;
pub mod balance;
pub mod predicate;
pub mod resource;
pub mod spread;
pub mod steady;
pub mod tainttoleration;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::placement::{
    AddOnPlacementScore, PRIORITIZER_BALANCE, PRIORITIZER_RESOURCE_ALLOCATABLE_CPU,
    PRIORITIZER_RESOURCE_ALLOCATABLE_MEMORY, PRIORITIZER_SPREAD, PRIORITIZER_STEADY, Placement,
    PrioritizerPolicyMode, ScoreCoordinateType,
};
use serde::{Deserialize, Serialize};

use super::Misconfiguration;

/// OCM's `plugins.MaxClusterScore`.
pub const MAX_CLUSTER_SCORE: i64 = 100;
/// OCM's `plugins.MinClusterScore`.
pub const MIN_CLUSTER_SCORE: i64 = -100;

/// What the plugins read besides the placement and the clusters (OCM's `plugins.Handle`
/// listers, materialised once per scheduling pass).
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// The placement being scheduled.
    pub placement: &'a Placement,
    /// The instant of this pass.
    pub now: DateTime<Utc>,
    /// Clusters in this placement's current PlacementDecisions (Steady, NoSelectIfNew).
    pub current: BTreeSet<&'a str>,
    /// How many decisions of *other* placements name each cluster (Balance).
    pub other_counts: BTreeMap<&'a str, i64>,
    /// Every AddOnPlacementScore the hub knows (namespace = cluster name).
    pub scores: &'a [AddOnPlacementScore],
}

/// The scores of one prioritizer, aligned with the cluster slice it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginScores {
    /// Score per cluster; a cluster the prioritizer cannot score has 0 (as OCM's zeroed sum).
    pub scores: Vec<i64>,
    /// Why a cluster got an unusual score (e.g. an expired AddOnPlacementScore).
    pub notes: Vec<Option<String>>,
    /// When this prioritizer's inputs go stale and the placement must be re-evaluated.
    pub requeue_at: Option<DateTime<Utc>>,
}

impl PluginScores {
    /// `n` zero scores without notes.
    pub fn zeroed(n: usize) -> Self {
        PluginScores {
            scores: vec![0; n],
            notes: vec![None; n],
            requeue_at: None,
        }
    }
}

/// A prioritizer the scheduler can run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Prioritizer {
    /// Fewer decisions of other placements, higher score.
    Balance,
    /// Already selected by this placement, higher score.
    Steady,
    /// More allocatable CPU, higher score.
    ResourceAllocatableCpu,
    /// More allocatable memory, higher score.
    ResourceAllocatableMemory,
    /// Even spread over topology values (ocm-edge; see [`spread`]).
    Spread,
    /// A score from each cluster's AddOnPlacementScore.
    AddOn {
        /// AddOnPlacementScore name.
        resource_name: String,
        /// Score name inside it.
        score_name: String,
    },
}

impl fmt::Display for Prioritizer {
    /// OCM's plugin names (`AddOn/<resource>/<score>` for add-on scores).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Prioritizer::Balance => f.write_str(PRIORITIZER_BALANCE),
            Prioritizer::Steady => f.write_str(PRIORITIZER_STEADY),
            Prioritizer::ResourceAllocatableCpu => {
                f.write_str(PRIORITIZER_RESOURCE_ALLOCATABLE_CPU)
            }
            Prioritizer::ResourceAllocatableMemory => {
                f.write_str(PRIORITIZER_RESOURCE_ALLOCATABLE_MEMORY)
            }
            Prioritizer::Spread => f.write_str(PRIORITIZER_SPREAD),
            Prioritizer::AddOn {
                resource_name,
                score_name,
            } => write!(f, "AddOn/{resource_name}/{score_name}"),
        }
    }
}

/// A prioritizer with its weight (never 0: disabled prioritizers are left out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightedPrioritizer {
    /// Which prioritizer.
    pub prioritizer: Prioritizer,
    /// Its weight, in [-10, 10].
    pub weight: i32,
}

/// The prioritizers of `placement` with their weights, in a stable order (the defaults first,
/// then the configurations as written).
///
/// As OCM's `getWeights`/`mergeWeights`: Additive mode starts from Balance 1 and Steady 1 and
/// lets each configuration override or add a weight; Exact mode uses only the configurations.
/// ocm-edge adds one default: in Additive mode a placement with spread constraints also gets
/// Spread 1, since someone who writes a spreadPolicy expects spreading.
/// A configured weight of 0 means the default of 1 (the schema cannot tell an omitted weight
/// from an explicit 0, and neither can OCM's `omitempty` CRD round trip).
///
/// # Errors
/// OCM's Misconfigured cases: an unknown built-in name ("incorrect builtin prioritizer: X"),
/// a configuration without scoreCoordinate, an AddOn coordinate without addOn, and (ocm-edge,
/// since the CRD makes them required) an addOn without resourceName or scoreName.
pub fn prioritizers(placement: &Placement) -> Result<Vec<WeightedPrioritizer>, Misconfiguration> {
    let policy = &placement.spec.prioritizer_policy;
    let mut weights: Vec<WeightedPrioritizer> = Vec::new();
    let mut set = |p: Prioritizer, weight: i32| {
        if let Some(existing) = weights.iter_mut().find(|w| w.prioritizer == p) {
            existing.weight = weight;
        } else {
            weights.push(WeightedPrioritizer {
                prioritizer: p,
                weight,
            });
        }
    };
    if policy.mode.unwrap_or_default() == PrioritizerPolicyMode::Additive {
        set(Prioritizer::Balance, 1);
        set(Prioritizer::Steady, 1);
        if !placement.spec.spread_policy.spread_constraints.is_empty() {
            set(Prioritizer::Spread, 1);
        }
    }
    for config in &policy.configurations {
        let Some(coordinate) = &config.score_coordinate else {
            return Err(Misconfiguration::new(
                "",
                "scoreCoordinate field is required",
            ));
        };
        let weight = if config.weight == 0 { 1 } else { config.weight };
        let prioritizer = match coordinate.type_ {
            // OCM keys its weight map by the whole coordinate; a BuiltIn coordinate that also
            // carries an addOn would count Balance twice there. The addOn is ignored here.
            ScoreCoordinateType::BuiltIn => match coordinate.built_in.as_str() {
                PRIORITIZER_BALANCE => Prioritizer::Balance,
                PRIORITIZER_STEADY => Prioritizer::Steady,
                PRIORITIZER_RESOURCE_ALLOCATABLE_CPU => Prioritizer::ResourceAllocatableCpu,
                PRIORITIZER_RESOURCE_ALLOCATABLE_MEMORY => Prioritizer::ResourceAllocatableMemory,
                PRIORITIZER_SPREAD => Prioritizer::Spread,
                other => {
                    return Err(Misconfiguration::new(
                        "",
                        format!("incorrect builtin prioritizer: {other}"),
                    ));
                }
            },
            ScoreCoordinateType::AddOn => {
                let Some(add_on) = &coordinate.add_on else {
                    return Err(Misconfiguration::new("", "addOn should not be empty"));
                };
                if add_on.resource_name.is_empty() {
                    return Err(Misconfiguration::new(
                        "",
                        "addOn resourceName should not be empty",
                    ));
                }
                if add_on.score_name.is_empty() {
                    return Err(Misconfiguration::new(
                        "",
                        "addOn scoreName should not be empty",
                    ));
                }
                Prioritizer::AddOn {
                    resource_name: add_on.resource_name.clone(),
                    score_name: add_on.score_name.clone(),
                }
            }
        };
        set(prioritizer, weight);
    }
    weights.retain(|w| w.weight != 0);
    Ok(weights)
}

/// Runs a static prioritizer (every one but Spread, which scores while selecting).
pub fn score(p: &Prioritizer, ctx: &Context<'_>, clusters: &[&ManagedCluster]) -> PluginScores {
    match p {
        Prioritizer::Balance => balance::score(ctx, clusters),
        Prioritizer::Steady => steady::score(ctx, clusters),
        Prioritizer::ResourceAllocatableCpu => resource::score(resource::Resource::Cpu, clusters),
        Prioritizer::ResourceAllocatableMemory => {
            resource::score(resource::Resource::Memory, clusters)
        }
        Prioritizer::AddOn {
            resource_name,
            score_name,
        } => addon::score(ctx, clusters, resource_name, score_name),
        Prioritizer::Spread => PluginScores::zeroed(clusters.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::testkit::{PlacementBuilder, mk_placement};
    use ocm_edge_schemas::api::placement::TopologyKeyType;

    type Weights = Result<Vec<(String, i32)>, String>;

    fn weights(p: PlacementBuilder) -> Weights {
        prioritizers(&p.build())
            .map(|ws| {
                ws.into_iter()
                    .map(|w| (w.prioritizer.to_string(), w.weight))
                    .collect()
            })
            .map_err(|m| m.to_string())
    }

    fn ok(list: &[(&str, i32)]) -> Weights {
        Ok(list.iter().map(|(n, w)| ((*n).to_string(), *w)).collect())
    }

    /// OCM `schedule.go` `getWeights`/`mergeWeights`/`getPrioritizers`.
    #[test]
    fn prioritizer_weights_follow_ocms_modes() {
        let p = || mk_placement("ns", "p");
        let cases: Vec<(&str, PlacementBuilder, Weights)> = vec![
            (
                "additive defaults",
                p(),
                ok(&[("Balance", 1), ("Steady", 1)]),
            ),
            (
                "additive override",
                p().prioritizer("Steady", 3),
                ok(&[("Balance", 1), ("Steady", 3)]),
            ),
            (
                "additive adds",
                p().prioritizer("ResourceAllocatableCPU", 2)
                    .addon("cpuratio", "cpu", -1),
                ok(&[
                    ("Balance", 1),
                    ("Steady", 1),
                    ("ResourceAllocatableCPU", 2),
                    ("AddOn/cpuratio/cpu", -1),
                ]),
            ),
            (
                "weight 0 means 1",
                p().prioritizer("ResourceAllocatableMemory", 0),
                ok(&[
                    ("Balance", 1),
                    ("Steady", 1),
                    ("ResourceAllocatableMemory", 1),
                ]),
            ),
            (
                "exact",
                p().exact().prioritizer("ResourceAllocatableMemory", 2),
                ok(&[("ResourceAllocatableMemory", 2)]),
            ),
            ("exact empty", p().exact(), ok(&[])),
            (
                "spread policy adds Spread",
                p().spread("zone", TopologyKeyType::Label, None, None),
                ok(&[("Balance", 1), ("Steady", 1), ("Spread", 1)]),
            ),
            (
                "unknown built-in",
                p().prioritizer("Random", 1),
                Err(":incorrect builtin prioritizer: Random".into()),
            ),
            (
                "addOn without resourceName",
                p().addon("", "cpu", 1),
                Err(":addOn resourceName should not be empty".into()),
            ),
            (
                "addOn without scoreName",
                p().addon("cpuratio", "", 1),
                Err(":addOn scoreName should not be empty".into()),
            ),
        ];
        for (case, placement, want) in cases {
            assert_eq!(weights(placement), want, "{case}");
        }
        let mut no_coordinate = p().build();
        no_coordinate
            .spec
            .prioritizer_policy
            .configurations
            .push(Default::default());
        assert_eq!(
            prioritizers(&no_coordinate).unwrap_err().to_string(),
            ":scoreCoordinate field is required"
        );
        let mut no_addon = p().addon("r", "s", 1).build();
        no_addon.spec.prioritizer_policy.configurations[0]
            .score_coordinate
            .as_mut()
            .unwrap()
            .add_on = None;
        assert_eq!(
            prioritizers(&no_addon).unwrap_err().to_string(),
            ":addOn should not be empty"
        );
    }
}

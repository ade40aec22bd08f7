//! The placement scheduler: OCM's semantics as a pure function. Inputs (the placement, every
//! ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding, PlacementDecision and
//! AddOnPlacementScore the hub holds) and `now` go in; the desired PlacementDecisions, the
//! placement status (numberOfSelectedClusters, decisionGroups, conditions PlacementSatisfied
//! and PlacementMisconfigured), an [`Explanation`] per cluster and the next instant to
//! re-schedule come out. No IO, no clock.
//!
//! Map (mirrors OCM's `pkg/placement`):
//! - [`schedule`] (this file): OCM's `scheduling_controller.go` `syncPlacement` and
//!   `schedule.go` `Schedule`: sets → filters → prioritizers → selection → groups → status.
//! - [`clusterset`]: which clusters a placement may use (sets, bindings).
//! - [`plugins`]: filters [`plugins::predicate`], [`plugins::tainttoleration`]; prioritizers
//!   [`plugins::balance`], [`plugins::steady`], [`plugins::resource`], [`plugins::addon`] and
//!   ocm-edge's [`plugins::spread`]; weights in [`plugins::prioritizers`].
//! - [`decision`]: decision groups and PlacementDecision objects (100 clusters each).
//! - [`explain`]: the per-cluster explanation `ocm-edge placement get NAME` prints (the admin
//!   API carries it, so its types live in `ocm_edge_schemas::admin::explanation`).
//! - [`testkit`]: builders for placement objects (tests, demos).
//! - [`scheduling`]: the hub core's side: runs [`schedule`] for every Placement the hub holds and
//!   writes the outcome as records.
//! - [`set_status`]: OCM's cluster-set controllers: the built-in `default` and `global` sets and
//!   the `ClusterSetEmpty` / `Bound` conditions of sets and bindings.
//!
//! # Shell contract
//! Call [`schedule`] when anything it reads changes and again at
//! [`ScheduleOutcome::requeue_at`]; write [`ScheduleOutcome::decisions`], delete
//! [`ScheduleOutcome::stale_decisions`], write [`ScheduleOutcome::status`]. Skip placements
//! for which [`should_schedule`] is false.

pub mod clusterset;
pub mod decision;
pub mod plugins;
pub mod scheduling;
pub mod set_status;
pub mod testkit;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::{ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding};
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, Time, set_condition};
use ocm_edge_schemas::api::placement::{
    AddOnPlacementScore, DEFAULT_SCORE_RATE_LIMIT, PLACEMENT_MISCONFIGURED, PLACEMENT_SATISFIED,
    Placement, PlacementDecision, PlacementStatus,
};
use serde::{Deserialize, Serialize};

pub use explain::{ClusterExplanation, Explanation, GroupRef, Outcome, ScoreTerm};
pub use ocm_edge_schemas::admin::explanation as explain;
pub use plugins::{Prioritizer, WeightedPrioritizer};

use plugins::tainttoleration::TaintVerdict;
use plugins::{Context, predicate, spread, tainttoleration};

/// Annotation that makes the scheduler leave a placement alone (OCM's
/// `PlacementDisableAnnotation`, value `"true"`).
pub const ANNOTATION_SCHEDULING_DISABLE: &str =
    "cluster.open-cluster-management.io/experimental-scheduling-disable";

/// PlacementSatisfied True: every requested decision was made.
pub const REASON_ALL_DECISIONS_SCHEDULED: &str = "AllDecisionsScheduled";
/// PlacementSatisfied False: fewer clusters than numberOfClusters.
pub const REASON_NOT_ALL_DECISIONS_SCHEDULED: &str = "NotAllDecisionsScheduled";
/// PlacementSatisfied False: no valid binding in the placement's namespace.
pub const REASON_NO_MANAGED_CLUSTER_SET_BINDINGS: &str = "NoManagedClusterSetBindings";
/// PlacementSatisfied False: none of spec.clusterSets is bound.
pub const REASON_NO_INTERSECTION: &str = "NoIntersection";
/// PlacementSatisfied False: the eligible sets have no (live) member.
pub const REASON_ALL_MANAGED_CLUSTER_SETS_EMPTY: &str = "AllManagedClusterSetsEmpty";
/// PlacementSatisfied False: no cluster passed the filters.
pub const REASON_NO_MANAGED_CLUSTER_MATCHED: &str = "NoManagedClusterMatched";
/// PlacementMisconfigured True.
pub const REASON_MISCONFIGURED: &str = "Misconfigured";
/// PlacementMisconfigured False (OCM's spelling).
pub const REASON_SUCCEED_CONFIGURED: &str = "Succeedconfigured";

/// A placement the scheduler cannot evaluate; shown as `<plugin>:<message>` in the
/// PlacementMisconfigured condition, as OCM does (plugin empty for the scheduler itself).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{plugin}:{message}")]
pub struct Misconfiguration {
    /// The plugin that refused the configuration (`Predicate`, `TaintToleration`, or empty).
    pub plugin: String,
    /// What is wrong.
    pub message: String,
}

impl Misconfiguration {
    /// A misconfiguration reported by `plugin`.
    pub fn new(plugin: impl Into<String>, message: impl Into<String>) -> Self {
        Misconfiguration {
            plugin: plugin.into(),
            message: message.into(),
        }
    }
}

/// Everything [`schedule`] reads, as the hub's store holds it (all namespaces; the scheduler
/// picks what concerns the placement).
#[derive(Debug, Clone, Copy)]
pub struct SchedulingInput<'a> {
    /// The placement to schedule (its `status.conditions` are carried forward).
    pub placement: &'a Placement,
    /// Every ManagedCluster.
    pub clusters: &'a [ManagedCluster],
    /// Every ManagedClusterSet.
    pub cluster_sets: &'a [ManagedClusterSet],
    /// Every ManagedClusterSetBinding.
    pub bindings: &'a [ManagedClusterSetBinding],
    /// Every PlacementDecision (this placement's: Steady, NoSelectIfNew; others': Balance).
    pub decisions: &'a [PlacementDecision],
    /// Every AddOnPlacementScore.
    pub scores: &'a [AddOnPlacementScore],
}

/// What one scheduling pass decided.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleOutcome {
    /// The complete desired set of this placement's PlacementDecisions.
    pub decisions: Vec<PlacementDecision>,
    /// The placement's new status.
    pub status: PlacementStatus,
    /// Why each cluster was or was not selected.
    pub explanation: Explanation,
    /// Re-schedule at this instant even if nothing changes (a toleration expires, an add-on
    /// score goes stale).
    pub requeue_at: Option<DateTime<Utc>>,
    /// Set when the placement is misconfigured (also in the status condition).
    pub misconfiguration: Option<Misconfiguration>,
}

impl ScheduleOutcome {
    /// The selected cluster names, in PlacementDecision order.
    pub fn selected(&self) -> Vec<&str> {
        self.decisions
            .iter()
            .flat_map(|pd| pd.status.decisions.iter())
            .map(|d| d.cluster_name.as_str())
            .collect()
    }

    /// How long after `now` to re-schedule (zero when `requeue_at` has passed).
    pub fn requeue_after(&self, now: DateTime<Utc>) -> Option<std::time::Duration> {
        self.requeue_at
            .map(|at| (at - now).to_std().unwrap_or(std::time::Duration::ZERO))
    }

    /// The existing PlacementDecisions of this placement that must be deleted.
    pub fn stale_decisions<'a>(
        &self,
        placement: &Placement,
        existing: &'a [PlacementDecision],
    ) -> Vec<&'a PlacementDecision> {
        decision::stale_decisions(placement, existing, &self.decisions)
    }
}

/// Whether the scheduler should act on `placement` at all: not when it is being deleted or
/// carries [`ANNOTATION_SCHEDULING_DISABLE`]`: "true"` (OCM's `syncPlacement`).
pub fn should_schedule(placement: &Placement) -> bool {
    placement.metadata.deletion_timestamp.is_none()
        && placement
            .metadata
            .annotations
            .get(ANNOTATION_SCHEDULING_DISABLE)
            .is_none_or(|v| v != "true")
}

/// Per-cluster working state, turned into a [`ClusterExplanation`] at the end.
struct Draft {
    outcome: Outcome,
    reason: String,
    notes: Vec<String>,
    rank: Option<u32>,
    score: Option<i64>,
    terms: Vec<ScoreTerm>,
    group: Option<GroupRef>,
}

fn earliest(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Schedules one placement at `now`.
///
/// # Guarantees
/// Deterministic: the same input and `now` give the same outcome. Selection follows OCM:
/// filters (cluster sets, predicates, taints and tolerations), then clusters ordered by
/// `sum(weight x score)` descending and name ascending, cut at numberOfClusters (or picked
/// greedily when spread constraints are set, see [`plugins::spread`]).
/// A misconfigured placement selects nothing, as in OCM.
///
/// Deliberate differences from OCM, each because a pure function has no second pass:
/// tolerations are validated even when no cluster is available; `requeue_at` covers every
/// cluster kept by a timed toleration (OCM only looks at current decisions and relies on the
/// decision update to run again) and stale add-on scores.
pub fn schedule(input: &SchedulingInput<'_>, now: DateTime<Utc>) -> ScheduleOutcome {
    let placement = input.placement;
    let spec = &placement.spec;

    let valid = clusterset::valid_bindings(
        &placement.metadata.namespace,
        input.bindings,
        input.cluster_sets,
    );
    let eligible = clusterset::eligible_sets(placement, &valid);
    let eligible_sets: Vec<&ManagedClusterSet> = input
        .cluster_sets
        .iter()
        .filter(|s| eligible.contains(&s.metadata.name))
        .collect();

    let mut current: BTreeSet<&str> = BTreeSet::new();
    let mut other_counts: BTreeMap<&str, i64> = BTreeMap::new();
    for pd in input.decisions {
        let own = decision::belongs_to(pd, placement);
        for d in &pd.status.decisions {
            if own {
                current.insert(d.cluster_name.as_str());
            } else {
                *other_counts.entry(d.cluster_name.as_str()).or_insert(0) += 1;
            }
        }
    }
    let ctx = Context {
        placement,
        now,
        current,
        other_counts,
        scores: input.scores,
    };

    let mut drafts: Vec<Draft> = Vec::with_capacity(input.clusters.len());
    let mut available: Vec<usize> = Vec::new();
    for (i, cluster) in input.clusters.iter().enumerate() {
        let reason = if !eligible_sets
            .iter()
            .any(|s| clusterset::selects(s, cluster))
        {
            Some(clusterset::unavailable_reason(
                cluster,
                input.cluster_sets,
                placement,
            ))
        } else if cluster.metadata.deletion_timestamp.is_some() {
            Some("being deleted".to_string())
        } else {
            available.push(i);
            None
        };
        drafts.push(Draft {
            outcome: Outcome::Filtered,
            reason: reason.map(|r| format!("filtered: {r}")).unwrap_or_default(),
            notes: Vec::new(),
            rank: None,
            score: None,
            terms: Vec::new(),
            group: None,
        });
    }

    let config = predicate::validate(placement)
        .and_then(|()| tainttoleration::validate(&spec.tolerations))
        .and_then(|()| plugins::prioritizers(placement));
    let mut misconfiguration = None;
    let mut requeue_at = None;
    let mut weights = Vec::new();
    let mut selected: Vec<usize> = Vec::new();
    match config {
        Err(m) => {
            for &i in &available {
                drafts[i].outcome = Outcome::NotSelected;
                drafts[i].reason = format!("not selected: placement misconfigured ({m})");
            }
            misconfiguration = Some(m);
        }
        Ok(w) => {
            weights = w;
            let feasible = filter(input, &ctx, &available, &mut drafts, &mut requeue_at);
            selected = prioritize_and_select(
                input,
                &ctx,
                &weights,
                &feasible,
                &mut drafts,
                &mut requeue_at,
            );
        }
    }

    // The scores the decisions carry, held back by scoreRateLimit.
    let computed: BTreeMap<String, i64> = selected
        .iter()
        .map(|&i| {
            (
                input.clusters[i].name().to_owned(),
                drafts[i].score.unwrap_or(0),
            )
        })
        .collect();
    let recorded = recorded_scores(input, &computed, now);
    requeue_at = earliest(requeue_at, recorded.requeue_at);

    // Decision groups and PlacementDecisions.
    let selected_refs: Vec<&ManagedCluster> =
        selected.iter().map(|&i| &input.clusters[i]).collect();
    let (decisions, group_statuses) =
        match decision::decision_groups(&spec.decision_strategy.group_strategy, &selected_refs) {
            Ok(groups) => {
                let by_name: BTreeMap<&str, usize> = selected
                    .iter()
                    .map(|&i| (input.clusters[i].name(), i))
                    .collect();
                for (index, group) in groups.iter().enumerate() {
                    for name in &group.clusters {
                        if let Some(&i) = by_name.get(name.as_str()) {
                            drafts[i].group = Some(GroupRef {
                                index: i32::try_from(index).unwrap_or(i32::MAX),
                                name: group.name.clone(),
                            });
                        }
                    }
                }
                decision::placement_decisions(placement, &groups, &recorded.scores)
            }
            Err(m) => {
                // OCM writes no PlacementDecision at all in this case.
                for &i in &selected {
                    drafts[i].notes.push(
                        "no PlacementDecision written: decision strategy misconfigured".into(),
                    );
                }
                misconfiguration.get_or_insert(m);
                (Vec::new(), Vec::new())
            }
        };

    let selected_count = selected.len();
    let unscheduled = spec
        .number_of_clusters
        .map_or(0, |n| i64::from(n.max(0)) - selected_count as i64);
    let mut conditions = placement.status.conditions.clone();
    let stamp = Time::new(now);
    set_condition(
        &mut conditions,
        misconfigured_condition(misconfiguration.as_ref()),
        stamp,
    );
    set_condition(
        &mut conditions,
        satisfied_condition(&Satisfaction {
            cluster_sets_in_spec: &spec.cluster_sets,
            eligible_sets: &eligible,
            bindings: valid.len(),
            available: available.len(),
            selected: selected_count,
            unscheduled,
        }),
        stamp,
    );
    let status = PlacementStatus {
        number_of_selected_clusters: i32::try_from(selected_count).unwrap_or(i32::MAX),
        decision_groups: group_statuses,
        conditions,
        last_score_update_time: recorded.updated_at,
    };

    let explanation = explain(input, &eligible, &weights, drafts);
    ScheduleOutcome {
        decisions,
        status,
        explanation,
        requeue_at: if misconfiguration.is_some() {
            None
        } else {
            requeue_at
        },
        misconfiguration,
    }
}

/// The scores a scheduling pass writes into the decisions.
struct RecordedScores {
    scores: BTreeMap<String, i64>,
    /// `status.lastScoreUpdateTime`.
    updated_at: Option<Time>,
    /// When held-back scores may be written.
    requeue_at: Option<DateTime<Utc>>,
}

/// OCM's `scoreRateLimit`: a score change that leaves the selected clusters as they are is
/// written at most once per limit (the scores of the decisions stay until then, and the
/// scheduler comes back when it ends); a change of the selection writes the new scores at
/// once. `lastScoreUpdateTime` moves whenever the written scores change.
fn recorded_scores(
    input: &SchedulingInput<'_>,
    computed: &BTreeMap<String, i64>,
    now: DateTime<Utc>,
) -> RecordedScores {
    let placement = input.placement;
    let last = placement.status.last_score_update_time;
    let previous: BTreeMap<String, i64> = input
        .decisions
        .iter()
        .filter(|pd| decision::belongs_to(pd, placement))
        .flat_map(|pd| &pd.status.decisions)
        .map(|d| (d.cluster_name.clone(), d.score))
        .collect();
    // Nothing selected any more: no scores to write, and none were updated.
    if &previous == computed || computed.is_empty() {
        return RecordedScores {
            scores: computed.clone(),
            updated_at: last,
            requeue_at: None,
        };
    }
    let same_selection = previous.keys().eq(computed.keys());
    // An invalid limit is refused at apply; one stored before that check counts as the default.
    let limit = placement
        .spec
        .score_rate_limit()
        .unwrap_or(DEFAULT_SCORE_RATE_LIMIT);
    // A limit past the end of time never ends.
    let next_write = last.map(|at| {
        chrono::Duration::from_std(limit)
            .ok()
            .and_then(|limit| at.as_datetime().checked_add_signed(limit))
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    });
    match next_write {
        Some(next) if same_selection && now < next => RecordedScores {
            scores: previous,
            updated_at: last,
            requeue_at: Some(next),
        },
        _ => RecordedScores {
            scores: computed.clone(),
            updated_at: Some(Time::new(now)),
            requeue_at: None,
        },
    }
}

/// Predicate then TaintToleration, in OCM's order; returns the feasible cluster indices.
fn filter(
    input: &SchedulingInput<'_>,
    ctx: &Context<'_>,
    available: &[usize],
    drafts: &mut [Draft],
    requeue_at: &mut Option<DateTime<Utc>>,
) -> Vec<usize> {
    let mut feasible = Vec::with_capacity(available.len());
    for &i in available {
        let cluster = &input.clusters[i];
        if let Err(why) = predicate::filter(ctx.placement, cluster, ctx.scores) {
            drafts[i].reason = format!("filtered: {why}");
            continue;
        }
        let in_decision = ctx.current.contains(cluster.name());
        match tainttoleration::filter(
            cluster,
            &ctx.placement.spec.tolerations,
            in_decision,
            ctx.now,
        ) {
            TaintVerdict::NotTolerated(why) => drafts[i].reason = format!("filtered: {why}"),
            TaintVerdict::Tolerated { until, notes } => {
                drafts[i].notes.extend(notes);
                *requeue_at = earliest(*requeue_at, until);
                feasible.push(i);
            }
        }
    }
    feasible
}

/// Scores the feasible clusters and selects; returns the selected indices in rank order.
fn prioritize_and_select(
    input: &SchedulingInput<'_>,
    ctx: &Context<'_>,
    weights: &[WeightedPrioritizer],
    feasible: &[usize],
    drafts: &mut [Draft],
    requeue_at: &mut Option<DateTime<Utc>>,
) -> Vec<usize> {
    let spec = &ctx.placement.spec;
    let refs: Vec<&ManagedCluster> = feasible.iter().map(|&i| &input.clusters[i]).collect();
    let mut base = vec![0i64; refs.len()];
    let mut terms: Vec<Vec<ScoreTerm>> = vec![Vec::new(); refs.len()];
    let mut spread_weight = None;
    for w in weights {
        if w.prioritizer == Prioritizer::Spread {
            spread_weight = Some(w.weight);
            continue;
        }
        let scores = plugins::score(&w.prioritizer, ctx, &refs);
        *requeue_at = earliest(*requeue_at, scores.requeue_at);
        for (j, (score, note)) in scores.scores.iter().zip(scores.notes).enumerate() {
            base[j] += score * i64::from(w.weight);
            terms[j].push(ScoreTerm {
                prioritizer: w.prioritizer.to_string(),
                weight: w.weight,
                score: *score,
            });
            if let Some(note) = note {
                drafts[feasible[j]].notes.push(note);
            }
        }
    }

    let limit = spec
        .number_of_clusters
        .map_or(refs.len(), |n| usize::try_from(n.max(0)).unwrap_or(0));
    let constraints = &spec.spread_policy.spread_constraints;
    let mut total = base.clone();
    let mut blocked: Vec<Option<String>> = vec![None; refs.len()];
    let (order, rest): (Vec<usize>, Vec<usize>) = if constraints.is_empty() {
        let mut order: Vec<usize> = (0..refs.len()).collect();
        order.sort_by(|&a, &b| {
            base[b]
                .cmp(&base[a])
                .then_with(|| refs[a].name().cmp(refs[b].name()))
        });
        let rest = order.split_off(limit.min(order.len()));
        (order, rest)
    } else {
        let weight = spread_weight.unwrap_or(0);
        let selection = spread::select(&refs, &base, weight, constraints, limit);
        for j in 0..refs.len() {
            total[j] = base[j] + i64::from(weight) * selection.spread[j];
            if spread_weight.is_some() {
                terms[j].push(ScoreTerm {
                    prioritizer: Prioritizer::Spread.to_string(),
                    weight,
                    score: selection.spread[j],
                });
            }
        }
        let picked: BTreeSet<usize> = selection.order.iter().copied().collect();
        let mut rest: Vec<usize> = (0..refs.len()).filter(|j| !picked.contains(j)).collect();
        rest.sort_by(|&a, &b| {
            total[b]
                .cmp(&total[a])
                .then_with(|| refs[a].name().cmp(refs[b].name()))
        });
        blocked = selection.blocked;
        (selection.order, rest)
    };

    for (rank, &j) in order.iter().chain(&rest).enumerate() {
        let d = &mut drafts[feasible[j]];
        let rank = u32::try_from(rank + 1).unwrap_or(u32::MAX);
        d.rank = Some(rank);
        d.score = Some(total[j]);
        d.terms = std::mem::take(&mut terms[j]);
        if rank as usize <= order.len() {
            d.outcome = Outcome::Selected;
            d.reason = format!("selected: rank {rank}");
        } else {
            d.outcome = Outcome::NotSelected;
            d.reason = match (&blocked[j], spec.number_of_clusters) {
                (Some(why), _) => format!("not selected: rank {rank}, {why}"),
                (None, Some(n)) => format!("not selected: rank {rank}, numberOfClusters {n}"),
                (None, None) => format!("not selected: rank {rank}"),
            };
        }
    }
    order.iter().map(|&j| feasible[j]).collect()
}

struct Satisfaction<'a> {
    cluster_sets_in_spec: &'a [String],
    eligible_sets: &'a [String],
    bindings: usize,
    available: usize,
    selected: usize,
    unscheduled: i64,
}

/// OCM's `newSatisfiedCondition` (its framework-error case cannot happen without IO).
fn satisfied_condition(s: &Satisfaction<'_>) -> Condition {
    let (status, reason, message) = if s.bindings == 0 {
        (
            ConditionStatus::False,
            REASON_NO_MANAGED_CLUSTER_SET_BINDINGS,
            "No valid ManagedClusterSetBindings found in placement namespace".to_string(),
        )
    } else if s.eligible_sets.is_empty() {
        (
            ConditionStatus::False,
            REASON_NO_INTERSECTION,
            format!(
                "None of ManagedClusterSets [{}] is bound to placement namespace",
                s.cluster_sets_in_spec.join(",")
            ),
        )
    } else if s.available == 0 {
        (
            ConditionStatus::False,
            REASON_ALL_MANAGED_CLUSTER_SETS_EMPTY,
            format!(
                "All ManagedClusterSets [{}] have no member ManagedCluster",
                s.eligible_sets.join(",")
            ),
        )
    } else if s.selected == 0 {
        (
            ConditionStatus::False,
            REASON_NO_MANAGED_CLUSTER_MATCHED,
            "No ManagedCluster matches any of the cluster predicate".to_string(),
        )
    } else if s.unscheduled == 0 {
        (
            ConditionStatus::True,
            REASON_ALL_DECISIONS_SCHEDULED,
            "All cluster decisions scheduled".to_string(),
        )
    } else {
        (
            ConditionStatus::False,
            REASON_NOT_ALL_DECISIONS_SCHEDULED,
            format!("{} cluster decisions unscheduled", s.unscheduled),
        )
    };
    Condition::new(PLACEMENT_SATISFIED, status, reason, message)
}

/// OCM's `newMisconfiguredCondition`.
fn misconfigured_condition(m: Option<&Misconfiguration>) -> Condition {
    match m {
        Some(m) => Condition::new(
            PLACEMENT_MISCONFIGURED,
            ConditionStatus::True,
            REASON_MISCONFIGURED,
            m.to_string(),
        ),
        None => Condition::new(
            PLACEMENT_MISCONFIGURED,
            ConditionStatus::False,
            REASON_SUCCEED_CONFIGURED,
            "Placement configurations check pass",
        ),
    }
}

fn explain(
    input: &SchedulingInput<'_>,
    eligible: &[String],
    weights: &[WeightedPrioritizer],
    drafts: Vec<Draft>,
) -> Explanation {
    let placement = input.placement;
    let mut clusters: Vec<ClusterExplanation> = input
        .clusters
        .iter()
        .zip(drafts)
        .map(|(c, d)| ClusterExplanation {
            cluster: c.name().to_string(),
            outcome: d.outcome,
            rank: d.rank,
            score: d.score,
            terms: d.terms,
            decision_group: d.group,
            reason: d.reason,
            notes: d.notes,
        })
        .collect();
    let order = |o: Outcome| match o {
        Outcome::Selected => 0,
        Outcome::NotSelected => 1,
        Outcome::Filtered => 2,
    };
    clusters.sort_by(|a, b| {
        order(a.outcome)
            .cmp(&order(b.outcome))
            .then_with(|| a.rank.unwrap_or(u32::MAX).cmp(&b.rank.unwrap_or(u32::MAX)))
            .then_with(|| a.cluster.cmp(&b.cluster))
    });
    Explanation {
        placement: format!(
            "{}/{}",
            placement.metadata.namespace, placement.metadata.name
        ),
        eligible_cluster_sets: eligible.to_vec(),
        prioritizers: weights
            .iter()
            .map(|w| explain::PrioritizerWeight {
                prioritizer: w.prioritizer.to_string(),
                weight: w.weight,
            })
            .collect(),
        number_of_clusters: placement.spec.number_of_clusters,
        clusters,
    }
}

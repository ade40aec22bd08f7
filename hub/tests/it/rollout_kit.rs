//! Builders for the rollout tests: times, works, strategies, decisions, and a small simulated
//! fleet that carries a plan out (sends the template) so tests can step through a rollout.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};
use ocm_edge_hub::rollout::{
    ClusterDecision, ClusterWork, ReplicaSetPlan, RolloutStatus, TemplateState, plan_replica_set,
};
use ocm_edge_schemas::api::meta::{Condition, ConditionStatus, IntOrString, ObjectMeta, Time};
use ocm_edge_schemas::api::replicaset::{
    LocalPlacementReference, MandatoryDecisionGroup, ManifestWorkReplicaSet,
    ManifestWorkReplicaSetSpec, RolloutAll, RolloutConfig, RolloutProgressive,
    RolloutProgressivePerGroup, RolloutStrategy, RolloutType,
};
use ocm_edge_schemas::api::work::{
    WORK_APPLIED, WORK_AVAILABLE, WORK_DEGRADED, WORK_HELD, WORK_PROGRESSING,
};

/// `secs` after a fixed start (whole seconds, as Kubernetes times are).
pub fn t(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap() + TimeDelta::seconds(secs)
}

/// A work builder (generation 1, current template sent at `sent`).
#[derive(Clone)]
pub struct W(pub ClusterWork);

pub fn sent(at: i64) -> W {
    W(ClusterWork::sent(t(at)))
}

pub fn outdated() -> W {
    let mut w = ClusterWork::sent(t(0));
    w.template = TemplateState::Outdated;
    W(w)
}

fn cond(type_: &str, status: ConditionStatus, generation: i64, at: i64) -> Condition {
    let mut c = Condition::new(type_, status, "r", "");
    c.observed_generation = generation;
    c.last_transition_time = Some(Time::new(t(at)));
    c
}

impl W {
    pub fn generation(mut self, g: i64) -> Self {
        self.0.generation = g;
        self
    }
    fn with(mut self, c: Condition) -> Self {
        self.0.conditions.retain(|e| e.type_ != c.type_);
        self.0.conditions.push(c);
        self
    }
    /// Applied True for generation `gen` at `at`.
    pub fn applied_gen(self, generation: i64, at: i64) -> Self {
        self.with(cond(WORK_APPLIED, ConditionStatus::True, generation, at))
    }
    /// Applied True for the current generation at `at`.
    pub fn applied(self, at: i64) -> Self {
        let g = self.0.generation;
        self.applied_gen(g, at)
    }
    pub fn available(self, status: ConditionStatus, at: i64) -> Self {
        let g = self.0.generation;
        self.with(cond(WORK_AVAILABLE, status, g, at))
    }
    pub fn progressing(self, status: ConditionStatus, at: i64) -> Self {
        let g = self.0.generation;
        self.with(cond(WORK_PROGRESSING, status, g, at))
    }
    pub fn degraded_gen(self, generation: i64, at: i64) -> Self {
        self.with(cond(WORK_DEGRADED, ConditionStatus::True, generation, at))
    }
    pub fn degraded(self, at: i64) -> Self {
        let g = self.0.generation;
        self.degraded_gen(g, at)
    }
    /// Applied and Available since `at`: Succeeded since `at`.
    pub fn succeeded(self, at: i64) -> Self {
        self.applied(at).available(ConditionStatus::True, at)
    }
    /// The agent holds the current generation (True) since `at`, or let it in (False) at `at`.
    pub fn held(self, status: ConditionStatus, at: i64) -> Self {
        let g = self.0.generation;
        self.held_gen(g, status, at)
    }
    /// Held as the agent reported it for generation `generation`.
    pub fn held_gen(self, generation: i64, status: ConditionStatus, at: i64) -> Self {
        self.with(cond(WORK_HELD, status, generation, at))
    }
    pub fn unreachable(mut self) -> Self {
        self.0.reachable = false;
        self
    }
    pub fn deleting(mut self) -> Self {
        self.0.deleting = true;
        self
    }
}

/// Decisions: `(cluster, group index, group name)`.
pub fn decisions(rows: &[(&str, i32, &str)]) -> Vec<ClusterDecision> {
    rows.iter()
        .map(|(c, i, n)| ClusterDecision::new(*c, *i, *n))
        .collect()
}

/// `n` clusters `c1..cn` in group 0.
pub fn flat(n: usize) -> Vec<ClusterDecision> {
    (1..=n)
        .map(|i| ClusterDecision::new(format!("c{i}"), 0, ""))
        .collect()
}

/// Timing and failure budget.
#[derive(Clone, Default)]
pub struct Cfg {
    pub min_success: Option<&'static str>,
    pub deadline: Option<&'static str>,
    pub max_failures: Option<IntOrString>,
}

impl Cfg {
    pub fn deadline(d: &'static str) -> Self {
        Cfg {
            deadline: Some(d),
            ..Cfg::default()
        }
    }
    pub fn soak(mut self, d: &'static str) -> Self {
        self.min_success = Some(d);
        self
    }
    pub fn failures(mut self, f: IntOrString) -> Self {
        self.max_failures = Some(f);
        self
    }
    fn config(&self) -> RolloutConfig {
        RolloutConfig {
            min_success_time: self.min_success.map(str::to_owned),
            progress_deadline: self.deadline.map(str::to_owned),
            max_failures: self.max_failures.clone(),
        }
    }
}

pub fn int(n: i32) -> IntOrString {
    IntOrString::Int(n)
}

pub fn pct(s: &str) -> IntOrString {
    IntOrString::String(s.to_owned())
}

pub fn all(cfg: Cfg) -> RolloutStrategy {
    RolloutStrategy {
        type_: Some(RolloutType::All),
        all: Some(RolloutAll {
            config: cfg.config(),
        }),
        ..RolloutStrategy::default()
    }
}

pub fn mandatory(names: &[&str], indexes: &[i32]) -> Vec<MandatoryDecisionGroup> {
    names
        .iter()
        .map(|n| MandatoryDecisionGroup {
            group_name: (*n).to_owned(),
            group_index: 0,
        })
        .chain(indexes.iter().map(|i| MandatoryDecisionGroup {
            group_name: String::new(),
            group_index: *i,
        }))
        .collect()
}

pub fn progressive(
    cfg: Cfg,
    max_concurrency: Option<IntOrString>,
    groups: Vec<MandatoryDecisionGroup>,
) -> RolloutStrategy {
    RolloutStrategy {
        type_: Some(RolloutType::Progressive),
        progressive: Some(RolloutProgressive {
            config: cfg.config(),
            mandatory_decision_groups: groups,
            max_concurrency,
        }),
        ..RolloutStrategy::default()
    }
}

pub fn per_group(cfg: Cfg, groups: Vec<MandatoryDecisionGroup>) -> RolloutStrategy {
    RolloutStrategy {
        type_: Some(RolloutType::ProgressivePerGroup),
        progressive_per_group: Some(RolloutProgressivePerGroup {
            config: cfg.config(),
            mandatory_decision_groups: groups,
        }),
        ..RolloutStrategy::default()
    }
}

/// A set `default/app` with one placement `pl` using `strategy`.
pub fn set(strategy: RolloutStrategy) -> ManifestWorkReplicaSet {
    ManifestWorkReplicaSet {
        metadata: ObjectMeta::namespaced("default", "app"),
        spec: ManifestWorkReplicaSetSpec {
            placement_refs: vec![LocalPlacementReference {
                name: "pl".into(),
                rollout_strategy: strategy,
            }],
            ..ManifestWorkReplicaSetSpec::default()
        },
        ..ManifestWorkReplicaSet::default()
    }
}

/// A simulated fleet: the set, its placement's decisions and each cluster's work.
pub struct Fleet {
    pub set: ManifestWorkReplicaSet,
    pub decisions: BTreeMap<String, Vec<ClusterDecision>>,
    pub works: BTreeMap<String, ClusterWork>,
}

impl Fleet {
    pub fn new(strategy: RolloutStrategy, decided: Vec<ClusterDecision>) -> Self {
        Fleet {
            set: set(strategy),
            decisions: BTreeMap::from([("pl".to_owned(), decided)]),
            works: BTreeMap::new(),
        }
    }

    /// Plans at `at`, sends the template where the plan says (as the hub shell would), stores
    /// the new status, deletes works of clusters no longer selected; returns the plan.
    pub fn step(&mut self, at: i64) -> ReplicaSetPlan {
        let plan = plan_replica_set(&self.set, &self.decisions, &self.works, t(at));
        for (cluster, _) in &plan.to_apply {
            self.works.insert(cluster.clone(), ClusterWork::sent(t(at)));
        }
        for cluster in &plan.to_delete {
            self.works.remove(cluster);
        }
        self.set.status = plan.status.clone();
        plan
    }

    /// The agent of `cluster` reports its work applied and available at `at`.
    pub fn succeed(&mut self, cluster: &str, at: i64) {
        let w = self.works.get(cluster).cloned().expect("work sent");
        self.works.insert(cluster.into(), W(w).succeeded(at).0);
    }

    /// The agent of `cluster` reports its work applied but degraded at `at`.
    pub fn degrade(&mut self, cluster: &str, at: i64) {
        let w = self.works.get(cluster).cloned().expect("work sent");
        self.works.insert(
            cluster.into(),
            W(w).applied(at)
                .available(ConditionStatus::False, at)
                .degraded(at)
                .0,
        );
    }

    /// The agent of `cluster` stores the template but holds it (outside its maintenance
    /// windows, or held on site) from `at`.
    pub fn hold(&mut self, cluster: &str, at: i64) {
        let w = self.works.get(cluster).cloned().expect("work sent");
        self.works
            .insert(cluster.into(), W(w).held(ConditionStatus::True, at).0);
    }

    /// The agent of `cluster` lets the template in at `at` (applied, not yet available).
    pub fn release(&mut self, cluster: &str, at: i64) {
        let w = self.works.get(cluster).cloned().expect("work sent");
        self.works.insert(
            cluster.into(),
            W(w).held(ConditionStatus::False, at).applied(at).0,
        );
    }

    /// Clusters holding the current template, by name.
    pub fn holding(&self) -> Vec<String> {
        self.works
            .iter()
            .filter(|(_, w)| w.is_current())
            .map(|(c, _)| c.clone())
            .collect()
    }
}

/// The clusters a plan sends the template to.
pub fn applied_now(plan: &ReplicaSetPlan) -> Vec<&str> {
    plan.to_apply.iter().map(|(c, _)| c.as_str()).collect()
}

/// The rollout status a plan shows for `cluster`.
pub fn status_of(plan: &ReplicaSetPlan, cluster: &str) -> RolloutStatus {
    plan.clusters
        .iter()
        .find(|c| c.cluster == cluster)
        .map(|c| c.status)
        .expect("cluster in plan")
}

//! ManifestWorkReplicaSet rollouts, as pure logic: given a set, its placements' decisions, what
//! each cluster's work looks like and `now`, say which clusters get the current template now,
//! which works go, every cluster's rollout status, the set's status and when to look again.
//!
//! OCM's semantics (sdk-go `pkg/apis/cluster/v1alpha1/rollout.go` and ocm's
//! `manifestworkreplicasetcontroller`), with three differences, each documented where it is made:
//! - a cluster counts as Progressing from the moment the hub sent it the template, so an
//!   unreachable cluster times out at progressDeadline (and counts toward maxFailures) instead of
//!   holding its slot for ever as a time-less ToApply; the send also puts its deadline in
//!   [`ReplicaSetPlan::requeue_at`], so a shell woken only by that time still moves on;
//! - a decision group is left once every cluster still in it has failed within maxFailures
//!   (sdk-go's arithmetic can start two groups at once);
//! - maxFailures above the number of clusters tolerates them all (sdk-go reads it as 0).
//!
//! Mandatory decision groups tolerate no failure, as in OCM: if one of their clusters fails or
//! times out, the rollout stops there. progressDeadline `None` (the default) waits for ever.
//!
//! The shell: plan on every change (decisions, a work's status, the template) and at
//! `requeue_at`; send the template to `to_apply` and record the send time as
//! [`TemplateState::Current`]`{ sent_at }` (reset when the template changes: works with an older
//! template are [`TemplateState::Outdated`]); delete `to_delete`; store `status`.
//!
//! - [`cluster_status`]: one work's [`RolloutStatus`] ([`work_rollout_status`]).
//! - [`strategy`]: All / Progressive / ProgressivePerGroup ([`rollout_clusters`]).
//! - [`replicaset`]: the whole set: plan, summary and conditions ([`plan_replica_set`]).
//! - [`deploy`]: the hub core's side (OCM's deploy reconciler): plans every set the hub holds and
//!   turns the plan into works and the set's status.

pub mod cluster_status;
pub mod deploy;
pub mod history;
pub mod per_cluster;
pub mod replicaset;
pub mod strategy;
pub mod template;

pub use cluster_status::{
    ClusterDecision, ClusterRolloutStatus, ClusterWork, GroupKey, RolloutStatus, TemplateState,
    work_rollout_status,
};
pub use replicaset::{
    ClusterRolloutView, ReplicaSetPlan, Unrenderable, plan_replica_set, plan_replica_set_with,
};
pub use strategy::{RolloutResult, rollout_clusters};

/// A rollout strategy that cannot be used. Not retryable: the set's spec must be fixed; the set
/// reports it in PlacementVerified (NotAsExpected) and nothing is rolled out for that placement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RolloutError {
    /// progressDeadline is neither `None` nor a duration such as `90s`, `5m`, `1h`.
    #[error("invalid progressDeadline {0:?}: expected a duration such as 90s, 5m or 1h, or None")]
    ProgressDeadline(String),
    /// minSuccessTime is not a duration.
    #[error("invalid minSuccessTime {0:?}: expected a duration such as 90s, 5m or 1h")]
    MinSuccessTime(String),
    /// maxFailures is neither a number nor a percentage.
    #[error("failed to parse the provided maxFailures: {0}")]
    MaxFailures(String),
    /// maxConcurrency is neither a number nor a percentage.
    #[error("failed to parse the provided maxConcurrency: {0}")]
    MaxConcurrency(String),
}

//! Appliers: how the agent writes objects to a cluster and reads them back.
//!
//! - [`sim`]: a simulated cluster kept in the agent's redb file (demos, tests, scale runs).
//! - [`sim_control`]: the simulated cluster's control socket, so drift can be put in from outside
//!   (`ocm-edge-agent sim ...`).
//! - [`facts`]: what a cluster reports about itself (capacity and allocatable summed over its
//!   nodes, node count, version, OCM's well-known claims); pure.
//! - [`kube`]: a real cluster through kube-rs (discovery, server-side apply, deletes with propagation).
//!
//! Appliers are the IO edge: they carry objects in and out and decide nothing about bundles.

use std::future::Future;

use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use serde_json::Value;

use self::facts::ClusterFacts;
use crate::work::plan::{ApplyAction, DeletePropagation};
use crate::work::resource::ResourceRef;

pub mod facts;
#[cfg(feature = "kube")]
pub mod kube;
pub mod sim;
pub mod sim_control;

/// Why an object could not be applied, read or deleted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// The object (or what it needs, e.g. its namespace) does not exist. Retried on the next reconcile.
    #[error("not found: {0}")]
    NotFound(String),
    /// The API server refused the object as written. Not retryable until the spec changes.
    #[error("invalid: {0}")]
    Invalid(String),
    /// Another field manager owns the field (server-side apply without force).
    #[error("conflict: {0}")]
    Conflict(String),
    /// Whoever applies (the agent, or the work's executor) may not. Retried: a role may be
    /// granted without a spec change.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The API server cannot be reached. Retryable.
    #[error("API server unavailable: {0}")]
    Unavailable(String),
    /// Any other API error.
    #[error("API error: {0}")]
    Api(String),
    /// The object is being deleted and is not gone yet (finalizers); not a failure: the next
    /// reconcile looks again.
    #[error("{0} is still being deleted")]
    Terminating(String),
    /// An entry of the manifest's `ignoreFields` cannot be used; nothing was applied. Not
    /// retryable until the spec changes.
    #[error("{0}")]
    IgnoreFields(String),
}

impl ApplyError {
    /// Whether the next reconcile may succeed without a spec change.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, ApplyError::Invalid(_) | ApplyError::IgnoreFields(_))
    }

    /// OCM's reason for the manifest's `Applied` condition when this error stopped it.
    pub fn applied_reason(&self) -> &'static str {
        match self {
            ApplyError::IgnoreFields(_) => "AppliedManifestSSAIgnoreFieldError",
            _ => "AppliedManifestFailed",
        }
    }
}

/// A cluster the agent applies to.
///
/// `now` is passed so the simulated cluster can compute readiness without timers; the kube
/// applier ignores it.
pub trait Applier: Send + Sync {
    /// Applies one object with its strategy; returns the object as now on the cluster (with status).
    fn apply(
        &self,
        action: &ApplyAction,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Value, ApplyError>> + Send;

    /// Reads one object; `None` when absent.
    fn get(
        &self,
        resource: &ResourceRef,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Option<Value>, ApplyError>> + Send;

    /// Deletes one object; an absent object is not an error.
    fn delete(
        &self,
        resource: &ResourceRef,
        propagation: DeletePropagation,
    ) -> impl Future<Output = Result<(), ApplyError>> + Send;

    /// Changes of one object as they happen (`feedbackScrapeType: Watch`): the stream yields
    /// once when it starts and once per change (created, modified, deleted, or for the
    /// simulated cluster a workload turning ready), and ends when the watch breaks (the caller
    /// starts another).
    ///
    /// # Errors
    /// [`ApplyError`] when the watch cannot be started.
    fn watch(
        &self,
        resource: &ResourceRef,
    ) -> impl Future<Output = Result<BoxStream<'static, ()>, ApplyError>> + Send;

    /// Whether the API server answers its health endpoints.
    fn health(&self) -> impl Future<Output = bool> + Send;

    /// The Kubernetes version (`v1.31.0`), when known.
    fn version(&self) -> impl Future<Output = Option<String>> + Send;

    /// The cluster's capacity, allocatable, node count, version and well-known claims.
    ///
    /// # Errors
    /// [`ApplyError`] when the API server cannot be asked (the caller keeps what it last read).
    fn facts(&self) -> impl Future<Output = Result<ClusterFacts, ApplyError>> + Send;

    /// Whether this is a simulated cluster (reported in statuses, labels and claims).
    fn simulated(&self) -> bool;
}

/// The applier chosen by configuration.
#[derive(Debug, Clone)]
pub enum AnyApplier {
    Sim(sim::SimApplier),
    #[cfg(feature = "kube")]
    Kube(kube::KubeApplier),
}

impl Applier for AnyApplier {
    async fn apply(&self, action: &ApplyAction, now: DateTime<Utc>) -> Result<Value, ApplyError> {
        match self {
            AnyApplier::Sim(a) => a.apply(action, now).await,
            #[cfg(feature = "kube")]
            AnyApplier::Kube(a) => a.apply(action, now).await,
        }
    }

    async fn get(
        &self,
        resource: &ResourceRef,
        now: DateTime<Utc>,
    ) -> Result<Option<Value>, ApplyError> {
        match self {
            AnyApplier::Sim(a) => a.get(resource, now).await,
            #[cfg(feature = "kube")]
            AnyApplier::Kube(a) => a.get(resource, now).await,
        }
    }

    async fn delete(
        &self,
        resource: &ResourceRef,
        propagation: DeletePropagation,
    ) -> Result<(), ApplyError> {
        match self {
            AnyApplier::Sim(a) => a.delete(resource, propagation).await,
            #[cfg(feature = "kube")]
            AnyApplier::Kube(a) => a.delete(resource, propagation).await,
        }
    }

    async fn watch(&self, resource: &ResourceRef) -> Result<BoxStream<'static, ()>, ApplyError> {
        match self {
            AnyApplier::Sim(a) => a.watch(resource).await,
            #[cfg(feature = "kube")]
            AnyApplier::Kube(a) => a.watch(resource).await,
        }
    }

    async fn health(&self) -> bool {
        match self {
            AnyApplier::Sim(a) => a.health().await,
            #[cfg(feature = "kube")]
            AnyApplier::Kube(a) => a.health().await,
        }
    }

    async fn version(&self) -> Option<String> {
        match self {
            AnyApplier::Sim(a) => a.version().await,
            #[cfg(feature = "kube")]
            AnyApplier::Kube(a) => a.version().await,
        }
    }

    async fn facts(&self) -> Result<ClusterFacts, ApplyError> {
        match self {
            AnyApplier::Sim(a) => a.facts().await,
            #[cfg(feature = "kube")]
            AnyApplier::Kube(a) => a.facts().await,
        }
    }

    fn simulated(&self) -> bool {
        matches!(self, AnyApplier::Sim(_))
    }
}

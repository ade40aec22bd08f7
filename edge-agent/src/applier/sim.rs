//! A simulated cluster kept in the agent's redb file (table `sim_objects`), the way kwok simulates
//! nodes: objects are stored as applied; Deployments, DaemonSets, Jobs and Pods report ready
//! `ready_delay` after they last changed (computed from `now`, no timers). Namespaced objects need
//! their Namespace (except the built-in ones), so apply order matters as on a real cluster.
//!
//! [`SimControl`] lets tests and the demo look inside, inject drift (modify or delete an object,
//! which the next reconcile corrects) and take the simulated API server down.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use futures::StreamExt;
use futures::stream::BoxStream;
use ocm_edge_schemas::api::meta::Quantity;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::facts::ClusterFacts;
use super::{Applier, ApplyError};
use crate::work::plan::{ApplyAction, ApplyStrategy, DeletePropagation};
use crate::work::resource::{ResourceRef, is_subset};

const OBJECTS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("sim_objects");

/// Namespaces every cluster has.
pub const BUILTIN_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Kubernetes version the simulated cluster reports.
pub const SIM_VERSION: &str = "v1.31.0-ocm-edge-sim";

/// What the simulated cluster says about itself (`--sim-capacity`, `--sim-allocatable`,
/// `--sim-nodes`): nothing but one node unless given, so a fleet of simulated clusters scores
/// alike until told otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimFacts {
    /// Capacity, e.g. `cpu: 4`, `memory: 8Gi`, `pods: 110`.
    pub capacity: BTreeMap<String, Quantity>,
    /// Allocatable (the flags make it the capacity unless given).
    pub allocatable: BTreeMap<String, Quantity>,
    /// How many nodes the cluster has.
    pub nodes: u64,
}

impl Default for SimFacts {
    fn default() -> Self {
        SimFacts {
            capacity: BTreeMap::new(),
            allocatable: BTreeMap::new(),
            nodes: 1,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SimObject {
    /// The object without status, with server-set metadata.
    object: Value,
    /// When its spec last changed (readiness counts from here).
    changed_at: DateTime<Utc>,
}

#[derive(Debug)]
struct Inner {
    db: Arc<Database>,
    ready_delay: chrono::Duration,
    healthy: AtomicBool,
    facts: Mutex<SimFacts>,
    /// The key of every object stored or removed, for watches (`feedbackScrapeType: Watch`).
    changes: tokio::sync::broadcast::Sender<String>,
}

/// The simulated cluster as an [`Applier`].
#[derive(Debug, Clone)]
pub struct SimApplier {
    inner: Arc<Inner>,
}

/// A handle on the simulated cluster for tests and the demo (cheap to clone).
///
/// It does not keep the agent's file open: once the agent has stopped, reads return nothing and
/// changes do nothing, and a new agent can open the same data dir.
#[derive(Debug, Clone)]
pub struct SimControl {
    inner: std::sync::Weak<Inner>,
}

fn db_err(e: impl std::fmt::Display) -> ApplyError {
    ApplyError::Api(format!("simulated cluster storage: {e}"))
}

fn key(group: &str, kind: &str, namespace: &str, name: &str) -> String {
    format!("{group}/{kind}/{namespace}/{name}")
}

fn ref_key(r: &ResourceRef) -> String {
    key(&r.group, &r.kind, &r.namespace, &r.name)
}

impl SimApplier {
    /// A simulated cluster in `db` (its own table).
    ///
    /// # Errors
    /// [`ApplyError::Api`] when the table cannot be created.
    pub fn new(db: Arc<Database>, ready_delay: std::time::Duration) -> Result<Self, ApplyError> {
        let tx = db.begin_write().map_err(db_err)?;
        tx.open_table(OBJECTS).map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok(SimApplier {
            inner: Arc::new(Inner {
                db,
                ready_delay: chrono::Duration::from_std(ready_delay)
                    .unwrap_or(chrono::Duration::MAX),
                healthy: AtomicBool::new(true),
                facts: Mutex::new(SimFacts::default()),
                // Small: every simulated cluster has one, a watcher that falls behind is told
                // (Lagged) and reads its object again.
                changes: tokio::sync::broadcast::channel(16).0,
            }),
        })
    }

    /// The control handle of this cluster.
    pub fn control(&self) -> SimControl {
        SimControl {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// Sets what the cluster reports about itself.
    pub fn set_facts(&self, facts: SimFacts) {
        self.inner.set_facts(facts);
    }

    fn check_up(&self) -> Result<(), ApplyError> {
        if self.inner.healthy.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(ApplyError::Unavailable(
                "simulated API server is down".into(),
            ))
        }
    }

    fn with_status(&self, obj: &SimObject, now: DateTime<Utc>) -> Value {
        let mut out = obj.object.clone();
        let ready = now >= obj.changed_at + self.inner.ready_delay;
        if let Some(status) = simulated_status(&out, ready)
            && let Some(map) = out.as_object_mut()
        {
            map.insert("status".into(), status);
        }
        out
    }
}

impl Inner {
    fn set_facts(&self, facts: SimFacts) {
        if let Ok(mut f) = self.facts.lock() {
            *f = facts;
        }
    }

    fn load(&self, k: &str) -> Result<Option<SimObject>, ApplyError> {
        let tx = self.db.begin_read().map_err(db_err)?;
        let t = tx.open_table(OBJECTS).map_err(db_err)?;
        let v = t.get(k).map_err(db_err)?;
        v.map(|v| serde_json::from_slice(v.value()).map_err(db_err))
            .transpose()
    }

    fn save(&self, k: &str, obj: &SimObject) -> Result<(), ApplyError> {
        let bytes = serde_json::to_vec(obj).map_err(db_err)?;
        let tx = self.db.begin_write().map_err(db_err)?;
        tx.open_table(OBJECTS)
            .map_err(db_err)?
            .insert(k, bytes.as_slice())
            .map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        // Nobody watching is not an error.
        let _ = self.changes.send(k.to_owned());
        Ok(())
    }

    fn all(&self) -> Result<Vec<(String, SimObject)>, ApplyError> {
        let tx = self.db.begin_read().map_err(db_err)?;
        let t = tx.open_table(OBJECTS).map_err(db_err)?;
        let mut out = Vec::new();
        for e in t.iter().map_err(db_err)? {
            let (k, v) = e.map_err(db_err)?;
            out.push((
                k.value().to_owned(),
                serde_json::from_slice(v.value()).map_err(db_err)?,
            ));
        }
        Ok(out)
    }

    fn remove(&self, keys: &[String]) -> Result<(), ApplyError> {
        let tx = self.db.begin_write().map_err(db_err)?;
        {
            let mut t = tx.open_table(OBJECTS).map_err(db_err)?;
            for k in keys {
                t.remove(k.as_str()).map_err(db_err)?;
            }
        }
        tx.commit().map_err(db_err)?;
        for k in keys {
            let _ = self.changes.send(k.clone());
        }
        Ok(())
    }

    /// Removes `k`; for a Namespace (`namespace` = its name) also what is in it, as on a real cluster.
    fn remove_with_contents(&self, k: String, namespace: Option<&str>) -> Result<(), ApplyError> {
        let mut keys = vec![k];
        if let Some(ns) = namespace {
            // Keys are group/kind/namespace/name and a group never contains '/'.
            keys.extend(
                self.all()?
                    .into_iter()
                    .map(|(k, _)| k)
                    .filter(|k| k.split('/').nth(2) == Some(ns)),
            );
        }
        self.remove(&keys)
    }

    fn namespace_exists(&self, ns: &str) -> Result<bool, ApplyError> {
        Ok(BUILTIN_NAMESPACES.contains(&ns) || self.load(&key("", "Namespace", "", ns))?.is_some())
    }

    fn find(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<(String, SimObject)>, ApplyError> {
        Ok(self.all()?.into_iter().find(|(k, _)| {
            let mut parts = k.splitn(4, '/').skip(1);
            parts.next() == Some(kind)
                && parts.next() == Some(namespace)
                && parts.next() == Some(name)
        }))
    }
}

fn merge(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

fn set_meta(obj: &mut Value, field: &str, value: Value) {
    if let Some(map) = obj.as_object_mut() {
        let meta = map.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(field.into(), value);
        }
    }
}

fn meta_i64(obj: &Value, field: &str) -> i64 {
    obj.pointer(&format!("/metadata/{field}"))
        .and_then(|v| {
            v.as_i64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        .unwrap_or(0)
}

/// The status a real controller would report, `ready` or not yet.
fn simulated_status(obj: &Value, ready: bool) -> Option<Value> {
    let kind = obj.get("kind")?.as_str()?;
    let generation = meta_i64(obj, "generation");
    let n = |on: i64| if ready { on } else { 0 };
    let cond = |t: &str| json!([{"type": t, "status": if ready {"True"} else {"False"}, "reason": "Simulated", "message": "simulated by ocm-edge"}]);
    match kind {
        "Deployment" => {
            let replicas = obj
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            Some(json!({
                "observedGeneration": generation,
                "replicas": replicas,
                "updatedReplicas": n(replicas),
                "readyReplicas": n(replicas),
                "availableReplicas": n(replicas),
                "conditions": cond("Available"),
            }))
        }
        "DaemonSet" => Some(json!({
            "observedGeneration": generation,
            "desiredNumberScheduled": 1,
            "currentNumberScheduled": 1,
            "numberReady": n(1),
            "numberAvailable": n(1),
            "updatedNumberScheduled": n(1),
        })),
        "Job" => {
            let completions = obj
                .pointer("/spec/completions")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            if ready {
                Some(json!({"succeeded": completions, "conditions": cond("Complete")}))
            } else {
                Some(json!({"active": 1}))
            }
        }
        "Pod" => Some(json!({
            "phase": if ready { "Running" } else { "Pending" },
            "conditions": cond("Ready"),
        })),
        "Namespace" => Some(json!({"phase": "Active"})),
        _ => None,
    }
}

impl SimApplier {
    /// A watch of one simulated object: once at the start, then on every store or removal of
    /// it (the agent's own applies, drift put in through [`SimControl`]) and when it turns
    /// ready (`ready_delay` after it last changed), as a controller's status update would be
    /// seen on a real cluster.
    fn watch_stream(&self, resource: &ResourceRef) -> BoxStream<'static, ()> {
        struct State {
            inner: Arc<Inner>,
            key: String,
            rx: tokio::sync::broadcast::Receiver<String>,
            started: bool,
            /// The change (`changed_at`) whose turning ready was already told.
            ready_told: Option<DateTime<Utc>>,
        }
        let state = State {
            rx: self.inner.changes.subscribe(),
            inner: Arc::clone(&self.inner),
            key: ref_key(resource),
            started: false,
            ready_told: None,
        };
        futures::stream::unfold(state, |mut st| async move {
            if !st.started {
                st.started = true;
                return Some(((), st));
            }
            // When the object's last change turns ready, unless that was told already: in the
            // past (the reader was busy) it is told at once.
            let changed_at = st.inner.load(&st.key).ok().flatten().map(|o| o.changed_at);
            let ready_in = changed_at
                .filter(|c| st.ready_told != Some(*c))
                .map(|c| (c + st.inner.ready_delay - Utc::now()).to_std().unwrap_or_default());
            loop {
                tokio::select! {
                    changed = st.rx.recv() => match changed {
                        Ok(k) if k == st.key => return Some(((), st)),
                        Ok(_) => {}
                        // Missed some: one of them may have been this object.
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            return Some(((), st));
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                    },
                    () = async {
                        match ready_in {
                            // A little after, so the agent's clock reads it ready.
                            Some(d) => tokio::time::sleep(d + std::time::Duration::from_millis(20)).await,
                            None => std::future::pending().await,
                        }
                    } => {
                        st.ready_told = changed_at;
                        return Some(((), st));
                    }
                }
            }
        })
        .boxed()
    }
}

impl Applier for SimApplier {
    async fn watch(&self, resource: &ResourceRef) -> Result<BoxStream<'static, ()>, ApplyError> {
        self.check_up()?;
        Ok(self.watch_stream(resource))
    }

    async fn apply(&self, action: &ApplyAction, now: DateTime<Utc>) -> Result<Value, ApplyError> {
        self.check_up()?;
        let r = &action.resource;
        if !r.namespace.is_empty() && !self.inner.namespace_exists(&r.namespace)? {
            return Err(ApplyError::NotFound(format!(
                "namespaces \"{}\" not found",
                r.namespace
            )));
        }
        let k = ref_key(r);
        let existing = self.inner.load(&k)?;
        let Some(desired) = action
            .strategy
            .effective_manifest(&action.manifest, existing.as_ref().map(|o| &o.object))?
        else {
            // The work has not changed since it was applied: the cluster's edits stay.
            return match existing {
                Some(obj) => Ok(self.with_status(&obj, now)),
                None => Err(ApplyError::NotFound(format!(
                    "{} {}/{}",
                    r.kind, r.namespace, r.name
                ))),
            };
        };
        let updated = match (&action.strategy, existing) {
            (ApplyStrategy::ReadOnly, Some(obj)) | (ApplyStrategy::CreateOnly, Some(obj)) => obj,
            (ApplyStrategy::ReadOnly, None) => {
                return Err(ApplyError::NotFound(format!(
                    "{} {}/{} does not exist (ReadOnly)",
                    r.kind, r.namespace, r.name
                )));
            }
            (_, None) => {
                let mut object = desired;
                set_meta(&mut object, "uid", json!(uuid::Uuid::new_v4().to_string()));
                set_meta(&mut object, "resourceVersion", json!("1"));
                set_meta(&mut object, "generation", json!(1));
                set_meta(
                    &mut object,
                    "creationTimestamp",
                    json!(now.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
                );
                let obj = SimObject {
                    object,
                    changed_at: now,
                };
                self.inner.save(&k, &obj)?;
                obj
            }
            (_, Some(obj)) if is_subset(&desired, &obj.object) => obj,
            (strategy, Some(old)) => {
                let mut object = if matches!(strategy, ApplyStrategy::ServerSideApply { .. }) {
                    let mut merged = old.object.clone();
                    merge(&mut merged, &desired);
                    merged
                } else {
                    let mut replaced = desired;
                    for field in ["uid", "creationTimestamp"] {
                        if let Some(v) = old.object.pointer(&format!("/metadata/{field}")) {
                            set_meta(&mut replaced, field, v.clone());
                        }
                    }
                    replaced
                };
                set_meta(
                    &mut object,
                    "generation",
                    json!(meta_i64(&old.object, "generation") + 1),
                );
                set_meta(
                    &mut object,
                    "resourceVersion",
                    json!((meta_i64(&old.object, "resourceVersion") + 1).to_string()),
                );
                let obj = SimObject {
                    object,
                    changed_at: now,
                };
                self.inner.save(&k, &obj)?;
                obj
            }
        };
        Ok(self.with_status(&updated, now))
    }

    async fn get(
        &self,
        resource: &ResourceRef,
        now: DateTime<Utc>,
    ) -> Result<Option<Value>, ApplyError> {
        self.check_up()?;
        Ok(self
            .inner
            .load(&ref_key(resource))?
            .map(|o| self.with_status(&o, now)))
    }

    async fn delete(
        &self,
        resource: &ResourceRef,
        _propagation: DeletePropagation,
    ) -> Result<(), ApplyError> {
        self.check_up()?;
        let namespace = resource.is_namespace().then_some(resource.name.as_str());
        self.inner
            .remove_with_contents(ref_key(resource), namespace)
    }

    async fn health(&self) -> bool {
        self.inner.healthy.load(Ordering::SeqCst)
    }

    async fn version(&self) -> Option<String> {
        Some(SIM_VERSION.to_owned())
    }

    async fn facts(&self) -> Result<ClusterFacts, ApplyError> {
        self.check_up()?;
        let sim = self
            .inner
            .facts
            .lock()
            .map_err(|_| ApplyError::Api("simulated cluster facts: a writer panicked".into()))?
            .clone();
        // The claims as a real cluster without nodes would detect them (platform and product
        // `Other`); the simulated cluster has no kube-system namespace uid to claim as its id.
        let mut facts = ClusterFacts::from_nodes(&[], Some(SIM_VERSION), None);
        facts.capacity = sim.capacity;
        facts.allocatable = sim.allocatable;
        facts.nodes = sim.nodes;
        Ok(facts)
    }

    fn simulated(&self) -> bool {
        true
    }
}

impl SimControl {
    /// Every object on the simulated cluster (as stored: without status).
    pub fn objects(&self) -> Vec<Value> {
        self.inner
            .upgrade()
            .and_then(|i| i.all().ok())
            .map(|v| v.into_iter().map(|(_, o)| o.object).collect())
            .unwrap_or_default()
    }

    /// The object of `kind` named `name` in `namespace` ("" for cluster-scoped), without status.
    pub fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let inner = self.inner.upgrade()?;
        inner
            .find(kind, namespace, name)
            .ok()
            .flatten()
            .map(|(_, o)| o.object)
    }

    /// Deletes an object behind the agent's back (drift). Returns whether it existed.
    pub fn delete(&self, kind: &str, namespace: &str, name: &str) -> bool {
        let Some(inner) = self.inner.upgrade() else {
            return false;
        };
        match inner.find(kind, namespace, name) {
            Ok(Some((k, o))) => {
                let is_ns = kind == "Namespace"
                    && o.object.get("apiVersion").and_then(Value::as_str) == Some("v1");
                inner.remove_with_contents(k, is_ns.then_some(name)).is_ok()
            }
            _ => false,
        }
    }

    /// Changes an object behind the agent's back (drift). Returns whether it existed.
    pub fn modify(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
        change: impl FnOnce(&mut Value),
    ) -> bool {
        let Some(inner) = self.inner.upgrade() else {
            return false;
        };
        match inner.find(kind, namespace, name) {
            Ok(Some((k, mut o))) => {
                change(&mut o.object);
                inner.save(&k, &o).is_ok()
            }
            _ => false,
        }
    }

    /// Changes what the cluster reports about itself (a node added, memory upgraded): the agent
    /// reports it at its next facts check.
    pub fn set_facts(&self, facts: SimFacts) {
        if let Some(inner) = self.inner.upgrade() {
            inner.set_facts(facts);
        }
    }

    /// Takes the simulated API server up (`true`) or down.
    pub fn set_api_healthy(&self, healthy: bool) {
        if let Some(inner) = self.inner.upgrade() {
            inner.healthy.store(healthy, Ordering::SeqCst);
        }
    }

    /// Whether the simulated API server is up (false once the agent has stopped).
    pub fn api_healthy(&self) -> bool {
        self.inner
            .upgrade()
            .is_some_and(|i| i.healthy.load(Ordering::SeqCst))
    }
}

//! Bundles: spec events into the store, reconcile against the cluster, statuses into the outbox and
//! out to the hub.

use chrono::{DateTime, Utc};
use futures::StreamExt;
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::meta::{Condition, Time, is_condition_true, set_condition};
use ocm_edge_schemas::api::work::WORK_HELD;
use ocm_edge_schemas::wire::resync::ResourceVersion;
use ocm_edge_schemas::wire::works::SpecEvent;

use crate::applier::{AnyApplier, Applier, ApplyError};
use crate::events::admissible;
use crate::maintenance::{self, Closed, Gate};
use crate::session::Agent;
use crate::store::{DesiredBundle, Tombstone, Waiting};
use crate::work::acceptance::{SpecDecision, decide_spec, is_replay};
use crate::work::addon_identity;
use crate::work::drift;
use crate::work::outbox::Envelope;
use crate::work::plan::{ApplyStrategy, RemoveAction, plan_apply, plan_delete, same_object};
use crate::work::resource::ResourceRef;
use crate::work::status::{
    ManifestFailure, ManifestOutcome, StatusContext, deleted_status, deleting_status, work_status,
};
use crate::work::watched::watched;

/// How long a watch that ended or could not start waits before it starts again.
const WATCH_RETRY: std::time::Duration = std::time::Duration::from_secs(2);
/// The least time between two reconciles a watched object causes.
const WATCH_MIN_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

impl Agent {
    pub(crate) async fn on_spec(&mut self, spec: SpecEvent, t: DateTime<Utc>) {
        if let Err(why) = admissible(&spec) {
            tracing::warn!(
                resource_id = %spec.resource_id,
                source = %spec.header.source,
                %why,
                "spec refused; nothing stored or applied"
            );
            self.bump(|c| c.specs_refused += 1);
            return;
        }
        let held = match self.store.desired(&spec.resource_id) {
            Ok(h) => h,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the store");
                return;
            }
        };
        // The last event acted on for this work, held or deleted: anything sent before it is a
        // replay (a work created again starts again at version 1, so versions alone cannot tell).
        let last = match &held {
            Some(h) => h.decided_at,
            // Deleted (its tombstone), or neither held nor remembered: the replay floor, below
            // which the oldest tombstones were dropped.
            None => match self
                .store
                .tombstone(&spec.resource_id)
                .and_then(|t| match t {
                    Some(t) => Ok(t.decided_at),
                    None => self.store.replay_floor(),
                }) {
                Ok(last) => last,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the store");
                    return;
                }
            },
        };
        if is_replay(last, spec.header.time) {
            tracing::warn!(
                resource_id = %spec.resource_id,
                version = spec.resource_version,
                sent = ?spec.header.time,
                last = ?last,
                "spec dropped: sent before the last one acted on for this work (a replay, or the hub's clock went back)"
            );
            self.bump(|c| c.specs_dropped_stale += 1);
            return;
        }
        let decision = decide_spec(
            held.as_ref().map(|h| h.resource_version),
            spec.resource_version,
            spec.is_delete(),
        );
        tracing::debug!(resource_id = %spec.resource_id, version = spec.resource_version, ?decision, "spec event");
        match decision {
            SpecDecision::Apply | SpecDecision::Reapply => {
                let generation = spec.generation();
                let Some(bundle) = spec.bundle else {
                    return;
                };
                let mut desired = DesiredBundle {
                    resource_id: spec.resource_id,
                    resource_version: spec.resource_version,
                    source: spec.header.source,
                    metadata: spec.metadata,
                    generation,
                    bundle,
                    deleting: false,
                    decided_at: spec.header.time,
                    waiting: None,
                };
                desired.waiting = match (decision, held) {
                    // The same version again: it waits, or not, as it did.
                    (SpecDecision::Reapply, Some(h)) => h.waiting,
                    // A new version while updates are held: it waits, and what is on the
                    // cluster stays (a version that already waited keeps its place).
                    (_, held) if !self.maintenance_gate(t).is_open() => Some(match held {
                        Some(mut h) => match h.waiting.take() {
                            Some(w) => w,
                            None => Waiting {
                                since: t,
                                on_cluster: (!h.deleting).then(|| Box::new(h)),
                            },
                        },
                        None => Waiting {
                            since: t,
                            on_cluster: None,
                        },
                    }),
                    _ => None,
                };
                if decision == SpecDecision::Apply {
                    tracing::info!(
                        work = desired.metadata.as_ref().map_or("", |m| m.name.as_str()),
                        resource_id = %desired.resource_id,
                        version = desired.resource_version,
                        manifests = desired.bundle.manifests.len(),
                        "{}",
                        if desired.waiting.is_some() {
                            "new work version stored; it waits for a maintenance window or the end of the hold"
                        } else {
                            "applying a new work version"
                        }
                    );
                }
                if let Err(e) = self.store.put_desired(&desired) {
                    tracing::error!(error = %e, "cannot store a bundle");
                    return;
                }
                self.bump(|c| c.specs_applied += 1);
                self.reconcile_one(desired, t).await;
            }
            SpecDecision::DropStale { held, received } => {
                tracing::info!(resource_id = %spec.resource_id, held, received, "stale spec dropped");
                self.bump(|c| c.specs_dropped_stale += 1);
            }
            SpecDecision::Delete => {
                let Some(mut desired) = held else { return };
                let before = desired.clone();
                desired.deleting = true;
                desired.decided_at = spec.header.time.or(desired.decided_at);
                // A removal waits like a new version, unless the work says it need not; a work
                // with nothing applied yet has nothing to wait for.
                if desired.waiting.is_none()
                    && !before.deleting
                    && !delete_while_held(&desired)
                    && !self.maintenance_gate(t).is_open()
                {
                    desired.waiting = Some(Waiting {
                        since: t,
                        on_cluster: Some(Box::new(before)),
                    });
                }
                if let Err(e) = self.store.put_desired(&desired) {
                    tracing::error!(error = %e, "cannot store a bundle");
                    return;
                }
                self.reconcile_one(desired, t).await;
            }
            SpecDecision::DeleteUnknown => {
                // Deleted earlier (or never held): say so again, the hub may have missed it.
                let status = deleted_status(None, spec.generation(), Time::new(t));
                let envelope = Envelope {
                    resource_version: spec.resource_version,
                    source: spec.header.source,
                    metadata: spec.metadata,
                };
                self.outbox
                    .record(&spec.resource_id, envelope, status, true);
                self.flush_outbox(t);
            }
        }
        self.update_held_count();
    }

    fn update_held_count(&self) {
        let n = self.store.desired_count().unwrap_or(0);
        self.bump(|c| c.bundles_held = n);
    }

    /// Reconciles every held bundle (drift correction), whether connected or not.
    pub(crate) async fn reconcile_all(&mut self, t: DateTime<Utc>) {
        // Noticed (and logged) on each pass, even with nothing waiting, so a hold or a closed
        // window shows before the next version arrives.
        self.maintenance_gate(t);
        match self.store.all_desired() {
            Ok(all) => {
                let total = all.len() as u64;
                let deleted_before = self.counters.borrow().bundles_deleted;
                let mut waiting = 0u64;
                for desired in all {
                    if self.reconcile_one(desired, t).await {
                        waiting += 1;
                    }
                }
                self.bump(|c| c.versions_waiting = waiting);
                // Bundles whose removal finished in this pass are forgotten.
                let forgotten = self.counters.borrow().bundles_deleted - deleted_before;
                self.bump(|c| c.bundles_held = total.saturating_sub(forgotten));
            }
            Err(e) => tracing::error!(error = %e, "cannot read the store"),
        }
        self.bump(|c| c.reconciles += 1);
    }

    /// Reconciles the bundles whose watched objects changed (`feedbackScrapeType: Watch`): the
    /// status is read now, not at the next reconcile.
    pub(crate) async fn reconcile_watched(
        &mut self,
        ids: std::collections::BTreeSet<String>,
        t: DateTime<Utc>,
    ) {
        for id in ids {
            match self.store.desired(&id) {
                Ok(Some(desired)) => {
                    self.bump(|c| c.watch_reconciles += 1);
                    self.reconcile_one(desired, t).await;
                }
                Ok(None) => {}
                Err(e) => tracing::error!(error = %e, "cannot read the store"),
            }
        }
    }

    /// Starts and stops the watches of one bundle: the objects of the version on the cluster
    /// whose config asks for `Watch` (while a newer version or a delete waits, the one still
    /// applied), none once it is being removed.
    fn sync_watches(&mut self, desired: &DesiredBundle) {
        let on_cluster = match &desired.waiting {
            Some(w) => w.on_cluster.as_deref(),
            None if desired.deleting => None,
            None => Some(desired),
        };
        let wanted = on_cluster.map_or_else(Vec::new, |d| watched(&d.bundle));
        let running = self.watches.entry(desired.resource_id.clone()).or_default();
        running.retain(|r, handle| {
            let keep = wanted.contains(r);
            if !keep {
                handle.abort();
            }
            keep
        });
        for r in wanted {
            if running.contains_key(&r) {
                continue;
            }
            let (applier, tx, id, stop) = (
                self.applier.clone(),
                self.watch_tx.clone(),
                desired.resource_id.clone(),
                self.watch_stop.clone(),
            );
            let object = r.clone();
            let watching = async move {
                loop {
                    match applier.watch(&object).await {
                        Ok(mut changes) => {
                            while changes.next().await.is_some() {
                                if tx.send(id.clone()).is_err() {
                                    return;
                                }
                                // At most one reconcile per interval per object: the changes
                                // in between are taken by the next one. An object someone else
                                // keeps changing back (an autoscaler) is not fought at the API
                                // server's speed.
                                tokio::time::sleep(WATCH_MIN_INTERVAL).await;
                            }
                        }
                        Err(e) => {
                            tracing::debug!(object = %object.key(), error = %e, "cannot watch; trying again");
                        }
                    }
                    // The API server ends watches from time to time, and one that cannot start
                    // (API server down) is tried again after a pause, not in a loop.
                    tokio::time::sleep(WATCH_RETRY).await;
                }
            };
            // Ends with the agent, however its task ends.
            let task = tokio::spawn(async move {
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = watching => {}
                }
            });
            running.insert(r, task.abort_handle());
        }
        if running.is_empty() {
            self.watches.remove(&desired.resource_id);
        }
        let n = self.watches.values().map(|m| m.len() as u64).sum();
        self.bump(|c| c.objects_watched = n);
    }

    /// Reconciles one bundle; true when its latest version waits (updates are held).
    async fn reconcile_one(&mut self, desired: DesiredBundle, t: DateTime<Utc>) -> bool {
        self.sync_watches(&desired);
        let inventory = match self.store.inventory(&desired.resource_id) {
            Ok(i) => i,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the inventory");
                return desired.waiting.is_some();
            }
        };
        let mut desired = desired;
        if let Some(waiting) = desired.waiting.take() {
            // A removal of a work with nothing on the cluster, or one the work lets go while
            // held, has nothing to wait for.
            let removal_goes =
                desired.deleting && (delete_while_held(&desired) || waiting.on_cluster.is_none());
            match self.maintenance_gate(t) {
                Gate::Closed(closed) if !removal_goes => {
                    self.reconcile_held(desired, waiting, inventory, &closed, t)
                        .await;
                    self.flush_outbox(t);
                    return true;
                }
                _ => {
                    tracing::info!(
                        resource_id = %desired.resource_id,
                        version = desired.resource_version,
                        deleting = desired.deleting,
                        waited_since = %waiting.since,
                        "updates allowed: applying the version that waited"
                    );
                    if let Err(e) = self.store.put_desired(&desired) {
                        tracing::error!(error = %e, "cannot store a bundle");
                        return true;
                    }
                }
            }
        }
        if desired.deleting {
            self.remove_bundle(desired, inventory, t).await;
        } else {
            self.apply_bundle(desired, inventory, t, None).await;
        }
        self.flush_outbox(t);
        false
    }

    /// Whether updates may be applied at `t`: the hold file (read here, at each reconcile) and
    /// the maintenance windows.
    pub(crate) fn maintenance_gate(&self, t: DateTime<Utc>) -> Gate {
        let hold = maintenance::hold::read(&self.cfg.data_dir);
        let gate = maintenance::gate_with_hub(
            &self.cfg.maintenance_windows,
            &self.hub_windows,
            hold.as_ref(),
            t,
        );
        let held = !gate.is_open();
        if self.counters.borrow().updates_held != held {
            match &gate {
                Gate::Open => tracing::info!("updates allowed"),
                Gate::Closed(c) => tracing::info!(reason = c.reason, why = %c.why, "updates held"),
            }
            self.bump(|c| c.updates_held = held);
        }
        gate
    }

    /// Takes the maintenance windows the hub set for this cluster from its view. The hub checks
    /// them when they are set; ones that cannot be read here (a newer hub's syntax or time
    /// zone) are logged and counted, and hold every update until the hub sends windows this
    /// agent reads ([`maintenance::gate_with_hub`]): never open what the hub closed.
    pub(crate) fn take_hub_windows(&mut self, view: &ManagedCluster) {
        let value = view
            .metadata
            .annotations
            .get(maintenance::window::HUB_WINDOWS_ANNOTATION)
            .map_or("", String::as_str);
        let windows = maintenance::window::from_annotation(value).map_err(|e| e.to_string());
        if windows == self.hub_windows {
            return;
        }
        match &windows {
            Ok(list) => {
                let list: Vec<&str> = list.iter().map(|w| w.as_str()).collect();
                tracing::info!(windows = ?list, "maintenance windows set on the hub");
            }
            Err(e) => {
                tracing::warn!(error = %e, "maintenance windows from the hub not understood; updates are held until they are");
                self.bump(|c| c.dropped_malformed += 1);
            }
        }
        self.hub_windows = windows;
    }

    /// A bundle whose latest version waits: the version on the cluster (if any) is reconciled
    /// as usual, and the status, reported for the latest version, says Held.
    async fn reconcile_held(
        &mut self,
        latest: DesiredBundle,
        waiting: Waiting,
        inventory: Vec<ResourceRef>,
        closed: &Closed,
        t: DateTime<Utc>,
    ) {
        let held = maintenance::held_condition(
            closed,
            latest.generation,
            latest.resource_version,
            waiting.on_cluster.as_ref().map(|c| c.resource_version),
        );
        match waiting.on_cluster {
            Some(on_cluster) => {
                let report = HeldReport {
                    latest: &latest,
                    condition: held,
                };
                self.apply_bundle(*on_cluster, inventory, t, Some(report))
                    .await;
            }
            None => {
                let mut status = self
                    .outbox
                    .get(&latest.resource_id)
                    .map(|r| r.status.clone())
                    .unwrap_or_default();
                set_condition(&mut status.conditions, held, Time::new(t));
                self.outbox
                    .record(&latest.resource_id, envelope(&latest), status, false);
            }
        }
    }

    /// Applies `desired` and records its status; with `held`, `desired` is the version kept on
    /// the cluster while `held.latest` waits, and the status is reported for the latest.
    async fn apply_bundle(
        &mut self,
        desired: DesiredBundle,
        inventory: Vec<ResourceRef>,
        t: DateTime<Utc>,
        held: Option<HeldReport<'_>>,
    ) {
        // An add-on's MQTT identity, once bound, goes with its work as its last manifest.
        let with_secret = self
            .addon_secret(&desired, t)
            .map(|secret| addon_identity::with_secret(&desired.bundle, secret));
        let bundle = with_secret.as_ref().unwrap_or(&desired.bundle);
        let plan = plan_apply(bundle, &inventory, &self.cfg.field_manager);
        let mut outcomes: Vec<ManifestOutcome> = plan
            .invalid
            .iter()
            .map(|(ordinal, e)| ManifestOutcome {
                ordinal: *ordinal,
                resource: None,
                result: Err(ManifestFailure::failed(e.to_string())),
            })
            .collect();
        let mut new_inventory: Vec<ResourceRef> = Vec::new();
        let (mut applied, mut errors, mut corrected) = (0u64, 0u64, 0u64);
        let previous_marks = self.applied_marks.remove(&desired.resource_id);
        let mut marks = drift::Marks::new(desired.resource_version);
        for action in &plan.applies {
            let result = self.applier.apply(action, t).await;
            let owned = action.strategy != ApplyStrategy::ReadOnly;
            match &result {
                Ok(live) => {
                    applied += 1;
                    if drift::corrects(&action.strategy)
                        && marks.record(previous_marks.as_ref(), &action.resource.key(), live)
                    {
                        corrected += 1;
                        tracing::info!(resource = %action.resource.key(), "changed on the cluster; put back");
                    }
                    if owned {
                        new_inventory.push(action.resource.clone());
                    }
                }
                Err(e) => {
                    errors += 1;
                    tracing::warn!(resource = %action.resource.key(), error = %e, "apply failed");
                    // It may exist from an earlier apply: keep tracking it.
                    if owned
                        && let Some(old) =
                            inventory.iter().find(|o| same_object(o, &action.resource))
                    {
                        new_inventory.push(old.clone());
                    }
                }
            }
            outcomes.push(ManifestOutcome {
                ordinal: action.ordinal,
                resource: Some(action.resource.clone()),
                result: result.map_err(|e| ManifestFailure {
                    reason: e.applied_reason(),
                    message: e.to_string(),
                }),
            });
        }
        let mut deleted = 0u64;
        for removal in &plan.removals {
            match remove_object(&self.applier, removal).await {
                Ok(()) => {
                    if matches!(removal, RemoveAction::Delete { .. }) {
                        deleted += 1;
                    }
                }
                Err(ApplyError::Terminating(key)) => {
                    tracing::debug!(resource = %key, "still being deleted");
                    new_inventory.push(removal.resource().clone());
                }
                Err(e) => {
                    errors += 1;
                    tracing::warn!(resource = %removal.resource().key(), error = %e, "removal failed; retried next reconcile");
                    new_inventory.push(removal.resource().clone());
                }
            }
        }
        if new_inventory != inventory
            && let Err(e) = self
                .store
                .put_inventory(&desired.resource_id, &new_inventory)
        {
            tracing::error!(error = %e, "cannot store the inventory");
        }
        self.applied_marks
            .insert(desired.resource_id.clone(), marks);
        self.bump(|c| {
            c.objects_applied += applied;
            c.drift_corrections += corrected;
            c.objects_deleted += deleted;
            c.apply_errors += errors;
        });
        // The agent's own Secret is on no manifest condition of the hub's work.
        outcomes.retain(|o| o.ordinal < desired.bundle.manifests.len());
        let previous = self
            .outbox
            .get(&desired.resource_id)
            .map(|r| r.status.clone());
        let mut status = work_status(
            &desired.bundle,
            &outcomes,
            StatusContext {
                generation: desired.generation,
                previous: previous.as_ref(),
                simulated: self.applier.simulated(),
                now: Time::new(t),
            },
        );
        match &held {
            Some(h) => {
                set_condition(&mut status.conditions, h.condition.clone(), Time::new(t));
            }
            None => {
                // The version that waited is applied: Held=False from now, for this generation.
                if is_condition_true(&status.conditions, WORK_HELD) {
                    set_condition(
                        &mut status.conditions,
                        maintenance::released_condition(desired.generation),
                        Time::new(t),
                    );
                }
            }
        }
        let was = previous.as_ref().map(|p| conditions_text(&p.conditions));
        let now = conditions_text(&status.conditions);
        if was.as_deref() != Some(now.as_str()) {
            // Drift correction runs every few seconds: only a change is worth a line.
            tracing::info!(
                work = desired.metadata.as_ref().map_or("", |m| m.name.as_str()),
                version = desired.resource_version,
                conditions = %now,
                was = was.as_deref().unwrap_or("none"),
                "work status changed"
            );
        }
        let reported = held.as_ref().map_or(&desired, |h| h.latest);
        self.outbox
            .record(&reported.resource_id, envelope(reported), status, false);
    }

    /// The Secret of the add-on identity `desired` registers, once the hub bound its password;
    /// until then, asks the hub to bind it (at most once per `join_retry` for one hash).
    fn addon_secret(
        &mut self,
        desired: &DesiredBundle,
        t: DateTime<Utc>,
    ) -> Option<ocm_edge_schemas::api::work::Manifest> {
        let metadata = desired.metadata.as_ref()?;
        let registration = match addon_identity::registration(
            &metadata.annotations,
            &metadata.name,
            &self.cfg.cluster_name,
        ) {
            Ok(r) => r?,
            Err(why) => {
                tracing::warn!(resource_id = %desired.resource_id, %why, "add-on registration ignored");
                return None;
            }
        };
        let password = self
            .key
            .addon_password(&registration.addon, &registration.nonce);
        let key = self.key.addon_key(&registration.addon, &registration.nonce);
        let broker_ca = self.broker_ca_pem();
        let step = addon_identity::step(
            &registration,
            &password,
            &key,
            broker_ca.as_deref(),
            &self.cfg,
            t,
        );
        match step.ask {
            None => {
                self.addon_asks.remove(&registration.addon);
            }
            Some(ask) => {
                let asked = (ask.password_sha256.clone(), ask.public_key.clone());
                let asked_recently = self.addon_asks.get(&ask.addon).is_some_and(|(a, at)| {
                    *a == asked
                        && t.signed_duration_since(*at).to_std().unwrap_or_default()
                            < self.cfg.join_retry
                });
                if !asked_recently
                    && self.publisher.is_some()
                    && let Ok(event) = self.id.addon_registration(
                        &ask.addon,
                        &ask.password_sha256,
                        &ask.public_key,
                        &registration.nonce,
                        t,
                    )
                    && self.send(&event)
                {
                    tracing::info!(addon = %ask.addon, identity = %registration.identity(), "asked the hub for the add-on's MQTT identity");
                    self.addon_asks.insert(ask.addon, (asked, t));
                }
            }
        }
        step.write.map(|secret| *secret)
    }

    /// The CA the agent trusts its broker with, as PEM: its `--broker-ca-file`, or, when it
    /// trusts the broker by a pin that is the pin of the hub's CA it learnt (the hub's own
    /// broker), that CA.
    fn broker_ca_pem(&self) -> Option<String> {
        if let Some(file) = &self.cfg.tls.ca_file {
            return std::fs::read_to_string(file).ok();
        }
        let signer = self.trust.signer()?;
        (self.cfg.tls.ca_pin.as_ref() == Some(&signer.ca_pin()))
            .then(|| crate::registration::key::pem("CERTIFICATE", &signer.ca))
    }

    async fn remove_bundle(
        &mut self,
        desired: DesiredBundle,
        inventory: Vec<ResourceRef>,
        t: DateTime<Utc>,
    ) {
        self.applied_marks.remove(&desired.resource_id);
        let removals = plan_delete(&desired.bundle, &inventory);
        let mut remaining = Vec::new();
        let mut deleted = 0u64;
        for removal in &removals {
            match remove_object(&self.applier, removal).await {
                Ok(()) => {
                    if matches!(removal, RemoveAction::Delete { .. }) {
                        deleted += 1;
                    }
                }
                Err(ApplyError::Terminating(key)) => {
                    tracing::debug!(resource = %key, "still being deleted");
                    remaining.push(removal.resource().clone());
                }
                Err(e) => {
                    tracing::warn!(resource = %removal.resource().key(), error = %e, "delete failed; retried next reconcile");
                    remaining.push(removal.resource().clone());
                }
            }
        }
        self.bump(|c| c.objects_deleted += deleted);
        let previous = self
            .outbox
            .get(&desired.resource_id)
            .map(|r| r.status.clone());
        let envelope = Envelope {
            resource_version: desired.resource_version,
            source: desired.source.clone(),
            metadata: desired.metadata.clone(),
        };
        if !remaining.is_empty() {
            if let Err(e) = self.store.put_inventory(&desired.resource_id, &remaining) {
                tracing::error!(error = %e, "cannot store the inventory");
            }
            // As OCM's work agent: the hub sees the work being deleted until it is gone.
            let waiting: Vec<String> = remaining
                .iter()
                .map(|r| match r.namespace.as_str() {
                    "" => format!("{} {}", r.kind, r.name),
                    ns => format!("{} {ns}/{}", r.kind, r.name),
                })
                .collect();
            let status = deleting_status(
                previous.as_ref(),
                &waiting,
                desired.generation,
                Time::new(t),
            );
            self.outbox
                .record(&desired.resource_id, envelope, status, false);
            return;
        }
        let status = deleted_status(previous.as_ref(), desired.generation, Time::new(t));
        self.outbox
            .record(&desired.resource_id, envelope, status, true);
        let tombstone = Tombstone {
            resource_version: desired.resource_version,
            decided_at: desired.decided_at,
        };
        if let Err(e) = self.store.forget(&desired.resource_id, &tombstone) {
            tracing::error!(error = %e, "cannot forget a deleted bundle");
        }
        tracing::info!(resource_id = %desired.resource_id, "bundle deleted");
        self.bump(|c| c.bundles_deleted += 1);
    }

    /// Publishes pending statuses (when connected) and saves the outbox.
    pub(crate) fn flush_outbox(&mut self, t: DateTime<Utc>) {
        if self.publisher.is_some() {
            for (rid, record) in self.outbox.pending() {
                let seq = self.sequence.next_string(t.timestamp_millis());
                let event = self.id.status_event(&rid, &record, seq, t);
                match event {
                    Ok(ev) => {
                        if !self.send(&ev) {
                            break;
                        }
                        self.outbox.mark_sent(&rid);
                        self.bump(|c| c.statuses_published += 1);
                    }
                    Err(e) => {
                        tracing::error!(error = %e, resource_id = %rid, "cannot build a status event");
                        self.outbox.mark_sent(&rid);
                    }
                }
            }
        }
        for (rid, record) in self.outbox.take_dirty() {
            if let Err(e) = self.store.put_status(&rid, record.as_ref()) {
                tracing::error!(error = %e, "cannot store the outbox");
            }
        }
    }

    pub(crate) fn send_spec_resync(&mut self, t: DateTime<Utc>) {
        let versions = match self.store.all_desired() {
            Ok(all) => all
                .into_iter()
                .map(|d| ResourceVersion {
                    resource_id: d.resource_id,
                    resource_version: d.resource_version,
                })
                .collect(),
            Err(e) => {
                tracing::error!(error = %e, "cannot read the store");
                return;
            }
        };
        let offer = self.transfer_offer();
        if let Ok(ev) = self.id.spec_resync_request(versions, offer, t)
            && self.send(&ev)
        {
            self.bump(|c| c.spec_resyncs_sent += 1);
        }
    }
}

/// How a reconcile of the version on the cluster is reported while a newer one waits.
struct HeldReport<'a> {
    /// The version that waits (stored with its `waiting`): the status is reported for it.
    latest: &'a DesiredBundle,
    /// `Held=True` for it.
    condition: Condition,
}

/// The envelope of `desired`'s status events.
fn envelope(desired: &DesiredBundle) -> Envelope {
    Envelope {
        resource_version: desired.resource_version,
        source: desired.source.clone(),
        metadata: desired.metadata.clone(),
    }
}

/// Whether the work's removal may go ahead while updates are held
/// ([`maintenance::ANNOTATION_DELETE_WHILE_HELD`]).
fn delete_while_held(desired: &DesiredBundle) -> bool {
    desired.metadata.as_ref().is_some_and(|m| {
        m.annotations
            .get(maintenance::ANNOTATION_DELETE_WHILE_HELD)
            .is_some_and(|v| v == "true")
    })
}

/// `Applied=True Available=False ...`: a work's conditions in one short line for the log.
fn conditions_text(conditions: &[ocm_edge_schemas::api::meta::Condition]) -> String {
    conditions
        .iter()
        .map(|c| format!("{}={}", c.type_, c.status))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Carries out one removal: deletes the object (foreground) and checks it is gone; an orphaned
/// one is left as it is.
///
/// # Errors
/// The API's error, or one saying the object is still being deleted (finalizers running).
pub(crate) async fn remove_object(
    applier: &AnyApplier,
    removal: &RemoveAction,
) -> Result<(), ApplyError> {
    match removal {
        RemoveAction::Orphan { .. } => Ok(()),
        RemoveAction::Delete {
            resource,
            propagation,
        } => {
            applier.delete(resource, *propagation).await?;
            // Foreground deletion finishes when the object is gone (finalizers ran).
            match applier.get(resource, Utc::now()).await? {
                None => Ok(()),
                Some(_) => Err(ApplyError::Terminating(resource.key())),
            }
        }
    }
}

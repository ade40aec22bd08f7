//! The hub task ([`HubLoop`]): one task owns the [`HubCore`] and the [`Store`] and is fed by one
//! channel. It takes what has arrived in one batch, plans each item with the core, applies it,
//! writes the batch's records in one redb transaction, and only then publishes and answers:
//! nothing is announced that is not stored. Between batches it ticks the core at the next
//! availability deadline or placement / rollout requeue time, flushes deferred writes and
//! publishes the dashboards.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use ocm_edge_mqtt::{Publication, Publisher};
use ocm_edge_schemas::admin::{AdminErrorKind, AdminResponse};
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::chunks::{self, TransferOffer};
use ocm_edge_schemas::wire::mqtt::APPLICATION_JSON;
use tokio::sync::{mpsc, watch};

use super::intake::Inbound;
use super::replies::{Answered, PendingResponse};
use super::revocation::crl_refresh_due;
use super::{EmbeddedBroker, HubError, MAX_BATCH, MIN_TICK, RESCAN_EVERY, events};
use crate::admin::auth::Authenticator;
use crate::core::{AgentInput, Change, HubCore, Outbound, Presence, Record, counter};
use crate::dashboard;
use crate::metrics::{Commit, HubMetrics};
use crate::pki::signing::EventSigner;
use crate::registration::certificates::RevokedCertificate;
use crate::registration::cluster_ca::ClusterCa;
use crate::registration::logins::{Standing, Standings};
use crate::store::Store;

/// The task that owns the core.
pub(super) struct HubLoop {
    pub(super) dashboard: bool,
    pub(super) dashboards: dashboard::Dashboards,
    /// SUBACKs handled so far (for [`HubHandle::subscribed`]).
    pub(super) subscribed: watch::Sender<u64>,
    pub(super) core: HubCore,
    pub(super) store: Store,
    pub(super) publisher: Publisher,
    pub(super) inbound: mpsc::UnboundedReceiver<Inbound>,
    /// Which intake sessions have had a SUBACK since the hub started.
    pub(super) intakes_subscribed: Vec<bool>,
    /// Since when batches stored with [`Store::write_deferred`] wait for an fsync.
    pub(super) unflushed_since: Option<std::time::Instant>,
    /// [`HubConfig::report_flush_every`].
    pub(super) flush_every: Duration,
    /// The spec clock as last stored ([`crate::work::spec_clock`]).
    pub(super) stored_spec_clock: Option<chrono::DateTime<Utc>>,
    /// The chunked-transfer offer of each cluster's agent, from its last spec resync request
    /// (in memory: an agent offers again at every reconnect).
    pub(super) transfers: HashMap<String, TransferOffer>,
    /// Checks admin requests' credentials; `None` with [`AdminAuth::InsecureOpen`].
    pub(super) authenticator: Option<Authenticator>,
    /// The answers to recent changes, so that a resend or a replay is not carried out twice.
    pub(super) answered: Answered,
    /// Signs every event sent to agents.
    pub(super) signer: Arc<EventSigner>,
    /// The clusters' standings (bound agent keys) the intakes and the embedded broker check
    /// against, kept up to date with the clusters.
    pub(super) keys: Standings,
    /// The embedded broker when it has logins ([`HubLogins`]): the hub makes its sessions agree
    /// with each change of a cluster's standing.
    pub(super) login_broker: Option<EmbeddedBroker>,
    /// Issues clusters' certificates and writes their revocation list.
    pub(super) cluster_ca: Arc<ClusterCa>,
    /// Drops revoked clusters' sessions on the external broker's certificate listener.
    pub(super) evictor: Option<mpsc::UnboundedSender<Vec<crate::registration::evict::Revoked>>>,
    /// Whether the broker is another process (whose sessions the hub cannot drop itself).
    pub(super) external_broker: bool,
    /// The revoked certificates as last written to the revocation list.
    pub(super) written_crl: Vec<RevokedCertificate>,
    /// When the revocation list was last written (rewritten after [`CRL_REFRESH`] even when
    /// nothing changed, so the file never nears its end).
    pub(super) crl_written_at: chrono::DateTime<Utc>,
    pub(super) stopped: watch::Receiver<bool>,
    /// The Prometheus instruments (`--metrics-listen`); kept whether or not anything scrapes.
    pub(super) metrics: Arc<HubMetrics>,
}

#[derive(Default)]
pub(super) struct Batch {
    pub(super) change: Change,
    pub(super) responses: Vec<PendingResponse>,
    pub(super) subscribed: bool,
    /// Made only of agent reports that the agents give again when a restarted hub asks (work
    /// statuses, on the status resync; lease renewals, every lease period) and of admin requests
    /// that change nothing (reads), deciding nothing and publishing nothing: stored without its
    /// own fsync ([`Store::write_deferred`]), made durable within
    /// [`HubConfig::report_flush_every`] or by the next batch that is not. A crash loses at most
    /// those reports, and the resync brings them back; what the hub decides is always on disk
    /// before anyone hears of it (a read may show a report not yet on disk, as between flushes).
    pub(super) deferrable: bool,
    /// Spec resync requests in the batch, answered once it is published (their duration is
    /// measured from when the batch was taken).
    pub(super) spec_resyncs: u32,
    pub(super) taken_at: Option<std::time::Instant>,
}

impl HubLoop {
    pub(super) async fn run(mut self) -> Result<(), HubError> {
        let mut items = Vec::with_capacity(MAX_BATCH);
        let rescan = chrono::Duration::from_std(RESCAN_EVERY).unwrap_or_default();
        let mut deadline: Option<chrono::DateTime<Utc>> = None;
        let mut last_scan: Option<chrono::DateTime<Utc>> = None;
        loop {
            let now = Utc::now();
            let due =
                deadline.is_some_and(|d| d <= now) || last_scan.is_none_or(|at| now - at >= rescan);
            if due {
                if crl_refresh_due(self.crl_written_at, now) {
                    let listed = self.core.revoked_certificates(now);
                    self.write_crl(listed, now);
                }
                let (tick, next) = self.tick(now);
                deadline = next;
                last_scan = Some(now);
                if !tick.is_empty() {
                    let batch = Batch {
                        change: tick,
                        ..Batch::default()
                    };
                    self.commit(batch).await?;
                }
            }
            // The floor keeps a deadline that is already due from spinning the loop; the cap
            // finds deadlines that changes since the last scan brought in.
            let sleep_for = deadline.map_or(RESCAN_EVERY, |d| {
                (d - Utc::now()).to_std().unwrap_or(Duration::ZERO)
            });
            let mut sleep_for = sleep_for.clamp(MIN_TICK, RESCAN_EVERY);
            if let Some(since) = self.unflushed_since {
                let due = since + self.flush_every;
                let now = std::time::Instant::now();
                if due <= now {
                    self.flush()?;
                } else {
                    sleep_for = sleep_for.min(due - now);
                }
            }
            if let Some(due) = self.dashboards.due() {
                let now = std::time::Instant::now();
                if due <= now {
                    self.publish_dashboards().await;
                } else {
                    sleep_for = sleep_for.min(due - now);
                }
            }
            tokio::select! {
                _ = self.stopped.changed() => break,
                n = self.inbound.recv_many(&mut items, MAX_BATCH) => {
                    if n == 0 {
                        break;
                    }
                    let started = std::time::Instant::now();
                    let batch = self.plan_batch(items.drain(..));
                    let planned = started.elapsed();
                    let records = batch.change.records.len();
                    self.commit(batch).await?;
                    tracing::debug!(
                        events = n,
                        records,
                        plan_ms = planned.as_millis() as u64,
                        total_ms = started.elapsed().as_millis() as u64,
                        "batch handled"
                    );
                }
                () = tokio::time::sleep(sleep_for) => {}
            }
        }
        self.flush()?;
        tracing::info!("hub stopped");
        Ok(())
    }

    /// Makes the deferred batches durable.
    fn flush(&mut self) -> Result<(), HubError> {
        if self.unflushed_since.take().is_some() {
            let flushing = std::time::Instant::now();
            self.store.flush().map_err(|e| {
                tracing::error!(error = %e, "hub store failed; stopping");
                HubError::from(e)
            })?;
            self.metrics.committed(Commit::Flush, flushing.elapsed());
        }
        Ok(())
    }

    /// Availability deadlines, then placements and replica sets when something changed or one
    /// of them is due. Returns the (applied) change and when to tick next.
    fn tick(&mut self, now: chrono::DateTime<Utc>) -> (Change, Option<chrono::DateTime<Utc>>) {
        let (tick, deadline) = self.core.availability_tick(now);
        let mut change = self.stage(tick);
        let due = self.core.fleet_requeue_at().is_some_and(|t| t <= now);
        if due || touches_fleet(&change) {
            let fleet = self.reconcile_fleet(now);
            change.extend(fleet);
        }
        let next = match (deadline, self.core.fleet_requeue_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (change, next)
    }

    /// Applies a change to the core and returns it for storing and publishing.
    pub(super) fn stage(&mut self, change: Change) -> Change {
        self.core.apply(&change.records);
        self.write_crl_if_revocations_changed();
        change
    }

    /// The fleet's reconcile pass (which applies its own records), then the revocation list
    /// again if the pass changed it (an add-on's identity unbound or forgotten there).
    fn reconcile_fleet(&mut self, now: chrono::DateTime<Utc>) -> Change {
        let fleet = self.core.reconcile_fleet(now);
        self.write_crl_if_revocations_changed();
        fleet
    }

    /// Rewrites the revocation list when the records applied since the last look may have
    /// changed it (the core tells: revoked, issued or dropped certificates).
    fn write_crl_if_revocations_changed(&mut self) {
        if self.core.take_revocations_changed() {
            self.write_crl_if_changed();
        }
    }

    fn plan_batch(&mut self, items: impl Iterator<Item = Inbound>) -> Batch {
        let now = Utc::now();
        let mut batch = Batch {
            taken_at: Some(std::time::Instant::now()),
            ..Batch::default()
        };
        let mut reports_only = true;
        for item in items {
            // An admin request is judged by what it changes (below); a scrape changes nothing.
            reports_only &=
                matches!(item, Inbound::Admin(_) | Inbound::Scrape(_)) || is_report(&item);
            let change = match item {
                Inbound::Subscribed { intake, refused } => {
                    if !refused.is_empty() {
                        tracing::error!(
                            ?refused,
                            "the broker refused the hub's subscriptions: check the hub's ACL (broker-config/)"
                        );
                    }
                    self.intakes_subscribed[intake] = true;
                    // Resync only once every intake listens, or the answers could go unheard;
                    // once per batch, however many sessions came back in it.
                    if self.intakes_subscribed.iter().all(|s| *s) {
                        batch.subscribed = true;
                    }
                    Change::default()
                }
                Inbound::Malformed => self.core.count(counter::MALFORMED),
                Inbound::Refused => self.core.count(counter::AGENT_SIGNATURE_REFUSED),
                Inbound::AddOnScoreRefused => self.core.count(counter::ADDON_SCORES_REFUSED),
                Inbound::Scrape(reply) => {
                    // The fleet as this batch has left it so far (staged, maybe not yet stored:
                    // as a read between two flushes shows it).
                    let _ = reply.send(crate::metrics::fleet::FleetGauges::of(&self.core));
                    Change::default()
                }
                Inbound::Admin(received) => {
                    let change = self.plan_admin(*received, now, &mut batch);
                    // A read (or anything else that changes nothing) decides nothing: its answer
                    // shows the reports as the hub holds them, durable or not, like any read
                    // between two flushes. A dashboard polling the hub must not cost an fsync
                    // for every batch of statuses its requests happen to land in.
                    reports_only &= change.is_empty();
                    change
                }
                Inbound::Agent(Some(mut input)) => {
                    match &input {
                        AgentInput::JoinRequest { .. } => self.metrics.join_request(),
                        AgentInput::SpecResyncRequest { .. } => batch.spec_resyncs += 1,
                        _ => {}
                    }
                    // An agent offers chunked transfers in its birth (first thing on a new
                    // connection) and again, with the chunks it holds, in its spec resync.
                    if let AgentInput::SpecResyncRequest {
                        cluster, transfer, ..
                    }
                    | AgentInput::Presence {
                        cluster,
                        transfer,
                        presence: Presence { online: true, .. },
                    } = &mut input
                    {
                        match transfer.take() {
                            Some(offer) => self.transfers.insert(cluster.clone(), offer),
                            None => self.transfers.remove(cluster),
                        };
                    }
                    self.core.handle_agent(input, now)
                }
                Inbound::Agent(None) => Change::default(),
            };
            let change = self.stage(change);
            batch.change.extend(change);
        }
        if batch.subscribed {
            // The built-in sets before the views: a cluster labelled into `default` here is
            // published once, as it ends up.
            let builtin = self.core.ensure_builtin_cluster_sets(now);
            let builtin = self.stage(builtin);
            batch.change.extend(builtin);
            let mut c = self.core.all_hub_views();
            let unconfirmed = self.core.unconfirmed_specs(now);
            if !unconfirmed.outbound.is_empty() {
                tracing::info!(
                    works = unconfirmed.outbound.len(),
                    "sending again the specs no agent has confirmed yet"
                );
            }
            c.extend(unconfirmed);
            c.extend(self.core.status_resync_all());
            let c = self.stage(c);
            batch.change.extend(c);
        }
        if touches_fleet(&batch.change) {
            // Placements follow clusters, taints, sets, bindings, scores; rollouts follow
            // decisions and work statuses. reconcile_fleet applies its own records.
            let fleet = self.reconcile_fleet(now);
            reports_only &= fleet.is_empty();
            batch.change.extend(fleet);
        }
        superseded_views_dropped(&mut batch.change.outbound);
        batch.deferrable = reports_only
            && !batch.subscribed
            && batch.change.outbound.is_empty()
            && batch.change.records.iter().all(|r| {
                matches!(
                    r,
                    Record::Work(_) | Record::Cluster(_) | Record::Counters(_)
                )
            });
        batch
    }

    /// Stores the batch, then publishes its messages and answers.
    async fn commit(&mut self, mut batch: Batch) -> Result<(), HubError> {
        // The spec events of this batch moved the spec clock: stored with the batch, so a
        // restarted hub stamps later ones even if its clock went back meanwhile.
        let spec_clock = self.core.spec_clock();
        if let Some(t) = spec_clock.filter(|_| spec_clock > self.stored_spec_clock) {
            batch.change.records.push(Record::SpecClock(t));
        }
        // A batch that changes nothing (reads, unchanged statuses) writes nothing: what it
        // answers is either durable already or an agent's report the resync gives again.
        if !batch.change.records.is_empty() {
            let writing = std::time::Instant::now();
            let stored = if batch.deferrable {
                self.store.write_deferred(&batch.change.records)
            } else {
                self.store.write(&batch.change.records)
            };
            let kind = if batch.deferrable {
                Commit::Deferred
            } else {
                Commit::Durable
            };
            self.metrics.committed(kind, writing.elapsed());
            match stored {
                Ok(()) if batch.deferrable => {
                    self.unflushed_since
                        .get_or_insert_with(std::time::Instant::now);
                }
                // A durable commit carries every deferred one before it.
                Ok(()) => self.unflushed_since = None,
                Err(e) => {
                    tracing::error!(error = %e, "hub store failed; stopping");
                    for r in batch.responses {
                        let failed = AdminResponse::error(
                            AdminErrorKind::Internal,
                            format!("the hub could not store the change: {e}"),
                        );
                        self.respond(r.topic, r.correlation_data, &failed).await;
                    }
                    return Err(e.into());
                }
            }
        }
        self.stored_spec_clock = self.stored_spec_clock.max(spec_clock);
        let stored_at = std::time::Instant::now();
        // Standings first, and the broker's sessions made to agree with them, before anything of
        // this batch is published: a cluster accepted now gets its works only through a session
        // that proved the bound key; a denied one loses its session and what was queued for it.
        let changed = self
            .keys
            .update(batch.change.records.iter().filter_map(|r| match r {
                Record::Cluster(c) => Some(&**c),
                _ => None,
            }));
        // A removed cluster's login goes with its record: its agent gets back in only as a
        // cluster asking to join (a join token), its session and what was queued for it dropped.
        let removed = self
            .keys
            .forget(super::forgotten_clusters(&batch.change.records));
        // An add-on identity unbound (its add-on disabled, its cluster removed) or bound to
        // another password loses its session before anything else of this batch goes out.
        let mut unbound = self
            .keys
            .update_addons(super::addon_bindings(&batch.change.records));
        unbound.extend(
            self.keys
                .update_addon_names(super::addon_names(&batch.change.records)),
        );
        if let Some(broker) = &self.login_broker {
            for identity in &unbound {
                tracing::info!(%identity, "add-on MQTT identity revoked; its session is dropped");
                broker.drop_session(identity).await;
            }
            for (cluster, standing) in &changed {
                let client_id = crate::registration::logins::agent_client_id(cluster);
                match standing {
                    Some(Standing::Denied) => broker.drop_session(&client_id).await,
                    Some(Standing::Accepted(_)) => broker.enforce_login(&client_id).await,
                    None => {}
                }
            }
            for cluster in &removed {
                let client_id = crate::registration::logins::agent_client_id(cluster);
                broker.drop_session(&client_id).await;
            }
        }
        let now = Utc::now();
        let source = self.core.config().source_id.clone();
        for out in &batch.change.outbound {
            match events::encode_outbound(&source, out, now, &self.signer) {
                Ok(msg) => {
                    self.metrics.sent(&msg);
                    for piece in self.pieces(out, msg) {
                        if let Err(e) = self.publisher.publish(piece).await {
                            tracing::warn!(error = %e, "publish failed");
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, kind = outbound_kind(out), "cannot encode"),
            }
        }
        if let Some(taken_at) = batch.taken_at.filter(|_| batch.spec_resyncs > 0) {
            let took = taken_at.elapsed();
            for _ in 0..batch.spec_resyncs {
                self.metrics.spec_resynced(took);
            }
        }
        if !batch.change.outbound.is_empty() {
            tracing::debug!(
                messages = batch.change.outbound.len(),
                publish_ms = stored_at.elapsed().as_millis() as u64,
                "batch published"
            );
        }
        if self.dashboard {
            self.dashboards
                .changed(&batch.change.records, std::time::Instant::now());
        }
        for r in batch.responses {
            self.respond(r.topic, r.correlation_data, &r.response).await;
        }
        if batch.subscribed {
            if self.dashboard {
                self.dashboards.forget_published();
            }
            self.subscribed.send_modify(|n| *n += 1);
        }
        Ok(())
    }

    /// What goes on the wire for one outbound message: the message itself, or a head and the
    /// chunks its agent does not hold yet when it is a spec larger than the agent's offered
    /// chunk size.
    fn pieces(&mut self, out: &Outbound, msg: MqttMessage) -> Vec<MqttMessage> {
        let Outbound::Spec(spec) = out else {
            return vec![msg];
        };
        let Some(offer) = self.transfers.get_mut(&spec.cluster) else {
            return vec![msg];
        };
        if msg.payload.len() <= offer.chunk_bytes as usize {
            return vec![msg];
        }
        // What the agent held when it asked; used once (afterwards it may have finished and
        // dropped them, so a later resend sends everything). The payload is hashed here only
        // when the agent holds something (`split` hashes it anyway): a fleet-wide write of a
        // large work hashes each cluster's copy once, not twice.
        let held = if offer.held.is_empty() {
            Default::default()
        } else {
            offer
                .held
                .remove(&chunks::digest(&msg.payload))
                .unwrap_or_default()
        };
        let bytes = msg.payload.len();
        let pieces = chunks::split(msg, offer.chunk_bytes, &held);
        let sending = pieces.len().saturating_sub(1);
        self.metrics.chunked(sending as u64);
        if held.is_empty() {
            tracing::debug!(
                cluster = %spec.cluster,
                work = %spec.resource_id,
                version = spec.resource_version,
                bytes,
                chunks = sending,
                "sending a spec in chunks"
            );
        } else {
            tracing::info!(
                cluster = %spec.cluster,
                work = %spec.resource_id,
                version = spec.resource_version,
                bytes,
                held = held.len(),
                sending,
                "resuming a chunked spec transfer: the agent holds part of it"
            );
        }
        pieces
    }

    /// Publishes the dashboard views that changed, when due.
    async fn publish_dashboards(&mut self) {
        for m in self
            .dashboards
            .take_due(&self.core, std::time::Instant::now())
        {
            let retained = Publication {
                message: MqttMessage {
                    content_type: (!m.payload.is_empty()).then(|| APPLICATION_JSON.to_owned()),
                    topic: m.topic,
                    payload: m.payload,
                    user_properties: Vec::new(),
                },
                retain: true,
                ..Publication::default()
            };
            if let Err(e) = self.publisher.publish(retained).await {
                tracing::warn!(error = %e, "dashboard publish failed");
            }
        }
    }
}

/// Whether a change may move a placement or a rollout: objects, works, or a cluster whose
/// published view changed (acceptance, labels, claims, taints, conditions). Lease renewals that
/// change nothing visible do not.
fn touches_fleet(change: &Change) -> bool {
    change.records.iter().any(|r| {
        matches!(
            r,
            Record::Object(_)
                | Record::ForgetObject(_)
                | Record::Work(_)
                | Record::ForgetWork(_)
                | Record::ForgetCluster(_)
        )
    }) || change
        .outbound
        .iter()
        .any(|o| matches!(o, Outbound::HubView(_)))
}

/// Keeps only the last hub view of each cluster in a batch's messages: an agent that reconnects
/// sends its birth and its cluster status together, each of which may change the view, and the
/// agent needs only the view as it ends up.
fn superseded_views_dropped(outbound: &mut Vec<Outbound>) {
    let mut seen = std::collections::HashSet::new();
    let mut keep: Vec<bool> = outbound
        .iter()
        .rev()
        .map(|o| match o {
            Outbound::HubView(v) => seen.insert(v.metadata.name.clone()),
            _ => true,
        })
        .collect();
    keep.reverse();
    let mut keep = keep.into_iter();
    outbound.retain(|_| keep.next().unwrap_or(true));
}

fn outbound_kind(out: &Outbound) -> &'static str {
    match out {
        Outbound::HubView(_) => "hub view",
        Outbound::Spec(_) => "spec",
        Outbound::StatusResyncRequest { .. } => "status resync request",
    }
}

/// Whether `item` is an agent's report (or a message dropped as malformed or unsigned): what a
/// restarted hub gets again on its resync, so a batch of them alone may wait for its fsync.
fn is_report(item: &Inbound) -> bool {
    matches!(
        item,
        Inbound::Malformed
            | Inbound::Scrape(_)
            | Inbound::Refused
            | Inbound::AddOnScoreRefused
            | Inbound::Agent(
                None | Some(
                    AgentInput::WorkStatus { .. }
                        | AgentInput::LeaseRenewal { .. }
                        | AgentInput::SpecResyncRequest { .. }
                )
            )
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_edge_schemas::api::cluster::ManagedCluster;

    fn view(name: &str, label: &str) -> Outbound {
        let mut c = ManagedCluster::default();
        c.metadata.name = name.to_owned();
        c.metadata.labels.insert("v".to_owned(), label.to_owned());
        Outbound::HubView(Box::new(c))
    }

    #[test]
    fn only_the_last_view_of_each_cluster_in_a_batch_is_sent() {
        let resync = Outbound::StatusResyncRequest {
            cluster: "a".into(),
            hashes: Default::default(),
        };
        let mut out = vec![
            view("a", "1"),
            view("b", "1"),
            resync.clone(),
            view("a", "2"),
        ];
        superseded_views_dropped(&mut out);
        assert_eq!(out, vec![view("b", "1"), resync, view("a", "2")]);
    }
}

//! The agent's side of registration (OCM's `registration/spoke`): the join request (labels,
//! claims and the agent's public key, signed with it), the hub's view of the cluster (accepted,
//! denied, the hub's signing key and the cluster's certificate in it), and the periodic asks:
//! the join request again until a hub answers, the next certificate when due.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::{
    HUB_ACCEPTED_MANAGED_CLUSTER, HUB_DENIED_MANAGED_CLUSTER, ManagedCluster, ManagedClusterClaim,
};
use ocm_edge_schemas::api::meta::is_condition_true;

use super::certificate;
use super::trust::HubSigner;
use crate::applier::Applier;
use crate::config::SIMULATED_LABEL;
use crate::session::{Agent, now};

/// Where the hub stands on this cluster's join request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Registration {
    /// No answer yet (or not asked).
    #[default]
    Unknown,
    /// The hub has the request but has not decided.
    Pending,
    Accepted,
    Denied,
}

impl Agent {
    /// Trusts the hub's signing key from a checked hub view, keeps it, and asks again for the
    /// specs dropped while it was unknown.
    pub(crate) fn learn_signer(&mut self, signer: HubSigner) {
        let pinned = self.cfg.trusted_hub_ca().is_some();
        let first = self.trust.signer().is_none();
        if pinned || !first {
            tracing::info!(key = %signer.key_id(), ca = %signer.ca_pin(), "trusting the hub's signing key");
        } else {
            tracing::warn!(
                key = %signer.key_id(),
                ca = %signer.ca_pin(),
                "no hub CA pin given: trusting the first hub CA seen and keeping it (give --hub-ca-pin or --broker-ca-pin to choose it)"
            );
        }
        if let Err(e) = self.store.put_hub_signer(&signer) {
            tracing::error!(error = %e, "cannot store the hub's signing key; it is trusted until the agent stops");
        }
        self.trust.learn(signer);
    }

    /// Whether the agent asks the hub for its view: until the hub has answered the join
    /// request, while the agent does not know the hub's signing key, and after it dropped an
    /// event signed by a key it does not know (the view carries the hub's current key).
    pub(crate) fn wants_hub_view(&self) -> bool {
        self.trust.needs_signer()
            || self.refused_unknown_signer
            || !matches!(
                self.registration_state(),
                Registration::Accepted | Registration::Denied
            )
    }

    pub(crate) fn registration_state(&self) -> Registration {
        match &self.registration {
            None => Registration::Unknown,
            Some(v) if is_condition_true(&v.status.conditions, HUB_DENIED_MANAGED_CLUSTER) => {
                Registration::Denied
            }
            Some(v)
                if v.spec.hub_accepts_client
                    || is_condition_true(&v.status.conditions, HUB_ACCEPTED_MANAGED_CLUSTER) =>
            {
                Registration::Accepted
            }
            Some(_) => Registration::Pending,
        }
    }

    pub(crate) fn on_hub_view(&mut self, view: ManagedCluster) {
        // A checked view: the agent knows the hub's current key, and asks again for the specs
        // it dropped while it did not.
        if std::mem::take(&mut self.refused_unknown_signer) && self.publisher.is_some() {
            self.send_spec_resync(now());
        }
        if !view.metadata.name.is_empty() && view.metadata.name != self.cfg.cluster_name {
            tracing::warn!(name = %view.metadata.name, "hub view for another cluster dropped");
            self.bump(|c| c.dropped_malformed += 1);
            return;
        }
        if let Err(e) = self.store.put_registration(&view) {
            tracing::error!(error = %e, "cannot store the hub's view");
        }
        if self.take_certificate(&view) && self.cfg.broker_mtls_url.is_some() {
            self.switch_session = true;
        }
        self.take_hub_windows(&view);
        self.registration = Some(view);
        let state = self.registration_state();
        tracing::info!(?state, "hub view of this cluster");
        self.bump(|c| c.registration = state);
    }

    /// Takes the certificate in the hub's view when it is this cluster's and new; true when it
    /// changed.
    pub(crate) fn take_certificate(&mut self, view: &ManagedCluster) -> bool {
        match certificate::from_view(view, &self.cfg.cluster_name, self.key.public_raw()) {
            Ok(Some(cert)) if self.certificate.as_ref() != Some(&cert) => {
                if let Err(e) = certificate::write(&self.cfg.data_dir, &cert) {
                    tracing::error!(error = %e, "cannot write the cluster's certificate");
                    return false;
                }
                tracing::info!(not_after = %cert.not_after, "took the cluster's certificate from the hub");
                self.certificate = Some(cert);
                true
            }
            Ok(_) => false,
            Err(why) => {
                tracing::warn!(%why, "refused the certificate in the hub's view");
                self.bump(|c| c.dropped_malformed += 1);
                false
            }
        }
    }

    pub(crate) fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.cfg.labels.clone();
        if self.applier.simulated() {
            labels.insert(SIMULATED_LABEL.to_owned(), "true".to_owned());
        }
        labels
    }

    pub(crate) fn claims(&self) -> Vec<ManagedClusterClaim> {
        let mut claims = self.cfg.claims.clone();
        if self.applier.simulated() {
            claims.insert(SIMULATED_LABEL.to_owned(), "true".to_owned());
        }
        claims
            .into_iter()
            .map(|(name, value)| ManagedClusterClaim { name, value })
            .collect()
    }

    pub(crate) fn send_join_request(&mut self, t: DateTime<Utc>) {
        let mut cluster = ManagedCluster::new(self.cfg.cluster_name.clone());
        cluster.metadata.labels = self.labels();
        cluster.spec.lease_duration_seconds = self.cfg.lease_duration_seconds;
        cluster.status.cluster_claims = self.claims();
        // The hub binds this key to the cluster when it is accepted.
        cluster.metadata.annotations.insert(
            ocm_edge_schemas::wire::signature::AGENT_KEY_ANNOTATION.to_owned(),
            self.key.public_base64().to_owned(),
        );
        if let Ok(ev) = self.id.join_request(&cluster, t)
            && self.send(&ev)
        {
            self.join_retry.renewed(t);
            self.bump(|c| {
                c.join_requests += 1;
                if c.registration == Registration::Unknown {
                    c.registration = Registration::Pending;
                }
            });
        }
    }

    /// The registration side of the periodic tick: the join request again while no hub has
    /// answered, the next certificate when due, and the switch between `--broker` and the
    /// certificate listener.
    pub(crate) fn registration_tick(&mut self, t: DateTime<Utc>) {
        // A join request sent while no hub was listening is lost (the broker keeps nothing):
        // until the hub has answered, ask again every `join_retry`.
        if self.publisher.is_some() && self.join_retry.due(t) && self.wants_hub_view() {
            self.send_join_request(t);
        }
        // The join request (signed with the bound key) asks for a certificate: after two thirds
        // of the current one's life, or when there is none (an agent accepted before hubs
        // issued them). A hub that refuses (past the grace, until an operator accepts the
        // cluster again) is asked at every `join_retry`; the log says it once per certificate.
        let wants_certificate = match &self.certificate {
            None => self.cfg.broker_mtls_url.is_some(),
            Some(cert) => cert.renewal_due(t),
        };
        if wants_certificate
            && self.publisher.is_some()
            && self.join_retry.due(t)
            && self.registration_state() == Registration::Accepted
        {
            let current = self.certificate.as_ref().map(|c| c.not_after);
            if self.asked_certificate.replace(current) != Some(current) {
                tracing::info!(
                    not_after = ?current,
                    "asking the hub for the cluster's next certificate (--broker-mtls)"
                );
            }
            self.send_join_request(t);
        }
        if let Some(cert) = self.certificate.clone() {
            // Ended while on the certificate's listener and cut off: back to --broker, where
            // the agent gets in with its key and asks for a new one.
            if self.on_mtls && self.publisher.is_none() && !cert.valid_at(t) {
                tracing::warn!(not_after = %cert.not_after, "the cluster's certificate ended; connecting to --broker to get a new one");
                self.switch_session = true;
            }
            // Refused a while ago: try the certificate again after `join_retry` when cut off on
            // --broker too (a broker that lets the cluster in by its certificate only), after ten
            // times that while the hub still has the cluster accepted (a refusal that was the
            // broker's passing fault, such as a revocation list it let lapse).
            let retry = chrono::Duration::from_std(self.cfg.join_retry).unwrap_or_default();
            let accepted = self.registration_state() == Registration::Accepted;
            let connected = self.publisher.is_some();
            if !self.on_mtls
                && cert.valid_at(t)
                && self.refused_certificate.as_ref().is_some_and(|(pem, at)| {
                    *pem == cert.pem
                        && if connected {
                            accepted && t - *at >= retry * 10
                        } else {
                            t - *at >= retry
                        }
                })
            {
                tracing::info!("trying the cluster's certificate again (--broker-mtls)");
                self.refused_certificate = None;
                self.switch_session = true;
            }
        }
    }
}

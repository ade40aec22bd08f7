//! Each accepted cluster's TLS client certificate, for brokers that take a certificate as the
//! cluster's identity (Mosquitto's `use_identity_as_username`, `broker-config/mosquitto/`).
//!
//! The agent's join request carries its Ed25519 public key and is signed with it (proof of
//! possession, what a CSR proves); `cluster accept` binds that key, and the hub then issues a
//! certificate for that same key from its **cluster CA** (CN = the cluster, clientAuth, 30 days by
//! default, [`crate::registration::cluster_ca`]), and sends it in its signed view of the cluster
//! ([`ocm_edge_schemas::wire::signature::CLUSTER_CERTIFICATE_ANNOTATION`]). The agent asks again
//! (its join request, signed with the bound key) once two thirds of the certificate's life have
//! passed ([`renewal_due`]), and the hub issues a new one. An agent that was offline past its
//! certificate's end still gets a new one on its own within the grace
//! ([`CertificatePolicy::grace`]); later, only an operator's `cluster accept` issues it (the hub
//! logs that the cluster waits for it, `cluster get` shows it). `cluster deny` revokes the
//! certificate: its serial goes into the cluster CA's revocation list, which the hub rewrites
//! ([`HubCore::revoked_certificates`]) for the broker to read.
//!
//! No IO here: the issuer is given to the core ([`ClusterCertIssuer`]) and takes `now`.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::core::{ClusterRecord, ClusterState, HubCore};

/// A client certificate the hub issued to a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCertificate {
    /// The certificate then the cluster CA, PEM.
    pub pem: String,
    /// Its serial number, hex.
    pub serial: String,
    pub not_before: DateTime<Utc>,
    pub not_after: DateTime<Utc>,
    /// The agent key (base64) it certifies.
    pub agent_key: String,
}

/// A certificate revoked before its end (its cluster was denied or took another key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevokedCertificate {
    pub serial: String,
    pub revoked_at: DateTime<Utc>,
    /// Dropped from the list once past: the certificate is refused for its dates then.
    pub not_after: DateTime<Utc>,
}

pub use ocm_edge_schemas::wire::signature::certificate_renewal_due as renewal_due;

/// Issues cluster certificates (the hub's cluster CA; a fake one in core tests).
pub trait ClusterCertIssuer: Send + Sync {
    /// A certificate for `cluster`'s agent key (base64 of the 32-byte Ed25519 public key),
    /// valid from about `now` for `validity`.
    ///
    /// # Errors
    /// Why it cannot be issued (a key that is no Ed25519 key, the CA unreadable).
    fn issue(
        &self,
        cluster: &str,
        agent_key: &str,
        validity: Duration,
        now: DateTime<Utc>,
    ) -> Result<ClusterCertificate, String>;
}

/// How the core issues cluster certificates.
#[derive(Clone)]
pub struct CertificatePolicy {
    pub issuer: Arc<dyn ClusterCertIssuer>,
    /// How long a certificate is valid.
    pub validity: Duration,
    /// How long after its certificate's end a cluster still gets a new one by asking (signed
    /// with its bound key) without an operator.
    pub grace: Duration,
}

impl std::fmt::Debug for CertificatePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificatePolicy")
            .field("validity", &self.validity)
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

/// Default validity of a cluster certificate.
pub const DEFAULT_VALIDITY: Duration = Duration::days(30);
/// Default grace after a certificate's end.
pub const DEFAULT_GRACE: Duration = Duration::days(90);

/// Who asks for a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asked {
    /// The agent (its join request): within the grace only.
    ByAgent,
    /// An operator's `cluster accept`: always.
    ByOperator,
}

impl HubCore {
    /// Issues `record`'s certificate when it has a bound key and no certificate for it, or one
    /// due for renewal (and, asked by the agent, not past the grace). Revokes a certificate of
    /// another key.
    pub(crate) fn refresh_certificate(
        &self,
        record: &mut ClusterRecord,
        asked: Asked,
        now: DateTime<Utc>,
    ) {
        let Some(policy) = self.certificate_policy() else {
            return;
        };
        let Some(key) = record.bound_agent_key().map(str::to_owned) else {
            return;
        };
        prune(&mut record.revoked_certificates, now);
        if let Some(current) = &record.certificate {
            if current.agent_key != key {
                revoke(record, now);
            } else if !renewal_due(current.not_before, current.not_after, now) {
                return;
            } else if asked == Asked::ByAgent && now > current.not_after + policy.grace {
                tracing::warn!(
                    cluster = %record.name,
                    expired = %current.not_after,
                    "the cluster asks for a new certificate, but its certificate ended more than \
                     the grace ago: it waits for an operator (`ocm-edge cluster accept {}`)",
                    record.name
                );
                return;
            }
        }
        match policy
            .issuer
            .issue(&record.name, &key, policy.validity, now)
        {
            Ok(cert) => {
                tracing::info!(
                    cluster = %record.name,
                    serial = %cert.serial,
                    not_after = %cert.not_after,
                    "issued the cluster's certificate"
                );
                record.certificate = Some(cert);
            }
            Err(e) => tracing::error!(
                cluster = %record.name,
                error = %e,
                "cannot issue the cluster's certificate; it keeps the one it has"
            ),
        }
    }

    /// Every certificate revoked and not yet ended, with its cluster, sorted by serial: the
    /// cluster CA's revocation list, and whose sessions the hub drops on an external broker.
    pub fn revoked_certificates(&self, now: DateTime<Utc>) -> Vec<(String, RevokedCertificate)> {
        // Add-on identities' certificates are kept with removed clusters' from their issue on,
        // and revoked once no cluster add-on holds them (disabled, removed, or replaced).
        let held: std::collections::BTreeSet<String> = self
            .cluster_addons()
            .flat_map(crate::addon::held_serials)
            .collect();
        let mut all: Vec<(String, RevokedCertificate)> = self
            .clusters()
            .flat_map(|c| c.revoked_certificates.iter().map(|r| (c.name.clone(), r)))
            // A removed cluster's record is gone; its certificates stay revoked until they end.
            .chain(
                self.removed_revoked()
                    .iter()
                    .filter(|(_, r)| !held.contains(&r.serial))
                    .map(|(c, r)| (c.clone(), r)),
            )
            .filter(|(_, r)| r.not_after > now)
            .map(|(c, r)| (c, r.clone()))
            .collect();
        all.sort_by(|a, b| a.1.serial.cmp(&b.1.serial));
        all
    }
}

impl HubCore {
    /// [`waits_for_operator`] with the hub's grace (false when the hub issues no certificates).
    pub fn certificate_waits_for_operator(
        &self,
        record: &ClusterRecord,
        now: DateTime<Utc>,
    ) -> bool {
        self.certificate_policy()
            .is_some_and(|p| waits_for_operator(record, p.grace, now))
    }
}

/// Moves `record`'s certificate to its revoked ones.
pub(crate) fn revoke(record: &mut ClusterRecord, now: DateTime<Utc>) {
    if let Some(cert) = record.certificate.take() {
        tracing::info!(cluster = %record.name, serial = %cert.serial, "revoked the cluster's certificate");
        record.revoked_certificates.push(RevokedCertificate {
            serial: cert.serial,
            revoked_at: now,
            not_after: cert.not_after,
        });
    }
    prune(&mut record.revoked_certificates, now);
}

fn prune(revoked: &mut Vec<RevokedCertificate>, now: DateTime<Utc>) {
    revoked.retain(|r| r.not_after > now);
}

/// Whether the cluster waits for an operator to issue its certificate (it has a bound key and
/// its certificate ended more than `grace` ago), for `cluster get`.
pub fn waits_for_operator(record: &ClusterRecord, grace: Duration, now: DateTime<Utc>) -> bool {
    record.acceptance == ClusterState::Accepted
        && record
            .certificate
            .as_ref()
            .is_some_and(|c| now > c.not_after + grace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testkit::*;
    use crate::core::{ClusterState, Record};

    fn core_issuing() -> (crate::core::HubCore, Arc<Counting>) {
        let mut core = core();
        let issuer = issuing(&mut core);
        (core, issuer)
    }

    /// `cluster` asks to join with `key` and is accepted, both at `at`.
    fn join_and_accept(
        core: &mut crate::core::HubCore,
        cluster: &str,
        key: &str,
        at: DateTime<Utc>,
    ) {
        let c = core.handle_agent(join_with_key(cluster, key), at);
        core.apply(&c.records);
        let c = core.accept(cluster, at).unwrap();
        core.apply(&c.records);
    }

    fn view_certificate(change: &crate::core::Change) -> Option<String> {
        change.outbound.iter().find_map(|o| match o {
            crate::core::Outbound::HubView(v) => v
                .metadata
                .annotations
                .get(ocm_edge_schemas::wire::signature::CLUSTER_CERTIFICATE_ANNOTATION)
                .cloned(),
            _ => None,
        })
    }

    #[test]
    fn a_removed_clusters_certificate_stays_revoked_until_it_ends() {
        let (mut core, _) = core_issuing();
        join_and_accept(&mut core, "edge-1", "KEY1", t(0));
        join_and_accept(&mut core, "edge-2", "KEY2", t(0));
        for (cluster, at) in [("edge-1", 10), ("edge-2", 20)] {
            let c = core.remove_cluster(cluster, false, t(at)).unwrap();
            core.apply(&c.records);
        }
        assert!(core.cluster("edge-1").is_none() && core.cluster("edge-2").is_none());
        let listed = core.revoked_certificates(t(30));
        assert_eq!(
            listed
                .iter()
                .map(|(c, r)| (c.as_str(), r.serial.as_str()))
                .collect::<Vec<_>>(),
            [("edge-1", "01"), ("edge-2", "02")],
            "both removals are in the list, the second kept the first"
        );
        assert!(
            core.revoked_certificates(t(0) + Duration::days(31))
                .is_empty(),
            "dropped once the certificates ended"
        );
    }

    #[test]
    fn renewal_is_due_after_two_thirds_of_the_life() {
        let start = t(0);
        let end = start + Duration::days(30);
        assert!(!renewal_due(start, end, start + Duration::days(19)));
        assert!(renewal_due(start, end, start + Duration::days(20)));
        assert!(renewal_due(start, end, end + Duration::days(1)));
    }

    #[test]
    fn accept_issues_a_certificate_for_the_bound_key_and_the_view_carries_it() {
        let (mut core, _) = core_issuing();
        let c = core.handle_agent(join_with_key("edge-1", "KEY1"), t(0));
        core.apply(&c.records);
        assert!(
            core.cluster("edge-1").unwrap().certificate.is_none(),
            "not before accept"
        );
        let change = core.accept("edge-1", t(1)).unwrap();
        assert_eq!(
            view_certificate(&change).as_deref(),
            Some("cert 1 of edge-1 for KEY1")
        );
        core.apply(&change.records);
        let cert = core.cluster("edge-1").unwrap().certificate.clone().unwrap();
        assert_eq!(
            (cert.agent_key.as_str(), cert.serial.as_str()),
            ("KEY1", "01")
        );
    }

    #[test]
    fn the_agent_gets_a_new_certificate_when_it_asks_after_two_thirds_not_before() {
        let (mut core, _) = core_issuing();
        join_and_accept(&mut core, "edge-1", "KEY1", t(0));
        // Asking early changes nothing: the same certificate.
        let early = core.handle_agent(join_with_key("edge-1", "KEY1"), t(0) + Duration::days(10));
        assert_eq!(
            view_certificate(&early).as_deref(),
            Some("cert 1 of edge-1 for KEY1")
        );
        core.apply(&early.records);
        let due = core.handle_agent(join_with_key("edge-1", "KEY1"), t(0) + Duration::days(21));
        assert_eq!(
            view_certificate(&due).as_deref(),
            Some("cert 2 of edge-1 for KEY1")
        );
        core.apply(&due.records);
        // Renewal is no revocation: the old one stays valid until its end.
        assert!(
            core.revoked_certificates(t(0) + Duration::days(21))
                .is_empty()
        );
    }

    #[test]
    fn past_the_grace_only_an_operator_issues_it() {
        let (mut core, _) = core_issuing();
        join_and_accept(&mut core, "edge-1", "KEY1", t(0));
        // Within the grace (ended 60 days ago, grace 90): renewed by asking.
        let back = t(0) + Duration::days(90);
        let change = core.handle_agent(join_with_key("edge-1", "KEY1"), back);
        assert_eq!(
            view_certificate(&change).as_deref(),
            Some("cert 2 of edge-1 for KEY1")
        );
        core.apply(&change.records);
        // Then offline for 200 days: asking gets the old one back, and `cluster get` says so.
        let late = back + Duration::days(200);
        let change = core.handle_agent(join_with_key("edge-1", "KEY1"), late);
        assert_eq!(
            view_certificate(&change).as_deref(),
            Some("cert 2 of edge-1 for KEY1")
        );
        core.apply(&change.records);
        assert!(waits_for_operator(
            core.cluster("edge-1").unwrap(),
            Duration::days(90),
            late
        ));
        let change = core.accept("edge-1", late).unwrap();
        assert_eq!(
            view_certificate(&change).as_deref(),
            Some("cert 3 of edge-1 for KEY1")
        );
        core.apply(&change.records);
        assert!(!waits_for_operator(
            core.cluster("edge-1").unwrap(),
            Duration::days(90),
            late
        ));
    }

    #[test]
    fn deny_revokes_the_certificate_until_its_end_and_a_new_key_gets_a_new_one() {
        let (mut core, _) = core_issuing();
        join_and_accept(&mut core, "edge-1", "KEY1", t(0));
        let change = core.deny("edge-1", t(5)).unwrap();
        assert_eq!(
            view_certificate(&change),
            None,
            "a denied cluster's view carries none"
        );
        core.apply(&change.records);
        let revoked = core.revoked_certificates(t(5));
        assert_eq!(revoked.len(), 1);
        assert_eq!(revoked[0].0, "edge-1");
        assert_eq!(revoked[0].1.serial, "01");
        // Reinstalled with a new key: accepted again, a certificate for the new key.
        let c = core.handle_agent(join_with_key("edge-1", "KEY2"), t(6));
        core.apply(&c.records);
        let change = core.accept("edge-1", t(7)).unwrap();
        assert_eq!(
            view_certificate(&change).as_deref(),
            Some("cert 2 of edge-1 for KEY2")
        );
        core.apply(&change.records);
        assert_eq!(
            core.cluster("edge-1").unwrap().acceptance,
            ClusterState::Accepted
        );
        // The revoked one stays listed until its own end, then drops out.
        assert_eq!(core.revoked_certificates(t(7)).len(), 1);
        assert!(
            core.revoked_certificates(t(0) + Duration::days(31))
                .is_empty()
        );
        let stored = core
            .accept("edge-1", t(8))
            .unwrap()
            .records
            .iter()
            .any(|r| matches!(r, Record::Cluster(c) if c.revoked_certificates.len() == 1));
        assert!(stored, "the revocation is stored with the cluster");
    }

    #[test]
    fn a_cluster_without_a_key_gets_no_certificate() {
        let (mut core, issuer) = core_issuing();
        let c = core.add_cluster("ocm-1", t(0)).unwrap();
        core.apply(&c.records);
        assert!(core.cluster("ocm-1").unwrap().certificate.is_none());
        assert_eq!(issuer.0.load(std::sync::atomic::Ordering::SeqCst), 0);
    }
}

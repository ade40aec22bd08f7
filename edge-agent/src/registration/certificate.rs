//! The cluster's TLS client certificate, which the hub issues for the agent's own key at `cluster
//! accept` and sends in its signed view of the cluster
//! ([`ocm_edge_schemas::wire::signature::CLUSTER_CERTIFICATE_ANNOTATION`]): the agent's identity
//! on a broker that takes certificates as identities (`--broker-mtls`, Mosquitto's
//! `use_identity_as_username`). The private key is the agent's `agent-key.p8`, which never
//! leaves the cluster.
//!
//! The agent takes a certificate only when it names its cluster and certifies its own key (the
//! view's signature already says the hub sent it), keeps it in `DATA_DIR/cluster-cert.pem`, and
//! asks for the next one after two thirds of its life
//! ([`ocm_edge_schemas::wire::signature::certificate_renewal_due`]).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::wire::signature::{
    CLUSTER_CERTIFICATE_ANNOTATION, MAX_CLUSTER_CERTIFICATE_CHARS, certificate_renewal_due,
};
use x509_parser::prelude::{FromDer, X509Certificate};

/// The certificate file in the agent's data dir (certificate then the cluster CA, PEM).
pub const CLUSTER_CERT_FILE: &str = "cluster-cert.pem";

/// A certificate the agent took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterCert {
    /// As the hub sent it (certificate, then the cluster CA).
    pub pem: String,
    pub not_before: DateTime<Utc>,
    pub not_after: DateTime<Utc>,
}

impl ClusterCert {
    /// Valid at `now` (what the broker checks).
    pub fn valid_at(&self, now: DateTime<Utc>) -> bool {
        self.not_before <= now && now < self.not_after
    }

    /// Two thirds of its life have passed: time to ask for the next one.
    pub fn renewal_due(&self, now: DateTime<Utc>) -> bool {
        certificate_renewal_due(self.not_before, self.not_after, now)
    }
}

/// The certificate in the hub's view of `cluster`, checked against the agent's public key
/// (`agent_key`, 32 raw bytes): `Ok(None)` when the view carries none.
///
/// # Errors
/// Why it was not taken (too long, not a certificate, another cluster's name or another key).
pub fn from_view(
    view: &ManagedCluster,
    cluster: &str,
    agent_key: &[u8],
) -> Result<Option<ClusterCert>, String> {
    let Some(pem) = view
        .metadata
        .annotations
        .get(CLUSTER_CERTIFICATE_ANNOTATION)
    else {
        return Ok(None);
    };
    if pem.len() > MAX_CLUSTER_CERTIFICATE_CHARS {
        return Err(format!(
            "the certificate annotation has {} characters, more than the {MAX_CLUSTER_CERTIFICATE_CHARS} an agent reads",
            pem.len()
        ));
    }
    let der = {
        use rustls::pki_types::pem::PemObject as _;
        rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
            .next()
            .ok_or("the certificate annotation holds no PEM certificate")?
            .map_err(|e| format!("the certificate annotation is not PEM: {e}"))?
    };
    let (_, cert) = X509Certificate::from_der(&der)
        .map_err(|e| format!("the certificate annotation is no X.509 certificate: {e}"))?;
    let cn = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok());
    if cn != Some(cluster) {
        return Err(format!(
            "the certificate names {cn:?}, not this cluster ({cluster:?})"
        ));
    }
    if &*cert.public_key().subject_public_key.data != agent_key {
        return Err(
            "the certificate is for another key than this agent's (agent-key.p8): the hub bound another key to this cluster"
                .to_owned(),
        );
    }
    let at = |t: x509_parser::time::ASN1Time| {
        DateTime::from_timestamp(t.timestamp(), 0).ok_or("a certificate date out of range")
    };
    Ok(Some(ClusterCert {
        pem: pem.clone(),
        not_before: at(cert.validity().not_before)?,
        not_after: at(cert.validity().not_after)?,
    }))
}

/// The certificate file's path in `data_dir`.
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.join(CLUSTER_CERT_FILE)
}

/// Writes the certificate file (through a temporary file and a rename).
///
/// # Errors
/// The file cannot be written.
pub fn write(data_dir: &Path, cert: &ClusterCert) -> std::io::Result<()> {
    // Public (a certificate), synced: the agent logs in with it after a crash.
    crate::registration::key::write_atomic(&file(data_dir), cert.pem.as_bytes(), 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_without_a_certificate_has_none_and_garbage_is_refused_with_a_reason() {
        let mut view = ManagedCluster::new("edge-1");
        assert_eq!(from_view(&view, "edge-1", &[0; 32]), Ok(None));
        view.metadata
            .annotations
            .insert(CLUSTER_CERTIFICATE_ANNOTATION.into(), "not pem".into());
        let err = from_view(&view, "edge-1", &[0; 32]).unwrap_err();
        assert!(err.contains("no PEM certificate"), "{err}");
        view.metadata.annotations.insert(
            CLUSTER_CERTIFICATE_ANNOTATION.into(),
            "x".repeat(MAX_CLUSTER_CERTIFICATE_CHARS + 1),
        );
        let err = from_view(&view, "edge-1", &[0; 32]).unwrap_err();
        assert!(err.contains("more than"), "{err}");
    }

    #[test]
    fn validity_and_renewal_follow_the_dates() {
        let start = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let cert = ClusterCert {
            pem: String::new(),
            not_before: start,
            not_after: start + chrono::Duration::days(30),
        };
        assert!(!cert.valid_at(start - chrono::Duration::seconds(1)));
        assert!(cert.valid_at(start));
        assert!(!cert.renewal_due(start + chrono::Duration::days(19)));
        assert!(cert.renewal_due(start + chrono::Duration::days(20)));
        assert!(!cert.valid_at(start + chrono::Duration::days(30)));
    }
}

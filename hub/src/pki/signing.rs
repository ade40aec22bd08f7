//! The hub's signing key: every event the hub sends to an agent (spec, hub view, status resync
//! request) is signed with it (Ed25519), so an agent acts only on what its hub decided, whoever
//! else can publish on its topics. What the signature covers and where it travels:
//! [`ocm_edge_schemas::wire::signature`].
//!
//! The key lives in `DATA_DIR/pki/signer-key.pem` (0600, created once); its certificate
//! (`signer.pem`, CN `ocm-edge hub signer`, extended key usage codeSigning) is issued by the
//! hub's CA, so an agent that pins the CA (`--broker-ca-pin` or `--hub-ca-pin`) trusts the key
//! without being told about it. Hub views carry the certificate and the CA
//! ([`SIGNER_CHAIN_EXTENSION`]); agents learn the key from there.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::{DateTime, Utc};
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::signature::{
    SIGNATURE_EXTENSION, SIGNER_CHAIN_EXTENSION, SIGNER_EXTENSION, key_id, property, signed_bytes,
};
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair, KeyUsagePurpose};
use ring::signature::Ed25519KeyPair;

use crate::pki::{CA_VALIDITY, CLOCK_SKEW, HubPki, PkiError};

/// The signing certificate's file in the pki directory.
pub const SIGNER_CERT: &str = "signer.pem";
/// The signing key's file in the pki directory (mode 0600).
pub const SIGNER_KEY: &str = "signer-key.pem";

/// The hub's event signer.
pub struct EventSigner {
    key: Ed25519KeyPair,
    cert: Vec<u8>,
    key_id: String,
    chain: String,
}

impl std::fmt::Debug for EventSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSigner")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl EventSigner {
    /// Loads the signer from the pki directory, or creates its key and certificate. A certificate
    /// that is missing, unreadable, not for this key, not issued by this CA or expiring within
    /// a year is issued again (agents trust the CA, so they take the new one from the next hub
    /// view).
    ///
    /// # Errors
    /// [`PkiError`] for files that cannot be read, written or used.
    pub fn load_or_create(pki: &HubPki, now: DateTime<Utc>) -> Result<Self, PkiError> {
        let dir = pki.dir();
        let key_path = dir.join(SIGNER_KEY);
        let key = if key_path.exists() {
            let pem = read(&key_path)?;
            KeyPair::from_pem(&pem).map_err(|e| PkiError::Io {
                path: key_path.clone(),
                reason: format!("not a PEM private key: {e}"),
            })?
        } else {
            let key = KeyPair::generate_for(&rcgen::PKCS_ED25519)
                .map_err(|e| PkiError::Issue(e.to_string()))?;
            crate::pki::write_file(&key_path, &key.serialize_pem(), true)?;
            tracing::info!(path = %key_path.display(), "created the hub's signing key");
            key
        };
        let ring_key =
            Ed25519KeyPair::from_pkcs8_maybe_unchecked(&key.serialize_der()).map_err(|e| {
                PkiError::Io {
                    path: key_path.clone(),
                    reason: format!("not an Ed25519 key: {e}"),
                }
            })?;
        let ca_der = pki.ca_der()?;
        let cert_path = dir.join(SIGNER_CERT);
        let held = std::fs::read_to_string(&cert_path)
            .ok()
            .and_then(|pem| crate::pki::first_pem_der(&pem))
            .filter(|der| usable(der, &ca_der, &key, now));
        let signer_der = match held {
            Some(der) => der,
            None => {
                let cert = issue(pki, &key, now)?;
                crate::pki::write_file(&cert_path, &cert.pem(), false)?;
                cert.der().to_vec()
            }
        };
        Ok(EventSigner {
            key: ring_key,
            key_id: key_id(&signer_der),
            chain: format!("{}.{}", BASE64.encode(&signer_der), BASE64.encode(&ca_der)),
            cert: signer_der,
        })
    }

    /// The signing certificate's id, as events name it.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The signing certificate, DER.
    pub fn certificate(&self) -> &[u8] {
        &self.cert
    }

    /// Signs `msg` as it will be published: names the key, adds the certificate chain when
    /// `with_chain` (hub views), then the signature over everything else.
    pub fn sign(&self, msg: &mut MqttMessage, with_chain: bool) {
        msg.user_properties
            .push((property(SIGNER_EXTENSION), self.key_id.clone()));
        if with_chain {
            msg.user_properties
                .push((property(SIGNER_CHAIN_EXTENSION), self.chain.clone()));
        }
        let signature = self.key.sign(&signed_bytes(msg));
        msg.user_properties.push((
            property(SIGNATURE_EXTENSION),
            BASE64.encode(signature.as_ref()),
        ));
    }
}

/// Whether a held signing certificate can stay: for `key`, issued by the CA, codeSigning, and
/// valid for at least another year.
fn usable(der: &[u8], ca_der: &[u8], key: &KeyPair, now: DateTime<Utc>) -> bool {
    use rcgen::PublicKeyData;
    if !crate::pki::contains(der, key.der_bytes()) {
        return false;
    }
    let in_a_year = now + chrono::Duration::days(365);
    ocm_edge_mqtt::tls::verify_code_signing(der, ca_der, in_a_year.timestamp().max(0) as u64)
        .is_ok()
}

fn issue(pki: &HubPki, key: &KeyPair, now: DateTime<Utc>) -> Result<rcgen::Certificate, PkiError> {
    let issue = |e: rcgen::Error| PkiError::Issue(e.to_string());
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(issue)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "ocm-edge hub signer");
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
    params.use_authority_key_identifier_extension = true;
    params.not_before = crate::pki::to_time(now - CLOCK_SKEW)?;
    params.not_after = crate::pki::to_time(now + CA_VALIDITY)?;
    pki.sign_for(&params, key)
}

fn read(path: &Path) -> Result<String, PkiError> {
    std::fs::read_to_string(path).map_err(|e| PkiError::Io {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

/// Why an agent's event is refused by signature. Logged, counted
/// (`agentEventsRefusedSignature`), and the event dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentSignatureError {
    #[error(
        "unsigned, but the cluster's agent key {bound} was bound at acceptance: only that agent may speak for it"
    )]
    Unsigned { bound: String },
    #[error(
        "signed by key {named}, not by the cluster's agent key {bound} (if the agent was reinstalled: `ocm-edge cluster deny`, then `ocm-edge cluster accept` after comparing its new key)"
    )]
    OtherKey { named: String, bound: String },
    #[error("the signature of key {0} does not verify: the event is not what the agent signed")]
    BadSignature(String),
    #[error("the agent key the join request carries is not 32 bytes of base64")]
    BadKey,
}

/// Checks an agent's event: signed by `bound` (the key bound to its cluster at acceptance), or,
/// for a join request of a cluster not bound yet, by the key it `carried` (proof that the sender
/// holds it). Without either, events go unchecked (agents that do not sign: OCM's work agent,
/// clusters accepted before agents had keys).
///
/// # Errors
/// [`AgentSignatureError`] saying why the event must be dropped.
pub fn check_agent_signature(
    msg: &MqttMessage,
    bound: Option<&[u8]>,
    carried: Option<&str>,
) -> Result<(), AgentSignatureError> {
    let carried_key;
    let key: &[u8] = match (bound, carried) {
        (Some(b), _) => b,
        (None, Some(c)) => {
            carried_key = BASE64
                .decode(c)
                .ok()
                .filter(|k| k.len() == 32)
                .ok_or(AgentSignatureError::BadKey)?;
            &carried_key
        }
        (None, None) => return Ok(()),
    };
    let id = key_id(key);
    let (Some(signature), Some(named)) = (
        msg.user_property(&property(SIGNATURE_EXTENSION)),
        msg.user_property(&property(SIGNER_EXTENSION)),
    ) else {
        return Err(AgentSignatureError::Unsigned { bound: id });
    };
    if named != id {
        return Err(AgentSignatureError::OtherKey {
            named: named.chars().take(64).collect(),
            bound: id,
        });
    }
    let signature = Some(signature)
        .filter(|s| s.len() <= 128)
        .and_then(|s| BASE64.decode(s).ok())
        .ok_or_else(|| AgentSignatureError::BadSignature(id.clone()))?;
    ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, key)
        .verify(&signed_bytes(msg), &signature)
        .map_err(|_| AgentSignatureError::BadSignature(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::KeyPair as _;

    fn now() -> DateTime<Utc> {
        "2026-11-25T10:00:00Z".parse().unwrap()
    }

    #[test]
    fn the_key_is_created_once_and_its_certificate_kept_while_the_ca_stays() {
        let dir = tempfile::tempdir().unwrap();
        let pki = HubPki::load_or_create(&dir.path().join("pki"), now()).unwrap();
        let first = EventSigner::load_or_create(&pki, now()).unwrap();
        let again = EventSigner::load_or_create(&pki, now() + chrono::Duration::days(30)).unwrap();
        assert_eq!(first.key_id(), again.key_id());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(pki.dir().join(SIGNER_KEY))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Near its end the certificate is issued again for the same key.
        let later = EventSigner::load_or_create(&pki, now() + CA_VALIDITY).unwrap();
        assert_ne!(later.key_id(), first.key_id());
        assert_eq!(
            later.key.public_key().as_ref(),
            first.key.public_key().as_ref()
        );
    }

    #[test]
    fn a_signed_message_names_its_key_and_only_hub_views_carry_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        let pki = HubPki::load_or_create(&dir.path().join("pki"), now()).unwrap();
        let signer = EventSigner::load_or_create(&pki, now()).unwrap();
        let mut msg = MqttMessage {
            topic: "t".into(),
            ..MqttMessage::default()
        };
        signer.sign(&mut msg, false);
        assert_eq!(
            msg.user_property(&property(SIGNER_EXTENSION)),
            Some(signer.key_id())
        );
        assert!(
            msg.user_property(&property(SIGNER_CHAIN_EXTENSION))
                .is_none()
        );
        let sig = BASE64
            .decode(msg.user_property(&property(SIGNATURE_EXTENSION)).unwrap())
            .unwrap();
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::ED25519,
            signer.key.public_key().as_ref(),
        );
        public.verify(&signed_bytes(&msg), &sig).unwrap();
        let mut view = MqttMessage::default();
        signer.sign(&mut view, true);
        assert!(
            view.user_property(&property(SIGNER_CHAIN_EXTENSION))
                .is_some()
        );
    }
}

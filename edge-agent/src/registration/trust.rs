//! Which hub the agent takes orders from: every event on its sourceevents topics (spec, hub
//! view, status resync request) must carry the hub's signature
//! ([`ocm_edge_schemas::wire::signature`]), so that nobody else who can publish there (a shared or
//! compromised broker, a broker without ACLs, another cluster) can make it apply anything.
//!
//! The agent learns the hub's signing certificate from a hub view, which carries it with the
//! CA that issued it, and keeps it in its store. It trusts that CA when
//! - it is the one pinned (`--hub-ca-pin`, by default the `--broker-ca-pin` of the hub's own
//!   embedded broker), or
//! - no pin is given and the agent has trusted no CA before (trust on first use, logged; the CA
//!   is kept, and a hub view of another CA is refused from then on).
//!
//! An agent serving a source that does not sign (maestro) is started with
//! `--accept-unsigned-specs-from SOURCE` ([`HubTrust::unsigned`]).
//!
//! The other way round, the agent signs everything it publishes with a key of its own
//! ([`super::key`]).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::{DateTime, Utc};
use ocm_edge_mqtt::CaPin;
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::signature::{
    MAX_CHAIN_CHARS, SIGNATURE_EXTENSION, SIGNER_CHAIN_EXTENSION, SIGNER_EXTENSION, key_id,
    property, signed_bytes_with_digest, split_chain,
};
use rustls::pki_types::CertificateDer;
use serde::{Deserialize, Serialize};

/// Longest base64 signature read (an Ed25519 signature is 88 characters).
const MAX_SIGNATURE_CHARS: usize = 128;

/// The hub's signing certificate and the CA that issued it, as the agent keeps them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HubSigner {
    /// The CA's certificate, DER.
    pub ca: Vec<u8>,
    /// The signing certificate, DER.
    pub cert: Vec<u8>,
}

impl HubSigner {
    /// The id events name the key by.
    pub fn key_id(&self) -> String {
        key_id(&self.cert)
    }

    /// The pin of the CA.
    pub fn ca_pin(&self) -> CaPin {
        CaPin::of_der(&self.ca)
    }
}

/// Why an event from the hub's side is refused. Logged, counted, and the event dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    #[error(
        "unsigned: this agent acts only on events its hub signed (if it serves a source that does not sign, such as maestro, start it with --accept-unsigned-specs-from SOURCE)"
    )]
    Unsigned,
    #[error(
        "signed by key {0}, which this agent does not know: it learns the hub's key from the hub's view of this cluster and asks for one"
    )]
    UnknownSigner(String),
    #[error("the signature does not verify: the event is not what the hub signed")]
    BadSignature,
    #[error("the signature or its certificates are malformed: {0}")]
    Malformed(String),
    #[error("the hub's signing certificate is not valid for signing under its CA: {0}")]
    BadChain(String),
    #[error(
        "the hub's signing CA {found} is not the trusted {trusted} (--hub-ca-pin, else --broker-ca-pin): with a broker that is not the hub's own (Mosquitto, EMQX) give --hub-ca-pin the `hub CA pin` that `ocm-edge hub` prints; if this agent was moved to another hub, give it that hub's pin"
    )]
    OtherCa { found: CaPin, trusted: CaPin },
}

/// What a check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// Signed by the key the agent knows.
    Trusted,
    /// Signed by a key (or a CA) the agent did not know and now trusts: store it.
    Learned(HubSigner),
    /// Not checked: this agent accepts unsigned events from its source.
    Unchecked,
}

/// The agent's trust in its hub.
#[derive(Debug, Clone)]
pub struct HubTrust {
    pin: Option<CaPin>,
    unsigned: bool,
    signer: Option<HubSigner>,
}

impl HubTrust {
    /// Trust anchored at `pin` (when given), starting from the signer the agent kept (dropped
    /// when it is not under the pinned CA: the agent was pointed at another hub).
    pub fn new(pin: Option<CaPin>, kept: Option<HubSigner>) -> Self {
        let signer = kept.filter(|s| pin.is_none_or(|p| p.matches(&s.ca)));
        HubTrust {
            pin,
            unsigned: false,
            signer,
        }
    }

    /// An agent that takes unsigned events (a source that does not sign, such as maestro).
    pub fn unsigned() -> Self {
        HubTrust {
            pin: None,
            unsigned: true,
            signer: None,
        }
    }

    /// Whether events go unchecked.
    pub fn accepts_unsigned(&self) -> bool {
        self.unsigned
    }

    /// The signer the agent trusts now.
    pub fn signer(&self) -> Option<&HubSigner> {
        self.signer.as_ref()
    }

    /// Whether the agent still has to learn its hub's key (it asks for a hub view).
    pub fn needs_signer(&self) -> bool {
        !self.unsigned && self.signer.is_none()
    }

    /// Trusts `signer` from now on (after [`Checked::Learned`]).
    pub fn learn(&mut self, signer: HubSigner) {
        self.signer = Some(signer);
    }

    /// Checks the hub's signature on `msg` (a whole message: a chunked transfer is checked once
    /// assembled) at time `now`.
    ///
    /// # Errors
    /// [`TrustError`] saying why the message must be dropped.
    pub fn check(&self, msg: &MqttMessage, now: DateTime<Utc>) -> Result<Checked, TrustError> {
        use sha2::Digest as _;
        self.check_with_digest(msg, &sha2::Sha256::digest(&msg.payload).into(), now)
    }

    /// [`HubTrust::check`] of a message whose payload has SHA-256 `digest` (the head of a
    /// chunked transfer, [`ocm_edge_schemas::wire::chunks::head_message`]): a forged head is
    /// refused before anything of it is stored.
    ///
    /// # Errors
    /// As [`HubTrust::check`].
    pub fn check_with_digest(
        &self,
        msg: &MqttMessage,
        digest: &[u8; 32],
        now: DateTime<Utc>,
    ) -> Result<Checked, TrustError> {
        if self.unsigned {
            return Ok(Checked::Unchecked);
        }
        let (Some(signature), Some(named)) = (
            msg.user_property(&property(SIGNATURE_EXTENSION)),
            msg.user_property(&property(SIGNER_EXTENSION)),
        ) else {
            return Err(TrustError::Unsigned);
        };
        if signature.len() > MAX_SIGNATURE_CHARS {
            return Err(TrustError::Malformed(format!(
                "the signature is longer than {MAX_SIGNATURE_CHARS} characters"
            )));
        }
        let signature = BASE64
            .decode(signature)
            .map_err(|e| TrustError::Malformed(format!("the signature is not base64: {e}")))?;
        // The key is learned from hub views only: a chain on anything else (a spec) is ignored,
        // so no spec is ever applied on the strength of a key it brought itself.
        let chain = msg
            .user_property(&property(SIGNER_CHAIN_EXTENSION))
            .filter(|_| is_hub_view(msg));
        let (signer, learned) = match chain {
            Some(chain) => {
                let signer = self.chain(chain, named, now)?;
                let learned = self.signer.as_ref() != Some(&signer);
                (signer, learned)
            }
            None => match &self.signer {
                Some(s) if s.key_id() == named => (s.clone(), false),
                _ => return Err(TrustError::UnknownSigner(named.to_owned())),
            },
        };
        let cert = CertificateDer::from(signer.cert.as_slice());
        let end_entity = webpki::EndEntityCert::try_from(&cert)
            .map_err(|e| TrustError::Malformed(format!("signing certificate: {e}")))?;
        end_entity
            .verify_signature(
                webpki::ring::ED25519,
                &signed_bytes_with_digest(msg, digest),
                &signature,
            )
            .map_err(|_| TrustError::BadSignature)?;
        Ok(if learned {
            Checked::Learned(signer)
        } else {
            Checked::Trusted
        })
    }

    /// The signer a chain extension stands for, once its CA is trusted and its certificate is
    /// valid for signing under it.
    fn chain(&self, value: &str, named: &str, now: DateTime<Utc>) -> Result<HubSigner, TrustError> {
        if value.len() > MAX_CHAIN_CHARS {
            return Err(TrustError::Malformed(format!(
                "the certificate chain is longer than {MAX_CHAIN_CHARS} characters"
            )));
        }
        let (cert, ca) = split_chain(value).ok_or_else(|| {
            TrustError::Malformed("the certificate chain is not two base64 parts".to_owned())
        })?;
        let decode = |what: &str, b64: &str| {
            BASE64
                .decode(b64)
                .map_err(|e| TrustError::Malformed(format!("the {what} is not base64: {e}")))
        };
        let signer = HubSigner {
            cert: decode("signing certificate", cert)?,
            ca: decode("CA certificate", ca)?,
        };
        if signer.key_id() != named {
            return Err(TrustError::Malformed(format!(
                "the event names key {named} but carries certificate {}",
                signer.key_id()
            )));
        }
        let trusted = self
            .pin
            .or_else(|| self.signer.as_ref().map(HubSigner::ca_pin));
        if let Some(trusted) = trusted
            && !trusted.matches(&signer.ca)
        {
            return Err(TrustError::OtherCa {
                found: signer.ca_pin(),
                trusted,
            });
        }
        ocm_edge_mqtt::tls::verify_code_signing(
            &signer.cert,
            &signer.ca,
            now.timestamp().max(0) as u64,
        )
        .map_err(TrustError::BadChain)?;
        Ok(signer)
    }
}

/// Whether `msg` is a hub view (`managedclusters.spec.update_request`), the one event that may
/// teach the agent the hub's key.
fn is_hub_view(msg: &MqttMessage) -> bool {
    use ocm_edge_schemas::wire::event_type::{Action, MANAGED_CLUSTERS, SubResource};
    let hub_view = MANAGED_CLUSTERS
        .event_type(SubResource::Spec, Action::UpdateRequest)
        .to_string();
    msg.user_property(&format!("{}type", ocm_edge_schemas::wire::mqtt::CE_PREFIX))
        == Some(hub_view.as_str())
}

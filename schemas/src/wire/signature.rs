//! The hub's signature on what it sends to agents (spec events, hub views, status resync
//! requests), so that an agent acts only on what its hub decided, whoever else can publish on
//! its topics (a shared or compromised broker, a broker without ACLs).
//!
//! The signature covers the whole MQTT message as the hub published it ([`signed_bytes`]): topic,
//! content type, every user property but the signature itself (so every CloudEvents attribute:
//! type, cluster, resource id and version, deletion timestamp, metadata, ...) and the SHA-256 of
//! the payload. A chunked transfer (`chunks`) reassembles exactly that message, so a large spec
//! is checked once, whole.
//!
//! # CloudEvents extensions (MQTT user properties `ce-<name>`)
//! - [`SIGNER_EXTENSION`]: which key signed, [`key_id`] of the signing certificate;
//! - [`SIGNATURE_EXTENSION`]: Ed25519 signature over [`signed_bytes`], base64 (standard, padded);
//! - [`SIGNER_CHAIN_EXTENSION`] (hub views only): the signing certificate and the hub's CA, each
//!   DER base64, joined by `.`; the agent checks the CA against its pin and learns the key.
//!
//! Agents sign what they send the same way with a key of their own ([`AGENT_KEY_ANNOTATION`]).
//!
//! maestro and OCM's work agents ignore extensions they do not know, so signed events stay
//! readable by them.

use sha2::{Digest, Sha256};

use super::MqttMessage;
use super::mqtt::CE_PREFIX;

/// Extension naming the signing key ([`key_id`]).
pub const SIGNER_EXTENSION: &str = "ocmedgesigner";
/// Extension holding the signature (base64).
pub const SIGNATURE_EXTENSION: &str = "ocmedgesignature";
/// Extension holding the signing certificate and the CA that issued it (hub views).
pub const SIGNER_CHAIN_EXTENSION: &str = "ocmedgesignerchain";
/// Annotation of an agent's join request (its ManagedCluster) holding the agent's own Ed25519
/// public key, 32 bytes, base64. The hub binds it to the cluster at `cluster accept`; from then
/// on it takes that cluster's events only when that key signed them ([`signed_bytes`], the same
/// extensions with [`key_id`] of the raw public key).
pub const AGENT_KEY_ANNOTATION: &str = "ocm-edge.io/agent-signing-key";
/// Annotation of the hub's view of an accepted cluster holding the TLS client certificate the hub
/// issued for the cluster's bound agent key (CN = the cluster, clientAuth) followed by the cluster
/// CA, PEM: the agent's identity on a broker that takes certificates as identities (Mosquitto's
/// `use_identity_as_username`).
pub const CLUSTER_CERTIFICATE_ANNOTATION: &str = "ocm-edge.io/cluster-certificate";
/// Longest cluster certificate annotation an agent reads (two certificates of under 2 KiB each).
pub const MAX_CLUSTER_CERTIFICATE_CHARS: usize = 8 * 1024;
/// Whether two thirds of a cluster certificate's life `[not_before, not_after)` have passed at
/// `now`: the agent then asks for a new one (its join request) and the hub issues it.
pub fn certificate_renewal_due(
    not_before: chrono::DateTime<chrono::Utc>,
    not_after: chrono::DateTime<chrono::Utc>,
    now: chrono::DateTime<chrono::Utc>,
) -> bool {
    now >= not_before + (not_after - not_before) * 2 / 3
}
/// Longest signer chain an agent reads (two certificates of well under 2 KiB each).
pub const MAX_CHAIN_CHARS: usize = 8 * 1024;

/// The MQTT user property of extension `name`.
pub fn property(name: &str) -> String {
    format!("{CE_PREFIX}{name}")
}

/// The id of a signing key: the first 16 bytes of the SHA-256 of the hub's signing certificate
/// (DER) or of an agent's raw public key, lowercase hex.
pub fn key_id(signer_der: &[u8]) -> String {
    hex::encode(&Sha256::digest(signer_der)[..16])
}

/// What the signature covers: a fixed label, the topic, the content type, the user properties
/// other than the signature sorted by name then value (a broker may reorder them), and the
/// SHA-256 of the payload, each framed by its length.
pub fn signed_bytes(msg: &MqttMessage) -> Vec<u8> {
    signed_bytes_with_digest(msg, &Sha256::digest(&msg.payload).into())
}

/// [`signed_bytes`] of a message whose payload has SHA-256 `digest` (`msg.payload` is not
/// read): what the head of a chunked transfer lets a receiver check before any chunk arrives.
pub fn signed_bytes_with_digest(msg: &MqttMessage, digest: &[u8; 32]) -> Vec<u8> {
    let signature = property(SIGNATURE_EXTENSION);
    let mut props: Vec<(&str, &str)> = msg
        .user_properties
        .iter()
        .filter(|(k, _)| *k != signature)
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    props.sort_unstable();
    let mut out = Vec::with_capacity(
        256 + props
            .iter()
            .map(|(k, v)| k.len() + v.len() + 8)
            .sum::<usize>(),
    );
    let mut field = |bytes: &[u8]| {
        // Every field is far below 4 GiB (MQTT caps a whole packet at 256 MiB).
        out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(bytes);
    };
    field(b"ocm-edge hub event v1");
    field(msg.topic.as_bytes());
    // Absent and empty differ: a presence byte, then the content type.
    match &msg.content_type {
        None => field(b"0"),
        Some(ct) => field(format!("1{ct}").as_bytes()),
    }
    field(&(props.len() as u32).to_be_bytes());
    for (k, v) in props {
        field(k.as_bytes());
        field(v.as_bytes());
    }
    field(digest);
    out
}

/// The signing certificate and CA of a [`SIGNER_CHAIN_EXTENSION`] value, still base64.
pub fn split_chain(value: &str) -> Option<(&str, &str)> {
    value.split_once('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg() -> MqttMessage {
        MqttMessage {
            topic: "sources/ocm-edge/consumers/edge-1/sourceevents".into(),
            payload: br#"{"manifests":[]}"#.to_vec(),
            content_type: Some("application/json".into()),
            user_properties: vec![
                ("ce-type".into(), "t".into()),
                ("ce-resourceversion".into(), "2".into()),
            ],
        }
    }

    #[test]
    fn the_signed_bytes_cover_every_part_of_the_message_but_the_signature_and_property_order() {
        let base = signed_bytes(&msg());
        let mut reordered = msg();
        reordered.user_properties.reverse();
        reordered
            .user_properties
            .push((property(SIGNATURE_EXTENSION), "sig".into()));
        assert_eq!(signed_bytes(&reordered), base);
        let changes: [fn(&mut MqttMessage); 7] = [
            |m| m.topic = "sources/ocm-edge/consumers/edge-2/sourceevents".into(),
            |m| m.payload.push(b' '),
            |m| m.content_type = None,
            |m| m.content_type = Some(String::new()),
            |m| m.user_properties[1].1 = "3".into(),
            |m| {
                m.user_properties
                    .push(("ce-deletiontimestamp".into(), "x".into()))
            },
            |m| {
                m.user_properties.pop();
            },
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut m = msg();
            change(&mut m);
            assert_ne!(signed_bytes(&m), base, "change {i} is not covered");
        }
    }

    #[test]
    fn framing_keeps_a_property_from_passing_for_two() {
        let mut one = msg();
        one.user_properties = vec![("ce-a".into(), "b".into())];
        let mut other = msg();
        other.user_properties = vec![("ce-ab".into(), String::new())];
        assert_ne!(signed_bytes(&one), signed_bytes(&other));
    }
}

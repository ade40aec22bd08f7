//! The agent's own key ([`AgentKey`], Ed25519, created at first start in its data dir, mode
//! 0600; the private key never leaves it). It signs everything the agent publishes and proves the
//! agent's identity at login. Its join request carries the public key; `cluster accept` binds it,
//! and from then on the hub takes the cluster's events only when that key signed them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::signature::{
    SIGNATURE_EXTENSION, SIGNER_EXTENSION, key_id, property, signed_bytes,
};
use ring::signature::{Ed25519KeyPair, KeyPair as _};

/// The agent's own key file in its data dir (PKCS#8, mode 0600).
pub const AGENT_KEY_FILE: &str = "agent-key.p8";

/// The agent's signing key.
pub struct AgentKey {
    key: Ed25519KeyPair,
    id: String,
    public: String,
}

impl std::fmt::Debug for AgentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// The agent's key file cannot be read, created or used.
#[derive(Debug, thiserror::Error)]
#[error(
    "{path}: {reason} (the agent's signing key; if it is damaged, remove it: the agent makes a new one, which the hub operator must accept again after `ocm-edge cluster deny`)"
)]
pub struct AgentKeyError {
    pub path: std::path::PathBuf,
    pub reason: String,
}

impl AgentKey {
    /// Loads the key from `data_dir`, or creates it there (mode 0600) at the first start.
    ///
    /// # Errors
    /// [`AgentKeyError`] for a file that cannot be read, written or used.
    pub fn load_or_create(data_dir: &std::path::Path) -> Result<Self, AgentKeyError> {
        let path = data_dir.join(AGENT_KEY_FILE);
        let err = |reason: String| AgentKeyError {
            path: path.clone(),
            reason,
        };
        let pkcs8 = if path.exists() {
            std::fs::read(&path).map_err(|e| err(e.to_string()))?
        } else {
            let rng = ring::rand::SystemRandom::new();
            let doc = Ed25519KeyPair::generate_pkcs8(&rng).map_err(|e| err(e.to_string()))?;
            write_private(&path, doc.as_ref()).map_err(|e| err(e.to_string()))?;
            doc.as_ref().to_vec()
        };
        let key = Ed25519KeyPair::from_pkcs8_maybe_unchecked(&pkcs8)
            .map_err(|e| err(format!("not an Ed25519 key: {e}")))?;
        let raw = key.public_key().as_ref();
        Ok(AgentKey {
            id: key_id(raw),
            public: BASE64.encode(raw),
            key,
        })
    }

    /// The key's id, as the hub shows it (`ocm-edge cluster get`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The public key's 32 bytes.
    pub fn public_raw(&self) -> &[u8] {
        ring::signature::KeyPair::public_key(&self.key).as_ref()
    }

    /// The key file in `data_dir` (PKCS#8 DER), for a TLS client certificate of this key.
    pub fn file(data_dir: &std::path::Path) -> std::path::PathBuf {
        data_dir.join(AGENT_KEY_FILE)
    }

    /// The public key, base64, as the join request carries it.
    pub fn public_base64(&self) -> &str {
        &self.public
    }

    /// The MQTT password that proves this key to the hub's embedded broker when logging in as
    /// `username` (the cluster) with `client_id`, with the join token a cluster needs until the
    /// hub accepts it (`ocm_edge_schemas::wire::login`).
    pub fn login_password(&self, username: &str, client_id: &str, token: Option<&str>) -> String {
        let signature = self.key.sign(&signed_bytes(
            &ocm_edge_schemas::wire::login::agent_login_message(username, client_id),
        ));
        ocm_edge_schemas::wire::login::agent_key_password(
            &self.public,
            &BASE64.encode(signature.as_ref()),
            token,
        )
    }

    /// The MQTT password of an add-on's identity on this cluster: a SHA-256 of this key's
    /// (deterministic) signature over the add-on and the registration's nonce, so it never
    /// leaves the cluster, survives restarts, and is new with a new nonce (the add-on enabled
    /// again) or a new key.
    pub fn addon_password(&self, addon: &str, nonce: &str) -> String {
        let signature = self.key.sign(
            &ocm_edge_schemas::wire::addon_identity::password_derivation_message(addon, nonce),
        );
        let digest = ring::digest::digest(&ring::digest::SHA256, signature.as_ref());
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
    }

    /// The key of an add-on's identity on this cluster, for its client certificate: an Ed25519
    /// key whose seed is the SHA-256 of this key's signature over the add-on and the nonce
    /// (derived like [`AgentKey::addon_password`], never stored).
    pub fn addon_key(&self, addon: &str, nonce: &str) -> AddOnKey {
        let signature = self
            .key
            .sign(&ocm_edge_schemas::wire::addon_identity::key_derivation_message(addon, nonce));
        let seed = ring::digest::digest(&ring::digest::SHA256, signature.as_ref());
        // PKCS#8 v1 of an Ed25519 key (RFC 8410): a fixed prefix, then the 32-byte seed.
        let pkcs8 = [ED25519_PKCS8_V1_PREFIX.as_slice(), seed.as_ref()].concat();
        let public = Ed25519KeyPair::from_pkcs8_maybe_unchecked(&pkcs8)
            .map(|k| BASE64.encode(k.public_key().as_ref()))
            .expect("a 32-byte seed in PKCS#8 v1 is an Ed25519 key");
        AddOnKey {
            pkcs8_pem: pem("PRIVATE KEY", &pkcs8),
            public,
        }
    }

    /// Signs `msg` as it will be published.
    pub fn sign(&self, msg: &mut MqttMessage) {
        msg.user_properties
            .push((property(SIGNER_EXTENSION), self.id.clone()));
        let signature = self.key.sign(&signed_bytes(msg));
        msg.user_properties.push((
            property(SIGNATURE_EXTENSION),
            BASE64.encode(signature.as_ref()),
        ));
    }
}

/// PKCS#8 v1 of an Ed25519 private key before its 32-byte seed (RFC 8410).
const ED25519_PKCS8_V1_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// An add-on identity's key ([`AgentKey::addon_key`]).
#[derive(Clone, PartialEq, Eq)]
pub struct AddOnKey {
    /// The private key, PKCS#8 PEM (what TLS clients read as `tls.key`).
    pub pkcs8_pem: String,
    /// The public key, base64 of its 32 bytes.
    pub public: String,
}

impl std::fmt::Debug for AddOnKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddOnKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

/// `bytes` as a PEM block with `label`, 64 characters a line.
pub(crate) fn pem(label: &str, bytes: &[u8]) -> String {
    let b64 = BASE64.encode(bytes);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Writes a new private file (0600) through a temporary file and a rename.
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic(path, bytes, 0o600)
}

/// Writes `path` through a synced temporary file (created with `mode`) and a rename: a crash
/// leaves the old file or the new one, never half of one.
pub(crate) fn write_atomic(path: &std::path::Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write as _;
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

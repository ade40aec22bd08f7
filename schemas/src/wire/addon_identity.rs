//! Add-on agents' own MQTT identities (OCM's add-on registration, over MQTT).
//!
//! An add-on whose AddOnTemplate has a `registration` gets, on each cluster it is installed on,
//! a broker identity of its own, `addons/<addon>/clusters/<cluster>`: its MQTT username, its
//! client id, and the prefix of the only topics it may use. Its hub-side controller logs in as
//! `addons/<addon>/controller` and may use the topics of that add-on on every cluster.
//!
//! How an identity comes to be:
//! 1. The hub renders the add-on's work with [`REGISTRATION_ANNOTATION`] ([`Registration`]: the
//!    identity, the Secret to write, a nonce that changes when the add-on is enabled again, and
//!    the password hash the hub has bound, if any).
//! 2. The edge agent derives the identity's password from its own key and the nonce (it never
//!    leaves the cluster) and asks the hub to bind its SHA-256 ([`PASSWORD_SHA256_ANNOTATION`] on
//!    a ManagedClusterAddOn, `...managedclusteraddons.status.update_request`, signed with the
//!    agent's key like every agent event).
//! 3. The hub approves (automatically, for an accepted cluster on which the add-on is installed
//!    and registers), binds the hash on the ManagedClusterAddOn and sends the work again with it.
//! 4. The agent, seeing its own hash bound, writes the Secret [`secret_name`] into the add-on's
//!    install namespace: broker URL, CA, username, password, client id, topic prefix.
//!
//! Disabling the add-on or removing the cluster unbinds the hash: the identity no longer logs in.

use serde::{Deserialize, Serialize};

/// Annotation of an add-on's work: the add-on's registration as the hub sees it (JSON of
/// [`Registration`]).
pub const REGISTRATION_ANNOTATION: &str = "edge.open-cluster-management.io/addon-registration";

/// Annotation of a ManagedClusterAddOn: the SHA-256 (hex) of its identity's password, as the
/// agent asked (on the registration event) and as the hub bound it (on the stored add-on).
pub const PASSWORD_SHA256_ANNOTATION: &str = "edge.open-cluster-management.io/mqtt-password-sha256";

/// Annotation of the registration request: the identity's Ed25519 public key (base64 of its
/// 32 bytes), for a client certificate of the hub's cluster CA (external brokers' certificate
/// listeners).
pub const PUBLIC_KEY_ANNOTATION: &str = "edge.open-cluster-management.io/mqtt-public-key";

/// Annotation of the registration request: the nonce of the registration the agent derived
/// its password and key for (the hub takes a request only for the add-on's current enable).
pub const NONCE_ANNOTATION: &str = "edge.open-cluster-management.io/mqtt-nonce";

/// The signer name on a ManagedClusterAddOn's `status.registrations` (OCM's field, our signer).
pub const MQTT_SIGNER: &str = "edge.open-cluster-management.io/mqtt";

/// The first level of every add-on topic and identity.
pub const ADDONS_PREFIX: &str = "addons/";

/// Last topic level of an add-on agent's AddOnPlacementScores (`<prefix>/placementscores`).
pub const SCORES_LEVEL: &str = "placementscores";

/// An add-on's registration on one cluster, as the hub puts it on the add-on's work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    pub addon: String,
    pub cluster: String,
    /// The namespace the Secret goes into (the add-on's install namespace).
    pub namespace: String,
    /// Changes when the add-on is enabled again, so is its password.
    pub nonce: String,
    /// The password hash the hub has bound; `None` until it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_sha256: Option<String>,
    /// The identity's client certificate (CN = the identity) from the hub's cluster CA, for
    /// the key the agent sent; `None` until issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<IssuedCertificate>,
}

/// A client certificate the hub issued to an add-on identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssuedCertificate {
    /// The certificate then the cluster CA, PEM.
    pub pem: String,
    /// The public key it certifies (base64 of the raw Ed25519 key).
    pub key: String,
    pub not_before: chrono::DateTime<chrono::Utc>,
    pub not_after: chrono::DateTime<chrono::Utc>,
}

impl IssuedCertificate {
    /// Whether it is for `key` and not yet two thirds through its life at `now` (else the
    /// agent asks for a new one).
    pub fn serves(&self, key: &str, now: chrono::DateTime<chrono::Utc>) -> bool {
        self.key == key
            && !super::signature::certificate_renewal_due(self.not_before, self.not_after, now)
    }
}

impl Registration {
    /// The identity (username, client id, topic prefix).
    pub fn identity(&self) -> String {
        identity(&self.addon, &self.cluster)
    }

    /// Checks every name, so nothing odd reaches a topic, a Secret or a namespace.
    ///
    /// # Errors
    /// What is wrong, naming the field.
    pub fn validate(&self) -> Result<(), String> {
        for (what, value) in [
            ("addon", &self.addon),
            ("cluster", &self.cluster),
            ("namespace", &self.namespace),
        ] {
            if !is_valid_label(value) {
                return Err(format!(
                    "{what} {value:?} is not a DNS label ([a-z0-9-], at most 63)"
                ));
            }
        }
        if self.nonce.is_empty() || self.nonce.len() > 128 {
            return Err("the nonce is empty or longer than 128 bytes".to_owned());
        }
        if let Some(hash) = &self.approved_sha256
            && !is_sha256_hex(hash)
        {
            return Err(format!("approvedSha256 {hash:?} is not a SHA-256 in hex"));
        }
        if let Some(c) = &self.certificate
            && (c.pem.len() > super::signature::MAX_CHAIN_CHARS
                || !c.pem.starts_with("-----BEGIN CERTIFICATE-----"))
        {
            return Err("the certificate is not a PEM chain of at most 8 KiB".to_owned());
        }
        Ok(())
    }
}

/// Whether `name` may be an add-on's, a cluster's or a namespace's name in an identity: a
/// topic level of `[a-z0-9-]`, at most 63 characters.
pub fn is_valid_label(name: &str) -> bool {
    super::topic::is_valid_name(name) && name.len() <= 63
}

/// The identity of `addon`'s agent on `cluster`: `addons/<addon>/clusters/<cluster>`.
pub fn identity(addon: &str, cluster: &str) -> String {
    format!("addons/{addon}/clusters/{cluster}")
}

/// The identity of `addon`'s hub-side controller: `addons/<addon>/controller`.
pub fn controller_identity(addon: &str) -> String {
    format!("addons/{addon}/controller")
}

/// The work that carries an add-on's agent to a cluster: `addon-<addon>-deploy-0` (OCM's name).
pub fn deploy_work_name(addon: &str) -> String {
    format!("addon-{addon}-deploy-0")
}

/// The Secret an add-on's agent reads its identity from: `<addon>-hub-mqtt`.
pub fn secret_name(addon: &str) -> String {
    format!("{addon}-hub-mqtt")
}

/// Who an add-on username is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddOnIdentity<'a> {
    /// `addons/<addon>/clusters/<cluster>`.
    Agent { addon: &'a str, cluster: &'a str },
    /// `addons/<addon>/controller`.
    Controller { addon: &'a str },
}

/// Reads an add-on username; `None` for anything else (names must be `[a-z0-9-]+`).
pub fn parse_identity(username: &str) -> Option<AddOnIdentity<'_>> {
    let ok = super::topic::is_valid_name;
    match username.split('/').collect::<Vec<_>>().as_slice() {
        ["addons", addon, "clusters", cluster] if ok(addon) && ok(cluster) => {
            Some(AddOnIdentity::Agent { addon, cluster })
        }
        ["addons", addon, "controller"] if ok(addon) => Some(AddOnIdentity::Controller { addon }),
        _ => None,
    }
}

/// The topic an add-on's agent publishes its AddOnPlacementScores on.
pub fn scores_topic(addon: &str, cluster: &str) -> String {
    super::topic::Topic::AddOnScores {
        addon: addon.to_owned(),
        cluster: cluster.to_owned(),
    }
    .to_string()
}

/// The filter the hub reads every add-on's scores with.
pub const SCORES_FILTER: &str = "addons/+/clusters/+/placementscores";

/// The SHA-256 of a password, lowercase hex (what the hub binds).
pub fn password_sha256(password: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(password.as_bytes()))
}

/// Whether `s` is 64 lowercase hex digits.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// What the agent signs to derive an identity's key (the seed of an Ed25519 key: the SHA-256
/// of the signature).
pub fn key_derivation_message(addon: &str, nonce: &str) -> Vec<u8> {
    format!("ocm-edge addon mqtt key v1\n{addon}\n{nonce}").into_bytes()
}

/// What the agent signs to derive an identity's password (the signature is deterministic, so
/// the password is the same at every start, and new with a new nonce or a new agent key).
pub fn password_derivation_message(addon: &str, nonce: &str) -> Vec<u8> {
    format!("ocm-edge addon mqtt password v1\n{addon}\n{nonce}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_read_back_and_nothing_else_reads_as_one() {
        assert_eq!(
            parse_identity(&identity("hello", "edge-a")),
            Some(AddOnIdentity::Agent {
                addon: "hello",
                cluster: "edge-a"
            })
        );
        assert_eq!(
            parse_identity(&controller_identity("hello")),
            Some(AddOnIdentity::Controller { addon: "hello" })
        );
        for not in [
            "edge-a",
            "addons/hello",
            "addons/+/clusters/edge-a",
            "addons/hello/clusters/#",
            "addons/hello/clusters/edge-a/x",
            "addons/Hello/controller",
            "addons//controller",
            "ocm-edge-hub",
        ] {
            assert_eq!(parse_identity(not), None, "{not}");
        }
        let parse = super::super::topic::Topic::parse;
        assert_eq!(
            parse(&scores_topic("hello", "edge-a")),
            Ok(super::super::topic::Topic::AddOnScores {
                addon: "hello".into(),
                cluster: "edge-a".into()
            })
        );
        assert!(parse("addons/hello/controller/placementscores").is_err());
        assert!(parse("addons/hello/clusters/edge-a/other").is_err());
        assert!(parse("addons/+/clusters/edge-a/placementscores").is_err());
    }

    #[test]
    fn a_registration_with_a_bad_name_or_hash_is_refused() {
        let good = Registration {
            addon: "hello".into(),
            cluster: "edge-a".into(),
            namespace: "hello-agent".into(),
            nonce: "2026-11-27T10:00:00Z".into(),
            approved_sha256: Some(password_sha256("x")),
            certificate: None,
        };
        assert_eq!(good.validate(), Ok(()));
        let bad = |f: fn(&mut Registration)| {
            let mut r = good.clone();
            f(&mut r);
            r.validate().unwrap_err()
        };
        assert!(bad(|r| r.namespace = "../etc".into()).contains("namespace"));
        assert!(bad(|r| r.addon = "a/b".into()).contains("addon"));
        assert!(bad(|r| r.nonce.clear()).contains("nonce"));
        assert!(bad(|r| r.approved_sha256 = Some("ABC".into())).contains("SHA-256"));
        assert!(
            bad(|r| {
                r.certificate = Some(IssuedCertificate {
                    pem: "not a certificate".into(),
                    key: "k".into(),
                    not_before: chrono::DateTime::UNIX_EPOCH,
                    not_after: chrono::DateTime::UNIX_EPOCH,
                })
            })
            .contains("PEM")
        );
    }
}

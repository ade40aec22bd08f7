//! Add-on agents' MQTT identities on this cluster (`ocm_edge_schemas::wire::addon_identity`).
//!
//! An add-on's work that carries the hub's registration annotation asks the agent for its
//! add-on's own broker identity. The agent derives the identity's password from its own key and
//! the registration's nonce (so it never leaves the cluster and is the same after a restart),
//! asks the hub to bind its SHA-256, and once the work comes back with that hash bound, applies
//! the Secret `<addon>-hub-mqtt` in the add-on's install namespace together with the work's
//! manifests: it is tracked, re-applied on drift and removed with the work like them, and
//! reported on no manifest condition (it is the agent's, not the hub's).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ocm_edge_schemas::api::work::{Manifest, ManifestBundle};
use ocm_edge_schemas::wire::addon_identity::{self, Registration};
use serde_json::json;

use chrono::{DateTime, Utc};

use crate::config::AgentConfig;
use crate::registration::key::AddOnKey;

/// What to do for an add-on's registration on this reconcile.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Step {
    /// Ask the hub to bind this password hash and certify this key (the hash not bound yet,
    /// or bound to another; the certificate missing, for another key, or due for renewal).
    pub ask: Option<Ask>,
    /// The password is bound: apply this Secret with the work.
    pub write: Option<Box<Manifest>>,
}

/// A registration request's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub addon: String,
    pub password_sha256: String,
    pub public_key: String,
}

/// The registration `annotations` carry for this `cluster`, checked; `Err` says why it is
/// ignored (the hub signed the work, but the agent trusts no name it did not check).
///
/// # Errors
/// A registration that is malformed or is for another cluster.
pub fn registration(
    annotations: &std::collections::BTreeMap<String, String>,
    work: &str,
    cluster: &str,
) -> Result<Option<Registration>, String> {
    let Some(json) = annotations.get(addon_identity::REGISTRATION_ANNOTATION) else {
        return Ok(None);
    };
    let r: Registration =
        serde_json::from_str(json).map_err(|e| format!("unreadable registration: {e}"))?;
    r.validate()?;
    // Only the add-on's own work speaks for its identity (the hub writes it, and refuses the
    // annotation on anyone else's).
    if work != addon_identity::deploy_work_name(&r.addon) {
        return Err(format!(
            "the registration of add-on {:?} is on work {work:?}, not on the add-on's work {:?}",
            r.addon,
            addon_identity::deploy_work_name(&r.addon)
        ));
    }
    if r.cluster != cluster {
        return Err(format!(
            "the registration is for cluster {:?}, and this is {cluster:?}",
            r.cluster
        ));
    }
    Ok(Some(r))
}

/// What the agent does at `now` for `r`, whose identity's password is `password` and key `key`;
/// `broker_ca` is the PEM of the CA the agent trusts its broker with, when it knows it.
pub fn step(
    r: &Registration,
    password: &str,
    key: &AddOnKey,
    broker_ca: Option<&str>,
    cfg: &AgentConfig,
    now: DateTime<Utc>,
) -> Step {
    let hash = addon_identity::password_sha256(password);
    let bound = r.approved_sha256.as_deref() == Some(hash.as_str());
    let certificate = r
        .certificate
        .as_ref()
        .filter(|c| c.serves(&key.public, now));
    Step {
        ask: (!bound || certificate.is_none()).then(|| Ask {
            addon: r.addon.clone(),
            password_sha256: hash,
            public_key: key.public.clone(),
        }),
        write: bound.then(|| {
            Box::new(secret(
                r,
                password,
                certificate.map(|c| (c.pem.as_str(), key.pkcs8_pem.as_str())),
                broker_ca,
                cfg,
            ))
        }),
    }
}

/// The Secret an add-on agent reads its identity from: where the broker is and how to trust
/// it, its username, password and client id, its topic prefix, and (once issued) its client
/// certificate and key for a broker's certificate listener.
pub fn secret(
    r: &Registration,
    password: &str,
    certificate: Option<(&str, &str)>,
    broker_ca: Option<&str>,
    cfg: &AgentConfig,
) -> Manifest {
    let identity = r.identity();
    let mut data = serde_json::Map::new();
    let mut put = |k: &str, v: &str| {
        data.insert(k.to_owned(), json!(BASE64.encode(v.as_bytes())));
    };
    put("broker", &cfg.broker_url);
    put("username", &identity);
    put("password", password);
    put("clientId", &identity);
    put("topicPrefix", &identity);
    put(
        "scoresTopic",
        &addon_identity::scores_topic(&r.addon, &r.cluster),
    );
    put("cluster", &r.cluster);
    put("addon", &r.addon);
    // The CA the agent itself trusts the broker with.
    if let Some(pem) = broker_ca {
        put("ca.crt", pem);
    }
    if let Some(pin) = &cfg.tls.ca_pin {
        put("caPin", &pin.to_string());
    }
    if let Some((cert, key)) = certificate {
        put("tls.crt", cert);
        put("tls.key", key);
    }
    // The certificate listener of an external broker (Mosquitto's, as shipped), if any.
    if let Some(url) = &cfg.broker_mtls_url {
        put("brokerMtls", url);
    }
    Manifest(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": addon_identity::secret_name(&r.addon),
            "namespace": r.namespace,
            "labels": {
                ocm_edge_schemas::api::addon::LABEL_ADDON_NAME: r.addon,
            },
        },
        "type": "Opaque",
        "data": data,
    }))
}

/// `bundle` with `secret` appended (the last manifest, whose ordinal no status reports).
pub fn with_secret(bundle: &ManifestBundle, secret: Manifest) -> ManifestBundle {
    let mut b = bundle.clone();
    b.manifests.push(secret);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> AgentConfig {
        AgentConfig::new("edge-a", "mqtts://hub.example:8883", "/nonexistent")
    }

    fn reg(approved: Option<&str>) -> Registration {
        Registration {
            addon: "hello".into(),
            cluster: "edge-a".into(),
            namespace: "hello-agent".into(),
            nonce: "uid-1".into(),
            approved_sha256: approved.map(addon_identity::password_sha256),
            certificate: None,
        }
    }

    const CA: &str = "-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n";

    fn key() -> AddOnKey {
        AddOnKey {
            pkcs8_pem: "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n".into(),
            public: "the-public-key".into(),
        }
    }

    fn issued(key: &str, days: i64) -> addon_identity::IssuedCertificate {
        addon_identity::IssuedCertificate {
            pem: "-----BEGIN CERTIFICATE-----\nc\n-----END CERTIFICATE-----\n".into(),
            key: key.into(),
            not_before: t(0),
            not_after: t(0) + chrono::TimeDelta::days(days),
        }
    }

    fn t(days: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap() + chrono::TimeDelta::days(days)
    }

    fn field(secret: &Manifest, k: &str) -> Option<String> {
        let b64 = secret.0["data"][k].as_str()?;
        Some(String::from_utf8(BASE64.decode(b64).unwrap()).unwrap())
    }

    #[test]
    fn the_agent_asks_until_its_own_password_is_bound_then_writes_the_secret() {
        let s = step(&reg(None), "pw", &key(), Some(CA), &cfg(), t(1));
        let ask = s.ask.expect("nothing bound: ask");
        assert_eq!(ask.addon, "hello");
        assert_eq!(ask.password_sha256, addon_identity::password_sha256("pw"));
        assert_eq!(ask.public_key, "the-public-key");
        assert!(
            s.write.is_none(),
            "no Secret before the hub bound the password"
        );
        let other = step(&reg(Some("another")), "pw", &key(), Some(CA), &cfg(), t(1));
        assert!(
            other.ask.is_some() && other.write.is_none(),
            "bound to another password (an older key or enable): ask again"
        );

        // Bound, no certificate yet: the Secret for password logins, and ask for one.
        let s = step(&reg(Some("pw")), "pw", &key(), Some(CA), &cfg(), t(1));
        assert!(s.ask.is_some());
        let secret = s.write.expect("bound: write the Secret");
        assert_eq!(secret.0["metadata"]["name"], "hello-hub-mqtt");
        assert_eq!(secret.0["metadata"]["namespace"], "hello-agent");
        assert_eq!(
            field(&secret, "username").unwrap(),
            "addons/hello/clusters/edge-a"
        );
        assert_eq!(field(&secret, "password").unwrap(), "pw");
        assert_eq!(
            field(&secret, "broker").unwrap(),
            "mqtts://hub.example:8883"
        );
        assert_eq!(
            field(&secret, "scoresTopic").unwrap(),
            "addons/hello/clusters/edge-a/placementscores"
        );
        assert_eq!(field(&secret, "tls.crt"), None);
        assert_eq!(field(&secret, "ca.crt").as_deref(), Some(CA));

        // With its certificate: in the Secret, and nothing to ask until renewal is due.
        let mut r = reg(Some("pw"));
        r.certificate = Some(issued("the-public-key", 30));
        let s = step(&r, "pw", &key(), Some(CA), &cfg(), t(1));
        assert_eq!(s.ask, None);
        let secret = s.write.unwrap();
        assert!(
            field(&secret, "tls.crt")
                .unwrap()
                .contains("BEGIN CERTIFICATE")
        );
        assert!(
            field(&secret, "tls.key")
                .unwrap()
                .contains("BEGIN PRIVATE KEY")
        );
        assert!(
            step(&r, "pw", &key(), Some(CA), &cfg(), t(21))
                .ask
                .is_some(),
            "two thirds through its life: ask for a new one"
        );
        r.certificate = Some(issued("another key", 30));
        let s = step(&r, "pw", &key(), Some(CA), &cfg(), t(1));
        assert!(s.ask.is_some(), "a certificate for another key is not used");
        assert_eq!(field(&s.write.unwrap(), "tls.crt"), None);
    }

    #[test]
    fn a_registration_for_another_cluster_or_with_bad_names_is_ignored() {
        let mut annotations = std::collections::BTreeMap::new();
        assert_eq!(
            registration(&annotations, "addon-hello-deploy-0", "edge-a"),
            Ok(None)
        );
        let mut other = reg(None);
        other.cluster = "edge-b".into();
        annotations.insert(
            addon_identity::REGISTRATION_ANNOTATION.to_owned(),
            serde_json::to_string(&other).unwrap(),
        );
        assert!(
            registration(&annotations, "addon-hello-deploy-0", "edge-a")
                .unwrap_err()
                .contains("edge-b")
        );
        let mut bad = reg(None);
        bad.namespace = "kube-system/../x".into();
        annotations.insert(
            addon_identity::REGISTRATION_ANNOTATION.to_owned(),
            serde_json::to_string(&bad).unwrap(),
        );
        assert!(
            registration(&annotations, "addon-hello-deploy-0", "edge-a")
                .unwrap_err()
                .contains("namespace")
        );
        annotations.insert(
            addon_identity::REGISTRATION_ANNOTATION.to_owned(),
            "{not json".into(),
        );
        assert!(registration(&annotations, "addon-hello-deploy-0", "edge-a").is_err());
        // On any other work (an operator's), it speaks for nothing.
        annotations.insert(
            addon_identity::REGISTRATION_ANNOTATION.to_owned(),
            serde_json::to_string(&reg(None)).unwrap(),
        );
        assert!(registration(&annotations, "addon-hello-deploy-0", "edge-a").is_ok());
        assert!(
            registration(&annotations, "evil", "edge-a")
                .unwrap_err()
                .contains("not on the add-on's work")
        );
    }
}

//! Admin API credentials: the client side signs each request with its credential
//! ([`Credential`]), the hub checks the credential and the signature ([`Authenticator`]) and then
//! the role ([`authorize`]). The wire format is [`ocm_edge_schemas::admin::auth`]'s.
//!
//! A credential file (`ocm-edge user create` writes one; the hub writes the first admin's,
//! `DATA_DIR/admin-credentials.pem`, at its first start) holds, in PEM, a client certificate the
//! hub's CA signed (CN = user, OU = role) followed by its ECDSA P-256 key (PKCS#8). The CLI finds
//! it like kubectl finds its config ([`find_credentials`]).

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::{DateTime, Utc};
use ocm_edge_mqtt::SignRequest;
use ocm_edge_schemas::admin::auth::{
    CREDENTIAL_PROPERTY, MAX_CLOCK_SKEW_SECS, SIGNATURE_PROPERTY, SIGNED_AT_PROPERTY, signed_bytes,
};
use ocm_edge_schemas::admin::{AdminRequest, Role};
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::login;
use ocm_edge_schemas::wire::signature::signed_bytes as wire_signed_bytes;
use ring::rand::SystemRandom;

use super::registry::Revocations;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer, UnixTime};

/// Where the CLI looks for a credential when neither `--credentials` nor `OCM_EDGE_CREDENTIALS`
/// names one: this file under the home directory, then the hub's first admin credential in the
/// hub's data directory on this machine.
pub const USER_CREDENTIALS: &str = ".config/ocm-edge/credentials.pem";
/// The first admin credential, in the hub's data directory.
pub const ADMIN_CREDENTIALS: &str = "admin-credentials.pem";

/// Largest credential (base64 of a certificate) the hub reads from a request.
const MAX_CREDENTIAL_CHARS: usize = 8 * 1024;
/// Largest signature (base64) the hub reads from a request.
const MAX_SIGNATURE_CHARS: usize = 512;

/// A credential file that cannot be used. Nothing is sent when this is returned.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// The file cannot be read.
    #[error("credential file {path}: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The file is not a credential.
    #[error(
        "credential file {path}: {reason} (a credential holds a certificate and its key, as `ocm-edge user create` writes it)"
    )]
    Bad {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// A user's credential, loaded: it signs admin requests.
pub struct Credential {
    user: String,
    role: Role,
    not_after: DateTime<Utc>,
    cert_base64: String,
    key: EcdsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for Credential {
    // The key stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("user", &self.user)
            .field("role", &self.role)
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

impl Credential {
    /// Reads a credential file.
    ///
    /// # Errors
    /// [`CredentialError`] naming the file and what is wrong with it.
    pub fn load(path: &Path) -> Result<Self, CredentialError> {
        let pem = std::fs::read(path).map_err(|e| CredentialError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        Self::from_pem(&pem).map_err(|reason| CredentialError::Bad {
            path: path.to_owned(),
            reason,
        })
    }

    /// A credential from its PEM text (certificate, then key).
    ///
    /// # Errors
    /// What is missing or wrong, in words.
    pub fn from_pem(pem: &[u8]) -> Result<Self, String> {
        let cert = CertificateDer::pem_slice_iter(pem)
            .next()
            .ok_or("it holds no certificate")?
            .map_err(|e| format!("its certificate is not readable PEM: {e}"))?;
        let key = PrivatePkcs8KeyDer::from_pem_slice(pem)
            .map_err(|e| format!("it holds no PKCS#8 private key: {e}"))?;
        let rng = SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_ASN1_SIGNING,
            key.secret_pkcs8_der(),
            &rng,
        )
        .map_err(|e| format!("its key is not an ECDSA P-256 key: {e}"))?;
        let subject = Subject::of(&cert)?;
        // The certificate embeds its public key verbatim: another credential's key is not in it.
        let public = ring::signature::KeyPair::public_key(&key).as_ref();
        if !cert.windows(public.len()).any(|w| w == public) {
            return Err("its key is not the key of its certificate".to_owned());
        }
        Ok(Credential {
            user: subject.user,
            role: subject.role,
            not_after: subject.not_after,
            cert_base64: BASE64.encode(cert.as_ref()),
            key,
            rng,
        })
    }

    /// The user name (the certificate's CN).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The role (the certificate's OU).
    pub fn role(&self) -> Role {
        self.role
    }

    /// When the certificate expires.
    pub fn not_after(&self) -> DateTime<Utc> {
        self.not_after
    }

    /// The user properties that prove a request was sent by this credential's user at
    /// `signed_at` (Unix seconds).
    pub fn sign_at(
        &self,
        topic: &str,
        response_topic: &str,
        correlation: &[u8],
        payload: &[u8],
        signed_at: i64,
    ) -> Vec<(String, String)> {
        let bytes = signed_bytes(topic, response_topic, correlation, signed_at, payload);
        // ring fails only when its random source does: the hub then refuses the request as
        // unsigned, with a message saying so, rather than this client stopping.
        let signature = self
            .key
            .sign(&self.rng, &bytes)
            .map(|s| BASE64.encode(s.as_ref()))
            .unwrap_or_default();
        vec![
            (CREDENTIAL_PROPERTY.to_owned(), self.cert_base64.clone()),
            (SIGNED_AT_PROPERTY.to_owned(), signed_at.to_string()),
            (SIGNATURE_PROPERTY.to_owned(), signature),
        ]
    }
}

impl Credential {
    /// The MQTT password that logs this credential in to the hub's embedded broker as
    /// `username` with `client_id` (`ocm_edge_schemas::wire::login`).
    pub fn login_password(&self, username: &str, client_id: &str) -> String {
        let bytes = wire_signed_bytes(&login::credential_login_message(username, client_id));
        // As in `sign_at`: a failing random source makes a proof the broker refuses, with a
        // log line saying so.
        let signature = self
            .key
            .sign(&self.rng, &bytes)
            .map(|s| BASE64.encode(s.as_ref()))
            .unwrap_or_default();
        login::credential_password(&self.cert_base64, &signature)
    }
}

impl SignRequest for Credential {
    fn sign(
        &self,
        topic: &str,
        response_topic: &str,
        correlation: &[u8],
        payload: &[u8],
    ) -> Vec<(String, String)> {
        self.sign_at(
            topic,
            response_topic,
            correlation,
            payload,
            Utc::now().timestamp(),
        )
    }
}

/// The credential file the CLI uses: `explicit` (`--credentials` or `OCM_EDGE_CREDENTIALS`) when
/// given, else `$HOME/.config/ocm-edge/credentials.pem`, else the first admin credential of a hub
/// on this machine (`DATA_DIR/admin-credentials.pem`); `None` when there is none.
pub fn find_credentials(explicit: Option<&Path>, data_dir: &Path) -> Option<PathBuf> {
    if let Some(path) = explicit {
        return Some(path.to_owned());
    }
    let home = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(USER_CREDENTIALS));
    let local = data_dir.join(ADMIN_CREDENTIALS);
    home.into_iter().chain([local]).find(|p| p.is_file())
}

/// Who sent a request, as its verified credential says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The user (CN).
    pub user: String,
    /// The role (OU).
    pub role: Role,
}

/// Why a request is not taken as coming from anyone. Each message says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The request carries no credential.
    #[error(
        "this hub takes only signed admin requests: give the CLI a credential with --credentials FILE or OCM_EDGE_CREDENTIALS (on the hub's machine the first admin's is DATA_DIR/{ADMIN_CREDENTIALS}; an admin makes one per user with `ocm-edge user create NAME --role viewer|operator|admin` there)"
    )]
    NoCredential,
    /// The credential is not one this hub's CA signed, or is unreadable.
    #[error(
        "the credential{claimed} is not accepted: {reason} (credentials come from `ocm-edge user create` on this hub's machine)"
    )]
    Untrusted {
        /// ` of user "U"` when the certificate names one.
        claimed: String,
        /// What is wrong.
        reason: String,
    },
    /// The credential expired.
    #[error(
        "the credential of user {user:?} expired at {not_after}: ask an admin for a new one (`ocm-edge user create {user} --role ...` on the hub's machine)"
    )]
    Expired {
        /// The user.
        user: String,
        /// When it expired.
        not_after: DateTime<Utc>,
    },
    /// The signature is missing or does not match.
    #[error(
        "the request's signature does not match the credential of user {user:?}: {reason} (a corrupted or tampered request; send it again)"
    )]
    BadSignature {
        /// The user.
        user: String,
        /// What is wrong.
        reason: String,
    },
    /// The credential was revoked (`ocm-edge user revoke`), or the revocation list cannot be read.
    #[error("the credential of user {user:?} (serial {serial}) is not accepted: {reason}")]
    Revoked {
        /// The user.
        user: String,
        /// The credential's serial number.
        serial: String,
        /// Revoked, or why the list cannot be read.
        reason: String,
    },
    /// The request was signed too far from the hub's clock.
    #[error(
        "the request was signed at Unix time {signed_at}, {off} s from the hub's clock (at most {MAX_CLOCK_SKEW_SECS} s are allowed): set the client's clock right (NTP)"
    )]
    Clock {
        /// When it says it was signed.
        signed_at: i64,
        /// How far from the hub's clock, in seconds.
        off: i64,
    },
}

/// Checks admin requests against the hub's CA.
#[derive(Debug, Clone)]
pub struct Authenticator {
    ca: CertificateDer<'static>,
    revocations: Option<Revocations>,
}

impl Authenticator {
    /// An authenticator trusting credentials signed by the CA `ca_der`.
    pub fn new(ca_der: Vec<u8>) -> Self {
        Authenticator {
            ca: CertificateDer::from(ca_der),
            revocations: None,
        }
    }

    /// This authenticator, refusing the credentials revoked in the hub's data directory
    /// `data_dir` (`ocm-edge user revoke`; the list is read at every check).
    #[must_use]
    pub fn with_revocations(mut self, data_dir: &Path) -> Self {
        self.revocations = Some(Revocations::new(data_dir));
        self
    }

    /// Who sent `request` (its topic, payload and user properties) with `response_topic` and
    /// `correlation`: the credential must be signed by the CA and valid at `now`, the signature
    /// must cover exactly these, and the signing time must be within [`MAX_CLOCK_SKEW_SECS`] of
    /// `now`.
    ///
    /// # Errors
    /// [`AuthError`] saying which check failed.
    pub fn authenticate(
        &self,
        request: &MqttMessage,
        response_topic: &str,
        correlation: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Identity, AuthError> {
        let property = |name: &str| {
            request
                .user_properties
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        let credential = property(CREDENTIAL_PROPERTY).ok_or(AuthError::NoCredential)?;
        let (cert, subject) = self.verified(credential, now)?;
        let end_entity =
            webpki::EndEntityCert::try_from(&cert).map_err(|e| AuthError::Untrusted {
                claimed: format!(" of user {:?}", subject.user),
                reason: format!("not a usable certificate: {e}"),
            })?;
        let bad_signature = |reason: &str| AuthError::BadSignature {
            user: subject.user.clone(),
            reason: reason.to_owned(),
        };
        let signed_at: i64 = property(SIGNED_AT_PROPERTY)
            .ok_or_else(|| bad_signature("no signing time"))?
            .parse()
            .map_err(|_| bad_signature("the signing time is not a number"))?;
        let off = signed_at.saturating_sub(now.timestamp());
        if off.abs() > MAX_CLOCK_SKEW_SECS {
            return Err(AuthError::Clock { signed_at, off });
        }
        let signature = property(SIGNATURE_PROPERTY).ok_or_else(|| bad_signature("unsigned"))?;
        let bytes = signed_bytes(
            &request.topic,
            response_topic,
            correlation,
            signed_at,
            &request.payload,
        );
        verify_signature(&end_entity, subject, signature, &bytes)
    }

    /// Who logs in to the embedded broker as `username` with `client_id` and the credential
    /// login proof `certificate` / `signature` (base64; `ocm_edge_schemas::wire::login`): the
    /// credential must be signed by the CA and valid at `now`, and the signature must cover
    /// exactly this username and client id.
    ///
    /// # Errors
    /// [`AuthError`] saying which check failed.
    pub fn authenticate_login(
        &self,
        username: &str,
        client_id: &str,
        certificate: &str,
        signature: &str,
        now: DateTime<Utc>,
    ) -> Result<Identity, AuthError> {
        let (cert, subject) = self.verified(certificate, now)?;
        let end_entity =
            webpki::EndEntityCert::try_from(&cert).map_err(|e| AuthError::BadSignature {
                user: subject.user.clone(),
                reason: format!("not a usable certificate: {e}"),
            })?;
        let bytes = wire_signed_bytes(&login::credential_login_message(username, client_id));
        verify_signature(&end_entity, subject, signature, &bytes)
    }

    /// The certificate of `credential` (base64 DER) and what it says, when the CA signed it
    /// and it is valid at `now`.
    fn verified(
        &self,
        credential: &str,
        now: DateTime<Utc>,
    ) -> Result<(CertificateDer<'static>, Subject), AuthError> {
        let untrusted = |claimed: &str, reason: String| AuthError::Untrusted {
            claimed: claimed.to_owned(),
            reason,
        };
        if credential.len() > MAX_CREDENTIAL_CHARS {
            return Err(untrusted(
                "",
                format!("it is longer than {MAX_CREDENTIAL_CHARS} characters"),
            ));
        }
        let der = BASE64
            .decode(credential)
            .map_err(|e| untrusted("", format!("it is not base64: {e}")))?;
        let cert = CertificateDer::from(der);
        let subject = Subject::of(&cert).map_err(|reason| untrusted("", reason))?;
        let claimed = format!(" of user {:?}", subject.user);
        let anchor = webpki::anchor_from_trusted_cert(&self.ca)
            .map_err(|e| untrusted(&claimed, format!("the hub's CA is unusable: {e}")))?;
        let end_entity = webpki::EndEntityCert::try_from(&cert)
            .map_err(|e| untrusted(&claimed, format!("not a usable certificate: {e}")))?;
        let at = UnixTime::since_unix_epoch(std::time::Duration::from_secs(
            now.timestamp().max(0) as u64
        ));
        let anchors = [anchor];
        let verified = end_entity.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &anchors,
            &[],
            at,
            webpki::KeyUsage::client_auth(),
            None,
            None,
        );
        match verified.map(|_| ()) {
            Ok(()) => {}
            Err(webpki::Error::CertExpired { .. }) => {
                return Err(AuthError::Expired {
                    user: subject.user,
                    not_after: subject.not_after,
                });
            }
            // Every ocm-edge hub's CA has the same name: another hub's credential names this CA
            // as its issuer and fails on the signature.
            Err(webpki::Error::UnknownIssuer | webpki::Error::InvalidSignatureForPublicKey) => {
                return Err(untrusted(
                    &claimed,
                    "it is not signed by this hub's CA".to_owned(),
                ));
            }
            Err(e) => return Err(untrusted(&claimed, e.to_string())),
        }
        if let Some(revocations) = &self.revocations {
            let refused = |reason: String| AuthError::Revoked {
                user: subject.user.clone(),
                serial: subject.serial.clone(),
                reason,
            };
            match revocations.is_revoked(&subject.serial) {
                Ok(false) => {}
                Ok(true) => {
                    return Err(refused(format!(
                        "it was revoked (`ocm-edge user revoke`): ask an admin for a new one (`ocm-edge user create {} --role ...` on the hub's machine)",
                        subject.user
                    )));
                }
                Err(e) => {
                    return Err(refused(format!(
                        "the hub cannot read its revocation list ({e}), so it takes no credential until it can"
                    )));
                }
            }
        }
        Ok((cert, subject))
    }
}

/// The identity of `subject` when `signature` (base64) is its certificate's ECDSA P-256
/// signature over `bytes`.
fn verify_signature(
    end_entity: &webpki::EndEntityCert<'_>,
    subject: Subject,
    signature: &str,
    bytes: &[u8],
) -> Result<Identity, AuthError> {
    let bad_signature = |reason: &str| AuthError::BadSignature {
        user: subject.user.clone(),
        reason: reason.to_owned(),
    };
    if signature.len() > MAX_SIGNATURE_CHARS {
        return Err(bad_signature("the signature is too long"));
    }
    let signature = BASE64
        .decode(signature)
        .map_err(|_| bad_signature("the signature is not base64"))?;
    end_entity
        .verify_signature(webpki::ring::ECDSA_P256_SHA256, bytes, &signature)
        .map_err(|_| bad_signature("the signature is wrong"))?;
    Ok(Identity {
        user: subject.user,
        role: subject.role,
    })
}

/// Whether `who` may send `request`.
///
/// # Errors
/// The "forbidden" message the hub answers with.
pub fn authorize(who: &Identity, request: &AdminRequest) -> Result<(), String> {
    let needs = request.required_role();
    if who.role >= needs {
        return Ok(());
    }
    Err(format!(
        "forbidden: user {:?} (role {}) may not {} (it needs the role {needs}; an admin can issue a credential with that role: `ocm-edge user create`)",
        who.user,
        who.role,
        request.command()
    ))
}

/// The user, role and expiry a credential certificate names.
struct Subject {
    user: String,
    role: Role,
    not_after: DateTime<Utc>,
    /// The certificate's serial number, lowercase hex (as [`crate::admin::registry`] holds it).
    serial: String,
}

impl Subject {
    fn of(cert: &CertificateDer<'_>) -> Result<Subject, String> {
        use x509_parser::prelude::{FromDer, X509Certificate};
        let (_, parsed) = X509Certificate::from_der(cert.as_ref())
            .map_err(|e| format!("its certificate is not DER X.509: {e}"))?;
        let subject = parsed.subject();
        let text = |attr: Option<&x509_parser::x509::AttributeTypeAndValue<'_>>| {
            attr.and_then(|a| a.as_str().ok()).map(str::to_owned)
        };
        let user = text(subject.iter_common_name().next())
            .filter(|u| !u.is_empty())
            .ok_or("its certificate names no user (CN)")?;
        let role = text(subject.iter_organizational_unit().next())
            .ok_or_else(|| format!("the certificate of user {user:?} names no role (OU)"))?;
        let role: Role = role.parse().map_err(|e| {
            format!("the certificate of user {user:?} has the role (OU) {role:?}: {e}")
        })?;
        let not_after = DateTime::from_timestamp(parsed.validity().not_after.timestamp(), 0)
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        let serial = parsed
            .raw_serial()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(Subject {
            user,
            role,
            not_after,
            serial,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::HubPki;

    fn now() -> DateTime<Utc> {
        "2026-11-25T10:00:00Z".parse().unwrap()
    }

    fn pki() -> (tempfile::TempDir, HubPki) {
        let dir = tempfile::tempdir().unwrap();
        let pki = HubPki::load_or_create(&dir.path().join("pki"), now()).unwrap();
        (dir, pki)
    }

    fn credential(pki: &HubPki, user: &str, role: Role) -> Credential {
        let (pem, _) = pki
            .issue_user(user, role, chrono::Duration::days(30), now())
            .unwrap();
        Credential::from_pem(pem.as_bytes()).unwrap()
    }

    const TOPIC: &str = "ocm-edge/ocm-edge/admin/requests";
    const REPLY: &str = "ocm-edge/ocm-edge/admin/responses/ocm-edge-cli-1";

    fn signed(c: &Credential, payload: &[u8], at: DateTime<Utc>) -> MqttMessage {
        MqttMessage {
            topic: TOPIC.to_owned(),
            payload: payload.to_vec(),
            content_type: None,
            user_properties: c.sign_at(TOPIC, REPLY, b"c1", payload, at.timestamp()),
        }
    }

    #[test]
    fn a_request_signed_with_a_credential_of_this_hub_names_its_user_and_role() {
        let (_dir, pki) = pki();
        let c = credential(&pki, "alice", Role::Operator);
        assert_eq!((c.user(), c.role()), ("alice", Role::Operator));
        let auth = Authenticator::new(pki.ca_der().unwrap());
        let m = signed(&c, b"{\"command\":\"stats\"}", now());
        let who = auth.authenticate(&m, REPLY, b"c1", now()).unwrap();
        assert_eq!(
            who,
            Identity {
                user: "alice".into(),
                role: Role::Operator
            }
        );
    }

    #[test]
    fn unsigned_foreign_expired_tampered_stale_and_redirected_requests_are_refused() {
        let (_dir, pki) = pki();
        let (_other_dir, other) = self::pki();
        let auth = Authenticator::new(pki.ca_der().unwrap());
        let c = credential(&pki, "alice", Role::Admin);
        let payload = b"{\"command\":\"acceptCluster\",\"name\":\"a\"}";

        let mut unsigned = signed(&c, payload, now());
        unsigned.user_properties.clear();
        assert_eq!(
            auth.authenticate(&unsigned, REPLY, b"c1", now()),
            Err(AuthError::NoCredential)
        );

        let foreign = credential(&other, "mallory", Role::Admin);
        let e = auth
            .authenticate(&signed(&foreign, payload, now()), REPLY, b"c1", now())
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("user \"mallory\" is not accepted: it is not signed by this hub's CA"),
            "{e}"
        );

        let later = now() + chrono::Duration::days(31);
        let e = auth
            .authenticate(&signed(&c, payload, later), REPLY, b"c1", later)
            .unwrap_err();
        assert!(matches!(e, AuthError::Expired { .. }), "{e}");

        let mut tampered = signed(&c, payload, now());
        tampered.payload = b"{\"command\":\"acceptCluster\",\"name\":\"b\"}".to_vec();
        let e = auth
            .authenticate(&tampered, REPLY, b"c1", now())
            .unwrap_err();
        assert!(matches!(e, AuthError::BadSignature { .. }), "{e}");

        // Replayed to another reply address or with other correlation data.
        let m = signed(&c, payload, now());
        assert!(auth.authenticate(&m, "elsewhere", b"c1", now()).is_err());
        assert!(auth.authenticate(&m, REPLY, b"c2", now()).is_err());

        // Replayed after the skew window.
        let e = auth
            .authenticate(&m, REPLY, b"c1", now() + chrono::Duration::seconds(301))
            .unwrap_err();
        assert!(matches!(e, AuthError::Clock { off: -301, .. }), "{e}");
        assert!(e.to_string().contains("clock"), "{e}");

        // Another credential's certificate with this one's signature.
        let bob = credential(&pki, "bob", Role::Viewer);
        let mut swapped = signed(&bob, payload, now());
        swapped.user_properties[0] = signed(&c, payload, now()).user_properties[0].clone();
        swapped.user_properties[2] = signed(&bob, payload, now()).user_properties[2].clone();
        let e = auth
            .authenticate(&swapped, REPLY, b"c1", now())
            .unwrap_err();
        assert!(matches!(e, AuthError::BadSignature { .. }), "{e}");

        for garbage in ["", "!!!", "AAAA", &"A".repeat(9000)] {
            let mut m = signed(&c, payload, now());
            m.user_properties[0].1 = garbage.to_owned();
            assert!(matches!(
                auth.authenticate(&m, REPLY, b"c1", now()),
                Err(AuthError::Untrusted { .. })
            ));
        }
    }

    #[test]
    fn a_clusters_tls_certificate_is_no_admin_credential() {
        let (_dir, pki) = pki();
        let (cert, key) = pki
            .issue_cluster_tls("ocm-1", chrono::Duration::days(1), now())
            .unwrap();
        // Its OU is no role: it does not load as a credential.
        let e = Credential::from_pem(format!("{cert}{key}").as_bytes()).unwrap_err();
        assert!(e.to_string().contains("cluster"), "{e}");
    }

    #[test]
    fn a_revoked_credential_is_refused_for_requests_and_logins_and_the_users_other_ones_are_too() {
        let (dir, pki) = pki();
        let data = dir.path();
        let auth = Authenticator::new(pki.ca_der().unwrap()).with_revocations(data);
        let issue = |user: &str| {
            let (pem, record) = pki
                .issue_user(user, Role::Admin, chrono::Duration::days(30), now())
                .unwrap();
            crate::admin::registry::record_issued(data, &record).unwrap();
            (Credential::from_pem(pem.as_bytes()).unwrap(), record.serial)
        };
        let (alice1, serial1) = issue("alice");
        let (alice2, _) = issue("alice");
        let (bob, _) = issue("bob");
        let payload = b"{\"command\":\"stats\"}";
        let login = |c: &Credential| {
            let password = c.login_password("ocm-edge-operator", "cli-1");
            let (certificate, signature) = match login::parse(&password) {
                Ok(login::LoginProof::Credential {
                    certificate,
                    signature,
                }) => (certificate, signature),
                other => panic!("not a credential proof: {other:?}"),
            };
            auth.authenticate_login("ocm-edge-operator", "cli-1", certificate, signature, now())
        };
        for c in [&alice1, &alice2, &bob] {
            assert!(
                auth.authenticate(&signed(c, payload, now()), REPLY, b"c1", now())
                    .is_ok()
            );
            assert!(login(c).is_ok());
        }

        crate::admin::registry::revoke(data, &crate::admin::registry::Revoke::User("alice"), now())
            .unwrap();
        for c in [&alice1, &alice2] {
            let e = auth
                .authenticate(&signed(c, payload, now()), REPLY, b"c1", now())
                .unwrap_err();
            assert!(matches!(e, AuthError::Revoked { .. }), "{e}");
            assert!(
                e.to_string().contains("revoked (`ocm-edge user revoke`)"),
                "{e}"
            );
            assert!(matches!(login(c), Err(AuthError::Revoked { .. })));
        }
        let e = login(&alice1).unwrap_err().to_string();
        assert!(e.contains(&serial1), "the refusal names the serial: {e}");
        assert!(
            auth.authenticate(&signed(&bob, payload, now()), REPLY, b"c1", now())
                .is_ok()
        );
        // A new credential for alice is not revoked.
        let (alice3, _) = issue("alice");
        assert!(login(&alice3).is_ok());
        // An authenticator without the list (the CLI's side) knows nothing of it.
        let plain = Authenticator::new(pki.ca_der().unwrap());
        assert!(
            plain
                .authenticate(&signed(&alice1, payload, now()), REPLY, b"c1", now())
                .is_ok()
        );
    }

    #[test]
    fn each_role_may_do_what_it_is_for_and_the_refusal_names_user_role_and_command() {
        let viewer = Identity {
            user: "v".into(),
            role: Role::Viewer,
        };
        let operator = Identity {
            user: "o".into(),
            role: Role::Operator,
        };
        let create = AdminRequest::CreateWork(Default::default());
        let accept = AdminRequest::AcceptCluster { name: "a".into() };
        assert!(authorize(&viewer, &AdminRequest::Stats).is_ok());
        assert_eq!(
            authorize(&viewer, &create).unwrap_err(),
            "forbidden: user \"v\" (role viewer) may not createWork (it needs the role operator; an admin can issue a credential with that role: `ocm-edge user create`)"
        );
        assert!(authorize(&operator, &create).is_ok());
        assert!(authorize(&operator, &accept).is_err());
        let admin = Identity {
            user: "a".into(),
            role: Role::Admin,
        };
        assert!(authorize(&admin, &accept).is_ok());
    }

    #[test]
    fn a_file_that_is_not_a_credential_is_named_with_what_is_wrong() {
        let (dir, pki) = pki();
        let path = dir.path().join("c.pem");
        std::fs::write(&path, "hello").unwrap();
        let e = Credential::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("c.pem") && e.contains("holds no certificate"),
            "{e}"
        );
        // Someone else's key with this certificate.
        let (a, _) = pki
            .issue_user("a", Role::Admin, chrono::Duration::days(1), now())
            .unwrap();
        let (b, _) = pki
            .issue_user("b", Role::Admin, chrono::Duration::days(1), now())
            .unwrap();
        let split = |s: &str| s.find("-----BEGIN PRIVATE KEY").unwrap();
        let mixed = format!("{}{}", &a[..split(&a)], &b[split(&b)..]);
        std::fs::write(&path, mixed).unwrap();
        let e = Credential::load(&path).unwrap_err().to_string();
        assert!(e.contains("not the key of its certificate"), "{e}");
        let e = Credential::load(&dir.path().join("absent.pem"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("absent.pem"), "{e}");
    }
}

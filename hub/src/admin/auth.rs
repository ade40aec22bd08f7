//! Who sent an admin request: the hub checks the credential and the signature each request
//! carries ([`Authenticator`]) and then the role ([`authorize_role`]; [`super::scope`] then
//! checks a scoped credential's scope). The wire format is
//! [`ocm_edge_schemas::admin::auth`]'s; the client half, which signs, is the CLI's
//! (`ocm_edge_cli::client::credential`).
//!
//! A credential (`ocm-edge user create` writes one; the hub writes the first admin's,
//! [`super::users::ADMIN_CREDENTIALS`], at its first start) is a client certificate the hub's CA
//! signed (CN = user, OU = role, and for a scoped credential the scope extension) with its ECDSA
//! P-256 key; [`CredentialSubject`] reads what the certificate says, for both halves.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::{DateTime, Utc};
use ocm_edge_schemas::admin::auth::SCOPE_EXTENSION_OID;
use ocm_edge_schemas::admin::auth::{
    CREDENTIAL_PROPERTY, MAX_CLOCK_SKEW_SECS, SIGNATURE_PROPERTY, SIGNED_AT_PROPERTY, signed_bytes,
};
use ocm_edge_schemas::admin::{AdminRequest, CredentialScope, Role};
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::login;
use ocm_edge_schemas::wire::signature::signed_bytes as wire_signed_bytes;
use rustls::pki_types::{CertificateDer, UnixTime};

use super::users::{ADMIN_CREDENTIALS, Revocations};

/// Largest credential (base64 of a certificate) the hub reads from a request.
const MAX_CREDENTIAL_CHARS: usize = 8 * 1024;
/// Largest signature (base64) the hub reads from a request.
const MAX_SIGNATURE_CHARS: usize = 512;

/// Who sent a request, as its verified credential says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The user (CN).
    pub user: String,
    /// The role (OU).
    pub role: Role,
    /// What the credential is limited to (`None`: unscoped, every right of the role).
    pub scope: Option<CredentialScope>,
}

impl Identity {
    /// An unscoped identity.
    pub fn new(user: impl Into<String>, role: Role) -> Identity {
        Identity {
            user: user.into(),
            role,
            scope: None,
        }
    }

    /// `user "alice" (operator)`, or `user "alice" (operator of namespaces team-a; cluster sets
    /// eu)`: who is refused, in refusals.
    pub fn describe(&self) -> String {
        match &self.scope {
            None => format!("user {:?} (role {})", self.user, self.role),
            Some(scope) => format!("user {:?} ({} of {scope})", self.user, self.role),
        }
    }
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
    ) -> Result<(CertificateDer<'static>, CredentialSubject), AuthError> {
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
        let subject = CredentialSubject::of(&cert).map_err(|reason| untrusted("", reason))?;
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
    subject: CredentialSubject,
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
        scope: subject.scope,
    })
}

/// Whether the role of `who` may send `request` (the first check of [`super::scope::authorize`]).
///
/// # Errors
/// The "forbidden" message the hub answers with.
pub fn authorize_role(who: &Identity, request: &AdminRequest) -> Result<(), String> {
    let needs = request.required_role();
    if who.role >= needs {
        return Ok(());
    }
    Err(format!(
        "forbidden: {} may not {} (it needs the role {needs}; an admin can issue a credential with that role: `ocm-edge user create`)",
        who.describe(),
        request.command()
    ))
}

/// The user, role, scope and expiry a credential certificate names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialSubject {
    /// The user (CN).
    pub user: String,
    /// The role (OU).
    pub role: Role,
    /// When the certificate expires.
    pub not_after: DateTime<Utc>,
    /// The certificate's serial number, lowercase hex (as [`super::users`] holds it).
    pub serial: String,
    /// What the credential is limited to (`None`: no scope extension).
    pub scope: Option<CredentialScope>,
}

impl CredentialSubject {
    /// What the certificate `cert` (DER) says.
    ///
    /// # Errors
    /// What is missing or wrong, in words.
    pub fn of(cert: &CertificateDer<'_>) -> Result<CredentialSubject, String> {
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
        // A scope that cannot be read refuses the credential: read as unscoped it would give
        // every right of its role.
        let mut scopes = parsed.extensions().iter().filter(|e| {
            e.oid
                .iter()
                .is_some_and(|arcs| arcs.eq(SCOPE_EXTENSION_OID.iter().copied()))
        });
        let scope = match (scopes.next(), scopes.next()) {
            (None, _) => None,
            (Some(one), None) => Some(
                CredentialScope::from_extension_value(one.value, role)
                    .map_err(|e| format!("the certificate of user {user:?}: {e}"))?,
            ),
            (Some(_), Some(_)) => {
                return Err(format!(
                    "the certificate of user {user:?} has two scope extensions"
                ));
            }
        };
        Ok(CredentialSubject {
            user,
            role,
            not_after,
            serial,
            scope,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Requests signed with real credentials are checked against this authenticator in the CLI
    // crate's tests (`credentials`): the signing half is the CLI's.

    #[test]
    fn each_role_may_do_what_it_is_for_and_the_refusal_names_user_role_and_command() {
        let viewer = Identity::new("v", Role::Viewer);
        let operator = Identity::new("o", Role::Operator);
        let create = AdminRequest::CreateWork(Default::default());
        let accept = AdminRequest::accept_cluster("a");
        assert!(authorize_role(&viewer, &AdminRequest::Stats).is_ok());
        assert_eq!(
            authorize_role(&viewer, &create).unwrap_err(),
            "forbidden: user \"v\" (role viewer) may not createWork (it needs the role operator; an admin can issue a credential with that role: `ocm-edge user create`)"
        );
        assert!(authorize_role(&operator, &create).is_ok());
        assert!(authorize_role(&operator, &accept).is_err());
        let admin = Identity::new("a", Role::Admin);
        assert!(authorize_role(&admin, &accept).is_ok());
    }
}

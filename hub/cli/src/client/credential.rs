//! The client half of admin API credentials: the CLI signs each request with its credential
//! ([`Credential`]); the hub checks it (`ocm_edge_hub::admin::auth`). The wire format is
//! [`ocm_edge_schemas::admin::auth`]'s.
//!
//! A credential file (`ocm-edge user create` writes one; the hub writes the first admin's,
//! `DATA_DIR/admin-credentials.pem`, at its first start) holds, in PEM, a client certificate the
//! hub's CA signed (CN = user, OU = role) followed by its ECDSA P-256 key (PKCS#8). The CLI finds
//! it like kubectl finds its config ([`find_credentials`]).

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::{DateTime, Utc};
use ocm_edge_hub::admin::auth::CredentialSubject;
use ocm_edge_hub::admin::users::ADMIN_CREDENTIALS;
use ocm_edge_mqtt::SignRequest;
use ocm_edge_schemas::admin::auth::{
    CREDENTIAL_PROPERTY, SIGNATURE_PROPERTY, SIGNED_AT_PROPERTY, signed_bytes,
};
use ocm_edge_schemas::admin::{CredentialScope, Role};
use ocm_edge_schemas::wire::login;
use ocm_edge_schemas::wire::signature::signed_bytes as wire_signed_bytes;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};

/// Where the CLI looks for a credential when neither `--credentials` nor `OCM_EDGE_CREDENTIALS`
/// names one: this file under the home directory, then the hub's first admin credential in the
/// hub's data directory on this machine.
pub const USER_CREDENTIALS: &str = ".config/ocm-edge/credentials.pem";

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
    scope: Option<CredentialScope>,
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
            .field("scope", &self.scope)
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
        let subject = CredentialSubject::of(&cert)?;
        // The certificate embeds its public key verbatim: another credential's key is not in it.
        let public = ring::signature::KeyPair::public_key(&key).as_ref();
        if !cert.windows(public.len()).any(|w| w == public) {
            return Err("its key is not the key of its certificate".to_owned());
        }
        Ok(Credential {
            user: subject.user,
            role: subject.role,
            scope: subject.scope,
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

    /// What the credential is limited to (`None`: unscoped); the hub checks it, this only says
    /// it.
    pub fn scope(&self) -> Option<&CredentialScope> {
        self.scope.as_ref()
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

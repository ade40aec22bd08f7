//! How ocm-edge's clients prove who they are when they log in to the hub's embedded broker: the
//! MQTT password carries a proof made with a key the client holds, never a shared secret.
//!
//! - An agent logs in as its cluster (username = cluster name) with [`AGENT_KEY_PREFIX`]: its
//!   Ed25519 public key and a signature with it over [`agent_login_message`] (the label, the
//!   username and the client id, through [`super::signature::signed_bytes`]). The hub lets in a
//!   cluster it accepted only with the key bound at `cluster accept`, a denied one never, and a
//!   cluster it does not know yet (joining) with any key, to its own topics only.
//! - The CLI logs in as the operator identity with [`CREDENTIAL_PREFIX`]: its admin credential's
//!   certificate (the hub checks it against its CA and its validity) and an ECDSA P-256 signature
//!   with the credential's key over [`credential_login_message`].
//!
//! Both proofs travel inside TLS to the broker that checks them. They carry no time (edge clocks
//! drift, an agent offline for months must get back in, and a client library reconnects with the
//! password it was given): each is a fixed secret per (key, username, client id) that only the
//! broker ever sees, and worth nothing once the key is no longer the cluster's or the credential
//! has expired.
//!
//! Fields are separated by `:` (not in base64 or in decimal numbers).

use super::MqttMessage;

/// Prefix of an agent's key login: `ocm-edge-agent-key-v1:<public key>:<signature>` (base64),
/// then `:<join token>` while its cluster has not been accepted.
pub const AGENT_KEY_PREFIX: &str = "ocm-edge-agent-key-v1:";
/// Prefix of a credential login: `ocm-edge-credential-v1:<certificate DER>:<signature>` (base64).
pub const CREDENTIAL_PREFIX: &str = "ocm-edge-credential-v1:";
/// The topic label an agent's login proof signs.
pub const AGENT_LOGIN_LABEL: &str = "ocm-edge/login/agent-key";
/// The topic label a credential login signs.
pub const CREDENTIAL_LOGIN_LABEL: &str = "ocm-edge/login/credential";
/// Longest password read (a certificate of a few KiB in base64 and a signature).
pub const MAX_LOGIN_CHARS: usize = 10 * 1024;

/// A login proof as it travels (fields still base64).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginProof<'a> {
    /// An agent's key and its signature over [`agent_login_message`].
    AgentKey {
        /// Raw Ed25519 public key, base64.
        public_key: &'a str,
        /// Signature, base64.
        signature: &'a str,
        /// The join token (`ocm-edge token create`), which a cluster the hub has not accepted
        /// needs to get in.
        token: Option<&'a str>,
    },
    /// An admin credential and its signature (see the module).
    Credential {
        /// Certificate DER, base64.
        certificate: &'a str,
        /// Signature, base64.
        signature: &'a str,
    },
}

/// A password that is no login proof.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginError {
    #[error("the password is longer than {MAX_LOGIN_CHARS} characters")]
    TooLong,
    #[error(
        "the password is no ocm-edge login proof (it starts with neither {AGENT_KEY_PREFIX:?} nor {CREDENTIAL_PREFIX:?})"
    )]
    UnknownKind,
    #[error("the login proof is malformed: {0}")]
    Malformed(&'static str),
}

/// Reads a password as a login proof.
///
/// # Errors
/// [`LoginError`] for anything else.
pub fn parse(password: &str) -> Result<LoginProof<'_>, LoginError> {
    if password.len() > MAX_LOGIN_CHARS {
        return Err(LoginError::TooLong);
    }
    if let Some(rest) = password.strip_prefix(AGENT_KEY_PREFIX) {
        let what = "a key login has a key, a signature and at most a join token";
        let (public_key, rest) = rest.split_once(':').ok_or(LoginError::Malformed(what))?;
        let (signature, token) = match rest.split_once(':') {
            Some((signature, token)) => (signature, Some(token)),
            None => (rest, None),
        };
        if public_key.is_empty()
            || signature.is_empty()
            || token.is_some_and(|t| t.is_empty() || t.contains(':'))
        {
            return Err(LoginError::Malformed(what));
        }
        return Ok(LoginProof::AgentKey {
            public_key,
            signature,
            token,
        });
    }
    if let Some(rest) = password.strip_prefix(CREDENTIAL_PREFIX) {
        let (certificate, signature) = two_fields(
            rest,
            "a credential login has exactly a certificate and a signature",
        )?;
        return Ok(LoginProof::Credential {
            certificate,
            signature,
        });
    }
    Err(LoginError::UnknownKind)
}

fn two_fields<'a>(s: &'a str, what: &'static str) -> Result<(&'a str, &'a str), LoginError> {
    match s.split_once(':') {
        Some((a, b)) if !a.is_empty() && !b.is_empty() && !b.contains(':') => Ok((a, b)),
        _ => Err(LoginError::Malformed(what)),
    }
}

/// The password of an agent's key login, with the join token while it has one.
pub fn agent_key_password(
    public_key_base64: &str,
    signature_base64: &str,
    token: Option<&str>,
) -> String {
    match token {
        Some(t) => format!("{AGENT_KEY_PREFIX}{public_key_base64}:{signature_base64}:{t}"),
        None => format!("{AGENT_KEY_PREFIX}{public_key_base64}:{signature_base64}"),
    }
}

/// The password of a credential login.
pub fn credential_password(certificate_base64: &str, signature_base64: &str) -> String {
    format!("{CREDENTIAL_PREFIX}{certificate_base64}:{signature_base64}")
}

/// What an agent signs to log in as `username` with `client_id` (its bytes through
/// [`super::signature::signed_bytes`]).
pub fn agent_login_message(username: &str, client_id: &str) -> MqttMessage {
    login_message(AGENT_LOGIN_LABEL, username, client_id)
}

/// What a credential signs to log in as `username` with `client_id` (its bytes through
/// [`super::signature::signed_bytes`]).
pub fn credential_login_message(username: &str, client_id: &str) -> MqttMessage {
    login_message(CREDENTIAL_LOGIN_LABEL, username, client_id)
}

fn login_message(label: &str, username: &str, client_id: &str) -> MqttMessage {
    MqttMessage {
        topic: label.to_owned(),
        payload: Vec::new(),
        content_type: None,
        user_properties: vec![
            ("username".to_owned(), username.to_owned()),
            ("client-id".to_owned(), client_id.to_owned()),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::signature::signed_bytes;

    #[test]
    fn proofs_read_back_as_written() {
        let p = agent_key_password("a2V5", "c2ln", None);
        assert_eq!(
            parse(&p),
            Ok(LoginProof::AgentKey {
                public_key: "a2V5",
                signature: "c2ln",
                token: None,
            })
        );
        let p = agent_key_password("a2V5", "c2ln", Some("oet1.0a0b0c0d.1.bWFj"));
        assert_eq!(
            parse(&p),
            Ok(LoginProof::AgentKey {
                public_key: "a2V5",
                signature: "c2ln",
                token: Some("oet1.0a0b0c0d.1.bWFj"),
            })
        );
        let p = credential_password("Y2VydA==", "c2ln");
        assert_eq!(
            parse(&p),
            Ok(LoginProof::Credential {
                certificate: "Y2VydA==",
                signature: "c2ln"
            })
        );
    }

    #[test]
    fn anything_else_is_refused_with_a_reason() {
        assert_eq!(parse("hunter2"), Err(LoginError::UnknownKind));
        assert_eq!(parse(""), Err(LoginError::UnknownKind));
        for bad in [
            "ocm-edge-agent-key-v1:",
            "ocm-edge-agent-key-v1:key",
            "ocm-edge-agent-key-v1::sig",
            "ocm-edge-agent-key-v1:key:sig:",
            "ocm-edge-agent-key-v1:key:sig:token:more",
            "ocm-edge-credential-v1:cert",
            "ocm-edge-credential-v1::sig",
            "ocm-edge-credential-v1:cert:12:sig",
        ] {
            assert!(matches!(parse(bad), Err(LoginError::Malformed(_))), "{bad}");
        }
        let long = format!("{AGENT_KEY_PREFIX}{}", "a".repeat(MAX_LOGIN_CHARS));
        assert_eq!(parse(&long), Err(LoginError::TooLong));
    }

    #[test]
    fn a_login_proof_is_bound_to_its_username_and_client_id() {
        let base = signed_bytes(&agent_login_message("edge-a", "edge-a-agent"));
        assert_ne!(
            base,
            signed_bytes(&agent_login_message("edge-b", "edge-a-agent"))
        );
        assert_ne!(
            base,
            signed_bytes(&agent_login_message("edge-a", "edge-b-agent"))
        );
        assert_ne!(
            base,
            signed_bytes(&credential_login_message("edge-a", "edge-a-agent")),
            "an agent's proof is no credential's"
        );
        // No shifting of bytes between the two fields.
        assert_ne!(
            signed_bytes(&agent_login_message("edge-a-", "agent")),
            signed_bytes(&agent_login_message("edge-a", "-agent"))
        );
    }
}

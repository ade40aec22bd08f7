//! Who may send which admin command: roles, and the signature that proves who sent a request.
//!
//! The broker carries requests from anyone who may publish on the admin topic, so the hub does not
//! take a request on the broker's word: each one carries its sender's credential (a client
//! certificate the hub's CA signed, with the user's name as CN and the role as OU) and a signature
//! with the credential's key over the request ([`signed_bytes`]). The hub checks the certificate
//! against its CA, the signature, and the time it was signed ([`MAX_CLOCK_SKEW_SECS`]), then
//! authorizes the command by role ([`AdminRequest::required_role`]). Because the proof travels in
//! the message, it holds through any broker, embedded or external, shared or not.
//!
//! # MQTT 5 user properties of a signed request
//! - [`CREDENTIAL_PROPERTY`]: the certificate, DER, base64 (standard alphabet, padded);
//! - [`SIGNED_AT_PROPERTY`]: when it was signed, Unix seconds;
//! - [`SIGNATURE_PROPERTY`]: ECDSA P-256 with SHA-256 (ASN.1 DER), base64, over [`signed_bytes`].

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::AdminRequest;

/// User property holding the sender's certificate (DER, base64).
pub const CREDENTIAL_PROPERTY: &str = "ocm-edge-credential";
/// User property holding when the request was signed (Unix seconds).
pub const SIGNED_AT_PROPERTY: &str = "ocm-edge-signed-at";
/// User property holding the signature (base64).
pub const SIGNATURE_PROPERTY: &str = "ocm-edge-signature";
/// How far the signing time may be from the hub's clock, either way. Past it a captured request
/// can no longer be replayed; a client whose clock is off by more is refused with a message
/// saying so.
pub const MAX_CLOCK_SKEW_SECS: i64 = 300;

/// What a user may do. Each role may do everything the roles before it may.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads: list, get, stats.
    Viewer,
    /// Viewer, and writes works, placements, cluster sets and rollouts.
    Operator,
    /// Operator, and accepts or denies clusters.
    Admin,
}

impl Role {
    /// Every role, weakest first.
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Operator, Role::Admin];

    /// The role's name (`viewer`, `operator`, `admin`), as in certificates and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is none of `viewer`, `operator`, `admin`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role {0:?}: use viewer, operator or admin")]
pub struct UnknownRole(pub String);

impl std::str::FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

impl AdminRequest {
    /// The weakest role that may send this command. A command this build does not know needs
    /// only [`Role::Viewer`]: the hub answers it `Unsupported` whoever sends it.
    pub fn required_role(&self) -> Role {
        match self {
            // Who joins, and (through its labels) which cluster sets a cluster is in.
            AdminRequest::AcceptCluster { .. }
            | AdminRequest::DenyCluster { .. }
            | AdminRequest::RemoveCluster { .. }
            | AdminRequest::LabelCluster { .. }
            | AdminRequest::TaintCluster { .. }
            | AdminRequest::SetClusterSet { .. }
            | AdminRequest::AddCluster { .. } => Role::Admin,
            request if request.changes_something() => Role::Operator,
            _ => Role::Viewer,
        }
    }
}

/// The bytes a request's signature covers: a fixed label, the request topic, the response topic,
/// the correlation data, the signing time and the SHA-256 of the payload, each preceded by its
/// length (u32, big endian) so that no two different requests give the same bytes. A signature
/// therefore cannot be moved to another payload, another hub's topic or another reply address.
pub fn signed_bytes(
    topic: &str,
    response_topic: &str,
    correlation: &[u8],
    signed_at: i64,
    payload: &[u8],
) -> Vec<u8> {
    let signed_at = signed_at.to_string();
    let digest = Sha256::digest(payload);
    let fields: [&[u8]; 6] = [
        b"ocm-edge admin request v1",
        topic.as_bytes(),
        response_topic.as_bytes(),
        correlation,
        signed_at.as_bytes(),
        &digest,
    ];
    let mut out = Vec::with_capacity(fields.iter().map(|f| f.len() + 4).sum());
    for field in fields {
        // Every field is far below 4 GiB (MQTT caps a whole packet at 256 MiB).
        out.extend_from_slice(&(field.len() as u32).to_be_bytes());
        out.extend_from_slice(field);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_parse_print_and_order() {
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
        assert!(Role::Viewer < Role::Operator && Role::Operator < Role::Admin);
        let e = "root".parse::<Role>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown role \"root\": use viewer, operator or admin"
        );
    }

    #[test]
    fn reads_need_a_viewer_writes_an_operator_and_trust_an_admin() {
        let name = || "a".to_owned();
        assert_eq!(
            AdminRequest::GetCluster { name: name() }.required_role(),
            Role::Viewer
        );
        assert_eq!(AdminRequest::Stats.required_role(), Role::Viewer);
        assert_eq!(
            AdminRequest::DeleteWork {
                cluster: name(),
                name: name()
            }
            .required_role(),
            Role::Operator
        );
        assert_eq!(
            AdminRequest::CreateWork(Default::default()).required_role(),
            Role::Operator
        );
        assert_eq!(
            AdminRequest::accept_cluster(name()).required_role(),
            Role::Admin
        );
        assert_eq!(
            AdminRequest::DenyCluster { name: name() }.required_role(),
            Role::Admin
        );
        assert_eq!(
            AdminRequest::AddCluster { name: name() }.required_role(),
            Role::Admin
        );
        assert_eq!(
            AdminRequest::RemoveCluster {
                name: name(),
                force: false
            }
            .required_role(),
            Role::Admin
        );
        // Which set a cluster is in is who may get its works: OCM's managedclustersets/join.
        assert_eq!(
            AdminRequest::SetClusterSet {
                set: "eu".into(),
                clusters: vec![name()],
            }
            .required_role(),
            Role::Admin
        );
        assert_eq!(
            AdminRequest::BindClusterSet {
                set: "eu".into(),
                namespace: None,
            }
            .required_role(),
            Role::Operator
        );
        assert_eq!(
            AdminRequest::LabelCluster {
                name: name(),
                set: Default::default(),
                remove: vec![],
            }
            .required_role(),
            Role::Admin
        );
        assert_eq!(
            AdminRequest::TaintCluster {
                name: name(),
                add: vec![],
                remove: vec![],
            }
            .required_role(),
            Role::Admin
        );
    }

    #[test]
    fn every_field_of_a_request_changes_the_signed_bytes() {
        let base = signed_bytes("t", "r", b"c", 1, b"p");
        assert_ne!(base, signed_bytes("t2", "r", b"c", 1, b"p"));
        assert_ne!(base, signed_bytes("t", "r2", b"c", 1, b"p"));
        assert_ne!(base, signed_bytes("t", "r", b"c2", 1, b"p"));
        assert_ne!(base, signed_bytes("t", "r", b"c", 2, b"p"));
        assert_ne!(base, signed_bytes("t", "r", b"c", 1, b"p2"));
        // Lengths frame the fields: moving a byte from one field to the next changes the bytes.
        assert_ne!(
            signed_bytes("ab", "c", b"", 1, b""),
            signed_bytes("a", "bc", b"", 1, b"")
        );
        assert_eq!(base, signed_bytes("t", "r", b"c", 1, b"p"));
    }
}

//! Who may send which admin command: roles, and the signature that proves who sent a request.
//!
//! The broker carries requests from anyone who may publish on the admin topic, so the hub does not
//! take a request on the broker's word: each one carries its sender's credential (a client
//! certificate the hub's CA signed, with the user's name as CN and the role as OU) and a signature
//! with the credential's key over the request ([`signed_bytes`]). The hub checks the certificate
//! against its CA, the signature, and the time it was signed ([`MAX_CLOCK_SKEW_SECS`]), then
//! authorizes the command by role ([`AdminRequest::required_role`]) and, for a scoped credential,
//! by its [`CredentialScope`]. Because the proof travels in the message, it holds through any
//! broker, embedded or external, shared or not.
//!
//! # The scope of a credential
//! A viewer's or operator's credential may be limited to namespaces and cluster sets
//! ([`CredentialScope`]). The CA signs the scope with the rest of the certificate, in the
//! extension [`SCOPE_EXTENSION_OID`] (non-critical), whose value is a DER UTF8String holding the
//! scope as JSON (`credential-scope.schema.json`); a certificate without it is unscoped.
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

/// The extension of a credential certificate holding its [`CredentialScope`]: `2.25.N`, an OID in
/// the UUID arc (ITU-T X.667), which needs no registration (N is a random 64-bit number:
/// certificate libraries take 64-bit arcs).
///
/// It is not marked critical because certificate verifiers refuse a certificate with a critical
/// extension they do not know, the hub's own included (rustls-webpki); the hub reads it after
/// verification, and refuses a certificate whose scope it cannot read.
pub const SCOPE_EXTENSION_OID: [u64; 3] = [2, 25, 0x6f63_6d2d_6564_6765];

/// What a scoped credential is limited to: the namespaces it works in and, when given, the only
/// cluster sets it may reach through them. An `admin` credential is never scoped.
///
/// For the user it names, the hub allows:
/// - works only on clusters of a cluster set bound (ManagedClusterSetBinding) into one of
///   `namespaces`, and when `clusterSets` is given, of a set it names;
/// - Placements, ManifestWorkReplicaSets and AddOnPlacementScores only in `namespaces`;
/// - binding and unbinding only the sets of `clusterSets` (none when it is empty: an admin binds
///   for it), only into `namespaces`;
/// - reads of only those clusters, their works, those namespaces' objects and those sets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialScope {
    /// The namespaces; at least one.
    pub namespaces: Vec<String>,
    /// The cluster sets (absent or empty: any set bound into `namespaces`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_sets: Vec<String>,
}

/// Why a scope cannot be put in a credential, or read back from one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    /// An admin keeps every right; a scoped admin would be an operator that accepts clusters.
    #[error(
        "the admin role cannot be scoped: an admin accepts clusters and binds any set into any namespace (scope a viewer or an operator instead)"
    )]
    ScopedAdmin,
    /// Cluster sets without namespaces reach nothing: sets are reached through namespaces.
    #[error(
        "a scope needs at least one namespace (--namespace NS): cluster sets are reached through the namespaces they are bound into"
    )]
    NoNamespace,
    /// A name that can be no namespace or cluster set.
    #[error(
        "{what} {name:?} cannot be a Kubernetes name: use 1 to 63 lowercase letters, digits and '-', starting and ending with a letter or digit"
    )]
    InvalidName {
        /// `namespace` or `cluster set`.
        what: &'static str,
        /// The name as given.
        name: String,
    },
    /// The extension does not hold a scope.
    #[error("its scope extension cannot be read: {0}")]
    Unreadable(String),
}

impl CredentialScope {
    /// The scope of `namespaces` and `cluster_sets` (sorted, without duplicates) for a credential
    /// of `role`.
    ///
    /// # Errors
    /// [`ScopeError`] for an admin, no namespace, or a name that can be no namespace or set.
    pub fn new(
        role: Role,
        namespaces: impl IntoIterator<Item = String>,
        cluster_sets: impl IntoIterator<Item = String>,
    ) -> Result<CredentialScope, ScopeError> {
        let scope = CredentialScope {
            namespaces: sorted_unique(namespaces),
            cluster_sets: sorted_unique(cluster_sets),
        };
        scope.check(role)?;
        Ok(scope)
    }

    fn check(&self, role: Role) -> Result<(), ScopeError> {
        if role == Role::Admin {
            return Err(ScopeError::ScopedAdmin);
        }
        if self.namespaces.is_empty() {
            return Err(ScopeError::NoNamespace);
        }
        let names = (self.namespaces.iter().map(|n| ("namespace", n)))
            .chain(self.cluster_sets.iter().map(|s| ("cluster set", s)));
        for (what, name) in names {
            if !is_dns_label(name) {
                return Err(ScopeError::InvalidName {
                    what,
                    name: name.clone(),
                });
            }
        }
        Ok(())
    }

    /// The value of the [`SCOPE_EXTENSION_OID`] extension: a DER UTF8String holding this scope
    /// as JSON.
    pub fn to_extension_value(&self) -> Vec<u8> {
        let json = serde_json::to_vec(self)
            .unwrap_or_else(|_| unreachable!("a struct of strings always serializes"));
        let mut der = vec![UTF8_STRING_TAG];
        der.extend_from_slice(&der_length(json.len()));
        der.extend_from_slice(&json);
        der
    }

    /// The scope an extension value holds, checked as [`CredentialScope::new`] checks it for a
    /// credential of `role`.
    ///
    /// # Errors
    /// [`ScopeError::Unreadable`] for anything but a DER UTF8String of a scope's JSON, and the
    /// errors of [`CredentialScope::new`].
    pub fn from_extension_value(value: &[u8], role: Role) -> Result<CredentialScope, ScopeError> {
        let unreadable = |why: &str| ScopeError::Unreadable(why.to_owned());
        let (&tag, rest) = value
            .split_first()
            .ok_or_else(|| unreadable("it is empty"))?;
        if tag != UTF8_STRING_TAG {
            return Err(unreadable("it is not a UTF8String"));
        }
        let (len, json) = read_der_length(rest).ok_or_else(|| unreadable("a bad DER length"))?;
        if json.len() != len {
            return Err(unreadable("its length does not match its content"));
        }
        let scope: CredentialScope =
            serde_json::from_slice(json).map_err(|e| ScopeError::Unreadable(e.to_string()))?;
        scope.check(role)?;
        Ok(scope)
    }
}

impl std::fmt::Display for CredentialScope {
    /// `namespaces team-a, team-b; cluster sets eu` (or `namespaces team-a; any cluster set`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "namespaces {}; ", self.namespaces.join(", "))?;
        if self.cluster_sets.is_empty() {
            f.write_str("any cluster set")
        } else {
            write!(f, "cluster sets {}", self.cluster_sets.join(", "))
        }
    }
}

const UTF8_STRING_TAG: u8 = 0x0c;

fn sorted_unique(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut names: Vec<String> = names.into_iter().collect();
    names.sort();
    names.dedup();
    names
}

/// Kubernetes' DNS label (RFC 1123), what namespaces and, in ocm-edge, cluster set names are.
fn is_dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    (1..=63).contains(&bytes.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first() != Some(&b'-')
        && bytes.last() != Some(&b'-')
}

/// DER's definite length: one byte below 128, else 0x80 | n and n big-endian bytes.
fn der_length(len: usize) -> Vec<u8> {
    if len < 0x80 {
        return vec![len as u8];
    }
    let bytes: Vec<u8> = len
        .to_be_bytes()
        .into_iter()
        .skip_while(|b| *b == 0)
        .collect();
    let mut out = vec![0x80 | bytes.len() as u8];
    out.extend_from_slice(&bytes);
    out
}

/// The length [`der_length`] wrote and what follows it (`None` for a length DER does not allow
/// or longer than 4 bytes: a scope is far below 4 GiB).
fn read_der_length(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let (&first, rest) = bytes.split_first()?;
    if first < 0x80 {
        return Some((usize::from(first), rest));
    }
    let n = usize::from(first & 0x7f);
    if n == 0 || n > 4 || rest.len() < n || rest[0] == 0 {
        return None;
    }
    let len = rest[..n]
        .iter()
        .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
    (len >= 0x80).then_some((len, &rest[n..]))
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
            | AdminRequest::SetMaintenanceWindows { .. }
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
    fn a_scope_round_trips_through_its_extension_value_sorted_and_deduplicated() {
        let scope = CredentialScope::new(
            Role::Operator,
            ["team-b".into(), "team-a".into(), "team-b".into()],
            ["eu".into()],
        )
        .unwrap();
        assert_eq!(scope.namespaces, ["team-a", "team-b"]);
        let value = scope.to_extension_value();
        assert_eq!(value[0], 0x0c);
        assert_eq!(
            CredentialScope::from_extension_value(&value, Role::Operator),
            Ok(scope.clone())
        );
        assert_eq!(
            scope.to_string(),
            "namespaces team-a, team-b; cluster sets eu"
        );
        // Long enough for a multi-byte DER length.
        let many =
            CredentialScope::new(Role::Viewer, (0..40).map(|i| format!("namespace-{i}")), [])
                .unwrap();
        let value = many.to_extension_value();
        assert_eq!(value[1], 0x82);
        assert_eq!(
            CredentialScope::from_extension_value(&value, Role::Viewer),
            Ok(many)
        );
    }

    #[test]
    fn an_admin_no_namespace_a_bad_name_or_a_bad_value_is_no_scope() {
        let ns = || vec!["team-a".to_owned()];
        assert_eq!(
            CredentialScope::new(Role::Admin, ns(), []),
            Err(ScopeError::ScopedAdmin)
        );
        assert_eq!(
            CredentialScope::new(Role::Operator, [], ["eu".into()]),
            Err(ScopeError::NoNamespace)
        );
        let e = CredentialScope::new(Role::Operator, ns(), ["EU!".into()]).unwrap_err();
        assert!(e.to_string().starts_with("cluster set \"EU!\""), "{e}");
        // An admin's certificate carrying a scope is refused, not read as unscoped.
        let value = CredentialScope::new(Role::Operator, ns(), [])
            .unwrap()
            .to_extension_value();
        assert_eq!(
            CredentialScope::from_extension_value(&value, Role::Admin),
            Err(ScopeError::ScopedAdmin)
        );
        for bad in [
            &b""[..],
            b"\x04\x02{}",
            b"\x0c\x05{}",
            b"\x0c\x81\x02{}",
            b"\x0c\x02{}",
            b"\x0c\x04null",
        ] {
            assert!(
                CredentialScope::from_extension_value(bad, Role::Operator).is_err(),
                "{bad:?}"
            );
        }
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

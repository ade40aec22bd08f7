//! Errors of the admin client. Each message says what failed, where, and what to check.

use ocm_edge_mqtt::{ConnectError, LinkError, SessionError, UrlError};
use ocm_edge_schemas::wire::topic;
use thiserror::Error;

use ocm_edge_schemas::admin::{AdminErrorKind, AdminPayload};

/// Errors of the admin client.
#[derive(Debug, Error)]
pub enum AdminError {
    /// The broker URL cannot be used. Not retryable.
    #[error(transparent)]
    BrokerUrl(#[from] UrlError),
    /// The source id cannot appear in a topic. Not retryable.
    #[error("invalid source id: {0}")]
    InvalidSourceId(#[from] topic::TopicError),
    /// A credential file that cannot be used. Not retryable.
    #[error(transparent)]
    Credential(#[from] super::credential::CredentialError),
    /// TLS files that cannot be used. Not retryable.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The broker could not be used (refused port, untrusted certificate, refused login, lost
    /// link); [`LinkError::is_retryable`] tells whether waiting helps.
    #[error(transparent)]
    Link(#[from] LinkError),
    /// Nobody answered in time. The request may still have been carried out. Retryable.
    #[error(
        "no hub answered on {url} within {secs} s: is `ocm-edge hub` running with source id \
         {source_id:?}? (set --source-id or OCM_EDGE_SOURCE_ID to the hub's, or raise --timeout)"
    )]
    NoAnswer {
        /// The broker URL.
        url: String,
        /// The source id the request was sent to.
        source_id: String,
        /// The timeout, in seconds.
        secs: u64,
    },
    /// A change was sent but nobody confirmed it in time. The hub stores a change before it
    /// answers, so it may have been carried out (a hub that stopped right after storing it
    /// delivers it when it is back): check with `check` before sending it again.
    #[error(
        "sent {command} to the broker at {url}, but the hub did not confirm it within {secs} s; \
         it may have been carried out: check with `{check}`. If the hub is not running with \
         source id {source_id:?}, set --source-id or OCM_EDGE_SOURCE_ID to the hub's (or raise \
         --timeout)"
    )]
    Unconfirmed {
        /// The command.
        command: &'static str,
        /// The broker URL.
        url: String,
        /// The source id the request was sent to.
        source_id: String,
        /// The timeout, in seconds.
        secs: u64,
        /// The CLI command that shows whether it was carried out.
        check: String,
    },
    /// The hub refused the command; nothing was changed. Not retryable as is.
    #[error("{message}")]
    Hub {
        /// Why.
        kind: AdminErrorKind,
        /// The hub's explanation.
        message: String,
    },
    /// The request is larger than the admin API carries.
    #[error(
        "the {command} request is {bytes} bytes, more than the {limit} bytes the admin API carries"
    )]
    TooLarge {
        /// The command.
        command: &'static str,
        /// Its encoded size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The hub's answer is not what this client understands (different versions?).
    #[error(
        "the hub's answer to {command} could not be understood: {reason} (are the CLI and hub the same version?)"
    )]
    BadAnswer {
        /// The command.
        command: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The MQTT session stopped (broker gone).
    #[error("lost the connection to the MQTT broker at {url}: {reason}")]
    Disconnected {
        /// The broker URL.
        url: String,
        /// What happened.
        reason: String,
    },
}

impl From<ConnectError> for AdminError {
    fn from(e: ConnectError) -> Self {
        match e {
            ConnectError::Session(e) => AdminError::Session(e),
            ConnectError::Link(e) => AdminError::Link(e),
        }
    }
}

impl AdminError {
    /// Whether trying again later may succeed (broker or hub not there yet).
    pub fn is_retryable(&self) -> bool {
        match self {
            AdminError::Link(e) => e.is_retryable(),
            AdminError::NoAnswer { .. } | AdminError::Disconnected { .. } => true,
            AdminError::Hub { kind, .. } => *kind == AdminErrorKind::Internal,
            _ => false,
        }
    }

    /// The hub's error kind, when the hub refused the command.
    pub fn hub_kind(&self) -> Option<AdminErrorKind> {
        match self {
            AdminError::Hub { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// Result alias of the admin client.
pub type Result<T, E = AdminError> = std::result::Result<T, E>;

/// The error for an answer of the wrong shape.
pub(super) fn unexpected(command: &'static str, payload: &AdminPayload) -> AdminError {
    let got = match payload {
        AdminPayload::Clusters(_) => "clusters",
        AdminPayload::Cluster(_) => "cluster",
        AdminPayload::Written(_) => "written",
        AdminPayload::Works(_) => "works",
        AdminPayload::Work(_) => "work",
        AdminPayload::Stats(_) => "stats",
        AdminPayload::Applied(_) => "applied",
        AdminPayload::ClusterSets(_) => "clusterSets",
        AdminPayload::ClusterSet(_) => "clusterSet",
        AdminPayload::Placements(_) => "placements",
        AdminPayload::Placement(_) => "placement",
        AdminPayload::ReplicaSets(_) => "replicaSets",
        AdminPayload::ReplicaSet(_) => "replicaSet",
        AdminPayload::Rendered(_) => "rendered",
        AdminPayload::Deleted(_) => "deleted",
        AdminPayload::AddOns(_) => "addOns",
        AdminPayload::AddOn(_) => "addOn",
    };
    AdminError::BadAnswer {
        command,
        reason: format!("unexpected payload {got:?}"),
    }
}

//! The admin API: the contract between the `ocm-edge` CLI (or any other client) and the hub.
//!
//! - [`request`]: [`AdminRequest`], one command, with an explicit variant for a command this build
//!   does not know.
//! - [`response`]: [`AdminResponse`], [`AdminPayload`] and [`AdminErrorKind`].
//! - [`views`]: what the answers show about clusters, works and the hub ([`ClusterView`],
//!   [`WorkView`], [`HubStats`], ...).
//! - [`fleet_views`]: views of cluster sets, placements and ManifestWorkReplicaSets.
//! - [`explanation`]: why a placement selected each cluster or not.
//!
//! The JSON Schemas `schemas/json/admin-{request,response}.schema.json` are generated from these
//! types by [`crate::contracts`], like every other contract.
//!
//! # Transport
//! MQTT 5 request/response through the broker: the CLI publishes one [`AdminRequest`] as compact
//! JSON (QoS 1, not retained) on `ocm-edge/<source>/admin/requests`, with the MQTT 5 *Response Topic*
//! `ocm-edge/<source>/admin/responses/<client-id>` and *Correlation Data* set. The hub answers each
//! request with exactly one [`AdminResponse`] on that response topic, copying the correlation data.
//! When no answer comes within half a second the client sends the same request again (same
//! correlation data, backing off to every 4 s) until its timeout: a hub that is (re)starting has
//! not subscribed yet and the broker keeps nothing for it. Every command is therefore safe to
//! receive twice: reads are, and the hub answers a repeat of a change (same response topic,
//! correlation data and payload) within 10 minutes with its first answer instead of carrying it
//! out again (a captured request replayed within its signature's lifetime changes nothing
//! either); the client takes the first answer and drops the others.
//! A request the hub cannot parse is answered with [`AdminErrorKind::Invalid`] (when it carries a
//! response topic); a command it does not know (from a newer client) with
//! [`AdminErrorKind::Unsupported`]; a request without a response topic is logged, counted and
//! dropped.
//!
//! # Who may send what
//! A hub with credentials on (the default) acts only on a request signed with a credential of its
//! CA, as [`auth`] describes (three MQTT 5 user properties: the certificate, the signing time, the
//! signature); otherwise it answers [`AdminErrorKind::Unauthenticated`]. The credential's role must
//! allow the command ([`AdminRequest::required_role`]), otherwise [`AdminErrorKind::Forbidden`].
//!
//! # JSON shapes
//! ```json
//! {"command":"listClusters"}
//! {"command":"listClusters","after":"edge-0500","limit":500}
//! {"command":"acceptCluster","name":"edge-1"}
//! {"command":"createWork","name":"web","clusters":["edge-1"],"manifests":[{...}],"overwrite":false}
//! {"command":"applyManifestWork","work":{"apiVersion":"work.open-cluster-management.io/v1",...}}
//! {"command":"getWork","cluster":"edge-1","name":"web"}
//! {"command":"applyObject","object":{"apiVersion":"cluster.open-cluster-management.io/v1beta1","kind":"Placement",...}}
//! {"command":"getPlacement","namespace":"default","name":"web"}
//! {"command":"deleteObject","kind":"Placement","namespace":"default","name":"web"}
//!
//! {"ok":{"clusters":[{"name":"edge-1","state":"Pending",...}]}}
//! {"error":{"kind":"NotFound","message":"cluster \"edge-9\" is not known to the hub"}}
//! ```
//!
//! # Semantics the server guarantees
//! - A request that fails changes nothing (a `createWork` for clusters `a,b` where `b` is unknown
//!   stores no work on `a` either).
//! - Error messages are shown to the operator as they are: say what is wrong and how to fix it.

pub mod auth;
pub mod explanation;
pub mod fleet_views;
pub mod request;
pub mod response;
pub mod views;

pub use auth::{CredentialScope, Role, ScopeError};
pub use fleet_views::{
    AddOnView, ClusterAddOnRow, ClusterSetView, DecisionView, ObjectApplied, ObjectDeleted,
    PlacementView, ReplicaSetView, RevisionRow, RolloutRow,
};
pub use request::{AdminRequest, CreateWork, WorkRef};
pub use response::{AdminErrorKind, AdminPayload, AdminResponse};
pub use views::{
    ClusterCertificateView, ClusterState, ClusterView, HubStats, ManifestSummary, WorkPhase,
    WorkView, WorkWritten, WriteOutcome,
};

/// Largest admin payload (request or response) either side must accept: a work may carry
/// 500 KiB of manifests, and JSON escaping plus views add to that.
pub const MAX_ADMIN_PAYLOAD_BYTES: usize = 2 * 1024 * 1024;

/// MQTT 5 user property naming the admin API version on requests and responses.
pub const ADMIN_API_VERSION_PROPERTY: &str = "ocm-edge-admin";
/// Current admin API version (value of [`ADMIN_API_VERSION_PROPERTY`]).
pub const ADMIN_API_VERSION: &str = "v1";

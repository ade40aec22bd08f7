//! Registration and identity: how a cluster joins, gets its certificate, and is shut out again
//! (OCM's `registration/hub`, mirrored by the agent's `registration/`).
//!
//! - [`join`]: an agent asks to join (its signed join request), an operator accepts or denies
//!   (OCM's double opt-in), and the hub publishes its signed view of the cluster. Pure.
//! - [`labels`]: the labels (so the cluster sets) and the operator's taints of a cluster, the
//!   hub's to change (`ocm-edge cluster label|taint`), never its agent's once it is accepted.
//! - [`join_token`]: who may ask to join: expiring HMAC tokens (`ocm-edge token create`).
//! - [`logins`]: who may log in to the embedded broker, and as whom (the hub, dashboards,
//!   operators by their credential, clusters by their key or a join token).
//! - [`certificates`]: when an accepted cluster gets, renews and loses its TLS client certificate
//!   (for brokers that take certificates as identities). Pure.
//! - [`cluster_ca`]: the CA that issues those certificates and writes their revocation list.
//! - [`removal`]: `ocm-edge cluster remove` and an agent's unjoin: the cluster's works removed,
//!   its key and certificate revoked, its record forgotten. Pure.
//! - [`evict`]: drops a denied cluster's live session on an external broker's certificate
//!   listener.
//!
//! The hub's own CA and signing key are in [`crate::pki`]; admin users' credentials in
//! [`crate::admin`].

pub mod certificates;
pub mod cluster_ca;
pub mod evict;
pub mod join;
pub mod join_token;
pub mod labels;
pub mod logins;
pub mod maintenance;
pub mod removal;

pub use join::{RegistrationError, hub_view};
pub use labels::{LabelEdit, in_a_set, put_in_default_set};

//! ocm-edge hub: registration, availability and taints, placement, rollouts, works, the admin
//! API, and the `ocm-edge` CLI.
//!
//! Map (kept current by the module owners):
//! - [`core`]: the pure hub logic (registration, availability feeding, works, resync, the placement
//!   objects, scheduling and replica-set fan-out as records); data in, records and messages out,
//!   `now` passed in.
//! - [`availability`]: the pure availability state machine (birth / will with connection sequence
//!   numbers, lease grace, API-server health) behind `ManagedClusterConditionAvailable` and the
//!   unreachable / unavailable taints.
//! - [`placement`]: the pure placement scheduler (OCM's filters, prioritizers, decision groups,
//!   PlacementDecisions) with a per-cluster explanation.
//! - [`rollout`]: the pure ManifestWorkReplicaSet rollout planner (All, Progressive,
//!   ProgressivePerGroup, status summary).
//! - [`store`]: the redb file that makes the core's state survive restarts.
//! - [`events`]: CloudEvents to and from the core's inputs and outputs.
//! - [`hub`]: [`start_hub`] / [`run_hub`]: wires the broker (`ocm_edge_mqtt`: embedded or external),
//!   store, MQTT session, core and admin server;
//!   one task owns the core and ticks it at the next availability deadline or requeue time.
//! - [`config`]: [`HubConfig`] and [`BrokerConfig`].
//! - [`logins`] and [`join_token`]: who may log in to the embedded broker (keys, credentials,
//!   join tokens).
//! - [`pki`]: the hub's CA (created at first start) and the embedded broker's TLS certificate.
//! - [`dashboard`]: the retained dashboard topics (summary, per cluster, per work).
//! - [`admin`]: the admin API over MQTT 5 request/response: the message types (re-exported from
//!   `ocm_edge_schemas::admin`), the CLI's client, the hub's server ([`admin::fleet`] for cluster
//!   sets, placements and replica sets).
//! - [`cli`]: the `ocm-edge` command line (one file per command) and `demo` (default feature
//!   `demo`: the only part of the hub that runs agents, so the only one that needs the agent crate).

pub mod admin;
pub mod availability;
pub mod cli;
pub mod cluster_ca;
pub mod config;
pub mod core;
pub mod dashboard;
#[cfg(feature = "demo")]
pub mod demo;
pub mod events;
pub mod evict;
pub mod hub;
pub mod join_token;
pub mod logins;
pub mod pki;
pub mod placement;
pub mod rollout;
pub mod signing;
pub mod store;

pub use config::{BrokerConfig, EmbeddedSecurity, HubConfig};
pub use hub::{HubError, HubHandle, run_hub, start_hub};

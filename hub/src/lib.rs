//! ocm-edge hub: the server. It decides (registration, availability and taints, placement,
//! rollouts), keeps the desired state in a redb file, and talks to agents and the CLI through an
//! MQTT 5 broker (embedded by default). The `ocm-edge` binary that runs it is the CLI crate's
//! (`hub/cli/`); this crate depends on neither the CLI nor the agent.
//!
//! Map: one folder per concern, mirrored by the agent where the concern has two sides.
//! - [`core`]: [`core::HubCore`], the one owner of the hub's state: pure, data in, records and
//!   messages out, `now` passed in. Each concern below adds its handlers to it.
//! - [`registration`]: join requests, accept / deny, join tokens, broker logins, the cluster CA
//!   and per-cluster certificates, dropping a denied cluster's session.
//! - [`availability`]: the availability state machine (birth / will, leases, API-server health)
//!   behind `ManagedClusterConditionAvailable` and the unreachable / unavailable taints.
//! - [`work`]: ManifestWorks: writes, statuses, resync, the spec clock.
//! - [`placement`]: the placement scheduler (OCM's filters and prioritizers as plugins, decision
//!   groups, PlacementDecisions) with a per-cluster explanation.
//! - [`rollout`]: the ManifestWorkReplicaSet rollout planner and its fan-out into works.
//! - [`admin`]: the admin API's server side: requests into changes, authentication and roles,
//!   users' credentials.
//! - [`pki`]: the hub's CA (created at first start), the embedded broker's certificate and the
//!   key that signs everything the hub sends to agents.
//! - [`dashboard`]: the retained dashboard topics (summary, per cluster, per work).
//! - [`metrics`]: the Prometheus metrics (`--metrics-listen`): CloudEvents with sdk-go's names,
//!   the store's latency, and the fleet counted from the core when scraped.
//! - [`store`]: the redb file that makes the core's state survive restarts.
//! - [`process`]: [`start_hub`] / [`run_hub`]: the IO shell that wires broker, store, MQTT
//!   sessions, core and admin server: start-up, intake, the batch-and-commit loop, replies.
//! - [`config`]: [`HubConfig`] and [`BrokerConfig`].

pub mod addon;
pub mod admin;
pub mod availability;
pub mod config;
pub mod core;
pub mod dashboard;
pub mod metrics;
pub mod pki;
pub mod placement;
pub mod process;
pub mod registration;
pub mod rollout;
pub mod store;
pub mod work;

pub use config::{BrokerConfig, EmbeddedSecurity, HubConfig};
pub use process::{HubError, HubHandle, run_hub, start_hub};

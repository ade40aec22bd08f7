//! ocm-edge edge agent: pulls ManifestWorks over MQTT 5 (OCM's CloudEvents binding), applies them to
//! a Kubernetes cluster (kube-rs) or a simulated one, and reports status. Offline-first: desired
//! bundles, the applied inventory and a status outbox live in a redb file, so the agent reconciles
//! (and corrects drift) with no broker, survives restarts while offline, and resyncs on reconnect.
//!
//! Map: one folder per concern, mirroring the hub's (`registration/`, `work/`, `lease/`).
//! - [`session`]: [`start_agent`] / [`run_agent`]: the one task that owns all state, its MQTT
//!   session (a will and a persisted connection sequence number per connection, from
//!   `ocm_edge_mqtt`), and the dispatch of what arrives; [`AgentCounters`] to observe it.
//! - [`registration`]: the agent's key, the join request and the hub's view, which hub it trusts
//!   (signatures), the cluster's certificate.
//! - [`work`]: bundles in, the apply plan, statuses, the outbox (pure parts and their shell).
//! - [`lease`]: lease renewals, the cluster status and API-server health, the periodic tick.
//! - [`maintenance`]: maintenance windows and the hold on site: when new versions may be
//!   applied (pure gate, the hold file).
//! - [`transfer`]: chunked transfers of large works, resumed after a cut.
//! - [`applier`]: the [`applier::Applier`] trait, the simulated cluster ([`SimControl`], with its
//!   control socket) and kube-rs.
//! - [`store`]: the redb file.
//! - [`unjoin`]: `ocm-edge-agent unjoin`, the edge side of a cluster's removal.
//! - [`events`]: parse hub events, build agent events (on `ocm_edge_schemas::wire`).
//! - [`config`]: [`AgentConfig`], [`ApplierConfig`]; [`flags`]: the `ocm-edge-agent` command line.
//! - [`metrics`]: the Prometheus metrics (`--metrics-listen`, off by default): the counters read
//!   when scraped, CloudEvents with sdk-go's names.
//!
//! # On the wire (source id S, cluster C)
//! - Subscribes (QoS 1, clean start) to `sources/S/consumers/C/sourceevents` and `sources/S/sourcebroadcast`.
//! - Publishes everything (QoS 1, not retained) on `sources/S/consumers/C/agentevents`: work statuses
//!   (ce-source `C-work-agent`, originalsource = the spec's ce-source), `spec.resync_request` after every
//!   SUBACK, and the ocm-edge cluster events: birth on every CONNACK and the MQTT will (presence
//!   `{"state","connectionSeq"}`, the same number for both; a new number per connection, persisted),
//!   the join request on each connect until the hub's view says accepted or denied, the cluster status
//!   (claims, version, capacity and allocatable summed over the nodes, ManagedClusterConditionAvailable
//!   from the API server's health) on connect, on every health change, after a join request, when
//!   the hub's answer changes and when the facts (read once a minute) change, and lease renewals on connect and then every third of the lease duration.
//! - A graceful stop publishes presence offline, then DISCONNECT (so no will); a killed agent leaves
//!   its will to the broker.
//!
//! # Timing knobs ([`AgentConfig`])
//! `keepalive` (>= 5 s, rumqttc's minimum), `lease_duration_seconds` (>= 5), `reconcile_interval`
//! (drift correction and readiness re-check), `health_interval`, `reconnect_min`/`reconnect_max`
//! (capped, jittered exponential backoff), and the sim applier's `ready_delay`.

pub mod applier;
pub mod config;
pub mod events;
pub mod flags;
pub mod lease;
pub mod maintenance;
pub mod metrics;
pub mod registration;
pub mod session;
pub mod store;
pub mod transfer;
pub mod unjoin;
pub mod work;

pub use applier::sim::SimControl;
pub use config::{AgentConfig, ApplierConfig, TlsFiles};
pub use registration::Registration;
pub use session::{AgentCounters, AgentError, AgentHandle, run_agent, start_agent};

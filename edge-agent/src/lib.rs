//! ocm-edge edge agent: pulls ManifestWorks over MQTT 5 (OCM's CloudEvents binding), applies them to
//! a Kubernetes cluster (kube-rs) or a simulated one, and reports status. Offline-first: desired
//! bundles, the applied inventory and a status outbox live in a redb file, so the agent reconciles
//! (and corrects drift) with no broker, survives restarts while offline, and resyncs on reconnect.
//!
//! Map:
//! - [`config`]: [`AgentConfig`], [`ApplierConfig`].
//! - [`core`]: pure logic (`now` is an argument): plan, status, outbox, spec acceptance, lease.
//! - [`store`]: the redb file.
//! - [`applier`]: the [`applier::Applier`] trait, the simulated cluster ([`SimControl`]) and kube-rs.
//! - [`trust`]: the hub's signature on everything it sends, and which hub the agent trusts.
//! - [`events`]: parse hub events, build agent events (on `ocm_edge_schemas::wire`).
//! - [`agent`]: [`run_agent`] / [`start_agent`] wiring it all (the MQTT session, with a will and a
//!   persisted connection sequence number per connection, comes from `ocm_edge_mqtt`);
//!   [`AgentCounters`] to observe it.
//!
//! # On the wire (source id S, cluster C)
//! - Subscribes (QoS 1, clean start) to `sources/S/consumers/C/sourceevents` and `sources/S/sourcebroadcast`.
//! - Publishes everything (QoS 1, not retained) on `sources/S/consumers/C/agentevents`: work statuses
//!   (ce-source `C-work-agent`, originalsource = the spec's ce-source), `spec.resync_request` after every
//!   SUBACK, and the ocm-edge cluster events: birth on every CONNACK and the MQTT will (presence
//!   `{"state","connectionSeq"}`, the same number for both; a new number per connection, persisted),
//!   the join request on each connect until the hub's view says accepted or denied, the cluster status
//!   (claims, version, ManagedClusterConditionAvailable from the API server's health) on connect and on
//!   every health change, and lease renewals on connect and then every third of the lease duration.
//! - A graceful stop publishes presence offline, then DISCONNECT (so no will); a killed agent leaves
//!   its will to the broker.
//!
//! # Timing knobs ([`AgentConfig`])
//! `keepalive` (>= 5 s, rumqttc's minimum), `lease_duration_seconds` (>= 5), `reconcile_interval`
//! (drift correction and readiness re-check), `health_interval`, `reconnect_min`/`reconnect_max`
//! (capped, jittered exponential backoff), and the sim applier's `ready_delay`.

pub mod agent;
pub mod applier;
pub mod certificate;
pub mod config;
pub mod core;
pub mod events;
pub mod sim_control;
pub mod store;
pub mod trust;

pub use agent::{AgentCounters, AgentError, AgentHandle, Registration, run_agent, start_agent};
pub use applier::sim::SimControl;
pub use config::{AgentConfig, ApplierConfig, TlsFiles};

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
//! - [`events`]: parse hub events, build agent events (on `ocm_edge_schemas::wire`).
//! - [`transport`]: rumqttc v5 connection loop with will/birth and reconnect backoff.
//! - [`agent`]: [`run_agent`] / [`start_agent`] wiring it all; [`AgentCounters`] to observe it.

pub mod agent;
pub mod applier;
pub mod config;
pub mod core;
pub mod events;
pub mod store;
pub mod transport;

pub use agent::{AgentCounters, AgentError, AgentHandle, Registration, run_agent, start_agent};
pub use applier::sim::SimControl;
pub use config::{AgentConfig, ApplierConfig};

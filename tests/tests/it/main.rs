//! The integration tests that need more than one crate, one binary with a module per subject:
//! real hubs and agents (in process, or as processes killed with SIGKILL) on the embedded broker,
//! Mosquitto and an rmqtt cluster; link faults in network namespaces and over an emulated 2G
//! link; peers speaking the wire directly (maestro, OCM's work agent, rogue clients); the fleet
//! benchmark run small; the Helm charts with the real `helm` and `kubectl`; and, `e2e_` tests, a
//! real Kubernetes API server. Each test starts what it
//! needs on free ports and in its own directories, so they run in parallel.
//!
//! Two tests run alone, each in a binary of its own: `fuzz_smoke` (it keeps a core busy for its
//! whole run) and `kube_api_restart` (it kills the shared API server the other `e2e_` tests use).

mod addon_identity;
mod bad_input;
mod bad_requests;
mod broker_cluster;
mod broker_identities;
mod chunked;
mod cross_agent;
mod embedded_acl;
mod fleet_availability;
mod fleet_bench;
mod fleet_placement;
mod harness;
mod helm_charts;
mod kube_bootstrap;
mod kube_e2e;
mod link_faults;
mod maestro_interop;
mod maintenance_hold;
mod metrics;
mod mosquitto_acl;
mod mosquitto_certificates;
mod mosquitto_credentials;
mod mosquitto_fleet;
mod mosquitto_tls;
mod ocm_work_agent;
mod per_cluster_values;
mod process_kill;
mod recovery;
mod registration;
mod removal;
mod rollout_rollback;
mod shaped_link;
mod shared_intake;
mod signed_specs;
mod status_ordering;
mod works;

//! ocm-edge's one test harness, its integration tests (`tests/it/`) and the fleet benchmark.
//! Every crate's tests use it (the crates dev-depend on it): one fleet builder ([`fleet::Fleet`]),
//! one fake peer ([`probe::Probe`], with its agent and hub roles), one wait helper ([`wait`]).
//!
//! Map:
//! - [`bench`]: the fleet benchmark behind `fleet-bench` (real hub vs transport alone).
//! - [`broker`]: the embedded broker (`ocm_edge_mqtt::broker`) on a free port that outlives hub restarts.
//! - [`contracts`]: JSON Schema validation against the published contracts.
//! - [`cross`]: the static agent of another architecture (aarch64, armv7) under qemu-user, and
//!   what its ELF header says.
//! - [`fleet`]: a broker, a hub that can be restarted, N agents on the simulated cluster, an admin
//!   client, and waits on what the hub and the simulated clusters show.
//! - [`forge`]: wire messages a test sends as a peer (OCM work agent, maestro, rogue client).
//! - [`helm`]: `helm` and `kubectl` for the charts in `deploy/helm/`, rendering them, and the
//!   plain manifests generated from the agent's chart.
//! - [`kube`]: the real Kubernetes cluster of the end-to-end (`e2e_`) tests and the admin's hand
//!   on it.
//! - [`manifests`]: Kubernetes objects and work options for tests.
//! - [`metrics`]: scraping a hub's or an agent's Prometheus endpoint (hyper's client) and reading
//!   it with `prometheus-parse`.
//! - [`mosquitto`]: a real Mosquitto 2 with a generated config (and optional password file + ACL).
//! - [`netns`]: an edge network namespace on a veth link that can be cut silently, or on a shaped
//!   2G link through `link-shaper` (root only).
//! - [`pki`]: a CA and a broker certificate made with rcgen, for TLS tests.
//! - [`shaper`]: a 2G link in user space (rate, delay, jitter, loss) between two TUN devices.
//! - [`probe`]: the fake peer: a raw MQTT 5 client to speak the wire directly (maestro's role,
//!   spies, bad input), and as a cluster's agent ([`probe::AgentPeer`]) or as the hub
//!   ([`probe::HubPeer`]).
//! - [`proxy`]: a TCP proxy whose link can be cut, blocked or frozen (no root needed).
//! - [`reference`]: the command-line references of the docs, generated from clap and checked.
//! - [`process`]: a hub or agent in its own process (`test-hub`, `test-agent`) to kill with SIGKILL.
//! - [`wait`]: the one wait helper: `wait_for` / `wait_until` poll an observable condition,
//!   `wait_watch` waits on a watched value, each with a bounded timeout.
//! - [`rmqtt_cluster`]: a two-node rmqtt broker cluster (`tests/rmqtt-node`).
//!
//! The integration tests that need more than one crate (hub, agents, brokers, processes, links,
//! a real API server) live in `tests/it/`, one binary with a module per subject (one
//! user-visible behaviour per test, sentence names); `src/bin/fleet-bench.rs` is the fleet
//! benchmark.

pub mod bench;
pub mod broker;
pub mod contracts;
pub mod cross;
pub mod fleet;
pub mod forge;
pub mod helm;
pub mod kube;
pub mod manifests;
pub mod metrics;
pub mod mosquitto;
pub mod netns;
pub mod pki;
pub mod probe;
pub mod process;
pub mod proxy;
pub mod reference;
pub mod rmqtt_cluster;
pub mod shaper;
pub mod wait;

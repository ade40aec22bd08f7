//! ocm-edge integration test harness and the fleet benchmark.
//!
//! Map:
//! - [`bench`]: the fleet benchmark behind `fleet-bench` (real hub vs transport alone).
//! - [`broker`]: the embedded broker (`ocm_edge_mqtt::broker`) on a free port that outlives hub restarts.
//! - [`fleet`]: a broker, a hub that can be restarted, N agents on the simulated cluster, an admin
//!   client, and waits on what the hub and the simulated clusters show.
//! - [`forge`]: wire messages a test sends as a peer (OCM work agent, maestro, rogue client).
//! - [`manifests`]: Kubernetes objects and work options for tests.
//! - [`mosquitto`]: a real Mosquitto 2 with a generated config (and optional password file + ACL).
//! - [`netns`]: an edge network namespace on a veth link that can be cut silently, or on a shaped
//!   2G link through `link-shaper` (root only).
//! - [`pki`]: a CA and a broker certificate made with rcgen, for TLS tests.
//! - [`shaper`]: a 2G link in user space (rate, delay, jitter, loss) between two TUN devices.
//! - [`probe`]: a raw MQTT 5 client to speak the wire directly (maestro's role, spies, bad input).
//! - [`process`]: a hub or agent in its own process (`test-hub`, `test-agent`) to kill with SIGKILL.
//! - [`wait`]: `wait_until` / `wait_for`: poll an observable condition with a bounded timeout.
//!
//! Integration tests live in `tests/` (one user-visible behaviour per test, sentence names);
//! `src/bin/fleet-bench.rs` is the fleet benchmark.

pub mod bench;
pub mod broker;
pub mod fleet;
pub mod forge;
pub mod kube;
pub mod manifests;
pub mod mosquitto;
pub mod netns;
pub mod pki;
pub mod probe;
pub mod process;
pub mod rmqtt_cluster;
pub mod shaper;
pub mod wait;

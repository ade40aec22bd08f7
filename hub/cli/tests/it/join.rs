//! Waiting on an in-process agent's side of the double opt-in, for the tests that run the real
//! `ocm-edge` binary next to agents.

use std::path::Path;
use std::time::Duration;

use ocm_edge_agent::{AgentConfig, AgentHandle, ApplierConfig, Registration, start_agent};
use ocm_edge_mqtt::CaPin;
use ocm_edge_tests::wait::wait_watch;

/// Starts the agent of cluster `name` on a simulated cluster (its data in `dir`), trusting the hub
/// at `url` by `pin` and asking to join with `token`, as `ocm-edge-agent --broker-ca-pin PIN
/// --token TOKEN` does; returns once its join request reached the hub (at most 30 s).
pub async fn start_joining(
    url: &str,
    name: &str,
    pin: CaPin,
    token: &str,
    dir: &Path,
) -> AgentHandle {
    let mut cfg = AgentConfig::new(name, url, dir);
    cfg.tls.ca_pin = Some(pin);
    cfg.join_token = Some(token.to_owned());
    cfg.applier = ApplierConfig::Sim {
        ready_delay: Duration::from_millis(100),
    };
    let agent = start_agent(cfg).await.expect("the agent starts");
    wait_registration(
        &agent,
        Registration::Pending,
        Duration::from_secs(30),
        &format!("the join request of {name} reaches the hub"),
    )
    .await;
    agent
}

/// Waits, at most `wait`, until `agent` is in `state` (Pending: its join request reached the hub;
/// Accepted: it heard it was accepted). Panics with `what` otherwise.
pub async fn wait_registration(
    agent: &AgentHandle,
    state: Registration,
    wait: Duration,
    what: &str,
) {
    let mut counters = agent.counters();
    wait_watch(&mut counters, what, wait, |c| c.registration == state)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

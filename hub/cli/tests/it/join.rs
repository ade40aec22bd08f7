//! Waiting on an in-process agent's side of the double opt-in, for the tests that run the real
//! `ocm-edge` binary next to agents.

use std::time::Duration;

use ocm_edge_agent::{AgentHandle, Registration};
use ocm_edge_tests::wait::wait_watch;

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

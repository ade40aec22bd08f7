//! The agent crate's integration tests, one binary with a module per subject: the binary and its
//! command line, the agent on a real broker with the hub played by a fake peer (`broker`,
//! `reconnect`, `offline`), the pure cores (`core`), the appliers (`sim`, `kube_applier`, at the
//! HTTP level and, `e2e_` tests, on a real API server), the store, and the flag reference.

mod binary;
mod broker;
mod cli;
mod core;
mod kube_applier;
mod maintenance;
mod offline;
mod reconnect;
mod reference;
mod sim;
mod store;

/// What these tests take from the one harness (`ocm_edge_tests`), under short names.
mod support {
    pub use ocm_edge_agent::AgentCounters;
    pub use ocm_edge_tests::broker::TestBroker;
    pub use ocm_edge_tests::forge::maestro_spec;
    pub use ocm_edge_tests::probe::HubPeer;
    pub use ocm_edge_tests::proxy::LinkProxy;
    pub use ocm_edge_tests::wait::wait_watch;
    pub use std::time::Duration;

    /// Bound on every wait in these tests.
    pub const WAIT: Duration = Duration::from_secs(20);

    /// The embedded broker on a free port (stops when dropped).
    pub fn start_broker() -> TestBroker {
        TestBroker::start().expect("the embedded broker starts")
    }

    /// [`start_broker`] letting in only the given username / password pairs.
    pub fn start_broker_with_auth(
        users: Option<std::collections::HashMap<String, String>>,
    ) -> TestBroker {
        match users {
            Some(users) => TestBroker::with_users(users).expect("the embedded broker starts"),
            None => start_broker(),
        }
    }

    /// Waits (bounded by [`WAIT`]) until the agent's counters satisfy `pred`.
    pub async fn wait_counters(
        rx: &mut tokio::sync::watch::Receiver<AgentCounters>,
        what: &str,
        pred: impl FnMut(&AgentCounters) -> bool,
    ) -> AgentCounters {
        wait_watch(rx, what, WAIT, pred)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A free port on 127.0.0.1 (bound, then released).
    pub fn free_port() -> u16 {
        ocm_edge_tests::broker::free_port().expect("a free port")
    }
}

//! The hub crate's integration tests, one binary with a module per subject: the pure cores
//! through the crate's public API (availability, placement, rollouts, with [`rollout_kit`]'s
//! builders), the hub's payloads against the published contracts (`contracts_*`), and the hub on
//! a real broker with its agents played by the harness's fake peer (`hub_end_to_end`). Tests
//! that run real agents or the CLI live in `tests/tests/it/` and `hub/cli/tests/it/`.

mod availability_state_machine;
mod contracts_admin;
mod contracts_dashboard;
mod hub_end_to_end;
mod placement_explanation;
mod placement_scheduling;
mod placement_scores;
mod placement_spread;
mod placement_tolerations;
mod rollout_cluster_status;
mod rollout_kit;
mod rollout_replicaset_status;
mod rollout_strategies;
mod scoped_operators;

/// What these tests take from the one harness (`ocm_edge_tests`), under short names.
mod support {
    pub use ocm_edge_tests::fleet::{Fleet, FleetOptions};
    pub use ocm_edge_tests::probe::AgentPeer;
    use std::time::Duration;

    /// Bound on every wait in these tests.
    pub const WAIT: Duration = Duration::from_secs(15);

    /// A fresh embedded broker and a hub on it (on the hub's defaults) with source id `source`,
    /// no agents.
    pub async fn fleet_of(source: &str) -> Fleet {
        Fleet::start_with(
            FleetOptions {
                source_id: source.to_owned(),
                admin_timeout: WAIT,
                ..FleetOptions::default()
            }
            .hub_defaults(),
        )
        .await
    }

    /// Polls `check` (admin round trips to the hub) until it returns `Some`, bounded by [`WAIT`].
    pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        ocm_edge_tests::wait::wait_for(what, WAIT, check)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

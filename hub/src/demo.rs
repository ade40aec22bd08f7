//! `ocm-edge demo`.

use std::time::Duration;

use thiserror::Error;

/// Demo settings.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Bound on each convergence wait.
    pub converge_timeout: Duration,
    /// How long the hub stays down.
    pub hub_downtime: Duration,
    /// Number of simulated clusters.
    pub clusters: usize,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            converge_timeout: Duration::from_secs(90),
            hub_downtime: Duration::from_secs(6),
            clusters: 3,
        }
    }
}

/// Why the demo failed.
#[derive(Debug, Error)]
pub enum DemoError {
    /// Not available yet.
    #[error("the demo is not available yet")]
    NotReady,
}

/// Runs the demo.
///
/// # Errors
/// See [`DemoError`].
pub async fn run(options: DemoOptions, out: &mut impl std::io::Write) -> Result<(), DemoError> {
    let _ = (options, out);
    Err(DemoError::NotReady)
}

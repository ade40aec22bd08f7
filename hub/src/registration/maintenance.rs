//! Maintenance windows set on the hub for a cluster (`ocm-edge cluster maintenance`): checked
//! here with the same parser the agent uses, stored on the cluster record and sent to the agent
//! in the hub's view (annotation [`maintenance::HUB_WINDOWS_ANNOTATION`]). The agent applies new versions of
//! works only when one of them, and one of its own `--maintenance-window`s if it has any, is
//! open; the hub does not gate anything itself. Pure: returns the change.

use ocm_edge_schemas::maintenance;

use super::RegistrationError;
use crate::core::{Change, ClusterState, HubCore};

impl HubCore {
    /// Replaces the maintenance windows of accepted cluster `cluster` (none: any time).
    ///
    /// # Errors
    /// [`RegistrationError::UnknownCluster`], [`RegistrationError::NotAccepted`], or
    /// [`RegistrationError::InvalidChange`] naming the window that cannot be read and how to
    /// write it; nothing changes then.
    pub fn set_maintenance_windows(
        &self,
        cluster: &str,
        windows: &[String],
    ) -> Result<Change, RegistrationError> {
        let mut record = self.known_cluster(cluster)?;
        if record.acceptance != ClusterState::Accepted {
            return Err(RegistrationError::NotAccepted(cluster.to_owned()));
        }
        let checked = maintenance::parse_all(windows)
            .map_err(|e| RegistrationError::InvalidChange(e.to_string()))?;
        // Stored as the parser read them (trimmed), one per line in the view.
        let windows: Vec<String> = checked.iter().map(|w| w.as_str().to_owned()).collect();
        if record.maintenance_windows == windows {
            return Ok(Change::default());
        }
        tracing::info!(%cluster, ?windows, "maintenance windows set by the hub");
        record.maintenance_windows = windows;
        Ok(self.publish_cluster(record))
    }
}

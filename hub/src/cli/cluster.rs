//! `ocm-edge cluster list|get|accept|deny`.

use clap::Subcommand;

use super::output::{OutputFormat, cluster_detail, clusters_table, print, to_document};
use super::{CliError, GlobalArgs};
use crate::admin::messages::ClusterState;

/// Cluster commands.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// List every cluster the hub knows (pending, accepted, denied).
    List {
        /// Output format.
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show one cluster: state, availability, lease, labels, claims, conditions.
    Get {
        /// Cluster name.
        name: String,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Accept a cluster that asked to join, so works can be sent to it.
    Accept {
        /// Cluster name.
        name: String,
    },
    /// Deny a cluster (its events are ignored from now on).
    Deny {
        /// Cluster name.
        name: String,
    },
}

/// Runs a cluster command.
///
/// # Errors
/// See [`CliError`].
pub async fn run(global: &GlobalArgs, cmd: ClusterCommand) -> Result<(), CliError> {
    let client = global.connect().await?;
    let now = chrono::Utc::now();
    let text = match cmd {
        ClusterCommand::List { output } => {
            let clusters = client.list_clusters().await?;
            match output {
                OutputFormat::Table if clusters.is_empty() => {
                    "No clusters yet. Start an agent (ocm-edge-agent --cluster-name NAME --broker URL) \
                     and accept it with `ocm-edge cluster accept NAME`.\n"
                        .to_owned()
                }
                OutputFormat::Table => {
                    let mut t = clusters_table(&clusters, now);
                    t.push('\n');
                    let pending: Vec<_> = clusters
                        .iter()
                        .filter(|c| c.state == ClusterState::Pending)
                        .map(|c| c.name.as_str())
                        .collect();
                    if !pending.is_empty() {
                        t.push_str(&format!(
                            "Waiting for acceptance: {} (run `ocm-edge cluster accept NAME`)\n",
                            pending.join(", ")
                        ));
                    }
                    t
                }
                format => to_document(&clusters, format)?,
            }
        }
        ClusterCommand::Get { name, output } => {
            let cluster = client.get_cluster(&name).await?;
            match output {
                OutputFormat::Table => cluster_detail(&cluster, now),
                format => to_document(&cluster, format)?,
            }
        }
        ClusterCommand::Accept { name } => {
            let cluster = client.accept_cluster(&name).await?;
            format!(
                "cluster {} accepted (state {})\n",
                cluster.name, cluster.state
            )
        }
        ClusterCommand::Deny { name } => {
            let cluster = client.deny_cluster(&name).await?;
            format!(
                "cluster {} denied (state {})\n",
                cluster.name, cluster.state
            )
        }
    };
    client.disconnect().await;
    print(&text)
}

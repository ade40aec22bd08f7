//! `ocm-edge rollout status NAME [-n NS]`: a ManifestWorkReplicaSet's progress, one row per
//! selected cluster, with its summary and conditions.

use chrono::{DateTime, Utc};
use clap::Subcommand;

use crate::output::{OutputFormat, conditions_table, new_table, print, to_document};
use crate::{CliError, GlobalArgs};
use ocm_edge_schemas::admin::ReplicaSetView;

/// Rollout commands.
#[derive(Debug, Subcommand)]
pub enum RolloutCommand {
    /// Show the progress of a ManifestWorkReplicaSet.
    Status {
        /// ManifestWorkReplicaSet name.
        name: String,
        /// Namespace [default: default].
        #[arg(short, long)]
        namespace: Option<String>,
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// List ManifestWorkReplicaSets (all namespaces unless -n is given).
    List {
        #[arg(short, long)]
        namespace: Option<String>,
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
}

fn at(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    t.map_or_else(
        || "-".to_owned(),
        |t| {
            let secs = (t - now).num_seconds();
            if secs > 0 {
                format!("in {secs}s")
            } else {
                format!("{}s ago", -secs)
            }
        },
    )
}

/// The rollout status text.
pub fn rollout_status(r: &ReplicaSetView, now: DateTime<Utc>) -> String {
    let meta = &r.set.metadata;
    let s = &r.set.status.summary;
    let mut out = format!("ManifestWorkReplicaSet: {}/{}\n", meta.namespace, meta.name);
    if r.deleting {
        out.push_str("Deleting: its works are being removed\n");
    }
    out.push_str(&format!(
        "Summary: total {} (desired {}), applied {}, available {}, progressing {}, degraded {}, updated {}\n",
        s.total, s.desired_total, s.applied, s.available, s.progressing, s.degraded, s.updated
    ));
    let mut t = new_table([
        "CLUSTER",
        "PLACEMENT",
        "GROUP",
        "STATUS",
        "SINCE",
        "RECHECK",
        "TEMPLATE",
        "REACHABLE",
    ]);
    for c in &r.clusters {
        t.add_row(vec![
            c.cluster.clone(),
            c.placement.clone(),
            if c.group_name.is_empty() {
                c.group_index.to_string()
            } else {
                format!("{} {}", c.group_index, c.group_name)
            },
            c.status.clone(),
            at(c.since, now),
            at(c.recheck_at, now),
            if c.current_template { "current" } else { "old" }.to_owned(),
            if c.reachable { "yes" } else { "NO" }.to_owned(),
        ]);
    }
    out.push_str(&format!("{t}\n"));
    let failing: Vec<_> = r
        .clusters
        .iter()
        .filter(|c| !c.message.is_empty())
        .collect();
    if !failing.is_empty() {
        out.push_str("Not rendered (these clusters keep the work they have):\n");
        for c in failing {
            out.push_str(&format!("  {}: {}\n", c.cluster, c.message));
        }
    }
    if !r.set.status.conditions.is_empty() {
        out.push_str(&conditions_table(&r.set.status.conditions, now));
        out.push('\n');
    }
    out
}

/// Runs a rollout command.
///
/// # Errors
/// See [`CliError`].
pub async fn run(global: &GlobalArgs, cmd: RolloutCommand) -> Result<(), CliError> {
    let client = global.connect().await?;
    let now = Utc::now();
    let text = match cmd {
        RolloutCommand::Status {
            name,
            namespace,
            output,
        } => {
            let r = client.get_replica_set(namespace.as_deref(), &name).await?;
            match output {
                OutputFormat::Table => rollout_status(&r, now),
                format => to_document(&r, format)?,
            }
        }
        RolloutCommand::List { namespace, output } => {
            let sets = client.list_replica_sets(namespace.as_deref()).await?;
            match output {
                OutputFormat::Table => {
                    let mut t =
                        new_table(["NAMESPACE", "NAME", "SELECTED", "AVAILABLE", "ROLLED OUT"]);
                    for r in &sets {
                        let rolled = ocm_edge_schemas::api::meta::find_condition(
                            &r.set.status.conditions,
                            ocm_edge_schemas::api::replicaset::CONDITION_PLACEMENT_ROLLED_OUT,
                        )
                        .map_or_else(|| "-".to_owned(), |c| c.status.to_string());
                        t.add_row(vec![
                            r.set.metadata.namespace.clone(),
                            r.set.metadata.name.clone(),
                            r.set.status.summary.desired_total.to_string(),
                            r.set.status.summary.available.to_string(),
                            rolled,
                        ]);
                    }
                    format!("{t}\n")
                }
                format => to_document(&sets, format)?,
            }
        }
    };
    client.disconnect().await;
    print(&text)
}

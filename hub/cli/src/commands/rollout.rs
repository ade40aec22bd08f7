//! `ocm-edge rollout status|history|undo|list`: a ManifestWorkReplicaSet's progress (one row per
//! selected cluster, with its summary and conditions), its kept revisions, and going back to one.

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
    /// Show the revisions of a ManifestWorkReplicaSet's template the hub keeps
    /// (`revisionHistoryLimit`, 10 by default).
    History {
        /// ManifestWorkReplicaSet name.
        name: String,
        /// Namespace [default: default].
        #[arg(short, long)]
        namespace: Option<String>,
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Roll a ManifestWorkReplicaSet back to a kept revision: its template becomes that
    /// revision's, rolled out with its strategy. Without --to-revision: the last revision rolled
    /// out everywhere, or (when that is the template) the one before.
    Undo {
        /// ManifestWorkReplicaSet name.
        name: String,
        /// Namespace [default: default].
        #[arg(short, long)]
        namespace: Option<String>,
        /// The revision (see `rollout history`).
        #[arg(long)]
        to_revision: Option<i64>,
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
    let st = &r.set.status;
    if !st.update_revision.is_empty() {
        let number = |hash: &str| {
            r.revisions
                .iter()
                .find(|h| h.hash == hash)
                .map_or_else(|| hash.to_owned(), |h| format!("{} ({hash})", h.revision))
        };
        out.push_str(&format!("Revision: {}", number(&st.update_revision)));
        if !st.current_revision.is_empty() && st.current_revision != st.update_revision {
            out.push_str(&format!(
                ", last rolled out everywhere: {}",
                number(&st.current_revision)
            ));
        }
        if let Some(t) = st.aborted_time {
            out.push_str(&format!(", ABORTED {}", at(Some(t.as_datetime()), now)));
        }
        out.push('\n');
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
    let noted: Vec<_> = r
        .clusters
        .iter()
        .filter(|c| !c.message.is_empty())
        .collect();
    if !noted.is_empty() {
        out.push_str("Notes:\n");
        for c in noted {
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
        RolloutCommand::History {
            name,
            namespace,
            output,
        } => {
            let r = client.get_replica_set(namespace.as_deref(), &name).await?;
            match output {
                OutputFormat::Table => {
                    let mut t = new_table(["REVISION", "HASH", "SINCE", "MANIFESTS", "STATE"]);
                    let st = &r.set.status;
                    for h in &r.revisions {
                        let mut state = Vec::new();
                        if h.hash == st.update_revision {
                            state.push("template");
                        }
                        if h.hash == st.current_revision {
                            state.push("rolled out everywhere");
                        }
                        t.add_row(vec![
                            h.revision.to_string(),
                            h.hash.clone(),
                            at(Some(h.created), now),
                            h.manifests.join(", "),
                            state.join(", "),
                        ]);
                    }
                    format!("{t}\n")
                }
                format => to_document(&r.revisions, format)?,
            }
        }
        RolloutCommand::Undo {
            name,
            namespace,
            to_revision,
        } => {
            let r = client
                .undo_rollout(namespace.as_deref(), &name, to_revision)
                .await?;
            // As the hub chose: the one named, else the last rolled out everywhere when the
            // template was another, else the newest before the template's.
            let st = &r.set.status;
            let revision = r
                .revisions
                .iter()
                .find(|h| Some(h.revision) == to_revision)
                .or_else(|| {
                    (to_revision.is_none() && st.current_revision != st.update_revision)
                        .then(|| r.revisions.iter().find(|h| h.hash == st.current_revision))
                        .flatten()
                })
                .or_else(|| {
                    r.revisions
                        .iter()
                        .rev()
                        .find(|h| h.hash != st.update_revision)
                })
                .map_or_else(String::new, |h| format!(" {} ({})", h.revision, h.hash));
            format!(
                "manifestworkreplicaset {}/{} rolled back to revision{revision}: its template \
                 rolls out with its strategy (ocm-edge rollout status {name})\n",
                r.set.metadata.namespace, r.set.metadata.name
            )
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

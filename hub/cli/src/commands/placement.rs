//! `ocm-edge clusterset list|get` and `ocm-edge placement list|get`: cluster sets with their
//! members, placements with their decisions and why each cluster was or was not selected.

use chrono::{DateTime, Utc};
use clap::Subcommand;
use ocm_edge_schemas::api::meta::find_condition;
use ocm_edge_schemas::api::placement::PLACEMENT_SATISFIED;

use crate::output::{OutputFormat, conditions_table, new_table, print, to_document};
use crate::{CliError, GlobalArgs};
use ocm_edge_hub::placement::Explanation;
use ocm_edge_schemas::admin::{ClusterSetView, PlacementView, WriteOutcome};

/// Cluster set commands.
#[derive(Debug, Subcommand)]
pub enum ClusterSetCommand {
    /// List cluster sets with their members.
    List {
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show one cluster set.
    Get {
        /// Set name.
        name: String,
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Put accepted clusters in a cluster set (one that selects by membership, such as
    /// `default`); each leaves the set it was in. All or nothing (admin role).
    Set {
        /// Set name.
        set: String,
        /// The clusters, comma separated.
        #[arg(long, required = true, value_delimiter = ',', value_name = "A,B")]
        clusters: Vec<String>,
    },
    /// Bind a cluster set to a namespace, so placements there may choose its clusters.
    Bind {
        /// Set name.
        set: String,
        /// Namespace [default: default].
        #[arg(short, long)]
        namespace: Option<String>,
    },
    /// Remove a cluster set's binding from a namespace: placements there stop choosing its
    /// clusters (their works are deleted as placements drop the clusters).
    Unbind {
        /// Set name.
        set: String,
        /// Namespace [default: default].
        #[arg(short, long)]
        namespace: Option<String>,
    },
}

/// Placement commands.
#[derive(Debug, Subcommand)]
pub enum PlacementCommand {
    /// List placements (all namespaces unless -n is given).
    List {
        /// Namespace.
        #[arg(short, long)]
        namespace: Option<String>,
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show a placement: its decisions and why each cluster was or was not selected.
    Get {
        /// Placement name.
        name: String,
        /// Namespace [default: default].
        #[arg(short, long)]
        namespace: Option<String>,
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
}

/// The cluster set table.
pub fn cluster_sets_table(sets: &[ClusterSetView]) -> String {
    let mut t = new_table(["NAME", "SELECTOR", "CLUSTERS", "BOUND TO"]);
    for s in sets {
        t.add_row(vec![
            s.name.clone(),
            s.selector_type.clone(),
            if s.clusters.is_empty() {
                "-".to_owned()
            } else {
                s.clusters.join(",")
            },
            if s.bound_namespaces.is_empty() {
                "-".to_owned()
            } else {
                s.bound_namespaces.join(",")
            },
        ]);
    }
    format!("{t}\n")
}

/// The placement table.
pub fn placements_table(placements: &[PlacementView]) -> String {
    let mut t = new_table(["NAMESPACE", "NAME", "SATISFIED", "SELECTED", "DECISIONS"]);
    for p in placements {
        let satisfied = find_condition(&p.placement.status.conditions, PLACEMENT_SATISFIED)
            .map_or_else(
                || "-".to_owned(),
                |c| format!("{} ({})", c.status, c.reason),
            );
        t.add_row(vec![
            p.placement.metadata.namespace.clone(),
            p.placement.metadata.name.clone(),
            satisfied,
            p.placement.status.number_of_selected_clusters.to_string(),
            p.decisions
                .iter()
                .map(|d| d.cluster.clone())
                .collect::<Vec<_>>()
                .join(","),
        ]);
    }
    format!("{t}\n")
}

/// `placement get`: summary, decisions, the explanation table and the conditions.
pub fn placement_detail(p: &PlacementView, now: DateTime<Utc>) -> String {
    let meta = &p.placement.metadata;
    let mut out = format!("Placement:   {}/{}\n", meta.namespace, meta.name);
    if let Some(n) = p.placement.spec.number_of_clusters {
        out.push_str(&format!("Clusters:    {n} requested\n"));
    }
    out.push_str(&format!(
        "Selected:    {}\n",
        p.placement.status.number_of_selected_clusters
    ));
    if let Some(at) = p.requeue_at {
        out.push_str(&format!("Re-check at: {at}\n"));
    }
    out.push_str("Decisions:\n");
    if p.decisions.is_empty() {
        out.push_str("  (none)\n");
    }
    for d in &p.decisions {
        out.push_str(&format!(
            "  {} (group {}{}; {})\n",
            d.cluster,
            d.group_index,
            if d.group_name.is_empty() {
                String::new()
            } else {
                format!(" {}", d.group_name)
            },
            d.decision
        ));
    }
    if let Some(e) = &p.explanation {
        out.push_str(&explanation_table(e));
    }
    if !p.placement.status.conditions.is_empty() {
        out.push_str(&conditions_table(&p.placement.status.conditions, now));
        out.push('\n');
    }
    out
}

/// The per-cluster EXPLANATION table.
pub fn explanation_table(e: &Explanation) -> String {
    let mut out = String::from("Explanation");
    if !e.eligible_cluster_sets.is_empty() {
        out.push_str(&format!(
            " (cluster sets: {})",
            e.eligible_cluster_sets.join(",")
        ));
    }
    out.push_str(":\n");
    let mut t = new_table(Explanation::HEADERS);
    for row in e.rows() {
        t.add_row(row.to_vec());
    }
    out.push_str(&format!("{t}\n"));
    out
}

/// Runs a cluster set command.
///
/// # Errors
/// See [`CliError`].
pub async fn run_cluster_set(global: &GlobalArgs, cmd: ClusterSetCommand) -> Result<(), CliError> {
    let client = global.connect().await?;
    let text = match cmd {
        ClusterSetCommand::List { output } => {
            let sets = client.list_cluster_sets().await?;
            match output {
                OutputFormat::Table if sets.is_empty() => {
                    "No cluster sets. Create one with `ocm-edge apply -f clusterset.yaml`.\n"
                        .to_owned()
                }
                OutputFormat::Table => cluster_sets_table(&sets),
                format => to_document(&sets, format)?,
            }
        }
        ClusterSetCommand::Get { name, output } => {
            let set = client.get_cluster_set(&name).await?;
            match output {
                OutputFormat::Table => cluster_sets_table(std::slice::from_ref(&set)),
                format => to_document(&set, format)?,
            }
        }
        ClusterSetCommand::Set { set, clusters } => {
            let views = client.set_cluster_set(&set, clusters).await?;
            let names: Vec<&str> = views.iter().map(|c| c.name.as_str()).collect();
            format!("cluster set {set}: {} put in it\n", names.join(", "))
        }
        ClusterSetCommand::Bind { set, namespace } => {
            let a = client.bind_cluster_set(&set, namespace.as_deref()).await?;
            format!(
                "cluster set {set} bound to namespace {} ({})\n",
                a.namespace,
                match a.outcome {
                    WriteOutcome::Unchanged => "already bound",
                    _ => "placements there may choose its clusters",
                }
            )
        }
        ClusterSetCommand::Unbind { set, namespace } => {
            let d = client
                .unbind_cluster_set(&set, namespace.as_deref())
                .await?;
            format!("cluster set {set} unbound from namespace {}\n", d.namespace)
        }
    };
    client.disconnect().await;
    print(&text)
}

/// Runs a placement command.
///
/// # Errors
/// See [`CliError`].
pub async fn run_placement(global: &GlobalArgs, cmd: PlacementCommand) -> Result<(), CliError> {
    let client = global.connect().await?;
    let text = match cmd {
        PlacementCommand::List { namespace, output } => {
            let placements = client.list_placements(namespace.as_deref()).await?;
            match output {
                OutputFormat::Table if placements.is_empty() => {
                    "No placements. Create one with `ocm-edge apply -f placement.yaml`.\n"
                        .to_owned()
                }
                OutputFormat::Table => placements_table(&placements),
                format => to_document(&placements, format)?,
            }
        }
        PlacementCommand::Get {
            name,
            namespace,
            output,
        } => {
            let p = client.get_placement(namespace.as_deref(), &name).await?;
            match output {
                OutputFormat::Table => placement_detail(&p, Utc::now()),
                format => to_document(&p, format)?,
            }
        }
    };
    client.disconnect().await;
    print(&text)
}

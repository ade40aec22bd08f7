//! `ocm-edge addon list|get|enable|disable`: OCM's add-ons (clusteradm's `addon enable` and
//! `addon disable`). Add-ons, their templates and configs are applied with `ocm-edge apply -f`.

use chrono::{DateTime, Utc};
use clap::Subcommand;

use crate::output::{OutputFormat, ago, new_table, print, to_document};
use crate::{CliError, GlobalArgs};
use ocm_edge_schemas::admin::AddOnView;
use ocm_edge_schemas::api::addon::{
    CONDITION_AVAILABLE, CONDITION_CONFIGURED, CONDITION_MANIFEST_APPLIED, CONDITION_PROGRESSING,
};
use ocm_edge_schemas::api::meta::find_condition;

/// Add-on commands.
#[derive(Debug, Subcommand)]
pub enum AddonCommand {
    /// List the add-ons, with on how many clusters each is enabled and available.
    List {
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show an add-on: its install strategy, configs and one row per cluster (installed,
    /// configured, applied, available, config).
    Get {
        /// Add-on name.
        name: String,
        /// Only this cluster.
        #[arg(long)]
        cluster: Option<String>,
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Enable add-ons on clusters (a ManagedClusterAddOn in each cluster's namespace).
    Enable {
        /// Add-on names, comma separated.
        #[arg(long, required = true, value_delimiter = ',')]
        names: Vec<String>,
        /// Clusters, comma separated.
        #[arg(long, required = true, value_delimiter = ',')]
        clusters: Vec<String>,
        /// Where the add-on's agent is installed (unless its AddOnDeploymentConfig says)
        /// [default: open-cluster-management-agent-addon].
        #[arg(short, long)]
        namespace: Option<String>,
    },
    /// Disable add-ons on clusters: their agents' works are deleted from the clusters.
    Disable {
        /// Add-on names, comma separated.
        #[arg(long, required = true, value_delimiter = ',')]
        names: Vec<String>,
        /// Clusters, comma separated.
        #[arg(long, required = true, value_delimiter = ',')]
        clusters: Vec<String>,
    },
}

fn status_of(conditions: &[ocm_edge_schemas::api::meta::Condition], type_: &str) -> String {
    find_condition(conditions, type_).map_or_else(|| "-".to_owned(), |c| c.status.to_string())
}

/// `addon get`'s text: the add-on, then a row per cluster.
pub fn addon_detail(a: &AddOnView, now: DateTime<Utc>) -> String {
    let mut out = format!("Add-on:      {}\n", a.name);
    if !a.display_name.is_empty() && a.display_name != a.name {
        out.push_str(&format!("Name:        {}\n", a.display_name));
    }
    if !a.description.is_empty() {
        out.push_str(&format!("Description: {}\n", a.description));
    }
    out.push_str(&format!("Install:     {}", a.install_strategy));
    if !a.placements.is_empty() {
        out.push_str(&format!(" ({})", a.placements.join(", ")));
    }
    out.push('\n');
    for c in &a.default_configs {
        out.push_str(&format!("Config:      {c}\n"));
    }
    for p in &a.progressions {
        out.push_str(&format!("Rollout:     {p}\n"));
    }
    if a.clusters.is_empty() {
        out.push_str(&format!(
            "Enabled on no cluster (`ocm-edge addon enable --names {} --clusters NAME`)\n",
            a.name
        ));
        return out;
    }
    let mut t = new_table([
        "CLUSTER",
        "INSTALLED BY",
        "NAMESPACE",
        "CONFIGURED",
        "APPLIED",
        "AVAILABLE",
        "SINCE",
        "PROGRESSING",
        "CONFIGS",
    ]);
    for row in &a.clusters {
        let available = find_condition(&row.conditions, CONDITION_AVAILABLE);
        t.add_row(vec![
            row.cluster.clone(),
            row.installed_by.clone(),
            row.namespace.clone(),
            status_of(&row.conditions, CONDITION_CONFIGURED),
            status_of(&row.conditions, CONDITION_MANIFEST_APPLIED),
            available.map_or_else(
                || "-".to_owned(),
                |c| format!("{} ({})", c.status, c.reason),
            ),
            available
                .and_then(|c| c.last_transition_time)
                .map_or_else(|| "-".to_owned(), |t| ago(t, now)),
            find_condition(&row.conditions, CONDITION_PROGRESSING)
                .map_or_else(|| "-".to_owned(), |c| c.reason.clone()),
            row.configs.join(", "),
        ]);
    }
    out.push_str(&format!("{t}\n"));
    // Why a cluster's add-on is not configured, in full.
    for row in &a.clusters {
        if let Some(c) =
            find_condition(&row.conditions, CONDITION_CONFIGURED).filter(|c| !c.is_true())
        {
            out.push_str(&format!("{}: not configured: {}\n", row.cluster, c.message));
        }
    }
    out
}

/// Runs one add-on command.
///
/// # Errors
/// See [`CliError`].
pub async fn run(global: &GlobalArgs, cmd: AddonCommand) -> Result<(), CliError> {
    let client = global.connect().await?;
    let now = Utc::now();
    let text = match cmd {
        AddonCommand::List { output } => {
            let addons = client.list_addons().await?;
            match output {
                OutputFormat::Table if addons.is_empty() => {
                    "No add-ons yet: apply a ClusterManagementAddOn and its AddOnTemplate with \
                     `ocm-edge apply -f FILE`.\n"
                        .to_owned()
                }
                OutputFormat::Table => {
                    let mut t = new_table(["NAME", "INSTALL", "ENABLED", "AVAILABLE", "CONFIGS"]);
                    for a in &addons {
                        t.add_row(vec![
                            a.name.clone(),
                            a.install_strategy.clone(),
                            a.enabled.to_string(),
                            a.available.to_string(),
                            a.default_configs.join(", "),
                        ]);
                    }
                    format!("{t}\n")
                }
                format => to_document(&addons, format)?,
            }
        }
        AddonCommand::Get {
            name,
            cluster,
            output,
        } => {
            let a = client.get_addon(&name, cluster.as_deref()).await?;
            match output {
                OutputFormat::Table => addon_detail(&a, now),
                format => to_document(&a, format)?,
            }
        }
        AddonCommand::Enable {
            names,
            clusters,
            namespace,
        } => {
            client
                .switch_addons(true, names.clone(), clusters.clone(), namespace)
                .await?;
            format!(
                "enabled {} on {} (`ocm-edge addon get NAME` shows each cluster's state)\n",
                names.join(", "),
                clusters.join(", ")
            )
        }
        AddonCommand::Disable { names, clusters } => {
            client
                .switch_addons(false, names.clone(), clusters.clone(), None)
                .await?;
            format!(
                "disabled {} on {}: their agents' works are being deleted from the clusters\n",
                names.join(", "),
                clusters.join(", ")
            )
        }
    };
    client.disconnect().await;
    print(&text)
}

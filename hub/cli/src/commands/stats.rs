//! `ocm-edge stats`: the hub's figures (clusters by state, works) and its counters (events
//! dropped and why, admin requests refused, agents' labels ignored, ...).

use clap::Args;

use crate::output::{OutputFormat, new_table, print, to_document};
use crate::{CliError, GlobalArgs};
use ocm_edge_schemas::admin::HubStats;

/// `ocm-edge stats` options.
#[derive(Debug, Args)]
pub struct StatsArgs {
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// The stats text: a summary line each for clusters and works, then every counter.
pub fn stats_text(s: &HubStats) -> String {
    let mut out = format!(
        "Clusters: {} accepted ({} available), {} pending, {} denied\nWorks:    {}\n",
        s.clusters_accepted, s.clusters_available, s.clusters_pending, s.clusters_denied, s.works
    );
    if s.counters.is_empty() {
        out.push_str("No counters yet (nothing dropped, refused or ignored).\n");
        return out;
    }
    let mut t = new_table(["COUNTER", "VALUE"]);
    for (name, value) in &s.counters {
        t.add_row(vec![name.clone(), value.to_string()]);
    }
    out.push_str(&format!("{t}\n"));
    out
}

/// Runs `ocm-edge stats`.
///
/// # Errors
/// See [`CliError`].
pub async fn run(global: &GlobalArgs, args: StatsArgs) -> Result<(), CliError> {
    let client = global.connect().await?;
    let stats = client.stats().await?;
    client.disconnect().await;
    let text = match args.output {
        OutputFormat::Table => stats_text(&stats),
        format => to_document(&stats, format)?,
    };
    print(&text)
}

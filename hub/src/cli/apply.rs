//! `ocm-edge apply -f FILE`: OCM ManifestWork YAML as written for OCM, created or updated like
//! `kubectl apply`.

use std::path::PathBuf;

use clap::Args;

use super::manifests::read_manifest_works;
use super::output::print;
use super::{CliError, GlobalArgs};
use crate::admin::messages::ClusterState;

/// `apply` options.
#[derive(Debug, Clone, Args)]
pub struct ApplyArgs {
    /// A file of ManifestWorks (YAML or JSON, multi-document), a directory of them, or - for
    /// standard input.
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR")]
    pub file: PathBuf,
}

/// Runs `apply`.
///
/// # Errors
/// See [`CliError`]. Every document is checked (locally, then its cluster at the hub) before
/// the first one is applied.
pub async fn run(global: &GlobalArgs, args: ApplyArgs) -> Result<(), CliError> {
    let works = read_manifest_works(&args.file)?;
    let client = global.connect().await?;
    // The hub checks each work on its own; checking every target cluster first keeps a bad
    // second document from leaving the first one applied.
    let clusters = client.list_clusters().await?;
    for (work, origin) in &works {
        let cluster = &work.metadata.namespace;
        match clusters.iter().find(|c| &c.name == cluster) {
            None => {
                return Err(CliError::Usage(format!(
                    "{origin}: cluster {cluster:?} (metadata.namespace) is not known to the hub: \
                     check the name with `ocm-edge cluster list`"
                )));
            }
            Some(c) if c.state != ClusterState::Accepted => {
                return Err(CliError::Usage(format!(
                    "{origin}: cluster {cluster:?} is {}: accept it first with `ocm-edge cluster \
                     accept {cluster}`",
                    c.state.to_string().to_lowercase()
                )));
            }
            Some(_) => {}
        }
    }
    let mut text = String::new();
    for (work, _) in works {
        let written = client.apply_manifest_work(work).await?;
        text.push_str(&format!(
            "manifestwork {}/{} {} (version {})\n",
            written.work.cluster, written.work.name, written.outcome, written.work.version
        ));
    }
    client.disconnect().await;
    print(&text)
}

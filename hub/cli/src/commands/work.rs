//! `ocm-edge work create|list|get|render|delete`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Subcommand;
use ocm_edge_schemas::api::work::{
    DeleteOption, FeedbackRule, FeedbackType, Manifest, ManifestConfigOption, PropagationPolicy,
    ResourceIdentifier,
};
use ocm_edge_schemas::validate::{validate_cluster_name, validate_work_name};
use serde_json::Value;

use crate::client::AdminError;
use crate::manifests::{InputError, check_manifests, read_objects};
use crate::output::{OutputFormat, print, to_document, work_detail, works_table};
use crate::{CliError, GlobalArgs};
use ocm_edge_schemas::admin::AdminErrorKind;
use ocm_edge_schemas::admin::CreateWork;

/// Work commands.
#[derive(Debug, Subcommand)]
pub enum WorkCommand {
    /// Create a work from Kubernetes manifests on one or more clusters.
    Create {
        /// Work name (a Kubernetes name).
        name: String,
        /// A manifest file (YAML or JSON, multi-document), a directory (every *.yaml, *.yml,
        /// *.json in name order), or - for standard input.
        #[arg(short = 'f', long = "filename", value_name = "FILE|DIR")]
        file: PathBuf,
        /// Target clusters, comma separated.
        #[arg(
            long,
            value_delimiter = ',',
            required = true,
            value_name = "CLUSTER,..."
        )]
        clusters: Vec<String>,
        /// Replace the work where it already exists (its version is bumped when it changed).
        #[arg(long)]
        overwrite: bool,
        /// Ask the agents to report the well-known status (ReadyReplicas, ...) of every
        /// Deployment, DaemonSet, Job and Pod in the work.
        #[arg(long)]
        feedback: bool,
        /// Leave the resources on the clusters when the work is deleted (deleteOption Orphan).
        #[arg(long)]
        orphan: bool,
        /// Per-cluster values and overrides (YAML with `values`, `clusterSets`, `clusters`,
        /// `overrides`, as a ManifestWorkReplicaSet's `spec.perCluster`): the hub renders each
        /// cluster's work from the manifests' `{{ ... }}` placeholders before signing it; a
        /// cluster it cannot be rendered for fails the whole command.
        #[arg(long, value_name = "FILE")]
        values: Option<PathBuf>,
    },
    /// List works with their status.
    List {
        /// Only this cluster's works.
        #[arg(long)]
        cluster: Option<String>,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show one work: conditions and per-manifest status feedback.
    Get {
        /// Work name.
        name: String,
        /// The cluster the work is on.
        #[arg(long)]
        cluster: String,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Print the work a ManifestWorkReplicaSet gives one cluster (its `perCluster` values and
    /// overrides rendered, as the hub renders them before signing), without sending anything.
    Render {
        /// ManifestWorkReplicaSet name.
        name: String,
        /// The cluster to render for.
        #[arg(long)]
        cluster: String,
        /// Namespace of the set [default: default].
        #[arg(short, long)]
        namespace: Option<String>,
        /// Render this file's ManifestWorkReplicaSet NAME instead of the one the hub holds (to
        /// check a change before applying it).
        #[arg(short = 'f', long = "filename", value_name = "FILE")]
        file: Option<PathBuf>,
        /// Output format: table prints the manifests as YAML documents.
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Delete a work: the agent removes its resources, then the hub forgets it.
    Delete {
        /// Work name.
        name: String,
        /// The cluster the work is on.
        #[arg(long)]
        cluster: String,
        /// Wait until the agent confirmed the deletion and the hub forgot the work.
        #[arg(long)]
        wait: bool,
    },
}

/// Runs a work command.
///
/// # Errors
/// See [`CliError`].
pub async fn run(global: &GlobalArgs, cmd: WorkCommand) -> Result<(), CliError> {
    let now = chrono::Utc::now();
    let text = match cmd {
        WorkCommand::Create {
            name,
            file,
            clusters,
            overwrite,
            feedback,
            orphan,
            values,
        } => {
            // Everything is checked before connecting: bad input never reaches the hub.
            let mut work = new_work(name, &file, clusters, overwrite)?;
            if let Some(values) = &values {
                work.per_cluster = Some(read_values(values)?);
            }
            if feedback {
                work.manifest_configs = well_known_feedback(&work.manifests);
            }
            if orphan {
                work.delete_option = Some(DeleteOption {
                    propagation_policy: PropagationPolicy::Orphan,
                    ..DeleteOption::default()
                });
            }
            let client = global.connect().await?;
            let written = client.create_work(work).await?;
            client.disconnect().await;
            written
                .iter()
                .map(|w| {
                    format!(
                        "work {} {} on {} (version {})\n",
                        w.work.name, w.outcome, w.work.cluster, w.work.version
                    )
                })
                .collect()
        }
        WorkCommand::List { cluster, output } => {
            let client = global.connect().await?;
            let works = client.list_works(cluster.as_deref()).await?;
            client.disconnect().await;
            match output {
                OutputFormat::Table if works.is_empty() => {
                    "No works. Create one with `ocm-edge work create NAME -f FILE --clusters C`.\n"
                        .to_owned()
                }
                OutputFormat::Table => works_table(&works, now) + "\n",
                format => to_document(&works, format)?,
            }
        }
        WorkCommand::Get {
            name,
            cluster,
            output,
        } => {
            let client = global.connect().await?;
            let work = client
                .get_work(&cluster, &name)
                .await
                .map_err(|e| with_list_hint(e, &cluster))?;
            client.disconnect().await;
            match output {
                OutputFormat::Table => work_detail(&work, now),
                format => to_document(&work, format)?,
            }
        }
        WorkCommand::Render {
            name,
            cluster,
            namespace,
            file,
            output,
        } => {
            validate_cluster_name(&cluster)
                .map_err(|e| CliError::Usage(format!("--cluster: {e}")))?;
            let object = match &file {
                Some(file) => Some(replica_set_in(file, &name)?),
                None => None,
            };
            let client = global.connect().await?;
            let work = client
                .render_replica_set(namespace.as_deref(), &name, &cluster, object)
                .await?;
            client.disconnect().await;
            match output {
                OutputFormat::Table => {
                    let mut text = format!(
                        "# ManifestWorkReplicaSet {name} rendered for cluster {cluster} (nothing sent)\n"
                    );
                    for m in &work.spec.workload.manifests {
                        text.push_str("---\n");
                        text.push_str(
                            &serde_yaml_ng::to_string(&m.0)
                                .map_err(|e| CliError::Output(e.to_string()))?,
                        );
                    }
                    text
                }
                format => to_document(&work, format)?,
            }
        }
        WorkCommand::Delete {
            name,
            cluster,
            wait,
        } => {
            let client = global.connect().await?;
            client
                .delete_work(&cluster, &name)
                .await
                .map_err(|e| with_list_hint(e, &cluster))?;
            let text = if wait {
                wait_until_forgotten(&client, &cluster, &name, global.timeout).await?;
                format!("work {name} deleted from {cluster}\n")
            } else {
                format!(
                    "work {name} on {cluster} is being deleted (the hub forgets it once the agent \
                     has removed its resources)\n"
                )
            };
            client.disconnect().await;
            text
        }
    };
    print(&text)
}

/// A `--values` file: a ManifestWorkReplicaSet's `spec.perCluster`.
fn read_values(
    path: &std::path::Path,
) -> Result<ocm_edge_schemas::api::replicaset::PerCluster, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| InputError::Read {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    serde_yaml_ng::from_str(&text).map_err(|e| {
        CliError::Usage(format!(
            "--values {}: {e} (expected values, clusterSets, clusters and overrides, as a \
             ManifestWorkReplicaSet's spec.perCluster)",
            path.display()
        ))
    })
}

/// The ManifestWorkReplicaSet named `name` in `file`.
fn replica_set_in(file: &std::path::Path, name: &str) -> Result<Value, CliError> {
    let loaded = read_objects(file)?;
    let sets: Vec<&Value> = loaded
        .iter()
        .map(|l| &l.value)
        .filter(|v| v.get("kind").and_then(Value::as_str) == Some("ManifestWorkReplicaSet"))
        .collect();
    sets.iter()
        .find(|v| v.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        .map(|v| (*v).clone())
        .ok_or_else(|| {
            let found: Vec<&str> = sets
                .iter()
                .filter_map(|v| v.pointer("/metadata/name")?.as_str())
                .collect();
            CliError::Usage(format!(
                "{} holds no ManifestWorkReplicaSet named {name:?} (it holds: {})",
                file.display(),
                if found.is_empty() {
                    "none".to_owned()
                } else {
                    found.join(", ")
                }
            ))
        })
}

/// Kinds with OCM well-known status feedback, and their plural resource names.
const WELL_KNOWN_STATUS_KINDS: [(&str, &str); 4] = [
    ("Deployment", "deployments"),
    ("DaemonSet", "daemonsets"),
    ("Job", "jobs"),
    ("Pod", "pods"),
];

/// A WellKnownStatus feedback rule for every manifest whose kind has one.
pub fn well_known_feedback(manifests: &[Value]) -> Vec<ManifestConfigOption> {
    manifests
        .iter()
        .filter_map(|m| {
            let m = Manifest(m.clone());
            let kind = m.kind()?;
            let (_, resource) = WELL_KNOWN_STATUS_KINDS.iter().find(|(k, _)| *k == kind)?;
            let (group, _) = m.group_version()?;
            Some(ManifestConfigOption {
                resource_identifier: ResourceIdentifier {
                    group: group.to_owned(),
                    resource: (*resource).to_owned(),
                    name: m.name()?.to_owned(),
                    namespace: m.namespace().unwrap_or_default().to_owned(),
                },
                feedback_rules: vec![FeedbackRule {
                    type_: FeedbackType::WellKnownStatus,
                    json_paths: Vec::new(),
                }],
                ..ManifestConfigOption::default()
            })
        })
        .collect()
}

/// A missing work is often a typo in the name or the cluster: say where to look.
fn with_list_hint(e: AdminError, cluster: &str) -> CliError {
    match e {
        AdminError::Hub {
            kind: AdminErrorKind::NotFound,
            message,
        } => CliError::Usage(format!(
            "{message} (see `ocm-edge work list --cluster {cluster}`)"
        )),
        other => other.into(),
    }
}

fn new_work(
    name: String,
    file: &std::path::Path,
    clusters: Vec<String>,
    overwrite: bool,
) -> Result<CreateWork, CliError> {
    validate_work_name(&name).map_err(InputError::InvalidName)?;
    let mut seen = std::collections::BTreeSet::new();
    for cluster in &clusters {
        validate_cluster_name(cluster).map_err(InputError::InvalidName)?;
        if !seen.insert(cluster.as_str()) {
            return Err(CliError::Usage(format!(
                "cluster {cluster:?} is listed twice in --clusters"
            )));
        }
    }
    let loaded = read_objects(file)?;
    let manifests = check_manifests(file, &loaded)?;
    Ok(CreateWork {
        name,
        clusters,
        manifests,
        overwrite,
        ..CreateWork::default()
    })
}

/// Polls until the hub no longer knows the work (the agent confirmed the deletion).
async fn wait_until_forgotten(
    client: &crate::client::AdminClient,
    cluster: &str,
    name: &str,
    timeout: Duration,
) -> Result<(), CliError> {
    // The agent may be slow or offline; give it a generous multiple of the request timeout.
    let deadline = tokio::time::Instant::now() + timeout * 6;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tick.tick().await;
        match client.get_work(cluster, name).await {
            Err(AdminError::Hub {
                kind: AdminErrorKind::NotFound,
                ..
            }) => return Ok(()),
            Err(e) => return Err(e.into()),
            Ok(_) if tokio::time::Instant::now() >= deadline => {
                return Err(CliError::Usage(format!(
                    "work {name} on {cluster} is still being deleted after {} s: is the agent of \
                     {cluster} connected? (`ocm-edge cluster get {cluster}`)",
                    (timeout * 6).as_secs()
                )));
            }
            Ok(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn feedback_rules_cover_workloads_with_well_known_status_only() {
        let manifests = [
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "web"}}),
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once", "namespace": "web"}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "web"}}),
        ];
        let configs = well_known_feedback(&manifests);
        let ids: Vec<_> = configs
            .iter()
            .map(|c| {
                let r = &c.resource_identifier;
                (
                    r.group.as_str(),
                    r.resource.as_str(),
                    r.name.as_str(),
                    r.namespace.as_str(),
                )
            })
            .collect();
        assert_eq!(
            ids,
            [
                ("apps", "deployments", "web", "web"),
                ("batch", "jobs", "once", "web"),
                ("", "pods", "p", "web"),
            ]
        );
        assert!(
            configs
                .iter()
                .all(|c| c.feedback_rules[0].type_ == FeedbackType::WellKnownStatus)
        );
    }
}

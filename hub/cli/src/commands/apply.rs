//! `ocm-edge apply -f FILE`: OCM YAML as written for OCM, created or updated like `kubectl apply`:
//! ManifestWork, ManagedClusterSet, ManagedClusterSetBinding, Placement, AddOnPlacementScore and
//! ManifestWorkReplicaSet (the type is picked from `apiVersion` and `kind`).

use std::path::PathBuf;

use clap::Args;
use ocm_edge_schemas::api::object::OcmObject;
use ocm_edge_schemas::api::work::ManifestWork;
use serde_json::Value;

use crate::manifests::{InputError, Origin, ignored_fields, manifest_work, read_objects};
use crate::output::print;
use crate::{CliError, GlobalArgs};
use ocm_edge_schemas::admin::ClusterState;

/// `apply` options.
#[derive(Debug, Clone, Args)]
pub struct ApplyArgs {
    /// A file of OCM objects (YAML or JSON, multi-document), a directory of them, or - for
    /// standard input.
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR")]
    pub file: PathBuf,
}

/// One document to apply.
enum Doc {
    Work(Box<ManifestWork>),
    Object { kind: String, value: Value },
}

/// Sorts documents by kind: a placement is applied before the replica set that uses it, a set
/// before its binding, so one file can hold a whole rollout.
fn apply_order(kind: &str) -> u8 {
    match kind {
        "ManagedClusterSet" => 0,
        "ManagedClusterSetBinding" => 1,
        "Placement" => 2,
        "AddOnPlacementScore" => 3,
        "ManifestWorkReplicaSet" => 5,
        // An add-on's templates and configs before the add-on, the add-on before its clusters'.
        "AddOnTemplate" | "AddOnDeploymentConfig" => 6,
        "ClusterManagementAddOn" => 7,
        "ManagedClusterAddOn" => 8,
        _ => 4,
    }
}

fn read_docs(file: &std::path::Path) -> Result<Vec<(Doc, Origin)>, CliError> {
    let mut docs = Vec::new();
    for loaded in read_objects(file)? {
        let kind = loaded
            .value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if kind == ManifestWork::KIND {
            let written = loaded.value.clone();
            let (work, origin) = manifest_work(loaded)?;
            warn_ignored(&origin, &written, &work);
            docs.push((Doc::Work(Box::new(work)), origin));
            continue;
        }
        let parsed = OcmObject::from_value(loaded.value.clone());
        // Add-on objects of v1alpha1 are read converted to v1beta1: only the kinds read as
        // written are compared.
        match &parsed {
            Ok(OcmObject::Placement(o)) => warn_ignored(&loaded.origin, &loaded.value, o),
            Ok(OcmObject::ManifestWorkReplicaSet(o)) => {
                warn_ignored(&loaded.origin, &loaded.value, o)
            }
            Ok(OcmObject::ManagedClusterSet(o)) => warn_ignored(&loaded.origin, &loaded.value, o),
            Ok(OcmObject::ManagedClusterSetBinding(o)) => {
                warn_ignored(&loaded.origin, &loaded.value, o)
            }
            _ => {}
        }
        match parsed {
            Ok(
                OcmObject::ManagedClusterSet(_)
                | OcmObject::ManagedClusterSetBinding(_)
                | OcmObject::Placement(_)
                | OcmObject::AddOnPlacementScore(_)
                | OcmObject::ManifestWorkReplicaSet(_)
                | OcmObject::ClusterManagementAddOn(_)
                | OcmObject::ManagedClusterAddOn(_)
                | OcmObject::AddOnTemplate(_)
                | OcmObject::AddOnDeploymentConfig(_),
            ) => docs.push((
                Doc::Object {
                    kind,
                    value: loaded.value,
                },
                loaded.origin,
            )),
            Ok(_) => {
                // Anything else gets ManifestWork's explanation of what `apply` takes.
                let (_, origin) = manifest_work(loaded).map_err(|e| match e {
                    InputError::NotAManifestWork { origin, problem } => {
                        InputError::NotAManifestWork {
                            origin,
                            problem: format!(
                                "{problem}; `apply` also takes ManagedClusterSet, \
                                 ManagedClusterSetBinding, Placement, AddOnPlacementScore, \
                                 ManifestWorkReplicaSet, ClusterManagementAddOn, \
                                 ManagedClusterAddOn, AddOnTemplate and AddOnDeploymentConfig"
                            ),
                        }
                    }
                    other => other,
                })?;
                return Err(CliError::Usage(format!(
                    "{origin}: unsupported kind {kind:?}"
                )));
            }
            Err(e) => {
                return Err(CliError::Usage(format!("{}: {e}", loaded.origin)));
            }
        }
    }
    docs.sort_by_key(|(d, _)| match d {
        Doc::Work(_) => apply_order(ManifestWork::KIND),
        Doc::Object { kind, .. } => apply_order(kind),
    });
    Ok(docs)
}

/// Says on standard error which fields of the object as written ocm-edge does not know (they
/// are dropped, as a Kubernetes API server prunes unknown fields): a field of OCM's API that
/// ocm-edge does not implement is then not silently lost.
fn warn_ignored(origin: &Origin, written: &Value, parsed: &impl serde::Serialize) {
    let Ok(parsed) = serde_json::to_value(parsed) else {
        return;
    };
    let ignored = ignored_fields(written, &parsed);
    if !ignored.is_empty() {
        eprintln!(
            "warning: {origin}: ocm-edge does not know {} and ignores it (see the OCM API \
             coverage page of the docs)",
            ignored.join(", ")
        );
    }
}

/// Runs `apply`.
///
/// # Errors
/// See [`CliError`]. Every document is checked (locally, then a work's cluster at the hub)
/// before the first one is applied.
pub async fn run(global: &GlobalArgs, args: ApplyArgs) -> Result<(), CliError> {
    let docs = read_docs(&args.file)?;
    let client = global.connect().await?;
    // The hub checks each object on its own; checking every work's cluster first keeps a bad
    // second document from leaving the first one applied.
    if docs.iter().any(|(d, _)| matches!(d, Doc::Work(_))) {
        let clusters = client.list_clusters().await?;
        for (doc, origin) in &docs {
            let Doc::Work(work) = doc else { continue };
            let cluster = &work.metadata.namespace;
            match clusters.iter().find(|c| &c.name == cluster) {
                None => {
                    return Err(CliError::Usage(format!(
                        "{origin}: cluster {cluster:?} (metadata.namespace) is not known to the \
                         hub: check the name with `ocm-edge cluster list`"
                    )));
                }
                Some(c) if c.state != ClusterState::Accepted => {
                    return Err(CliError::Usage(format!(
                        "{origin}: cluster {cluster:?} is {}: accept it first with `ocm-edge \
                         cluster accept {cluster}`",
                        c.state.to_string().to_lowercase()
                    )));
                }
                Some(_) => {}
            }
        }
    }
    let mut text = String::new();
    // An add-on's new rollout strategy must be in force before the configs it rolls out change:
    // each ClusterManagementAddOn is tried first, and only one that needs a config of this file
    // (new, or changed to give a variable) waits for them.
    let (addons, rest): (Vec<_>, Vec<_>) = docs.into_iter().partition(
        |(d, _)| matches!(d, Doc::Object { kind, .. } if kind == "ClusterManagementAddOn"),
    );
    let configs_in_file = rest.iter().any(|(d, _)| {
        matches!(d, Doc::Object { kind, .. }
            if kind == "AddOnTemplate" || kind == "AddOnDeploymentConfig")
    });
    let mut waiting = Vec::new();
    let mut docs = Vec::new();
    for (doc, origin) in addons {
        let Doc::Object { value, .. } = &doc else {
            continue;
        };
        if !configs_in_file {
            docs.push((doc, origin));
            continue;
        }
        match client.apply_object(value.clone()).await {
            Ok(a) => text.push_str(&format!(
                "{} {} {}\n",
                a.kind.to_lowercase(),
                a.name,
                a.outcome
            )),
            Err(e) if needs_configs_of_the_file(&e) => waiting.push((doc, origin)),
            Err(e) => return Err(e.into()),
        }
    }
    for (doc, origin) in rest {
        let is_addon_object =
            matches!(&doc, Doc::Object { kind, .. } if kind == "ManagedClusterAddOn");
        if is_addon_object {
            docs.append(&mut waiting);
        }
        docs.push((doc, origin));
    }
    docs.append(&mut waiting);
    for (doc, _) in docs {
        match doc {
            Doc::Work(work) => {
                let written = client.apply_manifest_work(*work).await?;
                text.push_str(&format!(
                    "manifestwork {}/{} {} (version {})\n",
                    written.work.cluster, written.work.name, written.outcome, written.work.version
                ));
            }
            Doc::Object { value, .. } => {
                let a = client.apply_object(value).await?;
                let name = if a.namespace.is_empty() {
                    a.name
                } else {
                    format!("{}/{}", a.namespace, a.name)
                };
                text.push_str(&format!("{} {name} {}\n", a.kind.to_lowercase(), a.outcome));
            }
        }
    }
    client.disconnect().await;
    print(&text)
}

/// Whether the hub refused an add-on for a config it does not hold yet, or for a variable its
/// configs do not give yet: both may come with the configs of the same file.
fn needs_configs_of_the_file(e: &crate::client::AdminError) -> bool {
    e.hub_kind() == Some(ocm_edge_schemas::admin::AdminErrorKind::Invalid)
        && ["does not exist", "do not give"]
            .iter()
            .any(|m| e.to_string().contains(m))
}

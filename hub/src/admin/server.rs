//! Admin API server inside the hub: turns one [`AdminRequest`] into a core [`Change`] and the
//! [`AdminResponse`] to send, without IO. The hub task stores the change, applies it, publishes its
//! messages and then sends the response, so an answer never announces what was not stored.
//!
//! A failed command returns an empty change: it changes nothing.
//!
//! A request comes with the [`Access`] its sender was authorized with
//! ([`super::scope::authorize`]): lists are cut to what a scoped credential reaches before they
//! are paged.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ocm_edge_schemas::api::cluster::MANAGED_CLUSTER_CONDITION_AVAILABLE;
use ocm_edge_schemas::api::meta::find_condition;
use ocm_edge_schemas::api::work::{Manifest, ManifestWorkSpec, ManifestsTemplate};

use super::fleet;
use super::scope::Access;
use crate::core::{Change, ClusterRecord, HubCore, Record, WorkKey, WorkRecord};
use crate::registration::{LabelEdit, RegistrationError};
use crate::work::{WorkError, WorkInput};
use ocm_edge_schemas::admin::{
    AdminErrorKind, AdminPayload, AdminRequest, AdminResponse, ClusterCertificateView, ClusterView,
    CreateWork, HubStats, ManifestSummary, WorkView, WorkWritten,
};

/// Parses a request payload. A command this hub does not know parses as
/// [`AdminRequest::Unknown`], which [`handle_request`] answers with
/// [`AdminErrorKind::Unsupported`].
///
/// # Errors
/// An [`AdminErrorKind::Invalid`] response saying why (bad JSON, no `command`, a known command
/// with missing or wrong fields).
pub fn parse_request(payload: &[u8]) -> Result<AdminRequest, AdminResponse> {
    serde_json::from_slice(payload).map_err(|e| {
        AdminResponse::error(
            AdminErrorKind::Invalid,
            format!("the hub cannot read this admin request: {e} (is the CLI newer than the hub?)"),
        )
    })
}

/// Plans one admin command, authorized with `access`: the change to store and the response to
/// send once it is stored.
pub fn handle_request(
    core: &HubCore,
    access: &Access,
    request: AdminRequest,
    now: DateTime<Utc>,
) -> (Change, AdminResponse) {
    match plan(core, access, request, now) {
        Ok((change, payload)) => (change, AdminResponse::Ok(payload)),
        Err(response) => (Change::default(), response),
    }
}

fn plan(
    core: &HubCore,
    access: &Access,
    request: AdminRequest,
    now: DateTime<Utc>,
) -> Result<(Change, AdminPayload), AdminResponse> {
    Ok(match request {
        AdminRequest::ListClusters { after, limit } => (
            Change::default(),
            AdminPayload::Clusters(
                core.clusters_after(after.as_deref())
                    .filter(|c| access.sees_cluster(&c.name))
                    .take(page_size(limit))
                    .map(|c| cluster_view(core, c, now))
                    .collect(),
            ),
        ),
        AdminRequest::GetCluster { name } => {
            let record = core
                .cluster(&name)
                .ok_or_else(|| registration_error(RegistrationError::UnknownCluster(name)))?;
            (
                Change::default(),
                AdminPayload::Cluster(Box::new(cluster_view(core, record, now))),
            )
        }
        AdminRequest::AcceptCluster {
            name,
            labels,
            remove_labels,
            drop_agent_labels,
        } => {
            let edit = LabelEdit {
                set: labels,
                remove: remove_labels,
                drop_agent_labels,
            };
            let change = core
                .accept_with(&name, &edit, now)
                .map_err(registration_error)?;
            cluster_answer(core, change, &name, now)
        }
        AdminRequest::SetClusterSet { set, clusters } => {
            let change = core
                .set_cluster_set(&set, &clusters)
                .map_err(registration_error)?;
            let views = clusters
                .iter()
                .filter_map(|name| view_after(core, &change, name, now))
                .collect();
            (change, AdminPayload::Clusters(views))
        }
        AdminRequest::ListAddOns => (Change::default(), super::addons::list(core, access)),
        AdminRequest::GetAddOn {
            name,
            cluster,
            after,
            limit,
        } => super::addons::get(
            core,
            access,
            &name,
            super::addons::Rows {
                none: false,
                cluster: cluster.as_deref(),
                after: after.as_deref(),
                limit,
            },
        )?,
        AdminRequest::EnableAddOn {
            names,
            clusters,
            namespace,
        } => super::addons::enable(core, access, &names, &clusters, namespace.as_deref(), now)?,
        AdminRequest::DisableAddOn { names, clusters } => {
            super::addons::disable(core, access, &names, &clusters, now)?
        }
        AdminRequest::ApproveAddOn { names, clusters } => {
            super::addons::approve(core, access, &names, &clusters, now)?
        }
        AdminRequest::BindClusterSet { set, namespace } => {
            fleet::bind_cluster_set(core, set, namespace, now)?
        }
        AdminRequest::UnbindClusterSet { set, namespace } => {
            fleet::unbind_cluster_set(core, set, namespace, now)?
        }
        AdminRequest::DenyCluster { name } => {
            let change = core.deny(&name, now).map_err(registration_error)?;
            cluster_answer(core, change, &name, now)
        }
        AdminRequest::RemoveCluster { name, force } => {
            let change = core
                .remove_cluster(&name, force, now)
                .map_err(registration_error)?;
            let forgotten = change
                .records
                .iter()
                .any(|r| matches!(r, Record::ForgetCluster(c) if *c == name));
            if forgotten {
                // The view as it was, marked removed: nothing of it is left to show.
                let record = core.known_cluster(&name).map_err(registration_error)?;
                let mut view = cluster_view(core, &record, now);
                view.removed = true;
                view.works = 0;
                (change, AdminPayload::Cluster(Box::new(view)))
            } else {
                cluster_answer(core, change, &name, now)
            }
        }
        AdminRequest::LabelCluster { name, set, remove } => {
            let change = core
                .label_cluster(&name, &set, &remove)
                .map_err(registration_error)?;
            cluster_answer(core, change, &name, now)
        }
        AdminRequest::SetMaintenanceWindows { name, windows } => {
            let change = core
                .set_maintenance_windows(&name, &windows)
                .map_err(registration_error)?;
            cluster_answer(core, change, &name, now)
        }
        AdminRequest::TaintCluster { name, add, remove } => {
            let change = core
                .taint_cluster(&name, &add, &remove, now)
                .map_err(registration_error)?;
            cluster_answer(core, change, &name, now)
        }
        AdminRequest::AddCluster { name } => {
            let change = core.add_cluster(&name, now).map_err(registration_error)?;
            cluster_answer(core, change, &name, now)
        }
        AdminRequest::CreateWork(CreateWork {
            name,
            clusters,
            manifests,
            delete_option,
            manifest_configs,
            overwrite,
            per_cluster,
        }) => {
            let input = WorkInput {
                name,
                labels: Default::default(),
                annotations: Default::default(),
                spec: Arc::new(ManifestWorkSpec {
                    workload: ManifestsTemplate {
                        manifests: manifests.into_iter().map(Manifest).collect(),
                    },
                    delete_option,
                    manifest_configs,
                    executor: None,
                }),
            };
            match per_cluster {
                None => write(core, &input, &clusters, overwrite, now)?,
                Some(per_cluster) => {
                    write_rendered(core, input, per_cluster, &clusters, overwrite, now)?
                }
            }
        }
        AdminRequest::ApplyManifestWork { work } => {
            let cluster = work.metadata.namespace.clone();
            if cluster.is_empty() {
                return Err(AdminResponse::error(
                    AdminErrorKind::Invalid,
                    format!(
                        "ManifestWork {:?} has no metadata.namespace: set it to the cluster the work is for",
                        work.metadata.name
                    ),
                ));
            }
            let input = WorkInput {
                name: work.metadata.name.clone(),
                labels: work.metadata.labels.clone(),
                annotations: work.metadata.annotations.clone(),
                spec: Arc::new(work.spec.clone()),
            };
            write(core, &input, &[cluster], true, now)?
        }
        AdminRequest::ListWorks {
            cluster,
            after,
            limit,
        } => {
            let after = after.map(|a| WorkKey::new(&a.cluster, &a.name));
            let views = match &cluster {
                Some(c) => {
                    if core.cluster(c).is_none() {
                        return Err(registration_error(RegistrationError::UnknownCluster(
                            c.clone(),
                        )));
                    }
                    core.works_of(c)
                        .filter(|w| after.as_ref().is_none_or(|a| &w.key > a))
                        .filter(|w| access.sees_cluster(&w.key.cluster))
                        .take(page_size(limit))
                        .map(|w| work_view(w, false))
                        .collect()
                }
                None => core
                    .works_after(after.as_ref())
                    .filter(|w| access.sees_cluster(&w.key.cluster))
                    .take(page_size(limit))
                    .map(|w| work_view(w, false))
                    .collect(),
            };
            (Change::default(), AdminPayload::Works(views))
        }
        AdminRequest::GetWork { cluster, name } => {
            let key = WorkKey::new(cluster, name);
            let work = core
                .work(&key)
                .ok_or_else(|| work_error(WorkError::NotFound(key.clone())))?;
            (
                Change::default(),
                AdminPayload::Work(Box::new(work_view(work, true))),
            )
        }
        AdminRequest::DeleteWork { cluster, name } => {
            let key = WorkKey::new(cluster, name);
            let change = core.delete_work(&key, now).map_err(work_error)?;
            let mut view = match find_work(&change, &key).or_else(|| core.work(&key)) {
                Some(w) => work_view(w, false),
                None => return Err(work_error(WorkError::NotFound(key))),
            };
            view.deleting = true;
            (change, AdminPayload::Work(Box::new(view)))
        }
        AdminRequest::Stats => (Change::default(), AdminPayload::Stats(stats(core))),
        AdminRequest::ApplyObject { object } => fleet::apply_object(core, object, now)?,
        AdminRequest::ListClusterSets => (
            Change::default(),
            AdminPayload::ClusterSets(fleet::cluster_sets(core, access)),
        ),
        AdminRequest::GetClusterSet { name } => fleet::get_cluster_set(core, access, name)?,
        AdminRequest::ListPlacements { namespace } => (
            Change::default(),
            AdminPayload::Placements(fleet::placements(core, access, namespace.as_deref())),
        ),
        AdminRequest::GetPlacement { namespace, name } => {
            fleet::get_placement(core, namespace, name)?
        }
        AdminRequest::ListReplicaSets { namespace } => (
            Change::default(),
            AdminPayload::ReplicaSets(fleet::replica_sets(core, access, namespace.as_deref())),
        ),
        AdminRequest::GetReplicaSet { namespace, name } => {
            fleet::get_replica_set(core, namespace, name)?
        }
        AdminRequest::UndoRollout {
            namespace,
            name,
            to_revision,
        } => fleet::undo_rollout(core, namespace, name, to_revision)?,
        AdminRequest::RenderReplicaSet {
            namespace,
            name,
            cluster,
            object,
        } => fleet::render_replica_set(core, namespace, name, cluster, object)?,
        AdminRequest::DeleteObject {
            kind,
            namespace,
            name,
        } => fleet::delete_object(core, &kind, namespace, name, now)?,
        AdminRequest::Unknown { command } => return Err(unsupported(&command)),
    })
}

/// The answer to a command from a client newer than this hub.
/// How many items a list answer holds: `limit` (at least 1), or all when absent.
fn page_size(limit: Option<u32>) -> usize {
    limit.map_or(usize::MAX, |l| (l as usize).max(1))
}

fn unsupported(command: &str) -> AdminResponse {
    AdminResponse::error(
        AdminErrorKind::Unsupported,
        format!(
            "this hub does not support {command} (hub version {}); upgrade the hub or use a CLI \
             of the same version",
            env!("CARGO_PKG_VERSION")
        ),
    )
}

fn write(
    core: &HubCore,
    input: &WorkInput,
    clusters: &[String],
    overwrite: bool,
    now: DateTime<Utc>,
) -> Result<(Change, AdminPayload), AdminResponse> {
    // The add-on manager's works and the annotation agents act on are the hub's: an operator's
    // work naming them could speak for an add-on's identity.
    if crate::addon::addon_of_work(&input.name).is_some() {
        return Err(AdminResponse::error(
            AdminErrorKind::Invalid,
            format!(
                "work name {:?} is the hub's add-on manager's (addon-<name>-deploy-0, \
                 addon-<name>-pre-delete): choose another name",
                input.name
            ),
        ));
    }
    if input
        .annotations
        .contains_key(ocm_edge_schemas::wire::addon_identity::REGISTRATION_ANNOTATION)
    {
        return Err(AdminResponse::error(
            AdminErrorKind::Invalid,
            format!(
                "annotation {} is the hub's (an add-on's registration): remove it from work {:?}",
                ocm_edge_schemas::wire::addon_identity::REGISTRATION_ANNOTATION,
                input.name
            ),
        ));
    }
    let (change, outcomes) = core
        .write_works(input, clusters, overwrite, now)
        .map_err(work_error)?;
    // One lookup table, not a scan of the change per cluster (a write may go to 10,000).
    let records: HashMap<&WorkKey, &WorkRecord> = change
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Work(w) => Some((&w.key, w.as_ref())),
            _ => None,
        })
        .collect();
    let written = outcomes
        .iter()
        .filter_map(|(key, outcome)| {
            let w = records.get(key).copied().or_else(|| core.work(key));
            w.map(|w| WorkWritten {
                outcome: *outcome,
                work: written_view(w),
            })
        })
        .collect();
    Ok((change, AdminPayload::Written(written)))
}

/// A work written to each of `clusters` rendered for it with `per_cluster` (as a
/// ManifestWorkReplicaSet's template is). All or nothing: a cluster it cannot be rendered for,
/// or that cannot take it, fails the whole request and nothing is written.
fn write_rendered(
    core: &HubCore,
    input: WorkInput,
    per_cluster: ocm_edge_schemas::api::replicaset::PerCluster,
    clusters: &[String],
    overwrite: bool,
    now: DateTime<Utc>,
) -> Result<(Change, AdminPayload), AdminResponse> {
    use crate::rollout::per_cluster;
    let invalid = |m: String| AdminResponse::error(AdminErrorKind::Invalid, m);
    let spec = ocm_edge_schemas::api::replicaset::ManifestWorkReplicaSetSpec {
        manifest_work_template: (*input.spec).clone(),
        per_cluster: Some(per_cluster),
        ..Default::default()
    };
    per_cluster::check(&spec).map_err(|e| {
        invalid(format!(
            "work {:?}: {}; nothing was written",
            input.name,
            e.replace("spec.perCluster", "perCluster")
                .replace("spec.manifestWorkTemplate", "manifests")
        ))
    })?;
    if clusters.is_empty() {
        return Err(invalid("no cluster given: name at least one".into()));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(twice) = clusters.iter().find(|c| !seen.insert(*c)) {
        return Err(invalid(format!("cluster {twice:?} is listed twice")));
    }
    let sets = core.objects().cluster_sets();
    let mut failures = Vec::new();
    let mut inputs = Vec::new();
    for cluster in clusters {
        let Some(facts) = core.cluster_facts(cluster, &sets) else {
            return Err(work_error(crate::work::WorkError::UnknownCluster(
                cluster.clone(),
            )));
        };
        match per_cluster::render(&spec, &facts) {
            Ok(rendered) => inputs.push((
                cluster.clone(),
                WorkInput {
                    spec: Arc::new(rendered),
                    ..input.clone()
                },
            )),
            Err(e) => failures.push(format!("  {cluster}: {e}")),
        }
    }
    if !failures.is_empty() {
        return Err(invalid(format!(
            "work {:?} cannot be rendered for {} cluster(s); nothing was written:\n{}",
            input.name,
            failures.len(),
            failures.join("\n")
        )));
    }
    let mut change = Change::default();
    let mut written = Vec::new();
    for (cluster, input) in inputs {
        let (c, payload) = write(core, &input, std::slice::from_ref(&cluster), overwrite, now)?;
        change.extend(c);
        if let AdminPayload::Written(w) = payload {
            written.extend(w);
        }
    }
    Ok((change, AdminPayload::Written(written)))
}

/// What a write answers per work: its identity and version, not its manifests or its status
/// (the status is still the previous version's). A write to 10,000 clusters must fit in one
/// answer; `getWork` shows the rest.
fn written_view(w: &WorkRecord) -> WorkView {
    WorkView {
        cluster: w.key.cluster.clone(),
        name: w.key.name.clone(),
        resource_id: w.resource_id.clone(),
        version: w.resource_version,
        deleting: w.deleting.is_some(),
        created: Some(w.created),
        labels: w.labels.clone(),
        ..WorkView::default()
    }
}

fn find_work<'a>(change: &'a Change, key: &WorkKey) -> Option<&'a WorkRecord> {
    change.records.iter().find_map(|r| match r {
        Record::Work(w) if &w.key == key => Some(w.as_ref()),
        _ => None,
    })
}

fn cluster_answer(
    core: &HubCore,
    change: Change,
    name: &str,
    now: DateTime<Utc>,
) -> (Change, AdminPayload) {
    match view_after(core, &change, name, now) {
        Some(v) => (change, AdminPayload::Cluster(Box::new(v))),
        // The core always returns the record it changed; an empty list is still an answer.
        None => (change, AdminPayload::Clusters(vec![])),
    }
}

/// The view of `name` as it is once `change` applies (the record it writes, else the stored one).
fn view_after(
    core: &HubCore,
    change: &Change,
    name: &str,
    now: DateTime<Utc>,
) -> Option<ClusterView> {
    change
        .records
        .iter()
        .find_map(|r| match r {
            Record::Cluster(c) if c.name == name => Some(c.as_ref()),
            _ => None,
        })
        .or_else(|| core.cluster(name))
        .map(|c| cluster_view(core, c, now))
}

fn registration_error(e: RegistrationError) -> AdminResponse {
    match e {
        RegistrationError::UnknownCluster(_) | RegistrationError::UnknownClusterSet(_) => {
            AdminResponse::error(AdminErrorKind::NotFound, e.to_string())
        }
        RegistrationError::NotAccepted(_) => {
            AdminResponse::error(AdminErrorKind::NotAccepted, e.to_string())
        }
        RegistrationError::AlreadyKnown { .. } => {
            AdminResponse::error(AdminErrorKind::AlreadyExists, e.to_string())
        }
        RegistrationError::InvalidName(_) | RegistrationError::InvalidChange(_) => {
            AdminResponse::error(AdminErrorKind::Invalid, e.to_string())
        }
    }
}

fn work_error(e: WorkError) -> AdminResponse {
    let kind = match &e {
        WorkError::UnknownCluster(_) | WorkError::NotFound(_) => AdminErrorKind::NotFound,
        WorkError::NotAccepted(_) | WorkError::BeingRemoved(_) => AdminErrorKind::NotAccepted,
        WorkError::AlreadyExists(_) | WorkError::BeingDeleted(_) => AdminErrorKind::AlreadyExists,
        WorkError::Invalid(_) => AdminErrorKind::Invalid,
    };
    AdminResponse::error(kind, e.to_string())
}

/// The id of an agent key held as base64 (`None` when it is not one).
pub fn agent_key_id(b64: &str) -> Option<String> {
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    (raw.len() == 32).then(|| ocm_edge_schemas::wire::signature::key_id(&raw))
}

/// What the CLI shows about a cluster.
pub fn cluster_view(core: &HubCore, c: &ClusterRecord, now: DateTime<Utc>) -> ClusterView {
    ClusterView {
        name: c.name.clone(),
        state: c.acceptance,
        available: find_condition(&c.conditions, MANAGED_CLUSTER_CONDITION_AVAILABLE).cloned(),
        labels: c.labels.clone(),
        reported_labels: if c.reported_labels == c.labels {
            Default::default()
        } else {
            c.reported_labels.clone()
        },
        claims: c.claims.clone(),
        last_lease: c.last_lease,
        lease_duration_seconds: c.lease_duration_seconds,
        agent_key: c.agent_key.as_deref().and_then(agent_key_id),
        certificate: c.current_certificate().map(|cert| ClusterCertificateView {
            serial: cert.serial.clone(),
            not_after: ocm_edge_schemas::api::meta::Time::new(cert.not_after),
            waits_for_operator: core.certificate_waits_for_operator(c, now),
        }),
        kubernetes_version: Some(c.reported.version.kubernetes.clone()).filter(|v| !v.is_empty()),
        conditions: c.conditions.clone(),
        taints: c.taints.clone(),
        maintenance_windows: c.maintenance_windows.clone(),
        works: u32::try_from(core.works_of(&c.name).count()).unwrap_or(u32::MAX),
        capacity: c.reported.capacity.clone(),
        allocatable: c.reported.allocatable.clone(),
        removing: c.removing,
        removed: false,
    }
}

/// What the CLI shows about a work; `with_spec` for GetWork.
pub fn work_view(w: &WorkRecord, with_spec: bool) -> WorkView {
    let status = w.status.clone().unwrap_or_default();
    WorkView {
        manifests: w
            .spec
            .workload
            .manifests
            .iter()
            .enumerate()
            .map(|(i, m)| ManifestSummary {
                ordinal: i32::try_from(i).unwrap_or(i32::MAX),
                api_version: m.api_version().unwrap_or_default().to_owned(),
                kind: m.kind().unwrap_or_default().to_owned(),
                name: m.name().unwrap_or_default().to_owned(),
                namespace: m.namespace().unwrap_or_default().to_owned(),
            })
            .collect(),
        conditions: status.conditions,
        resource_status: status.resource_status.manifests,
        status_updated: w.status_updated,
        status_version: w.status_version,
        spec: with_spec.then(|| w.spec.as_ref().clone()),
        ..written_view(w)
    }
}

/// Hub counters (the same count as the fleet's metrics).
pub fn stats(core: &HubCore) -> HubStats {
    crate::metrics::fleet::FleetGauges::of(core).hub_stats()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testkit::*;
    use ocm_edge_schemas::admin::ClusterState;
    use ocm_edge_schemas::admin::WorkRef;
    use ocm_edge_schemas::admin::WriteOutcome;
    use serde_json::json;

    fn create(name: &str, clusters: &[&str], overwrite: bool) -> AdminRequest {
        AdminRequest::CreateWork(CreateWork {
            name: name.into(),
            clusters: clusters.iter().map(|c| (*c).to_owned()).collect(),
            manifests: vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "cm", "namespace": "default"}})],
            delete_option: None,
            manifest_configs: vec![],
            overwrite,
            per_cluster: None,
        })
    }

    fn run(core: &mut HubCore, req: AdminRequest) -> AdminResponse {
        let (change, response) = handle_request(core, &Access::Everything, req, t(10));
        core.apply(&change.records);
        response
    }

    fn error_kind(r: &AdminResponse) -> Option<AdminErrorKind> {
        match r {
            AdminResponse::Error { kind, .. } => Some(*kind),
            AdminResponse::Ok(_) => None,
        }
    }

    #[test]
    fn errors_come_back_typed_and_change_nothing() {
        let mut core = accepted_core(&["a"]);
        step(&mut core, join("p"), 0);
        assert!(error_kind(&run(&mut core, create("web", &["a"], false))).is_none());
        let cases = [
            (create("web", &["a"], false), AdminErrorKind::AlreadyExists),
            (
                create("db", &["a", "ghost"], false),
                AdminErrorKind::NotFound,
            ),
            (create("db", &["p"], false), AdminErrorKind::NotAccepted),
            (create("DB!", &["a"], false), AdminErrorKind::Invalid),
            (
                AdminRequest::accept_cluster("ghost"),
                AdminErrorKind::NotFound,
            ),
            (
                AdminRequest::DeleteWork {
                    cluster: "a".into(),
                    name: "nope".into(),
                },
                AdminErrorKind::NotFound,
            ),
            (
                AdminRequest::GetWork {
                    cluster: "a".into(),
                    name: "nope".into(),
                },
                AdminErrorKind::NotFound,
            ),
            (
                AdminRequest::ListWorks {
                    cluster: Some("ghost".into()),
                    after: None,
                    limit: None,
                },
                AdminErrorKind::NotFound,
            ),
        ];
        for (req, kind) in cases {
            let cmd = req.command();
            let (change, response) = handle_request(&core, &Access::Everything, req, t(10));
            assert_eq!(error_kind(&response), Some(kind), "{cmd}: {response:?}");
            assert!(change.is_empty(), "{cmd} changed something");
        }
        assert_eq!(core.works().count(), 1);
    }

    #[test]
    fn an_operators_work_cannot_speak_for_an_addons_identity() {
        let mut core = accepted_core(&["a"]);
        let mut work = ocm_edge_schemas::api::work::ManifestWork::new("a", "evil");
        work.spec = work_input("evil", 1).spec.as_ref().clone();
        work.metadata.annotations.insert(
            ocm_edge_schemas::wire::addon_identity::REGISTRATION_ANNOTATION.into(),
            r#"{"addon":"hello","cluster":"a","namespace":"default","nonce":"x"}"#.into(),
        );
        let apply =
            |w: &ocm_edge_schemas::api::work::ManifestWork| AdminRequest::ApplyManifestWork {
                work: Box::new(w.clone()),
            };
        let refused = run(&mut core, apply(&work));
        assert_eq!(error_kind(&refused), Some(AdminErrorKind::Invalid));
        work.metadata.annotations.clear();
        work.metadata.name = "addon-hello-deploy-0".into();
        assert_eq!(
            error_kind(&run(&mut core, apply(&work))),
            Some(AdminErrorKind::Invalid),
            "the add-on manager's work names are the hub's"
        );
        assert_eq!(
            error_kind(&run(&mut core, create("addon-x-pre-delete", &["a"], false))),
            Some(AdminErrorKind::Invalid)
        );
        assert_eq!(core.works().count(), 0, "nothing written");
    }

    #[test]
    fn apply_takes_the_cluster_from_the_namespace_and_updates_in_place() {
        let mut core = accepted_core(&["a"]);
        let mut work: ocm_edge_schemas::api::work::ManifestWork =
            ocm_edge_schemas::api::work::ManifestWork::new("a", "web");
        work.spec = work_input("web", 1).spec.as_ref().clone();
        work.metadata.labels.insert("app".into(), "web".into());
        let apply =
            |w: &ocm_edge_schemas::api::work::ManifestWork| AdminRequest::ApplyManifestWork {
                work: Box::new(w.clone()),
            };
        let AdminResponse::Ok(AdminPayload::Written(w)) = run(&mut core, apply(&work)) else {
            panic!("apply failed")
        };
        assert_eq!(w[0].outcome, WriteOutcome::Created);
        assert_eq!(w[0].work.labels["app"], "web");
        work.spec = work_input("web", 3).spec.as_ref().clone();
        let AdminResponse::Ok(AdminPayload::Written(w)) = run(&mut core, apply(&work)) else {
            panic!("apply failed")
        };
        assert_eq!(
            (w[0].outcome, w[0].work.version),
            (WriteOutcome::Updated, 2)
        );
        work.metadata.namespace.clear();
        assert_eq!(
            error_kind(&run(&mut core, apply(&work))),
            Some(AdminErrorKind::Invalid)
        );
    }

    #[test]
    fn lists_come_in_pages_after_the_last_item_of_the_previous_one() {
        let mut core = accepted_core(&["a", "b", "c"]);
        for c in ["a", "b", "c"] {
            assert!(error_kind(&run(&mut core, create(&format!("w{c}"), &[c], false))).is_none());
        }
        let clusters = |core: &mut HubCore, after: Option<&str>, limit| {
            let req = AdminRequest::ListClusters {
                after: after.map(str::to_owned),
                limit,
            };
            let AdminResponse::Ok(AdminPayload::Clusters(page)) = run(core, req) else {
                panic!("listClusters failed")
            };
            page.into_iter().map(|c| c.name).collect::<Vec<_>>()
        };
        assert_eq!(clusters(&mut core, None, Some(2)), ["a", "b"]);
        assert_eq!(clusters(&mut core, Some("b"), Some(2)), ["c"]);
        assert_eq!(
            clusters(&mut core, Some("c"), Some(2)),
            Vec::<String>::new()
        );
        assert_eq!(clusters(&mut core, None, None), ["a", "b", "c"]);

        let works = |core: &mut HubCore, cluster: Option<&str>, after: Option<(&str, &str)>| {
            let req = AdminRequest::ListWorks {
                cluster: cluster.map(str::to_owned),
                after: after.map(|(c, n)| WorkRef {
                    cluster: c.into(),
                    name: n.into(),
                }),
                limit: Some(1),
            };
            let AdminResponse::Ok(AdminPayload::Works(page)) = run(core, req) else {
                panic!("listWorks failed")
            };
            page.into_iter()
                .map(|w| format!("{}/{}", w.cluster, w.name))
                .collect::<Vec<_>>()
        };
        assert_eq!(works(&mut core, None, None), ["a/wa"]);
        assert_eq!(works(&mut core, None, Some(("a", "wa"))), ["b/wb"]);
        assert_eq!(works(&mut core, Some("c"), None), ["c/wc"]);
        assert!(works(&mut core, Some("c"), Some(("c", "wc"))).is_empty());
    }

    #[test]
    fn accept_answers_with_the_new_state_and_stats_count_it() {
        let mut core = core();
        step(&mut core, join("a"), 0);
        let AdminResponse::Ok(AdminPayload::Cluster(view)) =
            run(&mut core, AdminRequest::accept_cluster("a"))
        else {
            panic!("accept failed")
        };
        assert_eq!(view.state, ClusterState::Accepted);
        let AdminResponse::Ok(AdminPayload::Stats(s)) = run(&mut core, AdminRequest::Stats) else {
            panic!("stats failed")
        };
        assert_eq!((s.clusters_accepted, s.clusters_pending), (1, 0));
    }

    #[test]
    fn add_accepts_a_cluster_that_never_joined_without_a_key_and_refuses_a_known_one() {
        let mut core = core();
        let AdminResponse::Ok(AdminPayload::Cluster(view)) = run(
            &mut core,
            AdminRequest::AddCluster {
                name: "ocm-1".into(),
            },
        ) else {
            panic!("add failed")
        };
        assert_eq!(view.state, ClusterState::Accepted);
        assert_eq!(core.cluster("ocm-1").unwrap().agent_key, None);
        step(&mut core, join("a"), 0);
        for (name, kind) in [
            ("ocm-1", AdminErrorKind::AlreadyExists),
            ("a", AdminErrorKind::AlreadyExists),
            ("Not_A_Name", AdminErrorKind::Invalid),
        ] {
            let response = run(&mut core, AdminRequest::AddCluster { name: name.into() });
            assert_eq!(error_kind(&response), Some(kind), "{name}: {response:?}");
        }
        // A work for it goes out as for any accepted cluster.
        let AdminResponse::Ok(AdminPayload::Stats(s)) = run(&mut core, AdminRequest::Stats) else {
            panic!("stats failed")
        };
        assert_eq!((s.clusters_accepted, s.clusters_pending), (1, 1));
    }

    #[test]
    fn delete_answers_with_a_deleting_view_and_get_shows_the_spec() {
        let mut core = core_with_work("a", "web");
        let AdminResponse::Ok(AdminPayload::Work(view)) = run(
            &mut core,
            AdminRequest::GetWork {
                cluster: "a".into(),
                name: "web".into(),
            },
        ) else {
            panic!("get failed")
        };
        assert!(view.spec.is_some());
        assert_eq!(view.manifests[0].kind, "Deployment");
        let AdminResponse::Ok(AdminPayload::Work(view)) = run(
            &mut core,
            AdminRequest::DeleteWork {
                cluster: "a".into(),
                name: "web".into(),
            },
        ) else {
            panic!("delete failed")
        };
        assert!(view.deleting);
    }

    #[test]
    fn an_unreadable_request_is_an_invalid_error() {
        for bad in [
            &b"not json"[..],
            br#"{"name":"edge-1"}"#,
            br#"{"command":"getWork","cluster":"edge-1"}"#,
        ] {
            let err = parse_request(bad).unwrap_err();
            assert_eq!(
                error_kind(&err),
                Some(AdminErrorKind::Invalid),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_command_from_a_newer_cli_is_answered_unsupported_with_the_hub_version() {
        let core = accepted_core(&["a"]);
        let request = parse_request(br#"{"command":"drainCluster","name":"a"}"#).unwrap();
        let (change, response) = handle_request(&core, &Access::Everything, request, t(10));
        assert!(change.is_empty());
        let AdminResponse::Error { kind, message } = response else {
            panic!("expected an error, got {response:?}")
        };
        assert_eq!(kind, AdminErrorKind::Unsupported);
        assert_eq!(
            message,
            format!(
                "this hub does not support drainCluster (hub version {}); upgrade the hub or \
                 use a CLI of the same version",
                env!("CARGO_PKG_VERSION")
            )
        );
    }
}

//! The admin requests for add-ons: list and get them with their clusters, enable and disable
//! them on clusters (`ocm-edge addon ...`, clusteradm's `addon enable|disable`).

use chrono::{DateTime, Utc};
use ocm_edge_schemas::admin::{
    AddOnView, AdminErrorKind, AdminPayload, AdminResponse, ClusterAddOnRow,
};
use ocm_edge_schemas::api::addon::{
    ClusterManagementAddOn, INSTALL_NAMESPACE_ANNOTATION, ManagedClusterAddOn,
};
use ocm_edge_schemas::api::meta::ObjectMeta;

use super::fleet::object_error;
use super::scope::Access;
use crate::addon::INSTALLED_BY_PLACEMENT_ANNOTATION;
use crate::core::objects::{ObjectKey, ObjectKind, StoredObject};
use crate::core::{Change, HubCore};

type Planned = Result<(Change, AdminPayload), AdminResponse>;

/// Which of an add-on's rows a view carries.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rows<'a> {
    /// None (a list of add-ons).
    pub none: bool,
    /// Only this cluster's.
    pub cluster: Option<&'a str>,
    /// Only those of clusters sorting after this one.
    pub after: Option<&'a str>,
    /// At most this many.
    pub limit: Option<u32>,
}

/// The view of `addon` with the counts and rows of the clusters `access` sees.
pub fn addon_view(
    core: &HubCore,
    access: &Access,
    addon: &ClusterManagementAddOn,
    rows: Rows<'_>,
) -> AddOnView {
    let seen: Vec<&ManagedClusterAddOn> = core
        .cluster_addons()
        .filter(|m| m.metadata.name == addon.metadata.name)
        .filter(|m| access.sees_cluster(&m.metadata.namespace))
        .collect();
    let available = seen
        .iter()
        .filter(|m| {
            m.status.conditions.iter().any(|c| {
                c.type_ == ocm_edge_schemas::api::addon::CONDITION_AVAILABLE && c.is_true()
            })
        })
        .count();
    let strategy = &addon.spec.install_strategy;
    AddOnView {
        name: addon.metadata.name.clone(),
        display_name: addon.spec.add_on_meta.display_name.clone(),
        description: addon.spec.add_on_meta.description.clone(),
        install_strategy: strategy.type_.clone(),
        placements: strategy
            .placements
            .iter()
            .map(|p| format!("{}/{}", p.namespace, p.name))
            .collect(),
        default_configs: addon
            .spec
            .default_configs
            .iter()
            .map(|c| match c.namespace.as_str() {
                "" => format!("{} {}", c.resource, c.name),
                ns => format!("{} {ns}/{}", c.resource, c.name),
            })
            .collect(),
        progressions: addon
            .status
            .install_progressions
            .iter()
            .map(|p| {
                let state = p
                    .conditions
                    .iter()
                    .find(|c| c.type_ == ocm_edge_schemas::api::addon::CONDITION_PROGRESSING)
                    .map_or_else(
                        || "-".to_owned(),
                        |c| format!("{} ({})", c.reason, c.message),
                    );
                format!("{}/{}: {state}", p.namespace, p.name)
            })
            .collect(),
        enabled: u32::try_from(seen.len()).unwrap_or(u32::MAX),
        available: u32::try_from(available).unwrap_or(u32::MAX),
        clusters: if rows.none {
            vec![]
        } else {
            seen.into_iter()
                .filter(|m| rows.cluster.is_none_or(|c| c == m.metadata.namespace))
                .filter(|m| rows.after.is_none_or(|a| m.metadata.namespace.as_str() > a))
                .take(rows.limit.map_or(usize::MAX, |l| l as usize))
                .map(row)
                .collect()
        },
    }
}

fn row(mca: &ManagedClusterAddOn) -> ClusterAddOnRow {
    ClusterAddOnRow {
        cluster: mca.metadata.namespace.clone(),
        installed_by: if mca
            .metadata
            .annotations
            .contains_key(INSTALLED_BY_PLACEMENT_ANNOTATION)
        {
            "placement".into()
        } else {
            "manual".into()
        },
        namespace: mca.status.namespace.clone(),
        configs: mca
            .status
            .config_references
            .iter()
            .filter_map(|r| {
                let c = r.last_applied_config.as_ref()?;
                Some(format!(
                    "{} {}@{}",
                    r.resource,
                    c.name,
                    &c.spec_hash[..c.spec_hash.len().min(8)]
                ))
            })
            .collect(),
        conditions: mca.status.conditions.clone(),
    }
}

fn not_found(name: &str) -> AdminResponse {
    AdminResponse::error(
        AdminErrorKind::NotFound,
        format!(
            "there is no add-on {name:?}: apply its ClusterManagementAddOn first \
             (`ocm-edge addon list` shows the add-ons)"
        ),
    )
}

fn addon<'a>(core: &'a HubCore, name: &str) -> Result<&'a ClusterManagementAddOn, AdminResponse> {
    core.addons()
        .find(|a| a.metadata.name == name)
        .ok_or_else(|| not_found(name))
}

fn views(core: &HubCore, access: &Access, names: &[String]) -> Vec<AddOnView> {
    let rows = Rows {
        none: true,
        ..Rows::default()
    };
    core.addons()
        .filter(|a| names.contains(&a.metadata.name))
        .map(|a| addon_view(core, access, a, rows))
        .collect()
}

fn needs_both(names: &[String], clusters: &[String]) -> Result<(), AdminResponse> {
    if names.is_empty() || clusters.is_empty() {
        return Err(AdminResponse::error(
            AdminErrorKind::Invalid,
            "name at least one add-on and one cluster (--names A --clusters c1,c2)",
        ));
    }
    Ok(())
}

/// EnableAddOn: a ManagedClusterAddOn per add-on and cluster, all or nothing.
pub fn enable(
    core: &HubCore,
    access: &Access,
    names: &[String],
    clusters: &[String],
    namespace: Option<&str>,
    now: DateTime<Utc>,
) -> Planned {
    needs_both(names, clusters)?;
    if let Some(unknown) = clusters.iter().find(|c| core.cluster(c).is_none()) {
        return Err(AdminResponse::error(
            AdminErrorKind::NotFound,
            format!(
                "cluster {unknown:?} is not known to the hub (see `ocm-edge cluster list`); \
                 nothing was enabled"
            ),
        ));
    }
    let mut change = Change::default();
    for name in names {
        addon(core, name)?;
        for cluster in clusters {
            let key = ObjectKey::new(ObjectKind::ManagedClusterAddOn, cluster, name);
            match core.objects().get(&key).and_then(|o| o.as_cluster_addon()) {
                Some(m) if m.metadata.deletion_timestamp.is_some() => {
                    return Err(AdminResponse::error(
                        AdminErrorKind::Invalid,
                        format!(
                            "add-on {name:?} is being removed from cluster {cluster:?} (its \
                             pre-delete hooks run): enable it again once it is gone \
                             (`ocm-edge addon get {name}`); nothing was enabled"
                        ),
                    ));
                }
                Some(_) => continue,
                None => {}
            }
            let mut metadata = ObjectMeta::namespaced(cluster.clone(), name.clone());
            if let Some(ns) = namespace {
                metadata
                    .annotations
                    .insert(INSTALL_NAMESPACE_ANNOTATION.to_owned(), ns.to_owned());
            }
            let mca = ManagedClusterAddOn {
                metadata,
                ..ManagedClusterAddOn::default()
            };
            let (created, _, _) = core
                .apply_object(StoredObject::ClusterAddOn(Box::new(mca)), now)
                .map_err(object_error)?;
            change.extend(created);
        }
    }
    Ok((change, AdminPayload::AddOns(views(core, access, names))))
}

/// DisableAddOn: the named add-ons' ManagedClusterAddOns on the clusters go, with their works.
pub fn disable(
    core: &HubCore,
    access: &Access,
    names: &[String],
    clusters: &[String],
    now: DateTime<Utc>,
) -> Planned {
    needs_both(names, clusters)?;
    let mut change = Change::default();
    for name in names {
        addon(core, name)?;
        let enabled: Vec<&ManagedClusterAddOn> = core
            .cluster_addons()
            .filter(|m| &m.metadata.name == name && clusters.contains(&m.metadata.namespace))
            .collect();
        let missing: Vec<&str> = clusters
            .iter()
            .filter(|c| !enabled.iter().any(|m| &m.metadata.namespace == *c))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(AdminResponse::error(
                AdminErrorKind::NotFound,
                format!(
                    "add-on {name:?} is not enabled on {} (`ocm-edge addon get {name}` shows \
                     where it is); nothing was disabled",
                    missing.join(", ")
                ),
            ));
        }
        for mca in enabled {
            core.check_disable(mca).map_err(object_error)?;
            change.extend(core.disable_addon(mca, now));
        }
    }
    Ok((change, AdminPayload::AddOns(views(core, access, names))))
}

/// ApproveAddOn: the identities the named add-ons' agents asked for on the clusters are bound,
/// all or nothing.
pub fn approve(
    core: &HubCore,
    access: &Access,
    names: &[String],
    clusters: &[String],
    now: DateTime<Utc>,
) -> Planned {
    needs_both(names, clusters)?;
    let mut change = Change::default();
    for name in names {
        addon(core, name)?;
        for cluster in clusters {
            let Some(mca) = core
                .cluster_addons()
                .find(|m| &m.metadata.name == name && &m.metadata.namespace == cluster)
            else {
                return Err(AdminResponse::error(
                    AdminErrorKind::NotFound,
                    format!(
                        "add-on {name:?} is not enabled on {cluster} (`ocm-edge addon get \
                         {name}` shows where it is); nothing was approved"
                    ),
                ));
            };
            // Already approved: nothing to do there (a whole region may be approved again).
            if !mca
                .metadata
                .annotations
                .contains_key(crate::addon::PENDING_SHA256_ANNOTATION)
                && mca.metadata.annotations.contains_key(
                    ocm_edge_schemas::wire::addon_identity::PASSWORD_SHA256_ANNOTATION,
                )
            {
                continue;
            }
            let approved = core.approve_identity(mca, now).map_err(|e| {
                AdminResponse::error(
                    AdminErrorKind::Invalid,
                    format!("{e}; nothing was approved"),
                )
            })?;
            change.extend(approved);
        }
    }
    Ok((change, AdminPayload::AddOns(views(core, access, names))))
}

/// GetAddOn: a page of its rows.
pub fn get(core: &HubCore, access: &Access, name: &str, rows: Rows<'_>) -> Planned {
    let a = addon(core, name)?;
    Ok((
        Change::default(),
        AdminPayload::AddOn(Box::new(addon_view(core, access, a, rows))),
    ))
}

/// ListAddOns: counts, no rows.
pub fn list(core: &HubCore, access: &Access) -> AdminPayload {
    AdminPayload::AddOns(views(
        core,
        access,
        &core
            .addons()
            .map(|a| a.metadata.name.clone())
            .collect::<Vec<_>>(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testkit::*;
    use serde_json::json;

    #[test]
    fn a_list_counts_and_a_get_pages_the_clusters_rows() {
        let clusters = ["edge-1", "edge-2", "edge-3"];
        let mut core = accepted_core(&clusters);
        for v in [
            json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
                "kind": "AddOnTemplate", "metadata": {"name": "a"},
                "spec": {"addonName": "a", "agentSpec": {"workload": {"manifests": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]}}}}),
            json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ClusterManagementAddOn", "metadata": {"name": "a"},
                "spec": {"defaultConfigs": [{"group": "addon.open-cluster-management.io",
                    "resource": "addontemplates", "name": "a"}]}}),
        ] {
            apply_json(&mut core, v).unwrap();
        }
        let names = vec!["a".to_owned()];
        let all: Vec<String> = clusters.iter().map(|c| (*c).to_owned()).collect();
        let (change, _) = enable(&core, &Access::Everything, &names, &all, None, t(2)).unwrap();
        core.apply(&change.records);

        let AdminPayload::AddOns(listed) = list(&core, &Access::Everything) else {
            panic!("not a list")
        };
        assert_eq!((listed[0].enabled, listed[0].clusters.len()), (3, 0));
        let page = |after: Option<&str>| {
            let rows = Rows {
                after,
                limit: Some(2),
                ..Rows::default()
            };
            match get(&core, &Access::Everything, "a", rows).unwrap().1 {
                AdminPayload::AddOn(v) => v.clusters.into_iter().map(|r| r.cluster).collect(),
                _ => Vec::new(),
            }
        };
        assert_eq!(page(None), ["edge-1", "edge-2"]);
        assert_eq!(page(Some("edge-2")), ["edge-3"]);
    }
}

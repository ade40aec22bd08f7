//! What a scoped credential may reach, and the check of a request against it.
//!
//! A scoped identity ([`CredentialScope`]: namespaces N and, optionally, cluster sets S) reaches
//! the cluster sets bound (ManagedClusterSetBinding) into a namespace of N, those of S when S is
//! given, and the clusters those sets select ([`clusterset::valid_bindings`],
//! [`clusterset::clusters_of`]: the scheduler's own rules, so a scoped operator reaches exactly the
//! clusters its placements may choose). [`authorize`] runs the role check first, then
//! [`Access::check`]; the answer's lists are cut to the reach by [`super::server`] with
//! [`Access::sees_cluster`] and its siblings, before paging, so pages stay full.
//!
//! A read of something out of reach is refused Forbidden, not answered NotFound: it is what
//! Kubernetes RBAC answers, it says which right is missing, and it is answered whether or not the
//! thing exists, so a scoped user learns nothing of what lies outside its scope.

use std::collections::BTreeSet;

use ocm_edge_schemas::admin::{AdminRequest, CredentialScope};
use ocm_edge_schemas::api::object::OcmObject;
use ocm_edge_schemas::api::replicaset::ManifestWorkReplicaSet;
use serde_json::Value;

use super::auth::{Identity, authorize_role};
use crate::core::HubCore;
use crate::core::objects::{DEFAULT_NAMESPACE, ObjectKey, ObjectKind, StoredObject};
use crate::placement::clusterset;

/// What an authorized request may see and change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Everything its role allows: an unscoped credential, or a hub without authentication.
    Everything,
    /// What a scoped credential reaches.
    Scoped(Box<Reach>),
}

/// What a scoped identity reaches in the hub as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    who: Identity,
    scope: CredentialScope,
    /// The sets bound into a namespace of the scope (and among its sets when it names some).
    sets: BTreeSet<String>,
    /// The clusters of those sets.
    clusters: BTreeSet<String>,
}

/// Checks the role of `who` for `request`, then its scope against `core`; the [`Access`] to
/// plan the request with.
///
/// # Errors
/// The "forbidden" message the hub answers with: which right is missing and how to get it.
pub fn authorize(who: &Identity, request: &AdminRequest, core: &HubCore) -> Result<Access, String> {
    authorize_role(who, request)?;
    let access = Access::of(who, core);
    access.check(request, core)?;
    Ok(access)
}

impl Access {
    /// The access of `who` in `core`.
    pub fn of(who: &Identity, core: &HubCore) -> Access {
        match &who.scope {
            None => Access::Everything,
            Some(scope) => Access::Scoped(Box::new(Reach::of(who, scope, core))),
        }
    }

    /// Whether answers may show the cluster `name` (and its works).
    pub fn sees_cluster(&self, name: &str) -> bool {
        match self {
            Access::Everything => true,
            Access::Scoped(reach) => reach.clusters.contains(name),
        }
    }

    /// Whether answers may show the cluster set `name`.
    pub fn sees_set(&self, name: &str) -> bool {
        match self {
            Access::Everything => true,
            Access::Scoped(reach) => reach.sets.contains(name),
        }
    }

    /// Whether answers may show the objects of `namespace` (and a set's binding into it).
    pub fn sees_namespace(&self, namespace: &str) -> bool {
        match self {
            Access::Everything => true,
            Access::Scoped(reach) => reach.scope.namespaces.iter().any(|n| n == namespace),
        }
    }

    /// Whether the scope allows `request` (the role was checked before). Lists are allowed
    /// here and cut to the reach where they are answered.
    ///
    /// # Errors
    /// The "forbidden" message: which right is missing and how to get it.
    pub fn check(&self, request: &AdminRequest, core: &HubCore) -> Result<(), String> {
        let Access::Scoped(reach) = self else {
            return Ok(());
        };
        let ns = |namespace: &Option<String>| {
            namespace
                .clone()
                .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned())
        };
        match request {
            AdminRequest::CreateWork(create) => create
                .clusters
                .iter()
                .try_for_each(|c| reach.cluster(c, "write works to")),
            AdminRequest::ApplyManifestWork { work } => {
                reach.cluster(&work.metadata.namespace, "write works to")
            }
            AdminRequest::DeleteWork { cluster, .. } => reach.cluster(cluster, "delete works of"),
            AdminRequest::GetCluster { name } => reach.cluster(name, "see"),
            AdminRequest::GetWork { cluster, .. }
            | AdminRequest::ListWorks {
                cluster: Some(cluster),
                ..
            } => reach.cluster(cluster, "see the works of"),
            AdminRequest::GetClusterSet { name } => reach.set_seen(name),
            AdminRequest::GetPlacement { namespace, .. }
            | AdminRequest::GetReplicaSet { namespace, .. } => {
                reach.namespace(&ns(namespace), "read placements and replica sets in")
            }
            AdminRequest::UndoRollout {
                namespace, name, ..
            } => {
                reach.namespace(&ns(namespace), "roll back replica sets in")?;
                // The set goes back to another template on the clusters its placements choose:
                // the same reach as applying it.
                reach.stored_replica_set(&ns(namespace), name, core)
            }
            AdminRequest::RenderReplicaSet {
                namespace,
                cluster,
                object,
                ..
            } => {
                let namespace = object
                    .as_ref()
                    .and_then(|o| o.pointer("/metadata/namespace")?.as_str())
                    .map(str::to_owned)
                    .or_else(|| namespace.clone());
                reach.namespace(&ns(&namespace), "read placements and replica sets in")?;
                reach.cluster(cluster, "see")
            }
            AdminRequest::ListPlacements {
                namespace: Some(namespace),
            }
            | AdminRequest::ListReplicaSets {
                namespace: Some(namespace),
            } => reach.namespace(namespace, "read placements and replica sets in"),
            AdminRequest::BindClusterSet { set, namespace }
            | AdminRequest::UnbindClusterSet { set, namespace } => {
                reach.binding(set, &ns(namespace))
            }
            AdminRequest::ApplyObject { object } => reach.object(object, core),
            AdminRequest::DeleteObject {
                kind,
                namespace,
                name,
            } => match ObjectKind::parse(kind) {
                Some(ObjectKind::ManagedClusterSet) => Err(reach.refuse(
                    &format!("delete cluster set {name:?}"),
                    "cluster sets are the admin's",
                )),
                Some(ObjectKind::ManagedClusterSetBinding) => reach.binding(name, &ns(namespace)),
                Some(kind @ (ObjectKind::ClusterManagementAddOn | ObjectKind::AddOnTemplate)) => {
                    Err(reach.refuse(
                        &format!("delete {kind} {name:?}"),
                        "add-ons and their templates are cluster-wide (an unscoped credential deletes them)",
                    ))
                }
                Some(ObjectKind::ManagedClusterAddOn) => {
                    reach.cluster(&ns(namespace), "disable add-ons on")
                }
                Some(ObjectKind::AddOnDeploymentConfig) => {
                    let key = ObjectKey::new(
                        ObjectKind::AddOnDeploymentConfig,
                        ns(namespace),
                        name.clone(),
                    );
                    reach.namespace(&key.namespace, "delete objects in")?;
                    reach.config_of_no_addon(&key, core)
                }
                Some(ObjectKind::ManifestWorkReplicaSet) => {
                    reach.namespace(&ns(namespace), "delete objects in")?;
                    // Its works go from the clusters its placements choose: the same reach as
                    // applying it.
                    reach.stored_replica_set(&ns(namespace), name, core)
                }
                Some(_) => reach.namespace(&ns(namespace), "delete objects in"),
                // Refused Invalid where it is planned, whoever sends it.
                None => Ok(()),
            },
            AdminRequest::Stats => Err(reach.refuse(
                "read the hub's counters",
                "they count every cluster and work of the hub; an unscoped credential reads them",
            )),
            // The role check refused these already: a scoped credential is never an admin's.
            AdminRequest::AcceptCluster { .. }
            | AdminRequest::DenyCluster { .. }
            | AdminRequest::RemoveCluster { .. }
            | AdminRequest::LabelCluster { .. }
            | AdminRequest::TaintCluster { .. }
            | AdminRequest::SetMaintenanceWindows { .. }
            | AdminRequest::SetClusterSet { .. }
            | AdminRequest::AddCluster { .. } => Err(reach.refuse(
                request.command(),
                "it is the admin's (an admin's credential is never scoped)",
            )),
            // Enabling an add-on deploys its agent on the clusters.
            AdminRequest::EnableAddOn { clusters, .. } => clusters
                .iter()
                .try_for_each(|c| reach.cluster(c, "enable add-ons on")),
            AdminRequest::DisableAddOn { clusters, .. } => clusters
                .iter()
                .try_for_each(|c| reach.cluster(c, "disable add-ons on")),
            // An approved identity uses the broker from those clusters.
            AdminRequest::ApproveAddOn { clusters, .. } => clusters
                .iter()
                .try_for_each(|c| reach.cluster(c, "approve add-on identities on")),
            // Answered with the rows of the clusters it reaches.
            AdminRequest::ListAddOns | AdminRequest::GetAddOn { .. } => Ok(()),
            AdminRequest::ListClusters { .. }
            | AdminRequest::ListWorks { cluster: None, .. }
            | AdminRequest::ListClusterSets
            | AdminRequest::ListPlacements { namespace: None }
            | AdminRequest::ListReplicaSets { namespace: None }
            // Answered Unsupported, whoever sends it.
            | AdminRequest::Unknown { .. } => Ok(()),
        }
    }
}

impl Reach {
    /// An AddOnDeploymentConfig the credential may change: one no add-on uses as its default
    /// or placement config (those reach clusters beyond the scope).
    fn config_of_no_addon(&self, key: &ObjectKey, core: &HubCore) -> Result<(), String> {
        let users = core.addons_using(key);
        if users.is_empty() {
            return Ok(());
        }
        Err(self.refuse(
            &format!("change add-on config {}/{}", key.namespace, key.name),
            &format!(
                "the add-ons {} use it for every cluster they install on (an unscoped \
                 credential changes it)",
                users.join(", ")
            ),
        ))
    }

    fn of(who: &Identity, scope: &CredentialScope, core: &HubCore) -> Reach {
        let sets = core.objects().cluster_sets();
        let bindings = core.objects().bindings();
        let mut reached = BTreeSet::new();
        for namespace in &scope.namespaces {
            for binding in clusterset::valid_bindings(namespace, &bindings, &sets) {
                let set = &binding.metadata.name;
                if scope.cluster_sets.is_empty() || scope.cluster_sets.contains(set) {
                    reached.insert(set.clone());
                }
            }
        }
        let clusters = core.managed_clusters();
        let members = sets
            .iter()
            .filter(|s| reached.contains(&s.metadata.name))
            .flat_map(|s| clusterset::clusters_of(s, &clusters))
            .map(|c| c.metadata.name.clone())
            .collect();
        Reach {
            who: who.clone(),
            scope: scope.clone(),
            sets: reached,
            clusters: members,
        }
    }

    /// `forbidden: user "alice" (operator of namespaces team-a; any cluster set) may not
    /// {action}: {why}`.
    fn refuse(&self, action: &str, why: &str) -> String {
        format!("forbidden: {} may not {action}: {why}", self.who.describe())
    }

    fn namespaces(&self) -> String {
        self.scope.namespaces.join(", ")
    }

    fn cluster(&self, cluster: &str, action: &str) -> Result<(), String> {
        if self.clusters.contains(cluster) {
            return Ok(());
        }
        let action = format!("{action} cluster {cluster:?}");
        let namespaces = self.namespaces();
        let first = &self.scope.namespaces[0];
        let why = if self.scope.cluster_sets.is_empty() {
            format!(
                "it is in no cluster set bound into {namespaces} (an admin runs `ocm-edge clusterset bind SET -n {first}`)"
            )
        } else if self.sets.is_empty() {
            let sets = self.scope.cluster_sets.join(", ");
            format!(
                "none of its cluster sets {sets} is bound into {namespaces} (an admin runs `ocm-edge clusterset bind {} -n {first}`)",
                self.scope.cluster_sets[0]
            )
        } else {
            let bound: Vec<&str> = self.sets.iter().map(String::as_str).collect();
            format!(
                "it is in none of the cluster sets {} bound into {namespaces} (an admin runs `ocm-edge clusterset set {} --clusters {cluster}`)",
                bound.join(", "),
                bound[0]
            )
        };
        Err(self.refuse(&action, &why))
    }

    fn set_seen(&self, set: &str) -> Result<(), String> {
        if self.sets.contains(set) {
            return Ok(());
        }
        Err(self.refuse(
            &format!("see cluster set {set:?}"),
            &format!(
                "it is not bound into {} or not among the credential's sets (an admin runs `ocm-edge clusterset bind {set} -n {}`)",
                self.namespaces(),
                self.scope.namespaces[0]
            ),
        ))
    }

    fn namespace(&self, namespace: &str, action: &str) -> Result<(), String> {
        if self.scope.namespaces.iter().any(|n| n == namespace) {
            return Ok(());
        }
        // The command an admin runs for a credential with this namespace too.
        let mut flags: String = self
            .scope
            .namespaces
            .iter()
            .chain([&namespace.to_owned()])
            .map(|n| format!(" --namespace {n}"))
            .collect();
        flags.extend(
            self.scope
                .cluster_sets
                .iter()
                .map(|s| format!(" --clusterset {s}")),
        );
        Err(self.refuse(
            &format!("{action} namespace {namespace:?}"),
            &format!(
                "the credential is limited to the namespaces {} (an admin issues one for {namespace} too: `ocm-edge user create {} --role {}{flags}`)",
                self.namespaces(),
                self.who.user,
                self.who.role
            ),
        ))
    }

    /// Binding or unbinding `set` in `namespace`: a namespace of the scope and a set it names.
    fn binding(&self, set: &str, namespace: &str) -> Result<(), String> {
        let action = format!("bind or unbind cluster set {set:?} in namespace {namespace:?}");
        if !self.scope.namespaces.iter().any(|n| n == namespace) {
            return Err(self.refuse(
                &action,
                &format!(
                    "the credential is limited to the namespaces {}",
                    self.namespaces()
                ),
            ));
        }
        if self.scope.cluster_sets.iter().any(|s| s == set) {
            return Ok(());
        }
        let why = if self.scope.cluster_sets.is_empty() {
            format!(
                "the credential names no cluster set, so it binds none (an admin runs `ocm-edge clusterset bind {set} -n {namespace}`)"
            )
        } else {
            format!(
                "the credential binds only the cluster sets {} (an admin runs `ocm-edge clusterset bind {set} -n {namespace}`)",
                self.scope.cluster_sets.join(", ")
            )
        };
        Err(self.refuse(&action, &why))
    }

    /// ApplyObject: Placements, replica sets and scores in a namespace of the scope (limited to
    /// its sets when it names some), bindings as [`Reach::binding`], no cluster set.
    /// What applying the stored ManifestWorkReplicaSet `namespace/name` needs (nothing to check
    /// when it does not exist: NotFound where the request is planned).
    fn stored_replica_set(
        &self,
        namespace: &str,
        name: &str,
        core: &HubCore,
    ) -> Result<(), String> {
        let key = ObjectKey::new(ObjectKind::ManifestWorkReplicaSet, namespace, name);
        match core.objects().get(&key) {
            Some(StoredObject::ReplicaSet(r)) => {
                let mut set = serde_json::to_value(&r.set).unwrap_or_default();
                set["apiVersion"] = ManifestWorkReplicaSet::API_VERSION.into();
                set["kind"] = ManifestWorkReplicaSet::KIND.into();
                self.object(&set, core)
            }
            _ => Ok(()),
        }
    }

    fn object(&self, object: &Value, core: &HubCore) -> Result<(), String> {
        // What the hub would store: an object it cannot read is refused Invalid where it is
        // planned, and changes nothing.
        let Ok(stored) = OcmObject::from_value(object.clone())
            .map_err(drop)
            .and_then(|o| StoredObject::from_applied(o).map_err(drop))
        else {
            return Ok(());
        };
        let key = stored.key();
        let namespace = if key.namespace.is_empty() {
            DEFAULT_NAMESPACE
        } else {
            key.namespace.as_str()
        };
        match &stored {
            StoredObject::ClusterSet(_) => Err(self.refuse(
                &format!("apply cluster set {:?}", key.name),
                "cluster sets are the admin's (`ocm-edge apply -f` with an admin's credential)",
            )),
            StoredObject::Binding(b) => {
                self.binding(&key.name, namespace)?;
                if b.spec.cluster_set != key.name {
                    return self.binding(&b.spec.cluster_set, namespace);
                }
                Ok(())
            }
            StoredObject::Placement(p) => {
                self.namespace(namespace, "apply placements in")?;
                self.names_only_its_sets(
                    &format!("apply placement {namespace}/{}", key.name),
                    &key.name,
                    &p.placement.spec.cluster_sets,
                )
            }
            StoredObject::ReplicaSet(r) => {
                self.namespace(namespace, "apply replica sets in")?;
                if self.scope.cluster_sets.is_empty() {
                    return Ok(());
                }
                // With named sets, a replica set may only follow placements that are limited
                // to them: another placement of the namespace may choose clusters of a set
                // bound there for someone else.
                for reference in &r.set.spec.placement_refs {
                    let placement = core
                        .objects()
                        .placements()
                        .find(|p| {
                            p.placement.metadata.namespace == namespace
                                && p.placement.metadata.name == reference.name
                        })
                        .ok_or_else(|| {
                            self.refuse(
                                &format!("apply replica set {namespace}/{}", key.name),
                                &format!(
                                    "its placement {namespace}/{} does not exist yet, so the hub cannot tell it stays within the cluster sets {} (apply the placement first)",
                                    reference.name,
                                    self.scope.cluster_sets.join(", ")
                                ),
                            )
                        })?;
                    self.names_only_its_sets(
                        &format!("apply replica set {namespace}/{}", key.name),
                        &reference.name,
                        &placement.placement.spec.cluster_sets,
                    )?;
                }
                Ok(())
            }
            StoredObject::Score(_) | StoredObject::Decision(_) => {
                self.namespace(namespace, "apply objects in")
            }
            // A config an add-on uses reaches every cluster the add-on installs on.
            StoredObject::AddOnConfig(_) => {
                self.namespace(namespace, "apply objects in")?;
                self.config_of_no_addon(&key, core)
            }
            // An add-on and its template reach every cluster its placements choose.
            StoredObject::AddOn(_) | StoredObject::AddOnTemplate(_) => Err(self.refuse(
                &format!("apply {} {:?}", key.kind, key.name),
                "add-ons and their templates are cluster-wide (an unscoped credential applies them)",
            )),
            // A cluster's add-on lives in the cluster's namespace, and reads only configs of
            // the credential's namespaces.
            StoredObject::ClusterAddOn(mca) => {
                self.cluster(namespace, "enable add-ons on")?;
                for config in mca.spec.configs.iter().filter(|c| !c.namespace.is_empty()) {
                    self.namespace(&config.namespace, "use add-on configs of")?;
                }
                Ok(())
            }
        }
    }

    /// With named sets, the placement `placement` (`named` its spec.clusterSets) must name its
    /// sets, all among them.
    fn names_only_its_sets(
        &self,
        action: &str,
        placement: &str,
        named: &[String],
    ) -> Result<(), String> {
        let allowed = &self.scope.cluster_sets;
        if allowed.is_empty() || (!named.is_empty() && named.iter().all(|s| allowed.contains(s))) {
            return Ok(());
        }
        Err(self.refuse(
            action,
            &format!(
                "the credential reaches only the cluster sets {sets}, so a placement must name them in spec.clusterSets (placement {placement:?} names [{named}]; set `clusterSets: [{sets}]`)",
                sets = allowed.join(", "),
                named = named.join(", ")
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::testkit::{
        alice, bob, cluster_set, create_work, placement, scoped, two_teams, vera,
    };
    use ocm_edge_schemas::admin::Role;
    use serde_json::json;

    fn now() -> chrono::DateTime<chrono::Utc> {
        "2026-11-25T12:00:00Z".parse().unwrap()
    }

    fn refusal(who: &Identity, request: &AdminRequest, core: &HubCore) -> String {
        authorize(who, request, core).expect_err("refused")
    }

    #[test]
    fn an_unscoped_identity_reaches_everything_its_role_allows() {
        let core = two_teams(now());
        let operator = Identity::new("olga", Role::Operator);
        let access = authorize(&operator, &create_work("w", &["us-1", "ap-1"]), &core).unwrap();
        assert_eq!(access, Access::Everything);
        assert!(access.sees_cluster("us-1") && access.sees_set("us"));
    }

    #[test]
    fn a_scoped_operator_reaches_the_clusters_of_its_sets_bound_into_its_namespaces() {
        let core = two_teams(now());
        let Access::Scoped(reach) = Access::of(&alice(), &core) else {
            panic!("alice is scoped")
        };
        assert_eq!(reach.clusters, ["eu-1", "eu-2"].map(String::from).into());
        // Without named sets, every set bound into the namespace counts.
        let Access::Scoped(reach) = Access::of(&vera(), &core) else {
            panic!("vera is scoped")
        };
        assert_eq!(
            reach.clusters,
            ["ap-1", "eu-1", "eu-2"].map(String::from).into()
        );
        assert_eq!(reach.sets, ["ap", "eu"].map(String::from).into());
    }

    #[test]
    fn works_go_only_to_reached_clusters_and_the_refusal_says_which_right_is_missing() {
        let core = two_teams(now());
        assert!(authorize(&alice(), &create_work("w", &["eu-1", "eu-2"]), &core).is_ok());
        assert_eq!(
            refusal(&alice(), &create_work("w", &["eu-1", "us-1"]), &core),
            "forbidden: user \"alice\" (operator of namespaces team-a; cluster sets eu) may not \
             write works to cluster \"us-1\": it is in none of the cluster sets eu bound into \
             team-a (an admin runs `ocm-edge clusterset set eu --clusters us-1`)"
        );
        // ap is bound into team-a, but alice's credential names only eu.
        assert!(refusal(&alice(), &create_work("w", &["ap-1"]), &core).contains("\"ap-1\""));
        assert_eq!(
            refusal(&bob(), &create_work("w", &["eu-1"]), &core),
            "forbidden: user \"bob\" (operator of namespaces team-b; any cluster set) may not \
             write works to cluster \"eu-1\": it is in no cluster set bound into team-b (an \
             admin runs `ocm-edge clusterset bind SET -n team-b`)"
        );
        let lonely = scoped("lou", Role::Operator, &["team-c"], &["eu"]);
        assert!(
            refusal(&lonely, &create_work("w", &["eu-1"]), &core)
                .ends_with("none of its cluster sets eu is bound into team-c (an admin runs `ocm-edge clusterset bind eu -n team-c`)")
        );
        let delete = AdminRequest::DeleteWork {
            cluster: "us-1".into(),
            name: "web".into(),
        };
        assert!(
            refusal(&alice(), &delete, &core).contains("may not delete works of cluster \"us-1\"")
        );
    }

    #[test]
    fn a_scoped_operator_binds_only_its_sets_into_its_namespaces() {
        let core = two_teams(now());
        let bind = |set: &str, ns: &str| AdminRequest::BindClusterSet {
            set: set.into(),
            namespace: Some(ns.into()),
        };
        assert!(authorize(&alice(), &bind("eu", "team-a"), &core).is_ok());
        assert!(refusal(&alice(), &bind("us", "team-a"), &core)
            .ends_with("the credential binds only the cluster sets eu (an admin runs `ocm-edge clusterset bind us -n team-a`)"));
        assert!(
            refusal(&alice(), &bind("eu", "team-b"), &core)
                .ends_with("the credential is limited to the namespaces team-a")
        );
        assert!(
            refusal(&bob(), &bind("us", "team-b"), &core)
                .contains("the credential names no cluster set, so it binds none")
        );
        let unbind = AdminRequest::UnbindClusterSet {
            set: "us".into(),
            namespace: Some("team-b".into()),
        };
        assert!(refusal(&alice(), &unbind, &core).contains("may not bind or unbind"));
        // A binding applied as an object is checked the same way, by name and by spec.clusterSet.
        let binding = |name: &str, set: &str| AdminRequest::ApplyObject {
            object: json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
                "kind": "ManagedClusterSetBinding",
                "metadata": {"namespace": "team-a", "name": name},
                "spec": {"clusterSet": set}}),
        };
        assert!(authorize(&alice(), &binding("eu", "eu"), &core).is_ok());
        assert!(authorize(&alice(), &binding("eu", "us"), &core).is_err());
    }

    #[test]
    fn objects_stay_in_the_scope_namespaces_and_cluster_sets_are_the_admins() {
        let core = two_teams(now());
        let apply = |object| AdminRequest::ApplyObject { object };
        assert!(authorize(&alice(), &apply(placement("team-a", "p", &["eu"])), &core).is_ok());
        assert!(
            refusal(&alice(), &apply(placement("team-b", "p", &["eu"])), &core)
                .contains("may not apply placements in namespace \"team-b\"")
        );
        // With named sets, a placement must name them: one naming none could choose ap-1.
        assert!(
            refusal(&alice(), &apply(placement("team-a", "p", &[])), &core)
                .contains("so a placement must name them in spec.clusterSets")
        );
        assert!(authorize(&bob(), &apply(placement("team-b", "p", &[])), &core).is_ok());
        assert!(
            refusal(&alice(), &apply(cluster_set("mine")), &core).ends_with(
                "cluster sets are the admin's (`ocm-edge apply -f` with an admin's credential)"
            )
        );
        let replica_set = |placement: &str| {
            apply(
                json!({"apiVersion": "work.open-cluster-management.io/v1alpha1",
                "kind": "ManifestWorkReplicaSet",
                "metadata": {"namespace": "team-a", "name": "r"},
                "spec": {"placementRefs": [{"name": placement}],
                         "manifestWorkTemplate": {"workload": {"manifests": []}}}}),
            )
        };
        assert!(authorize(&alice(), &replica_set("eu-web"), &core).is_ok());
        assert!(refusal(&alice(), &replica_set("ghost"), &core).contains("does not exist yet"));
        // Rolling a stored set back reaches what applying it reaches: here a placement alice's
        // credential cannot vouch for.
        let mut with_set = two_teams(now());
        crate::core::testkit::apply_json(
            &mut with_set,
            json!({"apiVersion": "work.open-cluster-management.io/v1alpha1",
                "kind": "ManifestWorkReplicaSet",
                "metadata": {"namespace": "team-a", "name": "wide"},
                "spec": {"placementRefs": [{"name": "ghost"}],
                         "manifestWorkTemplate": {"workload": {"manifests": [
                             {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "x", "namespace": "default"}}]}}}}),
        )
        .unwrap();
        let undo = |name: &str| AdminRequest::UndoRollout {
            namespace: Some("team-a".into()),
            name: name.into(),
            to_revision: None,
        };
        assert!(refusal(&alice(), &undo("wide"), &with_set).contains("does not exist yet"));
        assert!(
            refusal(&bob(), &undo("wide"), &with_set)
                .contains("may not roll back replica sets in namespace \"team-a\"")
        );
        let delete_set = AdminRequest::DeleteObject {
            kind: "manifestworkreplicaset".into(),
            namespace: Some("team-a".into()),
            name: "wide".into(),
        };
        assert!(refusal(&alice(), &delete_set, &with_set).contains("does not exist yet"));
        let delete = |kind: &str, ns: &str| AdminRequest::DeleteObject {
            kind: kind.into(),
            namespace: Some(ns.into()),
            name: "us-web".into(),
        };
        assert!(
            refusal(&bob(), &delete("clusterset", ""), &core)
                .contains("cluster sets are the admin's")
        );
        assert!(authorize(&bob(), &delete("placement", "team-b"), &core).is_ok());
        assert!(
            refusal(&alice(), &delete("placement", "team-b"), &core)
                .contains("may not delete objects in namespace \"team-b\"")
        );
    }

    #[test]
    fn out_of_scope_reads_are_forbidden_whether_or_not_the_thing_exists() {
        let core = two_teams(now());
        let get = |name: &str| AdminRequest::GetCluster { name: name.into() };
        assert!(authorize(&vera(), &get("ap-1"), &core).is_ok());
        let known = refusal(&vera(), &get("us-1"), &core);
        let unknown = refusal(&vera(), &get("nowhere"), &core);
        assert_eq!(known.replace("us-1", "X"), unknown.replace("nowhere", "X"));
        assert!(
            refusal(
                &vera(),
                &AdminRequest::GetClusterSet { name: "us".into() },
                &core
            )
            .contains("may not see cluster set \"us\"")
        );
        let placements = AdminRequest::ListPlacements {
            namespace: Some("team-b".into()),
        };
        assert!(refusal(&vera(), &placements, &core).contains("namespace \"team-b\""));
        assert!(refusal(&vera(), &AdminRequest::Stats, &core).contains("read the hub's counters"));
        assert!(
            authorize(
                &vera(),
                &AdminRequest::ListClusters {
                    after: None,
                    limit: None
                },
                &core
            )
            .is_ok()
        );
    }

    #[test]
    fn the_role_is_checked_first_and_admin_requests_stay_the_admins() {
        let core = two_teams(now());
        assert!(
            refusal(&vera(), &create_work("w", &["eu-1"]), &core)
                .contains("may not createWork (it needs the role operator")
        );
        let set = AdminRequest::SetClusterSet {
            set: "eu".into(),
            clusters: vec!["us-1".into()],
        };
        assert!(refusal(&alice(), &set, &core).contains("it needs the role admin"));
    }
}

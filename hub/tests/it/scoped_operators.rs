//! Scoped credentials through the admin server as the hub runs it (the role and scope check of
//! `admin::scope::authorize`, then `handle_request`, then the change applied), on the two-team
//! hub of `admin::testkit`: every request kind that writes is refused outside the scope, with a
//! message naming the missing right, and changes nothing; inside the scope it is carried out.

use chrono::{DateTime, Utc};
use ocm_edge_hub::admin::auth::Identity;
use ocm_edge_hub::admin::scope::{Access, authorize};
use ocm_edge_hub::admin::server::handle_request;
use ocm_edge_hub::admin::testkit::{
    alice, bob, cluster_set, create_work, placement, scoped, two_teams, vera,
};
use ocm_edge_hub::core::HubCore;
use ocm_edge_schemas::admin::{AdminErrorKind, AdminPayload, AdminRequest, AdminResponse, Role};
use ocm_edge_schemas::api::work::ManifestWork;
use serde_json::{Value, json};

fn now() -> DateTime<Utc> {
    "2026-11-25T12:00:00Z".parse().unwrap()
}

/// One request from `who`, as the hub's loop serves it; the change is applied.
fn serve(core: &mut HubCore, who: &Identity, request: AdminRequest) -> AdminResponse {
    let (change, response) = match authorize(who, &request, core) {
        Ok(access) => handle_request(core, &access, request, now()),
        Err(message) => (
            Default::default(),
            AdminResponse::error(AdminErrorKind::Forbidden, message),
        ),
    };
    core.apply(&change.records);
    response
}

/// Everything the hub holds that a request could change.
fn snapshot(core: &HubCore) -> String {
    let objects: Vec<_> = ocm_edge_hub::core::objects::ObjectKind::ALL
        .iter()
        .flat_map(|k| core.objects().of_kind(*k))
        .collect();
    format!(
        "{:?}\n{:?}\n{objects:?}",
        core.clusters().collect::<Vec<_>>(),
        core.works().collect::<Vec<_>>()
    )
}

fn manifest_work(cluster: &str) -> AdminRequest {
    let mut work = ManifestWork::new(cluster, "mw");
    work.spec
        .workload
        .manifests
        .push(ocm_edge_schemas::api::work::Manifest(
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "mw", "namespace": "default"}}),
        ));
    AdminRequest::ApplyManifestWork {
        work: Box::new(work),
    }
}

fn binding(namespace: &str, set: &str) -> Value {
    json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
           "kind": "ManagedClusterSetBinding",
           "metadata": {"namespace": namespace, "name": set}, "spec": {"clusterSet": set}})
}

fn replica_set(namespace: &str, placement: &str) -> Value {
    json!({"apiVersion": "work.open-cluster-management.io/v1alpha1",
           "kind": "ManifestWorkReplicaSet", "metadata": {"namespace": namespace, "name": "r"},
           "spec": {"placementRefs": [{"name": placement}],
                    "manifestWorkTemplate": {"workload": {"manifests": [
                        {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"namespace": namespace, "name": "r"}}]}}}})
}

fn bind(set: &str, namespace: &str) -> AdminRequest {
    AdminRequest::BindClusterSet {
        set: set.into(),
        namespace: Some(namespace.into()),
    }
}

fn unbind(set: &str, namespace: &str) -> AdminRequest {
    AdminRequest::UnbindClusterSet {
        set: set.into(),
        namespace: Some(namespace.into()),
    }
}

fn delete(kind: &str, namespace: &str, name: &str) -> AdminRequest {
    AdminRequest::DeleteObject {
        kind: kind.into(),
        namespace: Some(namespace.into()),
        name: name.into(),
    }
}

fn apply(object: Value) -> AdminRequest {
    AdminRequest::ApplyObject { object }
}

/// A request of every kind this build knows: each field any command needs, filled (serde skips
/// the ones a command does not have), so that a new write request kind fails the test below
/// until it has a scope case.
fn sample(command: &str) -> AdminRequest {
    let fields = json!({
        "command": command, "name": "x", "names": ["x"], "cluster": "x", "clusters": ["x"], "manifests": [],
        "object": {}, "kind": "placement",
        "work": {"metadata": {"name": "x", "namespace": "x"}, "spec": {"workload": {"manifests": []}}},
    });
    // `set` is a set's name in most commands and the labels to set in labelCluster.
    [json!("x"), json!({})]
        .into_iter()
        .find_map(|set| {
            let mut fields = fields.clone();
            fields["set"] = set;
            serde_json::from_value(fields).ok()
        })
        .unwrap_or_else(|| panic!("no sample of {command}: fill the field it needs"))
}

#[test]
fn every_write_outside_the_scope_is_refused_naming_the_missing_right_and_changes_nothing() {
    // ann: operator of team-c (where nothing is bound yet), limited to eu.
    let ann = scoped("ann", Role::Operator, &["team-c"], &["eu"]);
    let admin_only = "it needs the role admin";
    let out_of_scope: Vec<(Identity, AdminRequest, &str)> = vec![
        (alice(), AdminRequest::accept_cluster("eu-1"), admin_only),
        (
            alice(),
            AdminRequest::DenyCluster {
                name: "eu-1".into(),
            },
            admin_only,
        ),
        (
            alice(),
            AdminRequest::RemoveCluster {
                name: "eu-1".into(),
                force: true,
            },
            admin_only,
        ),
        (
            alice(),
            AdminRequest::LabelCluster {
                name: "eu-1".into(),
                set: [("tier".to_owned(), "canary".to_owned())].into(),
                remove: vec![],
            },
            admin_only,
        ),
        (
            alice(),
            AdminRequest::TaintCluster {
                name: "eu-1".into(),
                add: vec![],
                remove: vec!["maintenance".into()],
            },
            admin_only,
        ),
        (
            alice(),
            AdminRequest::SetMaintenanceWindows {
                name: "eu-1".into(),
                windows: vec!["0 22 * * *;2h;Europe/Berlin".into()],
            },
            admin_only,
        ),
        (
            alice(),
            AdminRequest::AddCluster {
                name: "eu-9".into(),
            },
            admin_only,
        ),
        (
            alice(),
            AdminRequest::SetClusterSet {
                set: "eu".into(),
                clusters: vec!["us-1".into()],
            },
            admin_only,
        ),
        (
            alice(),
            create_work("w", &["us-1"]),
            "may not write works to cluster \"us-1\": it is in none of the cluster sets eu bound into team-a",
        ),
        // All or nothing: the reachable eu-1 gets no work either.
        (
            alice(),
            create_work("w", &["eu-1", "ap-1"]),
            "may not write works to cluster \"ap-1\"",
        ),
        (
            bob(),
            manifest_work("eu-1"),
            "may not write works to cluster \"eu-1\": it is in no cluster set bound into team-b (an admin runs `ocm-edge clusterset bind SET -n team-b`)",
        ),
        (
            alice(),
            AdminRequest::DeleteWork {
                cluster: "us-1".into(),
                name: "web".into(),
            },
            "may not delete works of cluster \"us-1\"",
        ),
        (
            alice(),
            apply(placement("team-b", "p", &["eu"])),
            "may not apply placements in namespace \"team-b\": the credential is limited to the namespaces team-a",
        ),
        (
            alice(),
            apply(placement("team-a", "p", &[])),
            "so a placement must name them in spec.clusterSets",
        ),
        (
            alice(),
            apply(replica_set("team-b", "us-web")),
            "may not apply replica sets in namespace \"team-b\"",
        ),
        (
            alice(),
            AdminRequest::UndoRollout {
                namespace: Some("team-b".into()),
                name: "us-web".into(),
                to_revision: None,
            },
            "may not roll back replica sets in namespace \"team-b\"",
        ),
        (
            bob(),
            apply(cluster_set("mine")),
            "may not apply cluster set \"mine\": cluster sets are the admin's",
        ),
        (
            alice(),
            apply(binding("team-a", "us")),
            "the credential binds only the cluster sets eu",
        ),
        (
            alice(),
            bind("us", "team-a"),
            "may not bind or unbind cluster set \"us\" in namespace \"team-a\": the credential binds only the cluster sets eu (an admin runs `ocm-edge clusterset bind us -n team-a`)",
        ),
        (
            ann.clone(),
            bind("eu", "team-b"),
            "the credential is limited to the namespaces team-c",
        ),
        (
            bob(),
            bind("us", "team-b"),
            "the credential names no cluster set, so it binds none",
        ),
        (alice(), unbind("us", "team-b"), "may not bind or unbind"),
        (
            alice(),
            delete("placement", "team-b", "us-web"),
            "may not delete objects in namespace \"team-b\"",
        ),
        (
            bob(),
            delete("clusterset", "", "eu"),
            "may not delete cluster set \"eu\": cluster sets are the admin's",
        ),
        (
            alice(),
            delete("clustersetbinding", "team-b", "us"),
            "may not bind or unbind cluster set \"us\" in namespace \"team-b\"",
        ),
        (
            alice(),
            AdminRequest::EnableAddOn {
                names: vec!["logs".into()],
                clusters: vec!["eu-1".into(), "us-1".into()],
                namespace: None,
            },
            "may not enable add-ons on cluster \"us-1\"",
        ),
        (
            bob(),
            AdminRequest::DisableAddOn {
                names: vec!["logs".into()],
                clusters: vec!["eu-1".into()],
            },
            "may not disable add-ons on cluster \"eu-1\"",
        ),
        (
            alice(),
            AdminRequest::ApproveAddOn {
                names: vec!["logs".into()],
                clusters: vec!["us-1".into()],
            },
            "may not approve add-on identities on cluster \"us-1\"",
        ),
        (
            alice(),
            apply(
                json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
                "kind": "AddOnTemplate", "metadata": {"name": "logs"},
                "spec": {"addonName": "logs"}}),
            ),
            "add-ons and their templates are cluster-wide",
        ),
        (
            vera(),
            create_work("w", &["eu-1"]),
            "may not createWork (it needs the role operator",
        ),
    ];
    let in_scope: Vec<(Identity, AdminRequest)> = vec![
        (alice(), create_work("w", &["eu-1", "eu-2"])),
        (bob(), manifest_work("us-1")),
        (
            alice(),
            AdminRequest::DeleteWork {
                cluster: "eu-1".into(),
                name: "web".into(),
            },
        ),
        (alice(), apply(placement("team-a", "p", &["eu"]))),
        (bob(), apply(replica_set("team-b", "us-web"))),
        (alice(), apply(replica_set("team-a", "eu-web"))),
        (ann.clone(), apply(binding("team-c", "eu"))),
        (ann.clone(), bind("eu", "team-c")),
        (alice(), unbind("eu", "team-a")),
        (alice(), delete("placement", "team-a", "eu-web")),
        (alice(), delete("clustersetbinding", "team-a", "eu")),
    ];

    let mut covered: Vec<&str> = out_of_scope.iter().map(|(_, r, _)| r.command()).collect();
    covered.sort_unstable();
    covered.dedup();
    let mut writes: Vec<&str> = AdminRequest::COMMANDS
        .into_iter()
        .filter(|c| sample(c).changes_something())
        .collect();
    writes.sort_unstable();
    assert_eq!(covered, writes, "a write request kind without a scope case");

    for (who, request, needle) in out_of_scope {
        assert!(request.changes_something(), "{}", request.command());
        let mut core = two_teams(now());
        let before = snapshot(&core);
        let command = request.command();
        let response = serve(&mut core, &who, request);
        let AdminResponse::Error { kind, message } = &response else {
            panic!("{} {command} was carried out: {response:?}", who.user)
        };
        assert_eq!(*kind, AdminErrorKind::Forbidden, "{command}: {message}");
        assert!(
            message.starts_with(&format!("forbidden: user {:?} (", who.user)),
            "{message}"
        );
        assert!(message.contains(needle), "{command}: {message}");
        assert_eq!(snapshot(&core), before, "{command} changed something");
    }
    for (who, request) in in_scope {
        let mut core = two_teams(now());
        let before = snapshot(&core);
        let command = request.command();
        let response = serve(&mut core, &who, request);
        assert!(
            matches!(response, AdminResponse::Ok(_)),
            "{} {command}: {response:?}",
            who.user
        );
        assert_ne!(snapshot(&core), before, "{command} changed nothing");
    }
}

fn names(response: AdminResponse) -> Vec<String> {
    match response {
        AdminResponse::Ok(AdminPayload::Clusters(c)) => c.into_iter().map(|c| c.name).collect(),
        AdminResponse::Ok(AdminPayload::Works(w)) => w
            .into_iter()
            .map(|w| format!("{}/{}", w.cluster, w.name))
            .collect(),
        AdminResponse::Ok(AdminPayload::ClusterSets(s)) => s
            .into_iter()
            .map(|s| format!("{} {:?}", s.name, s.bound_namespaces))
            .collect(),
        AdminResponse::Ok(AdminPayload::Placements(p)) => p
            .into_iter()
            .map(|p| {
                format!(
                    "{}/{}",
                    p.placement.metadata.namespace, p.placement.metadata.name
                )
            })
            .collect(),
        other => panic!("not a list: {other:?}"),
    }
}

#[test]
fn a_scoped_identity_lists_only_what_it_reaches_in_full_pages() {
    let mut core = two_teams(now());
    let clusters = |after: Option<&str>, limit| AdminRequest::ListClusters {
        after: after.map(str::to_owned),
        limit,
    };
    assert_eq!(
        names(serve(&mut core, &vera(), clusters(None, None))),
        ["ap-1", "eu-1", "eu-2"]
    );
    // Pages are cut before they are counted: a page of one is never empty while more follow.
    assert_eq!(
        names(serve(&mut core, &alice(), clusters(None, Some(1)))),
        ["eu-1"]
    );
    assert_eq!(
        names(serve(&mut core, &alice(), clusters(Some("eu-1"), Some(1)))),
        ["eu-2"]
    );
    let works = AdminRequest::ListWorks {
        cluster: None,
        after: None,
        limit: None,
    };
    assert_eq!(
        names(serve(&mut core, &alice(), works.clone())),
        ["eu-1/web"]
    );
    assert_eq!(names(serve(&mut core, &bob(), works)), ["us-1/web"]);
    assert_eq!(
        names(serve(&mut core, &alice(), AdminRequest::ListClusterSets)),
        ["eu [\"team-a\"]"]
    );
    assert_eq!(
        names(serve(
            &mut core,
            &bob(),
            AdminRequest::ListPlacements { namespace: None }
        )),
        ["team-b/us-web"]
    );
    // An unscoped viewer sees the whole hub, as before scopes.
    let everyone = Identity::new("olga", Role::Viewer);
    assert_eq!(
        names(serve(&mut core, &everyone, clusters(None, None))).len(),
        4
    );
    assert_eq!(
        Access::of(&everyone, &core),
        Access::Everything,
        "an unscoped credential"
    );
}

/// Add-on configs reach further than a namespace: a scoped operator may not change or delete an
/// AddOnDeploymentConfig an add-on uses for every cluster it installs on, nor make its cluster's
/// add-on read another namespace's config; it may enable the add-on on its own cluster.
#[test]
fn a_scoped_operator_cannot_reach_beyond_its_scope_through_addon_configs() {
    let mut core = two_teams(now());
    let root = Identity {
        user: "root".into(),
        role: Role::Admin,
        scope: None,
    };
    let config = |namespace: &str, level: &str| {
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "AddOnDeploymentConfig", "metadata": {"name": "logs", "namespace": namespace},
            "spec": {"customizedVariables": [{"name": "LEVEL", "value": level}]}})
    };
    for object in [
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "AddOnTemplate", "metadata": {"name": "logs"},
            "spec": {"addonName": "logs", "agentSpec": {"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "logs", "namespace": "{{INSTALL_NAMESPACE}}"},
                 "data": {"level": "{{LEVEL}}"}}]}}}}),
        config("team-a", "1"),
        config("team-b", "2"),
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn", "metadata": {"name": "logs"},
            "spec": {"defaultConfigs": [
                {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
                 "name": "logs"},
                {"group": "addon.open-cluster-management.io",
                 "resource": "addondeploymentconfigs", "namespace": "team-a", "name": "logs"}]}}),
    ] {
        let response = serve(&mut core, &root, apply(object));
        assert!(matches!(response, AdminResponse::Ok(_)), "{response:?}");
    }
    let refused = |core: &mut HubCore, request: AdminRequest, needle: &str| {
        let before = snapshot(core);
        let response = serve(core, &alice(), request);
        let AdminResponse::Error { kind, message } = &response else {
            panic!("carried out: {response:?}")
        };
        assert_eq!(*kind, AdminErrorKind::Forbidden, "{message}");
        assert!(message.contains(needle), "{message}");
        assert_eq!(snapshot(core), before);
    };
    refused(
        &mut core,
        apply(config("team-a", "9")),
        "the add-ons logs use it for every cluster they install on",
    );
    refused(
        &mut core,
        delete("addondeploymentconfig", "team-a", "logs"),
        "the add-ons logs use it",
    );
    refused(
        &mut core,
        apply(
            json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn", "metadata": {"name": "logs", "namespace": "eu-1"},
            "spec": {"configs": [{"group": "addon.open-cluster-management.io",
                "resource": "addondeploymentconfigs", "namespace": "team-b", "name": "logs"}]}}),
        ),
        "may not use add-on configs of namespace \"team-b\"",
    );
    let enabled = serve(
        &mut core,
        &alice(),
        AdminRequest::EnableAddOn {
            names: vec!["logs".into()],
            clusters: vec!["eu-1".into()],
            namespace: None,
        },
    );
    assert!(matches!(enabled, AdminResponse::Ok(_)), "{enabled:?}");
}

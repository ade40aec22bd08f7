//! A hub of two teams, for the tests of scoped credentials (the hub's, the fuzz target's) and
//! demos: built through the admin API as an admin would build it.
//!
//! ```text
//! cluster sets   eu = eu-1, eu-2   us = us-1   ap = ap-1   (and the built-in default, global)
//! bindings       eu, ap -> team-a                us -> team-b
//! works          web on eu-1 and on us-1
//! placements     team-a/eu-web (clusterSets [eu])   team-b/us-web
//! ```

use chrono::{DateTime, Utc};
use ocm_edge_schemas::admin::{AdminRequest, AdminResponse, CreateWork, CredentialScope, Role};
use ocm_edge_schemas::api::cluster::ManagedCluster;
use serde_json::{Value, json};

use super::auth::Identity;
use super::scope::Access;
use super::server::handle_request;
use crate::availability::AvailabilityConfig;
use crate::core::{AgentInput, CoreConfig, HubCore};

/// Every cluster of the hub, sorted.
pub const CLUSTERS: [&str; 4] = ["ap-1", "eu-1", "eu-2", "us-1"];

/// `alice`: operator of team-a, limited to the set eu (ap is bound into team-a too, not hers).
pub fn alice() -> Identity {
    scoped("alice", Role::Operator, &["team-a"], &["eu"])
}

/// `bob`: operator of team-b, any set bound there (us).
pub fn bob() -> Identity {
    scoped("bob", Role::Operator, &["team-b"], &[])
}

/// `vera`: viewer of team-a, any set bound there (eu, ap).
pub fn vera() -> Identity {
    scoped("vera", Role::Viewer, &["team-a"], &[])
}

/// An identity of `role` limited to `namespaces` and `sets`.
///
/// # Panics
/// For a scope [`CredentialScope::new`] refuses (a fixture's mistake).
pub fn scoped(user: &str, role: Role, namespaces: &[&str], sets: &[&str]) -> Identity {
    let owned = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
    let scope = CredentialScope::new(role, owned(namespaces), owned(sets))
        .unwrap_or_else(|e| panic!("fixture scope: {e}"));
    Identity {
        user: user.to_owned(),
        role,
        scope: Some(scope),
    }
}

/// A ManagedClusterSet selecting by the set label, as `ocm-edge apply -f` sends it.
pub fn cluster_set(name: &str) -> Value {
    json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
           "kind": "ManagedClusterSet", "metadata": {"name": name}})
}

/// A Placement in `namespace`, limited to `sets` when not empty.
pub fn placement(namespace: &str, name: &str, sets: &[&str]) -> Value {
    json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
           "metadata": {"namespace": namespace, "name": name},
           "spec": {"clusterSets": sets}})
}

/// A CreateWork of one ConfigMap.
pub fn create_work(name: &str, clusters: &[&str]) -> AdminRequest {
    AdminRequest::CreateWork(CreateWork {
        name: name.to_owned(),
        clusters: clusters.iter().map(|c| (*c).to_owned()).collect(),
        manifests: vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": name, "namespace": "default"}})],
        ..CreateWork::default()
    })
}

/// The hub of the module's map, at `now`.
///
/// # Panics
/// When the admin API refuses a step (the fixture no longer matches the hub).
pub fn two_teams(now: DateTime<Utc>) -> HubCore {
    let mut core = HubCore::new(CoreConfig {
        source_id: "ocm-edge".to_owned(),
        availability: AvailabilityConfig::default(),
        status_resync_batch: 1000,
    });
    for name in CLUSTERS {
        let mut request = ManagedCluster::new(name);
        request.spec.lease_duration_seconds = 60;
        let joined = core.handle_agent(
            AgentInput::JoinRequest {
                cluster: name.to_owned(),
                request: Box::new(request),
            },
            now,
        );
        core.apply(&joined.records);
    }
    let mut steps: Vec<AdminRequest> = CLUSTERS
        .iter()
        .map(|c| AdminRequest::accept_cluster(*c))
        .collect();
    for (set, members, namespace) in [
        ("eu", &["eu-1", "eu-2"][..], "team-a"),
        ("ap", &["ap-1"], "team-a"),
        ("us", &["us-1"], "team-b"),
    ] {
        steps.extend([
            AdminRequest::ApplyObject {
                object: cluster_set(set),
            },
            AdminRequest::SetClusterSet {
                set: set.to_owned(),
                clusters: members.iter().map(|c| (*c).to_owned()).collect(),
            },
            AdminRequest::BindClusterSet {
                set: set.to_owned(),
                namespace: Some(namespace.to_owned()),
            },
        ]);
    }
    steps.extend([
        create_work("web", &["eu-1", "us-1"]),
        AdminRequest::ApplyObject {
            object: placement("team-a", "eu-web", &["eu"]),
        },
        AdminRequest::ApplyObject {
            object: placement("team-b", "us-web", &[]),
        },
    ]);
    for step in steps {
        let command = step.command();
        let (change, response) = handle_request(&core, &Access::Everything, step, now);
        assert!(
            matches!(response, AdminResponse::Ok(_)),
            "fixture step {command}: {response:?}"
        );
        core.apply(&change.records);
    }
    core
}

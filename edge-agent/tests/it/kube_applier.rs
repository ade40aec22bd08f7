//! The kube applier at the HTTP level: kube's own tower-test mock answers scripted requests and
//! each test checks the exact requests (method, path, query, content type, body).

use chrono::Utc;
use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use ocm_edge_agent::applier::Applier;
use ocm_edge_agent::applier::kube::KubeApplier;
use ocm_edge_agent::work::plan::{ApplyAction, ApplyStrategy, DeletePropagation};
use ocm_edge_agent::work::resource::ResourceRef;
use ocm_edge_schemas::api::work::Manifest;
use serde_json::{Value, json};
use std::collections::BTreeSet;

use std::time::Duration;

/// One expected request and the scripted answer.
struct Step {
    method: Method,
    path: &'static str,
    query: &'static [&'static str],
    /// Query parameters that must not be there.
    absent: &'static [&'static str],
    status: StatusCode,
    answer: Value,
}

/// What the applier actually sent.
#[derive(Debug)]
struct Seen {
    content_type: Option<String>,
    body: Value,
}

fn step(method: Method, path: &'static str, status: StatusCode, answer: Value) -> Step {
    Step {
        method,
        path,
        query: &[],
        absent: &[],
        status,
        answer,
    }
}

/// A client whose server plays `steps` in order; the task returns what was sent.
fn scripted(steps: Vec<Step>) -> (KubeApplier, tokio::task::JoinHandle<Vec<Seen>>) {
    let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let task = tokio::spawn(async move {
        let mut seen = Vec::new();
        for s in steps {
            let (req, send) = tokio::time::timeout(Duration::from_secs(10), handle.next_request())
                .await
                .unwrap_or_else(|_| panic!("no request for {} {}", s.method, s.path))
                .expect("a request");
            assert_eq!(req.method(), s.method, "method of {}", req.uri());
            assert_eq!(req.uri().path(), s.path);
            let query: BTreeSet<&str> = req
                .uri()
                .query()
                .unwrap_or("")
                .split('&')
                .filter(|q| !q.is_empty())
                .collect();
            for q in s.query {
                assert!(
                    query.contains(q),
                    "{q} missing from {:?}",
                    req.uri().query()
                );
            }
            for q in s.absent {
                assert!(
                    !query.iter().any(|p| p.starts_with(q)),
                    "{q} in {:?}",
                    req.uri().query()
                );
            }
            let content_type = req
                .headers()
                .get(http::header::CONTENT_TYPE)
                .map(|v| v.to_str().unwrap().to_owned());
            let bytes = req.into_body().collect_bytes().await.unwrap();
            let body = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).unwrap()
            };
            seen.push(Seen { content_type, body });
            let answer = serde_json::to_vec(&s.answer).unwrap();
            send.send_response(
                Response::builder()
                    .status(s.status)
                    .body(Body::from(answer))
                    .unwrap(),
            );
        }
        seen
    });
    (KubeApplier::new(kube::Client::new(svc, "default")), task)
}

fn apps_v1() -> Value {
    json!({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1","resources":[
        {"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment",
         "verbs":["create","delete","get","list","patch","update","watch"]},
        {"name":"deployments/status","singularName":"","namespaced":true,"kind":"Deployment","verbs":["get","patch","update"]}
    ]})
}

fn core_v1() -> Value {
    json!({"kind":"APIResourceList","groupVersion":"v1","resources":[
        {"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["create","delete","get","list","patch","update","watch"]},
        {"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["create","delete","get","list","patch","update","watch"]}
    ]})
}

fn not_found(what: &str) -> Value {
    json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
           "message": format!("{what} not found"),"reason":"NotFound","code":404})
}

fn deployment() -> Value {
    json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
           "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}},
           "status":{}})
}

fn configmap() -> Value {
    json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"default"},"data":{"k":"v"}})
}

fn action(manifest: Value, strategy: ApplyStrategy) -> ApplyAction {
    let m = Manifest(manifest.clone());
    ApplyAction {
        ordinal: 0,
        resource: ResourceRef::from_manifest(&m, 0).unwrap(),
        manifest,
        strategy,
        executor: None,
    }
}

fn with_meta(mut obj: Value, rv: &str) -> Value {
    obj["metadata"]["resourceVersion"] = json!(rv);
    obj["metadata"]["uid"] = json!("u-1");
    obj
}

#[tokio::test]
async fn server_side_apply_patches_with_the_field_manager_and_force_after_discovery() {
    let mut answer = with_meta(deployment(), "7");
    answer["status"] = json!({"readyReplicas": 2, "replicas": 2});
    let (applier, server) = scripted(vec![
        step(Method::GET, "/apis/apps/v1", StatusCode::OK, apps_v1()),
        Step {
            method: Method::PATCH,
            path: "/apis/apps/v1/namespaces/default/deployments/web",
            query: &["fieldManager=maestro-agent", "force=true"],
            absent: &[],
            status: StatusCode::OK,
            answer,
        },
    ]);
    let strategy = ApplyStrategy::ServerSideApply {
        force: true,
        field_manager: "maestro-agent".into(),
        ignore_fields: vec![],
    };
    let observed = applier
        .apply(&action(deployment(), strategy), Utc::now())
        .await
        .unwrap();
    assert_eq!(observed["status"]["readyReplicas"], 2);
    let seen = server.await.unwrap();
    assert_eq!(
        seen[1].content_type.as_deref(),
        Some("application/apply-patch+yaml")
    );
    let mut sent = deployment();
    sent.as_object_mut().unwrap().remove("status");
    assert_eq!(
        seen[1].body, sent,
        "the manifest is sent as written, without status"
    );
}

#[tokio::test]
async fn server_side_apply_without_force_does_not_ask_for_force_and_reports_conflicts() {
    let conflict = json!({"kind":"Status","apiVersion":"v1","status":"Failure","message":"Apply failed with 1 conflict","reason":"Conflict","code":409});
    let (applier, server) = scripted(vec![
        step(Method::GET, "/apis/apps/v1", StatusCode::OK, apps_v1()),
        Step {
            method: Method::PATCH,
            path: "/apis/apps/v1/namespaces/default/deployments/web",
            query: &["fieldManager=ocm-edge-agent"],
            absent: &["force"],
            status: StatusCode::CONFLICT,
            answer: conflict,
        },
    ]);
    let strategy = ApplyStrategy::ServerSideApply {
        force: false,
        field_manager: "ocm-edge-agent".into(),
        ignore_fields: vec![],
    };
    let err = applier
        .apply(&action(deployment(), strategy), Utc::now())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("conflict"), "{err}");
    server.await.unwrap();
}

#[tokio::test]
async fn create_only_reads_first_and_creates_only_on_404() {
    let (applier, server) = scripted(vec![
        step(Method::GET, "/api/v1", StatusCode::OK, core_v1()),
        step(
            Method::GET,
            "/api/v1/namespaces/default/configmaps/cfg",
            StatusCode::NOT_FOUND,
            not_found("configmaps \"cfg\""),
        ),
        step(
            Method::POST,
            "/api/v1/namespaces/default/configmaps",
            StatusCode::CREATED,
            with_meta(configmap(), "1"),
        ),
    ]);
    let observed = applier
        .apply(&action(configmap(), ApplyStrategy::CreateOnly), Utc::now())
        .await
        .unwrap();
    assert_eq!(observed["metadata"]["uid"], "u-1");
    let seen = server.await.unwrap();
    assert_eq!(seen[2].body, configmap());
}

#[tokio::test]
async fn create_only_leaves_an_existing_object_alone() {
    let mut existing = with_meta(configmap(), "4");
    existing["data"]["k"] = json!("changed-by-someone");
    let (applier, server) = scripted(vec![
        step(Method::GET, "/api/v1", StatusCode::OK, core_v1()),
        step(
            Method::GET,
            "/api/v1/namespaces/default/configmaps/cfg",
            StatusCode::OK,
            existing,
        ),
    ]);
    let observed = applier
        .apply(&action(configmap(), ApplyStrategy::CreateOnly), Utc::now())
        .await
        .unwrap();
    assert_eq!(observed["data"]["k"], "changed-by-someone");
    assert_eq!(server.await.unwrap().len(), 2);
}

#[tokio::test]
async fn update_replaces_a_drifted_object_with_its_current_resource_version() {
    let mut drifted = with_meta(configmap(), "9");
    drifted["data"]["k"] = json!("drifted");
    let (applier, server) = scripted(vec![
        step(Method::GET, "/api/v1", StatusCode::OK, core_v1()),
        step(
            Method::GET,
            "/api/v1/namespaces/default/configmaps/cfg",
            StatusCode::OK,
            drifted,
        ),
        step(
            Method::PUT,
            "/api/v1/namespaces/default/configmaps/cfg",
            StatusCode::OK,
            with_meta(configmap(), "10"),
        ),
    ]);
    applier
        .apply(&action(configmap(), ApplyStrategy::Update), Utc::now())
        .await
        .unwrap();
    let seen = server.await.unwrap();
    assert_eq!(seen[2].body["metadata"]["resourceVersion"], "9");
    assert_eq!(seen[2].body["data"]["k"], "v");
}

#[tokio::test]
async fn update_of_an_object_already_as_desired_sends_nothing_more() {
    let (applier, server) = scripted(vec![
        step(Method::GET, "/api/v1", StatusCode::OK, core_v1()),
        step(
            Method::GET,
            "/api/v1/namespaces/default/configmaps/cfg",
            StatusCode::OK,
            with_meta(configmap(), "3"),
        ),
    ]);
    applier
        .apply(&action(configmap(), ApplyStrategy::Update), Utc::now())
        .await
        .unwrap();
    assert_eq!(server.await.unwrap().len(), 2);
}

#[tokio::test]
async fn read_only_of_a_missing_object_is_not_found_and_writes_nothing() {
    let (applier, server) = scripted(vec![
        step(Method::GET, "/api/v1", StatusCode::OK, core_v1()),
        step(
            Method::GET,
            "/api/v1/namespaces/default/configmaps/cfg",
            StatusCode::NOT_FOUND,
            not_found("configmaps \"cfg\""),
        ),
    ]);
    let err = applier
        .apply(&action(configmap(), ApplyStrategy::ReadOnly), Utc::now())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("ReadOnly"), "{err}");
    server.await.unwrap();
}

#[tokio::test]
async fn a_cluster_scoped_namespace_is_applied_without_a_namespace_in_the_path() {
    let ns = json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"apps"}});
    let (applier, server) = scripted(vec![
        step(Method::GET, "/api/v1", StatusCode::OK, core_v1()),
        Step {
            method: Method::PATCH,
            path: "/api/v1/namespaces/apps",
            query: &["fieldManager=ocm-edge-agent"],
            absent: &["force"],
            status: StatusCode::OK,
            answer: with_meta(ns.clone(), "1"),
        },
    ]);
    let strategy = ApplyStrategy::ServerSideApply {
        force: false,
        field_manager: "ocm-edge-agent".into(),
        ignore_fields: vec![],
    };
    applier
        .apply(&action(ns, strategy), Utc::now())
        .await
        .unwrap();
    server.await.unwrap();
}

#[tokio::test]
async fn deletes_send_the_propagation_policy_and_treat_404_as_done() {
    let r = ResourceRef::from_manifest(&Manifest(deployment()), 0).unwrap();
    let status_ok = json!({"kind":"Status","apiVersion":"v1","status":"Success","code":200});
    let (applier, server) = scripted(vec![
        step(Method::GET, "/apis/apps/v1", StatusCode::OK, apps_v1()),
        step(
            Method::DELETE,
            "/apis/apps/v1/namespaces/default/deployments/web",
            StatusCode::OK,
            status_ok,
        ),
        step(
            Method::DELETE,
            "/apis/apps/v1/namespaces/default/deployments/web",
            StatusCode::NOT_FOUND,
            not_found("deployments \"web\""),
        ),
    ]);
    applier
        .delete(&r, DeletePropagation::Foreground)
        .await
        .unwrap();
    applier
        .delete(&r, DeletePropagation::Foreground)
        .await
        .unwrap();
    let seen = server.await.unwrap();
    assert_eq!(seen[1].body["propagationPolicy"], "Foreground");
}

#[tokio::test]
async fn discovery_is_asked_once_per_kind() {
    let (applier, server) = scripted(vec![
        step(Method::GET, "/api/v1", StatusCode::OK, core_v1()),
        step(
            Method::GET,
            "/api/v1/namespaces/default/configmaps/cfg",
            StatusCode::OK,
            with_meta(configmap(), "3"),
        ),
        step(
            Method::GET,
            "/api/v1/namespaces/default/configmaps/cfg",
            StatusCode::OK,
            with_meta(configmap(), "3"),
        ),
    ]);
    let r = ResourceRef::from_manifest(&Manifest(configmap()), 0).unwrap();
    assert!(applier.get(&r, Utc::now()).await.unwrap().is_some());
    assert!(applier.get(&r, Utc::now()).await.unwrap().is_some());
    server.await.unwrap();
}

#[tokio::test]
async fn health_asks_livez_then_falls_back_to_healthz() {
    let (applier, server) = scripted(vec![
        step(Method::GET, "/livez", StatusCode::NOT_FOUND, json!({})),
        step(Method::GET, "/healthz", StatusCode::OK, json!("ok")),
        step(
            Method::GET,
            "/livez",
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({}),
        ),
        step(
            Method::GET,
            "/healthz",
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({}),
        ),
    ]);
    assert!(applier.health().await);
    assert!(!applier.health().await);
    server.await.unwrap();
}

#[tokio::test]
async fn a_kind_the_cluster_does_not_serve_is_reported_as_not_found() {
    let (applier, server) = scripted(vec![step(
        Method::GET,
        "/api/v1",
        StatusCode::OK,
        core_v1(),
    )]);
    let secret =
        json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"}});
    let err = applier
        .apply(&action(secret, ApplyStrategy::Update), Utc::now())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ocm_edge_agent::applier::ApplyError::NotFound(_)),
        "{err}"
    );
    server.await.unwrap();
}

/// End to end on a real cluster (k3s, KinD): apply, read back, delete.
#[tokio::test]
async fn e2e_server_side_apply_and_delete_on_a_real_cluster() {
    let Some(path) =
        ocm_edge_tests::kube::kubeconfig("e2e_server_side_apply_and_delete_on_a_real_cluster")
    else {
        return;
    };
    let applier = KubeApplier::connect(Some(&path)).await.unwrap();
    assert!(applier.health().await);
    let name = format!("ocm-edge-e2e-{}", std::process::id());
    let cm = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":name,"namespace":"default"},"data":{"k":"v"}});
    let strategy = ApplyStrategy::ServerSideApply {
        force: true,
        field_manager: "ocm-edge-agent".into(),
        ignore_fields: vec![],
    };
    let observed = applier
        .apply(&action(cm.clone(), strategy), Utc::now())
        .await
        .unwrap();
    assert_eq!(observed["data"]["k"], "v");
    let r = ResourceRef::from_manifest(&Manifest(cm), 0).unwrap();
    applier
        .delete(&r, DeletePropagation::Foreground)
        .await
        .unwrap();
}

/// End to end on a real cluster: a CRD and a custom resource of it, applied one after the other
/// (as one bundle applies them), the resource found although its kind did not exist when the
/// applier first looked, then both deleted.
#[tokio::test]
async fn e2e_a_crd_and_a_resource_of_it_are_applied_in_turn_on_a_real_cluster() {
    let Some(path) = ocm_edge_tests::kube::kubeconfig(
        "e2e_a_crd_and_a_resource_of_it_are_applied_in_turn_on_a_real_cluster",
    ) else {
        return;
    };
    let applier = KubeApplier::connect(Some(&path)).await.unwrap();
    let group = format!("e2e{}.ocm-edge.test", std::process::id());
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    });
    let gadget = json!({
        "apiVersion": format!("{group}/v1"),
        "kind": "Gadget",
        "metadata": {"name": "g1", "namespace": "default"},
        "spec": {"size": 3}
    });
    let strategy = ApplyStrategy::ServerSideApply {
        force: true,
        field_manager: "ocm-edge-agent".into(),
        ignore_fields: vec![],
    };
    // Before the CRD: the kind is unknown, and the applier says so (it is retried).
    let early = applier
        .apply(&action(gadget.clone(), strategy.clone()), Utc::now())
        .await;
    assert!(early.is_err(), "{early:?}");
    applier
        .apply(&action(crd.clone(), strategy.clone()), Utc::now())
        .await
        .unwrap();
    // The API server serves the new kind a moment after the CRD is stored: retried, as the agent
    // retries a bundle, bounded.
    let mut applied = None;
    for _ in 0..100 {
        match applier
            .apply(&action(gadget.clone(), strategy.clone()), Utc::now())
            .await
        {
            Ok(observed) => {
                applied = Some(observed);
                break;
            }
            Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("the custom resource: {e}"),
        }
    }
    let observed = applied.expect("the custom resource is applied once its CRD is served");
    assert_eq!(observed["spec"]["size"], 3);
    let gadget_ref = ResourceRef::from_manifest(&Manifest(gadget), 0).unwrap();
    let crd_ref = ResourceRef::from_manifest(&Manifest(crd), 0).unwrap();
    // The CRD deleted first (as a work's delete may order it): its resources go with it.
    applier
        .delete(&crd_ref, DeletePropagation::Background)
        .await
        .unwrap();
    let mut gone = false;
    for _ in 0..300 {
        if applier.get(&crd_ref, Utc::now()).await.unwrap().is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "the CRD is deleted");
    // The applier discovered the kind while it was served; now the API server answers its path
    // with a plain `404 page not found`. The resource is absent, not an error the agent would
    // retry for ever, and deleting it again is done.
    assert_eq!(applier.get(&gadget_ref, Utc::now()).await.unwrap(), None);
    applier
        .delete(&gadget_ref, DeletePropagation::Background)
        .await
        .unwrap();
}

/// End to end on a real cluster with a controller manager, a scheduler and a node (tests/kube: kwok):
/// a Deployment applied becomes ready and its WellKnownStatus says so; a Foreground delete is
/// carried out by the garbage collector until the Deployment is gone.
#[tokio::test]
async fn e2e_a_deployment_becomes_ready_and_a_foreground_delete_removes_it_on_a_real_cluster() {
    use ocm_edge_agent::work::status::well_known_status;
    let Some(path) = ocm_edge_tests::kube::kubeconfig(
        "e2e_a_deployment_becomes_ready_and_a_foreground_delete_removes_it_on_a_real_cluster",
    ) else {
        return;
    };
    let applier = KubeApplier::connect(Some(&path)).await.unwrap();
    let name = format!("e2e-web-{}", std::process::id());
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}
            }
        }
    });
    let strategy = ApplyStrategy::ServerSideApply {
        force: true,
        field_manager: "ocm-edge-agent".into(),
        ignore_fields: vec![],
    };
    applier
        .apply(&action(deployment.clone(), strategy), Utc::now())
        .await
        .unwrap();
    let r = ResourceRef::from_manifest(&Manifest(deployment), 0).unwrap();
    let ready = |obj: &Value| {
        well_known_status("Deployment", obj)
            .iter()
            .any(|v| v.name == "ReadyReplicas" && v.field_value.integer == Some(2))
    };
    let mut became_ready = false;
    for _ in 0..300 {
        let obj = applier.get(&r, Utc::now()).await.unwrap().expect("applied");
        if ready(&obj) {
            became_ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        became_ready,
        "the Deployment's two replicas became ready within 30 s"
    );

    applier
        .delete(&r, DeletePropagation::Foreground)
        .await
        .unwrap();
    let mut gone = false;
    for _ in 0..300 {
        if applier.get(&r, Utc::now()).await.unwrap().is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        gone,
        "the garbage collector finished the Foreground delete within 30 s"
    );
}

/// End to end on a real cluster: each update strategy as OCM defines it. Update puts back what
/// another writer changed (drift); CreateOnly leaves an existing object alone; ReadOnly reads and
/// never writes (a missing object is NotFound); server-side apply without force refuses a field
/// another manager owns (Conflict), and with force takes it.
#[tokio::test]
async fn e2e_update_strategies_drift_and_conflicts_on_a_real_cluster() {
    use ocm_edge_agent::applier::ApplyError;
    let Some(path) = ocm_edge_tests::kube::kubeconfig(
        "e2e_update_strategies_drift_and_conflicts_on_a_real_cluster",
    ) else {
        return;
    };
    let applier = KubeApplier::connect(Some(&path)).await.unwrap();
    let name = format!("e2e-strategies-{}", std::process::id());
    let cm = |value: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": {"k": value}})
    };
    let ssa = |manager: &str, force: bool| ApplyStrategy::ServerSideApply {
        force,
        field_manager: manager.into(),
        ignore_fields: vec![],
    };
    let apply = |manifest: Value, strategy: ApplyStrategy| {
        let applier = &applier;
        async move { applier.apply(&action(manifest, strategy), Utc::now()).await }
    };

    let missing = apply(cm("v1"), ApplyStrategy::ReadOnly).await.unwrap_err();
    assert!(matches!(missing, ApplyError::NotFound(_)), "{missing}");

    let created = apply(cm("v1"), ApplyStrategy::Update).await.unwrap();
    assert_eq!(created["data"]["k"], "v1");
    // Someone else changes it: the next Update puts it back.
    apply(cm("drifted"), ssa("intruder", true)).await.unwrap();
    let restored = apply(cm("v1"), ApplyStrategy::Update).await.unwrap();
    assert_eq!(restored["data"]["k"], "v1", "drift corrected");

    // CreateOnly leaves an existing object as it is; ReadOnly only reads.
    apply(cm("drifted"), ssa("intruder", true)).await.unwrap();
    let kept = apply(cm("v2"), ApplyStrategy::CreateOnly).await.unwrap();
    assert_eq!(kept["data"]["k"], "drifted");
    let read = apply(cm("v3"), ApplyStrategy::ReadOnly).await.unwrap();
    assert_eq!(read["data"]["k"], "drifted");

    // The intruder owns data.k: without force, our apply is a conflict; with force it wins.
    let conflict = apply(cm("v4"), ssa("ocm-edge-agent", false))
        .await
        .unwrap_err();
    assert!(matches!(conflict, ApplyError::Conflict(_)), "{conflict}");
    let forced = apply(cm("v4"), ssa("ocm-edge-agent", true)).await.unwrap();
    assert_eq!(forced["data"]["k"], "v4");

    let r = ResourceRef::from_manifest(&Manifest(cm("v4")), 0).unwrap();
    applier
        .delete(&r, DeletePropagation::Background)
        .await
        .unwrap();
    assert!(applier.get(&r, Utc::now()).await.unwrap().is_none());
}

/// End to end on a real cluster: OCM's ignoreFields. Another field manager edits an ignored
/// field; while the work is unchanged the edit stays; once the work changes, OnSpokePresent
/// still keeps it and OnSpokeChange puts the work's value back. The field is named by a
/// JSONPath and a JSON Pointer in turn.
#[tokio::test]
async fn e2e_ignore_fields_keep_the_clusters_edits_as_ocm_s_conditions_say_on_a_real_cluster() {
    use ocm_edge_agent::work::plan::{FieldSelector, IgnoredField};
    use ocm_edge_schemas::api::work::IgnoreFieldsCondition;
    let Some(path) = ocm_edge_tests::kube::kubeconfig(
        "e2e_ignore_fields_keep_the_clusters_edits_as_ocm_s_conditions_say_on_a_real_cluster",
    ) else {
        return;
    };
    let applier = KubeApplier::connect(Some(&path)).await.unwrap();
    let path = |p: &str| FieldSelector::JsonPath(p.into());
    for (n, (selector, condition, after_change)) in [
        (
            path(".data.a"),
            IgnoreFieldsCondition::OnSpokePresent,
            "edited",
        ),
        (path(".data.a"), IgnoreFieldsCondition::OnSpokeChange, "1"),
        (
            FieldSelector::JsonPointer("/data/a".into()),
            IgnoreFieldsCondition::OnSpokePresent,
            "edited",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!(
            "e2e-ignore-{n}-{}-{}",
            format!("{condition:?}").to_lowercase(),
            std::process::id()
        );
        let cm = |b: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default"}, "data": {"a": "1", "b": b}})
        };
        let ours = ApplyStrategy::ServerSideApply {
            force: true,
            field_manager: "ocm-edge-agent".into(),
            ignore_fields: vec![IgnoredField {
                selector: selector.clone(),
                condition,
            }],
        };
        let apply = |manifest: Value, strategy: ApplyStrategy| {
            let applier = &applier;
            async move { applier.apply(&action(manifest, strategy), Utc::now()).await }
        };
        let created = apply(cm("1"), ours.clone()).await.unwrap();
        assert_eq!(created["data"]["a"], "1", "{condition:?}");
        let intruder = ApplyStrategy::ServerSideApply {
            force: true,
            field_manager: "intruder".into(),
            ignore_fields: vec![],
        };
        let mut edit = cm("1");
        edit["data"] = json!({"a": "edited"});
        apply(edit, intruder).await.unwrap();

        let unchanged = apply(cm("1"), ours.clone()).await.unwrap();
        assert_eq!(
            unchanged["data"]["a"], "edited",
            "{condition:?}: work unchanged"
        );
        let changed = apply(cm("2"), ours).await.unwrap();
        assert_eq!(
            (changed["data"]["a"].as_str(), changed["data"]["b"].as_str()),
            (Some(after_change), Some("2")),
            "{condition:?}: work changed"
        );
        let r = ResourceRef::from_manifest(&Manifest(cm("2")), 0).unwrap();
        applier
            .delete(&r, DeletePropagation::Background)
            .await
            .unwrap();
    }
}

/// End to end on a real cluster: the agent's version and health are read.
#[tokio::test]
async fn e2e_version_and_health_of_a_real_cluster() {
    let Some(path) = ocm_edge_tests::kube::kubeconfig("e2e_version_and_health_of_a_real_cluster")
    else {
        return;
    };
    let applier = KubeApplier::connect(Some(&path)).await.unwrap();
    assert!(applier.version().await.unwrap().starts_with('v'));
}

/// End to end on a real cluster: the facts are what the API server says of its nodes, summed,
/// with OCM's well-known claims (the id is the kube-system namespace's uid).
#[tokio::test]
async fn e2e_facts_of_a_real_cluster_are_its_nodes_summed_with_the_well_known_claims() {
    use k8s_openapi::api::core::v1::{Namespace, Node};
    use ocm_edge_schemas::api::cluster::{
        CLAIM_ID, CLAIM_KUBE_VERSION, CLAIM_PLATFORM, CLAIM_PRODUCT,
    };
    use ocm_edge_schemas::api::meta::Quantity;
    use ocm_edge_schemas::api::quantity::Amount;

    let Some(path) = ocm_edge_tests::kube::kubeconfig(
        "e2e_facts_of_a_real_cluster_are_its_nodes_summed_with_the_well_known_claims",
    ) else {
        return;
    };
    let applier = KubeApplier::connect(Some(&path)).await.unwrap();
    let facts = applier.facts().await.unwrap();

    // What the API server says, read here on its own.
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&path).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let nodes = kube::Api::<Node>::all(client.clone())
        .list(&kube::api::ListParams::default())
        .await
        .unwrap()
        .items;
    assert!(!nodes.is_empty(), "the control plane has its kwok node");
    assert_eq!(facts.nodes, nodes.len() as u64);
    for resource in ["cpu", "memory", "pods"] {
        let mut capacity = Amount::ZERO;
        let mut allocatable = Amount::ZERO;
        for node in &nodes {
            let status = node.status.clone().unwrap_or_default();
            let amount = |list: Option<std::collections::BTreeMap<String, _>>| {
                let q: k8s_openapi::apimachinery::pkg::api::resource::Quantity =
                    list.unwrap_or_default().remove(resource).expect(resource);
                Quantity(q.0).amount().unwrap()
            };
            capacity = capacity.checked_add(amount(status.capacity)).unwrap();
            allocatable = allocatable.checked_add(amount(status.allocatable)).unwrap();
        }
        assert_eq!(
            facts.capacity[resource].amount().unwrap(),
            capacity,
            "{resource}"
        );
        assert_eq!(
            facts.allocatable[resource].amount().unwrap(),
            allocatable,
            "{resource}"
        );
    }
    let kube_system = kube::Api::<Namespace>::all(client)
        .get("kube-system")
        .await
        .unwrap();
    let version = applier.version().await.unwrap();
    assert_eq!(facts.claims[CLAIM_ID], kube_system.metadata.uid.unwrap());
    assert_eq!(facts.claims[CLAIM_KUBE_VERSION], version);
    assert_eq!(facts.version.as_deref(), Some(version.as_str()));
    // A plain control plane with kwok nodes: neither K3s nor KinD, on no cloud.
    assert_eq!(facts.claims[CLAIM_PRODUCT], "Other");
    assert_eq!(facts.claims[CLAIM_PLATFORM], "Other");
    assert!(facts.unreadable.is_empty(), "{:?}", facts.unreadable);
}

#[tokio::test]
async fn ssa_with_ignore_fields_leaves_an_object_the_work_has_not_changed_since() {
    let strategy = ApplyStrategy::ServerSideApply {
        force: true,
        field_manager: "ocm-edge-agent".into(),
        ignore_fields: vec![".spec.replicas".into()],
    };
    // The object as the agent created it, then scaled on the cluster.
    let mut on_cluster = with_meta(
        strategy
            .effective_manifest(&deployment(), None)
            .unwrap()
            .unwrap(),
        "5",
    );
    on_cluster["spec"]["replicas"] = json!(9);
    let (applier, server) = scripted(vec![
        step(Method::GET, "/apis/apps/v1", StatusCode::OK, apps_v1()),
        step(
            Method::GET,
            "/apis/apps/v1/namespaces/default/deployments/web",
            StatusCode::OK,
            on_cluster,
        ),
    ]);
    let got = applier
        .apply(&action(deployment(), strategy), Utc::now())
        .await
        .unwrap();
    assert_eq!(got["spec"]["replicas"], 9, "the cluster's value stays");
    // No PATCH: the script ends after the GET (a third request would find no step).
    assert_eq!(server.await.unwrap().len(), 2);
}

#[tokio::test]
async fn ssa_with_ignore_fields_reads_the_object_first_and_leaves_the_fields_out() {
    let (applier, server) = scripted(vec![
        step(Method::GET, "/apis/apps/v1", StatusCode::OK, apps_v1()),
        step(
            Method::GET,
            "/apis/apps/v1/namespaces/default/deployments/web",
            StatusCode::OK,
            with_meta(deployment(), "5"),
        ),
        Step {
            method: Method::PATCH,
            path: "/apis/apps/v1/namespaces/default/deployments/web",
            query: &["fieldManager=ocm-edge-agent", "force=true"],
            absent: &[],
            status: StatusCode::OK,
            answer: with_meta(deployment(), "6"),
        },
    ]);
    let strategy = ApplyStrategy::ServerSideApply {
        force: true,
        field_manager: "ocm-edge-agent".into(),
        ignore_fields: vec![".spec.replicas".into()],
    };
    applier
        .apply(&action(deployment(), strategy), Utc::now())
        .await
        .unwrap();
    let seen = server.await.unwrap();
    assert!(
        seen[2].body["spec"].get("replicas").is_none(),
        "{}",
        seen[2].body
    );
    assert_eq!(
        seen[2].body["spec"]["selector"]["matchLabels"]["app"],
        "web"
    );
}

//! The hub on a real embedded broker, with a raw MQTT 5 client playing the agent and the CLI's
//! admin client playing the operator.

use crate::support::{AgentPeer, Fleet, eventually, fleet_of};
use cloudevents::AttributesReader;
use ocm_edge_schemas::admin::ClusterState;
use ocm_edge_schemas::admin::CreateWork;
use ocm_edge_schemas::wire::MqttMessage;
use ocm_edge_schemas::wire::event_type::Action;
use ocm_edge_schemas::wire::extensions as ext;
use ocm_edge_schemas::wire::topic;
use ocm_edge_schemas::wire::works::WorkEvent;
use serde_json::json;

fn deployment_work(name: &str, clusters: &[&str], replicas: i64) -> CreateWork {
    CreateWork {
        name: name.into(),
        clusters: clusters.iter().map(|c| (*c).to_owned()).collect(),
        manifests: vec![json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas}
        })],
        ..CreateWork::default()
    }
}

/// Joins and accepts `agent`'s cluster, waiting for the accepted hub view.
async fn join_and_accept(hub: &Fleet, agent: &mut AgentPeer) {
    agent.join().await;
    agent
        .next_hub_view(|v| v["spec"]["hubAcceptsClient"] != true)
        .await;
    let admin = hub.new_admin().await;
    admin.accept_cluster(&agent.cluster).await.unwrap();
    agent
        .next_hub_view(|v| v["spec"]["hubAcceptsClient"] == true)
        .await;
}

#[tokio::test]
async fn a_joining_agent_is_pending_until_accepted_and_then_receives_the_accepted_view() {
    let hub = fleet_of("ocm-edge").await;
    let mut agent = AgentPeer::connect(hub.broker_url(), "ocm-edge", "edge-1").await;
    agent.join().await;
    let pending = agent.next_hub_view(|_| true).await;
    assert_eq!(pending["spec"]["hubAcceptsClient"], json!(false));

    let admin = hub.new_admin().await;
    let clusters = admin.list_clusters().await.unwrap();
    assert_eq!(clusters.len(), 1);
    assert_eq!(clusters[0].state, ClusterState::Pending);
    assert_eq!(clusters[0].labels["env"], "test");

    let view = admin.accept_cluster("edge-1").await.unwrap();
    assert_eq!(view.state, ClusterState::Accepted);
    let accepted = agent
        .next_hub_view(|v| v["spec"]["hubAcceptsClient"] == true)
        .await;
    let types: Vec<&str> = accepted["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"HubAcceptedManagedCluster"), "{types:?}");
    assert!(types.contains(&"ManagedClusterJoined"), "{types:?}");

    // A lease renewal makes it available.
    agent.renew_lease().await;
    let available = agent
        .next_hub_view(|v| {
            v["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["type"] == "ManagedClusterConditionAvailable" && c["status"] == "True"
                })
            })
        })
        .await;
    assert_eq!(available["metadata"]["name"], "edge-1");
}

#[tokio::test]
async fn a_maestro_shaped_status_event_is_accepted_and_stored_for_a_work_the_hub_created() {
    // The vector's cluster name and source id, so only the resourceid differs from it.
    let vector = include_bytes!("../fixtures/maestro_status_event.json");
    let mut event = ocm_edge_schemas::wire::structured::parse(vector).unwrap();
    let cluster = ext::cluster_name(&event).unwrap().to_owned();
    let hub = fleet_of("maestro").await;
    let mut agent = AgentPeer::connect(hub.broker_url(), "maestro", &cluster).await;
    join_and_accept(&hub, &mut agent).await;

    let admin = hub.new_admin().await;
    admin
        .create_work(deployment_work("upgrade-test", &[&cluster], 1))
        .await
        .unwrap();
    let WorkEvent::Spec(spec) = agent
        .next_work_event("spec create", |w| matches!(w, WorkEvent::Spec(_)))
        .await
    else {
        unreachable!()
    };
    assert_eq!(spec.action, Action::CreateRequest);
    assert_eq!(spec.resource_version, 1);

    ext::set_resource_id(&mut event, spec.resource_id.clone());
    agent.send(&event).await;

    let work = eventually("status stored", || async {
        let w = admin.get_work(&cluster, "upgrade-test").await.unwrap();
        (!w.conditions.is_empty()).then_some(w)
    })
    .await;
    assert_eq!(work.conditions[0].type_, "Applied");
    assert_eq!(work.resource_status.len(), 1);
    assert_eq!(work.resource_status[0].resource_meta.kind, "Deployment");

    // The same event again is unchanged: counted, not stored twice.
    agent.send(&event).await;
    eventually("duplicate counted", || async {
        let s = admin.stats().await.unwrap();
        (s.counters.get("statusesUnchanged") == Some(&1)).then_some(())
    })
    .await;
}

#[tokio::test]
async fn lists_longer_than_a_page_come_whole_and_in_order() {
    let hub = fleet_of("ocm-edge").await;
    let mut agents = Vec::new();
    for name in ["edge-c", "edge-a", "edge-e", "edge-b", "edge-d"] {
        let mut agent = AgentPeer::connect(hub.broker_url(), "ocm-edge", name).await;
        join_and_accept(&hub, &mut agent).await;
        agents.push(agent);
    }
    let admin = hub.new_admin().await.with_list_page(2);
    let names: Vec<String> = admin
        .list_clusters()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["edge-a", "edge-b", "edge-c", "edge-d", "edge-e"]);

    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    admin
        .create_work(deployment_work("web", &refs, 1))
        .await
        .unwrap();
    let works: Vec<String> = admin
        .list_works(None)
        .await
        .unwrap()
        .into_iter()
        .map(|w| w.cluster)
        .collect();
    assert_eq!(works, names);
}

#[tokio::test]
async fn malformed_payloads_are_counted_and_dropped_and_nothing_is_stored() {
    let hub = fleet_of("ocm-edge").await;
    let agent = AgentPeer::connect(hub.broker_url(), "ocm-edge", "edge-1").await;
    let topic = topic::agent_events("ocm-edge", "edge-1").unwrap();
    let garbage = [
        MqttMessage {
            topic: topic.clone(),
            payload: b"not a cloudevent".to_vec(),
            ..MqttMessage::default()
        },
        MqttMessage {
            topic: topic.clone(),
            payload: b"{broken json".to_vec(),
            content_type: Some("application/json".into()),
            user_properties: vec![
                ("ce-specversion".into(), "1.0".into()),
                ("ce-id".into(), "1".into()),
                ("ce-source".into(), "x".into()),
                (
                    "ce-type".into(),
                    "cluster.open-cluster-management.io.v1.managedclusters.spec.create_request"
                        .into(),
                ),
                ("ce-clustername".into(), "edge-1".into()),
            ],
        },
        MqttMessage {
            topic: topic.clone(),
            payload: vec![0xff, 0xfe, 0x00],
            content_type: Some("application/json".into()),
            user_properties: vec![("ce-specversion".into(), "9.9".into())],
        },
    ];
    for msg in garbage.iter().cloned() {
        agent.send_raw(msg).await;
    }
    // A join request naming another cluster is refused too.
    let spoof = agent.event(
        "cluster.open-cluster-management.io.v1.managedclusters.spec.create_request",
        json!({"metadata": {"name": "someone-else"}}),
    );
    agent.send(&spoof).await;

    let admin = hub.new_admin().await;
    let stats = eventually("malformed messages counted", || async {
        let s = admin.stats().await.unwrap();
        (s.counters.get("messagesMalformed").copied().unwrap_or(0) >= 4).then_some(s)
    })
    .await;
    assert_eq!(stats.counters["messagesMalformed"], 4);
    assert!(admin.list_clusters().await.unwrap().is_empty());
    assert!(admin.list_works(None).await.unwrap().is_empty());
}

#[tokio::test]
async fn spec_resync_answers_an_empty_list_and_deletes_what_the_hub_no_longer_has() {
    let hub = fleet_of("ocm-edge").await;
    let mut agent = AgentPeer::connect(hub.broker_url(), "ocm-edge", "edge-1").await;
    join_and_accept(&hub, &mut agent).await;
    let admin = hub.new_admin().await;
    admin
        .create_work(deployment_work("web", &["edge-1"], 1))
        .await
        .unwrap();
    agent
        .next_work_event("spec create", |w| matches!(w, WorkEvent::Spec(_)))
        .await;

    let resync = agent.event(
        "io.open-cluster-management.works.v1alpha1.manifestbundles.spec.resync_request",
        json!({"resourceVersions": [{"resourceID": "00000000-0000-0000-0000-00000000dead", "resourceVersion": 4}]}),
    );
    agent.send(&resync).await;
    let mut got_work = false;
    let mut got_bare_delete = false;
    while !(got_work && got_bare_delete) {
        let WorkEvent::Spec(s) = agent
            .next_work_event(
                "resync response",
                |w| matches!(w, WorkEvent::Spec(s) if s.action == Action::ResyncResponse),
            )
            .await
        else {
            unreachable!()
        };
        if s.is_delete() {
            assert_eq!(s.resource_id, "00000000-0000-0000-0000-00000000dead");
            assert_eq!(s.resource_version, 4);
            assert!(s.bundle.is_none());
            got_bare_delete = true;
        } else {
            assert_eq!(s.metadata.unwrap().name, "web");
            assert!(s.bundle.is_some());
            got_work = true;
        }
    }
}

#[tokio::test]
async fn a_deleted_work_is_forgotten_only_after_the_agent_reports_deleted() {
    let hub = fleet_of("ocm-edge").await;
    let mut agent = AgentPeer::connect(hub.broker_url(), "ocm-edge", "edge-1").await;
    join_and_accept(&hub, &mut agent).await;
    let admin = hub.new_admin().await;
    admin
        .create_work(deployment_work("web", &["edge-1"], 1))
        .await
        .unwrap();
    agent
        .next_work_event("spec create", |w| matches!(w, WorkEvent::Spec(_)))
        .await;
    let view = admin.delete_work("edge-1", "web").await.unwrap();
    assert!(view.deleting);
    let WorkEvent::Spec(delete) = agent
        .next_work_event(
            "delete",
            |w| matches!(w, WorkEvent::Spec(s) if s.is_delete()),
        )
        .await
    else {
        unreachable!()
    };
    assert!(admin.get_work("edge-1", "web").await.unwrap().deleting);

    let mut status = agent.event(
        "io.open-cluster-management.works.v1alpha1.manifestbundles.status.update_request",
        json!({"conditions": [{"type": "Deleted", "status": "True", "reason": "ManifestsDeleted",
                               "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
               "resourceStatus": []}),
    );
    ext::set_resource_id(&mut status, delete.resource_id.clone());
    ext::set_resource_version(&mut status, 1).unwrap();
    ext::set_original_source(&mut status, "ocm-edge");
    ext::set_sequence_id(&mut status, "2000808179721572352");
    agent.send(&status).await;
    eventually("work forgotten", || async {
        admin
            .list_works(Some("edge-1"))
            .await
            .unwrap()
            .is_empty()
            .then_some(())
    })
    .await;
    // Deleting it again is a clear error.
    let err = admin.delete_work("edge-1", "web").await.unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[tokio::test]
async fn a_restarted_hub_keeps_its_state_and_asks_agents_for_their_statuses() {
    let mut hub = fleet_of("ocm-edge").await;
    let mut agent = AgentPeer::connect(hub.broker_url(), "ocm-edge", "edge-1").await;
    join_and_accept(&hub, &mut agent).await;
    {
        let admin = hub.new_admin().await;
        admin
            .create_work(deployment_work("web", &["edge-1"], 2))
            .await
            .unwrap();
    }
    agent
        .next_work_event("spec create", |w| matches!(w, WorkEvent::Spec(_)))
        .await;

    hub.stop_hub().await;
    hub.start_hub().await;

    // Both follow every (re)subscription: the accepted view and a status resync request.
    agent
        .next_hub_view(|v| v["spec"]["hubAcceptsClient"] == true)
        .await;
    let request = agent
        .next_event("status resync request", |e| {
            e.ty().ends_with("manifestbundles.status.resync_request")
        })
        .await;
    assert_eq!(ext::cluster_name(&request).unwrap(), "edge-1");

    let admin = hub.new_admin().await;
    let clusters = admin.list_clusters().await.unwrap();
    assert_eq!(clusters[0].state, ClusterState::Accepted);
    let works = admin.list_works(None).await.unwrap();
    assert_eq!(works.len(), 1);
    assert_eq!((works[0].name.as_str(), works[0].version), ("web", 1));
}

#[tokio::test]
async fn updating_a_work_sends_the_new_version_and_identical_writes_send_nothing() {
    let hub = fleet_of("ocm-edge").await;
    let mut agent = AgentPeer::connect(hub.broker_url(), "ocm-edge", "edge-1").await;
    join_and_accept(&hub, &mut agent).await;
    let admin = hub.new_admin().await;
    admin
        .create_work(deployment_work("web", &["edge-1"], 1))
        .await
        .unwrap();
    let err = admin
        .create_work(deployment_work("web", &["edge-1"], 2))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("--overwrite"), "{err}");
    let mut same = deployment_work("web", &["edge-1"], 1);
    same.overwrite = true;
    admin.create_work(same).await.unwrap();
    let mut update = deployment_work("web", &["edge-1"], 3);
    update.overwrite = true;
    let written = admin.create_work(update).await.unwrap();
    assert_eq!(written[0].work.version, 2);
    let versions: Vec<i64> = {
        let mut v = vec![];
        while v.len() < 2 {
            if let WorkEvent::Spec(s) = agent
                .next_work_event("spec", |w| matches!(w, WorkEvent::Spec(_)))
                .await
            {
                v.push(s.resource_version);
            }
        }
        v
    };
    assert_eq!(versions, [1, 2], "the identical overwrite sent nothing");
}

#[tokio::test]
async fn dashboards_find_retained_cluster_work_and_summary_views() {
    let hub = fleet_of("ocm-edge").await;
    let mut agent = AgentPeer::connect(hub.broker_url(), "ocm-edge", "edge-1").await;
    join_and_accept(&hub, &mut agent).await;
    let admin = hub.new_admin().await;
    admin
        .create_work(deployment_work("web", &["edge-1"], 1))
        .await
        .unwrap();
    // Round trip so the hub has published the views before the dashboard subscribes.
    admin.get_work("edge-1", "web").await.unwrap();

    let mut dashboard = AgentPeer::connect_to(
        hub.broker_url(),
        "ocm-edge",
        "dashboard",
        "ocm-edge/ocm-edge/dashboard/clusters/+".into(),
    )
    .await;
    let msg = dashboard
        .next_message("retained cluster view", |m| {
            m.topic == "ocm-edge/ocm-edge/dashboard/clusters/edge-1"
        })
        .await;
    let view: serde_json::Value = serde_json::from_slice(&msg.payload).unwrap();
    assert_eq!(view["state"], "Accepted");
    assert_eq!(view["works"], 1);

    let mut works = AgentPeer::connect_to(
        hub.broker_url(),
        "ocm-edge",
        "dashboard",
        "ocm-edge/ocm-edge/dashboard/works/edge-1/web".into(),
    )
    .await;
    let msg = works.next_message("retained work view", |_| true).await;
    let view: serde_json::Value = serde_json::from_slice(&msg.payload).unwrap();
    assert_eq!(
        (view["name"].as_str(), view["version"].as_i64()),
        (Some("web"), Some(1))
    );
}

#[tokio::test]
async fn a_cluster_that_stops_renewing_becomes_unknown_after_the_grace_period() {
    let mut hub = fleet_of("ocm-edge").await;
    // Grace = 1 x leaseDurationSeconds (raised to the 5 s minimum), so the hub's own deadline timer fires quickly.
    hub.stop_hub().await;
    hub.start_hub_with(|cfg| cfg.lease_grace_multiplier = 1.0)
        .await;

    let mut agent = AgentPeer::connect(hub.broker_url(), "ocm-edge", "edge-1").await;
    let join = agent.event(
        "cluster.open-cluster-management.io.v1.managedclusters.spec.create_request",
        json!({"metadata": {"name": "edge-1"}, "spec": {"leaseDurationSeconds": 1}}),
    );
    agent.send(&join).await;
    agent.next_hub_view(|_| true).await;
    hub.new_admin()
        .await
        .accept_cluster("edge-1")
        .await
        .unwrap();
    let lease = agent.event(
        "coordination.k8s.io.v1.leases.spec.update_request",
        json!({"spec": {"leaseDurationSeconds": 1}}),
    );
    agent.send(&lease).await;
    let condition = |status: &'static str| {
        move |v: &serde_json::Value| {
            v["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["type"] == "ManagedClusterConditionAvailable" && c["status"] == status
                })
            })
        }
    };
    agent.next_hub_view(condition("True")).await;
    let unknown = agent.next_hub_view(condition("Unknown")).await;
    assert_eq!(unknown["metadata"]["name"], "edge-1");
    let view = hub.new_admin().await.get_cluster("edge-1").await.unwrap();
    assert_eq!(
        view.available.unwrap().status,
        ocm_edge_schemas::api::meta::ConditionStatus::Unknown
    );
}

#[tokio::test]
async fn a_hub_whose_broker_is_unreachable_still_starts_and_shuts_down_releasing_its_store() {
    let data_dir = tempfile::tempdir().unwrap();
    // A port nobody listens on: bind, read, release.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = || {
        let mut cfg = ocm_edge_hub::HubConfig::new(data_dir.path());
        cfg.broker = ocm_edge_hub::BrokerConfig::External {
            url: format!("mqtt://127.0.0.1:{port}"),
        };
        cfg
    };
    let hub = ocm_edge_hub::start_hub(config()).await.unwrap();
    hub.shutdown().await.unwrap();
    // The redb file is closed: a second hub opens it in the same process.
    let again = ocm_edge_hub::start_hub(config()).await.unwrap();
    again.shutdown().await.unwrap();
}

#[tokio::test]
async fn two_hubs_cannot_share_one_data_directory() {
    let hub = fleet_of("ocm-edge").await;
    let mut cfg = hub.hub_config();
    cfg.client_id = Some("second-hub".into());
    let err = ocm_edge_hub::start_hub(cfg).await.unwrap_err();
    assert!(err.to_string().contains("hub.redb"), "{err}");
}

#[tokio::test]
async fn a_work_close_to_the_500_kib_limit_travels_from_the_cli_through_the_hub_to_the_agent() {
    let hub = fleet_of("ocm-edge").await;
    let mut agent = AgentPeer::connect(hub.broker_url(), "ocm-edge", "edge-1").await;
    join_and_accept(&hub, &mut agent).await;
    let admin = hub.new_admin().await;
    let blob = "x".repeat(480 * 1024);
    let work = CreateWork {
        name: "big".into(),
        clusters: vec!["edge-1".into()],
        manifests: vec![json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "big", "namespace": "default"},
            "data": {"blob": blob}
        })],
        ..CreateWork::default()
    };
    admin.create_work(work.clone()).await.unwrap();
    let WorkEvent::Spec(spec) = agent
        .next_work_event("big spec", |w| matches!(w, WorkEvent::Spec(_)))
        .await
    else {
        unreachable!()
    };
    let bundle = spec.bundle.unwrap();
    assert_eq!(
        bundle.manifests[0].0["data"]["blob"]
            .as_str()
            .unwrap()
            .len(),
        blob.len()
    );

    // Over the limit: refused with the limit in the message, nothing stored.
    let mut too_big = work;
    too_big.name = "too-big".into();
    too_big.manifests[0]["data"]["blob"] = json!("x".repeat(520 * 1024));
    let err = admin.create_work(too_big).await.unwrap_err();
    assert!(err.to_string().contains("500 KiB"), "{err}");
    assert_eq!(admin.list_works(None).await.unwrap().len(), 1);
}

//! ocm-edge on a broker cluster: two rmqtt nodes (rmqtt-cluster-broadcast) configured by the
//! shipped `broker-config/rmqtt-cluster/` files (TLS only, logins, per-cluster topic rules), the hub on node 1 with two intakes sharing one
//! `$share/` subscription, one agent on each node. Works reach the agent on the other node, its
//! statuses come back through the shared intake, and the shipped ACL holds across nodes.

use ocm_edge_mqtt::TlsFiles;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, HUB_USER, OPERATOR_USER, password_of};
use ocm_edge_tests::manifests::{feedback_integer, web_with_feedback};
use ocm_edge_tests::pki::TestPki;
use ocm_edge_tests::probe::{Probe, ProbeOptions};
use ocm_edge_tests::rmqtt_cluster::{RmqttCluster, require_rmqtt_node};

const CLUSTERS: [&str; 2] = ["edge-1", "edge-2"];

fn logins() -> Vec<(String, String)> {
    [HUB_USER, OPERATOR_USER, CLUSTERS[0], CLUSTERS[1]]
        .iter()
        .map(|u| (u.to_string(), password_of(u)))
        .collect()
}

#[tokio::test]
async fn a_hub_on_one_rmqtt_node_serves_agents_on_both_nodes_through_shared_intakes() {
    let test = "a_hub_on_one_rmqtt_node_serves_agents_on_both_nodes_through_shared_intakes";
    let Some(program) = require_rmqtt_node(test) else {
        return;
    };
    let certs = tempfile::tempdir().unwrap();
    let pki = TestPki::create(certs.path(), "cluster");
    let brokers = RmqttCluster::start(&program, 2, &pki, &logins());
    let mut fleet = Fleet::on_broker(
        brokers.url(0),
        FleetOptions {
            hub_intakes: 2,
            logins: true,
            broker_ca_file: Some(pki.ca_file.clone()),
            ..FleetOptions::default()
        },
    );
    let tls = TlsFiles {
        ca_file: Some(pki.ca_file.clone()),
        ..TlsFiles::default()
    };
    fleet.start_hub().await;
    fleet.agent(CLUSTERS[0]).start().await;
    let node_2 = brokers.url(1);
    fleet
        .agent(CLUSTERS[1])
        .configure(|cfg| cfg.broker_url = node_2.clone())
        .start()
        .await;
    fleet.accept_all(&CLUSTERS).await;

    // A work and an update of it reach both agents; their statuses come back to the hub.
    for (replicas, overwrite) in [(1, false), (3, true)] {
        fleet
            .write_work(web_with_feedback(&CLUSTERS, replicas, overwrite))
            .await;
        for c in CLUSTERS {
            fleet
                .wait_work(c, "web", &format!("ReadyReplicas={replicas}"), |w| {
                    feedback_integer(&w.resource_status, 1, "ReadyReplicas") == Some(replicas)
                })
                .await
                .unwrap_or_else(|e| panic!("{e}\n{}", brokers.logs()));
        }
    }

    // The shipped configuration, on the node the hub is not on: no plaintext (the TLS port does
    // not speak it, even with good credentials), no anonymous client, and edge-1 may not read
    // edge-2's works (neither its topic nor a wildcard over every cluster).
    let plaintext = node_2.replacen("mqtts://", "mqtt://", 1);
    let with_password = ProbeOptions {
        client_id: "edge-1-plaintext".into(),
        credentials: Some((CLUSTERS[0].into(), password_of(CLUSTERS[0]))),
        ..ProbeOptions::default()
    };
    assert!(
        Probe::connect_with(&plaintext, with_password)
            .await
            .is_err(),
        "a plaintext client was let in"
    );
    let anonymous = Probe::connect_with(
        &node_2,
        ProbeOptions {
            tls: tls.clone(),
            ..ProbeOptions::default()
        },
    )
    .await;
    assert!(anonymous.is_err(), "an anonymous client was let in");
    let edge_1 = Probe::connect_with(
        &node_2,
        ProbeOptions {
            client_id: "edge-1-intruder".into(),
            credentials: Some((CLUSTERS[0].into(), password_of(CLUSTERS[0]))),
            tls,
            ..ProbeOptions::default()
        },
    )
    .await
    .expect("edge-1 logs in");
    for filter in [
        "sources/ocm-edge/consumers/edge-2/sourceevents",
        "sources/ocm-edge/consumers/+/sourceevents",
    ] {
        let granted = edge_1.subscribe(filter).await.expect("SUBACK");
        assert!(
            granted.iter().all(Result::is_err),
            "edge-1 was allowed to subscribe to {filter}: {granted:?}"
        );
    }
    let own = edge_1
        .subscribe("sources/ocm-edge/consumers/edge-1/sourceevents")
        .await
        .expect("SUBACK");
    assert!(own.iter().all(Result::is_ok), "edge-1's own topic: {own:?}");

    fleet.shutdown().await;
}

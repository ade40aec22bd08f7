//! `ocm-edge cluster bootstrap`: the real binary on a real hub's data directory prints the agent
//! chart's own manifests (`deploy/k3s/agent.yaml`) with a new join token, the hub's CA pin and the
//! broker agents reach; an agent given those settings joins. Bad input is refused with what to
//! fix, and nothing is made. (`tests/tests/it/kube_bootstrap.rs` applies the output to a real API
//! server and runs the real agent with it.)

use std::path::Path;

use ocm_edge_hub::registration::join_token::JoinTokens;
use serde_json::Value;

use crate::cli_commands::{TestHub, assert_failure_mentioning, assert_success, stdout};
use crate::join::start_joining;

const BROKER: &str = "mqtts://hub.example.net:8883";

/// The documents of a multi-document YAML text.
fn documents(text: &str) -> Vec<Value> {
    ocm_edge_tests::helm::objects(text)
}

/// The one object of `kind` among `docs`.
fn only<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let mut found = docs.iter().filter(|d| d["kind"] == kind);
    let one = found
        .next()
        .unwrap_or_else(|| panic!("no {kind} in {docs:#?}"));
    assert!(found.next().is_none(), "more than one {kind}");
    one
}

/// The seconds since the epoch at which join token `token` (`oet1.ID.EXPIRES.MAC`) expires.
fn expiry(token: &str) -> i64 {
    token.split('.').nth(2).unwrap().parse().unwrap()
}

#[tokio::test]
async fn cluster_bootstrap_prints_the_charts_manifests_with_a_new_token_the_hubs_pin_and_the_broker()
 {
    let hub = TestHub::start().await;
    let before = chrono::Utc::now().timestamp();
    let out = hub
        .cli(&[
            "cluster",
            "bootstrap",
            "store-17",
            "--agent-broker",
            BROKER,
            "--ttl",
            "2h",
        ])
        .await;
    assert_success(&out);
    let text = stdout(&out);
    assert!(
        text.starts_with("# ocm-edge agent of cluster store-17") && text.contains("A SECRET"),
        "the output says what it holds: {text}"
    );
    let docs = documents(&text);
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    for kind in [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Secret",
        "PersistentVolumeClaim",
        "Deployment",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }

    // The Secret: the cluster, the broker, the hub's own CA pin and a token the hub takes, valid
    // for the ttl asked.
    let settings = &only(&docs, "Secret")["stringData"];
    assert_eq!(settings["OCM_EDGE_CLUSTER_NAME"], "store-17");
    assert_eq!(settings["OCM_EDGE_BROKER"], BROKER);
    let pin = hub.fleet().hub().ca_pin().unwrap().to_string();
    assert_eq!(settings["OCM_EDGE_BROKER_CA_PIN"], pin.as_str());
    let token = settings["OCM_EDGE_JOIN_TOKEN"].as_str().unwrap();
    let tokens = JoinTokens::load_or_create(&hub.hub_dir()).unwrap();
    assert!(
        tokens.check(token, chrono::Utc::now()).is_ok(),
        "the hub takes {token}"
    );
    let lives = expiry(token) - before;
    assert!(
        (2 * 3600 - 60..=2 * 3600 + 60).contains(&lives),
        "a 2h token lives {lives} s"
    );

    // Everything else is the chart's rendering as checked in, object for object: no second copy.
    let plain = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/k3s/agent.yaml"),
    )
    .unwrap();
    let plain = documents(&plain);
    assert_eq!(plain.len(), docs.len());
    for (ours, chart) in docs.iter().zip(&plain) {
        let mut ours = ours.clone();
        match chart["kind"].as_str() {
            Some("Secret") => continue,
            Some("Deployment") => {
                let template = &mut ours["spec"]["template"];
                let annotation = &template["metadata"]["annotations"]["checksum/settings"];
                assert_ne!(
                    annotation,
                    &chart["spec"]["template"]["metadata"]["annotations"]["checksum/settings"],
                    "new settings restart the agent"
                );
                template["metadata"]["annotations"]["checksum/settings"] =
                    chart["spec"]["template"]["metadata"]["annotations"]["checksum/settings"]
                        .clone();
            }
            _ => {}
        }
        assert_eq!(&ours, chart);
    }

    // An agent with those settings reaches the hub and asks to join.
    let agent = start_joining(
        hub.fleet().broker_url(),
        "store-17",
        pin.parse().unwrap(),
        token,
        &hub.scratch().join("store-17"),
    )
    .await;
    agent.shutdown().await.unwrap();
    hub.stop().await;
}

#[tokio::test]
async fn cluster_bootstrap_prints_helm_values_the_agents_chart_renders_into_the_same_secret() {
    let hub = TestHub::start().await;
    let out = hub
        .cli(&[
            "cluster",
            "bootstrap",
            "store-18",
            "--agent-broker",
            BROKER,
            "-o",
            "helm-values",
        ])
        .await;
    assert_success(&out);
    let values: Value = serde_yaml_ng::from_str(&stdout(&out)).unwrap();
    assert_eq!(values["clusterName"], "store-18");
    assert_eq!(values["broker"]["url"], BROKER);
    let pin = hub.fleet().hub().ca_pin().unwrap().to_string();
    assert_eq!(values["broker"]["caPin"], pin.as_str());
    let token = values["joinToken"].as_str().unwrap();
    assert!(
        JoinTokens::load_or_create(&hub.hub_dir())
            .unwrap()
            .check(token, chrono::Utc::now())
            .is_ok()
    );
    // The chart takes the file as it is.
    let test = "cluster_bootstrap_prints_helm_values_the_agents_chart_renders_into_the_same_secret";
    if let Some(helm) = ocm_edge_tests::helm::helm(test) {
        let file = hub.scratch().join("store-18-values.yaml");
        std::fs::write(&file, stdout(&out)).unwrap();
        let rendered = ocm_edge_tests::helm::Rendering {
            chart: "deploy/helm/ocm-edge-agent",
            release: "ocm-edge-agent",
            namespace: "open-cluster-management-agent",
            values: &[],
        }
        .render(&helm, &["-f", file.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("the chart refuses the values: {e}"));
        let docs = documents(&rendered);
        let settings = &only(&docs, "Secret")["stringData"];
        assert_eq!(settings["OCM_EDGE_CLUSTER_NAME"], "store-18");
        assert_eq!(settings["OCM_EDGE_BROKER"], BROKER);
        assert_eq!(settings["OCM_EDGE_BROKER_CA_PIN"], pin.as_str());
        assert_eq!(settings["OCM_EDGE_JOIN_TOKEN"], token);
    }
    hub.stop().await;
}

#[tokio::test]
async fn cluster_bootstrap_refuses_a_bad_name_ttl_or_broker_and_makes_nothing() {
    let hub = TestHub::start().await;
    let bootstrap = |args: Vec<&'static str>| {
        let hub = &hub;
        async move {
            let mut all = vec!["cluster", "bootstrap"];
            all.extend(args);
            hub.cli(&all).await
        }
    };
    let cases: [(Vec<&str>, &[&str]); 8] = [
        (
            vec!["Store_17", "--agent-broker", BROKER],
            &["Store_17", "lower case"],
        ),
        (
            vec!["ocm-edge", "--agent-broker", BROKER],
            &["ocm-edge", "choose another name"],
        ),
        (
            vec!["store-17", "--agent-broker", BROKER, "--ttl", "40d"],
            &["40d", "30 days"],
        ),
        (
            vec!["store-17", "--agent-broker", BROKER, "--ttl", "soon"],
            &["soon", "24h"],
        ),
        (
            vec!["store-17", "--agent-broker", "mqtts://127.0.0.1:8883"],
            &["loopback", "--tls-san", "--allow-loopback"],
        ),
        (
            vec!["store-17", "--agent-broker", "mqtts://localhost"],
            &["loopback"],
        ),
        (
            vec!["store-17", "--agent-broker", "mqtt://hub.example.net:1883"],
            &["TLS only", "mqtts://"],
        ),
        (
            vec!["store-17", "--agent-broker", "hub.example.net"],
            &["--agent-broker", "scheme"],
        ),
    ];
    for (args, needles) in cases {
        let out = bootstrap(args.clone()).await;
        assert_failure_mentioning(&out, needles);
        assert!(stdout(&out).is_empty(), "{args:?} printed {}", stdout(&out));
    }
    // The flag is required, and names what it is for.
    let out = bootstrap(vec!["store-17"]).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--agent-broker <URL>"));
    // Loopback is taken when asked for, for an agent on the hub's own machine.
    let out = bootstrap(vec![
        "store-17",
        "--agent-broker",
        "mqtts://127.0.0.1:8883",
        "--allow-loopback",
    ])
    .await;
    assert_success(&out);

    // Away from a hub's data directory: said, and no key is made there.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = crate::cli_commands::cli_in(
        elsewhere.path(),
        &["cluster", "bootstrap", "store-17", "--agent-broker", BROKER],
    )
    .await;
    assert_failure_mentioning(&out, &["no hub CA", "--data-dir"]);
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "nothing is written"
    );
    hub.stop().await;
}

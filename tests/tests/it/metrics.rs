//! The hub's and the agent's Prometheus endpoints (`--metrics-listen`), scraped over HTTP and
//! read with a parser ocm-edge did not write (`prometheus-parse`): the figures move with what
//! happens (a join, an apply, a refused login), the real agent binary serves nothing unless
//! asked and refuses a bad address at start, and the Grafana dashboard asks only for metrics the
//! hub and the agent export.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;

use ocm_edge_mqtt::TlsFiles;
use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT};
use ocm_edge_tests::manifests::config_map;
use ocm_edge_tests::metrics::{Scraped, get, scrape};
use ocm_edge_tests::probe::{Probe, ProbeOptions};
use ocm_edge_tests::wait::wait_for;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const ANY_PORT: &str = "127.0.0.1:0";

/// A fleet whose hub runs its own broker (TLS, logins, as `ocm-edge hub` does) and serves its
/// metrics on a free port.
async fn fleet_with_hub_metrics() -> (Fleet, SocketAddr) {
    let mut fleet = Fleet::on_broker(
        String::new(),
        FleetOptions {
            hub_broker: true,
            ..FleetOptions::default()
        },
    );
    fleet
        .start_hub_with(|cfg| cfg.metrics_listen = Some(ANY_PORT.parse().unwrap()))
        .await;
    let addr = fleet.hub().metrics_addr().expect("the hub serves metrics");
    (fleet, addr)
}

/// Scrapes `addr` until `holds` says yes; the scrape that did.
async fn wait_scrape(addr: SocketAddr, what: &str, holds: impl Fn(&Scraped) -> bool) -> Scraped {
    let last = std::sync::Mutex::new(String::new());
    wait_for(what, WAIT, || async {
        let scraped = scrape(addr).await;
        *last.lock().unwrap() = match &scraped {
            Ok(s) => s.text.clone(),
            Err(e) => e.clone(),
        };
        scraped.ok().filter(|s| holds(s))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; last scrape:\n{}", last.lock().unwrap()))
}

/// Starts the real agent binary with `flags`; returns it and the address it serves metrics on,
/// read from its log line.
async fn real_agent(
    fleet: &Fleet,
    cluster: &str,
    data_dir: &Path,
    flags: &[&str],
) -> (tokio::process::Child, SocketAddr) {
    let mut child = fleet
        .agent_command(cluster, data_dir)
        .args(["--applier", "sim", "--reconcile-seconds", "0.5"])
        // Available at the hub within seconds of acceptance, as the harness's agents are.
        .args(["--lease-duration-seconds", "5"])
        .args(flags)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agent binary runs");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr piped")).lines();
    let url = tokio::time::timeout(WAIT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("serving Prometheus metrics")
                && let Some(url) = line.split("url=").nth(1)
            {
                return Some(url.trim().to_owned());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("the agent logs where it serves its metrics");
    // Keep reading so the agent never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/metrics")
        .parse()
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    (child, addr)
}

#[tokio::test]
async fn a_join_an_apply_and_a_refused_login_move_the_hub_and_agent_metrics() {
    let (fleet, hub) = fleet_with_hub_metrics().await;
    let before = scrape(hub).await.unwrap();
    let joins = before.sum("ocm_edge_join_requests_total", &[]);
    let refused = before.sum("ocm_edge_broker_refused_logins_total", &[]);
    assert_eq!(before.sum("ocm_edge_clusters", &[]), 0.0, "{}", before.text);

    // A join: the real agent binary asks, the hub counts it and shows a pending cluster.
    let dir = tempfile::tempdir().unwrap();
    let (_agent, agent) = real_agent(
        &fleet,
        "edge-1",
        &dir.path().join("edge-1"),
        &["--metrics-listen", ANY_PORT],
    )
    .await;
    wait_scrape(hub, "the join request counted and edge-1 pending", |s| {
        s.sum("ocm_edge_join_requests_total", &[]) >= joins + 1.0
            && s.sum("ocm_edge_clusters", &[("state", "Pending")]) == 1.0
    })
    .await;
    fleet.accept("edge-1").await;
    wait_scrape(hub, "edge-1 accepted and available", |s| {
        s.sum("ocm_edge_clusters", &[("state", "Pending")]) == 0.0
            && s.sum(
                "ocm_edge_clusters",
                &[("state", "Accepted"), ("available", "True")],
            ) == 1.0
    })
    .await;
    let agent_before = wait_scrape(agent, "the agent connected", |s| {
        s.sum("ocm_edge_agent_connected", &[]) == 1.0
    })
    .await;
    let applied = agent_before.sum("ocm_edge_agent_specs_applied_total", &[]);

    // An apply: the agent counts the version it applied and the status it sent, the hub the
    // spec it sent and the work as Available.
    fleet
        .create_work(
            "settings",
            &["edge-1"],
            vec![config_map("default", "settings", json!({"mode": "on"}))],
        )
        .await;
    let agent_after = wait_scrape(agent, "the agent applied the work", |s| {
        s.sum("ocm_edge_agent_specs_applied_total", &[]) == applied + 1.0
    })
    .await;
    let bundles = "io.open-cluster-management.works.v1alpha1.manifestbundles";
    assert!(
        agent_after.sum(
            "cloudevents_received_total",
            &[("type", bundles), ("subresource", "spec")]
        ) >= 1.0,
        "{}",
        agent_after.text
    );
    let hub_after = wait_scrape(hub, "the work Available at the hub", |s| {
        s.sum("ocm_edge_works", &[("phase", "Available")]) == 1.0
    })
    .await;
    assert!(
        hub_after.sum(
            "cloudevents_sent_total",
            &[
                ("type", bundles),
                ("subresource", "spec"),
                ("action", "create_request"),
                ("consumer", "*"),
            ]
        ) >= 1.0,
        "{}",
        hub_after.text
    );
    wait_scrape(agent, "the agent sent the work's status", |s| {
        s.sum(
            "cloudevents_sent_total",
            &[("type", bundles), ("subresource", "status")],
        ) >= 1.0
    })
    .await;

    // A refused login on the hub's embedded broker.
    let intruder = Probe::connect_with(
        fleet.broker_url(),
        ProbeOptions {
            client_id: "intruder-agent".to_owned(),
            credentials: Some(("intruder".to_owned(), "not-a-proof".to_owned())),
            tls: TlsFiles {
                ca_file: fleet.options().broker_ca_file.clone(),
                ..TlsFiles::default()
            },
            ..ProbeOptions::default()
        },
    )
    .await;
    assert!(intruder.is_err(), "a wrong login got in");
    wait_scrape(hub, "the refused login counted", |s| {
        s.sum("ocm_edge_broker_refused_logins_total", &[]) == refused + 1.0
    })
    .await;
}

#[tokio::test]
async fn the_agent_serves_no_metrics_unless_asked_and_the_hub_only_at_slash_metrics() {
    let (fleet, hub) = fleet_with_hub_metrics().await;
    let (status, body) = get(hub, "/").await.unwrap();
    assert_eq!(status, 404, "{body}");
    let dir = tempfile::tempdir().unwrap();
    let mut agent = fleet
        .agent_command("edge-quiet", &dir.path().join("edge-quiet"))
        .args(["--applier", "sim"])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = agent.id().expect("running");
    // Once it has asked to join, it is up and running.
    wait_scrape(hub, "edge-quiet asked to join", |s| {
        s.sum("ocm_edge_clusters", &[("state", "Pending")]) == 1.0
    })
    .await;
    assert_eq!(
        listening_sockets(pid),
        Vec::<u64>::new(),
        "the agent listens on no TCP port by default"
    );
    agent.kill().await.unwrap();
    let out = agent.wait_with_output().await.unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(!log.contains("serving Prometheus metrics"), "{log}");
}

/// The inodes of the TCP sockets process `pid` listens on (its descriptors matched against the
/// kernel's socket tables).
fn listening_sockets(pid: u32) -> Vec<u64> {
    let owned: BTreeSet<u64> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the agent's descriptors")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|target| {
            let t = target.to_string_lossy().into_owned();
            t.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect();
    let mut listening = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // `st` 0A is LISTEN; the inode is the tenth field.
            if fields.get(3) == Some(&"0A")
                && let Some(inode) = fields.get(9).and_then(|i| i.parse::<u64>().ok())
                && owned.contains(&inode)
            {
                listening.push(inode);
            }
        }
    }
    listening
}

#[tokio::test]
async fn a_bad_or_taken_metrics_address_stops_the_agent_at_start_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind(ANY_PORT).unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    for (value, says) in [
        ("9464", "is not an address to serve metrics on"),
        (taken.as_str(), "cannot serve Prometheus metrics on"),
    ] {
        let out = tokio::process::Command::new(ocm_edge_tests::process::agent_binary())
            .args(["--cluster-name", "edge-bad", "--applier", "sim"])
            .args(["--broker", "mqtt://127.0.0.1:1"])
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--metrics-listen", value])
            .env_remove("OCM_EDGE_METRICS_LISTEN")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(WAIT, out).await.unwrap().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{value}: the agent started: {stderr}"
        );
        assert!(stderr.contains(says), "{value}: {stderr}");
        assert!(stderr.contains("--metrics-listen"), "{value}: {stderr}");
        assert!(stderr.contains(value), "{value}: {stderr}");
    }
}

#[tokio::test]
async fn a_taken_metrics_address_stops_the_hub_at_start_naming_it() {
    let (fleet, _) = fleet_with_hub_metrics().await;
    let taken = fleet.hub().metrics_addr().unwrap();
    let mut cfg = ocm_edge_hub::HubConfig::new(fleet.dir().join("second-hub"));
    cfg.broker = ocm_edge_hub::BrokerConfig::Embedded {
        listen: ANY_PORT.parse().unwrap(),
    };
    cfg.metrics_listen = Some(taken);
    let e = ocm_edge_hub::start_hub(cfg)
        .await
        .expect_err("a second hub on the same metrics address");
    let text = e.to_string();
    assert!(text.contains(&taken.to_string()), "{text}");
    assert!(text.contains("--metrics-listen"), "{text}");
}

/// Every metric name a PromQL expression uses: its identifiers, less label matchers, strings,
/// ranges, function calls, grouping clauses, keywords and Grafana's `$variables`.
fn metric_names(expr: &str) -> BTreeSet<String> {
    // Clauses followed by a list of labels in parentheses.
    const GROUPING: [&str; 6] = [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    // Other operators, and the aggregations, which may come before their `by (...)`.
    const KEYWORDS: [&str; 17] = [
        "bool",
        "offset",
        "and",
        "or",
        "unless",
        "sum",
        "min",
        "max",
        "avg",
        "count",
        "stddev",
        "stdvar",
        "topk",
        "bottomk",
        "quantile",
        "count_values",
        "group",
    ];
    let mut names = BTreeSet::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    let mut after_grouping = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '{' | '[' | '"' => {
                let close = match c {
                    '{' => '}',
                    '[' => ']',
                    _ => '"',
                };
                i += 1;
                while i < chars.len() && chars[i] != close {
                    i += 1;
                }
                i += 1;
            }
            '(' if after_grouping => {
                while i < chars.len() && chars[i] != ')' {
                    i += 1;
                }
                after_grouping = false;
                i += 1;
            }
            '$' => {
                i += 1;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut next = i;
                while next < chars.len() && chars[next] == ' ' {
                    next += 1;
                }
                let is_call = chars.get(next) == Some(&'(');
                if GROUPING.contains(&word.as_str()) {
                    after_grouping = true;
                } else if !is_call && !KEYWORDS.contains(&word.as_str()) {
                    names.insert(word);
                }
            }
            _ => i += 1,
        }
    }
    names
}

#[test]
fn metric_names_are_read_from_promql_without_labels_functions_or_variables() {
    assert_eq!(
        metric_names(
            r#"histogram_quantile(0.99, sum by (le, kind) (rate(ocm_edge_store_commit_duration_seconds_bucket{kind=~"durable|flush"}[$__rate_interval])))"#
        ),
        BTreeSet::from(["ocm_edge_store_commit_duration_seconds_bucket".to_owned()])
    );
    assert_eq!(
        metric_names("sum(ocm_edge_works) - ignoring(phase) cloudevents_sent_total > bool 0"),
        BTreeSet::from([
            "ocm_edge_works".to_owned(),
            "cloudevents_sent_total".to_owned()
        ])
    );
}

/// A family shows in a scrape once it has a series: a placement and a rollout make the hub's,
/// and the status resync a restarted hub asks for makes the agent's.
#[tokio::test]
async fn the_grafana_dashboard_asks_only_for_metrics_the_hub_and_agent_export() {
    let (mut fleet, _) = fleet_with_hub_metrics().await;
    fleet
        .agent("edge-1")
        .configure(|cfg| cfg.metrics_listen = Some(ANY_PORT.parse().unwrap()))
        .start()
        .await;
    // The operator puts the cluster in its set at acceptance.
    fleet
        .accept_labelled(
            "edge-1",
            [(
                "cluster.open-cluster-management.io/clusterset".to_owned(),
                "edge".to_owned(),
            )]
            .into(),
        )
        .await;
    let agent = fleet
        .agent_metrics_addr("edge-1")
        .expect("the agent serves metrics");
    let admin = fleet.admin().await;
    for object in [
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
               "kind": "ManagedClusterSet", "metadata": {"name": "edge"}}),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
               "kind": "ManagedClusterSetBinding",
               "metadata": {"name": "edge", "namespace": "default"}, "spec": {"clusterSet": "edge"}}),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
               "metadata": {"name": "all", "namespace": "default"}, "spec": {"clusterSets": ["edge"]}}),
        json!({"apiVersion": "work.open-cluster-management.io/v1alpha1",
               "kind": "ManifestWorkReplicaSet", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"placementRefs": [{"name": "all"}], "manifestWorkTemplate": {"workload":
                   {"manifests": [config_map("default", "web", json!({"a": "1"}))]}}}}),
    ] {
        admin.apply_object(object).await.unwrap();
    }
    fleet
        .wait_work_condition("edge-1", "web", "Available")
        .await
        .unwrap();
    // A restarted hub asks every cluster for its statuses.
    fleet.stop_hub().await;
    fleet
        .start_hub_with(|cfg| cfg.metrics_listen = Some(ANY_PORT.parse().unwrap()))
        .await;
    let hub = fleet.hub().metrics_addr().expect("the hub serves metrics");
    // The restarted hub's histograms fill as the agent comes back (its spec resync, the
    // store's commits).
    let hub_names = wait_scrape(hub, "the fleet's figures", |s| {
        let names = s.names();
        s.sum("ocm_edge_clusters", &[("state", "Accepted")]) == 1.0
            && s.sum("ocm_edge_rollout_clusters", &[("name", "web")]) == 1.0
            && names.contains("resources_spec_resync_duration_seconds_bucket")
            && names.contains("ocm_edge_store_commit_duration_seconds_bucket")
    })
    .await
    .names();
    let agent_names = wait_scrape(agent, "the agent's status resync", |s| {
        s.names()
            .contains("resources_status_resync_duration_seconds_bucket")
    })
    .await
    .names();
    let exported: BTreeSet<String> = hub_names.union(&agent_names).cloned().collect();

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/grafana/ocm-edge.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let datasource = dashboard["templating"]["list"]
        .as_array()
        .and_then(|vars| vars.iter().find(|v| v["type"] == "datasource"))
        .expect("a datasource variable");
    assert_eq!(datasource["query"], "prometheus", "{datasource}");
    let mut exprs = Vec::new();
    collect_exprs(&dashboard, &mut exprs);
    assert!(exprs.len() >= 10, "the dashboard's queries: {exprs:?}");
    let mut used = BTreeSet::new();
    for expr in &exprs {
        used.extend(metric_names(expr));
    }
    let missing: Vec<&String> = used.difference(&exported).collect();
    assert!(
        missing.is_empty(),
        "the dashboard uses metrics nobody exports: {missing:?}\nexported: {exported:?}"
    );
    for panel in dashboard["panels"].as_array().unwrap() {
        if panel["type"] != "row" {
            assert_eq!(
                panel["datasource"]["uid"], "${datasource}",
                "panel {} must use the datasource variable",
                panel["title"]
            );
        }
    }
}

/// Every `expr` of the dashboard's panels (rows included).
fn collect_exprs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("expr", Value::String(e)) => out.push(e.clone()),
                    _ => collect_exprs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_exprs(v, out)),
        _ => {}
    }
}

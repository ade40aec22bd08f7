//! Per-cluster values (`spec.perCluster` of a ManifestWorkReplicaSet) end to end: twenty
//! simulated clusters in three sets on a real broker, one set rendered by the hub into three
//! registries, a value of one cluster and an override of another; the agents verify the signed,
//! rendered works and apply them. A value some clusters lack fails those clusters alone (they
//! keep what they run, `rollout status` says why) until it is given.

use ocm_edge_tests::fleet::{Fleet, FleetOptions, WAIT};
use ocm_edge_tests::wait::wait_for;
use serde_json::{Value, json};

const SET_LABEL: &str = "cluster.open-cluster-management.io/clusterset";

fn set_of(i: usize) -> &'static str {
    match i {
        1..=7 => "north",
        8..=14 => "south",
        _ => "east",
    }
}

fn name(i: usize) -> String {
    format!("store-{i:02}")
}

fn replica_set(data: Value, per_cluster: Value) -> Value {
    json!({"apiVersion": "work.open-cluster-management.io/v1alpha1",
           "kind": "ManifestWorkReplicaSet",
           "metadata": {"name": "store-config", "namespace": "default"},
           "spec": {"placementRefs": [{"name": "stores"}],
                    "manifestWorkTemplate": {"workload": {"manifests": [
                        {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "store-config", "namespace": "default"},
                         "data": data}]}},
                    "perCluster": per_cluster}})
}

fn per_cluster(timezones: Value) -> Value {
    json!({"values": {"registry": "docker.io", "workers": 1},
           "clusterSets": {"north": {"registry": "north.mirror", "timezone": timezones["north"]},
                           "south": {"registry": "south.mirror", "timezone": timezones["south"]},
                           "east": {"timezone": timezones["east"]}},
           "clusters": {"store-05": {"workers": 4}},
           "overrides": [{"name": "debug-store-12", "clusters": ["store-12"],
                          "mergePatch": {"data": {"debug": "on"}}}]})
}

/// What the agent of `cluster` applied, once `done` holds.
async fn applied(fleet: &Fleet, cluster: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    fleet
        .wait_sim(cluster, what, |sim| {
            sim.get("ConfigMap", "default", "store-config")
                .filter(|cm| done(cm))
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_clusters_in_three_sets_get_their_own_values_and_a_missing_one_fails_only_its_clusters()
 {
    let mut fleet = Fleet::start_with(
        FleetOptions {
            admin_timeout: WAIT,
            ..FleetOptions::default()
        }
        .hub_defaults(),
    )
    .await;
    for i in 1..=20 {
        fleet
            .start_accepted(&name(i), &[(SET_LABEL, set_of(i))])
            .await;
    }
    let admin = fleet.admin().await;
    for set in ["north", "south", "east"] {
        admin
            .apply_object(
                json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
                "kind": "ManagedClusterSet", "metadata": {"name": set}}),
            )
            .await
            .unwrap();
        admin
            .apply_object(
                json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
                "kind": "ManagedClusterSetBinding",
                "metadata": {"name": set, "namespace": "default"}, "spec": {"clusterSet": set}}),
            )
            .await
            .unwrap();
    }
    admin
        .apply_object(
            json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement", "metadata": {"name": "stores", "namespace": "default"},
            "spec": {"clusterSets": ["north", "south", "east"]}}),
        )
        .await
        .unwrap();
    let data = json!({"store": "{{ .ClusterName }}", "set": "{{ .ClusterSet }}",
                      "registry": "{{ .Values.registry }}", "workers": "{{ .Values.workers }} workers"});
    admin
        .apply_object(replica_set(data.clone(), per_cluster(json!({}))))
        .await
        .unwrap();

    let mut shown = Vec::new();
    for i in 1..=20 {
        let cluster = name(i);
        let cm = applied(&fleet, &cluster, "store-config applied", |_| true).await;
        shown.push(format!(
            "{cluster} {}: registry={} workers={:?}{}",
            set_of(i),
            cm["data"]["registry"].as_str().unwrap_or("-"),
            cm["data"]["workers"].as_str().unwrap_or("-"),
            if cm["data"].get("debug").is_some() {
                " debug=on (override)"
            } else {
                ""
            }
        ));
        let expected_registry = match set_of(i) {
            "north" => "north.mirror",
            "south" => "south.mirror",
            _ => "docker.io",
        };
        assert_eq!(cm["data"]["store"], json!(cluster));
        assert_eq!(cm["data"]["set"], json!(set_of(i)));
        assert_eq!(
            cm["data"]["registry"],
            json!(expected_registry),
            "{cluster}"
        );
        let workers = if i == 5 { "4 workers" } else { "1 workers" };
        assert_eq!(cm["data"]["workers"], json!(workers), "{cluster}");
        assert_eq!(
            cm["data"].get("debug").is_some(),
            i == 12,
            "{cluster}: only store-12 has the override"
        );
    }

    eprintln!("what each agent applied:\n  {}", shown.join("\n  "));

    // A new value that set `east` lacks: its six clusters fail, alone, and keep what they run.
    let mut with_timezone = data.clone();
    with_timezone["timezone"] = json!("{{ .Values.timezone }}");
    admin
        .apply_object(replica_set(
            with_timezone.clone(),
            per_cluster(json!({"north": "Europe/Oslo", "south": "Europe/Rome"})),
        ))
        .await
        .unwrap();
    for i in [1, 8] {
        let cm = applied(&fleet, &name(i), "the timezone", |cm| {
            cm["data"].get("timezone").is_some()
        })
        .await;
        assert_eq!(
            cm["data"]["timezone"],
            json!(if i == 1 { "Europe/Oslo" } else { "Europe/Rome" })
        );
    }
    let view = wait_for("the east clusters to fail rendering", WAIT, || async {
        let view = admin
            .get_replica_set(Some("default"), "store-config")
            .await
            .unwrap();
        let failed: Vec<_> = view
            .clusters
            .iter()
            .filter(|c| c.status == "Failed")
            .map(|c| c.cluster.clone())
            .collect();
        (failed.len() == 6).then_some(view)
    })
    .await
    .unwrap();
    for row in &view.clusters {
        let i: usize = row.cluster[6..].parse().unwrap();
        if set_of(i) == "east" {
            assert_eq!(row.status, "Failed", "{row:?}");
            assert!(
                row.message
                    .contains(&format!("cluster {} has no .Values.timezone", row.cluster)),
                "{row:?}"
            );
            assert!(!row.current_template, "{row:?}");
        } else {
            assert!(row.message.is_empty(), "{row:?}");
        }
    }
    for i in 15..=20 {
        let cm = fleet
            .sim(&name(i))
            .get("ConfigMap", "default", "store-config")
            .unwrap();
        assert!(cm["data"].get("timezone").is_none(), "{cm}");
        assert_eq!(
            cm["data"]["store"],
            json!(name(i)),
            "still the previous version"
        );
    }
    // `work render` shows it before anything is sent, and what a cluster would get.
    let e = admin
        .render_replica_set(Some("default"), "store-config", "store-15", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cluster store-15 has no .Values.timezone"),
        "{e}"
    );
    let fixed = replica_set(
        with_timezone,
        per_cluster(json!({"north": "Europe/Oslo", "south": "Europe/Rome", "east": "Asia/Tokyo"})),
    );
    let preview = admin
        .render_replica_set(None, "store-config", "store-15", Some(fixed.clone()))
        .await
        .unwrap();
    assert_eq!(
        preview.spec.workload.manifests[0].0["data"]["timezone"],
        json!("Asia/Tokyo")
    );
    assert!(
        fleet
            .sim("store-15")
            .get("ConfigMap", "default", "store-config")
            .unwrap()["data"]
            .get("timezone")
            .is_none(),
        "rendering sent nothing"
    );

    // Given the value, the failed clusters catch up.
    admin.apply_object(fixed).await.unwrap();
    for i in 15..=20 {
        let cm = applied(&fleet, &name(i), "the east timezone", |cm| {
            cm["data"].get("timezone").is_some()
        })
        .await;
        assert_eq!(cm["data"]["timezone"], json!("Asia/Tokyo"));
    }
    fleet.stop_agents().await;
    fleet.shutdown().await;
}

//! Cluster names are DNS-1123 labels (valid as MQTT topic levels); work names are DNS-1123 subdomains.

use ocm_edge_schemas::validate::{validate_cluster_name, validate_work_name};

#[test]
fn cluster_names_that_are_dns_labels_are_accepted() {
    for name in [
        "edge-1",
        "a",
        "7ff1a8f4-8811-49b4-8c19-9271bc51975e",
        &"x".repeat(63),
    ] {
        assert_eq!(validate_cluster_name(name), Ok(()), "{name}");
    }
}

#[test]
fn cluster_names_with_characters_a_topic_or_namespace_refuses_are_rejected_with_the_rule() {
    assert_eq!(
        validate_cluster_name("edge/1").unwrap_err().to_string(),
        "cluster name \"edge/1\" is invalid: it contains '/'; use lower case letters, digits and '-', \
         starting and ending with a letter or digit, at most 63 characters (it is a Kubernetes namespace and an MQTT topic level)"
    );
    for bad in ["Edge", "edge.1", "edge+", "#", "edge_1"] {
        assert!(validate_cluster_name(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_names_of_ocm_edges_own_broker_identities_are_no_cluster_names() {
    for name in ["ocm-edge-hub", "ocm-edge-operator", "ocm-edge-dashboard"] {
        let e = validate_cluster_name(name).unwrap_err().to_string();
        assert!(
            e.contains("broker identity") && e.contains("choose another name"),
            "{e}"
        );
    }
    assert_eq!(validate_cluster_name("ocm-edge-hub-2"), Ok(()));
}

#[test]
fn the_first_levels_of_ocm_edges_topics_are_no_cluster_names() {
    for name in ["sources", "ocm-edge", "addons"] {
        let e = validate_cluster_name(name).unwrap_err().to_string();
        assert!(
            e.contains("first level of ocm-edge's topics") && e.contains("choose another name"),
            "{e}"
        );
    }
    assert_eq!(validate_cluster_name("addons-1"), Ok(()));
}

#[test]
fn cluster_names_that_are_empty_too_long_or_dash_edged_are_rejected() {
    assert!(
        validate_cluster_name("")
            .unwrap_err()
            .to_string()
            .contains("it is empty")
    );
    assert!(
        validate_cluster_name(&"x".repeat(64))
            .unwrap_err()
            .to_string()
            .contains("it is 64 characters long")
    );
    assert!(
        validate_cluster_name("-edge")
            .unwrap_err()
            .to_string()
            .contains("starts or ends with '-'")
    );
    assert!(validate_cluster_name("edge-").is_err());
}

#[test]
fn work_names_may_contain_dots_like_kubernetes_subdomains() {
    for name in ["web", "web-frontend.v2", "a.b.c", &"x".repeat(253)] {
        assert_eq!(validate_work_name(name), Ok(()), "{name}");
    }
}

#[test]
fn work_names_with_empty_parts_or_bad_characters_are_rejected_with_the_rule() {
    assert_eq!(
        validate_work_name("web..v2").unwrap_err().to_string(),
        "work name \"web..v2\" is invalid: it is empty; use lower case letters, digits, '-' and '.', \
         each '.'-separated part starting and ending with a letter or digit, at most 253 characters"
    );
    for bad in [
        "",
        "Web",
        "web/v2",
        ".web",
        "web.",
        "web.-x",
        &"x".repeat(254),
    ] {
        assert!(validate_work_name(bad).is_err(), "{bad:?}");
    }
}

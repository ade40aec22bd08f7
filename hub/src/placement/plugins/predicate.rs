//! Predicate filter (OCM `pkg/placement/plugins/predicate/predicate.go`): a cluster passes
//! when it matches at least one predicate (predicates are ORed); inside a predicate the label
//! selector and the claim selector are ANDed. No predicates: every cluster passes.
//!
//! Claims are `status.clusterClaims`, matched like labels (OCM's `helpers.NewClusterSelector`
//! turns them into a label set). `celSelector.celExpressions` are ANDed with them, evaluated over
//! `managedCluster` (the ManagedCluster as the hub holds it) with the limits of
//! `ocm_edge_schemas::cel`; as in OCM, an expression that does not compile makes the placement
//! Misconfigured, and one that fails, yields no bool or is over its cost bound for a cluster
//! does not select that cluster.

use std::collections::BTreeMap;

use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::meta::{LabelSelector, LabelSelectorOperator, LabelSelectorRequirement};
use ocm_edge_schemas::api::placement::{
    AddOnPlacementScore, ClusterCelSelector, ClusterSelector, Placement,
};
use ocm_edge_schemas::cel::{self, CelEnv, CelOutput, ClusterScores};

use crate::placement::Misconfiguration;

/// OCM's plugin name.
pub const NAME: &str = "Predicate";

/// Checks every predicate's selectors the way Kubernetes' `LabelSelectorAsSelector` does.
///
/// # Errors
/// Misconfigured (plugin `Predicate`) for an invalid requirement or a CEL expression that does
/// not compile.
pub fn validate(placement: &Placement) -> Result<(), Misconfiguration> {
    for predicate in &placement.spec.predicates {
        validate_selector(&predicate.required_cluster_selector)
            .map_err(|m| Misconfiguration::new(NAME, m))?;
    }
    Ok(())
}

/// Validates a selector: its label and claim requirements and its CEL expressions; the
/// message says which requirement or expression, and where in it.
///
/// # Errors
/// In/NotIn without values, Exists/DoesNotExist with values, an empty key, a CEL expression
/// that does not compile.
pub fn validate_selector(selector: &ClusterSelector) -> Result<(), String> {
    validate_label_selector(&selector.label_selector)?;
    validate_requirements("claim", &selector.claim_selector.match_expressions)?;
    validate_cel_selector(&selector.cel_selector)
}

/// Checks that every expression of a celSelector compiles.
///
/// # Errors
/// OCM's `compilation failed: ...`, with the expression and the position in it.
pub fn validate_cel_selector(selector: &ClusterCelSelector) -> Result<(), String> {
    for expression in &selector.cel_expressions {
        if let Err(e) = &*cel::compile_cached(expression, CelEnv::ClusterSelector) {
            return Err(format!(
                "celSelector expression {expression:?}: compilation failed: {e}"
            ));
        }
    }
    Ok(())
}

/// Validates a label selector's requirements, as [`validate_selector`] does (a cluster set's
/// LabelSelector).
///
/// # Errors
/// In/NotIn without values, Exists/DoesNotExist with values, an empty key.
pub fn validate_label_selector(selector: &LabelSelector) -> Result<(), String> {
    validate_requirements("label", &selector.match_expressions)
}

fn validate_requirements(
    kind: &str,
    requirements: &[LabelSelectorRequirement],
) -> Result<(), String> {
    for r in requirements {
        if r.key.is_empty() {
            return Err(format!("{kind} requirement has an empty key"));
        }
        match r.operator {
            LabelSelectorOperator::In | LabelSelectorOperator::NotIn if r.values.is_empty() => {
                return Err(format!(
                    "{kind} requirement {}: values must be specified when operator is {:?}",
                    r.key, r.operator
                ));
            }
            LabelSelectorOperator::Exists | LabelSelectorOperator::DoesNotExist
                if !r.values.is_empty() =>
            {
                return Err(format!(
                    "{kind} requirement {}: values must be empty when operator is {:?}",
                    r.key, r.operator
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The cluster's claims as a label set (OCM's `convertClaimsToLabels`).
pub fn claims(cluster: &ManagedCluster) -> BTreeMap<String, String> {
    cluster
        .status
        .cluster_claims
        .iter()
        .map(|c| (c.name.clone(), c.value.clone()))
        .collect()
}

/// Whether `cluster` satisfies `selector`: labels, claims and CEL expressions (an empty
/// selector matches every cluster).
pub fn selector_matches(selector: &ClusterSelector, cluster: &ManagedCluster) -> bool {
    first_unmet(selector, cluster).is_none()
}

/// The first term of `selector` that `cluster` does not meet, described for people (a CEL
/// `scores(...)` sees no scores; see [`filter`]).
pub fn first_unmet(selector: &ClusterSelector, cluster: &ManagedCluster) -> Option<String> {
    first_unmet_scored(selector, cluster, &[])
}

/// [`first_unmet`], with the AddOnPlacementScores of the fleet for CEL's `scores(...)`.
fn first_unmet_scored(
    selector: &ClusterSelector,
    cluster: &ManagedCluster,
    scores: &[AddOnPlacementScore],
) -> Option<String> {
    if let Some(term) = first_unmet_in("label", &selector.label_selector, &cluster.metadata.labels)
    {
        return Some(term);
    }
    let claim_selector = LabelSelector {
        match_labels: BTreeMap::new(),
        match_expressions: selector.claim_selector.match_expressions.clone(),
    };
    if let Some(term) = first_unmet_in("claim", &claim_selector, &claims(cluster)) {
        return Some(term);
    }
    first_unmet_cel(&selector.cel_selector, cluster, scores)
}

/// The first CEL expression `cluster` does not meet: false, not a bool, failed or too costly.
fn first_unmet_cel(
    selector: &ClusterCelSelector,
    cluster: &ManagedCluster,
    scores: &[AddOnPlacementScore],
) -> Option<String> {
    if selector.is_empty() {
        return None;
    }
    // The cluster's scores are the AddOnPlacementScores in its namespace, by name.
    let cluster_scores = ClusterScores(
        scores
            .iter()
            .filter(|s| s.metadata.namespace == cluster.name())
            .map(|s| {
                let items = s
                    .status
                    .scores
                    .iter()
                    .map(|i| (i.name.clone(), i64::from(i.value)))
                    .collect();
                (s.metadata.name.clone(), items)
            })
            .collect(),
    );
    let mut managed_cluster = match serde_json::to_value(cluster) {
        Ok(v) => v,
        Err(e) => return Some(format!("celSelector: the cluster cannot be read: {e}")),
    };
    // OCM's ManagedCluster always has its spec and status (Go structs), even when empty.
    if let Some(object) = managed_cluster.as_object_mut() {
        for part in ["metadata", "spec", "status"] {
            object
                .entry(part)
                .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
        }
    }
    for expression in &selector.cel_expressions {
        let outcome = match &*cel::compile_cached(expression, CelEnv::ClusterSelector) {
            Ok(compiled) => compiled
                .evaluate_with_scores(&[("managedCluster", &managed_cluster)], &cluster_scores),
            Err(e) => Err(e.clone()),
        };
        match outcome {
            Ok(CelOutput::Bool(true)) => {}
            Ok(CelOutput::Bool(false)) => return Some(format!("celSelector {expression:?}")),
            Ok(CelOutput::String(_)) => {
                return Some(format!("celSelector {expression:?} (a string, not a bool)"));
            }
            Ok(CelOutput::Other(t)) => {
                return Some(format!("celSelector {expression:?} (a {t}, not a bool)"));
            }
            Err(e) => return Some(format!("celSelector {expression:?} ({e})")),
        }
    }
    None
}

fn first_unmet_in(
    kind: &str,
    selector: &LabelSelector,
    values: &BTreeMap<String, String>,
) -> Option<String> {
    for (k, v) in &selector.match_labels {
        if values.get(k) != Some(v) {
            return Some(format!("{kind} {k}={v}"));
        }
    }
    selector
        .match_expressions
        .iter()
        .find(|r| !r.matches(values.get(&r.key).map(String::as_str)))
        .map(|r| describe(kind, r))
}

fn describe(kind: &str, r: &LabelSelectorRequirement) -> String {
    match r.operator {
        LabelSelectorOperator::In | LabelSelectorOperator::NotIn => {
            format!("{kind} {} {:?} [{}]", r.key, r.operator, r.values.join(","))
        }
        LabelSelectorOperator::Exists | LabelSelectorOperator::DoesNotExist => {
            format!("{kind} {} {:?}", r.key, r.operator)
        }
    }
}

/// Filters one cluster; `scores` are the fleet's AddOnPlacementScores, for CEL's `scores(...)`.
///
/// # Errors
/// Why the cluster does not pass: the first unmet term of each predicate.
pub fn filter(
    placement: &Placement,
    cluster: &ManagedCluster,
    scores: &[AddOnPlacementScore],
) -> Result<(), String> {
    let predicates = &placement.spec.predicates;
    if predicates.is_empty() {
        return Ok(());
    }
    let mut unmet = Vec::with_capacity(predicates.len());
    for predicate in predicates {
        match first_unmet_scored(&predicate.required_cluster_selector, cluster, scores) {
            None => return Ok(()),
            Some(term) => unmet.push(term),
        }
    }
    Err(format!(
        "matches no predicate ({} not met)",
        unmet.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::testkit::{labels, mk_cluster, mk_placement, requirement};
    use LabelSelectorOperator::{DoesNotExist, Exists, In, NotIn};
    use ocm_edge_schemas::api::placement::ClusterClaimSelector;

    fn claims(reqs: Vec<LabelSelectorRequirement>) -> ClusterSelector {
        ClusterSelector {
            claim_selector: ClusterClaimSelector {
                match_expressions: reqs,
            },
            ..Default::default()
        }
    }

    /// OCM `predicate.go`: predicates ORed; label and claim selectors ANDed inside one.
    #[test]
    fn predicates_match_labels_and_claims_as_ocm() {
        let cluster = mk_cluster("c1")
            .label("env", "prod")
            .label("tier", "edge")
            .claim("region", "eu-west")
            .build();
        let label_and_claim = ClusterSelector {
            label_selector: labels(&[("env", "prod")]),
            claim_selector: ClusterClaimSelector {
                match_expressions: vec![requirement("region", In, &["eu-west"])],
            },
            ..Default::default()
        };
        let cases: Vec<(&str, Vec<ClusterSelector>, bool)> = vec![
            ("no predicate", vec![], true),
            (
                "matching label",
                vec![ClusterSelector {
                    label_selector: labels(&[("env", "prod")]),
                    ..Default::default()
                }],
                true,
            ),
            (
                "other label value",
                vec![ClusterSelector {
                    label_selector: labels(&[("env", "dev")]),
                    ..Default::default()
                }],
                false,
            ),
            ("empty selector", vec![ClusterSelector::default()], true),
            (
                "claim In",
                vec![claims(vec![requirement("region", In, &["eu-west", "us"])])],
                true,
            ),
            (
                "claim NotIn",
                vec![claims(vec![requirement("region", NotIn, &["eu-west"])])],
                false,
            ),
            (
                "claim Exists",
                vec![claims(vec![requirement("region", Exists, &[])])],
                true,
            ),
            (
                "claim DoesNotExist",
                vec![claims(vec![requirement("zone", DoesNotExist, &[])])],
                true,
            ),
            (
                "labels are not claims",
                vec![claims(vec![requirement("env", Exists, &[])])],
                false,
            ),
            ("label AND claim", vec![label_and_claim.clone()], true),
            (
                "ORed: second matches",
                vec![
                    claims(vec![requirement("region", In, &["us"])]),
                    label_and_claim,
                ],
                true,
            ),
            (
                "ORed: none matches",
                vec![
                    claims(vec![requirement("region", In, &["us"])]),
                    ClusterSelector {
                        label_selector: labels(&[("tier", "core")]),
                        ..Default::default()
                    },
                ],
                false,
            ),
        ];
        for (case, selectors, want) in cases {
            let mut p = mk_placement("ns", "p");
            for s in selectors {
                p = p.predicate(s);
            }
            assert_eq!(filter(&p.build(), &cluster, &[]).is_ok(), want, "{case}");
        }
    }

    #[test]
    fn a_filtered_cluster_is_told_which_term_of_each_predicate_failed() {
        let cluster = mk_cluster("c1").label("env", "dev").build();
        let p = mk_placement("ns", "p")
            .predicate_labels(&[("env", "prod")])
            .predicate(claims(vec![requirement("region", In, &["eu", "us"])]))
            .build();
        assert_eq!(
            filter(&p, &cluster, &[]).unwrap_err(),
            "matches no predicate (label env=prod; claim region In [eu,us] not met)"
        );
    }

    #[test]
    fn invalid_selectors_and_cel_are_misconfigurations() {
        let in_without_values = mk_placement("ns", "p")
            .predicate(claims(vec![requirement("region", In, &[])]))
            .build();
        let err = validate(&in_without_values).unwrap_err();
        assert_eq!(err.plugin, "Predicate");
        assert!(err.message.contains("region"), "{err}");
        let exists_with_values = mk_placement("ns", "p")
            .predicate(ClusterSelector {
                label_selector: LabelSelector {
                    match_expressions: vec![requirement("env", Exists, &["x"])],
                    ..Default::default()
                },
                ..Default::default()
            })
            .build();
        assert!(validate(&exists_with_values).is_err());
        let mut cel = ClusterSelector::default();
        cel.cel_selector
            .cel_expressions
            .push("managedCluster.metadata.labels['env'] ==".into());
        let err = validate(&mk_placement("ns", "p").predicate(cel).build()).unwrap_err();
        assert_eq!(err.plugin, "Predicate");
        assert!(
            err.message.starts_with(
                "celSelector expression \"managedCluster.metadata.labels['env'] ==\": \
                 compilation failed: ERROR: <input>:1:"
            ),
            "{err}"
        );
        let mut strings = ClusterSelector::default();
        strings
            .cel_selector
            .cel_expressions
            .push("managedCluster.metadata.name.lowerAscii() == 'c1'".into());
        let err = validate(&mk_placement("ns", "p").predicate(strings).build()).unwrap_err();
        assert!(
            err.message
                .contains("undeclared reference to function 'lowerAscii'"),
            "{err}"
        );
    }

    /// The functions OCM's placement environment has beyond CEL's standard library, as edge
    /// fleets use them: the cluster's Kubernetes version (k3s writes `v1.31.2+k3s1`), its
    /// allocatable memory, and a claim that holds JSON.
    #[test]
    fn cel_selectors_compare_versions_and_quantities_and_read_json_claims() {
        let mut cluster = mk_cluster("c1")
            .allocatable("memory", "7934Mi")
            .claim(
                "zones.example.com",
                r#"{"zones": ["eu-west-1a", "eu-west-1b"]}"#,
            )
            .build();
        cluster.status.version.kubernetes = "v1.31.2+k3s1".into();
        for (expression, selected) in [
            (
                "semver(managedCluster.status.version.kubernetes, true).isGreaterThan(semver('1.30.0'))",
                true,
            ),
            (
                "semver(managedCluster.status.version.kubernetes, true).minor() >= 32",
                false,
            ),
            (
                "quantity(managedCluster.status.allocatable.memory).isGreaterThan(quantity('4Gi'))",
                true,
            ),
            (
                "quantity(managedCluster.status.allocatable.memory).compareTo(quantity('8Gi')) < 0",
                true,
            ),
            (
                "managedCluster.status.clusterClaims.exists(c, c.name == 'zones.example.com' \
                 && parseJSON(c.value).zones.exists(z, z.startsWith('eu-')))",
                true,
            ),
        ] {
            assert_eq!(
                selector_matches(&cel(&[expression]), &cluster),
                selected,
                "{expression}: {:?}",
                first_unmet(&cel(&[expression]), &cluster)
            );
        }
        // A version that is not one fails the expression: the cluster is not selected, and
        // the explanation says why.
        cluster.status.version.kubernetes = "unknown".into();
        let why = first_unmet(
            &cel(&["semver(managedCluster.status.version.kubernetes, true).major() == 1"]),
            &cluster,
        )
        .unwrap();
        assert!(why.contains("invalid semver"), "{why}");
    }

    fn cel(expressions: &[&str]) -> ClusterSelector {
        let mut selector = ClusterSelector::default();
        selector.cel_selector.cel_expressions =
            expressions.iter().map(|e| (*e).to_owned()).collect();
        selector
    }

    /// OCM's celSelector: expressions over `managedCluster`, ANDed, and ANDed with the labels.
    #[test]
    fn cel_selectors_read_the_cluster_s_labels_and_claims() {
        let cluster = mk_cluster("c1")
            .label("env", "prod")
            .claim("region", "eu-west")
            .build();
        let by_label = "managedCluster.metadata.labels['env'] == 'prod'";
        let by_claim = "managedCluster.status.clusterClaims.exists(c, c.name == 'region' && c.value.startsWith('eu-'))";
        assert!(selector_matches(&cel(&[by_label, by_claim]), &cluster));
        let staging = "managedCluster.metadata.labels['env'] == 'staging'";
        assert_eq!(
            first_unmet(&cel(&[by_label, staging]), &cluster),
            Some(format!("celSelector {staging:?}"))
        );
        // A failing expression does not select the cluster, and says why.
        let missing = first_unmet(
            &cel(&["managedCluster.metadata.labels['tier'] == 'a'"]),
            &cluster,
        )
        .unwrap();
        assert!(missing.contains("no such key: tier"), "{missing}");
        // Labels and CEL together.
        let mut both = cel(&[by_claim]);
        both.label_selector = labels(&[("env", "staging")]);
        assert!(!selector_matches(&both, &cluster));
        let placement = mk_placement("ns", "p").predicate(cel(&[staging])).build();
        assert!(
            filter(&placement, &cluster, &[])
                .unwrap_err()
                .contains("celSelector")
        );
    }

    #[test]
    fn a_placement_with_a_cel_selector_selects_the_clusters_it_matches() {
        use crate::placement::testkit::{World, t};
        let world = World::bound(
            "ns",
            "edge",
            vec![
                mk_cluster("a").label("env", "prod"),
                mk_cluster("b").label("env", "dev"),
                mk_cluster("c").label("env", "prod").claim("gpu", "true"),
            ],
        );
        let placement = mk_placement("ns", "p")
            .predicate(cel(&[
                "managedCluster.metadata.labels['env'] == 'prod'",
                "!has(managedCluster.status.clusterClaims) \
                 || !managedCluster.status.clusterClaims.exists(c, c.name == 'gpu')",
            ]))
            .build();
        let outcome = world.schedule(&placement, t(1));
        assert!(outcome.misconfiguration.is_none(), "{outcome:?}");
        assert_eq!(outcome.selected(), ["a"], "{:#?}", outcome.explanation);

        let broken = mk_placement("ns", "p")
            .predicate(cel(&["managedCluster.(("]))
            .build();
        let outcome = world.schedule(&broken, t(1));
        assert!(outcome.selected().is_empty());
        let m = outcome.misconfiguration.unwrap();
        assert!(
            m.message.contains("compilation failed: ERROR: <input>:1:"),
            "{m:?}"
        );
    }

    #[test]
    fn applying_a_placement_whose_cel_does_not_compile_is_refused_with_the_position() {
        use crate::core::testkit::{apply_json, core};
        let mut core = core();
        let err = apply_json(
            &mut core,
            serde_json::json!({
                "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"predicates": [{"requiredClusterSelector": {"celSelector": {
                    "celExpressions": ["managedCluster.metadata.name == 'a'", "x =="]}}}]}}),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(
                "spec.predicates[0].requiredClusterSelector: celSelector expression \"x ==\": \
                 compilation failed: ERROR: <input>:1:"
            ),
            "{err}"
        );
        assert_eq!(core.objects().placements().count(), 0);
    }

    #[test]
    fn a_cel_selector_reads_the_cluster_s_add_on_scores() {
        use crate::placement::testkit::{World, mk_score, t};
        let mut world = World::bound(
            "ns",
            "edge",
            vec![mk_cluster("a"), mk_cluster("b"), mk_cluster("c")],
        );
        world.scores = vec![
            mk_score("a", "resource-usage", &[("cpuAvailable", 80)], None),
            mk_score("b", "resource-usage", &[("cpuAvailable", 10)], None),
        ];
        let placement = mk_placement("ns", "p")
            .predicate(cel(&[
                "managedCluster.scores('resource-usage').exists(s, s.name == 'cpuAvailable' && s.value > 50)",
            ]))
            .build();
        let outcome = world.schedule(&placement, t(1));
        assert!(outcome.misconfiguration.is_none(), "{outcome:?}");
        assert_eq!(outcome.selected(), ["a"], "{:#?}", outcome.explanation);
    }
}

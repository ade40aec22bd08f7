//! Predicate filter (OCM `pkg/placement/plugins/predicate/predicate.go`): a cluster passes
//! when it matches at least one predicate (predicates are ORed); inside a predicate the label
//! selector and the claim selector are ANDed. No predicates: every cluster passes.
//!
//! Claims are `status.clusterClaims`, matched like labels (OCM's `helpers.NewClusterSelector`
//! turns them into a label set). CEL selectors are not supported: a placement using them is
//! reported Misconfigured instead of being silently widened.

use std::collections::BTreeMap;

use ocm_edge_schemas::api::cluster::ManagedCluster;
use ocm_edge_schemas::api::meta::{LabelSelector, LabelSelectorOperator, LabelSelectorRequirement};
use ocm_edge_schemas::api::placement::{ClusterSelector, Placement};

use crate::placement::Misconfiguration;

/// OCM's plugin name.
pub const NAME: &str = "Predicate";

/// Checks every predicate's selectors the way Kubernetes' `LabelSelectorAsSelector` does.
///
/// # Errors
/// Misconfigured (plugin `Predicate`) for an invalid requirement or a CEL selector.
pub fn validate(placement: &Placement) -> Result<(), Misconfiguration> {
    for predicate in &placement.spec.predicates {
        let selector = &predicate.required_cluster_selector;
        if !selector.cel_selector.is_empty() {
            return Err(Misconfiguration::new(
                NAME,
                "celSelector is not supported by ocm-edge; use labelSelector or claimSelector",
            ));
        }
        validate_selector(selector).map_err(|m| Misconfiguration::new(NAME, m))?;
    }
    Ok(())
}

/// Validates the label and claim parts of a selector; the message says which requirement.
///
/// # Errors
/// In/NotIn without values, Exists/DoesNotExist with values, an empty key.
pub fn validate_selector(selector: &ClusterSelector) -> Result<(), String> {
    validate_label_selector(&selector.label_selector)?;
    validate_requirements("claim", &selector.claim_selector.match_expressions)
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

/// Whether `cluster` satisfies the label and claim parts of `selector` (an empty selector
/// matches every cluster). CEL expressions are not evaluated here; see [`validate`].
pub fn selector_matches(selector: &ClusterSelector, cluster: &ManagedCluster) -> bool {
    first_unmet(selector, cluster).is_none()
}

/// The first term of `selector` that `cluster` does not meet, described for people.
pub fn first_unmet(selector: &ClusterSelector, cluster: &ManagedCluster) -> Option<String> {
    if let Some(term) = first_unmet_in("label", &selector.label_selector, &cluster.metadata.labels)
    {
        return Some(term);
    }
    let claim_selector = LabelSelector {
        match_labels: BTreeMap::new(),
        match_expressions: selector.claim_selector.match_expressions.clone(),
    };
    first_unmet_in("claim", &claim_selector, &claims(cluster))
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

/// Filters one cluster.
///
/// # Errors
/// Why the cluster does not pass: the first unmet term of each predicate.
pub fn filter(placement: &Placement, cluster: &ManagedCluster) -> Result<(), String> {
    let predicates = &placement.spec.predicates;
    if predicates.is_empty() {
        return Ok(());
    }
    let mut unmet = Vec::with_capacity(predicates.len());
    for predicate in predicates {
        match first_unmet(&predicate.required_cluster_selector, cluster) {
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
            assert_eq!(filter(&p.build(), &cluster).is_ok(), want, "{case}");
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
            filter(&p, &cluster).unwrap_err(),
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
            .push("managedCluster.metadata.name == 'a'".into());
        assert!(
            validate(&mk_placement("ns", "p").predicate(cel).build())
                .unwrap_err()
                .message
                .contains("celSelector")
        );
    }
}

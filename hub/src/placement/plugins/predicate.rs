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
    let label = selector.label_selector.match_expressions.iter();
    let claim = selector.claim_selector.match_expressions.iter();
    for (kind, r) in label
        .map(|r| ("label", r))
        .chain(claim.map(|r| ("claim", r)))
    {
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

//! Validation of works, manifests and names, with errors that say what is wrong, where, and
//! how to fix it.
//!
//! # Names
//! - Cluster names must be Kubernetes DNS-1123 labels (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63
//!   characters): a cluster name is a namespace on an OCM hub, and it is a level of every MQTT
//!   topic, where the protocol (docs/reference/protocol.md section 1, and sdk-go's topic regex)
//!   allow only `[a-z0-9-]+`. A label satisfies both.
//! - Work names must be Kubernetes DNS-1123 subdomains (labels joined by `.`, at most 253
//!   characters), exactly what OCM accepts for a ManifestWork. Work names never appear in the
//!   OCM topics (the resourceid does); in ocm-edge's dashboard topics a subdomain is still a
//!   single valid topic level, because it cannot contain `/`, `+`, `#` or NUL.
//!
//! # Manifests
//! As OCM's hub webhook: at least one manifest, at most [`MAX_MANIFESTS_BYTES`] of compact JSON
//! in total, each a map with `apiVersion`, `kind` and `metadata.name`; `metadata.generateName`
//! is refused because the agent must find each object again by name.
//!
//! # Manifest configs
//! Every CEL expression of `manifestConfigs[].conditionRules` must compile ([`crate::cel`]), and
//! a CEL rule must name its condition, as OCM's API requires. Every JSONPath and JSON Pointer of
//! feedback rules and `ignoreFields` must read ([`crate::jsonpath`]); jq expressions are refused.

use std::fmt;

use serde_json::Value;

use crate::api::work::{
    ConditionRuleType, Manifest, ManifestBundle, ManifestConfigOption, ManifestWork,
};
use crate::cel::{self, CelEnv, CelError};
use crate::jsonpath::{self, KubeJsonPath, PathUse};

/// Limit on the total size of a work's manifests: 500 KiB, as OCM and maestro enforce.
pub const MAX_MANIFESTS_BYTES: usize = 500 * 1024;
/// Longest DNS-1123 label (cluster names).
pub const MAX_CLUSTER_NAME_LEN: usize = 63;
/// Longest DNS-1123 subdomain (work names).
pub const MAX_WORK_NAME_LEN: usize = 253;

/// What was wrong with a work, a bundle or a name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// The work has no manifests.
    #[error(
        "the work has no manifests: add at least one Kubernetes object under spec.workload.manifests"
    )]
    NoManifests,
    /// The manifests are too large in total.
    #[error(
        "the manifests are {total_bytes} bytes in total, over the limit of {limit} bytes (500 KiB): \
         split them over several works or make them smaller"
    )]
    TooLarge {
        /// Compact JSON size of all manifests.
        total_bytes: usize,
        /// [`MAX_MANIFESTS_BYTES`].
        limit: usize,
    },
    /// One manifest is not acceptable.
    #[error("manifests[{index}]{}: {problem}", describe_suffix(.describe))]
    Manifest {
        /// Index in the manifest list.
        index: usize,
        /// `apiVersion kind name` as far as known, e.g. `apps/v1 Deployment web`.
        describe: String,
        /// What is wrong.
        problem: ManifestProblem,
    },
    /// A name is not acceptable.
    #[error("{what} {name:?} is invalid: {reason}")]
    InvalidName {
        /// `cluster name`, `work name`, ...
        what: NameKind,
        /// The offending name.
        name: String,
        /// Why, and what a valid name looks like.
        reason: String,
    },
    /// A condition rule cannot be evaluated.
    #[error("spec.manifestConfigs[{config}].conditionRules[{rule}]{field}: {problem}")]
    ConditionRule {
        /// Index in `manifestConfigs`.
        config: usize,
        /// Index in its `conditionRules`.
        rule: usize,
        /// `.celExpressions[i]`, `.messageExpression` or `.condition`.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// A path of a manifest config (feedback rules, ignoreFields) cannot be read.
    #[error("spec.manifestConfigs[{config}]{field}: {problem}")]
    ManifestConfigPath {
        /// Index in `manifestConfigs`.
        config: usize,
        /// E.g. `.updateStrategy.serverSideApply.ignoreFields[0].jsonPaths[1]`.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// A label key or value is not a Kubernetes one.
    #[error("label {key:?}={value:?} is invalid: {reason}")]
    InvalidLabel {
        /// The label's key.
        key: String,
        /// The label's value.
        value: String,
        /// Why, and what a valid label looks like.
        reason: String,
    },
}

fn describe_suffix(describe: &str) -> String {
    if describe.is_empty() {
        String::new()
    } else {
        format!(" ({describe})")
    }
}

/// What is wrong with one manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestProblem {
    /// Not a map.
    NotAnObject,
    /// A required field is missing or not a non-empty string (`apiVersion`, `kind`, `metadata.name`).
    Missing(&'static str),
    /// `metadata.generateName` is set.
    GenerateName,
}

impl fmt::Display for ManifestProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManifestProblem::NotAnObject => f.write_str(
                "is not a Kubernetes object: write each manifest as a map with apiVersion, kind and metadata",
            ),
            ManifestProblem::Missing("apiVersion") => {
                f.write_str("apiVersion is missing: set it, e.g. apiVersion: apps/v1")
            }
            ManifestProblem::Missing("kind") => {
                f.write_str("kind is missing: set it, e.g. kind: Deployment")
            }
            ManifestProblem::Missing("metadata.name") => f.write_str(
                "metadata.name is missing: set it, every manifest needs a fixed name so the agent can find the object again",
            ),
            ManifestProblem::Missing(field) => write!(f, "{field} is missing: set it"),
            ManifestProblem::GenerateName => f.write_str(
                "metadata.generateName is not supported: use metadata.name instead, so the agent can find the object again",
            ),
        }
    }
}

/// Which kind of name a [`ValidationError::InvalidName`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// A ManagedCluster name (also the work's namespace).
    Cluster,
    /// A ManifestWork name.
    Work,
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameKind::Cluster => "cluster name",
            NameKind::Work => "work name",
        })
    }
}

/// Checks a ManifestWork: its name, its namespace (the cluster name, when set) and its manifests.
///
/// # Errors
/// The first problem found, in that order.
pub fn validate_manifest_work(work: &ManifestWork) -> Result<(), ValidationError> {
    validate_work_name(&work.metadata.name)?;
    if !work.metadata.namespace.is_empty() {
        validate_cluster_name(&work.metadata.namespace)?;
    }
    validate_manifests(&work.spec.workload.manifests)?;
    validate_manifest_configs(&work.spec.manifest_configs)
}

/// Checks a work's manifest configs: its condition rules ([`validate_condition_rules`]), and
/// every path of its feedback rules and `ignoreFields`: JSONPaths and JSON Pointers must read
/// ([`crate::jsonpath`]), and jq expressions are refused (ocm-edge does not run them: a jq
/// program has no bound on its running time, and the agent runs on small machines).
///
/// # Errors
/// The first problem found, with its place.
pub fn validate_manifest_configs(configs: &[ManifestConfigOption]) -> Result<(), ValidationError> {
    validate_condition_rules(configs)?;
    for (config, option) in configs.iter().enumerate() {
        let problem = |field: String, problem: String| ValidationError::ManifestConfigPath {
            config,
            field,
            problem,
        };
        for (r, rule) in option.feedback_rules.iter().enumerate() {
            for (p, path) in rule.json_paths.iter().enumerate() {
                KubeJsonPath::parse(&path.path, PathUse::Feedback).map_err(|e| {
                    problem(
                        format!(".feedbackRules[{r}].jsonPaths[{p}].path"),
                        e.to_string(),
                    )
                })?;
            }
        }
        let Some(ssa) = option
            .update_strategy
            .as_ref()
            .and_then(|u| u.server_side_apply.as_ref())
        else {
            continue;
        };
        for (f, field) in ssa.ignore_fields.iter().enumerate() {
            let at = format!(".updateStrategy.serverSideApply.ignoreFields[{f}]");
            for (p, path) in field.json_paths.iter().enumerate() {
                KubeJsonPath::parse(path, PathUse::IgnoreFields)
                    .map_err(|e| problem(format!("{at}.jsonPaths[{p}]"), e.to_string()))?;
            }
            for (p, pointer) in field.json_pointers.iter().enumerate() {
                jsonpath::validate_pointer(pointer)
                    .map_err(|e| problem(format!("{at}.jsonPointers[{p}]"), e.to_string()))?;
            }
            if !field.jq_path_expressions.is_empty() {
                return Err(problem(
                    format!("{at}.jqPathExpressions"),
                    JQ_REFUSED.to_owned(),
                ));
            }
        }
    }
    Ok(())
}

/// Why a jq path expression is refused, at `apply` and by the agent.
pub const JQ_REFUSED: &str = "ocm-edge does not run jq expressions (a jq program has no bound on \
     its running time, and the agent runs on small machines): name the fields with jsonPaths \
     (kubectl JSONPath, with filters such as .spec.containers[?(@.name==\"app\")].image) or \
     jsonPointers (/spec/replicas) instead";

/// Checks the condition rules of `configs`: a CEL rule names its condition, and each of its
/// expressions and its message expression compiles.
///
/// # Errors
/// The first problem found, with the rule's place and the expression's line and column.
pub fn validate_condition_rules(configs: &[ManifestConfigOption]) -> Result<(), ValidationError> {
    for (config, option) in configs.iter().enumerate() {
        for (rule_index, rule) in option.condition_rules.iter().enumerate() {
            let problem = |field: String, problem: String| ValidationError::ConditionRule {
                config,
                rule: rule_index,
                field,
                problem,
            };
            if rule.type_ == ConditionRuleType::Cel {
                if rule.condition.is_empty() {
                    return Err(problem(
                        ".condition".into(),
                        "condition is required for CEL rules: name the condition to set".into(),
                    ));
                }
                if rule.cel_expressions.is_empty() {
                    return Err(problem(
                        ".celExpressions".into(),
                        "a CEL rule needs at least one expression".into(),
                    ));
                }
            }
            for (i, expression) in rule.cel_expressions.iter().enumerate() {
                cel::compile(expression, CelEnv::ConditionRule).map_err(|e: CelError| {
                    problem(format!(".celExpressions[{i}]"), e.to_string())
                })?;
            }
            if !rule.message_expression.is_empty() {
                cel::compile(&rule.message_expression, CelEnv::ConditionMessage)
                    .map_err(|e| problem(".messageExpression".into(), e.to_string()))?;
            }
        }
    }
    Ok(())
}

/// Checks the manifests of a ManifestBundle (a spec event's data).
///
/// # Errors
/// The first problem found.
pub fn validate_bundle(bundle: &ManifestBundle) -> Result<(), ValidationError> {
    validate_manifests(&bundle.manifests)
}

/// Checks a list of manifests: not empty, at most [`MAX_MANIFESTS_BYTES`] in total, each with
/// apiVersion, kind and metadata.name and without generateName.
///
/// # Errors
/// The first problem found; per-manifest problems come before the total size.
pub fn validate_manifests(manifests: &[Manifest]) -> Result<(), ValidationError> {
    if manifests.is_empty() {
        return Err(ValidationError::NoManifests);
    }
    for (index, manifest) in manifests.iter().enumerate() {
        if let Some(problem) = manifest_problem(manifest) {
            return Err(ValidationError::Manifest {
                index,
                describe: describe_manifest(manifest),
                problem,
            });
        }
    }
    validate_manifests_size(manifests)
}

/// Checks only the total size of a list of manifests ([`MAX_MANIFESTS_BYTES`] as compact JSON):
/// the limit an agent enforces on what any source sends it, whatever else the source allows.
///
/// # Errors
/// [`ValidationError::TooLarge`].
pub fn validate_manifests_size(manifests: &[Manifest]) -> Result<(), ValidationError> {
    let total_bytes: usize = manifests
        .iter()
        .map(|m| serde_json::to_vec(&m.0).map_or(0, |b| b.len()))
        .sum();
    if total_bytes > MAX_MANIFESTS_BYTES {
        return Err(ValidationError::TooLarge {
            total_bytes,
            limit: MAX_MANIFESTS_BYTES,
        });
    }
    Ok(())
}

fn manifest_problem(manifest: &Manifest) -> Option<ManifestProblem> {
    let Value::Object(object) = &manifest.0 else {
        return Some(ManifestProblem::NotAnObject);
    };
    let non_empty = |v: Option<&Value>| v.and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    if !non_empty(object.get("apiVersion")) {
        return Some(ManifestProblem::Missing("apiVersion"));
    }
    if !non_empty(object.get("kind")) {
        return Some(ManifestProblem::Missing("kind"));
    }
    let metadata = object.get("metadata");
    if metadata
        .and_then(|m| m.get("generateName"))
        .is_some_and(|g| !g.is_null())
    {
        return Some(ManifestProblem::GenerateName);
    }
    if !non_empty(metadata.and_then(|m| m.get("name"))) {
        return Some(ManifestProblem::Missing("metadata.name"));
    }
    None
}

/// `apiVersion kind name` for messages, leaving out what is missing.
pub fn describe_manifest(manifest: &Manifest) -> String {
    [manifest.api_version(), manifest.kind(), manifest.name()]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Checks a cluster name: a DNS-1123 label (see the module docs).
///
/// # Errors
/// [`ValidationError::InvalidName`] saying which rule is broken.
pub fn validate_cluster_name(name: &str) -> Result<(), ValidationError> {
    if is_reserved_identity_name(name) {
        return Err(ValidationError::InvalidName {
            what: NameKind::Cluster,
            name: name.to_string(),
            reason: "it is the broker identity of one of ocm-edge's own parties (hub, CLI, \
                     dashboard), which has other rights on the broker; choose another name"
                .to_string(),
        });
    }
    if RESERVED_TOPIC_ROOTS.contains(&name) {
        return Err(ValidationError::InvalidName {
            what: NameKind::Cluster,
            name: name.to_string(),
            reason: "it is the first level of ocm-edge's topics, and a broker that gives each \
                     username the topics below its own name (Mosquitto's certificate listener, \
                     for add-on agents) would give such a cluster all of them; choose another name"
                .to_string(),
        });
    }
    let rule = "use lower case letters, digits and '-', starting and ending with a letter or digit, \
                at most 63 characters (it is a Kubernetes namespace and an MQTT topic level)";
    dns1123_label_problem(name, MAX_CLUSTER_NAME_LEN).map_or(Ok(()), |problem| {
        Err(ValidationError::InvalidName {
            what: NameKind::Cluster,
            name: name.to_string(),
            reason: format!("{problem}; {rule}"),
        })
    })
}

/// Broker usernames of ocm-edge's own parties: the hub, the CLI (operators) and dashboards. A
/// broker that gives rights by username (`ocm_edge_mqtt::acl`, `broker-config/`) would give a
/// cluster of such a name that party's rights, so no cluster may have one.
pub const RESERVED_IDENTITY_NAMES: [&str; 3] =
    ["ocm-edge-hub", "ocm-edge-operator", "ocm-edge-dashboard"];

/// The first levels of ocm-edge's topics (OCM's `sources/`, ocm-edge's own, add-ons'): no
/// cluster may be named like one.
pub const RESERVED_TOPIC_ROOTS: [&str; 3] = ["sources", "ocm-edge", "addons"];

/// Whether `name` is one of [`RESERVED_IDENTITY_NAMES`].
pub fn is_reserved_identity_name(name: &str) -> bool {
    RESERVED_IDENTITY_NAMES.contains(&name)
}

/// Checks a work name: a DNS-1123 subdomain (see the module docs).
///
/// # Errors
/// [`ValidationError::InvalidName`] saying which rule is broken.
pub fn validate_work_name(name: &str) -> Result<(), ValidationError> {
    let rule = "use lower case letters, digits, '-' and '.', each '.'-separated part starting and \
                ending with a letter or digit, at most 253 characters";
    let problem = if name.len() > MAX_WORK_NAME_LEN {
        Some(format!("it is {} characters long", name.len()))
    } else if name.is_empty() {
        Some("it is empty".to_string())
    } else {
        name.split('.')
            .find_map(|part| dns1123_label_problem(part, MAX_WORK_NAME_LEN))
    };
    problem.map_or(Ok(()), |problem| {
        Err(ValidationError::InvalidName {
            what: NameKind::Work,
            name: name.to_string(),
            reason: format!("{problem}; {rule}"),
        })
    })
}

/// Checks a Kubernetes label: the key an optional DNS-1123 subdomain prefix and `/`, then a
/// name of at most 63 characters (letters, digits, `-`, `_`, `.`, starting and ending with a
/// letter or digit); the value empty or such a name.
///
/// # Errors
/// [`ValidationError::InvalidLabel`] saying which part breaks which rule.
pub fn validate_label(key: &str, value: &str) -> Result<(), ValidationError> {
    let invalid = |reason: String| ValidationError::InvalidLabel {
        key: key.to_owned(),
        value: value.to_owned(),
        reason,
    };
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let problem = if prefix.len() > MAX_WORK_NAME_LEN {
            Some(format!("it is {} characters long", prefix.len()))
        } else {
            prefix
                .split('.')
                .find_map(|part| dns1123_label_problem(part, MAX_CLUSTER_NAME_LEN))
        };
        if let Some(problem) = problem {
            return Err(invalid(format!(
                "the key's prefix {prefix:?}: {problem}; a prefix is a DNS subdomain \
                 (lower case letters, digits, '-' and '.') such as example.com"
            )));
        }
    }
    let rule =
        "at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit";
    if let Some(problem) = label_name_problem(name) {
        return Err(invalid(format!(
            "the key's name {name:?}: {problem}; {rule}"
        )));
    }
    if !value.is_empty()
        && let Some(problem) = label_name_problem(value)
    {
        return Err(invalid(format!(
            "the value: {problem}; it is empty or {rule}"
        )));
    }
    Ok(())
}

fn label_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".to_string());
    }
    if name.len() > MAX_CLUSTER_NAME_LEN {
        return Some(format!("it is {} characters long", name.len()));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Some(format!("it contains {bad:?}"));
    }
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !edge_ok(name.chars().next()) || !edge_ok(name.chars().last()) {
        return Some("it does not start and end with a letter or digit".to_string());
    }
    None
}

fn dns1123_label_problem(label: &str, max_len: usize) -> Option<String> {
    if label.is_empty() {
        return Some("it is empty".to_string());
    }
    if label.len() > max_len {
        return Some(format!("it is {} characters long", label.len()));
    }
    if let Some(bad) = label
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Some(format!("it contains {bad:?}"));
    }
    if label.starts_with('-') || label.ends_with('-') {
        return Some("it starts or ends with '-'".to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_checked_as_kubernetes_checks_them() {
        for (k, v) in [
            ("tier", "canary"),
            ("cluster.open-cluster-management.io/clusterset", "eu-west"),
            ("example.com/Zone_A", "B.2"),
            ("empty-value", ""),
        ] {
            assert_eq!(validate_label(k, v), Ok(()), "{k}={v}");
        }
        for (k, v, says) in [
            ("", "x", "the key's name \"\": it is empty"),
            ("-tier", "x", "start and end"),
            ("tier", "a b", "the value: it contains ' '"),
            ("Example.com/tier", "x", "the key's prefix \"Example.com\""),
            ("/tier", "x", "the key's prefix \"\": it is empty"),
            (
                "tier",
                &"v".repeat(64),
                "the value: it is 64 characters long",
            ),
        ] {
            let e = validate_label(k, v).unwrap_err().to_string();
            assert!(e.contains(says), "{k}={v}: {e}");
        }
    }
}

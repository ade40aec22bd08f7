//! A manifest's conditions from its `manifestConfigs[].conditionRules`, as OCM's work agent
//! reads them (its `conditions` package): CEL expressions over the applied object, ANDed, and
//! OCM's well-known rules (`Complete` of Jobs and Pods), which are CEL expressions too. Pure.
//!
//! The hub refuses an expression that does not compile, but the agent never trusts what it
//! is sent: here a bad expression gives the rule's condition False with
//! `ConditionRuleExpressionError` and cel-go's message, and an expression too costly for the
//! object is not run (`CEL evaluation budget exceeded`, see `ocm_edge_schemas::cel`).

use ocm_edge_schemas::api::meta::{Condition, ConditionStatus};
use ocm_edge_schemas::api::work::{
    ConditionRule, ConditionRuleType, ManifestBundle, WORK_COMPLETE,
};
use ocm_edge_schemas::cel::{self, CelEnv, CelOutput};
use serde_json::Value;

use super::resource::ResourceRef;

/// Reason of a rule that was evaluated (the condition is True or False by its expressions).
pub const REASON_EVALUATED: &str = "ConditionRuleEvaluated";
/// Reason of a rule whose expression does not compile, fails or yields no bool.
pub const REASON_EXPRESSION_ERROR: &str = "ConditionRuleExpressionError";
/// Prefix of every reason a rule sets, by which OCM tells them from other conditions.
pub const REASON_PREFIX: &str = "ConditionRule";

/// The conditions `bundle`'s rules give the applied object `obj` of `r`, in rule order. A
/// well-known rule with no rule for the kind sets nothing, as in OCM.
pub fn condition_rules(bundle: &ManifestBundle, r: &ResourceRef, obj: &Value) -> Vec<Condition> {
    bundle
        .manifest_configs
        .iter()
        .filter(|c| r.matches(&c.resource_identifier))
        .flat_map(|c| &c.condition_rules)
        .filter_map(|rule| match rule.type_ {
            ConditionRuleType::Cel => Some(evaluate(rule, obj)),
            ConditionRuleType::WellKnownConditions => {
                well_known_rule(r, rule.condition_type()).map(|mut known| {
                    // As OCM: the user's message overrides the well-known one.
                    if !rule.message.is_empty() {
                        known.message.clone_from(&rule.message);
                        known.message_expression.clear();
                    }
                    if !rule.message_expression.is_empty() {
                        known
                            .message_expression
                            .clone_from(&rule.message_expression);
                    }
                    evaluate(&known, obj)
                })
            }
        })
        .collect()
}

/// OCM's well-known rule for `condition` of `r`'s kind: `Complete` of a batch/v1 Job (Complete
/// or Failed) and of a v1 Pod (Succeeded or Failed).
fn well_known_rule(r: &ResourceRef, condition: &str) -> Option<ConditionRule> {
    if condition != WORK_COMPLETE {
        return None;
    }
    let (expression, message) = match (r.group.as_str(), r.version.as_str(), r.kind.as_str()) {
        ("batch", "v1", "Job") => (
            "hasConditions(object.status) ? object.status.conditions.filter(c, c.type == \
             'Complete' || c.type == 'Failed').exists(c, c.status == 'True') : false",
            "result ? 'Job is finished' : 'Job is not finished'",
        ),
        ("", "v1", "Pod") => (
            "has(object.status.phase) && object.status.phase in ['Succeeded', 'Failed']",
            "has(object.status.phase) ? 'Pod is in phase ' + object.status.phase : ''",
        ),
        _ => return None,
    };
    Some(ConditionRule {
        condition: WORK_COMPLETE.to_owned(),
        type_: ConditionRuleType::Cel,
        cel_expressions: vec![expression.to_owned()],
        message: String::new(),
        message_expression: message.to_owned(),
    })
}

/// One CEL rule: its expressions ANDed (stopping at the first false), then its message.
fn evaluate(rule: &ConditionRule, obj: &Value) -> Condition {
    let type_ = rule.condition_type();
    let failed = |message: String| {
        Condition::new(
            type_,
            ConditionStatus::False,
            REASON_EXPRESSION_ERROR,
            message,
        )
    };
    let mut result = true;
    for expression in &rule.cel_expressions {
        let outcome = match &*cel::compile_cached(expression, CelEnv::ConditionRule) {
            Ok(compiled) => compiled.evaluate(&[("object", obj)]),
            Err(e) => Err(e.clone()),
        };
        match outcome {
            Ok(CelOutput::Bool(true)) => {}
            Ok(CelOutput::Bool(false)) => {
                result = false;
                break;
            }
            Ok(CelOutput::String(_)) => return failed("expected bool result, got string".into()),
            Ok(CelOutput::Other(type_name)) => {
                return failed(format!("expected bool result, got {type_name}"));
            }
            Err(e) => return failed(e.to_string()),
        }
    }
    Condition::new(
        type_,
        ConditionStatus::from_bool(result),
        REASON_EVALUATED,
        message(rule, obj, result),
    )
}

/// The message: the message expression's non-empty string, else `message`, else OCM's
/// `Manifest is [not] <condition>`. A message expression that fails gives its error.
fn message(rule: &ConditionRule, obj: &Value, result: bool) -> String {
    if !rule.message_expression.is_empty() {
        let result_value = Value::Bool(result);
        let outcome =
            match &*cel::compile_cached(&rule.message_expression, CelEnv::ConditionMessage) {
                Ok(c) => c.evaluate(&[("object", obj), ("result", &result_value)]),
                Err(e) => Err(e.clone()),
            };
        match outcome {
            Ok(CelOutput::String(s)) if !s.is_empty() => return s,
            Ok(CelOutput::String(_)) => {}
            Ok(CelOutput::Bool(_)) => {
                return "expected message expression to have a string result, got bool".into();
            }
            Ok(CelOutput::Other(t)) => {
                return format!("expected message expression to have a string result, got {t}");
            }
            Err(e) => return e.to_string(),
        }
    }
    if !rule.message.is_empty() {
        return rule.message.clone();
    }
    let condition = rule.condition_type();
    if result {
        format!("Manifest is {condition}")
    } else {
        format!("Manifest is not {condition}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cel_rule(condition: &str, expressions: &[&str]) -> ConditionRule {
        ConditionRule {
            condition: condition.into(),
            type_: ConditionRuleType::Cel,
            cel_expressions: expressions.iter().map(|e| (*e).to_owned()).collect(),
            ..Default::default()
        }
    }

    fn summary(c: &Condition) -> (&str, ConditionStatus, &str, &str) {
        (&c.type_, c.status, &c.reason, &c.message)
    }

    fn deployment() -> Value {
        json!({"status": {"readyReplicas": 2, "conditions": [{"type": "Available", "status": "True"}]}})
    }

    #[test]
    fn expressions_are_anded_and_the_default_message_says_the_condition() {
        let obj = deployment();
        let yes = evaluate(
            &cel_rule("Ready", &["object.status.readyReplicas > 1", "true"]),
            &obj,
        );
        assert_eq!(
            summary(&yes),
            (
                "Ready",
                ConditionStatus::True,
                REASON_EVALUATED,
                "Manifest is Ready"
            )
        );
        let no = evaluate(
            &cel_rule("Ready", &["true", "object.status.readyReplicas > 5"]),
            &obj,
        );
        assert_eq!(
            summary(&no),
            (
                "Ready",
                ConditionStatus::False,
                REASON_EVALUATED,
                "Manifest is not Ready"
            )
        );
    }

    #[test]
    fn a_message_expression_sees_the_result_and_overrides_the_message() {
        let mut rule = cel_rule(
            "Available",
            &["object.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')"],
        );
        rule.message = "ignored".into();
        rule.message_expression =
            "result ? 'Deployment available' : 'Deployment unavailable'".into();
        let c = evaluate(&rule, &deployment());
        assert_eq!(
            summary(&c),
            (
                "Available",
                ConditionStatus::True,
                REASON_EVALUATED,
                "Deployment available"
            )
        );
    }

    #[test]
    fn a_bad_expression_gives_false_with_the_error_and_never_panics() {
        let obj = deployment();
        let cases = [
            ("object.missing", "no such key: missing"),
            (
                "object.status.readyReplicas",
                "expected bool result, got int",
            ),
            ("object.status ==", "ERROR: <input>:1:"),
            (
                "badcel",
                "ERROR: <input>:1:1: undeclared reference to 'badcel'",
            ),
        ];
        for (expression, message) in cases {
            let c = evaluate(&cel_rule("Active", &[expression]), &obj);
            assert_eq!(
                (c.status, c.reason.as_str()),
                (ConditionStatus::False, REASON_EXPRESSION_ERROR),
                "{expression}"
            );
            assert!(
                c.message.starts_with(message),
                "{expression}: {}",
                c.message
            );
        }
    }

    #[test]
    fn an_expression_too_costly_for_the_object_is_not_run() {
        let items: Vec<i64> = (0..500).collect();
        let obj = json!({ "spec": { "items": items } });
        let c = evaluate(
            &cel_rule(
                "Sorted",
                &[
                    "object.spec.items.all(a, object.spec.items.all(b, object.spec.items.exists(c, a + b == c)))",
                ],
            ),
            &obj,
        );
        assert_eq!(c.reason, REASON_EXPRESSION_ERROR);
        assert!(
            c.message.starts_with("CEL evaluation budget exceeded"),
            "{}",
            c.message
        );
    }

    #[test]
    fn well_known_rules_cover_jobs_and_pods_with_ocm_s_messages() {
        let job = ResourceRef {
            group: "batch".into(),
            version: "v1".into(),
            kind: "Job".into(),
            ..Default::default()
        };
        let rule = well_known_rule(&job, WORK_COMPLETE).unwrap();
        let failed = json!({"status": {"conditions": [{"type": "Failed", "status": "True"}]}});
        let c = evaluate(&rule, &failed);
        assert_eq!(
            summary(&c),
            (
                "Complete",
                ConditionStatus::True,
                REASON_EVALUATED,
                "Job is finished"
            )
        );
        let c = evaluate(&rule, &json!({"status": {"active": 1}}));
        assert_eq!(
            summary(&c),
            (
                "Complete",
                ConditionStatus::False,
                REASON_EVALUATED,
                "Job is not finished"
            )
        );
        let pod = ResourceRef {
            version: "v1".into(),
            kind: "Pod".into(),
            ..Default::default()
        };
        let c = evaluate(
            &well_known_rule(&pod, WORK_COMPLETE).unwrap(),
            &json!({"status": {"phase": "Succeeded"}}),
        );
        assert_eq!(
            summary(&c),
            (
                "Complete",
                ConditionStatus::True,
                REASON_EVALUATED,
                "Pod is in phase Succeeded"
            )
        );
        assert!(well_known_rule(&pod, "Ready").is_none());
        let cm = ResourceRef {
            version: "v1".into(),
            kind: "ConfigMap".into(),
            ..Default::default()
        };
        assert!(well_known_rule(&cm, WORK_COMPLETE).is_none());
    }
}

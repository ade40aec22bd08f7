//! The functions ocm-edge's CEL environments have besides CEL's standard library, as OCM's
//! environments have them:
//!
//! - OCM's `hasConditions(map)` (condition rules), `managedCluster.scores(name)` and
//!   `parseJSON(string)` (placement selectors);
//! - Kubernetes' semver library (both): `semver(s[, normalize])`, `isSemver(s[, normalize])`,
//!   and on a semver `major()`, `minor()`, `patch()`, `isGreaterThan(v)`, `isLessThan(v)`,
//!   `compareTo(v)`;
//! - Kubernetes' quantity library (both): `quantity(s)`, `isQuantity(s)`, and on a quantity
//!   `isInteger()`, `asInteger()`, `asApproximateFloat()`, `sign()`, `add(q|int)`,
//!   `sub(q|int)`, `isGreaterThan(q)`, `isLessThan(q)`, `compareTo(q)`.
//!
//! Kubernetes' other extension libraries (strings, lists, regex, URLs, IP, CIDR, format) are
//! not here: each function is written and costed by hand, and these are the ones OCM's users
//! select clusters and judge workloads with (a Kubernetes version, a memory size, a JSON claim).
//!
//! # Cost
//! The functions that read a string ([`SCANS_STRING`]) cost one step per 64 bytes of the
//! longest string their expression can reach, on top of the node itself; `parseJSON` can make
//! lists as long as that string, so it lengthens the iterations a macro may make too
//! ([`super::CelExpression::cost_bound`]).

use std::cmp::Ordering;
use std::sync::Arc;

use ::cel::extractors::{Arguments, This};
use ::cel::objects::{Opaque, Value as CelValue};
use ::cel::{Context, ExecutionError, ResolveResult};

use super::{CelEnv, cel_value};
use crate::api::meta::Quantity;
use crate::api::quantity::Amount;

/// Kubernetes' semver and quantity functions, in both environments.
const KUBERNETES: [&str; 16] = [
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
    "quantity",
    "isQuantity",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "sign",
    "add",
    "sub",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
];

/// OCM's own functions of `env`.
fn ocm(env: CelEnv) -> &'static [&'static str] {
    match env {
        CelEnv::ConditionRule | CelEnv::ConditionMessage => &["hasConditions"],
        CelEnv::ClusterSelector => &["scores", "parseJSON"],
    }
}

/// Whether `env` declares `name` beyond CEL's standard library.
pub(super) fn declares(env: CelEnv, name: &str) -> bool {
    ocm(env).contains(&name) || KUBERNETES.contains(&name)
}

/// What `env` has beyond CEL's standard library, for error messages.
pub(super) fn describe(env: CelEnv) -> String {
    format!(
        "{}, and Kubernetes' semver and quantity functions",
        ocm(env).join(", ")
    )
}

/// Functions whose work grows with the length of the string they read.
pub(super) const SCANS_STRING: [&str; 6] = [
    "parseJSON",
    "semver",
    "isSemver",
    "quantity",
    "isQuantity",
    "matches",
];

/// Declares `env`'s functions (but `scores`, which needs the cluster's scores) in `context`.
///
/// # Errors
/// A name CEL's standard library has already (a bug here, not in an expression).
pub(super) fn declare(context: &mut Context<'_, '_>, env: CelEnv) -> Result<(), ExecutionError> {
    if env == CelEnv::ClusterSelector {
        declared(context.add_function("parseJSON", parse_json))?;
    } else {
        declared(context.add_function("hasConditions", has_conditions))?;
    }
    declared(context.add_function("semver", semver))?;
    declared(context.add_function("isSemver", is_semver))?;
    declared(context.add_function("major", |This(v): This<CelValue>| {
        semver_of("major", &v).map(|v| v.0.major as i64)
    }))?;
    declared(context.add_function("minor", |This(v): This<CelValue>| {
        semver_of("minor", &v).map(|v| v.0.minor as i64)
    }))?;
    declared(context.add_function("patch", |This(v): This<CelValue>| {
        semver_of("patch", &v).map(|v| v.0.patch as i64)
    }))?;
    declared(context.add_function("quantity", quantity))?;
    declared(context.add_function("isQuantity", |s: Arc<String>| {
        Quantity(s.to_string()).amount().is_ok()
    }))?;
    declared(
        context.add_function("isInteger", |This(v): This<CelValue>| {
            quantity_of("isInteger", &v).map(|q| q.0.whole_units().is_some())
        }),
    )?;
    declared(
        context.add_function("asInteger", |This(v): This<CelValue>| {
            quantity_of("asInteger", &v)?
                .0
                .whole_units()
                .ok_or_else(|| {
                    ExecutionError::function_error(
                        "asInteger",
                        "the quantity is not an integer or does not fit in 64 bits",
                    )
                })
        }),
    )?;
    declared(
        context.add_function("asApproximateFloat", |This(v): This<CelValue>| {
            quantity_of("asApproximateFloat", &v).map(|q| q.0.approximate_f64())
        }),
    )?;
    declared(context.add_function("sign", |This(v): This<CelValue>| {
        quantity_of("sign", &v).map(|q| q.0.signum())
    }))?;
    declared(
        context.add_function("add", |This(v): This<CelValue>, other: CelValue| {
            arithmetic("add", &v, &other, Amount::checked_add)
        }),
    )?;
    declared(
        context.add_function("sub", |This(v): This<CelValue>, other: CelValue| {
            arithmetic("sub", &v, &other, Amount::checked_sub)
        }),
    )?;
    declared(context.add_function(
        "isGreaterThan",
        |This(v): This<CelValue>, other: CelValue| {
            compare("isGreaterThan", &v, &other).map(|o| o == Ordering::Greater)
        },
    ))?;
    declared(
        context.add_function("isLessThan", |This(v): This<CelValue>, other: CelValue| {
            compare("isLessThan", &v, &other).map(|o| o == Ordering::Less)
        }),
    )?;
    declared(
        context.add_function("compareTo", |This(v): This<CelValue>, other: CelValue| {
            compare("compareTo", &v, &other).map(|o| o as i64)
        }),
    )?;
    Ok(())
}

fn declared(result: Result<(), impl std::fmt::Display>) -> Result<(), ExecutionError> {
    result.map_err(|e| ExecutionError::function_error("declare", e.to_string()))
}

/// OCM's `hasConditions(x)`: `x` is a map with a non-empty list `conditions`.
pub(super) fn has_conditions(status: CelValue) -> bool {
    let CelValue::Map(map) = status else {
        return false;
    };
    matches!(
        map.map.get(&::cel::objects::Key::String(Arc::new("conditions".to_owned()))),
        Some(CelValue::List(items)) if !items.is_empty()
    )
}

/// OCM's `parseJSON(s)`: the JSON value `s` holds, as a CEL value.
fn parse_json(s: Arc<String>) -> ResolveResult {
    let value: serde_json::Value = serde_json::from_str(&s).map_err(|e| {
        ExecutionError::function_error("parseJSON", format!("failed to parse json: {e}"))
    })?;
    Ok(cel_value(&value))
}

/// A semantic version, as Kubernetes' CEL semver library has it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Semver(semver::Version);

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Semver"
    }
}

impl Semver {
    /// Semantic versioning's precedence: build metadata does not count.
    fn precedence(&self, other: &Semver) -> Ordering {
        let (a, b) = (&self.0, &other.0);
        (a.major, a.minor, a.patch)
            .cmp(&(b.major, b.minor, b.patch))
            .then_with(|| a.pre.cmp(&b.pre))
    }
}

/// Kubernetes' `semver(s)` and `semver(s, normalize)`: with `normalize`, a leading `v`,
/// missing minor or patch numbers and leading zeros are accepted (`v1.30` is 1.30.0).
fn parse_semver(text: &str, normalize: bool) -> Result<Semver, String> {
    let normalized;
    let text = if normalize {
        normalized = normalize_semver(text);
        normalized.as_str()
    } else {
        text
    };
    semver::Version::parse(text)
        .map(Semver)
        .map_err(|e| format!("invalid semver {text:?}: {e}"))
}

fn normalize_semver(text: &str) -> String {
    let text = text.strip_prefix('v').unwrap_or(text);
    let split_at = text.find(['-', '+']).unwrap_or(text.len());
    let (core, rest) = text.split_at(split_at);
    let mut parts: Vec<String> = core
        .split('.')
        .map(|p| {
            let trimmed = p.trim_start_matches('0');
            if trimmed.is_empty() && !p.is_empty() {
                "0".to_owned()
            } else {
                trimmed.to_owned()
            }
        })
        .collect();
    while parts.len() < 3 {
        parts.push("0".to_owned());
    }
    format!("{}{rest}", parts.join("."))
}

fn normalize_flag(function: &str, args: &[CelValue]) -> Result<bool, ExecutionError> {
    match args.get(1) {
        None => Ok(false),
        Some(CelValue::Bool(b)) => Ok(*b),
        Some(_) => Err(ExecutionError::function_error(
            function,
            "the second argument (normalize) must be a bool",
        )),
    }
}

fn string_arg<'a>(function: &str, args: &'a [CelValue]) -> Result<&'a str, ExecutionError> {
    match args.first() {
        Some(CelValue::String(s)) => Ok(s.as_str()),
        _ => Err(ExecutionError::function_error(
            function,
            "the first argument must be a string",
        )),
    }
}

fn semver(Arguments(args): Arguments) -> ResolveResult {
    let text = string_arg("semver", &args)?;
    let normalize = normalize_flag("semver", &args)?;
    parse_semver(text, normalize)
        .map(|v| CelValue::Opaque(Arc::new(v)))
        .map_err(|e| ExecutionError::function_error("semver", e))
}

fn is_semver(Arguments(args): Arguments) -> ResolveResult {
    let text = string_arg("isSemver", &args)?;
    let normalize = normalize_flag("isSemver", &args)?;
    Ok(CelValue::Bool(parse_semver(text, normalize).is_ok()))
}

fn semver_of<'a>(function: &str, v: &'a CelValue) -> Result<&'a Semver, ExecutionError> {
    match v {
        CelValue::Opaque(o) => o.downcast_ref::<Semver>(),
        _ => None,
    }
    .ok_or_else(|| {
        ExecutionError::function_error(function, "expects a semver, e.g. semver('1.30.0')")
    })
}

/// A Kubernetes quantity, exact.
#[derive(Debug, Clone, PartialEq, Eq)]
struct QuantityValue(Amount);

impl Opaque for QuantityValue {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

fn quantity(s: Arc<String>) -> ResolveResult {
    Quantity(s.to_string())
        .amount()
        .map(|a| CelValue::Opaque(Arc::new(QuantityValue(a))))
        .map_err(|e| ExecutionError::function_error("quantity", e.to_string()))
}

fn quantity_of<'a>(function: &str, v: &'a CelValue) -> Result<&'a QuantityValue, ExecutionError> {
    match v {
        CelValue::Opaque(o) => o.downcast_ref::<QuantityValue>(),
        _ => None,
    }
    .ok_or_else(|| {
        ExecutionError::function_error(function, "expects a quantity, e.g. quantity('4Gi')")
    })
}

/// `q.add(x)` / `q.sub(x)` with a quantity or an int.
fn arithmetic(
    function: &str,
    v: &CelValue,
    other: &CelValue,
    op: fn(Amount, Amount) -> Option<Amount>,
) -> ResolveResult {
    let a = quantity_of(function, v)?.0;
    let b = match other {
        CelValue::Int(i) => Amount::from_units(*i),
        other => quantity_of(function, other)?.0,
    };
    op(a, b)
        .map(|sum| CelValue::Opaque(Arc::new(QuantityValue(sum))))
        .ok_or_else(|| ExecutionError::function_error(function, "the result is too large"))
}

/// Two semvers or two quantities, compared.
fn compare(function: &str, v: &CelValue, other: &CelValue) -> Result<Ordering, ExecutionError> {
    if let (Ok(a), Ok(b)) = (semver_of(function, v), semver_of(function, other)) {
        return Ok(a.precedence(b));
    }
    if let (Ok(a), Ok(b)) = (quantity_of(function, v), quantity_of(function, other)) {
        return Ok(a.0.compare(b.0));
    }
    Err(ExecutionError::function_error(
        function,
        "compares two semvers or two quantities (semver('1.30.0'), quantity('4Gi'))",
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{CelEnv, CelError, CelOutput, compile};

    fn eval(source: &str, object: &serde_json::Value) -> Result<CelOutput, CelError> {
        compile(source, CelEnv::ConditionRule)?.evaluate(&[("object", object)])
    }

    fn is_true(source: &str) -> bool {
        let object = json!({"v": "1.30.2", "k3s": "v1.31.2+k3s1", "memory": "7934Mi"});
        match eval(source, &object) {
            Ok(CelOutput::Bool(b)) => b,
            other => panic!("{source}: {other:?}"),
        }
    }

    #[test]
    fn semvers_compare_as_kubernetes_semver_library_compares_them() {
        for source in [
            "semver(object.v).isGreaterThan(semver('1.29.9'))",
            "semver(object.v).isLessThan(semver('1.30.10'))",
            "semver(object.v).compareTo(semver('1.30.2')) == 0",
            "semver(object.v).major() == 1 && semver(object.v).minor() == 30 && semver(object.v).patch() == 2",
            "semver(object.k3s, true).minor() == 31",
            "semver('v1.30', true) == semver('1.30.0')",
            "semver('1.30.0-rc.1').isLessThan(semver('1.30.0'))",
            "semver('1.0.0+a').compareTo(semver('1.0.0+b')) == 0",
            "isSemver('1.2.3') && !isSemver('v1.2') && isSemver('v1.2', true) && !isSemver('x', true)",
        ] {
            assert!(is_true(source), "{source}");
        }
        let err = eval(
            "semver(object.k3s).major() == 1",
            &json!({"k3s": "v1.31.2"}),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("invalid semver \"v1.31.2\""),
            "{err}"
        );
        let err = eval("semver('1.0.0').isGreaterThan(1)", &json!({})).unwrap_err();
        assert!(
            err.to_string()
                .contains("compares two semvers or two quantities"),
            "{err}"
        );
    }

    #[test]
    fn quantities_are_exact_whatever_their_suffix() {
        for source in [
            "quantity(object.memory).isGreaterThan(quantity('7Gi'))",
            "quantity(object.memory).isLessThan(quantity('8Gi'))",
            "quantity('1Gi').compareTo(quantity('1024Mi')) == 0",
            "quantity('1Gi').isGreaterThan(quantity('1G'))",
            "quantity('1500m').add(quantity('500m')).asInteger() == 2",
            "quantity('2').sub(3).sign() == -1",
            "quantity('2').add(1).isInteger() && !quantity('1.5').isInteger()",
            "quantity('1.5').asApproximateFloat() == 1.5",
            "isQuantity('4Gi') && !isQuantity('4 cores')",
        ] {
            assert!(is_true(source), "{source}");
        }
        let err = eval("quantity('1.5').asInteger() == 1", &json!({})).unwrap_err();
        assert!(err.to_string().contains("not an integer"), "{err}");
        let err = eval("quantity('lots').sign() == 1", &json!({})).unwrap_err();
        assert!(
            err.to_string().contains("is not a Kubernetes quantity"),
            "{err}"
        );
    }

    #[test]
    fn parse_json_reads_a_claim_in_a_cluster_selector_and_nowhere_else() {
        let cluster =
            json!({"metadata": {"annotations": {"zones": "{\"zones\": [\"eu-a\", \"us-b\"]}"}}});
        let run = |source: &str| {
            compile(source, CelEnv::ClusterSelector)?.evaluate(&[("managedCluster", &cluster)])
        };
        assert_eq!(
            run(
                "parseJSON(managedCluster.metadata.annotations.zones).zones.exists(z, z == 'eu-a')"
            ),
            Ok(CelOutput::Bool(true))
        );
        let err = run("parseJSON('{').a == 1").unwrap_err();
        assert!(err.to_string().contains("failed to parse json"), "{err}");
        assert!(compile("parseJSON(object.a).b == 1", CelEnv::ConditionRule).is_err());
    }

    #[test]
    fn a_function_that_reads_a_long_string_costs_by_its_length() {
        // Reading a 500 KiB string for each of 200 items is not run.
        let items: Vec<i64> = (0..200).collect();
        let object = json!({"items": items, "big": "1".repeat(500 * 1024)});
        let err = eval("object.items.all(i, !isQuantity(object.big))", &object).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("CEL evaluation budget exceeded"),
            "{err}"
        );
        // Once is fine (a number that long is too large to be a quantity).
        assert_eq!(
            eval("!isQuantity(object.big)", &object),
            Ok(CelOutput::Bool(true))
        );
        // A list parseJSON makes from a long string counts as long as the string.
        let long = format!("[{}0]", "0,".repeat(20_000));
        let cluster = json!({"metadata": {"annotations": {"list": long}}});
        let err = compile(
            "parseJSON(managedCluster.metadata.annotations.list).all(a, \
             parseJSON(managedCluster.metadata.annotations.list).all(b, a == b))",
            CelEnv::ClusterSelector,
        )
        .unwrap()
        .evaluate(&[("managedCluster", &cluster)])
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("CEL evaluation budget exceeded"),
            "{err}"
        );
    }
}

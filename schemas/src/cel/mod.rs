//! CEL expressions as OCM uses them: a ManifestWork's `conditionRules` (variables `object`, and
//! `result` in a `messageExpression`) and a Placement's `celSelector` (variable
//! `managedCluster`). One implementation for the three sides that read them: the CLI and the
//! hub refuse an expression that does not compile, with its position; the agent and the hub's
//! scheduler evaluate them.
//!
//! # Limits
//! An expression is at most [`MAX_EXPRESSION_BYTES`] long, and before it runs its cost over the
//! given variables is bounded: every macro (`all`, `exists`, `exists_one`, `map`, `filter`)
//! iterates at most as many times as the longest list or map it can reach, so the bound is
//! the number of nodes multiplied, per level of nested macros, by that length. An expression
//! whose bound is over [`COST_LIMIT`] (Kubernetes' per-call limit) is not run and fails with
//! `CEL evaluation budget exceeded`, as OCM's agent reports it, so no expression can hold the
//! agent or the hub. Besides the standard library, only the functions of [`library`] are
//! declared, each costed there (none makes lists out of numbers, such as `lists.range`; the
//! functions that read a string cost by its length, and `parseJSON`'s lists count as long as
//! the string it reads), which keeps that bound sound.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

use ::cel::common::ast::{EntryExpr, Expr, LiteralValue};
use ::cel::extractors::This;
use ::cel::objects::{Key, Map, Value as CelValue};
use ::cel::{Context, Env, IdedExpr, Program};
use serde_json::Value;

mod library;

/// Longest expression accepted, in bytes.
pub const MAX_EXPRESSION_BYTES: usize = 10 * 1024;
/// Largest cost bound an expression may have over its variables (Kubernetes' `PerCallLimit`).
pub const COST_LIMIT: u64 = 1_000_000;

/// Where an expression is written, which names the variables it may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CelEnv {
    /// A condition rule's `celExpressions`: `object`.
    ConditionRule,
    /// A condition rule's `messageExpression`: `object` and `result`.
    ConditionMessage,
    /// A Placement's `celSelector.celExpressions`: `managedCluster`, and OCM's
    /// `managedCluster.scores(name)` ([`CelExpression::evaluate_with_scores`]).
    ClusterSelector,
}

impl CelEnv {
    fn variables(self) -> &'static [&'static str] {
        match self {
            CelEnv::ConditionRule => &["object"],
            CelEnv::ConditionMessage => &["object", "result"],
            CelEnv::ClusterSelector => &["managedCluster"],
        }
    }
}

/// Why an expression was refused, could not run, or failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CelError {
    /// Longer than [`MAX_EXPRESSION_BYTES`].
    #[error("expression is {len} bytes, over the limit of {limit} bytes: shorten it")]
    TooLong {
        /// Its length.
        len: usize,
        /// [`MAX_EXPRESSION_BYTES`].
        limit: usize,
    },
    /// Does not parse, or reads a variable its place does not declare; the message starts with
    /// `ERROR: <input>:line:column:` as cel-go writes it.
    #[error("ERROR: <input>:{line}:{column}: {message}")]
    Compile {
        /// 1-based line.
        line: usize,
        /// 1-based column (0 when unknown).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// Its cost bound over these variables is over [`COST_LIMIT`].
    #[error(
        "CEL evaluation budget exceeded: the expression may take up to {bound} steps over this \
         input, over the limit of {limit}: iterate over smaller lists or nest fewer macros"
    )]
    BudgetExceeded {
        /// The bound.
        bound: u64,
        /// [`COST_LIMIT`].
        limit: u64,
    },
    /// Failed while running (no such key, no such function or overload, ...).
    #[error("{0}")]
    Evaluation(String),
}

/// What an expression evaluated to, as far as OCM's uses need to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CelOutput {
    /// A bool.
    Bool(bool),
    /// A string.
    String(String),
    /// Anything else, by its CEL type name (`int`, `list`, ...).
    Other(&'static str),
}

/// A compiled expression.
#[derive(Debug)]
pub struct CelExpression {
    program: Program,
    env: CelEnv,
}

/// Compiles `source` for `env`: its length, its syntax and the variables it reads.
///
/// # Errors
/// [`CelError::TooLong`], or [`CelError::Compile`] with the position.
pub fn compile(source: &str, env: CelEnv) -> Result<CelExpression, CelError> {
    if source.len() > MAX_EXPRESSION_BYTES {
        return Err(CelError::TooLong {
            len: source.len(),
            limit: MAX_EXPRESSION_BYTES,
        });
    }
    // The parser recurses; a deeply nested expression must not exhaust the stack.
    if nesting(source) > MAX_NESTING {
        return Err(CelError::Compile {
            line: 1,
            column: 0,
            message: format!("expression nests more than {MAX_NESTING} levels: flatten it"),
        });
    }
    let program = standard_env().compile(source).map_err(|errors| {
        let first = errors.errors.first();
        CelError::Compile {
            line: first.map_or(1, |e| usize::try_from(e.pos.0).unwrap_or(1).max(1)),
            column: first.map_or(0, |e| usize::try_from(e.pos.1).unwrap_or(0)),
            message: first.map_or_else(|| errors.to_string(), |e| e.msg.clone()),
        }
    })?;
    let mut undeclared = None;
    let mut scope = Vec::new();
    undeclared_reference(program.expression(), env, &mut scope, &mut undeclared);
    if let Some((name, id)) = undeclared {
        let offset = program
            .source_info()
            .offset_for(id)
            .map_or(0, |(start, _)| start as usize);
        let (line, column) = line_column(source, offset);
        return Err(CelError::Compile {
            line,
            column,
            message: if let Some(function) = name.strip_suffix("()") {
                format!(
                    "undeclared reference to function '{function}': ocm-edge has CEL's standard \
                     library and {}",
                    library::describe(env)
                )
            } else {
                format!(
                    "undeclared reference to '{name}' (this expression may read {})",
                    env.variables().join(", ")
                )
            },
        });
    }
    Ok(CelExpression { program, env })
}

/// A cluster's AddOnPlacementScores for OCM's `scores(name)`: by the score resource's name, its
/// items (name, value).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterScores(pub std::collections::BTreeMap<String, Vec<(String, i64)>>);

fn score_items(items: &[(String, i64)]) -> CelValue {
    CelValue::List(Arc::new(
        items
            .iter()
            .map(|(name, value)| {
                CelValue::Map(Map {
                    map: Arc::new(
                        [
                            (
                                Key::String(Arc::new("name".to_owned())),
                                CelValue::String(Arc::new(name.clone())),
                            ),
                            (
                                Key::String(Arc::new("value".to_owned())),
                                CelValue::Int(*value),
                            ),
                        ]
                        .into_iter()
                        .collect(),
                    ),
                })
            })
            .collect(),
    ))
}

/// A compiled expression, or why it does not compile, shared.
pub type Compiled = Rc<Result<CelExpression, CelError>>;

/// How many compiled expressions [`compile_cached`] keeps per thread before it starts again.
const CACHED_EXPRESSIONS: usize = 512;

/// [`compile`], remembered per thread: the agent evaluates the same rules at every reconcile and
/// the scheduler the same selector for every cluster, and compiling costs more than evaluating.
pub fn compile_cached(source: &str, env: CelEnv) -> Compiled {
    thread_local! {
        static COMPILED: RefCell<HashMap<(CelEnv, String), Compiled>> = RefCell::new(HashMap::new());
    }
    COMPILED.with(|compiled| {
        let mut compiled = compiled.borrow_mut();
        let key = (env, source.to_owned());
        if let Some(hit) = compiled.get(&key) {
            return Rc::clone(hit);
        }
        if compiled.len() >= CACHED_EXPRESSIONS {
            compiled.clear();
        }
        let result = Rc::new(compile(source, env));
        compiled.insert(key, Rc::clone(&result));
        result
    })
}

impl CelExpression {
    /// Runs the expression with `variables` (name, JSON value), after checking its cost bound.
    ///
    /// # Errors
    /// [`CelError::BudgetExceeded`] or [`CelError::Evaluation`].
    pub fn evaluate(&self, variables: &[(&str, &Value)]) -> Result<CelOutput, CelError> {
        self.evaluate_with_scores(variables, &ClusterScores::default())
    }

    /// [`evaluate`](Self::evaluate) with OCM's `scores(name)` answering from `scores` (a
    /// cluster selector's; no other place declares it).
    ///
    /// # Errors
    /// [`CelError::BudgetExceeded`] or [`CelError::Evaluation`].
    pub fn evaluate_with_scores(
        &self,
        variables: &[(&str, &Value)],
        scores: &ClusterScores,
    ) -> Result<CelOutput, CelError> {
        let longest = variables
            .iter()
            .map(|(_, v)| longest_collection(v))
            .chain(scores.0.values().map(Vec::len))
            .max()
            .unwrap_or(0);
        let longest_string = variables
            .iter()
            .map(|(_, v)| longest_string(v))
            .max()
            .unwrap_or(0);
        let bound = self.cost_bound(longest, longest_string);
        if bound > COST_LIMIT {
            return Err(CelError::BudgetExceeded {
                bound,
                limit: COST_LIMIT,
            });
        }
        let mut context = Context::with_env(Arc::clone(standard_env()));
        for (name, value) in variables {
            context.add_variable_from_value(*name, cel_value(value));
        }
        if self.env == CelEnv::ClusterSelector {
            // OCM's ManagedClusterLib: `managedCluster.scores("cpu-memory")` is that
            // AddOnPlacementScore's items of the cluster, as [{name, value}]; none is [].
            let by_resource: Arc<HashMap<String, CelValue>> = Arc::new(
                scores
                    .0
                    .iter()
                    .map(|(resource, items)| (resource.clone(), score_items(items)))
                    .collect(),
            );
            context
                .add_function(
                    "scores",
                    move |This(_cluster): This<CelValue>, resource: Arc<String>| {
                        by_resource
                            .get(resource.as_str())
                            .cloned()
                            .unwrap_or_else(|| CelValue::List(Arc::new(Vec::new())))
                    },
                )
                .map_err(|e| CelError::Evaluation(e.to_string()))?;
        }
        library::declare(&mut context, self.env)
            .map_err(|e| CelError::Evaluation(e.to_string()))?;
        match self.program.execute(&context) {
            Ok(CelValue::Bool(b)) => Ok(CelOutput::Bool(b)),
            Ok(CelValue::String(s)) => Ok(CelOutput::String(s.to_string())),
            Ok(other) => Ok(CelOutput::Other(type_name(&other))),
            Err(e) => Err(CelError::Evaluation(lowercase_first(&e.to_string()))),
        }
    }

    /// The cost bound over variables whose longest list or map has `longest` entries and whose
    /// longest string (or map key) has `longest_string` bytes.
    pub fn cost_bound(&self, longest: usize, longest_string: usize) -> u64 {
        let expr = self.program.expression();
        let mut reach = Reach::default();
        collections(expr, &mut reach);
        let Reach {
            literal,
            literal_string,
            concatenations,
            parses,
        } = reach;
        // A string the expression reads is a variable's, a literal, or made of those by `+`
        // (each `+` adds at most one more of them).
        let longest_string = longest_string
            .max(literal_string)
            .saturating_mul(concatenations as usize + 1);
        // A list a macro iterates over is a variable's, a literal, made by parseJSON from a
        // string (fewer entries than bytes), or grown from those by `+`.
        let made = if parses { longest_string } else { 0 };
        let iterations =
            (longest.max(literal).max(made).max(1) as u64).saturating_mul(concatenations + 1);
        cost(expr, iterations, (longest_string / 64) as u64)
    }
}

const MAX_NESTING: usize = 64;

fn standard_env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(Env::stdlib()))
}

/// Deepest bracket nesting, counted before parsing.
fn nesting(source: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for c in source.chars() {
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let mut line = 1;
    let mut column = 1;
    for c in source.chars().take(offset) {
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    (line, column)
}

/// The first identifier read that is neither a declared variable nor a macro's own.
fn undeclared_reference<'e>(
    e: &'e IdedExpr,
    env: CelEnv,
    scope: &mut Vec<&'e str>,
    found: &mut Option<(String, u64)>,
) {
    if found.is_some() {
        return;
    }
    match &e.expr {
        Expr::Ident(name) => {
            if !name.starts_with('@')
                && !env.variables().contains(&name.as_str())
                && !scope.contains(&name.as_str())
                && !is_type_name(name)
            {
                *found = Some((name.clone(), e.id));
            }
        }
        Expr::Call(call) => {
            if !is_declared_function(&call.func_name, env) {
                *found = Some((format!("{}()", call.func_name), e.id));
                return;
            }
            if let Some(target) = &call.target {
                undeclared_reference(target, env, scope, found);
            }
            for arg in &call.args {
                undeclared_reference(arg, env, scope, found);
            }
        }
        Expr::Comprehension(c) => {
            undeclared_reference(&c.iter_range, env, scope, found);
            undeclared_reference(&c.accu_init, env, scope, found);
            let depth = scope.len();
            scope.push(&c.iter_var);
            if let Some(v) = &c.iter_var2 {
                scope.push(v);
            }
            scope.push(&c.accu_var);
            undeclared_reference(&c.loop_cond, env, scope, found);
            undeclared_reference(&c.loop_step, env, scope, found);
            undeclared_reference(&c.result, env, scope, found);
            scope.truncate(depth);
        }
        Expr::List(list) => {
            for item in &list.elements {
                undeclared_reference(item, env, scope, found);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                match &entry.expr {
                    EntryExpr::StructField(f) => undeclared_reference(&f.value, env, scope, found),
                    EntryExpr::MapEntry(m) => {
                        undeclared_reference(&m.key, env, scope, found);
                        undeclared_reference(&m.value, env, scope, found);
                    }
                }
            }
        }
        Expr::Select(select) => undeclared_reference(&select.operand, env, scope, found),
        Expr::Struct(s) => {
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    undeclared_reference(&f.value, env, scope, found);
                }
            }
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// Whether `name` is an operator, a standard function or one of `env`'s own (OCM's
/// libraries, as far as ocm-edge has them).
fn is_declared_function(name: &str, env: CelEnv) -> bool {
    if name.starts_with(['_', '@', '!', '-']) || library::declares(env, name) {
        return true;
    }
    // The crate has no public lookup by name; declaring a function of a standard name is
    // refused as a conflict, which tells.
    Context::with_env(Arc::clone(standard_env()))
        .add_function(name, || true)
        .is_err()
}

/// CEL's type names, which are identifiers too (`type(x) == string`).
fn is_type_name(name: &str) -> bool {
    matches!(
        name,
        "bool"
            | "int"
            | "uint"
            | "double"
            | "string"
            | "bytes"
            | "list"
            | "map"
            | "null_type"
            | "type"
            | "dyn"
    )
}

/// What an expression can make of its own, for its cost bound.
#[derive(Debug, Default)]
struct Reach {
    /// The longest list or map literal.
    literal: usize,
    /// The longest string literal, in bytes.
    literal_string: usize,
    /// How many `+` calls could grow a list or a string.
    concatenations: u64,
    /// Whether `parseJSON` could make a list.
    parses: bool,
}

fn collections(e: &IdedExpr, reach: &mut Reach) {
    each_child(e, &mut |child| collections(child, reach));
    match &e.expr {
        Expr::List(list) => reach.literal = reach.literal.max(list.elements.len()),
        Expr::Map(map) => reach.literal = reach.literal.max(map.entries.len()),
        Expr::Literal(LiteralValue::String(s)) => {
            reach.literal_string = reach.literal_string.max(s.inner().len());
        }
        Expr::Call(call) if call.func_name == "_+_" => reach.concatenations += 1,
        Expr::Call(call) if call.func_name == "parseJSON" => reach.parses = true,
        _ => {}
    }
}

/// Nodes, with a macro's condition and step counted once per possible iteration, and a
/// function that reads a string ([`library::SCANS_STRING`]) `scan` more.
fn cost(e: &IdedExpr, iterations: u64, scan: u64) -> u64 {
    match &e.expr {
        Expr::Comprehension(c) => {
            let per_iteration = cost(&c.loop_cond, iterations, scan).saturating_add(cost(
                &c.loop_step,
                iterations,
                scan,
            ));
            1u64.saturating_add(cost(&c.iter_range, iterations, scan))
                .saturating_add(cost(&c.accu_init, iterations, scan))
                .saturating_add(iterations.saturating_mul(per_iteration))
                .saturating_add(cost(&c.result, iterations, scan))
        }
        _ => {
            let mut total = match &e.expr {
                Expr::Call(call) if library::SCANS_STRING.contains(&call.func_name.as_str()) => {
                    1u64.saturating_add(scan)
                }
                _ => 1,
            };
            each_child(e, &mut |child| {
                total = total.saturating_add(cost(child, iterations, scan));
            });
            total
        }
    }
}

fn each_child<'e>(e: &'e IdedExpr, f: &mut dyn FnMut(&'e IdedExpr)) {
    match &e.expr {
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                f(target);
            }
            call.args.iter().for_each(&mut *f);
        }
        Expr::Comprehension(c) => {
            for child in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                f(child);
            }
        }
        Expr::List(list) => list.elements.iter().for_each(&mut *f),
        Expr::Map(map) => {
            for entry in &map.entries {
                match &entry.expr {
                    EntryExpr::StructField(field) => f(&field.value),
                    EntryExpr::MapEntry(m) => {
                        f(&m.key);
                        f(&m.value);
                    }
                }
            }
        }
        Expr::Select(select) => f(&select.operand),
        Expr::Struct(s) => {
            for entry in &s.entries {
                if let EntryExpr::StructField(field) = &entry.expr {
                    f(&field.value);
                }
            }
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// The most entries of any list or map in `v` (a string is one value).
/// The longest string or map key in `v`, in bytes.
fn longest_string(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(longest_string).max().unwrap_or(0),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| k.len().max(longest_string(v)))
            .max()
            .unwrap_or(0),
        _ => 0,
    }
}

fn longest_collection(v: &Value) -> usize {
    match v {
        Value::Array(items) => items
            .iter()
            .map(longest_collection)
            .max()
            .unwrap_or(0)
            .max(items.len()),
        Value::Object(map) => map
            .values()
            .map(longest_collection)
            .max()
            .unwrap_or(0)
            .max(map.len()),
        _ => 0,
    }
}

/// A JSON value as cel-go sees an unstructured Kubernetes object: whole numbers are `int`
/// (`uint` only beyond its range), others `double`.
fn cel_value(v: &Value) -> CelValue {
    match v {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => n
            .as_i64()
            .map(CelValue::Int)
            .or_else(|| n.as_u64().map(CelValue::UInt))
            .unwrap_or_else(|| CelValue::Float(n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(cel_value).collect())),
        Value::Object(map) => CelValue::Map(Map {
            map: Arc::new(
                map.iter()
                    .map(|(k, v)| (Key::String(Arc::new(k.clone())), cel_value(v)))
                    .collect(),
            ),
        }),
    }
}

fn type_name(v: &CelValue) -> &'static str {
    match v {
        CelValue::List(_) => "list",
        CelValue::Map(_) => "map",
        CelValue::Function(..) => "function",
        CelValue::Int(_) => "int",
        CelValue::UInt(_) => "uint",
        CelValue::Float(_) => "double",
        CelValue::String(_) => "string",
        CelValue::Bytes(_) => "bytes",
        CelValue::Bool(_) => "bool",
        CelValue::Null => "null_type",
        _ => "object",
    }
}

/// cel-go writes its errors in lower case (`no such key: invalid`); so do we.
fn lowercase_first(message: &str) -> String {
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(source: &str, object: &Value) -> Result<CelOutput, CelError> {
        compile(source, CelEnv::ConditionRule)?.evaluate(&[("object", object)])
    }

    #[test]
    fn an_expression_reads_the_object_and_ocm_s_has_conditions() {
        let job = json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        let rule = "hasConditions(object.status) ? object.status.conditions.filter(c, \
                    c.type == 'Complete' || c.type == 'Failed').exists(c, c.status == 'True') : false";
        assert_eq!(eval(rule, &job), Ok(CelOutput::Bool(true)));
        assert_eq!(
            eval(rule, &json!({"status": {"conditions": []}})),
            Ok(CelOutput::Bool(false))
        );
        assert_eq!(
            eval("object.status", &job).map(|o| matches!(o, CelOutput::Other("map"))),
            Ok(true)
        );
    }

    #[test]
    fn a_syntax_error_is_refused_with_its_line_and_column() {
        let err = compile("object.status ==\n  == 1", CelEnv::ConditionRule).unwrap_err();
        let CelError::Compile { line, column, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!((*line, *column), (2, 3), "{err}");
        assert!(err.to_string().starts_with("ERROR: <input>:2:3:"), "{err}");
    }

    #[test]
    fn a_variable_the_place_does_not_declare_is_refused_where_it_is_read() {
        let err = compile("object.a == 1 && badcel", CelEnv::ConditionRule).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ERROR: <input>:1:18: undeclared reference to 'badcel' (this expression may read object)"
        );
        assert!(compile("result && object.a", CelEnv::ConditionMessage).is_ok());
        assert!(compile("result", CelEnv::ConditionRule).is_err());
        assert!(compile("[1].all(x, x > 0) && type(1) == int", CelEnv::ConditionRule).is_ok());
    }

    #[test]
    fn whole_numbers_are_ints_as_in_cel_go() {
        let object = json!({"spec": {"replicas": 2, "ratio": 0.5}});
        assert_eq!(
            eval(
                "object.spec.replicas == 2 && type(object.spec.replicas) == int",
                &object
            ),
            Ok(CelOutput::Bool(true))
        );
        assert_eq!(
            eval("object.spec.replicas", &object),
            Ok(CelOutput::Other("int"))
        );
    }

    #[test]
    fn a_function_neither_standard_nor_ocm_s_is_refused_by_name() {
        let err = compile("object.v.lowerAscii() == 'a'", CelEnv::ConditionRule).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ERROR: <input>:1:20: undeclared reference to function 'lowerAscii': ocm-edge has \
             CEL's standard library and hasConditions, and Kubernetes' semver and quantity \
             functions"
        );
        assert!(compile("parseJSON(object.v).a == 1", CelEnv::ConditionRule).is_err());
        let ok = "size(object.a) > 0 && object.b.startsWith('x') && object.c.matches('^a') \
                  && int(object.d) == 1 && string(1) == '1' && !(1 in [2]) && -1 < 0 \
                  && has(object.e) && object.f[0] == 1";
        assert!(compile(ok, CelEnv::ConditionRule).is_ok());
        assert!(compile("hasConditions(managedCluster)", CelEnv::ClusterSelector).is_err());
        assert!(compile("managedCluster.scores('x') == []", CelEnv::ClusterSelector).is_ok());
        assert!(compile("object.scores('x') == []", CelEnv::ConditionRule).is_err());
    }

    #[test]
    fn a_cluster_selector_reads_its_add_on_scores_as_ocm_s_scores() {
        let cluster = json!({"metadata": {"name": "c1"}});
        let scores = ClusterScores(
            [(
                "cpu-memory".to_owned(),
                vec![("cpu".to_owned(), 30), ("memory".to_owned(), 70)],
            )]
            .into(),
        );
        let run = |source: &str| {
            compile(source, CelEnv::ClusterSelector)
                .unwrap()
                .evaluate_with_scores(&[("managedCluster", &cluster)], &scores)
        };
        assert_eq!(
            run("managedCluster.scores('cpu-memory').exists(s, s.name == 'cpu' && s.value >= 20)"),
            Ok(CelOutput::Bool(true))
        );
        assert_eq!(
            run("managedCluster.scores('gpu').size() == 0"),
            Ok(CelOutput::Bool(true))
        );
    }

    #[test]
    fn a_missing_key_fails_as_cel_go_says_it() {
        assert_eq!(
            eval("object.invalid.key == 'Active'", &json!({})),
            Err(CelError::Evaluation("no such key: invalid".into()))
        );
    }

    #[test]
    fn nested_macros_over_a_long_list_are_not_run() {
        let items: Vec<i64> = (0..200).collect();
        let object = json!({ "items": items });
        let nested =
            "object.items.all(a, object.items.all(b, object.items.all(c, a + b + c >= 0)))";
        let err = eval(nested, &object).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("CEL evaluation budget exceeded"),
            "{err}"
        );
        // One level over the same list is cheap and runs.
        assert_eq!(
            eval("object.items.all(a, a >= 0)", &object),
            Ok(CelOutput::Bool(true))
        );
    }

    #[test]
    fn an_overlong_or_deeply_nested_expression_is_refused_before_parsing() {
        let long = format!("object.a == '{}'", "x".repeat(MAX_EXPRESSION_BYTES));
        assert!(matches!(
            compile(&long, CelEnv::ConditionRule),
            Err(CelError::TooLong { .. })
        ));
        let deep = format!("{}1{}", "(".repeat(500), ")".repeat(500));
        assert!(matches!(
            compile(&deep, CelEnv::ConditionRule),
            Err(CelError::Compile { .. })
        ));
    }
}

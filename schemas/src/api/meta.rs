//! Kubernetes metadata shared by every OCM object: [`ObjectMeta`], [`Condition`], [`Time`],
//! [`MicroTime`], [`LabelSelector`], [`IntOrString`], and the condition helpers
//! [`set_condition`] / [`find_condition`].
//!
//! Serialisation follows Go's `k8s.io/apimachinery` encoders, because peers hash and compare
//! what we send: `Time` is written at second precision, `MicroTime` at microseconds.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A point in time as Kubernetes' `metav1.Time`: RFC 3339 in UTC, whole seconds.
///
/// Go drops fractions when it encodes a `metav1.Time`, so a value that kept them would not
/// survive a round trip through a Go peer (and would change status hashes). The fraction is
/// therefore truncated on construction; parsing accepts fractions and any offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(DateTime<Utc>);

impl Time {
    /// Truncates `at` to whole seconds.
    pub fn new(at: DateTime<Utc>) -> Self {
        Time(at.trunc_subsecs(0))
    }

    /// Whole seconds since the Unix epoch.
    pub fn from_unix_seconds(secs: i64) -> Self {
        Time(DateTime::from_timestamp(secs, 0).unwrap_or_default())
    }

    /// The instant (always a whole second).
    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }

    /// Parses RFC 3339 (fractional seconds and offsets accepted).
    ///
    /// # Errors
    /// When `text` is not RFC 3339.
    pub fn parse(text: &str) -> Result<Self, chrono::ParseError> {
        DateTime::parse_from_rfc3339(text).map(|t| Time::new(t.with_timezone(&Utc)))
    }
}

impl From<DateTime<Utc>> for Time {
    fn from(at: DateTime<Utc>) -> Self {
        Time::new(at)
    }
}

impl FromStr for Time {
    type Err = chrono::ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Time::parse(s)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Secs, true))
    }
}

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Cow::<'de, str>::deserialize(d)?;
        Time::parse(&text)
            .map_err(|e| serde::de::Error::custom(format!("invalid time {text:?}: {e}")))
    }
}

impl JsonSchema for Time {
    fn schema_name() -> Cow<'static, str> {
        "Time".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "format": "date-time",
            "description": "RFC 3339 time in UTC at second precision (Kubernetes metav1.Time)."
        })
    }
}

/// Kubernetes' `metav1.MicroTime` (used by Lease): RFC 3339 in UTC with exactly six fraction
/// digits, e.g. `2026-11-21T16:53:09.123456Z`. Truncated to microseconds on construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MicroTime(DateTime<Utc>);

impl MicroTime {
    /// Truncates `at` to whole microseconds.
    pub fn new(at: DateTime<Utc>) -> Self {
        MicroTime(at.trunc_subsecs(6))
    }

    /// The instant (always a whole microsecond).
    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }

    /// Parses RFC 3339 (any number of fraction digits, any offset).
    ///
    /// # Errors
    /// When `text` is not RFC 3339.
    pub fn parse(text: &str) -> Result<Self, chrono::ParseError> {
        DateTime::parse_from_rfc3339(text).map(|t| MicroTime::new(t.with_timezone(&Utc)))
    }
}

impl From<DateTime<Utc>> for MicroTime {
    fn from(at: DateTime<Utc>) -> Self {
        MicroTime::new(at)
    }
}

impl fmt::Display for MicroTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Micros, true))
    }
}

impl Serialize for MicroTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MicroTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Cow::<'de, str>::deserialize(d)?;
        MicroTime::parse(&text)
            .map_err(|e| serde::de::Error::custom(format!("invalid time {text:?}: {e}")))
    }
}

impl JsonSchema for MicroTime {
    fn schema_name() -> Cow<'static, str> {
        "MicroTime".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "format": "date-time",
            "description": "RFC 3339 time in UTC with microseconds (Kubernetes metav1.MicroTime)."
        })
    }
}

/// An int32 or a string such as `"25%"` (Kubernetes `intstr.IntOrString`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IntOrString {
    /// A plain number.
    Int(i32),
    /// A string, usually a percentage.
    String(String),
}

impl Default for IntOrString {
    fn default() -> Self {
        IntOrString::Int(0)
    }
}

impl IntOrString {
    /// Resolves the value against `total`: an int is taken as is, `"N%"` is N percent of
    /// `total` rounded up or down (OCM rounds maxConcurrency up), a plain numeric
    /// string is parsed. `None` when the string is neither.
    pub fn scaled_value(&self, total: i32, round_up: bool) -> Option<i32> {
        match self {
            IntOrString::Int(n) => Some(*n),
            IntOrString::String(s) => {
                if let Some(pct) = s.strip_suffix('%') {
                    // OCM's rollout code parses the percentage as a float and rounds up.
                    let pct: f64 = pct.trim().parse().ok().filter(|p: &f64| p.is_finite())?;
                    let scaled = pct / 100.0 * f64::from(total);
                    let v = if round_up {
                        scaled.ceil()
                    } else {
                        scaled.floor()
                    };
                    (v >= f64::from(i32::MIN) && v <= f64::from(i32::MAX)).then_some(v as i32)
                } else {
                    s.trim().parse().ok()
                }
            }
        }
    }
}

/// Status of a condition: `"True"`, `"False"` or `"Unknown"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Nobody knows (the default, as in Kubernetes).
    #[default]
    Unknown,
}

impl ConditionStatus {
    /// `True` for true, `False` for false.
    pub fn from_bool(b: bool) -> Self {
        if b {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        }
    }

    /// The wire string.
    pub fn as_str(&self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

impl fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Kubernetes `metav1.Condition`.
///
/// `reason` and `message` are always written (Go has no `omitempty` on them, and status hashes
/// depend on it); `lastTransitionTime` is written when set.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type in CamelCase, e.g. `Applied`.
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: ConditionStatus,
    /// The `.metadata.generation` the condition was set for; 0 (omitted) when unknown.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub observed_generation: i64,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// A CamelCase reason for the last transition.
    #[serde(default)]
    pub reason: String,
    /// Human readable details.
    #[serde(default)]
    pub message: String,
}

impl Condition {
    /// A condition without time or generation (stamped by [`set_condition`]).
    pub fn new(
        type_: impl Into<String>,
        status: ConditionStatus,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Condition {
            type_: type_.into(),
            status,
            observed_generation: 0,
            last_transition_time: None,
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// Sets `observedGeneration`.
    pub fn with_observed_generation(mut self, generation: i64) -> Self {
        self.observed_generation = generation;
        self
    }

    /// Whether the status is `True`.
    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }
}

pub(crate) fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

/// The condition of type `type_`, if present.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of type `type_` is present with status `True`.
pub fn is_condition_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(Condition::is_true)
}

/// Adds or updates the condition of `new.type_`, as Go's `meta.SetStatusCondition` does:
/// `lastTransitionTime` is kept when the status is unchanged and set to `new`'s time (or `now`
/// when `new` has none) when it changes or the condition is new. Reason, message and
/// observedGeneration are always taken from `new`.
///
/// Returns whether anything changed, so callers know whether to publish.
pub fn set_condition(conditions: &mut Vec<Condition>, new: Condition, now: Time) -> bool {
    let stamped = new.last_transition_time.unwrap_or(now);
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        None => {
            conditions.push(Condition {
                last_transition_time: Some(stamped),
                ..new
            });
            true
        }
        Some(existing) => {
            let mut changed = false;
            if existing.status != new.status {
                existing.status = new.status;
                existing.last_transition_time = Some(stamped);
                changed = true;
            } else if existing.last_transition_time.is_none() {
                existing.last_transition_time = Some(stamped);
                changed = true;
            }
            if existing.reason != new.reason {
                existing.reason = new.reason;
                changed = true;
            }
            if existing.message != new.message {
                existing.message = new.message;
                changed = true;
            }
            if existing.observed_generation != new.observed_generation {
                existing.observed_generation = new.observed_generation;
                changed = true;
            }
            changed
        }
    }
}

/// Removes the condition of type `type_`; returns whether it was there.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// Kubernetes `metav1.OwnerReference`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// API version of the owner.
    pub api_version: String,
    /// Kind of the owner.
    pub kind: String,
    /// Name of the owner.
    pub name: String,
    /// UID of the owner.
    pub uid: String,
    /// Whether the owner is the managing controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// Whether the owner cannot be deleted before this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

/// Kubernetes `metav1.ObjectMeta`. Fields ocm-edge does not use (managedFields, generateName,
/// selfLink, ...) are kept in `extra` so a round trip loses nothing.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Object name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Namespace (for works: the cluster name).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Unique id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Opaque version string of the object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Spec generation; 0 (omitted) when unset.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub generation: i64,
    /// When the object was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    /// When deletion was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<Time>,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Finalizers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    /// Owners.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    /// Every other metadata field, kept verbatim.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl ObjectMeta {
    /// Metadata with a name (cluster-scoped objects).
    pub fn named(name: impl Into<String>) -> Self {
        ObjectMeta {
            name: name.into(),
            ..Default::default()
        }
    }

    /// Metadata with a namespace and a name.
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectMeta {
            name: name.into(),
            namespace: namespace.into(),
            ..Default::default()
        }
    }
}

/// Operator of a [`LabelSelectorRequirement`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum LabelSelectorOperator {
    /// The label's value is in `values`.
    #[default]
    In,
    /// The label's value is not in `values` (or the label is absent).
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

/// One requirement of a [`LabelSelector`] (also used by OCM's claim selectors).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// The label (or claim) key.
    pub key: String,
    /// How `key` relates to `values`.
    pub operator: LabelSelectorOperator,
    /// Values for In and NotIn; empty for Exists and DoesNotExist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

impl LabelSelectorRequirement {
    /// Whether `value` (the label's value, `None` when absent) satisfies the requirement.
    pub fn matches(&self, value: Option<&str>) -> bool {
        match self.operator {
            LabelSelectorOperator::In => value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            LabelSelectorOperator::NotIn => {
                !value.is_some_and(|v| self.values.iter().any(|x| x == v))
            }
            LabelSelectorOperator::Exists => value.is_some(),
            LabelSelectorOperator::DoesNotExist => value.is_none(),
        }
    }
}

/// Kubernetes `metav1.LabelSelector`. An empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Exact label matches (ANDed).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements (ANDed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

impl LabelSelector {
    /// Whether `labels` satisfy every matchLabels entry and every expression.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self
                .match_expressions
                .iter()
                .all(|r| r.matches(labels.get(&r.key).map(String::as_str)))
    }

    /// Whether the selector has no terms (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }
}

/// A reference to an object by name (and optionally namespace) used by several OCM types.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalObjectReference {
    /// Name of the referent.
    pub name: String,
}

/// Gives a top-level object its `apiVersion`/`kind` constants and a `Default` that fills them,
/// so `ManagedCluster { metadata, ..Default::default() }` serialises as a complete object.
/// Parsing keeps whatever the document said (an absent apiVersion stays absent).
macro_rules! resource {
    ($ty:ident, $api_version:expr, $kind:expr, [$($field:ident),*]) => {
        impl $ty {
            /// The `apiVersion` of this type.
            pub const API_VERSION: &'static str = $api_version;
            /// The `kind` of this type.
            pub const KIND: &'static str = $kind;
        }

        impl Default for $ty {
            fn default() -> Self {
                $ty {
                    api_version: $api_version.to_string(),
                    kind: $kind.to_string(),
                    $($field: Default::default(),)*
                }
            }
        }
    };
}
pub(crate) use resource;

pub(crate) fn is_zero_i32(v: &i32) -> bool {
    *v == 0
}

/// A Kubernetes resource quantity such as `"4"`, `"8Gi"` or `"500m"`, kept as written.
/// YAML often writes small quantities as numbers (`cpu: 4`); those are accepted and kept as
/// their decimal text, since Go's `resource.Quantity` always encodes as a string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct Quantity(pub String);

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => Ok(Quantity(s)),
            Value::Number(n) => Ok(Quantity(n.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "a quantity must be a string like \"8Gi\" or a number, not {other}"
            ))),
        }
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Deserializes a list Go may encode as `null` (a nil slice without `omitempty`, e.g. the
/// `conditions` of OCM's work agent's first status of a work) as an empty one.
///
/// # Errors
/// When the value is neither `null` nor a list of `T`.
pub(crate) fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    Ok(<Option<Vec<T>> as serde::Deserialize>::deserialize(d)?.unwrap_or_default())
}

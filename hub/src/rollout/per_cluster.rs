//! A ManifestWorkReplicaSet's template for one cluster (ocm-edge's `spec.perCluster`): the
//! overrides that select the cluster patch the template (RFC 7386 merge patches, then RFC 6902
//! JSON patches, in ascending priority), then every `{{ ... }}` placeholder in the spec's strings
//! is replaced by the cluster's value ([`super::template`]). The hub signs what comes out, so the
//! agent verifies exactly what it applies.
//!
//! Placeholders are replaced inside the parsed manifests' string values, never in YAML text: a
//! value cannot inject structure, and a string that is exactly one placeholder takes the value's
//! JSON type. A value a cluster lacks fails that cluster alone ([`render`]'s error, shown in
//! `rollout status`); nothing is ever rendered as an empty string. [`check`] refuses at apply
//! what can be known wrong for every cluster (syntax, unknown variables, malformed patches). Pure.

use std::collections::{BTreeMap, BTreeSet};

use ocm_edge_schemas::api::replicaset::{ClusterOverride, ManifestWorkReplicaSetSpec, PerCluster};
use ocm_edge_schemas::api::work::{Manifest, ManifestWorkSpec};
use ocm_edge_schemas::validate;
use serde_json::Value;

use super::template::{self, Context};
use crate::placement::plugins::predicate::validate_label_selector;

/// What a cluster's template may depend on.
#[derive(Debug, Clone, Default)]
pub struct ClusterFacts {
    /// Its name.
    pub name: String,
    /// Its labels (the hub's view).
    pub labels: BTreeMap<String, String>,
    /// Its cluster claims, by name.
    pub claims: BTreeMap<String, String>,
    /// The ManagedClusterSets that select it, sorted.
    pub sets: Vec<String>,
}

impl ClusterFacts {
    /// `.ClusterSet`: the exclusive set label.
    fn cluster_set(&self) -> Option<&str> {
        self.labels
            .get(ocm_edge_schemas::api::cluster::LABEL_CLUSTER_SET)
            .map(String::as_str)
    }
}

/// The cluster's `.Values`: `values`, then each of its sets' values (by set name), then its own,
/// each merged over the previous as an RFC 7386 merge patch.
pub fn values_for(per_cluster: &PerCluster, cluster: &ClusterFacts) -> Value {
    let mut values = match &per_cluster.values {
        Value::Null => Value::Object(Default::default()),
        v => v.clone(),
    };
    for set in &cluster.sets {
        if let Some(v) = per_cluster.cluster_sets.get(set) {
            json_patch::merge(&mut values, v);
        }
    }
    if let Some(v) = per_cluster.clusters.get(&cluster.name) {
        json_patch::merge(&mut values, v);
    }
    values
}

/// Whether `o` selects the cluster: every selector it gives matches.
pub fn selects(o: &ClusterOverride, cluster: &ClusterFacts) -> bool {
    o.cluster_selector
        .as_ref()
        .is_none_or(|s| s.matches(&cluster.labels))
        && (o.cluster_sets.is_empty() || o.cluster_sets.iter().any(|s| cluster.sets.contains(s)))
        && (o.clusters.is_empty() || o.clusters.contains(&cluster.name))
}

/// The overrides that select the cluster, in the order they are applied.
pub fn overrides_for<'a>(
    per_cluster: &'a PerCluster,
    cluster: &ClusterFacts,
) -> Vec<&'a ClusterOverride> {
    let mut chosen: Vec<(usize, &ClusterOverride)> = per_cluster
        .overrides
        .iter()
        .enumerate()
        .filter(|(_, o)| selects(o, cluster))
        .collect();
    chosen.sort_by_key(|(i, o)| (o.priority, *i));
    chosen.into_iter().map(|(_, o)| o).collect()
}

/// The spec `cluster` gets: the template as written when the set has no `perCluster`.
///
/// # Errors
/// Why this cluster cannot get the template (a value it lacks, a patch that does not apply to
/// the template, a rendered manifest that is not valid), with where; other clusters are not
/// affected.
pub fn render(
    spec: &ManifestWorkReplicaSetSpec,
    cluster: &ClusterFacts,
) -> Result<ManifestWorkSpec, String> {
    let Some(per_cluster) = &spec.per_cluster else {
        return Ok(spec.manifest_work_template.clone());
    };
    let mut tree = serde_json::to_value(&spec.manifest_work_template)
        .map_err(|e| format!("the template cannot be read: {e}"))?;
    if let Some(Value::Array(manifests)) = tree.pointer_mut("/workload/manifests") {
        for o in overrides_for(per_cluster, cluster) {
            apply_override(o, manifests)?;
        }
    }
    let values = values_for(per_cluster, cluster);
    let context = Context {
        cluster: &cluster.name,
        cluster_set: cluster.cluster_set(),
        labels: &cluster.labels,
        claims: &cluster.claims,
        values: &values,
    };
    let described = tree.clone();
    let mut path = String::new();
    render_strings(&mut tree, &mut path, &mut |s, path| {
        let segments =
            template::parse(s).map_err(|e| format!("{}: {e}", location(&described, path)))?;
        template::render(&segments, &context)
            .map_err(|e| format!("{}: {e}", location(&described, path)))
    })?;
    let rendered: ManifestWorkSpec = serde_json::from_value(tree)
        .map_err(|e| format!("the rendered template is not a ManifestWork spec: {e}"))?;
    validate::validate_manifests(&rendered.workload.manifests)
        .and_then(|()| validate::validate_manifest_configs(&rendered.manifest_configs))
        .map_err(|e| format!("the rendered template is not valid: {e}"))?;
    Ok(rendered)
}

fn apply_override(o: &ClusterOverride, manifests: &mut [Value]) -> Result<(), String> {
    let patch = json_patch_of(o)?;
    for (index, manifest) in manifests.iter_mut().enumerate() {
        if !o.target.as_ref().is_none_or(|t| t.matches(manifest)) {
            continue;
        }
        if let Some(merge) = &o.merge_patch {
            json_patch::merge(manifest, merge);
        }
        if let Some(patch) = &patch {
            let describe = describe(manifest);
            json_patch::patch(manifest, patch).map_err(|e| {
                format!(
                    "override {:?}: its jsonPatch does not apply to manifest {index} ({describe}): \
                     {e}",
                    o.name
                )
            })?;
        }
    }
    Ok(())
}

fn json_patch_of(o: &ClusterOverride) -> Result<Option<json_patch::Patch>, String> {
    if o.json_patch.is_empty() {
        return Ok(None);
    }
    serde_json::from_value(Value::Array(o.json_patch.clone()))
        .map(Some)
        .map_err(|e| {
            format!(
                "override {:?}: jsonPatch is not an RFC 6902 patch: {e} (each operation is \
                 {{op: add|remove|replace|move|copy|test, path: /a/b, value: ...}})",
                o.name
            )
        })
}

/// Calls `f` on every string holding a placeholder (with its JSON pointer) and puts its result
/// in the string's place.
fn render_strings(
    value: &mut Value,
    path: &mut String,
    f: &mut impl FnMut(&str, &str) -> Result<Value, String>,
) -> Result<(), String> {
    match value {
        Value::String(s) if template::has_placeholder(s) => {
            *value = f(s, path)?;
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                render_strings(item, path, f)?;
                path.truncate(len);
            }
        }
        Value::Object(fields) => {
            for (k, v) in fields.iter_mut() {
                let len = path.len();
                path.push('/');
                path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                render_strings(v, path, f)?;
                path.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

/// Where `pointer` is in the template, for a person: `manifest 1 (apps/v1 Deployment web)
/// /spec/replicas`, or `spec /executor/...` outside the manifests.
fn location(template: &Value, pointer: &str) -> String {
    if let Some(rest) = pointer.strip_prefix("/workload/manifests/") {
        let (index, inner) = rest.split_once('/').unwrap_or((rest, ""));
        let manifest = index
            .parse::<usize>()
            .ok()
            .and_then(|i| template.pointer("/workload/manifests")?.get(i));
        let describe = manifest.map(describe).unwrap_or_default();
        return format!("manifest {index} ({describe}) /{inner}");
    }
    pointer.to_owned()
}

fn describe(manifest: &Value) -> String {
    validate::describe_manifest(&Manifest(manifest.clone()))
}

/// Refuses at apply what is wrong whatever the cluster: a placeholder that does not parse (with
/// where it is), values that are not objects, an override without a name, a patch, or with a
/// malformed patch or selector. Without `perCluster`, the template's manifests must be valid as
/// written.
///
/// # Errors
/// The first problem, naming the field.
pub fn check(spec: &ManifestWorkReplicaSetSpec) -> Result<(), String> {
    validate::validate_manifest_configs(&spec.manifest_work_template.manifest_configs)
        .map_err(|e| format!("spec.manifestWorkTemplate: {e}"))?;
    let Some(per_cluster) = &spec.per_cluster else {
        return validate::validate_manifests(&spec.manifest_work_template.workload.manifests)
            .map_err(|e| format!("spec.manifestWorkTemplate: {e}"));
    };
    if spec.manifest_work_template.workload.manifests.is_empty() {
        return Err("spec.manifestWorkTemplate: no manifests: give at least one".into());
    }
    let object = |v: &Value, field: String| match v {
        Value::Object(_) => Ok(()),
        _ => Err(format!(
            "{field} must be an object of values, e.g. {{storeId: \"17\"}}"
        )),
    };
    if !per_cluster.values.is_null() {
        object(&per_cluster.values, "spec.perCluster.values".into())?;
    }
    for (set, v) in &per_cluster.cluster_sets {
        object(v, format!("spec.perCluster.clusterSets.{set}"))?;
    }
    for (cluster, v) in &per_cluster.clusters {
        object(v, format!("spec.perCluster.clusters.{cluster}"))?;
    }
    let mut names = BTreeSet::new();
    for (i, o) in per_cluster.overrides.iter().enumerate() {
        let at = format!("spec.perCluster.overrides[{i}]");
        if o.name.is_empty() {
            return Err(format!(
                "{at}: give it a name (errors and rollout status use it)"
            ));
        }
        if !names.insert(o.name.as_str()) {
            return Err(format!("{at}: the name {:?} is used twice", o.name));
        }
        if o.merge_patch.is_none() && o.json_patch.is_empty() {
            return Err(format!(
                "{at} ({}): it patches nothing: give mergePatch or jsonPatch",
                o.name
            ));
        }
        if let Some(m) = &o.merge_patch
            && !m.is_object()
        {
            return Err(format!(
                "{at} ({}): mergePatch must be an object (an RFC 7386 patch of each manifest)",
                o.name
            ));
        }
        json_patch_of(o).map_err(|e| format!("{at}: {e}"))?;
        if let Some(s) = &o.cluster_selector {
            validate_label_selector(s)
                .map_err(|e| format!("{at} ({}): clusterSelector: {e}", o.name))?;
        }
        let mut patches = o.merge_patch.clone().unwrap_or(Value::Null);
        check_strings(&mut patches, &format!("{at}.mergePatch"))?;
        let mut patches = Value::Array(o.json_patch.clone());
        check_strings(&mut patches, &format!("{at}.jsonPatch"))?;
    }
    let mut tree = serde_json::to_value(&spec.manifest_work_template)
        .map_err(|e| format!("spec.manifestWorkTemplate cannot be read: {e}"))?;
    let described = tree.clone();
    let mut path = String::new();
    render_strings(&mut tree, &mut path, &mut |s, path| {
        template::parse(s).map(|_| Value::Null).map_err(|e| {
            format!(
                "spec.manifestWorkTemplate: {}: {e}",
                location(&described, path)
            )
        })
    })
}

fn check_strings(value: &mut Value, at: &str) -> Result<(), String> {
    let mut path = String::new();
    render_strings(value, &mut path, &mut |s, path| {
        template::parse(s)
            .map(|_| Value::Null)
            .map_err(|e| format!("{at}{path}: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(per_cluster: Value) -> ManifestWorkReplicaSetSpec {
        serde_json::from_value(json!({
            "placementRefs": [{"name": "stores"}],
            "manifestWorkTemplate": {"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "store", "namespace": "shop"},
                 "data": {"id": "{{ .Values.storeId }}", "region": "{{ .ClusterLabels.region }}",
                          "name": "{{ .ClusterName }}"}},
                {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "web", "namespace": "shop"},
                 "spec": {"replicas": "{{ .Values.replicas }}",
                          "template": {"spec": {"containers": [
                              {"name": "web", "image": "{{ .Values.registry }}/web:1.2"}]}}}}]}},
            "perCluster": per_cluster,
        }))
        .unwrap()
    }

    fn facts(name: &str, sets: &[&str], labels: &[(&str, &str)]) -> ClusterFacts {
        ClusterFacts {
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
            claims: BTreeMap::new(),
            sets: sets.iter().map(|s| (*s).into()).collect(),
        }
    }

    fn sample() -> ManifestWorkReplicaSetSpec {
        spec(json!({
            "values": {"replicas": 1, "registry": "docker.io"},
            "clusterSets": {"eu": {"registry": "mirror.eu"}},
            "clusters": {"store-1": {"storeId": "001", "replicas": 3},
                         "store-2": {"storeId": "002"}},
            "overrides": [
                {"name": "big", "priority": 10, "clusterSelector": {"matchLabels": {"size": "big"}},
                 "target": {"kind": "Deployment"},
                 "jsonPatch": [{"op": "replace", "path": "/spec/replicas", "value": 5}]},
                {"name": "debug", "clusters": ["store-2"],
                 "mergePatch": {"metadata": {"labels": {"debug": "on"}}}}]
        }))
    }

    fn data(spec: &ManifestWorkSpec, i: usize, pointer: &str) -> Value {
        spec.workload.manifests[i]
            .0
            .pointer(pointer)
            .cloned()
            .unwrap()
    }

    #[test]
    fn each_cluster_gets_its_values_the_most_specific_winning() {
        let set = sample();
        check(&set).unwrap();
        let one = render(&set, &facts("store-1", &["eu"], &[("region", "west")])).unwrap();
        assert_eq!(data(&one, 0, "/data/id"), json!("001"));
        assert_eq!(data(&one, 0, "/data/region"), json!("west"));
        assert_eq!(data(&one, 0, "/data/name"), json!("store-1"));
        assert_eq!(data(&one, 1, "/spec/replicas"), json!(3), "a number");
        assert_eq!(
            data(&one, 1, "/spec/template/spec/containers/0/image"),
            json!("mirror.eu/web:1.2"),
            "the set's value over the default"
        );
        let two = render(&set, &facts("store-2", &[], &[("region", "east")])).unwrap();
        assert_eq!(data(&two, 1, "/spec/replicas"), json!(1));
        assert_eq!(
            data(&two, 1, "/spec/template/spec/containers/0/image"),
            json!("docker.io/web:1.2")
        );
        assert_eq!(
            data(&two, 0, "/metadata/labels/debug"),
            json!("on"),
            "the merge patch selected by name"
        );
        assert!(
            one.workload.manifests[0]
                .0
                .pointer("/metadata/labels")
                .is_none()
        );
    }

    #[test]
    fn overrides_apply_to_their_targets_in_priority_order() {
        let mut set = sample();
        let per = set.per_cluster.as_mut().unwrap();
        // A lower priority listed last still goes first: "big" has the last word.
        per.overrides.push(
            serde_json::from_value(json!({"name": "small", "priority": -1,
                "target": {"kind": "Deployment"},
                "mergePatch": {"spec": {"replicas": 2}}}))
            .unwrap(),
        );
        let big = facts("store-1", &[], &[("region", "w"), ("size", "big")]);
        let names: Vec<&str> = overrides_for(per, &big)
            .iter()
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(names, ["small", "big"]);
        let spec = render(&set, &big).unwrap();
        assert_eq!(data(&spec, 1, "/spec/replicas"), json!(5));
        assert!(
            spec.workload.manifests[0].0.pointer("/spec").is_none(),
            "the ConfigMap is not a target"
        );
        let small = render(&set, &facts("store-1", &[], &[("region", "w")])).unwrap();
        assert_eq!(data(&small, 1, "/spec/replicas"), json!(2));
    }

    #[test]
    fn a_cluster_without_a_value_fails_alone_with_where_and_how_to_fix() {
        let set = sample();
        let e = render(&set, &facts("store-3", &[], &[("region", "w")])).unwrap_err();
        assert!(
            e.contains("manifest 0 (v1 ConfigMap store) /data/id"),
            "where: {e}"
        );
        assert!(e.contains("cluster store-3 has no .Values.storeId"), "{e}");
        assert!(e.contains(".clusters.store-3"), "how to fix: {e}");
        let e = render(&set, &facts("store-1", &[], &[])).unwrap_err();
        assert!(e.contains("no .ClusterLabels.region"), "{e}");
        assert!(render(&set, &facts("store-1", &[], &[("region", "w")])).is_ok());
    }

    #[test]
    fn a_patch_that_does_not_fit_or_a_rendered_manifest_that_is_invalid_fails_the_cluster() {
        let mut set = sample();
        set.per_cluster.as_mut().unwrap().overrides.push(
            serde_json::from_value(json!({"name": "gone", "clusters": ["store-1"],
                "jsonPatch": [{"op": "replace", "path": "/spec/missing/x", "value": 1}]}))
            .unwrap(),
        );
        check(&set).unwrap();
        let e = render(&set, &facts("store-1", &[], &[("region", "w")])).unwrap_err();
        assert!(e.contains("override \"gone\""), "{e}");
        assert!(e.contains("manifest 0 (v1 ConfigMap store)"), "{e}");

        let mut set = sample();
        set.manifest_work_template.workload.manifests[0].0["metadata"]["name"] =
            json!("{{ .Values.storeId }}");
        set.per_cluster
            .as_mut()
            .unwrap()
            .clusters
            .insert("store-9".into(), json!({"storeId": ""}));
        check(&set).unwrap();
        let e = render(&set, &facts("store-9", &[], &[("region", "w")])).unwrap_err();
        assert!(e.contains("the rendered template is not valid"), "{e}");
    }

    #[test]
    fn without_per_cluster_the_template_goes_as_written_placeholders_included() {
        let mut set = sample();
        set.per_cluster = None;
        let spec = render(&set, &facts("store-1", &[], &[])).unwrap();
        assert_eq!(spec, set.manifest_work_template);
    }

    #[test]
    fn what_is_wrong_for_every_cluster_is_refused_at_apply_naming_the_field() {
        for (per_cluster, expected) in [
            (
                json!({"values": [1]}),
                "spec.perCluster.values must be an object",
            ),
            (
                json!({"clusters": {"a": 3}}),
                "spec.perCluster.clusters.a must be an object",
            ),
            (
                json!({"overrides": [{"name": ""}]}),
                "overrides[0]: give it a name",
            ),
            (
                json!({"overrides": [{"name": "a", "mergePatch": {}}, {"name": "a", "mergePatch": {}}]}),
                "used twice",
            ),
            (json!({"overrides": [{"name": "a"}]}), "it patches nothing"),
            (
                json!({"overrides": [{"name": "a", "jsonPatch": [{"op": "frobnicate", "path": "/x"}]}]}),
                "not an RFC 6902 patch",
            ),
            (
                json!({"overrides": [{"name": "a", "mergePatch": {"x": "{{ .Nope }}"}}]}),
                "spec.perCluster.overrides[0].mergePatch/x: at offset 0: {{ .Nope }}: unknown variable .Nope",
            ),
            (
                json!({"overrides": [{"name": "a", "mergePatch": {},
                    "clusterSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}]}),
                "clusterSelector",
            ),
        ] {
            let e = check(&spec(per_cluster.clone())).unwrap_err();
            assert!(e.contains(expected), "{per_cluster}: {e}");
        }
        let mut bad = sample();
        bad.manifest_work_template.workload.manifests[1].0["spec"]["replicas"] =
            json!("{{ .Values.replicas | upper }}");
        let e = check(&bad).unwrap_err();
        assert!(
            e.contains("spec.manifestWorkTemplate: manifest 1 (apps/v1 Deployment web) /spec/replicas: at offset 0"),
            "{e}"
        );
        let mut cel = sample();
        cel.per_cluster = None;
        cel.manifest_work_template.manifest_configs = serde_json::from_value(json!([{
            "resourceIdentifier": {"group": "apps", "resource": "deployments",
                                   "name": "web", "namespace": "shop"},
            "conditionRules": [{"type": "CEL", "condition": "Ready",
                                "celExpressions": ["object.status.readyReplicas >"]}]}]))
        .unwrap();
        let e = check(&cel).unwrap_err();
        assert!(
            e.contains("spec.manifestWorkTemplate: ")
                && e.contains("conditionRules[0].celExpressions[0]"),
            "{e}"
        );
        let unknown = serde_json::from_value::<ManifestWorkReplicaSetSpec>(
            json!({"perCluster": {"valuez": {}}}),
        );
        assert!(
            unknown
                .unwrap_err()
                .to_string()
                .contains("unknown field `valuez`")
        );
    }
}

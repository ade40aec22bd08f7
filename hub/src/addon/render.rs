//! Renders an AddOnTemplate's agent for one cluster (OCM's template add-on): every `{{NAME}}` in
//! the manifests' strings replaced by the cluster's value, then the AddOnDeploymentConfig's node
//! placement, image mirrors and proxy put on the workloads. Pure.

use std::collections::{BTreeMap, BTreeSet};

use ocm_edge_schemas::api::addon::{AddOnDeploymentConfigSpec, ContainerResourceRequirements};
use ocm_edge_schemas::api::work::{
    DeleteOption, Manifest, ManifestWorkSpec, PropagationPolicy, ResourceIdentifier,
    SelectivelyOrphan,
};
use serde_json::Value;

/// `{{CLUSTER_NAME}}`: the cluster's name.
pub const CLUSTER_NAME: &str = "CLUSTER_NAME";
/// `{{INSTALL_NAMESPACE}}`: where the add-on's agent is installed.
pub const INSTALL_NAMESPACE: &str = "INSTALL_NAMESPACE";
/// `{{HUB_KUBECONFIG}}`: where OCM mounts the agent's hub kubeconfig. ocm-edge's hub is reached
/// over MQTT, not the Kubernetes API, so no kubeconfig is there: the value is OCM's path, so
/// that OCM's templates render unchanged.
pub const HUB_KUBECONFIG: &str = "HUB_KUBECONFIG";
/// OCM's path of the agent's hub kubeconfig.
pub const HUB_KUBECONFIG_PATH: &str = "/managed/hub-kubeconfig/kubeconfig";
/// The variables every cluster has, whatever its configs.
pub const BUILT_IN: [&str; 3] = [CLUSTER_NAME, INSTALL_NAMESPACE, HUB_KUBECONFIG];

/// Workload kinds whose pod template gets the config's node placement and proxy.
const WORKLOADS: [&str; 5] = [
    "Deployment",
    "DaemonSet",
    "StatefulSet",
    "Job",
    "ReplicaSet",
];

/// Whether `name` can be a variable (OCM: a letter or `_`, then letters, digits, `_`).
pub fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The `{{NAME}}` variables the manifests use.
pub fn variables_in(spec: &ManifestWorkSpec) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for manifest in &spec.workload.manifests {
        visit_strings(&manifest.0, &mut |s| {
            for (name, _) in placeholders(s) {
                found.insert(name.to_owned());
            }
        });
    }
    found
}

/// The variables of one cluster: the built-in ones, then the config's (which may not replace
/// them).
pub fn variables(
    cluster: &str,
    install_namespace: &str,
    config: Option<&AddOnDeploymentConfigSpec>,
) -> BTreeMap<String, String> {
    let mut vars: BTreeMap<String, String> = config
        .map(|c| {
            c.customized_variables
                .iter()
                .map(|v| (v.name.clone(), v.value.clone()))
                .collect()
        })
        .unwrap_or_default();
    vars.insert(CLUSTER_NAME.to_owned(), cluster.to_owned());
    vars.insert(INSTALL_NAMESPACE.to_owned(), install_namespace.to_owned());
    vars.insert(HUB_KUBECONFIG.to_owned(), HUB_KUBECONFIG_PATH.to_owned());
    vars
}

/// `spec` rendered with `vars`, and `config` put on its workloads.
///
/// # Errors
/// The variables the manifests use that `vars` lacks, named.
pub fn render(
    spec: &ManifestWorkSpec,
    vars: &BTreeMap<String, String>,
    config: Option<&AddOnDeploymentConfigSpec>,
) -> Result<ManifestWorkSpec, String> {
    let missing: Vec<String> = variables_in(spec)
        .into_iter()
        .filter(|v| !vars.contains_key(v))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the template uses {} that no config gives (built in: {}; others come from an \
             AddOnDeploymentConfig's customizedVariables)",
            missing
                .iter()
                .map(|v| format!("{{{{{v}}}}}"))
                .collect::<Vec<_>>()
                .join(", "),
            BUILT_IN.join(", ")
        ));
    }
    let mut out = spec.clone();
    for manifest in &mut out.workload.manifests {
        let mut value = manifest.0.clone();
        replace_strings(&mut value, vars);
        if let Some(config) = config {
            configure(&mut value, config);
            set_resources(&mut value, &config.resource_requirements);
        }
        *manifest = Manifest(value);
    }
    Ok(out)
}

/// Takes the template's pre-delete hooks (Jobs and Pods labelled or annotated
/// `open-cluster-management.io/addon-pre-delete`, OCM's hook) out of `spec`: they run only when
/// the add-on is removed from the cluster, before its agent goes.
pub fn split_pre_delete(spec: &mut ManifestWorkSpec) -> Vec<Manifest> {
    let is_hook = |m: &Manifest| {
        matches!(m.kind(), Some("Job" | "Pod"))
            && ["labels", "annotations"].iter().any(|field| {
                m.0.pointer(&format!("/metadata/{field}"))
                    .and_then(|v| v.get(ocm_edge_schemas::api::addon::LABEL_PRE_DELETE))
                    .is_some()
            })
    };
    let (hooks, rest): (Vec<Manifest>, Vec<Manifest>) =
        std::mem::take(&mut spec.workload.manifests)
            .into_iter()
            .partition(is_hook);
    spec.workload.manifests = rest;
    hooks
}

/// OCM's decorators of a rendered template: `env` (OCM's preset values: `HUB_KUBECONFIG` when
/// the template registers, `CLUSTER_NAME`, and `INSTALL_NAMESPACE` when a config sets it)
/// appended to the environment of every container of its Deployments and DaemonSets; and, when
/// a config sets the install namespace (`forced_namespace`), every namespaced object moved into
/// it, as are Namespace objects and the subjects of RoleBindings and ClusterRoleBindings.
pub fn decorate(
    spec: &mut ManifestWorkSpec,
    env: &[(String, String)],
    forced_namespace: Option<&str>,
) {
    for manifest in &mut spec.workload.manifests {
        let value = &mut manifest.0;
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if (kind == "Deployment" || kind == "DaemonSet")
            && !env.is_empty()
            && let Some(Value::Array(containers)) =
                value.pointer_mut("/spec/template/spec/containers")
        {
            for container in containers {
                let list = container
                    .as_object_mut()
                    .map(|c| c.entry("env").or_insert_with(|| Value::Array(vec![])));
                if let Some(Value::Array(list)) = list {
                    list.extend(
                        env.iter()
                            .map(|(n, v)| serde_json::json!({"name": n, "value": v})),
                    );
                }
            }
        }
        let Some(ns) = forced_namespace else {
            continue;
        };
        if value
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty())
        {
            value["metadata"]["namespace"] = Value::String(ns.to_owned());
        }
        match kind.as_str() {
            "Namespace" => value["metadata"]["name"] = Value::String(ns.to_owned()),
            "RoleBinding" | "ClusterRoleBinding" => {
                if let Some(Value::Array(subjects)) = value.get_mut("subjects") {
                    for subject in subjects {
                        subject["namespace"] = Value::String(ns.to_owned());
                    }
                }
            }
            _ => {}
        }
    }
}

/// OCM's annotation of a template resource that stays on the cluster when the add-on goes.
pub const DELETION_ORPHAN_ANNOTATION: &str = "addon.open-cluster-management.io/deletion-orphan";

/// What a rendered agent needs on an edge cluster, which has no klusterlet to prepare it: the
/// install namespace (first, unless the template creates it), left on the cluster when the
/// add-on goes (other add-ons may share it), as is every resource annotated
/// [`DELETION_ORPHAN_ANNOTATION`] (OCM's rule), through the work's deleteOption.
pub fn prepare_cluster(spec: &mut ManifestWorkSpec, install_namespace: &str) {
    let manifests = &mut spec.workload.manifests;
    let mut orphans = Vec::new();
    let has_namespace = manifests
        .iter()
        .any(|m| m.kind() == Some("Namespace") && m.name() == Some(install_namespace));
    if !has_namespace && !install_namespace.is_empty() {
        manifests.insert(
            0,
            Manifest(serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": install_namespace}})),
        );
        orphans.push(ResourceIdentifier {
            group: String::new(),
            resource: "namespaces".into(),
            name: install_namespace.to_owned(),
            namespace: String::new(),
        });
    }
    for m in manifests.iter() {
        if m.0
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(DELETION_ORPHAN_ANNOTATION))
            .is_none()
        {
            continue;
        }
        orphans.push(m.resource_identifier());
    }
    if orphans.is_empty() {
        return;
    }
    let option = spec.delete_option.get_or_insert_with(DeleteOption::default);
    match option.propagation_policy {
        PropagationPolicy::Orphan => {}
        PropagationPolicy::Foreground => {
            option.propagation_policy = PropagationPolicy::SelectivelyOrphan;
            option.selectively_orphans = Some(SelectivelyOrphan {
                orphaning_rules: orphans,
            });
        }
        PropagationPolicy::SelectivelyOrphan => option
            .selectively_orphans
            .get_or_insert_with(SelectivelyOrphan::default)
            .orphaning_rules
            .extend(orphans),
    }
}

/// Every `{{NAME}}` in `s`, with its byte range.
fn placeholders(s: &str) -> Vec<(&str, std::ops::Range<usize>)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(open) = s[from..].find("{{").map(|i| i + from) {
        let Some(close) = s[open + 2..].find("}}").map(|i| i + open + 2) else {
            break;
        };
        let name = &s[open + 2..close];
        if is_variable_name(name) {
            found.push((name, open..close + 2));
            from = close + 2;
        } else {
            from = open + 2;
        }
    }
    found
}

fn visit_strings(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|v| visit_strings(v, f)),
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            f(k);
            visit_strings(v, f);
        }),
        _ => {}
    }
}

fn substitute(s: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for (name, range) in placeholders(s) {
        if let Some(v) = vars.get(name) {
            out.push_str(&s[last..range.start]);
            out.push_str(v);
            last = range.end;
        }
    }
    out.push_str(&s[last..]);
    out
}

fn replace_strings(value: &mut Value, vars: &BTreeMap<String, String>) {
    match value {
        Value::String(s) if s.contains("{{") => *s = substitute(s, vars),
        Value::Array(items) => items.iter_mut().for_each(|v| replace_strings(v, vars)),
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (k, mut v) in old {
                replace_strings(&mut v, vars);
                map.insert(substitute(&k, vars), v);
            }
        }
        _ => {}
    }
}

/// Puts the config's node placement, image mirrors and proxy on a workload's pod template.
fn configure(manifest: &mut Value, config: &AddOnDeploymentConfigSpec) {
    let kind = manifest
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !WORKLOADS.contains(&kind) {
        return;
    }
    let Some(pod) = manifest.pointer_mut("/spec/template/spec") else {
        return;
    };
    if let Some(placement) = &config.node_placement {
        if !placement.node_selector.is_empty() {
            pod["nodeSelector"] =
                serde_json::to_value(&placement.node_selector).unwrap_or_default();
        }
        if !placement.tolerations.is_empty() {
            pod["tolerations"] = Value::Array(placement.tolerations.clone());
        }
    }
    let proxy = &config.proxy_config;
    // Both spellings, as tools read one or the other (curl only the lowercase http_proxy).
    let proxy_env: Vec<(&str, &str)> = [
        ("HTTP_PROXY", proxy.http_proxy.as_str()),
        ("HTTPS_PROXY", proxy.https_proxy.as_str()),
        ("NO_PROXY", proxy.no_proxy.as_str()),
        ("http_proxy", proxy.http_proxy.as_str()),
        ("https_proxy", proxy.https_proxy.as_str()),
        ("no_proxy", proxy.no_proxy.as_str()),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .collect();
    for list in ["containers", "initContainers"] {
        let Some(Value::Array(containers)) = pod.get_mut(list) else {
            continue;
        };
        for container in containers {
            if let Some(Value::String(image)) = container.get_mut("image")
                && let Some(mirror) = config
                    .registries
                    .iter()
                    .find(|m| !m.source.is_empty() && image.starts_with(&m.source))
            {
                *image = format!("{}{}", mirror.mirror, &image[mirror.source.len()..]);
            }
            if proxy_env.is_empty() {
                continue;
            }
            let env = container
                .as_object_mut()
                .map(|c| c.entry("env").or_insert_with(|| Value::Array(vec![])));
            if let Some(Value::Array(env)) = env {
                for (name, v) in &proxy_env {
                    env.retain(|e| e.get("name").and_then(Value::as_str) != Some(name));
                    env.push(serde_json::json!({"name": name, "value": v}));
                }
            }
        }
    }
}

/// The config's `resourceRequirements` on every matching container of a workload (the last match
/// wins, as in OCM), init containers included.
fn set_resources(manifest: &mut Value, requirements: &[ContainerResourceRequirements]) {
    if requirements.is_empty() {
        return;
    }
    let kind = manifest
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let name = manifest
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let pod = match kind.as_str() {
        "Pod" => "/spec",
        "CronJob" => "/spec/jobTemplate/spec/template/spec",
        _ => "/spec/template/spec",
    };
    let Some(pod) = manifest.pointer_mut(pod) else {
        return;
    };
    for list in ["containers", "initContainers"] {
        let Some(Value::Array(containers)) = pod.get_mut(list) else {
            continue;
        };
        for container in containers {
            let container_name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if let Some(r) = requirements
                .iter()
                .rev()
                .find(|r| r.matches(&kind, &name, &container_name))
                && let Some(c) = container.as_object_mut()
            {
                c.insert("resources".to_owned(), r.resources.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_edge_schemas::api::addon::{CustomizedVariable, ImageMirror, NodePlacement};
    use serde_json::json;

    fn spec(manifests: Vec<Value>) -> ManifestWorkSpec {
        let mut spec = ManifestWorkSpec::default();
        spec.workload.manifests = manifests.into_iter().map(Manifest).collect();
        spec
    }

    fn agent() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "agent", "namespace": "{{INSTALL_NAMESPACE}}"},
            "spec": {"template": {"spec": {"containers": [{"name": "a",
                "image": "quay.io/open-cluster-management/addon-examples",
                "args": ["--cluster-name={{CLUSTER_NAME}}", "--hub={{HUB_KUBECONFIG}}"],
                "env": [{"name": "LOG_LEVEL", "value": "{{LOG_LEVEL}}"}]}]}}}})
    }

    fn config() -> AddOnDeploymentConfigSpec {
        AddOnDeploymentConfigSpec {
            customized_variables: vec![CustomizedVariable {
                name: "LOG_LEVEL".into(),
                value: "4".into(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn every_variable_is_replaced_with_the_clusters_value() {
        let vars = variables("edge-1", "hello-ns", Some(&config()));
        let out = render(&spec(vec![agent()]), &vars, None).unwrap();
        let d = &out.workload.manifests[0].0;
        assert_eq!(d["metadata"]["namespace"], "hello-ns");
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["args"][0], "--cluster-name=edge-1");
        assert_eq!(c["args"][1], format!("--hub={HUB_KUBECONFIG_PATH}"));
        assert_eq!(c["env"][0]["value"], "4");
        assert_eq!(
            variables_in(&spec(vec![agent()])),
            [
                "CLUSTER_NAME",
                "HUB_KUBECONFIG",
                "INSTALL_NAMESPACE",
                "LOG_LEVEL"
            ]
            .map(String::from)
            .into()
        );
    }

    #[test]
    fn a_variable_no_config_gives_is_named_and_nothing_is_rendered() {
        let err = render(&spec(vec![agent()]), &variables("edge-1", "ns", None), None).unwrap_err();
        assert!(err.contains("{{LOG_LEVEL}}"), "{err}");
        assert!(err.contains("customizedVariables"), "{err}");
    }

    #[test]
    fn a_config_can_not_replace_a_built_in_variable() {
        let mut c = config();
        c.customized_variables.push(CustomizedVariable {
            name: CLUSTER_NAME.into(),
            value: "someone-else".into(),
        });
        assert_eq!(variables("edge-1", "ns", Some(&c))[CLUSTER_NAME], "edge-1");
    }

    #[test]
    fn node_placement_mirrors_and_proxy_go_on_workloads_only() {
        let mut c = config();
        c.node_placement = Some(NodePlacement {
            node_selector: [("site".to_owned(), "edge".to_owned())].into(),
            tolerations: vec![json!({"key": "edge", "operator": "Exists"})],
        });
        c.registries = vec![ImageMirror {
            source: "quay.io/open-cluster-management".into(),
            mirror: "registry.local:5000/ocm".into(),
        }];
        c.proxy_config.https_proxy = "http://proxy:3128".into();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
        let vars = variables("edge-1", "ns", Some(&c));
        let out = render(&spec(vec![agent(), cm.clone()]), &vars, Some(&c)).unwrap();
        let pod = &out.workload.manifests[0].0["spec"]["template"]["spec"];
        assert_eq!(pod["nodeSelector"]["site"], "edge");
        assert_eq!(pod["tolerations"][0]["key"], "edge");
        let container = &pod["containers"][0];
        assert_eq!(container["image"], "registry.local:5000/ocm/addon-examples");
        assert!(
            container["env"]
                .as_array()
                .unwrap()
                .contains(&json!({"name": "HTTPS_PROXY", "value": "http://proxy:3128"}))
        );
        assert!(
            container["env"]
                .as_array()
                .unwrap()
                .contains(&json!({"name": "https_proxy", "value": "http://proxy:3128"}))
        );
        assert_eq!(out.workload.manifests[1].0, cm);
    }

    #[test]
    fn resource_requirements_go_on_the_matching_containers_the_last_match_winning() {
        let mut c = config();
        let req = |id: &str, memory: &str| ContainerResourceRequirements {
            container_id: id.to_owned(),
            resources: json!({"limits": {"memory": memory}}),
        };
        c.resource_requirements = vec![req("*:*:*", "64Mi"), req("deployments:agent:a", "128Mi")];
        let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "sweep", "namespace": "ns"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {
                "containers": [{"name": "sweep", "image": "busybox"}]}}}}}});
        let vars = variables("edge-1", "ns", Some(&c));
        let out = render(&spec(vec![agent(), cron]), &vars, Some(&c)).unwrap();
        let first = |m: usize, pointer: &str| out.workload.manifests[m].0.pointer(pointer).cloned();
        let containers = first(0, "/spec/template/spec/containers").unwrap();
        for container in containers.as_array().unwrap() {
            let expected = if container["name"] == "a" {
                "128Mi"
            } else {
                "64Mi"
            };
            assert_eq!(
                container["resources"]["limits"]["memory"], expected,
                "{container}"
            );
        }
        assert_eq!(
            first(
                1,
                "/spec/jobTemplate/spec/template/spec/containers/0/resources/limits/memory"
            ),
            Some(json!("64Mi"))
        );
    }

    #[test]
    fn the_install_namespace_comes_first_and_stays_with_the_orphaned_resources() {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "sa", "namespace": "ns",
                "annotations": {DELETION_ORPHAN_ANNOTATION: ""}}});
        let mut s = spec(vec![agent(), sa]);
        prepare_cluster(&mut s, "ns");
        assert_eq!(s.workload.manifests[0].kind(), Some("Namespace"));
        assert_eq!(s.workload.manifests[0].name(), Some("ns"));
        let option = s.delete_option.unwrap();
        assert_eq!(
            option.propagation_policy,
            PropagationPolicy::SelectivelyOrphan
        );
        let rules = option.selectively_orphans.unwrap().orphaning_rules;
        assert_eq!(
            rules
                .iter()
                .map(|r| (r.resource.as_str(), r.namespace.as_str(), r.name.as_str()))
                .collect::<Vec<_>>(),
            [("namespaces", "", "ns"), ("serviceaccounts", "ns", "sa")]
        );
        // A template that creates its namespace keeps it its own; nothing to orphan then.
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}});
        let mut s = spec(vec![ns, agent()]);
        prepare_cluster(&mut s, "ns");
        assert_eq!(s.workload.manifests.len(), 2);
        assert!(s.delete_option.is_none());
    }

    #[test]
    fn ocms_decorators_add_the_preset_values_and_move_objects_into_the_configured_namespace() {
        let rb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "x"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "elsewhere"}]});
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "elsewhere"}});
        let mut s = spec(vec![agent(), rb, cm]);
        let env = vec![("CLUSTER_NAME".to_owned(), "edge-1".to_owned())];
        decorate(&mut s, &env, Some("mine"));
        let d = &s.workload.manifests[0].0;
        let container_env = d["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap();
        assert_eq!(
            container_env.last().unwrap(),
            &json!({"name": "CLUSTER_NAME", "value": "edge-1"})
        );
        assert_eq!(d["metadata"]["namespace"], "mine");
        assert_eq!(
            s.workload.manifests[1].0["subjects"][0]["namespace"],
            "mine"
        );
        assert!(
            s.workload.manifests[1].0["metadata"]
                .get("namespace")
                .is_none(),
            "a cluster-scoped object stays cluster-scoped"
        );
        assert_eq!(s.workload.manifests[2].0["metadata"]["namespace"], "mine");
        // Without a configured namespace, objects stay where the template puts them.
        let mut s = spec(vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "elsewhere"}})]);
        decorate(&mut s, &[], None);
        assert_eq!(
            s.workload.manifests[0].0["metadata"]["namespace"],
            "elsewhere"
        );
    }

    #[test]
    fn braces_that_are_no_variable_stay() {
        let s = spec(vec![
            json!({"kind": "ConfigMap", "data": {"t": "{{ not one }} {{A}}"}}),
        ]);
        let out = render(&s, &[("A".to_owned(), "x".to_owned())].into(), None).unwrap();
        assert_eq!(out.workload.manifests[0].0["data"]["t"], "{{ not one }} x");
    }
}

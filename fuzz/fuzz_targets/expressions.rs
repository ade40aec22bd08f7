//! The expressions a work or a placement carries and both the hub and the agent read: kubectl
//! JSONPaths (feedback rules, ignoreFields), JSON Pointers and CEL (condition rules, celSelector).
//! The first byte chooses which; the rest is the expression, run against a fixed object. Nothing
//! may panic, overflow the stack or run without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocm_edge_schemas::cel::{self, CelEnv};
use ocm_edge_schemas::jsonpath::{self, KubeJsonPath, PathUse};
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let mut object = json!({
        "metadata": {"name": "web", "annotations": {"example.com/zones": "{\"zones\": [\"eu-a\"]}"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "app", "image": "app:1"}, {"name": "proxy", "image": "proxy:1"}]}}},
        "status": {"readyReplicas": 1, "version": "v1.31.2+k3s1", "memory": "7934Mi",
                   "conditions": [{"type": "Available", "status": "True"}]}
    });
    match which % 4 {
        0 => {
            if let Ok(path) = KubeJsonPath::parse(text, PathUse::Feedback) {
                let _ = path.query(&object);
            }
        }
        1 => {
            if let Ok(path) = KubeJsonPath::parse(text, PathUse::IgnoreFields) {
                path.remove_fields(&mut object);
            }
        }
        2 => {
            let _ = jsonpath::remove_pointer(&mut object, text);
        }
        _ => {
            let env = if which & 0x80 == 0 {
                CelEnv::ConditionRule
            } else {
                CelEnv::ClusterSelector
            };
            if let Ok(expression) = cel::compile(text, env) {
                let name = if env == CelEnv::ConditionRule {
                    "object"
                } else {
                    "managedCluster"
                };
                let _ = expression.evaluate(&[(name, &object)]);
            }
        }
    }
});

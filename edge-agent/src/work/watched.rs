//! `feedbackScrapeType: Watch` (OCM): the objects of a bundle whose status is read when they
//! change, from a watch, instead of at the next reconcile. Pure.

use ocm_edge_schemas::api::work::{FeedbackScrapeType, ManifestBundle};

use super::resource::ResourceRef;

/// The objects of `bundle` with a manifest config asking for `Watch` (the first config that
/// names an object decides, as for the update strategy), in manifest order.
pub fn watched(bundle: &ManifestBundle) -> Vec<ResourceRef> {
    bundle
        .manifests
        .iter()
        .enumerate()
        .filter_map(|(i, m)| ResourceRef::from_manifest(m, i).ok())
        .filter(|r| {
            bundle
                .manifest_configs
                .iter()
                .find(|c| r.matches(&c.resource_identifier))
                .is_some_and(|c| c.feedback_scrape_type == Some(FeedbackScrapeType::Watch))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_objects_whose_config_asks_for_watch_are_watched() {
        let bundle: ManifestBundle = serde_json::from_value(json!({
            "manifests": [
                {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "web", "namespace": "shop"}},
                {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "polled", "namespace": "shop"}},
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "plain", "namespace": "shop"}}],
            "manifestConfigs": [
                {"resourceIdentifier": {"group": "apps", "resource": "deployments",
                                        "name": "web", "namespace": "shop"},
                 "feedbackScrapeType": "Watch"},
                {"resourceIdentifier": {"group": "apps", "resource": "deployments",
                                        "name": "polled", "namespace": "shop"},
                 "feedbackScrapeType": "Poll"}]}))
        .unwrap();
        let names: Vec<String> = watched(&bundle).into_iter().map(|r| r.name).collect();
        assert_eq!(names, ["web"]);
    }
}

//! A real cluster through kube-rs: discovery of each kind (cached), server-side apply PATCH with a
//! field manager and force, CreateOnly (GET, create on 404), Update (GET, PUT when drifted),
//! ReadOnly (GET only), deletes with a propagation policy, health via `/livez` then `/healthz`,
//! and the cluster's facts from its nodes, version and kube-system namespace.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, PropagationPolicy,
};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, ApiResource, Scope};
use kube::{Client, Config};
use serde_json::Value;

use super::facts::{ClusterFacts, NodeFacts};
use super::{Applier, ApplyError};
use crate::work::plan::{ApplyAction, ApplyStrategy, DeletePropagation};
use crate::work::resource::{ResourceRef, is_subset};

type Discovered = (ApiResource, ApiCapabilities);
/// Discovery results by (group, version, kind).
type DiscoveryCache = Arc<Mutex<HashMap<(String, String, String), Discovered>>>;

/// The kube-rs applier.
#[derive(Clone)]
pub struct KubeApplier {
    client: Client,
    discovered: DiscoveryCache,
    /// The agent's own configuration, from which a client impersonating a work's executor is
    /// made (`None`: a client given as is, which impersonates nobody).
    config: Option<Arc<Config>>,
    /// Those clients, by impersonated user.
    executors: Arc<Mutex<HashMap<String, Client>>>,
}

impl std::fmt::Debug for KubeApplier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeApplier").finish_non_exhaustive()
    }
}

fn api_error(e: kube::Error) -> ApplyError {
    match e {
        kube::Error::Api(s) => match s.code {
            404 => ApplyError::NotFound(s.message),
            403 => ApplyError::Forbidden(s.message),
            409 => ApplyError::Conflict(s.message),
            400 | 422 => ApplyError::Invalid(s.message),
            500.. => ApplyError::Unavailable(s.message),
            _ => ApplyError::Api(format!("{} ({})", s.message, s.code)),
        },
        kube::Error::HyperError(e) => ApplyError::Unavailable(e.to_string()),
        kube::Error::Service(e) => ApplyError::Unavailable(e.to_string()),
        other => ApplyError::Api(other.to_string()),
    }
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

fn node_facts(node: Node) -> NodeFacts {
    let resources = |list: Option<
        std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    >| {
        list.unwrap_or_default()
            .into_iter()
            .map(|(k, q)| (k, ocm_edge_schemas::api::meta::Quantity(q.0)))
            .collect()
    };
    let status = node.status.unwrap_or_default();
    NodeFacts {
        name: node.metadata.name.unwrap_or_default(),
        provider_id: node.spec.and_then(|s| s.provider_id).unwrap_or_default(),
        capacity: resources(status.capacity),
        allocatable: resources(status.allocatable),
    }
}

fn without_status(manifest: &Value) -> Value {
    let mut m = manifest.clone();
    if let Some(map) = m.as_object_mut() {
        map.remove("status");
    }
    m
}

fn to_object(manifest: &Value) -> Result<DynamicObject, ApplyError> {
    serde_json::from_value(without_status(manifest))
        .map_err(|e| ApplyError::Invalid(format!("not a Kubernetes object: {e}")))
}

fn to_value(obj: &DynamicObject) -> Result<Value, ApplyError> {
    serde_json::to_value(obj).map_err(|e| ApplyError::Api(e.to_string()))
}

impl KubeApplier {
    /// An applier on `client`.
    pub fn new(client: Client) -> Self {
        KubeApplier {
            client,
            discovered: Arc::default(),
            config: None,
            executors: Arc::default(),
        }
    }

    /// The client to apply as `executor` (impersonating it; the agent's own without one).
    fn client_for(&self, executor: Option<&str>) -> Result<Client, ApplyError> {
        let Some(user) = executor else {
            return Ok(self.client.clone());
        };
        if let Some(c) = self
            .executors
            .lock()
            .ok()
            .and_then(|m| m.get(user).cloned())
        {
            return Ok(c);
        }
        let mut config = self.config.as_deref().cloned().ok_or_else(|| {
            ApplyError::Api(format!(
                "this applier cannot act as the work's executor {user}"
            ))
        })?;
        // The service account's user only (the API server adds system:authenticated): what is
        // bound to the ServiceAccount is what it may do.
        config.auth_info.impersonate = Some(user.to_owned());
        config.auth_info.impersonate_groups = None;
        let client = Client::try_from(config).map_err(|e| ApplyError::Api(e.to_string()))?;
        if let Ok(mut m) = self.executors.lock() {
            m.insert(user.to_owned(), client.clone());
        }
        Ok(client)
    }

    /// Connects with `kubeconfig`, or in-cluster / the default kubeconfig when `None`.
    ///
    /// # Errors
    /// [`ApplyError::Unavailable`] when no configuration can be loaded.
    pub async fn connect(kubeconfig: Option<&Path>) -> Result<Self, ApplyError> {
        // kube's TLS asks rustls for the process's provider, which nothing may have installed
        // yet when the applier starts before the MQTT link (a real API server found this).
        ocm_edge_mqtt::tls::install_crypto_provider();
        let config = match kubeconfig {
            Some(path) => {
                let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| {
                    ApplyError::Unavailable(format!("kubeconfig {}: {e}", path.display()))
                })?;
                Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                    .await
                    .map_err(|e| {
                        ApplyError::Unavailable(format!("kubeconfig {}: {e}", path.display()))
                    })?
            }
            None => Config::infer().await.map_err(|e| {
                ApplyError::Unavailable(format!("no in-cluster config or default kubeconfig: {e}"))
            })?,
        };
        let client =
            Client::try_from(config.clone()).map_err(|e| ApplyError::Unavailable(e.to_string()))?;
        let mut applier = Self::new(client);
        applier.config = Some(Arc::new(config));
        Ok(applier)
    }

    async fn discover(&self, r: &ResourceRef) -> Result<Discovered, ApplyError> {
        let k = (r.group.clone(), r.version.clone(), r.kind.clone());
        if let Some(d) = self.discovered.lock().ok().and_then(|m| m.get(&k).cloned()) {
            return Ok(d);
        }
        let gvk = GroupVersionKind::gvk(&r.group, &r.version, &r.kind);
        let d = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|e| match e {
                e if is_not_found(&e) => ApplyError::NotFound(format!(
                    "the cluster does not serve {} {} (is its CRD installed?)",
                    r.api_version(),
                    r.kind
                )),
                kube::Error::Discovery(d) => ApplyError::NotFound(d.to_string()),
                other => api_error(other),
            })?;
        if let Ok(mut m) = self.discovered.lock() {
            m.insert(k, d.clone());
        }
        Ok(d)
    }

    async fn api(&self, r: &ResourceRef) -> Result<Api<DynamicObject>, ApplyError> {
        self.api_as(r, self.client.clone()).await
    }

    async fn api_as(
        &self,
        r: &ResourceRef,
        client: Client,
    ) -> Result<Api<DynamicObject>, ApplyError> {
        let (ar, caps) = self.discover(r).await?;
        Ok(match caps.scope {
            Scope::Namespaced => {
                let ns = if r.namespace.is_empty() {
                    "default"
                } else {
                    &r.namespace
                };
                Api::namespaced_with(client, ns, &ar)
            }
            Scope::Cluster => Api::all_with(client, &ar),
        })
    }

    async fn probe(&self, path: &str) -> bool {
        match http::Request::get(path).body(Vec::new()) {
            Ok(req) => self.client.request_text(req).await.is_ok(),
            Err(_) => false,
        }
    }
}

impl Applier for KubeApplier {
    async fn apply(&self, action: &ApplyAction, _now: DateTime<Utc>) -> Result<Value, ApplyError> {
        let r = &action.resource;
        let executor = action.executor.as_deref();
        let api = self.api_as(r, self.client_for(executor)?).await?;
        // As OCM's work agent says it when its executor lacks the right.
        let api_error = |e: kube::Error| match (api_error(e), executor) {
            (ApplyError::Forbidden(m), Some(user)) => ApplyError::Forbidden(format!(
                "not allowed to apply the resource {} {}, {} {} by the executor {user}: {m}",
                r.api_version(),
                r.kind,
                if r.namespace.is_empty() {
                    "-"
                } else {
                    &r.namespace
                },
                r.name
            )),
            (other, _) => other,
        };
        // CreateOnly and Update create a missing object the same way.
        let create = async || {
            let created = api
                .create(&PostParams::default(), &to_object(&action.manifest)?)
                .await
                .map_err(api_error)?;
            to_value(&created)
        };
        match &action.strategy {
            ApplyStrategy::ServerSideApply {
                force,
                field_manager,
                ..
            } => {
                let mut params = PatchParams::apply(field_manager);
                if *force {
                    params = params.force();
                }
                // Ignored fields depend on the object as the cluster has it.
                let existing = if action.strategy.needs_existence_check() {
                    match api.get_opt(&r.name).await.map_err(api_error)? {
                        Some(obj) => Some(to_value(&obj)?),
                        None => None,
                    }
                } else {
                    None
                };
                let Some(patch) = action
                    .strategy
                    .effective_manifest(&action.manifest, existing.as_ref())?
                else {
                    // The work has not changed since it was applied: the cluster's edits stay.
                    return existing.ok_or_else(|| {
                        ApplyError::NotFound(format!("{} {}/{}", r.kind, r.namespace, r.name))
                    });
                };
                let obj = api
                    .patch(&r.name, &params, &Patch::Apply(&patch))
                    .await
                    .map_err(api_error)?;
                to_value(&obj)
            }
            ApplyStrategy::ReadOnly => match api.get_opt(&r.name).await.map_err(api_error)? {
                Some(obj) => to_value(&obj),
                None => Err(ApplyError::NotFound(format!(
                    "{} {}/{} does not exist (ReadOnly)",
                    r.kind, r.namespace, r.name
                ))),
            },
            ApplyStrategy::CreateOnly => match api.get_opt(&r.name).await.map_err(api_error)? {
                Some(obj) => to_value(&obj),
                None => create().await,
            },
            ApplyStrategy::Update => match api.get_opt(&r.name).await.map_err(api_error)? {
                None => create().await,
                Some(existing) => {
                    let existing_json = to_value(&existing)?;
                    if is_subset(&without_status(&action.manifest), &existing_json) {
                        return Ok(existing_json);
                    }
                    let mut desired = to_object(&action.manifest)?;
                    desired.metadata.resource_version = existing.metadata.resource_version.clone();
                    let replaced = api
                        .replace(&r.name, &PostParams::default(), &desired)
                        .await
                        .map_err(api_error)?;
                    to_value(&replaced)
                }
            },
        }
    }

    async fn get(
        &self,
        resource: &ResourceRef,
        _now: DateTime<Utc>,
    ) -> Result<Option<Value>, ApplyError> {
        let api = match self.api(resource).await {
            Ok(api) => api,
            // The kind is not served (its CRD is not installed or was deleted): nor is the object.
            Err(ApplyError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        // Any 404 means absent: a plain `404 page not found` (not a NotFound Status) is what the
        // API server answers for a kind whose CRD was deleted after discovery (CI found this).
        match api.get(&resource.name).await {
            Ok(obj) => to_value(&obj).map(Some),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(api_error(e)),
        }
    }

    async fn delete(
        &self,
        resource: &ResourceRef,
        propagation: DeletePropagation,
    ) -> Result<(), ApplyError> {
        let api = match self.api(resource).await {
            Ok(api) => api,
            // The kind is gone from the cluster (CRD deleted): so is the object.
            Err(ApplyError::NotFound(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        let params = DeleteParams {
            propagation_policy: Some(match propagation {
                DeletePropagation::Foreground => PropagationPolicy::Foreground,
                DeletePropagation::Background => PropagationPolicy::Background,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&resource.name, &params).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(api_error(e)),
        }
    }

    async fn watch(
        &self,
        resource: &ResourceRef,
    ) -> Result<futures::stream::BoxStream<'static, ()>, ApplyError> {
        use futures::StreamExt;
        let api = self.api(resource).await?;
        // One object: a field selector on its name. From resource version "0" the API server
        // first sends the object as it is (ADDED), then every change, until its watch timeout
        // ends the stream (the agent starts another).
        let params =
            kube::api::WatchParams::default().fields(&format!("metadata.name={}", resource.name));
        let events = api.watch(&params, "0").await.map_err(api_error)?;
        // An error (410 Gone after a long outage, a broken connection) ends this watch;
        // bookmarks say nothing of the object.
        Ok(events
            .take_while(|e| {
                std::future::ready(!matches!(e, Err(_) | Ok(kube::api::WatchEvent::Error(_))))
            })
            .filter_map(|e| {
                std::future::ready(match e {
                    Ok(kube::api::WatchEvent::Bookmark(_)) => None,
                    _ => Some(()),
                })
            })
            .boxed())
    }

    async fn health(&self) -> bool {
        // As OCM's registration agent: /livez, falling back to /healthz on older servers.
        self.probe("/livez").await || self.probe("/healthz").await
    }

    async fn version(&self) -> Option<String> {
        self.client
            .apiserver_version()
            .await
            .ok()
            .map(|i| i.git_version)
    }

    async fn facts(&self) -> Result<ClusterFacts, ApplyError> {
        let nodes = Api::<Node>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map_err(api_error)?;
        let nodes: Vec<NodeFacts> = nodes.items.into_iter().map(node_facts).collect();
        let version = self.version().await;
        // OCM's `id.k8s.io`: the kube-system namespace's uid, which lives as long as the
        // cluster. Without the right to read it the claim is left out, not the facts.
        let id = Api::<Namespace>::all(self.client.clone())
            .get_opt("kube-system")
            .await
            .ok()
            .flatten()
            .and_then(|ns| ns.metadata.uid);
        Ok(ClusterFacts::from_nodes(
            &nodes,
            version.as_deref(),
            id.as_deref(),
        ))
    }

    fn simulated(&self) -> bool {
        false
    }
}

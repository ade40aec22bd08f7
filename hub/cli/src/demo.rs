//! `ocm-edge demo`: the whole loop in one process, in about a minute, with simulated clusters.
//!
//! 1. The hub as `ocm-edge hub` runs it, on a free port (data in a temporary directory): its own
//!    CA, its embedded broker with TLS and logins, and three agents with the sim applier
//!    (simulated clusters: no Kubernetes runs) that trust it by the CA's pin and log in with
//!    their own keys, as real agents do; the demo's admin client uses the first admin credential.
//! 2. The clusters ask to join; the demo accepts them through the admin API, as an operator would.
//! 3. A sample work (Namespace, ConfigMap, nginx Deployment with status feedback) goes to all three;
//!    the status table is printed as it converges.
//! 4. The hub is stopped, and its broker with it. The agents keep reconciling from their own
//!    store: drift injected into two simulated clusters is corrected with no hub and no link.
//! 5. The hub restarts on the same data dir and port, recovers its state, the agents reconnect on
//!    their own, and an update (3 replicas) rolls out to every cluster; the final table is printed.
//!
//! Every wait is bounded by [`DemoOptions::converge_timeout`]; a fleet that does not converge makes
//! the demo fail with the last table it saw.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ocm_edge_agent::{AgentConfig, AgentHandle, ApplierConfig, SimControl, start_agent};
use ocm_edge_mqtt::{CaPin, TlsFiles};
use ocm_edge_schemas::api::meta::{ConditionStatus, find_condition};
use ocm_edge_schemas::api::work::{WORK_APPLIED, WORK_AVAILABLE};
use serde_json::{Value, json};
use thiserror::Error;
use tokio::time::Instant;

use crate::client::{AdminClient, AdminError, ConnectOptions};
use crate::commands::work::well_known_feedback;
use crate::output::{clusters_table, works_table};
use ocm_edge_hub::config::{BrokerConfig, HubConfig};
use ocm_edge_schemas::admin::CreateWork;
use ocm_edge_schemas::admin::{ClusterState, ClusterView, WorkView};

/// Demo settings.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Bound on each convergence wait.
    pub converge_timeout: Duration,
    /// How long the hub stays down.
    pub hub_downtime: Duration,
    /// Number of simulated clusters.
    pub clusters: usize,
    /// How often the status table is refreshed.
    pub refresh: Duration,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            converge_timeout: Duration::from_secs(90),
            hub_downtime: Duration::from_secs(6),
            clusters: 3,
            refresh: Duration::from_secs(2),
        }
    }
}

/// Why the demo failed.
#[derive(Debug, Error)]
pub enum DemoError {
    /// The temporary directory could not be made.
    #[error("cannot create the demo's temporary directory: {0}")]
    TempDir(std::io::Error),
    /// The hub did not start.
    #[error("cannot start the hub: {0}")]
    Hub(String),
    /// An agent did not start.
    #[error("cannot start the agent of {cluster}: {reason}")]
    Agent {
        /// Which.
        cluster: String,
        /// Why.
        reason: String,
    },
    /// The admin API failed.
    #[error(transparent)]
    Admin(#[from] AdminError),
    /// Something did not happen in time.
    #[error(
        "gave up after {} s waiting for {what} (the fleet did not converge); last state seen:\n{last}",
        waited.as_secs()
    )]
    NotConverged {
        /// What was waited for.
        what: String,
        /// How long.
        waited: Duration,
        /// The last table printed.
        last: String,
    },
    /// Writing to the terminal failed.
    #[error("cannot write the demo's output: {0}")]
    Output(#[from] std::io::Error),
}

/// Name of the sample work.
pub const DEMO_WORK: &str = "demo-web";
const DEMO_NAMESPACE: &str = "demo";

/// Runs the demo, writing its story to `out`.
///
/// # Errors
/// See [`DemoError`]; the demo cleans up (agents and hub stopped) before returning.
pub async fn run(options: DemoOptions, out: &mut impl Write) -> Result<(), DemoError> {
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("ocm-edge-demo-")
        .tempdir()
        .map_err(DemoError::TempDir)?;
    writeln!(
        out,
        "ocm-edge demo: one embedded MQTT broker, the hub, and {} SIMULATED clusters (the sim \
         applier keeps objects in the agent's own store; no Kubernetes runs, Deployments become \
         ready after a delay).\nData (removed at the end): {}\n",
        options.clusters,
        dir.path().display()
    )?;

    let hub_dir = dir.path().join("hub");
    let (first, url) = start_demo_hub(
        &hub_dir,
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        options.converge_timeout,
    )
    .await?;
    let mut hub = Some(first);
    writeln!(
        out,
        "[{}] hub started (source id ocm-edge) with its embedded broker on {} (TLS only, CA pin {}; \
         every client proves who it is: agents with their own key, the CLI with its admin credential)",
        elapsed(started),
        url.url,
        url.pin
    )?;

    // What `ocm-edge token create` prints, for the agents to ask to join with.
    let token = ocm_edge_hub::registration::join_token::JoinTokens::load_or_create(&hub_dir)
        .and_then(|t| t.create(chrono::Duration::hours(1), chrono::Utc::now()))
        .map_err(|e| DemoError::Hub(format!("cannot make a join token: {e}")))?;
    writeln!(
        out,
        "[{}] $ ocm-edge token create --ttl 1h  (join token {} for the agents)",
        elapsed(started),
        token.id
    )?;
    let mut agents = Vec::new();
    let result = async {
        for i in 1..=options.clusters {
            let agent = start_demo_agent(i, &url, &token.token, dir.path()).await?;
            agents.push(agent);
        }
        writeln!(
            out,
            "[{}] {} simulated agents started: {}",
            elapsed(started),
            agents.len(),
            agents
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        let connect = ConnectOptions {
            tls: TlsFiles {
                ca_file: Some(url.ca_file.clone()),
                ..TlsFiles::default()
            },
            // The first admin credential, written by the hub's first start.
            credentials: Some(hub_dir.join(ocm_edge_hub::admin::users::ADMIN_CREDENTIALS)),
            ..ConnectOptions::default()
        };
        let client =
            AdminClient::connect_with(&url.url, ocm_edge_hub::config::DEFAULT_SOURCE_ID, &connect)
                .await?;
        story(
            &options, out, started, &client, &mut hub, &hub_dir, &url, &agents,
        )
        .await?;
        client.disconnect().await;
        Ok::<(), DemoError>(())
    }
    .await;

    for agent in agents {
        let _ = agent.handle.shutdown().await;
    }
    if let Some(hub) = hub {
        // The story's outcome matters more than a clean stop; a failed stop is only logged.
        if let Err(e) = hub.shutdown().await {
            tracing::warn!(error = %e, "the demo hub stopped with an error");
        }
    }
    result?;
    writeln!(
        out,
        "\nDemo finished in {} s: every simulated cluster Applied and Available, drift corrected \
         while the hub was down, state recovered after the hub restart.",
        started.elapsed().as_secs()
    )?;
    Ok(())
}

struct DemoAgent {
    name: String,
    handle: AgentHandle,
    sim: SimControl,
}

#[allow(clippy::too_many_arguments)] // one linear story; a struct would only rename the locals
async fn story(
    options: &DemoOptions,
    out: &mut impl Write,
    started: Instant,
    client: &AdminClient,
    hub: &mut Option<ocm_edge_hub::process::HubHandle>,
    hub_dir: &Path,
    url: &Endpoint,
    agents: &[DemoAgent],
) -> Result<(), DemoError> {
    let names: Vec<String> = agents.iter().map(|a| a.name.clone()).collect();
    let mut waiter = Waiter::new(options, started);

    // Registration.
    let clusters = waiter
        .until(out, "every cluster asking to join", || async {
            let clusters = client.list_clusters().await?;
            let all_there = names.iter().all(|n| clusters.iter().any(|c| &c.name == n));
            Ok((
                all_there,
                clusters_table(&clusters, chrono::Utc::now()),
                clusters,
            ))
        })
        .await?;
    writeln!(out, "{}", clusters_table(&clusters, chrono::Utc::now()))?;
    for name in &names {
        client.accept_cluster(name).await?;
        writeln!(
            out,
            "[{}] $ ocm-edge cluster accept {name}",
            elapsed(started)
        )?;
    }
    let clusters = waiter
        .until(out, "every cluster Accepted and Available", || async {
            let clusters = client.list_clusters().await?;
            let ok = names.iter().all(|n| {
                clusters
                    .iter()
                    .any(|c| &c.name == n && c.state == ClusterState::Accepted && is_available(c))
            });
            Ok((ok, clusters_table(&clusters, chrono::Utc::now()), clusters))
        })
        .await?;
    writeln!(out, "{}", clusters_table(&clusters, chrono::Utc::now()))?;

    // Deploy.
    let written = client
        .create_work(sample_work(names.clone(), 2, false))
        .await?;
    writeln!(
        out,
        "\n[{}] $ ocm-edge work create {DEMO_WORK} -f demo/ --clusters {} --feedback  ({} works created: \
         Namespace {DEMO_NAMESPACE}, ConfigMap web-config, Deployment web with 2 nginx replicas)",
        elapsed(started),
        names.join(","),
        written.len()
    )?;
    waiter
        .converge(
            out,
            client,
            &names,
            1,
            2,
            "the work to become Available everywhere",
        )
        .await?;

    // Hub down, and its broker with it; agents keep working.
    if let Some(h) = hub.take() {
        h.shutdown()
            .await
            .map_err(|e| DemoError::Hub(format!("stopping: {e}")))?;
    }
    let down_at = Instant::now();
    writeln!(
        out,
        "\n[{}] hub STOPPED (and its broker: the agents have no link either). The agents keep \
         reconciling from their local store; injecting drift:",
        elapsed(started)
    )?;
    if let Some(a) = agents.get(1) {
        a.sim.delete("ConfigMap", DEMO_NAMESPACE, "web-config");
        writeln!(
            out,
            "  {}: ConfigMap {DEMO_NAMESPACE}/web-config deleted behind the agent's back",
            a.name
        )?;
    }
    if let Some(a) = agents.get(2) {
        a.sim.modify("Deployment", DEMO_NAMESPACE, "web", |d| {
            d["spec"]["replicas"] = json!(5);
        });
        writeln!(
            out,
            "  {}: Deployment {DEMO_NAMESPACE}/web scaled to 5 by hand",
            a.name
        )?;
    }
    waiter
        .until(
            out,
            "the agents to correct the drift without the hub",
            || async {
                let restored = agents.get(1).is_none_or(|a| {
                    a.sim
                        .get("ConfigMap", DEMO_NAMESPACE, "web-config")
                        .is_some()
                });
                let rescaled = agents.get(2).is_none_or(|a| {
                    a.sim
                        .get("Deployment", DEMO_NAMESPACE, "web")
                        .and_then(|d| d["spec"]["replicas"].as_i64())
                        == Some(2)
                });
                let text = format!(
                    "ConfigMap restored: {restored}; Deployment back to 2 replicas: {rescaled}"
                );
                Ok((restored && rescaled, text, ()))
            },
        )
        .await?;
    writeln!(
        out,
        "[{}] drift corrected by the agents {} s after the hub stopped (ConfigMap recreated, \
         replicas back to 2)",
        elapsed(started),
        down_at.elapsed().as_secs()
    )?;
    // Keep the hub down for the rest of the announced downtime.
    tokio::time::sleep_until(down_at + options.hub_downtime).await;

    // Hub back on the same data dir and port; agents and the admin client reconnect on their own.
    *hub = Some(
        start_demo_hub(hub_dir, url.listen, options.converge_timeout)
            .await?
            .0,
    );
    writeln!(
        out,
        "\n[{}] hub RESTARTED on the same data dir after {} s down; the agents reconnect on their own",
        elapsed(started),
        down_at.elapsed().as_secs()
    )?;
    // The new hub subscribes a moment after it starts: wait for its first answer.
    let works = waiter
        .until(out, "the restarted hub to answer", || async {
            let works = client.list_works(None).await?;
            Ok((true, String::new(), works))
        })
        .await?;
    writeln!(
        out,
        "[{}] the hub recovered {} works from its store",
        elapsed(started),
        works.len()
    )?;
    let updated = client
        .create_work(sample_work(names.clone(), 3, true))
        .await?;
    let version = updated.first().map_or(2, |w| w.work.version);
    writeln!(
        out,
        "[{}] $ ocm-edge work create {DEMO_WORK} -f demo/ --clusters {} --feedback --overwrite  (3 replicas, \
         version {version})",
        elapsed(started),
        names.join(",")
    )?;
    let works = waiter
        .converge(
            out,
            client,
            &names,
            version,
            3,
            "the update to roll out everywhere",
        )
        .await?;
    let clusters = client.list_clusters().await?;
    writeln!(out, "\nFinal state ({} simulated clusters):", names.len())?;
    writeln!(out, "{}", clusters_table(&clusters, chrono::Utc::now()))?;
    writeln!(out, "{}", works_table(&works, chrono::Utc::now()))?;
    Ok(())
}

/// Bounded polling with a table printed whenever it changes.
struct Waiter {
    timeout: Duration,
    refresh: Duration,
    started: Instant,
}

impl Waiter {
    fn new(options: &DemoOptions, started: Instant) -> Self {
        Waiter {
            timeout: options.converge_timeout,
            refresh: options.refresh,
            started,
        }
    }

    /// Polls `check` (fast at first, then every `refresh`) until it reports done.
    async fn until<T, F, Fut>(
        &mut self,
        out: &mut impl Write,
        what: &str,
        mut check: F,
    ) -> Result<T, DemoError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<(bool, String, T), DemoError>>,
    {
        writeln!(out, "[{}] waiting for {what} ...", elapsed(self.started))?;
        let deadline = Instant::now() + self.timeout;
        let mut last;
        let mut poll = tokio::time::interval(Duration::from_millis(250));
        loop {
            poll.tick().await;
            match check().await {
                Ok((true, _, value)) => return Ok(value),
                Ok((false, text, _)) => last = text,
                // The hub may be starting; a missed answer is retried until the deadline.
                Err(DemoError::Admin(e)) if e.is_retryable() => last = e.to_string(),
                Err(e) => return Err(e),
            }
            if Instant::now() >= deadline {
                return Err(DemoError::NotConverged {
                    what: what.to_owned(),
                    waited: self.timeout,
                    last,
                });
            }
        }
    }

    /// Waits until every cluster's copy of the demo work is at `version`, Applied, Available, with
    /// `replicas` ready replicas reported as feedback; prints the table when it changes (at most
    /// every `refresh`).
    async fn converge(
        &mut self,
        out: &mut impl Write,
        client: &AdminClient,
        clusters: &[String],
        version: i64,
        replicas: i64,
        what: &str,
    ) -> Result<Vec<WorkView>, DemoError> {
        writeln!(out, "[{}] waiting for {what} ...", elapsed(self.started))?;
        let deadline = Instant::now() + self.timeout;
        let mut shown = String::new();
        let mut last;
        let mut last_print = Instant::now() - self.refresh;
        let mut poll = tokio::time::interval(Duration::from_millis(500));
        loop {
            poll.tick().await;
            let works = match client.list_works(None).await {
                Ok(w) => w,
                Err(e) if e.is_retryable() && Instant::now() < deadline => continue,
                Err(e) => return Err(e.into()),
            };
            let works: Vec<WorkView> = works.into_iter().filter(|w| w.name == DEMO_WORK).collect();
            let done = clusters.iter().all(|c| {
                works
                    .iter()
                    .any(|w| &w.cluster == c && is_converged(w, version, replicas))
            });
            let now = chrono::Utc::now();
            last = works_table(&works, now);
            // Compare without the "status at" column, which changes every second.
            let key = works
                .iter()
                .map(|w| {
                    format!(
                        "{:?}{:?}{}",
                        w.conditions
                            .iter()
                            .map(|c| (&c.type_, c.status))
                            .collect::<Vec<_>>(),
                        w.resource_status
                            .iter()
                            .map(crate::output::feedback_text)
                            .collect::<Vec<_>>(),
                        w.version
                    )
                })
                .collect::<String>();
            if done || (key != shown && last_print.elapsed() >= self.refresh) {
                writeln!(out, "[{}]\n{last}", elapsed(self.started))?;
                shown = key;
                last_print = Instant::now();
            }
            if done {
                writeln!(out, "[{}] converged: {what}", elapsed(self.started))?;
                return Ok(works);
            }
            if Instant::now() >= deadline {
                return Err(DemoError::NotConverged {
                    what: what.to_owned(),
                    waited: self.timeout,
                    last,
                });
            }
        }
    }
}

fn is_available(c: &ClusterView) -> bool {
    c.available
        .as_ref()
        .is_some_and(|a| a.status == ConditionStatus::True)
}

/// Applied and Available at `version`, with `ReadyReplicas` = `replicas` in the feedback.
fn is_converged(w: &WorkView, version: i64, replicas: i64) -> bool {
    let is_true = |t: &str| {
        find_condition(&w.conditions, t).is_some_and(|c| c.status == ConditionStatus::True)
    };
    let ready = w.resource_status.iter().any(|m| {
        m.status_feedback
            .values
            .iter()
            .any(|v| v.name == "ReadyReplicas" && v.field_value.integer == Some(replicas))
    });
    w.version == version
        && w.status_version == Some(version)
        && !w.deleting
        && is_true(WORK_APPLIED)
        && is_true(WORK_AVAILABLE)
        && ready
}

fn elapsed(started: Instant) -> String {
    format!("{:>4.1}s", started.elapsed().as_secs_f64())
}

/// Starts the hub with its own embedded broker on `listen`, with every default of `ocm-edge hub`
/// (TLS with the hub's CA, logins), and waits until it has subscribed.
async fn start_demo_hub(
    data_dir: &Path,
    listen: SocketAddr,
    timeout: Duration,
) -> Result<(ocm_edge_hub::process::HubHandle, Endpoint), DemoError> {
    let mut cfg = HubConfig::new(data_dir);
    cfg.broker = BrokerConfig::Embedded { listen };
    let hub = ocm_edge_hub::process::start_hub(cfg)
        .await
        .map_err(|e| DemoError::Hub(e.to_string()))?;
    let url = hub.broker_url();
    let ready = tokio::time::timeout(timeout, hub.subscribed()).await;
    if ready.is_err() {
        return Err(DemoError::Hub(format!(
            "it did not subscribe to its broker at {url} within {} s",
            timeout.as_secs()
        )));
    }
    let (Some(pin), Some(ca_file), Some(broker)) =
        (hub.ca_pin(), hub.ca_file(), hub.embedded_broker())
    else {
        return Err(DemoError::Hub(
            "its embedded broker does not run with TLS".to_owned(),
        ));
    };
    let endpoint = Endpoint {
        url,
        listen: broker.addr(),
        ca_file: ca_file.to_owned(),
        pin,
    };
    Ok((hub, endpoint))
}

/// The hub's broker and how to trust it.
#[derive(Debug)]
struct Endpoint {
    url: String,
    /// Where the broker listens (the port a restart binds again).
    listen: SocketAddr,
    ca_file: PathBuf,
    pin: CaPin,
}

const REGIONS: [&str; 5] = ["eu-west", "us-east", "ap-south", "sa-east", "af-south"];

async fn start_demo_agent(
    i: usize,
    broker: &Endpoint,
    token: &str,
    dir: &Path,
) -> Result<DemoAgent, DemoError> {
    let name = format!("edge-{i}");
    let mut cfg = AgentConfig::new(name.clone(), &broker.url, dir.join("agents").join(&name));
    cfg.tls.ca_pin = Some(broker.pin);
    cfg.join_token = Some(token.to_owned());
    cfg.applier = ApplierConfig::Sim {
        ready_delay: Duration::from_secs(3),
    };
    cfg.labels = BTreeMap::from([(
        "region".to_owned(),
        REGIONS[(i - 1) % REGIONS.len()].to_owned(),
    )]);
    // Short periods so the demo shows leases and drift correction within a minute.
    cfg.lease_duration_seconds = 10;
    cfg.join_retry = Duration::from_secs(3);
    // Back soon after the hub (and its broker) restart.
    cfg.reconnect_max = Duration::from_secs(2);
    cfg.reconcile_interval = Duration::from_secs(2);
    let agent_error = |reason: String| DemoError::Agent {
        cluster: name.clone(),
        reason,
    };
    let handle = start_agent(cfg)
        .await
        .map_err(|e| agent_error(e.to_string()))?;
    let sim = handle
        .sim()
        .ok_or_else(|| agent_error("the agent has no simulated cluster".to_owned()))?;
    Ok(DemoAgent { name, handle, sim })
}

/// The sample work: a Namespace, a ConfigMap and an nginx Deployment whose well-known status
/// (ReadyReplicas, ...) is fed back to the hub.
pub fn sample_manifests(replicas: i64) -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DEMO_NAMESPACE}}),
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "web-config", "namespace": DEMO_NAMESPACE},
            "data": {"index.html": "<h1>Hello from ocm-edge</h1>"}
        }),
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": DEMO_NAMESPACE, "labels": {"app": "web"}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{
                        "name": "nginx", "image": "nginx:1.27",
                        "ports": [{"containerPort": 80}],
                        "volumeMounts": [{"name": "html", "mountPath": "/usr/share/nginx/html"}]
                    }],
                    "volumes": [{"name": "html", "configMap": {"name": "web-config"}}]}
                }
            }
        }),
    ]
}

/// The sample work, with well-known status feedback as `work create --feedback` asks for it.
fn sample_work(clusters: Vec<String>, replicas: i64, overwrite: bool) -> CreateWork {
    let manifests = sample_manifests(replicas);
    CreateWork {
        name: DEMO_WORK.to_owned(),
        clusters,
        manifest_configs: well_known_feedback(&manifests),
        manifests,
        delete_option: None,
        overwrite,
        per_cluster: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_edge_schemas::api::work::Manifest;

    #[test]
    fn the_sample_work_is_valid_and_asks_for_deployment_feedback() {
        let work = sample_work(vec!["edge-1".into()], 2, false);
        let manifests: Vec<Manifest> = work.manifests.iter().cloned().map(Manifest).collect();
        ocm_edge_schemas::validate::validate_manifests(&manifests).unwrap();
        assert_eq!(work.manifest_configs.len(), 1);
        assert_eq!(
            work.manifest_configs[0].resource_identifier.resource,
            "deployments"
        );
    }
}

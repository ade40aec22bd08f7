//! `ocm-edge-agent`: the edge agent binary. Flags mirror [`ocm_edge_agent::AgentConfig`]; every flag
//! can also be set with an `OCM_EDGE_*` environment variable.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, ValueEnum};
use ocm_edge_agent::{AgentConfig, ApplierConfig, run_agent};
use ocm_edge_mqtt::BrokerArgs;

/// mimalloc, not the system allocator: measured side by side with fleet-bench at 5,000 clusters
/// (one run each), the hub process used 30% less CPU per cluster (0.77 -> 0.54 ms) and 30% less
/// memory (626 -> 443 MB after 5 rounds), with half the growth between rounds.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The broker when none is given: a hub's embedded broker on this machine.
const DEFAULT_BROKER_URL: &str = "mqtt://127.0.0.1:1883";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ApplierKind {
    /// A real cluster through kube-rs.
    Kube,
    /// A simulated cluster kept in the data dir.
    Sim,
}

/// ocm-edge edge agent: applies ManifestWorks received over MQTT and reports their status.
#[derive(Debug, Parser)]
#[command(name = "ocm-edge-agent", version)]
struct Cli {
    /// Managed cluster name ([a-z0-9-]+).
    #[arg(long, env = "OCM_EDGE_CLUSTER_NAME")]
    cluster_name: String,
    /// The broker and how to reach it (URL, login, TLS files).
    #[command(flatten)]
    broker: BrokerArgs,
    /// Directory of the agent's redb file.
    #[arg(
        long,
        env = "OCM_EDGE_DATA_DIR",
        default_value = "./ocm-edge-agent-data"
    )]
    data_dir: PathBuf,
    /// Source id of the hub (maestro uses `maestro`).
    #[arg(long, env = "OCM_EDGE_SOURCE_ID", default_value = "ocm-edge")]
    source_id: String,
    /// Which cluster to apply to.
    #[arg(long, env = "OCM_EDGE_APPLIER", value_enum, default_value = "kube")]
    applier: ApplierKind,
    /// Seconds until simulated workloads are ready (sim applier).
    #[arg(long, env = "OCM_EDGE_SIM_READY_DELAY", default_value_t = 2.0)]
    sim_ready_delay: f64,
    /// Kubeconfig file (kube applier); default: in-cluster config, then ~/.kube/config.
    #[arg(long, env = "OCM_EDGE_KUBECONFIG", conflicts_with = "in_cluster")]
    kubeconfig: Option<PathBuf>,
    /// Use the in-cluster service account (kube applier).
    #[arg(long, env = "OCM_EDGE_IN_CLUSTER")]
    in_cluster: bool,
    /// Cluster label sent with the join request, k=v (repeatable).
    #[arg(long = "label", env = "OCM_EDGE_LABELS", value_delimiter = ',')]
    labels: Vec<String>,
    /// Cluster claim, k=v (repeatable).
    #[arg(long = "claim", env = "OCM_EDGE_CLAIMS", value_delimiter = ',')]
    claims: Vec<String>,
    /// Lease duration announced to the hub (at least 5).
    #[arg(long, env = "OCM_EDGE_LEASE_DURATION_SECONDS", default_value_t = 60)]
    lease_duration_seconds: i32,
    /// MQTT keepalive in seconds.
    #[arg(long, env = "OCM_EDGE_KEEPALIVE_SECONDS", default_value_t = 10)]
    keepalive_seconds: u64,
    /// Seconds between reconciles of every held bundle.
    #[arg(long, env = "OCM_EDGE_RECONCILE_SECONDS", default_value_t = 10.0)]
    reconcile_seconds: f64,
}

fn pairs(what: &str, items: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
            _ => bail!("{what} {kv:?} is not k=v"),
        })
        .collect()
}

fn seconds(what: &str, s: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(s).with_context(|| format!("{what} {s} is not a number of seconds"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        // Logs on stderr, like the hub's: stdout stays free for what a command prints.
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let mut cfg = AgentConfig::new(
        &cli.cluster_name,
        cli.broker.url_or(DEFAULT_BROKER_URL),
        &cli.data_dir,
    );
    cfg.source_id = cli.source_id.clone();
    cfg.broker_username = cli.broker.broker_username.clone();
    cfg.broker_password = cli.broker.broker_password.clone();
    cfg.tls = cli.broker.tls();
    cfg.applier = match cli.applier {
        ApplierKind::Sim => ApplierConfig::Sim {
            ready_delay: seconds("--sim-ready-delay", cli.sim_ready_delay)?,
        },
        ApplierKind::Kube => ApplierConfig::Kube {
            kubeconfig: if cli.in_cluster {
                None
            } else {
                cli.kubeconfig.clone()
            },
        },
    };
    cfg.labels = pairs("--label", &cli.labels)?;
    cfg.claims = pairs("--claim", &cli.claims)?;
    cfg.lease_duration_seconds = cli.lease_duration_seconds;
    cfg.keepalive = Duration::from_secs(cli.keepalive_seconds);
    cfg.reconcile_interval = seconds("--reconcile-seconds", cli.reconcile_seconds)?;
    cfg.validate().context("invalid configuration")?;
    tracing::info!(cluster = %cfg.cluster_name, broker = %cfg.broker_url, source = %cfg.source_id, "starting ocm-edge-agent");
    run_agent(cfg, async {
        ocm_edge_mqtt::shutdown_signal().await;
        tracing::info!("shutting down");
    })
    .await
    .context("agent stopped")?;
    Ok(())
}

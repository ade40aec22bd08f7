//! The `ocm-edge-agent` command line: flags that mirror [`AgentConfig`], each also an `OCM_EDGE_*`
//! environment variable, and the `sim` subcommand. Here in the library, not in `main.rs`, so the
//! agent's flag reference in the docs (`docs/reference/agent.md`) is generated from it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ocm_edge_mqtt::BrokerArgs;
use ocm_edge_schemas::api::meta::Quantity;

use crate::applier::sim::SimFacts;
use crate::config::{AgentConfig, ApplierConfig};

/// A flag's value that clap cannot check alone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FlagError(String);

/// The broker when none is given: a hub's embedded broker on this machine.
pub const DEFAULT_BROKER_URL: &str = "mqtts://127.0.0.1:8883";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApplierKind {
    /// A real cluster through kube-rs.
    Kube,
    /// A simulated cluster kept in the data dir.
    Sim,
}

/// ocm-edge edge agent: applies ManifestWorks received over MQTT and reports their status.
#[derive(Debug, Parser)]
#[command(name = "ocm-edge-agent", version, subcommand_negates_reqs = true)]
pub struct Cli {
    /// Change the simulated cluster of a running `--applier sim` agent (drift from outside).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Managed cluster name ([a-z0-9-]+).
    // An Option only so that a subcommand can go without it; clap requires it otherwise.
    #[arg(long, env = "OCM_EDGE_CLUSTER_NAME", required = true)]
    pub cluster_name: Option<String>,
    /// The broker and how to reach it (URL, login, TLS files).
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// Directory of the agent's redb file.
    #[arg(
        long,
        env = "OCM_EDGE_DATA_DIR",
        default_value = "./ocm-edge-agent-data"
    )]
    pub data_dir: PathBuf,
    /// Source id of the hub (maestro uses `maestro`).
    #[arg(long, env = "OCM_EDGE_SOURCE_ID", default_value = "ocm-edge")]
    pub source_id: String,
    /// Pin of the hub's CA (printed by `ocm-edge hub`), which issues the key that signs every
    /// spec the agent applies. Defaults to --broker-ca-pin (the hub's embedded broker); give it
    /// when the broker has a CA of its own. Without either, the agent trusts the first hub CA it
    /// sees and keeps it.
    #[arg(long, env = "OCM_EDGE_HUB_CA_PIN", value_name = "sha256:HEX", value_parser = parse_pin)]
    pub hub_ca_pin: Option<ocm_edge_mqtt::CaPin>,
    /// Join token from `ocm-edge token create`: the hub's embedded broker lets a cluster it has
    /// not accepted in only with one. Not needed once the cluster is accepted.
    #[arg(
        long,
        env = "OCM_EDGE_JOIN_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// `mqtts://HOST:PORT` of a broker listener that takes the cluster's certificate as its
    /// identity (Mosquitto with `use_identity_as_username`, broker-config/mosquitto/). Once the
    /// hub has issued this cluster a certificate (at `ocm-edge cluster accept`, renewed on its
    /// own), the agent connects there with it; until then, and after it ended, to --broker.
    #[arg(long, env = "OCM_EDGE_BROKER_MTLS", value_name = "URL")]
    pub broker_mtls: Option<String>,
    /// INSECURE: take specs without the hub's signature from SOURCE (which must be --source-id),
    /// for a source that does not sign, such as maestro. Anyone who can publish on the cluster's
    /// topics can then make it apply anything: use only with a broker whose ACLs you trust.
    #[arg(
        long,
        env = "OCM_EDGE_ACCEPT_UNSIGNED_SPECS_FROM",
        value_name = "SOURCE"
    )]
    pub accept_unsigned_specs_from: Option<String>,
    /// Which cluster to apply to.
    #[arg(long, env = "OCM_EDGE_APPLIER", value_enum, default_value = "kube")]
    pub applier: ApplierKind,
    /// Seconds until simulated workloads are ready (sim applier).
    #[arg(long, env = "OCM_EDGE_SIM_READY_DELAY", default_value_t = 2.0)]
    pub sim_ready_delay: f64,
    /// Capacity the simulated cluster reports, NAME=QUANTITY,... (sim applier), e.g.
    /// `cpu=4,memory=8Gi,pods=110`: placements with the ResourceAllocatableCPU or
    /// ResourceAllocatableMemory prioritizer rank simulated clusters by its allocatable.
    #[arg(
        long,
        env = "OCM_EDGE_SIM_CAPACITY",
        value_name = "NAME=QUANTITY",
        value_delimiter = ','
    )]
    pub sim_capacity: Vec<String>,
    /// Allocatable the simulated cluster reports, as --sim-capacity (sim applier); default: the
    /// capacity.
    #[arg(
        long,
        env = "OCM_EDGE_SIM_ALLOCATABLE",
        value_name = "NAME=QUANTITY",
        value_delimiter = ','
    )]
    pub sim_allocatable: Option<Vec<String>>,
    /// Nodes the simulated cluster reports (sim applier).
    #[arg(long, env = "OCM_EDGE_SIM_NODES", default_value_t = 1)]
    pub sim_nodes: u64,
    /// Kubeconfig file (kube applier); default: in-cluster config, then ~/.kube/config.
    #[arg(long, env = "OCM_EDGE_KUBECONFIG", conflicts_with = "in_cluster")]
    pub kubeconfig: Option<PathBuf>,
    /// Use the in-cluster service account (kube applier).
    #[arg(long, env = "OCM_EDGE_IN_CLUSTER")]
    pub in_cluster: bool,
    /// Cluster label sent with the join request, k=v (repeatable).
    #[arg(long = "label", env = "OCM_EDGE_LABELS", value_delimiter = ',')]
    pub labels: Vec<String>,
    /// Cluster claim, k=v (repeatable). Sent beside the claims the agent detects
    /// (`id.k8s.io`, `kubeversion.open-cluster-management.io`, `platform...` and
    /// `product.open-cluster-management.io`); a claim given here wins over a detected one of the
    /// same name.
    #[arg(long = "claim", env = "OCM_EDGE_CLAIMS", value_delimiter = ',')]
    pub claims: Vec<String>,
    /// Lease duration announced to the hub (at least 5), renewed every third of it. The default
    /// keeps an idle cluster under 1 MB a day on the wire.
    #[arg(long, env = "OCM_EDGE_LEASE_DURATION_SECONDS", default_value_t = crate::config::DEFAULT_LEASE_DURATION_SECONDS)]
    pub lease_duration_seconds: i32,
    /// MQTT keepalive in seconds: the broker publishes the agent's will after 1.5x this on a dead
    /// link.
    #[arg(long, env = "OCM_EDGE_KEEPALIVE_SECONDS", default_value_t = crate::config::DEFAULT_KEEPALIVE.as_secs())]
    pub keepalive_seconds: u64,
    /// Seconds one connection attempt to the broker may take (TCP, TLS and its answer). A broker
    /// letting thousands of clusters back in at once answers late; a 2G link is slow.
    #[arg(long, env = "OCM_EDGE_CONNECT_TIMEOUT_SECONDS", default_value_t = crate::config::DEFAULT_CONNECT_TIMEOUT.as_secs())]
    pub connect_timeout_seconds: u64,
    /// Seconds between reconciles of every held bundle.
    #[arg(long, env = "OCM_EDGE_RECONCILE_SECONDS", default_value_t = 10.0)]
    pub reconcile_seconds: f64,
    /// Largest chunk, in bytes, of a large work sent to this agent (0: whole messages only). A
    /// transfer cut by a dropped link resumes from the chunks already stored.
    #[arg(long, env = "OCM_EDGE_CHUNK_BYTES", default_value_t = crate::config::DEFAULT_CHUNK_BYTES)]
    pub chunk_bytes: u32,
    /// MQTT Receive Maximum: messages the broker may send before the agent acknowledges them.
    /// Small on a slow link, so a ping reply is not stuck behind a queue of chunks.
    #[arg(long, env = "OCM_EDGE_RECEIVE_MAXIMUM", default_value_t = crate::config::DEFAULT_RECEIVE_MAXIMUM)]
    pub receive_maximum: u16,
    /// A maintenance window, SCHEDULE;DURATION;TIME_ZONE (repeatable), e.g.
    /// '0 22 * * 1-5;6h;Europe/Berlin': a five-field cron schedule read in an IANA time zone
    /// (UTC when left out), each time opening the window for the duration (h, m, s). Outside
    /// every window new versions of works are stored but not applied, and removals wait; the
    /// version on the cluster is still reconciled. None: updates at any time. In the
    /// environment, windows are separated by '|'.
    #[arg(
        long = "maintenance-window",
        env = "OCM_EDGE_MAINTENANCE_WINDOWS",
        value_name = "SCHEDULE;DURATION;TZ",
        value_delimiter = '|',
        value_parser = parse_window
    )]
    pub maintenance_windows: Vec<crate::maintenance::MaintenanceWindow>,
    /// Where to serve Prometheus metrics (`GET /metrics`): IP:PORT (e.g. 127.0.0.1:9464, or
    /// 0.0.0.0:9464 for a Prometheus in the cluster), or `off`. No authentication; the metrics
    /// name this cluster. Nothing runs while nobody scrapes.
    #[arg(
        long,
        env = "OCM_EDGE_METRICS_LISTEN",
        value_name = "IP:PORT|off",
        default_value = "off"
    )]
    pub metrics_listen: ocm_edge_mqtt::MetricsListen,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Look at or change the simulated cluster of an agent running with `--applier sim`, the
    /// way `kubectl` would change a real one behind the agent's back: the agent's next reconcile
    /// finds the drift and corrects it.
    Sim {
        #[command(flatten)]
        local: LocalAgent,
        #[command(subcommand)]
        action: SimAction,
    },
    /// Hold updates on this machine, whatever the maintenance windows say, until `release`:
    /// new versions of works are still received and stored, the versions on the cluster are
    /// still reconciled, and the hub is told the cluster is Held. Works while the agent runs (it
    /// notices within one --reconcile-seconds) or is stopped.
    Hold {
        #[command(flatten)]
        local: LocalAgent,
        /// Why, shown to the hub's operators in the works' Held condition.
        #[arg(long)]
        note: Option<String>,
    },
    /// End a hold put with `hold`: versions that waited are applied at the next reconcile (if a
    /// maintenance window is open).
    Release {
        #[command(flatten)]
        local: LocalAgent,
    },
    /// Leave the hub, with the agent stopped and its flags given before `unjoin` (or its
    /// OCM_EDGE_* environment): removes what every work applied (per each work's deleteOption),
    /// tells the hub (a signed unjoin through the broker; the hub forgets the cluster), then
    /// wipes the agent's store, key and certificate. Nothing is wiped until the hub is told: a
    /// run that stops part way can be run again.
    Unjoin {
        /// Leave what the works applied on the cluster.
        #[arg(long)]
        keep_resources: bool,
        /// How long to wait for resources to go and for the broker, each.
        #[arg(long, default_value = "60", value_name = "SECONDS")]
        timeout_seconds: u64,
    },
}

/// The agent on this machine that a subcommand reaches through its data dir.
#[derive(Debug, Args)]
pub struct LocalAgent {
    /// The agent's data dir: the sim's control socket (`sim-control.sock`) and the hold (`hold`)
    /// are in it.
    #[arg(
        long,
        env = "OCM_EDGE_DATA_DIR",
        default_value = "./ocm-edge-agent-data"
    )]
    pub data_dir: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum SimAction {
    /// Print an object as stored (JSON, without status).
    Get {
        /// Kind, e.g. Deployment.
        kind: String,
        /// NAMESPACE/NAME, or NAME for a cluster-scoped object.
        object: String,
    },
    /// Delete an object (a Namespace with everything in it).
    Delete { kind: String, object: String },
    /// Set a field of an object: POINTER=JSON, e.g. /spec/replicas=5 or
    /// '/spec/template/spec/containers/0/image="nginx:1.0"'.
    Set {
        kind: String,
        object: String,
        /// A JSON pointer to an existing field, `=`, and the new value as JSON.
        assignment: String,
    },
    /// Take the simulated API server down (the agent reports it unhealthy).
    ApiDown,
    /// Bring the simulated API server back up.
    ApiUp,
}

impl Cli {
    /// The agent's configuration for these flags (not yet validated: [`AgentConfig::validate`]).
    ///
    /// # Errors
    /// [`FlagError`] for a missing cluster name, a label or claim that is not `k=v`, a simulated
    /// capacity that is not `NAME=QUANTITY`, or seconds that are not a duration.
    pub fn agent_config(&self) -> Result<AgentConfig, FlagError> {
        let cli = self;
        let Some(cluster_name) = cli.cluster_name.as_deref() else {
            return Err(FlagError("--cluster-name is required".to_owned()));
        };
        let mut cfg = AgentConfig::new(
            cluster_name,
            cli.broker.url_or(DEFAULT_BROKER_URL),
            &cli.data_dir,
        );
        cfg.source_id = cli.source_id.clone();
        cfg.hub_ca_pin = cli.hub_ca_pin;
        cfg.join_token = cli.token.clone();
        cfg.broker_mtls_url = cli.broker_mtls.clone();
        cfg.accept_unsigned_from = cli.accept_unsigned_specs_from.clone();
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
        let capacity = quantities("--sim-capacity", &cli.sim_capacity)?;
        cfg.sim_facts = SimFacts {
            allocatable: match &cli.sim_allocatable {
                Some(items) => quantities("--sim-allocatable", items)?,
                None => capacity.clone(),
            },
            capacity,
            nodes: cli.sim_nodes,
        };
        cfg.labels = pairs("--label", &cli.labels)?;
        cfg.claims = pairs("--claim", &cli.claims)?;
        cfg.lease_duration_seconds = cli.lease_duration_seconds;
        cfg.keepalive = Duration::from_secs(cli.keepalive_seconds);
        cfg.connect_timeout = Duration::from_secs(cli.connect_timeout_seconds);
        cfg.reconcile_interval = seconds("--reconcile-seconds", cli.reconcile_seconds)?;
        cfg.chunk_bytes = (cli.chunk_bytes > 0).then_some(cli.chunk_bytes);
        cfg.receive_maximum = cli.receive_maximum;
        cfg.maintenance_windows = cli.maintenance_windows.clone();
        cfg.metrics_listen = cli.metrics_listen.addr();
        Ok(cfg)
    }
}

fn pairs(what: &str, items: &[String]) -> Result<BTreeMap<String, String>, FlagError> {
    items
        .iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
            _ => Err(FlagError(format!("{what} {kv:?} is not k=v"))),
        })
        .collect()
}

/// NAME=QUANTITY pairs, each quantity checked as Kubernetes would check it.
fn quantities(what: &str, items: &[String]) -> Result<BTreeMap<String, Quantity>, FlagError> {
    let how = "write NAME=QUANTITY,..., e.g. cpu=4,memory=8Gi,pods=110";
    pairs(what, items)
        .map_err(|e| FlagError(format!("{e}: {how}")))?
        .into_iter()
        .map(|(name, value)| {
            let q = Quantity(value);
            match q.amount() {
                Ok(_) if q.0.starts_with('-') => Err(FlagError(format!(
                    "{what} {name}={q}: a capacity cannot be negative; {how}"
                ))),
                Ok(_) => Ok((name, q)),
                Err(e) => Err(FlagError(format!("{what} {name}={q}: {e}; {how}"))),
            }
        })
        .collect()
}

fn seconds(what: &str, s: f64) -> Result<Duration, FlagError> {
    Duration::try_from_secs_f64(s)
        .map_err(|e| FlagError(format!("{what} {s} is not a number of seconds: {e}")))
}

/// Refuses a bad window when the agent starts, with what to change.
fn parse_window(s: &str) -> Result<crate::maintenance::MaintenanceWindow, String> {
    s.parse()
        .map_err(|e: crate::maintenance::WindowError| e.to_string())
}

fn parse_pin(s: &str) -> Result<ocm_edge_mqtt::CaPin, String> {
    s.parse()
        .map_err(|e: ocm_edge_mqtt::TlsError| e.to_string())
}

//! The fleet benchmark (`fleet-bench`): the real hub with N simulated agents, then the transport
//! alone on the same broker, with the ratio of the two. Wall-clock figures, printed, never asserted.
//!
//! - [`worker`]: the worker processes that run the agents (real or ideal).
//! - [`hub_process`]: the hub in a process of its own (its figures are the hub's, not the bench's).
//! - [`procfs`]: memory and CPU figures from `/proc`.
//! - `report`: the [`Report`] of a run and how it prints.
//! - `transport`: the ideal hub, the transport alone on the same broker.
//! - this file: the two runs.

pub mod hub_process;
pub mod procfs;
mod report;
mod transport;
pub mod worker;

pub use report::Report;
use transport::ideal_transport;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use ocm_edge_cli::client::AdminClient;
use ocm_edge_schemas::admin::CreateWork;
use ocm_edge_schemas::api::meta::{ConditionStatus, find_condition};
use ocm_edge_schemas::wire::MqttMessage;
use tokio::process::{Child, ChildStdin, Command};

#[cfg(feature = "rumqttd")]
use crate::broker::TestBroker;
use crate::probe::Probe;
use hub_process::HubProcess;
use worker::cluster_name;

/// Options of one benchmark run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Simulated clusters.
    pub agents: usize,
    /// Agents per worker process.
    pub agents_per_process: usize,
    /// Simulated Deployment ready delay.
    pub ready_delay: Duration,
    /// Bound on each phase.
    pub timeout: Duration,
    /// How often the hub is polled for progress.
    pub poll: Duration,
    /// Which broker the hub, the agents and the ideal run share.
    pub broker: BenchBroker,
    /// Rounds of the real run: round 1 creates the work, each later round updates it on every
    /// cluster; the convergence figure is the median of rounds 2..R.
    pub rounds: usize,
    /// The hub's agent-event intake sessions ([`HubConfig::intakes`]).
    pub intakes: usize,
    /// The embedded broker with TLS and logins, as `ocm-edge hub` runs it by default (no spy, no
    /// ideal transport run then).
    pub secure: bool,
    /// Where the agents keep their stores (None: beside the hub's, on the same disk). Each real
    /// edge cluster has a disk of its own; thousands of simulated agents sharing one disk
    /// measure that disk's fsync rate instead of the hub (see [`default_agents_dir`]).
    pub agents_dir: Option<PathBuf>,
}

/// Where the agents of a run keep their stores by default: a fresh directory in `/dev/shm`
/// (tmpfs, where fsync costs nothing) when there is one. Measured at 2,000 agents: every
/// update costs the agents 4 fsyncs each (bundle, simulated object, inventory, status), 8,000
/// per round on one disk's journal, which alone took most of the round. The hub's store stays
/// on disk.
pub fn default_agents_dir() -> Option<PathBuf> {
    let shm = Path::new("/dev/shm");
    shm.is_dir().then(|| shm.to_path_buf())
}

/// The broker of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BenchBroker {
    /// The hub's embedded broker, in the hub's process (as `ocm-edge hub` runs by default).
    Embedded,
    /// A Mosquitto the bench starts on a free port (installed: `apt-get install mosquitto`).
    Mosquitto,
    /// rumqttd 0.20, the previous embedded broker (feature `rumqttd`), in the bench's process.
    #[cfg(feature = "rumqttd")]
    Rumqttd(ocm_edge_mqtt::broker::rumqttd::RumqttdTuning),
    /// A broker already running at this URL.
    Url(String),
}

impl std::str::FromStr for BenchBroker {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "embedded" => Ok(BenchBroker::Embedded),
            "mosquitto" => Ok(BenchBroker::Mosquitto),
            #[cfg(feature = "rumqttd")]
            "rumqttd" => Ok(BenchBroker::Rumqttd(
                ocm_edge_mqtt::broker::rumqttd::RumqttdTuning::AsShipped,
            )),
            #[cfg(feature = "rumqttd")]
            "rumqttd-small-logs" => Ok(BenchBroker::Rumqttd(
                ocm_edge_mqtt::broker::rumqttd::RumqttdTuning::SmallLogs,
            )),
            #[cfg(not(feature = "rumqttd"))]
            "rumqttd" | "rumqttd-small-logs" => Err(format!(
                "--broker {s}: build fleet-bench with `--features rumqttd` to compare with rumqttd"
            )),
            url => ocm_edge_mqtt::BrokerUrl::parse(url)
                .map(|_| BenchBroker::Url(url.to_owned()))
                .map_err(|e| format!("{e} (or use `embedded` or `mosquitto`)")),
        }
    }
}

impl std::fmt::Display for BenchBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BenchBroker::Embedded => f.write_str("embedded"),
            BenchBroker::Mosquitto => f.write_str("mosquitto"),
            #[cfg(feature = "rumqttd")]
            BenchBroker::Rumqttd(ocm_edge_mqtt::broker::rumqttd::RumqttdTuning::AsShipped) => {
                f.write_str("rumqttd")
            }
            #[cfg(feature = "rumqttd")]
            BenchBroker::Rumqttd(ocm_edge_mqtt::broker::rumqttd::RumqttdTuning::SmallLogs) => {
                f.write_str("rumqttd-small-logs")
            }
            BenchBroker::Url(u) => f.write_str(u),
        }
    }
}

/// A running broker of a run that is not the hub's own (stopped when dropped, if the bench
/// started it).
#[derive(Debug)]
enum RunningBroker {
    /// The hub child's embedded broker.
    InHub,
    #[cfg(feature = "rumqttd")]
    Rumqttd(TestBroker),
    Mosquitto(crate::mosquitto::Mosquitto),
    External(String),
}

impl RunningBroker {
    async fn start(which: &BenchBroker) -> anyhow::Result<Self> {
        Ok(match which {
            BenchBroker::Embedded => RunningBroker::InHub,
            BenchBroker::Mosquitto => {
                let program = crate::mosquitto::find_program("mosquitto").ok_or_else(|| {
                    anyhow::anyhow!("--broker mosquitto: `mosquitto` is not installed (apt-get install mosquitto)")
                })?;
                RunningBroker::Mosquitto(crate::mosquitto::Mosquitto::start(&program)?)
            }
            #[cfg(feature = "rumqttd")]
            BenchBroker::Rumqttd(tuning) => {
                let tuning = *tuning;
                RunningBroker::Rumqttd(
                    tokio::task::spawn_blocking(move || TestBroker::start_rumqttd(tuning))
                        .await??,
                )
            }
            BenchBroker::Url(url) => RunningBroker::External(url.clone()),
        })
    }

    /// What the hub child is told: `embedded` or the broker's URL.
    fn for_hub(&self) -> String {
        match self {
            RunningBroker::InHub => "embedded".to_owned(),
            #[cfg(feature = "rumqttd")]
            RunningBroker::Rumqttd(b) => b.url(),
            RunningBroker::Mosquitto(m) => m.url(),
            RunningBroker::External(u) => u.clone(),
        }
    }
}

/// Traffic seen by the spy on the cluster topics.
#[derive(Debug, Default)]
struct Tally {
    bytes: BTreeMap<String, usize>,
    messages: BTreeMap<(String, String), usize>,
    last_size: BTreeMap<String, usize>,
}

fn wire_size(m: &MqttMessage) -> usize {
    m.topic.len()
        + m.payload.len()
        + m.content_type.as_ref().map_or(0, String::len)
        + m.user_properties
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>()
}

async fn spy(broker_url: &str) -> anyhow::Result<(Arc<Mutex<Tally>>, tokio::task::JoinHandle<()>)> {
    let mut probe = Probe::connect(broker_url).await?;
    probe
        .subscribe("sources/+/consumers/+/sourceevents")
        .await?;
    probe.subscribe("sources/+/consumers/+/agentevents").await?;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let t = tally.clone();
    let task = tokio::spawn(async move {
        while let Some(m) = probe.recv(Duration::from_secs(3600)).await {
            let source = m.topic.split('/').nth(1).unwrap_or_default().to_owned();
            let ty = m
                .user_property("ce-type")
                .unwrap_or("(not a CloudEvent)")
                .to_owned();
            let size = wire_size(&m);
            let mut t = t.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            *t.bytes.entry(source.clone()).or_default() += size;
            *t.messages.entry((source, ty.clone())).or_default() += 1;
            t.last_size.insert(ty, size);
        }
    });
    Ok((tally, task))
}

struct Workers {
    children: Vec<(Child, Option<ChildStdin>)>,
}

impl Workers {
    async fn spawn(
        broker_url: &str,
        opts: &BenchOptions,
        mode: &str,
        extra: &[String],
    ) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("path of fleet-bench")?;
        let mut children = Vec::new();
        let mut first = 0;
        while first < opts.agents {
            let count = opts.agents_per_process.min(opts.agents - first);
            let mut cmd = Command::new(&exe);
            cmd.arg("worker")
                .args(["--mode", mode, "--broker", broker_url])
                .args(["--first", &first.to_string(), "--count", &count.to_string()])
                .args(extra)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .kill_on_drop(true);
            let mut child = cmd
                .spawn()
                .with_context(|| format!("start worker {}", exe.display()))?;
            let stdin = child.stdin.take();
            children.push((child, stdin));
            first += count;
        }
        Ok(Workers { children })
    }

    /// CPU time of every worker process so far, summed.
    fn cpu_time(&self) -> Duration {
        self.children
            .iter()
            .filter_map(|(c, _)| c.id())
            .map(|pid| procfs::cpu_time(&pid.to_string()))
            .sum()
    }

    fn rss_kib(&self) -> u64 {
        self.children
            .iter()
            .filter_map(|(c, _)| c.id())
            .map(|pid| procfs::memory(&pid.to_string()).rss_kib)
            .sum()
    }

    /// Closes the workers' stdin (they stop their agents) and reaps them.
    async fn stop(mut self) {
        for (child, stdin) in &mut self.children {
            drop(stdin.take());
            if tokio::time::timeout(Duration::from_secs(30), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
    }
}

async fn poll_until<T, F, Fut>(what: &str, opts: &BenchOptions, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let mut interval = tokio::time::interval(opts.poll);
    let run = async {
        loop {
            interval.tick().await;
            if let Some(v) = check().await {
                return v;
            }
        }
    };
    tokio::time::timeout(opts.timeout, run)
        .await
        .map_err(|_| anyhow::anyhow!("timed out after {:?} waiting for {what}", opts.timeout))
}

/// Runs both measurements on one broker.
///
/// # Errors
/// When a component does not start or a phase exceeds the timeout.
pub async fn run(opts: &BenchOptions, dir: &Path) -> anyhow::Result<Report> {
    let n = opts.agents;
    let broker = RunningBroker::start(&opts.broker).await?;
    if opts.secure && !matches!(opts.broker, BenchBroker::Embedded) {
        bail!("--secure is about the hub's embedded broker: use it with --broker embedded");
    }
    let hub = HubProcess::start(
        &dir.join("hub"),
        &broker.for_hub(),
        opts.intakes,
        opts.secure,
    )
    .await
    .context("hub starts")?;
    let url = hub.url().to_owned();
    // With logins nobody may read every cluster's topics: no spy then.
    let (tally, spy_task) = if opts.secure {
        (Arc::new(Mutex::new(Tally::default())), None)
    } else {
        let (tally, task) = spy(&url).await?;
        (tally, Some(task))
    };
    let ca_file = opts
        .secure
        .then(|| dir.join("hub").join("pki").join("ca.pem"));
    let token = if opts.secure {
        Some(
            ocm_edge_hub::registration::join_token::JoinTokens::load_or_create(&dir.join("hub"))?
                .create(chrono::Duration::hours(24), chrono::Utc::now())?
                .token,
        )
    } else {
        None
    };
    let admin_options = ocm_edge_cli::client::ConnectOptions {
        timeout: opts.timeout,
        tls: ocm_edge_mqtt::TlsFiles {
            ca_file: ca_file.clone(),
            ..Default::default()
        },
        // The first admin credential, written by the hub process at its first start.
        credentials: Some(
            dir.join("hub")
                .join(ocm_edge_hub::admin::users::ADMIN_CREDENTIALS),
        ),
        ..Default::default()
    };
    let admin = AdminClient::connect_with(&url, "ocm-edge", &admin_options).await?;

    // Real fleet.
    let agents_dir = match &opts.agents_dir {
        Some(parent) => tempfile::Builder::new()
            .prefix("fleet-bench-agents-")
            .tempdir_in(parent)
            .with_context(|| format!("agents' directory in {}", parent.display()))?,
        None => tempfile::tempdir_in(dir)?,
    };
    let started = Instant::now();
    let workers = Workers::spawn(
        &url,
        opts,
        "real",
        &[
            "--dir".into(),
            agents_dir.path().display().to_string(),
            "--ready-delay-ms".into(),
            opts.ready_delay.as_millis().to_string(),
        ]
        .into_iter()
        .chain(
            ca_file
                .iter()
                .flat_map(|f| ["--ca-file".into(), f.display().to_string()]),
        )
        .chain(token.iter().flat_map(|t| ["--token".into(), t.clone()]))
        .collect::<Vec<String>>(),
    )
    .await?;
    // Polling cheap counters, not lists: listing 10,000 clusters every 50 ms would cost the
    // hub more than what is measured.
    poll_until("every join request", opts, || async {
        let s = admin.stats().await.ok()?;
        (s.clusters_pending >= n as u64).then_some(())
    })
    .await?;
    let join = started.elapsed();

    let t = Instant::now();
    let results: Vec<_> = futures::stream::iter((0..n).map(|i| {
        let admin = &admin;
        async move { admin.accept_cluster(&cluster_name(i)).await }
    }))
    .buffer_unordered(32)
    .collect()
    .await;
    if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
        bail!("accept failed: {e}");
    }
    let accept = t.elapsed();

    let base = admin
        .stats()
        .await?
        .counters
        .get("statusesAccepted")
        .copied()
        .unwrap_or(0);
    let mut rounds = Vec::with_capacity(opts.rounds.max(1));
    let mut statuses_counted = Duration::ZERO;
    let mut hub_memory_first = procfs::Memory::default();
    let mut hub_rss_by_round_kib = Vec::with_capacity(opts.rounds.max(1));
    let mut cpu_rounds = Duration::ZERO;
    let mut agents_cpu_rounds = Duration::ZERO;
    for round in 1..=opts.rounds.max(1) {
        let cpu0 = hub.cpu_time();
        let agents_cpu0 = workers.cpu_time();
        let t0 = Instant::now();
        // Each round changes the image, so every cluster gets a new version of the work.
        let written = admin
            .create_work(CreateWork {
                name: "bench".into(),
                clusters: (0..n).map(cluster_name).collect(),
                manifests: vec![crate::manifests::deployment(
                    "default",
                    "bench",
                    1,
                    &format!("nginx:1.27.{round}"),
                )],
                overwrite: round > 1,
                ..CreateWork::default()
            })
            .await?;
        let version = written.first().map_or(0, |w| w.work.version);
        // Every agent answers each version with (at least) one status: wait for the counter,
        // then check the works themselves.
        poll_until("N statuses accepted by the hub", opts, || async {
            let s = admin.stats().await.ok()?;
            (s.counters.get("statusesAccepted").copied().unwrap_or(0) >= base + (round * n) as u64)
                .then_some(())
        })
        .await?;
        if round == 1 {
            statuses_counted = t0.elapsed();
        }
        poll_until("every work Applied at the hub", opts, || async {
            let ws = admin.list_works(None).await.ok()?;
            (ws.iter()
                .filter(|w| w.version == version && w.status_version == Some(version) && applied(w))
                .count()
                >= n)
                .then_some(())
        })
        .await?;
        rounds.push(t0.elapsed());
        let cpu = hub.cpu_time().saturating_sub(cpu0);
        let agents_cpu = workers.cpu_time().saturating_sub(agents_cpu0);
        let memory = hub.memory();
        if round == 1 {
            hub_memory_first = memory;
        }
        hub_rss_by_round_kib.push(memory.rss_kib);
        if round > 1 || opts.rounds <= 1 {
            cpu_rounds += cpu;
            agents_cpu_rounds += agents_cpu;
        }
    }
    let first_rollout = rounds[0];
    let converge = median(if rounds.len() > 1 {
        &rounds[1..]
    } else {
        &rounds[..]
    });
    let hub_cpu_converge = cpu_rounds / (opts.rounds.max(2) - 1) as u32;
    let agents_cpu_converge = agents_cpu_rounds / (opts.rounds.max(2) - 1) as u32;
    let hub_memory = hub.memory();
    hold_for_a_profiler().await;
    let hub_open_files = hub.open_files();
    let agents_rss_kib = workers.rss_kib();

    let (spec_bytes, status_bytes, bytes_per_cluster, messages_per_cluster_by_type) = {
        let t = tally
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let spec = t
            .last_size
            .get("io.open-cluster-management.works.v1alpha1.manifestbundles.spec.create_request")
            .copied()
            .unwrap_or(0);
        let status = t
            .last_size
            .get("io.open-cluster-management.works.v1alpha1.manifestbundles.status.update_request")
            .copied()
            .unwrap_or(0);
        let total = t.bytes.get("ocm-edge").copied().unwrap_or(0);
        let by_type = t
            .messages
            .iter()
            .filter(|((s, _), _)| s == "ocm-edge")
            .map(|((_, ty), c)| (ty.clone(), *c as f64 / n as f64))
            .collect();
        (spec, status, total as f64 / n as f64, by_type)
    };
    workers.stop().await;

    // Transport alone, same broker, same sizes, its own topics (anonymous clients: not with
    // logins).
    let transport = if opts.secure {
        Duration::ZERO
    } else {
        ideal_transport(&url, opts, spec_bytes, status_bytes).await?
    };

    if let Some(task) = spy_task {
        task.abort();
    }
    admin.disconnect().await;
    let broker_dropped = hub.stop().await?;
    drop(broker);
    Ok(Report {
        broker_dropped,
        broker: opts.broker.to_string(),
        secure: opts.secure,
        agents: n,
        worker_processes: n.div_ceil(opts.agents_per_process.max(1)),
        intakes: opts.intakes,
        agents_dir: agents_dir.path().to_path_buf(),
        join,
        accept,
        first_rollout,
        converge,
        rounds,
        statuses_counted,
        transport,
        hub_cpu_converge,
        agents_cpu_converge,
        hub_memory_first,
        hub_memory,
        hub_rss_by_round_kib,
        agents_rss_kib,
        hub_open_files,
        spec_bytes,
        status_bytes,
        bytes_per_cluster,
        messages_per_cluster_by_type,
    })
}

/// With [`HOLD_ENV`] set to N, waits N seconds after the last round with every agent still
/// connected (the state `hub_rss_end_mb` is measured in), so a profiler attached to the hub (see
/// [`hub_process::WRAPPER_ENV`]) can take its snapshot then.
async fn hold_for_a_profiler() {
    let Some(secs) = std::env::var(HOLD_ENV)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    else {
        return;
    };
    eprintln!("fleet-bench: holding {secs} s after the last round ({HOLD_ENV})");
    tokio::time::sleep(Duration::from_secs(secs)).await;
}

/// Environment variable: seconds to hold after the last round (profiling).
pub const HOLD_ENV: &str = "FLEET_BENCH_HOLD_SECS";

/// Whether the hub holds an Applied status for the version it has (not an older one's).
fn applied(w: &ocm_edge_schemas::admin::WorkView) -> bool {
    find_condition(&w.conditions, "Applied")
        .is_some_and(|c| c.status == ConditionStatus::True && c.observed_generation == w.version)
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

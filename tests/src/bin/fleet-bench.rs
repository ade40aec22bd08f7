//! fleet-bench: how long the real hub takes to bring one work to N simulated agents, compared
//! with the transport alone on the same broker. Prints figures; asserts nothing.
//!
//! `cargo run --release -p ocm-edge-tests --bin fleet-bench -- --agents 200 [--broker embedded|mosquitto|URL] [--rounds 3]`
//!
//! With `--features rumqttd`, `--broker rumqttd` and `--broker rumqttd-small-logs` run the previous
//! embedded broker (rumqttd 0.20, as shipped and with small per-filter logs) for comparison.
//!
//! The last line is machine-readable: `RESULT broker=… agents=… join_s=… accept_s=… first_rollout_s=…
//! converge_s=… transport_s=… ratio=… hub_cpu_ms_per_cluster=… hub_rss_first_mb=… hub_rss_end_mb=…
//! wire_bytes_per_cluster=…`, where `ratio` = transport_s / converge_s (1.0 = the hub adds nothing).

use std::path::PathBuf;

/// The allocator the `ocm-edge` and `ocm-edge-agent` binaries use (see hub/cli/src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use ocm_edge_tests::bench::worker::{WorkerMode, run_worker};
use ocm_edge_tests::bench::{BenchBroker, BenchOptions, run};

#[derive(Debug, Parser)]
#[command(about = "ocm-edge fleet benchmark: real hub vs transport alone, same broker")]
struct Args {
    /// Simulated agents (clusters).
    #[arg(long, default_value_t = 200)]
    agents: usize,
    /// Agents per worker process (each agent holds a TCP connection and a redb file; a process
    /// may hold at most 20,000 open files).
    #[arg(long, default_value_t = 500)]
    agents_per_process: usize,
    /// Simulated Deployment ready delay in milliseconds.
    #[arg(long, default_value_t = 0)]
    ready_delay_ms: u64,
    /// Bound on each phase, in seconds.
    #[arg(long, default_value_t = 600)]
    timeout_secs: u64,
    /// How often the hub is polled for progress, in milliseconds.
    #[arg(long, default_value_t = 50)]
    poll_ms: u64,
    /// Broker: `embedded` (the hub's, in its process), `mosquitto` (started by the bench), the
    /// URL of a running broker, or (built with `--features rumqttd`) `rumqttd` /
    /// `rumqttd-small-logs`.
    #[arg(long, default_value = "embedded")]
    broker: BenchBroker,
    /// Rounds: round 1 creates the work, each later one updates it on every cluster; the
    /// convergence figure is the median of rounds 2..R.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// The hub's agent-event intake sessions (`ocm-edge hub --intakes`; more than one share
    /// the subscription with `$share/`).
    #[arg(long, default_value_t = ocm_edge_hub::config::DEFAULT_INTAKES)]
    intakes: usize,
    /// Where the simulated agents keep their stores (default: /dev/shm when there is one, so
    /// that thousands of agents do not measure one shared disk's fsyncs; the hub's store stays
    /// on disk). Give a directory on disk to include them.
    #[arg(long, value_name = "DIR")]
    agents_dir: Option<PathBuf>,
    /// The embedded broker as `ocm-edge hub` runs it by default: TLS with the hub's CA and logins
    /// (agents prove their keys, joining with a token; the CLI its credential). Without it the
    /// bench measures the plaintext, anonymous listener (`--insecure-plaintext`), as the figures
    /// in docs/performance.md for that listener are. With it there is no spy (nobody may read every
    /// cluster's topics) and no ideal transport run: no wire bytes, no ratio.
    #[arg(long)]
    secure: bool,
    #[command(subcommand)]
    worker: Option<Worker>,
}

#[derive(Debug, Subcommand)]
enum Worker {
    /// Internal: run a slice of the fleet (started by fleet-bench itself).
    Worker {
        #[arg(long)]
        mode: String,
        #[arg(long)]
        broker: String,
        #[arg(long)]
        first: usize,
        #[arg(long)]
        count: usize,
        #[arg(long)]
        dir: Option<PathBuf>,
        #[arg(long, default_value_t = 0)]
        ready_delay_ms: u64,
        /// The hub's CA (secure runs).
        #[arg(long)]
        ca_file: Option<PathBuf>,
        /// A join token (secure runs).
        #[arg(long)]
        token: Option<String>,
        #[arg(long, default_value_t = 0)]
        reply_bytes: usize,
    },
    /// Internal: run the hub of a run in its own process (started by fleet-bench itself).
    Hub {
        #[arg(long)]
        data_dir: PathBuf,
        /// `embedded` or a broker URL.
        #[arg(long)]
        broker: String,
        #[arg(long)]
        intakes: usize,
        /// TLS and logins (the hub's defaults) instead of plaintext.
        #[arg(long)]
        secure: bool,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "error,rumqttd=off,ocm_edge_mqtt::broker=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    if let Some(Worker::Hub {
        data_dir,
        broker,
        intakes,
        secure,
    }) = args.worker
    {
        return ocm_edge_tests::bench::hub_process::serve(data_dir, &broker, intakes, secure).await;
    }
    if let Some(Worker::Worker {
        mode,
        broker,
        first,
        count,
        dir,
        ready_delay_ms,
        reply_bytes,
        ca_file,
        token,
    }) = args.worker
    {
        let mode = match mode.as_str() {
            "real" => WorkerMode::Real {
                dir: dir.ok_or_else(|| anyhow::anyhow!("--dir is required for real workers"))?,
                ready_delay: Duration::from_millis(ready_delay_ms),
                ca_file,
                token,
            },
            "ideal" => WorkerMode::Ideal { reply_bytes },
            other => anyhow::bail!("unknown worker mode {other:?} (real or ideal)"),
        };
        return run_worker(&broker, first, count, mode).await;
    }
    let opts = BenchOptions {
        agents: args.agents.max(1),
        agents_per_process: args.agents_per_process.max(1),
        ready_delay: Duration::from_millis(args.ready_delay_ms),
        timeout: Duration::from_secs(args.timeout_secs),
        poll: Duration::from_millis(args.poll_ms.max(1)),
        broker: args.broker,
        rounds: args.rounds.max(1),
        intakes: args.intakes,
        secure: args.secure,
        agents_dir: args
            .agents_dir
            .or_else(ocm_edge_tests::bench::default_agents_dir),
    };
    let dir = tempfile::tempdir()?;
    let report = run(&opts, dir.path()).await?;
    print!("{report}");
    Ok(())
}

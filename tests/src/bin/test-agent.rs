//! An edge agent (sim applier) in its own process for tests that kill it with SIGKILL
//! (`kill -9`), with the fleet's fast test timings. Prints `ready` once started; stops gracefully
//! when stdin closes.
//!
//! `test-agent --cluster c1 --broker mqtt://127.0.0.1:PORT --data-dir DIR [--product-link-settings]`

use std::io::Write;
use std::time::Duration;

use clap::Parser;
use ocm_edge_agent::{AgentConfig, ApplierConfig, start_agent};
use ocm_edge_tests::fleet::{RECONCILE_INTERVAL, SIM_READY_DELAY};
use ocm_edge_tests::process::{ChildArgs, init_child_logging, wait_stdin_closed};

#[derive(Debug, Parser)]
struct Args {
    #[arg(long)]
    cluster: String,
    /// Keep the product's link settings (keepalive 60 s, lease 600 s, 16 KiB chunks, Receive
    /// Maximum 4) instead of the fast test timings: for tests of slow links.
    #[arg(long)]
    product_link_settings: bool,
    #[command(flatten)]
    child: ChildArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    init_child_logging();
    let args = Args::parse();
    let mut cfg = AgentConfig::new(args.cluster, args.child.broker, args.child.data_dir);
    cfg.source_id = args.child.source_id;
    cfg.tls.ca_file = args.child.broker_ca_file;
    cfg.applier = ApplierConfig::Sim {
        ready_delay: SIM_READY_DELAY,
    };
    cfg.reconcile_interval = RECONCILE_INTERVAL;
    if !args.product_link_settings {
        cfg.keepalive = Duration::from_secs(5);
        cfg.lease_duration_seconds = 5;
    }
    cfg.join_retry = Duration::from_secs(1);
    cfg.reconnect_min = Duration::from_millis(100);
    cfg.reconnect_max = Duration::from_secs(1);
    let agent = start_agent(cfg).await?;
    println!("ready");
    std::io::stdout().flush()?;
    wait_stdin_closed().await;
    agent.shutdown().await?;
    Ok(())
}

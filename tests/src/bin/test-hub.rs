//! A hub in its own process for tests that kill it with SIGKILL (`kill -9`): external broker,
//! data dir and source id from the command line. Prints `ready <broker-url>` once started; stops
//! gracefully when stdin closes.
//!
//! `test-hub --broker mqtt://127.0.0.1:PORT --data-dir DIR [--source-id ocm-edge]
//! [--report-flush-every-ms MS]`

use clap::Parser;
use ocm_edge_hub::{BrokerConfig, HubConfig, start_hub};
use ocm_edge_tests::process::{ChildArgs, init_child_logging, wait_stdin_closed};
use std::io::Write;

#[derive(Debug, Parser)]
struct Args {
    #[command(flatten)]
    child: ChildArgs,
    /// `HubConfig::report_flush_every`, in milliseconds (default: the hub's).
    #[arg(long)]
    report_flush_every_ms: Option<u64>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    init_child_logging();
    let Args {
        child: args,
        report_flush_every_ms,
    } = Args::parse();
    let mut cfg = HubConfig::new(args.data_dir);
    if let Some(ms) = report_flush_every_ms {
        cfg.report_flush_every = std::time::Duration::from_millis(ms);
    }
    cfg.broker = BrokerConfig::External { url: args.broker };
    cfg.source_id = args.source_id;
    cfg.broker_tls.ca_file = args.broker_ca_file;
    let hub = start_hub(cfg).await?;
    println!("ready {}", hub.broker_url());
    std::io::stdout().flush()?;
    wait_stdin_closed().await;
    hub.shutdown().await?;
    Ok(())
}

//! `ocm-edge`: the hub and its command line. Everything lives in the library (`ocm_edge_cli`);
//! this file parses arguments, sets up logging and the runtime, and turns errors into exit codes.

use std::process::ExitCode;

use clap::Parser;
use ocm_edge_cli::{Cli, Command};

/// mimalloc, not the system allocator: measured side by side with fleet-bench at 5,000 clusters
/// (one run each), the hub process used 30% less CPU per cluster (0.77 -> 0.54 ms) and 30% less
/// memory (626 -> 443 MB after 5 rounds), with half the growth between rounds.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.command);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(ocm_edge_cli::run(cli))?;
    Ok(())
}

/// Logs go to stderr so tables and `-o json` on stdout stay clean. The hub logs at info by
/// default; one-shot commands only warn. The embedded broker (rmqtt) reports every connection and
/// disconnection at INFO, which is noise for an operator with a fleet, so only its warnings show
/// unless `RUST_LOG` asks for more (e.g. `RUST_LOG=info,rmqtt=info`); ocm-edge logs what the
/// broker drops itself. `RUST_LOG` overrides everything.
fn init_logging(command: &Command) {
    let default = match command {
        Command::Hub(_) => "info,rmqtt=warn",
        // A one-shot command reports a broker it cannot reach as its error; no retry log.
        _ => "warn,ocm_edge_mqtt=error",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours for a person at a terminal; plain text for files, journald and kubectl logs.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

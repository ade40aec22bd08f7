//! `ocm-edge-agent`: the edge agent binary. The flags are the library's ([`ocm_edge_agent::flags`]);
//! this file sets up logging, runs the agent or the `sim` subcommand, and turns errors into exit codes.

use anyhow::{Context, bail};
use clap::Parser;
use ocm_edge_agent::applier::sim_control::{self, ObjectRef, SimRequest};
use ocm_edge_agent::flags::{Cli, Command, SimAction};
use ocm_edge_agent::run_agent;

// The system allocator (glibc's malloc; musl's in the static binaries), not the hub's mimalloc:
// an agent serves one cluster, and its idle memory counts more than allocation speed. Measured
// with tests/bench/agent-rss.sh (release, one applied work, idle): mimalloc advises its 1 GiB
// arena for transparent huge pages, so the agent's few hundred KiB of heap sat in 8-12 MB of
// them (RSS: sim 24.6-28.1 MB, kube 28.7-29.1 MB); the system allocator: sim 15.3-16.2 MB, kube
// 18.0 MB, 0.6 MB under mimalloc with huge pages off (MIMALLOC_ALLOW_THP=0), and with no option
// to set. The CPU from start to an applied work (20-40 ms) did not differ.

fn object_ref(kind: &str, object: &str) -> ObjectRef {
    let (namespace, name) = object.split_once('/').unwrap_or(("", object));
    ObjectRef {
        kind: kind.to_owned(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    }
}

async fn run_sim(data_dir: &std::path::Path, action: SimAction) -> anyhow::Result<()> {
    let request = match action {
        SimAction::Get { kind, object } => SimRequest::Get(object_ref(&kind, &object)),
        SimAction::Delete { kind, object } => SimRequest::Delete(object_ref(&kind, &object)),
        SimAction::Set {
            kind,
            object,
            assignment,
        } => {
            let Some((pointer, json)) = assignment.split_once('=') else {
                bail!("{assignment:?} is not POINTER=JSON (e.g. /spec/replicas=5)");
            };
            if !pointer.starts_with('/') {
                bail!("{pointer:?} is not a JSON pointer: it starts with / (e.g. /spec/replicas)");
            }
            let value: serde_json::Value = serde_json::from_str(json).with_context(|| {
                format!("{json:?} is not JSON (quote strings: '\"nginx:1.0\"')")
            })?;
            SimRequest::Set {
                object: object_ref(&kind, &object),
                pointer: pointer.to_owned(),
                value,
            }
        }
        SimAction::ApiDown => SimRequest::ApiHealthy { healthy: false },
        SimAction::ApiUp => SimRequest::ApiHealthy { healthy: true },
    };
    let reply = sim_control::request(data_dir, &request).await?;
    if let Some(object) = reply.object {
        println!("{}", serde_json::to_string_pretty(&object)?);
    }
    Ok(())
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
        // Colours for a person at a terminal; plain text for files, journald and kubectl logs.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Sim { local, action }) => return run_sim(&local.data_dir, action).await,
        Some(Command::Hold { local, note }) => {
            let data_dir = local.data_dir;
            let hold = ocm_edge_agent::maintenance::Hold {
                since: chrono::Utc::now(),
                note: note.unwrap_or_default(),
            };
            ocm_edge_agent::maintenance::hold::put(&data_dir, &hold)?;
            println!(
                "updates held on this machine ({}); the running agent stops applying new versions within one reconcile; `ocm-edge-agent release` ends the hold",
                ocm_edge_agent::maintenance::hold::file(&data_dir).display()
            );
            return Ok(());
        }
        Some(Command::Release { local }) => {
            let data_dir = local.data_dir;
            if ocm_edge_agent::maintenance::hold::release(&data_dir)? {
                println!(
                    "hold released; versions that waited are applied at the next reconcile, in a maintenance window"
                );
            } else {
                println!("no hold in {}", data_dir.display());
            }
            return Ok(());
        }
        Some(Command::Unjoin {
            keep_resources,
            timeout_seconds,
        }) => {
            let cfg = cli.agent_config()?;
            let done = ocm_edge_agent::unjoin::unjoin(
                &cfg,
                keep_resources,
                std::time::Duration::from_secs(timeout_seconds),
            )
            .await?;
            println!(
                "cluster {} unjoined: {} work(s), {} resource(s) removed, {} left on the cluster; \
                 the hub forgets the cluster; store and key wiped from {}",
                cfg.cluster_name,
                done.works,
                done.deleted,
                done.kept,
                cfg.data_dir.display()
            );
            return Ok(());
        }
        None => {}
    }
    let cfg = cli.agent_config()?;
    cfg.validate().context("invalid configuration")?;
    tracing::info!(cluster = %cfg.cluster_name, broker = %cfg.broker_url, source = %cfg.source_id, "starting ocm-edge-agent");
    // Listening from now on: a SIGTERM during start-up stops the agent gracefully.
    let shutdown = ocm_edge_mqtt::shutdown_signal();
    run_agent(cfg, async move {
        shutdown.await;
        tracing::info!("shutting down");
    })
    .await
    .context("agent stopped")?;
    Ok(())
}

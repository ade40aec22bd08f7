//! The hub of a benchmark run in a process of its own (`fleet-bench hub`), so its CPU and memory
//! figures are the hub's (with its embedded broker when it has one), not the bench's: the bench's
//! admin client lists every work while it polls and its spy receives every message, and neither
//! runs in a real hub. On the embedded broker, the broker's side of them (delivering every cluster
//! message to the spy too, answering the admin polls) still runs in the hub process.
//!
//! The child prints `ready <broker-url> <pid>` once the hub is subscribed, stops when its stdin closes,
//! and prints `broker-dropped <n>` (embedded broker) before it exits.
//!
//! To profile the hub, set [`WRAPPER_ENV`] to a command line the hub child runs under, e.g.
//! `FLEET_BENCH_HUB_WRAPPER="heaptrack -o /tmp/hub"` or `"perf record -e cpu-clock -g -o /tmp/hub.perf"`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use ocm_edge_hub::{BrokerConfig, EmbeddedSecurity, HubConfig, start_hub};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::procfs;

/// Environment variable: a command (split on spaces) the hub child is started under.
pub const WRAPPER_ENV: &str = "FLEET_BENCH_HUB_WRAPPER";

/// How long the hub child may take to say `ready`.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long it may take to stop.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// The `fleet-bench hub` side: runs a hub until stdin closes.
///
/// `broker` is `embedded` (the hub starts its embedded broker on a free port, as `ocm-edge hub`
/// does by default) or the URL of a running broker.
///
/// # Errors
/// When the hub does not start or stops with an error.
pub async fn serve(
    data_dir: PathBuf,
    broker: &str,
    intakes: usize,
    secure: bool,
) -> anyhow::Result<()> {
    let mut cfg = HubConfig::new(data_dir);
    cfg.broker = if broker == "embedded" {
        BrokerConfig::Embedded {
            listen: "127.0.0.1:0".parse()?,
        }
    } else {
        BrokerConfig::External {
            url: broker.to_owned(),
        }
    };
    // Plaintext unless asked (`fleet-bench --secure`): the plaintext figures in docs/performance.md
    // are for the plaintext listener, and the spy and the ideal run need anonymous access.
    if !secure {
        cfg.embedded_security = EmbeddedSecurity::InsecurePlaintext;
    }
    cfg.intakes = intakes;
    let hub = start_hub(cfg).await?;
    tokio::time::timeout(START_TIMEOUT, hub.subscribed())
        .await
        .context("the hub did not subscribe to its broker")?;
    // Its own pid: under a wrapper the bench's child is the wrapper.
    println!("ready {} {}", hub.broker_url(), std::process::id());
    crate::process::wait_stdin_closed().await;
    let dropped = hub.embedded_broker().map(|b| b.stats().dropped());
    hub.shutdown().await?;
    if let Some(n) = dropped {
        println!("broker-dropped {n}");
    }
    Ok(())
}

/// The bench side: the running hub child.
#[derive(Debug)]
pub struct HubProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    pid: String,
    url: String,
}

impl HubProcess {
    /// Starts `fleet-bench hub` and waits for its `ready` line.
    ///
    /// # Errors
    /// When it cannot start or does not say `ready` in time.
    pub async fn start(
        data_dir: &Path,
        broker: &str,
        intakes: usize,
        secure: bool,
    ) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("path of fleet-bench")?;
        let wrapper = std::env::var(WRAPPER_ENV).unwrap_or_default();
        let mut wrapper = wrapper.split_whitespace();
        let mut cmd = match wrapper.next() {
            Some(program) => {
                let mut cmd = Command::new(program);
                cmd.args(wrapper).arg(&exe);
                cmd
            }
            None => Command::new(&exe),
        };
        let mut child = cmd
            .arg("hub")
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--broker", broker, "--intakes", &intakes.to_string()])
            .args(secure.then_some("--secure"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("start the hub process ({} hub)", exe.display()))?;
        let stdin = child.stdin.take();
        let mut stdout =
            BufReader::new(child.stdout.take().context("hub stdout is piped")?).lines();
        let (url, pid) = tokio::time::timeout(START_TIMEOUT, async {
            while let Some(line) = stdout.next_line().await? {
                if let Some((url, pid)) = line
                    .strip_prefix("ready ")
                    .and_then(|rest| rest.split_once(' '))
                {
                    return Ok((url.to_owned(), pid.trim().to_owned()));
                }
            }
            bail!("the hub process exited before `ready` (see its stderr above)")
        })
        .await
        .with_context(|| {
            format!("the hub process did not say `ready` within {START_TIMEOUT:?}")
        })??;
        Ok(HubProcess {
            child,
            stdin,
            stdout,
            pid,
            url,
        })
    }

    /// The broker URL the hub uses (its embedded broker's when it has one).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// CPU time of the hub process so far.
    pub fn cpu_time(&self) -> Duration {
        procfs::cpu_time(&self.pid)
    }

    /// Memory of the hub process now.
    pub fn memory(&self) -> procfs::Memory {
        procfs::memory(&self.pid)
    }

    /// Open files of the hub process now.
    pub fn open_files(&self) -> usize {
        procfs::open_files(&self.pid)
    }

    /// Stops the hub (closes its stdin) and returns what its embedded broker dropped, if it has
    /// one.
    ///
    /// # Errors
    /// When it does not stop in time or exits with a failure.
    pub async fn stop(mut self) -> anyhow::Result<Option<u64>> {
        drop(self.stdin.take());
        let mut dropped = None;
        let stopped = tokio::time::timeout(STOP_TIMEOUT, async {
            while let Some(line) = self.stdout.next_line().await? {
                if let Some(n) = line.strip_prefix("broker-dropped ") {
                    dropped = n.trim().parse().ok();
                }
            }
            self.child.wait().await
        })
        .await;
        match stopped {
            Ok(Ok(status)) if status.success() => Ok(dropped),
            Ok(Ok(status)) => bail!("the hub process exited with {status}"),
            Ok(Err(e)) => Err(e).context("waiting for the hub process"),
            Err(_) => {
                // Under a wrapper the child is the wrapper: the hub itself is `pid`.
                let _ = std::process::Command::new("kill")
                    .args(["-9", &self.pid])
                    .status();
                let _ = self.child.kill().await;
                bail!("the hub process did not stop within {STOP_TIMEOUT:?}")
            }
        }
    }
}

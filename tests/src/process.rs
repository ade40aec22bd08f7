//! A hub or agent in its own process (the `test-hub` / `test-agent` binaries), so a test can kill
//! it with SIGKILL the way a power cut or the OOM killer would.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

/// How long a child may take to say `ready`.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running child process that printed `ready`.
#[derive(Debug)]
pub struct Spawned {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Spawned {
    /// Runs `program args...` and waits until it prints a line starting with `ready`.
    ///
    /// # Panics
    /// When it does not start or exits first: a harness failure.
    pub async fn start(name: &str, program: &Path, args: &[&str]) -> Spawned {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {name} ({}): {e}", program.display()));
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(START_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.starts_with("ready") {
                    return true;
                }
            }
            false
        })
        .await;
        assert!(
            matches!(ready, Ok(true)),
            "{name} did not print `ready` within {START_TIMEOUT:?} (see its stderr above)"
        );
        // Keep draining stdout so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let stdin = child.stdin.take();
        Spawned {
            name: name.to_owned(),
            child,
            stdin,
        }
    }

    /// Kills the process with SIGKILL (no goodbye to the broker, nothing flushed) and reaps it.
    pub async fn kill9(mut self) {
        self.child
            .kill()
            .await
            .unwrap_or_else(|e| panic!("cannot kill {}: {e}", self.name));
    }

    /// Asks the process to stop (closes its stdin) and waits for it.
    ///
    /// # Panics
    /// When it does not exit within 30 s or exits with a failure.
    pub async fn stop(mut self) {
        drop(self.stdin.take());
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("{} did not stop within 30 s", self.name))
            .unwrap_or_else(|e| panic!("waiting for {}: {e}", self.name));
        assert!(status.success(), "{} exited with {status}", self.name);
    }
}

/// The child's side of [`Spawned`]: logs to stderr (`RUST_LOG`, default `warn`), so stdout
/// carries only the `ready` line.
pub fn init_child_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
}

/// The child's side of [`Spawned::stop`]: resolves when the parent closes stdin.
pub async fn wait_stdin_closed() {
    use tokio::io::AsyncReadExt;
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 64];
    while stdin.read(&mut buf).await.is_ok_and(|n| n > 0) {}
}

/// The command line the `test-hub` and `test-agent` children share.
#[derive(Debug, Clone, clap::Args)]
pub struct ChildArgs {
    /// Broker URL.
    #[arg(long)]
    pub broker: String,
    /// Data directory.
    #[arg(long)]
    pub data_dir: std::path::PathBuf,
    /// Source id of the hub.
    #[arg(long, default_value = "ocm-edge")]
    pub source_id: String,
    /// PEM CA of an mqtts:// broker.
    #[arg(long)]
    pub broker_ca_file: Option<std::path::PathBuf>,
}

/// The real `ocm-edge-agent` binary, next to the running test's directory (`cargo build -p
/// ocm-edge-agent` first; `cargo test --workspace` and `tests/kube/e2e.sh` build it).
///
/// # Panics
/// When it is not there.
pub fn agent_binary() -> PathBuf {
    workspace_binary("ocm-edge-agent", "ocm-edge-agent")
}

/// The real `ocm-edge` binary (the CLI and the hub), next to the running test's directory
/// (`cargo build -p ocm-edge-cli` first; `cargo test --workspace` and `tests/kube/e2e.sh` build
/// it).
///
/// # Panics
/// When it is not there.
pub fn cli_binary() -> PathBuf {
    workspace_binary("ocm-edge", "ocm-edge-cli")
}

/// Binary `name` of package `package` in the target directory the running test was built in.
fn workspace_binary(name: &str, package: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .join(name);
    assert!(
        bin.exists(),
        "{} is missing: cargo build -p {package}",
        bin.display()
    );
    bin
}

//! An rmqtt broker cluster for tests: N `rmqtt-node` processes (tests/rmqtt-node, rmqtt 0.24 with
//! its cluster-broadcast plugin) configured by the shipped files in
//! `broker-config/rmqtt-cluster/`, with only the addresses, node ids, certificate files and logins
//! replaced. Clients connect with TLS (`mqtts://`) and trust the [`TestPki`]'s CA.
//!
//! `rmqtt-node` needs `protoc` to build, so it is not a workspace member: `.ci/run` builds it and
//! sets [`NODE_ENV`]; locally, `cargo build --manifest-path tests/rmqtt-node/Cargo.toml` (with
//! protobuf-compiler installed) is found too.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::broker::free_port;
use crate::pki::TestPki;

/// Environment variable naming the `rmqtt-node` binary.
pub const NODE_ENV: &str = "OCM_EDGE_RMQTT_NODE";
/// How long a node may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// The addresses in the shipped files that a test replaces.
const SHIPPED_LISTENER: &str = "0.0.0.0:8883";
const SHIPPED_CERT: &str = "/etc/rmqtt/certs/broker.pem";
const SHIPPED_KEY: &str = "/etc/rmqtt/certs/broker-key.pem";
const SHIPPED_RPC: &str = "0.0.0.0:5363";
const SHIPPED_PEERS: &str = r#"node_grpc_addrs = ["1@10.0.0.1:5363", "2@10.0.0.2:5363"]"#;
const LOGINS_BEGIN: &str = "# --- BEGIN logins";
const LOGINS_END: &str = "# --- END logins ---";

/// The shipped configuration directory.
pub fn shipped_config() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../broker-config/rmqtt-cluster")
}

/// The `rmqtt-node` binary: [`NODE_ENV`], else a local build under tests/rmqtt-node/target.
/// `None` (the test is skipped, with a line saying so) when there is none, unless `CI` is set:
/// then it panics, since CI builds it.
pub fn require_rmqtt_node(test: &str) -> Option<PathBuf> {
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rmqtt-node/target");
    let found = std::env::var_os(NODE_ENV)
        .map(PathBuf::from)
        .into_iter()
        .chain(["release", "debug"].map(|p| local.join(p).join("rmqtt-node")))
        .find(|p| p.is_file());
    match found {
        Some(p) => Some(p),
        None if std::env::var_os("CI").is_some() => panic!(
            "{test}: no rmqtt-node binary but CI is set; build it as .ci/run does \
             (apt-get install protobuf-compiler; cargo build --manifest-path tests/rmqtt-node/Cargo.toml) \
             or set {NODE_ENV}"
        ),
        None => {
            eprintln!(
                "SKIPPED {test}: no rmqtt-node binary (apt-get install protobuf-compiler; \
                 cargo build --manifest-path tests/rmqtt-node/Cargo.toml); set CI=1 to make this a failure"
            );
            None
        }
    }
}

/// A running cluster; its nodes are killed when it is dropped.
#[derive(Debug)]
pub struct RmqttCluster {
    nodes: Vec<Node>,
    _dir: tempfile::TempDir,
}

#[derive(Debug)]
struct Node {
    port: u16,
    child: Child,
    log: PathBuf,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl RmqttCluster {
    /// Starts `nodes` nodes that know each other, serving `pki`'s broker certificate and letting
    /// in exactly `logins` (username, password) in place of the shipped file's logins.
    ///
    /// # Panics
    /// When a node cannot be configured or does not listen: a harness failure.
    pub fn start(
        program: &Path,
        nodes: usize,
        pki: &TestPki,
        logins: &[(String, String)],
    ) -> RmqttCluster {
        let dir = tempfile::tempdir().expect("temporary directory");
        let ports: Vec<(u16, u16)> = (0..nodes)
            .map(|_| {
                (
                    free_port().expect("free port"),
                    free_port().expect("free port"),
                )
            })
            .collect();
        let peers = ports
            .iter()
            .enumerate()
            .map(|(i, (_, rpc))| format!("\"{}@127.0.0.1:{rpc}\"", i + 1))
            .collect::<Vec<_>>()
            .join(", ");
        let rules = logins
            .iter()
            .map(|(user, password)| {
                format!("    [\"allow\", {{ user = \"{user}\", password = \"{password}\" }}, \"connect\"],\n")
            })
            .collect::<String>();
        let shipped = shipped_config();
        let read = |name: &str| {
            std::fs::read_to_string(shipped.join(name))
                .unwrap_or_else(|e| panic!("read {}: {e}", shipped.join(name).display()))
        };
        let node_toml = read("rmqtt.toml");
        let acl = replace_logins(&read("plugins/rmqtt-acl.toml"), &rules);
        let broadcast = read("plugins/rmqtt-cluster-broadcast.toml");
        assert!(
            broadcast.contains(SHIPPED_PEERS)
                && [SHIPPED_LISTENER, SHIPPED_RPC, SHIPPED_CERT, SHIPPED_KEY]
                    .iter()
                    .all(|shipped| node_toml.contains(shipped)),
            "broker-config/rmqtt-cluster changed its example addresses: update this harness"
        );
        let broadcast = broadcast.replace(SHIPPED_PEERS, &format!("node_grpc_addrs = [{peers}]"));

        let mut running = Vec::with_capacity(nodes);
        for (i, (port, rpc)) in ports.iter().enumerate() {
            let node_dir = dir.path().join(format!("node-{}", i + 1));
            std::fs::create_dir_all(node_dir.join("plugins")).expect("node directory");
            let toml = node_toml
                .replace(SHIPPED_LISTENER, &format!("127.0.0.1:{port}"))
                .replace(SHIPPED_RPC, &format!("127.0.0.1:{rpc}"))
                .replace(SHIPPED_CERT, &pki.server_cert_file.display().to_string())
                .replace(SHIPPED_KEY, &pki.server_key_file.display().to_string());
            let write = |name: &str, text: &str| {
                std::fs::write(node_dir.join(name), text).expect("write node config")
            };
            write("rmqtt.toml", &toml);
            write("plugins/rmqtt-acl.toml", &acl);
            write("plugins/rmqtt-cluster-broadcast.toml", &broadcast);
            for plugin in ["rmqtt-retainer.toml", "rmqtt-shared-subscription.toml"] {
                write(
                    &format!("plugins/{plugin}"),
                    &read(&format!("plugins/{plugin}")),
                );
            }
            let log = node_dir.join("node.log");
            let log_file = std::fs::File::create(&log).expect("node log");
            let child = Command::new(program)
                .args(["-f", "rmqtt.toml", "--id", &(i + 1).to_string()])
                .current_dir(&node_dir)
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log_file)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
            running.push(Node {
                port: *port,
                child,
                log,
            });
        }
        for node in &running {
            let addr = format!("127.0.0.1:{}", node.port).parse().expect("address");
            ocm_edge_mqtt::broker::wait_listening(addr, START_TIMEOUT).unwrap_or_else(|e| {
                panic!(
                    "rmqtt node on port {} does not listen: {e}\n{}",
                    node.port,
                    std::fs::read_to_string(&node.log).unwrap_or_default()
                )
            });
        }
        RmqttCluster {
            nodes: running,
            _dir: dir,
        }
    }

    /// `mqtts://127.0.0.1:PORT` of node `i` (0-based).
    pub fn url(&self, i: usize) -> String {
        format!("mqtts://127.0.0.1:{}", self.nodes[i].port)
    }

    /// Every node's log (for a failure message).
    pub fn logs(&self) -> String {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                format!(
                    "--- node {} ---\n{}",
                    i + 1,
                    std::fs::read_to_string(&n.log).unwrap_or_default()
                )
            })
            .collect()
    }
}

/// The shipped ACL file with its login lines replaced by `rules`.
fn replace_logins(acl: &str, rules: &str) -> String {
    let begin = acl
        .find(LOGINS_BEGIN)
        .expect("rmqtt-acl.toml marks its logins (BEGIN)");
    let begin = begin + acl[begin..].find('\n').expect("line end") + 1;
    let end = acl
        .find(LOGINS_END)
        .expect("rmqtt-acl.toml marks its logins (END)");
    let end = acl[..end].rfind('\n').expect("line start") + 1;
    format!("{}{rules}{}", &acl[..begin], &acl[end..])
}

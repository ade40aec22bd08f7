//! Real network namespaces for link faults: an edge namespace joined to the test's own namespace
//! by a veth pair, whose link a test can cut silently (a `blackhole` qdisc on both ends drops
//! every packet, no FIN or RST, like a radio link gone dead) and restore. Programs run inside it
//! with `ip netns exec`. Needs root and `ip`; [`EdgeLink::unavailable`] says why a test must be
//! skipped otherwise. Everything is removed on drop.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Errors setting up or changing a link.
#[derive(Debug, thiserror::Error)]
#[error("`{command}` failed: {detail}")]
pub struct NetnsError {
    command: String,
    detail: String,
}

fn run(program: &str, args: &[&str]) -> Result<(), NetnsError> {
    let command = format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| NetnsError {
            command: command.clone(),
            detail: e.to_string(),
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NetnsError {
            command,
            detail: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

/// Numbers the links of one test process (names and subnets must not collide).
static NEXT: AtomicU32 = AtomicU32::new(0);

/// An edge namespace and its veth link to the test's namespace.
#[derive(Debug)]
pub struct EdgeLink {
    ns: String,
    host_if: String,
    edge_if: String,
    host_ip: Ipv4Addr,
    edge_ip: Ipv4Addr,
}

impl EdgeLink {
    /// Why link-fault tests cannot run here (not root, no `ip`, no namespaces), or `None`.
    pub fn unavailable() -> Option<String> {
        // The effective uid, read from /proc (no libc call for one number).
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let root = status
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            == Some("0");
        if !root {
            return Some("needs root (network namespaces and veth links)".to_owned());
        }
        match Command::new("ip").args(["netns", "list"]).output() {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                return Some(format!(
                    "`ip netns` does not work here: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
            }
            Err(e) => return Some(format!("`ip` is not installed (iproute2): {e}")),
        }
        match Command::new("tc").arg("-V").output() {
            Ok(o) if o.status.success() => None,
            _ => Some("`tc` is not installed (iproute2)".to_owned()),
        }
    }

    /// Creates the namespace and the link, both ends up, with addresses on a /30 of
    /// 10.233.0.0/16 picked from the process id and a counter.
    ///
    /// # Errors
    /// [`NetnsError`] when a step fails (what was made so far is removed).
    pub fn create() -> Result<EdgeLink, NetnsError> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let id = (std::process::id() % 4000) * 16 + n % 16;
        let subnet = id % 16384;
        let base = subnet * 4;
        let octets = |last: u32| {
            let v = base + last;
            Ipv4Addr::new(10, 233, (v >> 8) as u8, (v & 0xff) as u8)
        };
        let link = EdgeLink {
            ns: format!("oe-edge-{id}"),
            host_if: format!("oeh{id}"),
            edge_if: format!("oee{id}"),
            host_ip: octets(1),
            edge_ip: octets(2),
        };
        let host = format!("{}/30", link.host_ip);
        let edge = format!("{}/30", link.edge_ip);
        let ns = link.ns.as_str();
        run("ip", &["netns", "add", ns])?;
        // From here on, drop removes what exists.
        run(
            "ip",
            &[
                "link",
                "add",
                &link.host_if,
                "type",
                "veth",
                "peer",
                "name",
                &link.edge_if,
            ],
        )?;
        run("ip", &["link", "set", &link.edge_if, "netns", ns])?;
        run("ip", &["addr", "add", &host, "dev", &link.host_if])?;
        run("ip", &["link", "set", &link.host_if, "up"])?;
        run(
            "ip",
            &["-n", ns, "addr", "add", &edge, "dev", &link.edge_if],
        )?;
        run("ip", &["-n", ns, "link", "set", &link.edge_if, "up"])?;
        run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
        Ok(link)
    }

    /// The test namespace's address on the link (where a broker for the edge listens).
    pub fn host_ip(&self) -> Ipv4Addr {
        self.host_ip
    }

    /// The edge namespace's address.
    pub fn edge_ip(&self) -> Ipv4Addr {
        self.edge_ip
    }

    /// `ip` and the arguments that run `program args...` inside the edge namespace.
    pub fn exec_args(&self, program: &Path, args: &[&str]) -> (PathBuf, Vec<String>) {
        let mut all = vec![
            "netns".to_owned(),
            "exec".to_owned(),
            self.ns.clone(),
            program.display().to_string(),
        ];
        all.extend(args.iter().map(|a| (*a).to_owned()));
        (PathBuf::from("ip"), all)
    }

    /// Cuts the link silently: every packet either way is dropped, nobody is told.
    ///
    /// # Errors
    /// [`NetnsError`] when `tc` fails.
    pub fn cut(&self) -> Result<(), NetnsError> {
        run(
            "tc",
            &["qdisc", "add", "dev", &self.host_if, "root", "blackhole"],
        )?;
        run(
            "tc",
            &[
                "-n",
                &self.ns,
                "qdisc",
                "add",
                "dev",
                &self.edge_if,
                "root",
                "blackhole",
            ],
        )
    }

    /// Restores a cut link.
    ///
    /// # Errors
    /// [`NetnsError`] when `tc` fails.
    pub fn restore(&self) -> Result<(), NetnsError> {
        run("tc", &["qdisc", "del", "dev", &self.host_if, "root"])?;
        run(
            "tc",
            &["-n", &self.ns, "qdisc", "del", "dev", &self.edge_if, "root"],
        )
    }
}

impl Drop for EdgeLink {
    fn drop(&mut self) {
        // Deleting one end removes the pair; deleting the namespace kills nothing (the test
        // stops its processes first) but frees the name.
        let _ = run("ip", &["link", "del", &self.host_if]);
        let _ = run("ip", &["netns", "del", &self.ns]);
    }
}

/// The link for a test, or `None` after printing why the test is skipped.
///
/// # Panics
/// When the link cannot be made although the machine can (a harness failure), or when it cannot
/// and `OCM_EDGE_REQUIRE_NETNS` is set (CI on a machine that must run these tests).
pub fn require_edge_link(test: &str) -> Option<EdgeLink> {
    if let Some(why) = EdgeLink::unavailable() {
        assert!(
            std::env::var_os("OCM_EDGE_REQUIRE_NETNS").is_none(),
            "{test}: {why}, but OCM_EDGE_REQUIRE_NETNS is set"
        );
        eprintln!("SKIPPED {test}: {why}");
        return None;
    }
    Some(EdgeLink::create().unwrap_or_else(|e| panic!("{test}: cannot make the edge link: {e}")))
}

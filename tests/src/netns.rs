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

/// Gives the host end (in the test's namespace) and the edge end (in `ns`) their addresses and
/// brings both up, with the namespace's loopback.
fn addresses_up(ns: &str, host: (&str, &str), edge: (&str, &str)) -> Result<(), NetnsError> {
    run("ip", &["addr", "add", host.1, "dev", host.0])?;
    run("ip", &["link", "set", host.0, "up"])?;
    run("ip", &["-n", ns, "addr", "add", edge.1, "dev", edge.0])?;
    run("ip", &["-n", ns, "link", "set", edge.0, "up"])?;
    run("ip", &["-n", ns, "link", "set", "lo", "up"])
}

/// `ip netns exec NS program args...` as a program and its arguments.
fn exec_in(ns: &str, program: &Path, args: &[&str]) -> (PathBuf, Vec<String>) {
    let mut all = vec![
        "netns".to_owned(),
        "exec".to_owned(),
        ns.to_owned(),
        program.display().to_string(),
    ];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    (PathBuf::from("ip"), all)
}

/// Cuts a link silently: a `blackhole` qdisc on the host end (in the test's namespace) and on
/// the edge end (in `ns`) drops every packet either way, nobody is told.
fn blackhole(ns: &str, host_if: &str, edge_if: &str) -> Result<(), NetnsError> {
    run("tc", &["qdisc", "add", "dev", host_if, "root", "blackhole"])?;
    run(
        "tc",
        &[
            "-n",
            ns,
            "qdisc",
            "add",
            "dev",
            edge_if,
            "root",
            "blackhole",
        ],
    )
}

/// Removes the qdiscs [`blackhole`] added.
fn unblackhole(ns: &str, host_if: &str, edge_if: &str) -> Result<(), NetnsError> {
    run("tc", &["qdisc", "del", "dev", host_if, "root"])?;
    run("tc", &["-n", ns, "qdisc", "del", "dev", edge_if, "root"])
}

/// Numbers the links of one test process (names and subnets must not collide).
static NEXT: AtomicU32 = AtomicU32::new(0);

/// The two ends of a link between the test's namespace and an edge namespace, and what a test
/// does with them; [`EdgeLink`] and [`ShapedLink`] dereference to it.
#[derive(Debug)]
pub struct LinkEnds {
    ns: String,
    host_if: String,
    edge_if: String,
    host_ip: Ipv4Addr,
    edge_ip: Ipv4Addr,
}

impl LinkEnds {
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
        exec_in(&self.ns, program, args)
    }

    /// Cuts the link silently: nothing more enters it either way (a `blackhole` qdisc on both
    /// ends), nobody is told. On a shaped link, packets already inside the shaper still arrive.
    ///
    /// # Errors
    /// [`NetnsError`] when `tc` fails.
    pub fn cut(&self) -> Result<(), NetnsError> {
        blackhole(&self.ns, &self.host_if, &self.edge_if)
    }

    /// Restores a cut link.
    ///
    /// # Errors
    /// [`NetnsError`] when `tc` fails.
    pub fn restore(&self) -> Result<(), NetnsError> {
        unblackhole(&self.ns, &self.host_if, &self.edge_if)
    }

    /// Bytes the test's namespace has sent toward the edge (before a shaped link loses any).
    pub fn bytes_to_edge(&self) -> u64 {
        let path = format!("/sys/class/net/{}/statistics/tx_bytes", self.host_if);
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }
}

/// An edge namespace and its veth link to the test's namespace.
#[derive(Debug)]
pub struct EdgeLink(LinkEnds);

impl std::ops::Deref for EdgeLink {
    type Target = LinkEnds;
    fn deref(&self) -> &LinkEnds {
        &self.0
    }
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
        let link = EdgeLink(LinkEnds {
            ns: format!("oe-edge-{id}"),
            host_if: format!("oeh{id}"),
            edge_if: format!("oee{id}"),
            host_ip: octets(1),
            edge_ip: octets(2),
        });
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
        addresses_up(ns, (&link.host_if, &host), (&link.edge_if, &edge))?;
        Ok(link)
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

/// Whether `test` must be skipped because of `unavailable` (then it says why on stderr).
///
/// # Panics
/// When it must be skipped but `OCM_EDGE_REQUIRE_NETNS` is set (CI on a machine that must run
/// these tests).
pub fn skipped(test: &str, unavailable: Option<String>) -> bool {
    let Some(why) = unavailable else {
        return false;
    };
    assert!(
        std::env::var_os("OCM_EDGE_REQUIRE_NETNS").is_none(),
        "{test}: {why}, but OCM_EDGE_REQUIRE_NETNS is set"
    );
    eprintln!("SKIPPED {test}: {why}");
    true
}

/// The link for a test, or `None` after printing why the test is skipped.
///
/// # Panics
/// When the link cannot be made although the machine can (a harness failure), or when it cannot
/// and `OCM_EDGE_REQUIRE_NETNS` is set (CI on a machine that must run these tests).
pub fn require_edge_link(test: &str) -> Option<EdgeLink> {
    if skipped(test, EdgeLink::unavailable()) {
        return None;
    }
    Some(EdgeLink::create().unwrap_or_else(|e| panic!("{test}: cannot make the edge link: {e}")))
}

/// The /30s of 10.234.0.0/16, one for each shaped-link namespace `oe-shaped-{index}`.
const SHAPED_SLOTS: u32 = 16_384;

/// Claims a slot for a shaped link by creating its namespace `oe-shaped-{index}`, starting from
/// an index picked from the process id and a counter and moving past names that exist. `ip netns
/// add` refuses an existing name (it creates `/run/netns/NAME` exclusively), so links made at the
/// same time, in this process or another, never share a namespace, device names or a subnet (all
/// follow from the index); a namespace left behind by a killed test only takes its own slot.
fn claim_shaped_slot() -> Result<(String, u32), NetnsError> {
    const TRIES: u32 = 64;
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let first = ((std::process::id() % 1024) * 16 + n % 16) % SHAPED_SLOTS;
    for k in 0..TRIES {
        let index = (first + k) % SHAPED_SLOTS;
        let ns = format!("oe-shaped-{index}");
        match run("ip", &["netns", "add", &ns]) {
            Ok(()) => return Ok((ns, index)),
            Err(e) if e.detail.contains("File exists") => {}
            Err(e) => return Err(e),
        }
    }
    Err(NetnsError {
        command: format!("ip netns add oe-shaped-{first}.."),
        detail: format!("{TRIES} namespaces in a row exist (left behind? see `ip netns list`)"),
    })
}

/// An edge namespace behind a slow, lossy link: two TUN devices joined by the `link-shaper`
/// process ([`crate::shaper`]), the edge one moved into the namespace. Same use as [`EdgeLink`].
///
/// Its counts (packets and bytes forwarded, lost, dropped by the queue, each way) are printed
/// to stderr by the shaper when the link is dropped.
#[derive(Debug)]
pub struct ShapedLink {
    ends: LinkEnds,
    shaper: std::process::Child,
}

impl std::ops::Deref for ShapedLink {
    type Target = LinkEnds;
    fn deref(&self) -> &LinkEnds {
        &self.ends
    }
}

impl ShapedLink {
    /// Why shaped-link tests cannot run here (as [`EdgeLink::unavailable`], or no TUN devices),
    /// or `None`.
    pub fn unavailable() -> Option<String> {
        EdgeLink::unavailable().or_else(|| {
            (!Path::new("/dev/net/tun").exists())
                .then(|| "no /dev/net/tun (TUN devices: `modprobe tun`)".to_owned())
        })
    }

    /// Starts `shaper` (the `link-shaper` binary) with `params` and `seed` (the same seed loses
    /// and delays the same packets), and makes the namespace and the link, with addresses on a
    /// /30 of 10.234.0.0/16.
    ///
    /// # Errors
    /// [`NetnsError`] when a step fails (what was made so far is removed).
    pub fn create(
        shaper: &Path,
        params: crate::shaper::LinkParams,
        seed: u64,
    ) -> Result<ShapedLink, NetnsError> {
        use std::io::BufRead;
        let (ns, index) = claim_shaped_slot()?;
        let base = index * 4;
        let octets = |last: u32| {
            let v = base + last;
            Ipv4Addr::new(10, 234, (v >> 8) as u8, (v & 0xff) as u8)
        };
        let (host_if, edge_if) = (format!("oeth{index}"), format!("oete{index}"));
        let command = format!(
            "{} --edge-tun {edge_if} --host-tun {host_if}",
            shaper.display()
        );
        let fail = |detail: String| NetnsError {
            command: command.clone(),
            detail,
        };
        let spawned = Command::new(shaper)
            .args(["--edge-tun", &edge_if, "--host-tun", &host_if])
            .args(["--rate-bps", &params.rate_bps.to_string()])
            .args(["--delay-ms", &params.delay.as_millis().to_string()])
            .args(["--jitter-ms", &params.jitter.as_millis().to_string()])
            .args(["--loss", &params.loss.to_string()])
            .args(["--queue-packets", &params.queue_packets.to_string()])
            .args(["--seed", &seed.to_string()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = run("ip", &["netns", "del", &ns]);
                return Err(fail(e.to_string()));
            }
        };
        let mut link = ShapedLink {
            ends: LinkEnds {
                ns,
                host_if,
                edge_if,
                host_ip: octets(1),
                edge_ip: octets(2),
            },
            shaper: child,
        };
        // From here on, drop stops the shaper and removes the namespace.
        let stdout = link.shaper.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        let ready = std::io::BufReader::new(stdout).read_line(&mut line);
        if !matches!(ready, Ok(n) if n > 0 && line.trim() == "READY") {
            let status = link.shaper.try_wait().ok().flatten();
            return Err(fail(format!(
                "it did not print READY (got {line:?}, exit status {status:?}; its stderr says why)"
            )));
        }
        let ns = link.ns.as_str();
        let (host, edge) = (
            format!("{}/30", link.host_ip),
            format!("{}/30", link.edge_ip),
        );
        // The shaper holds the edge device's file descriptor; the device still moves.
        run("ip", &["link", "set", &link.edge_if, "netns", ns])?;
        for (netns, dev) in [(None, &link.host_if), (Some(ns), &link.edge_if)] {
            // No IPv6 chatter (router solicitations) on a link whose bytes a test counts.
            let key = format!("net.ipv6.conf.{dev}.disable_ipv6=1");
            let _ = match netns {
                Some(ns) => run("ip", &["netns", "exec", ns, "sysctl", "-q", "-w", &key]),
                None => run("sysctl", &["-q", "-w", &key]),
            };
        }
        addresses_up(ns, (&link.host_if, &host), (&link.edge_if, &edge))?;
        Ok(link)
    }
}

impl Drop for ShapedLink {
    fn drop(&mut self) {
        // Closing its stdin makes the shaper print its counts and exit (its TUN devices go with
        // it); it is killed if it has not within a second.
        drop(self.shaper.stdin.take());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while matches!(self.shaper.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = self.shaper.kill();
        let _ = self.shaper.wait();
        let _ = run("ip", &["netns", "del", &self.ns]);
    }
}

/// A shaped link for a test (seed 1), or `None` after printing why the test is skipped (as
/// [`require_edge_link`]).
///
/// # Panics
/// As [`require_edge_link`].
pub fn require_shaped_link(
    test: &str,
    shaper: &Path,
    params: crate::shaper::LinkParams,
) -> Option<ShapedLink> {
    if skipped(test, ShapedLink::unavailable()) {
        return None;
    }
    Some(
        ShapedLink::create(shaper, params, 1)
            .unwrap_or_else(|e| panic!("{test}: cannot make the shaped link: {e}")),
    )
}

//! The figures of one benchmark run ([`Report`]) and how they print: a table for people and one
//! `RESULT key=value ...` line for scripts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::procfs;

/// Figures of one run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The broker (`embedded`, `mosquitto` or its URL).
    pub broker: String,
    /// TLS and logins on the embedded broker (no transport run, no wire bytes).
    pub secure: bool,
    pub agents: usize,
    pub worker_processes: usize,
    /// The hub's agent-event intake sessions.
    pub intakes: usize,
    /// Where the agents' stores were.
    pub agents_dir: PathBuf,
    /// All join requests pending at the hub, from the start of the workers.
    pub join: Duration,
    /// Accepting every cluster through the admin API.
    pub accept: Duration,
    /// Round 1: from the createWork request to every status Applied at the hub.
    pub first_rollout: Duration,
    /// Median of rounds 2..R (one update of the work on every cluster until every status of the
    /// new version is back at the hub); round 1 when there is only one.
    pub converge: Duration,
    /// Every round's time, round 1 first.
    pub rounds: Vec<Duration>,
    /// From the createWork request to the hub having accepted N statuses (its counter).
    pub statuses_counted: Duration,
    /// Transport alone: one spec-sized message per cluster, one status-sized reply each.
    pub transport: Duration,
    /// Hub process (hub + its embedded broker when it has one) CPU per converging round
    /// (rounds 2..R; round 1 when there is only one).
    pub hub_cpu_converge: Duration,
    /// Worker processes' (the agents') CPU per converging round, summed: on one box the agents
    /// share its cores with the hub, so this bounds how fast any hub can converge here.
    pub agents_cpu_converge: Duration,
    /// Hub process memory after the first round.
    pub hub_memory_first: procfs::Memory,
    /// Hub process memory after the last round.
    pub hub_memory: procfs::Memory,
    /// Hub process RSS after each round, round 1 first (where it levels off).
    pub hub_rss_by_round_kib: Vec<u64>,
    /// Worker processes' resident memory after convergence, summed.
    pub agents_rss_kib: u64,
    /// Open files of the hub process after convergence.
    pub hub_open_files: usize,
    /// Deliveries the embedded broker dropped during the run (None: the broker does not say).
    pub broker_dropped: Option<u64>,
    /// Bytes of the work's spec event and of one status event (payload + topic + properties).
    pub spec_bytes: usize,
    pub status_bytes: usize,
    /// Every byte on the cluster topics during the real run, per cluster.
    pub bytes_per_cluster: f64,
    /// Messages on the cluster topics during the real run, per cluster, by CloudEvent type.
    pub messages_per_cluster_by_type: BTreeMap<String, f64>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let n = self.agents.max(1) as f64;
        writeln!(
            f,
            "fleet-bench: {} simulated agents in {} worker process(es), broker {}, {} hub intake(s)",
            self.agents, self.worker_processes, self.broker, self.intakes
        )?;
        writeln!(f, "  agents' stores in {}", self.agents_dir.display())?;
        writeln!(
            f,
            "  join (all pending at hub) : {:>10.1} ms",
            ms(self.join)
        )?;
        writeln!(
            f,
            "  accept all (admin API)    : {:>10.1} ms",
            ms(self.accept)
        )?;
        writeln!(
            f,
            "  first rollout: work -> all Applied at hub : {:>10.1} ms  (hub counted N statuses at {:.1} ms)",
            ms(self.first_rollout),
            ms(self.statuses_counted)
        )?;
        let rounds: Vec<String> = self
            .rounds
            .iter()
            .map(|d| format!("{:.1}", ms(*d)))
            .collect();
        writeln!(
            f,
            "  real hub: update -> all Applied at hub (median of rounds 2..R): {:>10.1} ms  (rounds: {} ms)",
            ms(self.converge),
            rounds.join(", ")
        )?;
        writeln!(
            f,
            "  transport alone (1 msg out + 1 reply per cluster): {:>10.1} ms",
            ms(self.transport)
        )?;
        writeln!(
            f,
            "  ratio transport / real    : {:>10.2}  (1.0 = the hub adds nothing)",
            self.ratio()
        )?;
        writeln!(
            f,
            "  hub process CPU during convergence: {:.1} ms ({:.2} ms per cluster)",
            ms(self.hub_cpu_converge),
            ms(self.hub_cpu_converge) / n
        )?;
        writeln!(
            f,
            "  agent processes CPU during convergence: {:.1} ms ({:.2} ms per cluster)",
            ms(self.agents_cpu_converge),
            ms(self.agents_cpu_converge) / n
        )?;
        writeln!(
            f,
            "  hub process memory: RSS {} KiB after round 1, {} KiB after round {} (peak {} KiB); open files {}",
            self.hub_memory_first.rss_kib,
            self.hub_memory.rss_kib,
            self.rounds.len(),
            self.hub_memory.peak_kib,
            self.hub_open_files
        )?;
        let by_round: Vec<String> = self
            .hub_rss_by_round_kib
            .iter()
            .map(|kib| format!("{:.0}", *kib as f64 / 1024.0))
            .collect();
        writeln!(
            f,
            "  hub process RSS by round (MB): {}",
            by_round.join(", ")
        )?;
        writeln!(
            f,
            "  broker dropped deliveries : {}",
            self.broker_dropped.map_or_else(
                || "not reported by this broker".to_owned(),
                |d| d.to_string()
            )
        )?;
        writeln!(
            f,
            "  agent processes RSS: {} KiB total, {:.0} KiB per agent",
            self.agents_rss_kib,
            self.agents_rss_kib as f64 / n
        )?;
        writeln!(
            f,
            "  spec event {} B, status event {} B (payload + topic + properties)",
            self.spec_bytes, self.status_bytes
        )?;
        writeln!(
            f,
            "  bytes on cluster topics per cluster (whole real run): {:.0} B",
            self.bytes_per_cluster
        )?;
        for (ty, per) in &self.messages_per_cluster_by_type {
            writeln!(f, "    {per:>6.2} x {ty}")?;
        }
        let s = |d: Duration| d.as_secs_f64();
        let mb = |kib: u64| kib as f64 / 1024.0;
        writeln!(
            f,
            "RESULT broker={} agents={} join_s={:.3} accept_s={:.3} first_rollout_s={:.3} converge_s={:.3} \
             transport_s={:.3} ratio={:.3} hub_cpu_ms_per_cluster={:.3} hub_rss_first_mb={:.1} \
             hub_rss_end_mb={:.1} wire_bytes_per_cluster={:.0} agents_cpu_ms_per_cluster={:.3} intakes={} \
             secure={}",
            self.broker,
            self.agents,
            s(self.join),
            s(self.accept),
            s(self.first_rollout),
            s(self.converge),
            s(self.transport),
            self.ratio(),
            ms(self.hub_cpu_converge) / n,
            mb(self.hub_memory_first.rss_kib),
            mb(self.hub_memory.rss_kib),
            self.bytes_per_cluster,
            ms(self.agents_cpu_converge) / n,
            self.intakes,
            self.secure
        )
    }
}

impl Report {
    /// Transport alone / real hub (1.0 = the hub adds nothing to the transport).
    pub fn ratio(&self) -> f64 {
        if self.converge.is_zero() || self.secure {
            f64::NAN
        } else {
            self.transport.as_secs_f64() / self.converge.as_secs_f64()
        }
    }
}

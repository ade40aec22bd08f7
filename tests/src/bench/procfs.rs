//! Cheap process figures from `/proc` (Linux): resident memory and CPU time.

use std::time::Duration;

/// Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ; 100 on every Linux we run on).
const TICKS_PER_SECOND: u64 = 100;

/// Resident and peak resident memory of a process, in KiB (`VmRSS`, `VmHWM`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    pub rss_kib: u64,
    pub peak_kib: u64,
}

/// Memory of `pid` (`"self"` for this process); zeros when `/proc` is not readable.
pub fn memory(pid: &str) -> Memory {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    Memory {
        rss_kib: field("VmRSS:"),
        peak_kib: field("VmHWM:"),
    }
}

/// User + system CPU time of `pid` (`"self"` for this process); zero when unreadable.
pub fn cpu_time(pid: &str) -> Duration {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may contain spaces) start at state (field 3).
    let after = text.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime is field 14 and stime field 15 of the whole line: indexes 11 and 12 after ')'.
    let total = ticks(11) + ticks(12);
    Duration::from_millis(total * 1000 / TICKS_PER_SECOND)
}

/// Open file descriptors of `pid` (`"self"` for this process).
pub fn open_files(pid: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

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

/// CPU time of `pid` (`"self"` for this process): the run time of its threads from
/// `/proc/<pid>/task/*/schedstat` (exact, in nanoseconds), else `utime + stime` from
/// `/proc/<pid>/stat`, which this kernel samples at each 10 ms tick (a process that ran for 5 ms
/// shows 0 or 10). The thread sum leaves out threads that have ended: the processes measured here
/// (the hub, the agents' workers) keep theirs. Zero when neither is readable.
pub fn cpu_time(pid: &str) -> Duration {
    threads_run_time(pid).unwrap_or_else(|| ticked_cpu_time(pid))
}

/// The sum of the run times of `pid`'s live threads, when the kernel reports them.
fn threads_run_time(pid: &str) -> Option<Duration> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut nanos: u64 = 0;
    let mut any = false;
    for task in tasks.filter_map(Result::ok) {
        // First field: time spent on a CPU, in nanoseconds.
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        if let Some(run) = text
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
        {
            nanos = nanos.saturating_add(run);
            any = true;
        }
    }
    any.then(|| Duration::from_nanos(nanos))
}

/// `utime + stime` of `/proc/<pid>/stat`, in ticks of [`TICKS_PER_SECOND`].
fn ticked_cpu_time(pid: &str) -> Duration {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_worked_3_ms_is_counted_to_the_millisecond_not_to_the_tick() {
        let before = cpu_time("self");
        // About 3 ms of work on a thread that then waits, as the hub's threads wait between
        // events (a thread's run time is brought up to date when it stops running): below one
        // 10 ms tick, which the tick counters may show as nothing.
        let (worked, done) = std::sync::mpsc::channel();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let mut x: u64 = 1;
            while started.elapsed() < Duration::from_millis(3) {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            std::hint::black_box(x);
            worked.send(()).unwrap();
            wait.recv().unwrap();
        });
        done.recv().unwrap();
        // Until it is blocked on `wait`, the worker may still be running.
        let mut spent = Duration::ZERO;
        for _ in 0..100 {
            spent = cpu_time("self").saturating_sub(before);
            if spent >= Duration::from_millis(3) {
                break;
            }
            std::thread::yield_now();
        }
        release.send(()).unwrap();
        worker.join().unwrap();
        assert!(
            spent >= Duration::from_millis(3),
            "3 ms of work measured as {spent:?}"
        );
    }
}

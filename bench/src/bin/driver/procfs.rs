//! What the target process costs, read from `/proc`: resident memory (`/proc/<pid>/status`
//! VmRSS) and CPU time. CPU comes from `/proc/<pid>/stat` (utime + stime of every thread, live
//! or gone, in 10 ms ticks) for long phases, and from the sum of `/proc/<pid>/task/*/schedstat`
//! (nanoseconds, live threads only) where a phase is too short for ticks.

/// Resident set size in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

/// Whether the process still runs (not gone, not a zombie waiting to be reaped).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| Some(stat[stat.rfind(')')? + 2..].starts_with(|c| c != 'Z' && c != 'X')))
        .unwrap_or(false)
}

/// utime + stime from `/proc/<pid>/stat`, in nanoseconds (USER_HZ is 100 on Linux).
pub fn stat_cpu_ns(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: fields are counted after its closing parenthesis.
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of the whole line are 12 and 13 after "pid (comm) ".
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) * 10_000_000)
}

/// Time on CPU of every live thread, in nanoseconds.
pub fn sched_cpu_ns(pid: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0u64;
    for task in tasks.flatten() {
        let path = task.path().join("schedstat");
        if let Some(ns) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        {
            total += ns;
        }
    }
    Some(total)
}

/// A CPU reading of the target (both clocks), to subtract from a later one.
#[derive(Clone, Copy)]
pub struct CpuMark {
    stat: Option<u64>,
    sched: Option<u64>,
}

impl CpuMark {
    pub fn take(pid: Option<u32>) -> Self {
        Self {
            stat: pid.and_then(stat_cpu_ns),
            sched: pid.and_then(sched_cpu_ns),
        }
    }

    /// CPU nanoseconds spent since `earlier`: the precise clock unless it lost threads.
    pub fn since(&self, earlier: &Self) -> Option<u64> {
        let stat = self.stat?.checked_sub(earlier.stat?)?;
        match self.sched.zip(earlier.sched) {
            Some((now, then)) if now >= then => {
                let sched = now - then;
                // Threads that exited take their schedstat with them; ticks still count them.
                if stat > sched + 20_000_000 {
                    Some(stat)
                } else {
                    Some(sched)
                }
            }
            _ => Some(stat),
        }
    }
}

//! What a test reads of running processes in `/proc`: CPU time, memory, the process tree.

use std::time::Duration;

/// The CPU time a process has used: its user and system clock ticks (`/proc/<pid>/stat`).
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command's name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// `/proc` counts CPU time in USER_HZ, which Linux fixes at 100 a second for user space.
pub const TICKS_PER_SECOND: f64 = 100.0;

/// The most memory a process has held at once (`VmHWM`), in bytes.
pub fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// The memory a process holds now (`VmRSS`), in bytes; 0 once it is gone.
pub fn resident_memory(pid: u32) -> u64 {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return 0 };
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("VmRSS: 0 kB");
    line.split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok()).unwrap_or(0) * 1024
}

/// The processes below `root` (its children, theirs, and so on) with their names.
pub fn descendants(root: u32) -> Vec<(u32, String)> {
    let mut parent_of = std::collections::HashMap::new();
    let mut name_of = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let ppid = stat[close + 2..].split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok()).unwrap_or(0);
        parent_of.insert(pid, ppid);
        name_of.insert(pid, stat[open + 1..close].to_string());
    }
    let below = |mut pid: u32| {
        while let Some(&parent) = parent_of.get(&pid) {
            if parent == root {
                return true;
            }
            pid = parent;
        }
        false
    };
    name_of.iter().filter(|(pid, _)| below(**pid)).map(|(pid, name)| (*pid, name.clone())).collect()
}

/// CPU seconds the process tree below and including `root` uses in the second after now,
/// counting the processes alive at both ends.
pub async fn tree_cpu_in_the_next_second(root: u32) -> f64 {
    let sample = || {
        let mut pids: Vec<u32> = descendants(root).into_iter().map(|(pid, _)| pid).collect();
        pids.push(root);
        pids.into_iter()
            .filter_map(|pid| std::fs::metadata(format!("/proc/{pid}")).ok().map(|_| (pid, cpu_ticks(pid))))
            .collect::<std::collections::HashMap<_, _>>()
    };
    let first = sample();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second = sample();
    let ticks: u64 = second.iter().filter_map(|(pid, t)| first.get(pid).map(|f| t.saturating_sub(*f))).sum();
    ticks as f64 / TICKS_PER_SECOND
}

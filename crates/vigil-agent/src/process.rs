//! The agent's own process, read from Linux's `/proc`: CPU time, memory,
//! file descriptors, threads and start time, for the standard `process_*`
//! metrics every Prometheus exporter serves.
//!
//! The parsers take the files' text and are pure; [`Process::read`] reads
//! them. Elsewhere than Linux (no `/proc/self`), there is nothing to read and
//! the metrics stay absent rather than wrong.
//!
//! ```
//! let stat = "4242 (vigil agent) S 1 4242 4242 0 -1 4194560 900 0 0 0 \
//!             150 50 0 0 20 0 7 0 1000 123456789 2000 18446744073709551615";
//! let p = vigil_agent::process::Process::parse(stat, "VmRSS:\t  8000 kB\n", 100.0).unwrap();
//! assert_eq!(p.cpu_seconds, 2.0); // (150 + 50) ticks at 100 a second
//! assert_eq!(p.threads, 7);
//! assert_eq!(p.resident_bytes, 8000 * 1024);
//! assert_eq!(p.virtual_bytes, 123456789);
//! ```

use std::fmt;
use std::path::Path;

/// Clock ticks a second in `/proc`'s times: `USER_HZ`, which Linux fixes at
/// 100 in its interface to user space on every architecture it runs on
/// (whatever the kernel's own `HZ`).
pub const USER_HZ: f64 = 100.0;

/// The largest `/proc` file read (its text is a few hundred bytes; a longer
/// one is refused unread past this).
const MAX_FILE: u64 = 64 * 1024;

/// The most file descriptors counted (counting stops there, so a process
/// with a million open files costs no more to scrape than one with this
/// many).
pub const MAX_FDS_COUNTED: u64 = 1 << 20;

/// The process now.
#[derive(Debug, Clone, PartialEq)]
pub struct Process {
    /// User and system CPU time since the process started, in seconds.
    pub cpu_seconds: f64,
    /// Resident memory, in bytes.
    pub resident_bytes: u64,
    /// Virtual memory, in bytes.
    pub virtual_bytes: u64,
    /// Threads.
    pub threads: u64,
    /// When the process started, in seconds after boot (add the boot time
    /// for a Unix time).
    pub start_after_boot_seconds: f64,
    /// Open file descriptors, if counted (at most [`MAX_FDS_COUNTED`]).
    pub open_fds: Option<u64>,
    /// The soft limit on open file descriptors, if there is one.
    pub max_fds: Option<u64>,
    /// When the machine booted, Unix seconds, if known.
    pub boot_time: Option<u64>,
}

/// Why `/proc`'s text could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcError {
    /// The file.
    pub file: &'static str,
    /// What was wrong with it.
    pub why: String,
}

impl fmt::Display for ProcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.why)
    }
}

impl std::error::Error for ProcError {}

fn bad(file: &'static str, why: impl Into<String>) -> ProcError {
    ProcError { file, why: why.into() }
}

impl Process {
    /// Reads this process from `/proc/self`; `None` where there is no
    /// `/proc/self` (not Linux) or it could not be read.
    pub fn read() -> Option<Process> {
        let stat = read_small(Path::new("/proc/self/stat"))?;
        let status = read_small(Path::new("/proc/self/status"))?;
        let mut p = Process::parse(&stat, &status, USER_HZ).ok()?;
        p.open_fds = count_fds(Path::new("/proc/self/fd"));
        p.max_fds = read_small(Path::new("/proc/self/limits")).and_then(|t| parse_max_fds(&t));
        p.boot_time = read_small(Path::new("/proc/stat")).and_then(|t| parse_boot_time(&t));
        Some(p)
    }

    /// This process from the text of `/proc/self/stat` and
    /// `/proc/self/status`, with `ticks_per_second` clock ticks a second.
    ///
    /// The command name in `stat` is between the first `(` and the last `)`,
    /// and may hold spaces and parentheses itself: the fields are counted
    /// after the last `)`.
    pub fn parse(stat: &str, status: &str, ticks_per_second: f64) -> Result<Process, ProcError> {
        const STAT: &str = "/proc/self/stat";
        let close = stat.rfind(')').ok_or_else(|| bad(STAT, "no ')' after the command name"))?;
        // Fields after the command: state is field 3 of the manual, at
        // index 0 here.
        let fields: Vec<&str> = stat[close + 1..].split_ascii_whitespace().collect();
        let field = |n: usize, name: &str| -> Result<u64, ProcError> {
            let text = fields.get(n - 3).ok_or_else(|| bad(STAT, format!("no field {n} ({name})")))?;
            text.parse::<u64>().map_err(|_| bad(STAT, format!("field {n} ({name}) is {text:?}, not a count")))
        };
        let utime = field(14, "utime")?;
        let stime = field(15, "stime")?;
        let threads = field(20, "num_threads")?;
        let start = field(22, "starttime")?;
        let vsize = field(23, "vsize")?;
        let rss_kb = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .ok_or_else(|| bad("/proc/self/status", "no VmRSS line"))?;
        let rss_kb = rss_kb
            .trim()
            .strip_suffix("kB")
            .and_then(|n| n.trim().parse::<u64>().ok())
            .ok_or_else(|| bad("/proc/self/status", format!("VmRSS is {:?}, not a size in kB", rss_kb.trim())))?;
        Ok(Process {
            cpu_seconds: utime.saturating_add(stime) as f64 / ticks_per_second,
            resident_bytes: rss_kb.saturating_mul(1024),
            virtual_bytes: vsize,
            threads,
            start_after_boot_seconds: start as f64 / ticks_per_second,
            open_fds: None,
            max_fds: None,
            boot_time: None,
        })
    }

    /// When the process started, Unix seconds, if the boot time is known.
    pub fn start_time_seconds(&self) -> Option<f64> {
        self.boot_time.map(|b| b as f64 + self.start_after_boot_seconds)
    }
}

/// The soft limit from the text of `/proc/self/limits` (its "Max open
/// files" line); `None` when unlimited or absent.
pub fn parse_max_fds(limits: &str) -> Option<u64> {
    let rest = limits.lines().find_map(|l| l.strip_prefix("Max open files"))?;
    rest.split_ascii_whitespace().next()?.parse().ok()
}

/// The boot time from the text of `/proc/stat` (its `btime` line).
pub fn parse_boot_time(stat: &str) -> Option<u64> {
    stat.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()
}

fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path).ok()?.take(MAX_FILE).read_to_string(&mut text).ok()?;
    Some(text)
}

fn count_fds(dir: &Path) -> Option<u64> {
    let entries = std::fs::read_dir(dir).ok()?;
    // The directory's own descriptor, open while it is read, is one of them.
    let n = entries.take(MAX_FDS_COUNTED as usize + 1).count() as u64;
    Some(n.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (vigil) S 1 4242 4242 0 -1 4194560 900 0 0 0 150 50 0 0 20 0 7 0 1000 123456789 2000 18446744073709551615";

    #[test]
    fn a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let tricky = STAT.replace("(vigil)", "(a) b (c) 9 9 9)");
        let p = Process::parse(&tricky, "VmRSS: 1 kB", 100.0).unwrap();
        assert_eq!(p.cpu_seconds, 2.0);
        assert_eq!(p.threads, 7);
        assert_eq!(p.start_after_boot_seconds, 10.0);
    }

    #[test]
    fn hostile_text_is_refused_naming_the_file_and_field() {
        let cases = [
            ("", "VmRSS: 1 kB", "/proc/self/stat: no ')'"),
            ("1 (x) S 1", "VmRSS: 1 kB", "no field 14 (utime)"),
            (&*STAT.replace(" 150 ", " -150 "), "VmRSS: 1 kB", "field 14 (utime) is \"-150\""),
            (STAT, "", "/proc/self/status: no VmRSS line"),
            (STAT, "VmRSS: many kB", "VmRSS is \"many kB\""),
            (STAT, "VmRSS: 12", "not a size in kB"),
        ];
        for (stat, status, want) in cases {
            let e = Process::parse(stat, status, 100.0).unwrap_err().to_string();
            assert!(e.contains(want), "{stat:?} {status:?}: {e}");
        }
        // Counts at the edge of u64 saturate instead of overflowing.
        let huge = STAT.replace(" 150 50 ", &format!(" {} {} ", u64::MAX, u64::MAX));
        let p = Process::parse(&huge, &format!("VmRSS: {} kB", u64::MAX), 100.0).unwrap();
        assert_eq!(p.resident_bytes, u64::MAX);
        assert_eq!(p.cpu_seconds, u64::MAX as f64 / 100.0);
    }

    #[test]
    fn limits_and_boot_time() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n";
        assert_eq!(parse_max_fds(limits), Some(1024));
        assert_eq!(parse_max_fds(&limits.replace("1024 ", "unlimited ")), None);
        assert_eq!(parse_boot_time("cpu  1 2 3\nbtime 1764700000\nprocesses 9\n"), Some(1_764_700_000));
        assert_eq!(parse_boot_time("btime soon\n"), None);
    }

    #[test]
    fn this_process_reads_itself_on_linux() {
        if !Path::new("/proc/self/stat").exists() {
            println!("SKIPPED this_process_reads_itself_on_linux: no /proc/self here");
            return;
        }
        let p = Process::read().expect("/proc/self is readable");
        // A test process has at least its main thread, a few pages resident,
        // stdin/stdout/stderr open, and started after the machine booted.
        assert!(p.threads >= 1);
        assert!(p.resident_bytes >= 4096 && p.virtual_bytes >= p.resident_bytes, "{p:?}");
        assert!(p.open_fds.unwrap() >= 3, "{p:?}");
        let start = p.start_time_seconds().unwrap();
        assert!(start > 1.5e9 && p.boot_time.unwrap() as f64 <= start, "{p:?}");
    }
}

//! The service manager's notification protocol (systemd's `Type=notify`):
//! datagrams of `KEY=VALUE` lines to the socket named by `NOTIFY_SOCKET`.
//!
//! The agent says `READY=1` once it has joined (it knows a live member), or
//! at once when it has no seeds (the first member), or after
//! [`READY_AT_LATEST`] of trying, with a `STATUS=` saying it is still alone
//! (a service left "activating" would be killed and restarted by its
//! start timeout, and lose nothing by being ready alone: it keeps asking its
//! seeds). It says `STOPPING=1` when it starts to leave, `STATUS=` lines on
//! the way, and `WATCHDOG=1` every half of `WATCHDOG_USEC` while its member
//! still answers, when the unit sets `WatchdogSec=`.
//!
//! Nothing here can stop the agent: without `NOTIFY_SOCKET` every call does
//! nothing; a socket that is gone, full or never read loses the message
//! (sent without blocking) and says so once in the log.
//!
//! ```
//! use vigil_agent::service_manager::Notifier;
//!
//! // Outside a service manager: nothing to tell, and telling costs nothing.
//! let n = Notifier::from_vars(None, None, None, std::process::id());
//! assert!(!n.active());
//! n.ready("joined");
//! ```

use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long a member that has not joined waits before it says it is ready
/// anyway (alone, still asking its seeds).
pub const READY_AT_LATEST: Duration = Duration::from_secs(60);

/// The shortest watchdog interval taken: a smaller `WATCHDOG_USEC` is
/// read as this much, so that a typo cannot make the agent spin.
const MIN_WATCHDOG: Duration = Duration::from_millis(50);

/// Where the notifications go, and how often the watchdog wants one.
#[derive(Debug)]
pub struct Notifier {
    target: Option<Target>,
    watchdog: Option<Duration>,
    /// A failed send was logged already.
    warned: AtomicBool,
}

#[derive(Debug)]
enum Target {
    Path(std::path::PathBuf),
    /// An abstract socket (`@name`), its name without the `@`.
    Abstract(Vec<u8>),
}

impl Notifier {
    /// From the process environment (`NOTIFY_SOCKET`, `WATCHDOG_USEC`,
    /// `WATCHDOG_PID`).
    pub fn from_env() -> Notifier {
        let var = |name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
        Notifier::from_vars(var("NOTIFY_SOCKET"), var("WATCHDOG_USEC"), var("WATCHDOG_PID"), std::process::id())
    }

    /// From the variables' values, for process `pid`. A socket name that is
    /// neither an absolute path nor `@abstract`, or a watchdog setting that
    /// is not a number of microseconds, is logged and ignored.
    pub fn from_vars(socket: Option<String>, usec: Option<String>, watchdog_pid: Option<String>, pid: u32) -> Notifier {
        let target = match socket.as_deref() {
            None | Some("") => None,
            Some(s) if s.starts_with('/') => Some(Target::Path(s.into())),
            Some(s) if s.starts_with('@') && s.len() > 1 => Some(Target::Abstract(s.as_bytes()[1..].to_vec())),
            Some(s) => {
                tracing::warn!("NOTIFY_SOCKET={s:?} is neither an absolute path nor @abstract: not notifying");
                None
            }
        };
        let for_us = watchdog_pid.as_deref().is_none_or(|p| p.trim().parse::<u32>().ok() == Some(pid));
        let watchdog = match usec.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(_) if !for_us => None,
            Some(u) => match u.parse::<u64>() {
                Ok(0) | Err(_) => {
                    tracing::warn!("WATCHDOG_USEC={u:?} is not a positive number of microseconds: no watchdog pings");
                    None
                }
                Ok(us) => Some((Duration::from_micros(us) / 2).max(MIN_WATCHDOG)),
            },
        };
        Notifier {
            target,
            watchdog: watchdog.filter(|_| target_is_some(socket.as_deref())),
            warned: AtomicBool::new(false),
        }
    }

    /// Whether a service manager listens.
    pub fn active(&self) -> bool {
        self.target.is_some()
    }

    /// How often to send `WATCHDOG=1`, if the unit wants it.
    pub fn watchdog_interval(&self) -> Option<Duration> {
        self.watchdog
    }

    /// `READY=1`, with a status line.
    pub fn ready(&self, status: &str) {
        self.send(&format!("READY=1\nSTATUS={}", one_line(status)));
    }

    /// A status line.
    pub fn status(&self, status: &str) {
        self.send(&format!("STATUS={}", one_line(status)));
    }

    /// `STOPPING=1`, with a status line.
    pub fn stopping(&self, status: &str) {
        self.send(&format!("STOPPING=1\nSTATUS={}", one_line(status)));
    }

    /// `WATCHDOG=1`.
    pub fn watchdog(&self) {
        self.send("WATCHDOG=1");
    }

    fn send(&self, message: &str) {
        let Some(target) = &self.target else { return };
        let sent = UnixDatagram::unbound().and_then(|s| {
            s.set_nonblocking(true)?;
            match target {
                Target::Path(p) => s.send_to(message.as_bytes(), p),
                #[cfg(any(target_os = "linux", target_os = "android"))]
                Target::Abstract(name) => {
                    use std::os::linux::net::SocketAddrExt;
                    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
                    s.send_to_addr(message.as_bytes(), &addr)
                }
                #[cfg(not(any(target_os = "linux", target_os = "android")))]
                Target::Abstract(_) => {
                    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "abstract sockets exist on Linux only"))
                }
            }
        });
        if let Err(e) = sent
            && !self.warned.swap(true, Ordering::Relaxed)
        {
            tracing::warn!("cannot notify the service manager ({e}); this is said once");
        }
    }
}

fn target_is_some(socket: Option<&str>) -> bool {
    socket.is_some_and(|s| s.starts_with('/') || (s.starts_with('@') && s.len() > 1))
}

/// A status on one line, at most 200 characters: a newline in it would
/// start another assignment.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_variables_are_ignored_not_obeyed() {
        let n = Notifier::from_vars(Some("relative/path".into()), Some("1000000".into()), None, 7);
        assert!(!n.active() && n.watchdog_interval().is_none());
        let n = Notifier::from_vars(Some("@".into()), None, None, 7);
        assert!(!n.active());
        let n = Notifier::from_vars(Some("/run/x".into()), Some("ten".into()), None, 7);
        assert!(n.active() && n.watchdog_interval().is_none());
        let n = Notifier::from_vars(Some("/run/x".into()), Some("0".into()), None, 7);
        assert!(n.watchdog_interval().is_none());
        // Another process's watchdog.
        let n = Notifier::from_vars(Some("/run/x".into()), Some("1000000".into()), Some("8".into()), 7);
        assert!(n.watchdog_interval().is_none());
        let n = Notifier::from_vars(Some("/run/x".into()), Some("1000000".into()), Some("7".into()), 7);
        assert_eq!(n.watchdog_interval(), Some(Duration::from_millis(500)));
        // A microsecond: read as the floor, not a spin.
        let n = Notifier::from_vars(Some("@sd".into()), Some("1".into()), None, 7);
        assert_eq!(n.watchdog_interval(), Some(MIN_WATCHDOG));
        // No socket: no watchdog either.
        let n = Notifier::from_vars(None, Some("1000000".into()), None, 7);
        assert!(n.watchdog_interval().is_none());
    }

    #[test]
    fn a_status_cannot_smuggle_another_assignment() {
        assert_eq!(one_line("alone\nREADY=1"), "alone READY=1");
        assert_eq!(one_line(&"x".repeat(500)).len(), 200);
    }

    #[test]
    fn messages_arrive_and_a_socket_never_read_costs_nothing() {
        let dir = std::env::temp_dir().join(format!("vigil-notify-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let manager = UnixDatagram::bind(&path).unwrap();
        let n = Notifier::from_vars(Some(path.display().to_string()), None, None, 1);
        n.ready("joined 2 members");
        let mut buf = [0u8; 512];
        let len = manager.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1\nSTATUS=joined 2 members");
        // Nobody reads: the queue fills, sends fail without blocking.
        let started = std::time::Instant::now();
        for _ in 0..10_000 {
            n.watchdog();
        }
        assert!(started.elapsed() < Duration::from_secs(5), "sends blocked: {:?}", started.elapsed());
        assert!(n.warned.load(Ordering::Relaxed), "a full queue was noticed");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

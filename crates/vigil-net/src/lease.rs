//! The lease a `lease-majority` downing strategy asks for, when a
//! partition leaves its side without a clear majority: the side that takes
//! it survives, the other downs itself.
//!
//! A lease is held by a *holder*, a side's name: every member of a side
//! asks for the same one (its member with the lowest address, as
//! [`Node::take_lease_request`](vigil_membership::Node::take_lease_request)
//! names it), so the lease grants a side, not one of its members. It holds
//! for a time to live and is granted again to its holder; another holder
//! gets it only once that time has run out, or by naming the holder it
//! replaces (a side that took the lease and split again: the first of its
//! parts to ask takes it over, in one step). A side that took it renews it
//! every [`LEASE_RENEW_EVERY`](vigil_membership::downing::LEASE_RENEW_EVERY)
//! for as long as it acts as the cluster, so the side it downed cannot take
//! it, however long the partition lasts.
//!
//! [`FileLease`] keeps the lease in a file, locked while it is read and
//! written: for tests, and for members on one host or sharing a file
//! system. For a fleet, implement [`Lease`] over what every side of a
//! partition can still reach and that grants one holder at a time: a
//! Kubernetes `coordination.k8s.io/v1` Lease (`holderIdentity`,
//! `leaseDurationSeconds`, and `renewTime` updated with the object's
//! `resourceVersion`, so that two writers cannot both win), an etcd key
//! written in a transaction that compares its revision under an etcd
//! lease, or a row in a database updated with a compare-and-set.
//!
//! A lease that cannot be asked downs every side that needs it, so it is
//! looked at before a decision needs it. [`Lease::check`] says, without
//! taking the lease, whether it could be asked now: `vigil agent` refuses
//! to start with a lease that fails it, and a running member checks its
//! lease every [`CHECK_EVERY`] and when a member becomes unreachable, off
//! its event loop, logs once when it cannot be asked and once when it can
//! again, and keeps what it found ([`LeaseHealth`], in
//! [`Snapshot::lease`](crate::Snapshot::lease)). A lease that does not
//! answer within [`ANSWER_WAIT`] is not taken.
//!
//! A [`FileLease`] takes a regular file only: a link to a device, a named
//! pipe or a directory is refused before anything is read (and opening
//! never waits), at most 4096 bytes are read whatever the file's length
//! says, its lock is waited for 5 s at most, and its errors name the path
//! and what is wrong in plain words (`not a regular file (a character
//! device)`, `read-only file system`, `no such directory
//! (/var/lib/vigil)`). A file that holds anything but a lease is never
//! written over.
//!
//! ```
//! use std::time::Duration;
//! use vigil_net::lease::{FileLease, Lease};
//!
//! let dir = std::env::temp_dir().join(format!("vigil-lease-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let lease = FileLease::new(dir.join("lease"));
//! let ttl = Duration::from_secs(120);
//! assert!(lease.acquire("side-of-a", None, ttl)?);
//! assert!(lease.acquire("side-of-a", None, ttl)?, "its holder gets it again");
//! assert!(!lease.acquire("side-of-d", None, ttl)?, "another holder waits for the time to live");
//! assert!(lease.acquire("side-of-b", Some("side-of-a"), ttl)?, "a part of a's side takes it over");
//! assert!(!lease.acquire("side-of-c", Some("side-of-a"), ttl)?, "a's other part is too late");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::fs::{File, FileType, OpenOptions};
use std::io::{self, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use vigil_membership::downing::{LeaseAnswer, LeaseRequest};

/// How long a side holds the lease it took, by default (Akka's Kubernetes
/// lease: 120 s).
pub const TTL: Duration = Duration::from_secs(120);

/// The most a lease file may hold; a longer one is not a lease.
const MAX_LEASE_FILE: u64 = 4096;

/// How long a [`FileLease`] waits for the lock on its file. Another
/// member holds it for a few milliseconds, while it reads and writes the
/// lease; a process that holds it longer (anyone who can open the file can
/// lock it) must not hold a decision with it.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// How often a running member checks its lease ([`Lease::check`]) while
/// `lease-majority` decides; it also checks it when a member becomes
/// unreachable. Within the default `stable_after` (20 s) a check falls
/// between the first unreachable member and the decision either way.
pub const CHECK_EVERY: Duration = Duration::from_secs(15);

/// How long a running member waits for its lease to answer, a request or
/// a check, before it counts as unusable (a file system or a server that
/// does not answer). A request that times out is a lease not taken, as
/// with Akka's `lease-operation-timeout`: a side that waited for ever
/// would neither survive nor down itself. A [`FileLease`] may wait 5 s
/// for its lock alone.
pub const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// Something every side of a partition can reach and that grants one
/// holder at a time. See the module documentation.
pub trait Lease: Send + Sync + fmt::Debug + 'static {
    /// Asks the lease for `holder`, to hold it for `ttl`: granted when
    /// nobody holds it, its holder's time ran out, `holder` holds it
    /// already (its time starts again), or `replacing` holds it (taken
    /// over: a compare-and-set, so that of two requests replacing the same
    /// holder only the first is granted). Blocking: a runtime calls it off
    /// its event loop.
    ///
    /// # Errors
    ///
    /// A [`LeaseError`] when the lease cannot be read or written; the side
    /// then counts it as not granted.
    fn acquire(&self, holder: &str, replacing: Option<&str>, ttl: Duration) -> Result<bool, LeaseError>;

    /// Checks, without asking for it, that the lease could be asked now:
    /// reachable, readable, writable, and holding a lease or nothing. The
    /// runtime calls it at intervals and when a member becomes unreachable
    /// (a decision is coming), so that a lease that cannot be asked is said
    /// before a decision needs it. Blocking, like
    /// [`acquire`](Lease::acquire). The default finds nothing wrong:
    /// override it where the lease can tell.
    ///
    /// # Errors
    ///
    /// A [`LeaseError`] saying why the lease could not be asked now.
    fn check(&self) -> Result<(), LeaseError> {
        Ok(())
    }

    /// The holder the lease is granted to now, if it can say: after a
    /// refusal, the side that won (a member whose side did not find this
    /// one unreachable spares it). Blocking, like
    /// [`acquire`](Lease::acquire). The default says nothing (a refused
    /// member that some side could be downing then downs itself).
    fn holder(&self) -> Option<String> {
        None
    }
}

/// A lease that could not be asked.
#[derive(Debug)]
pub struct LeaseError {
    /// Where the lease is (a path, a URL).
    pub at: String,
    /// What went wrong.
    pub problem: String,
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lease {}: {}", self.at, self.problem)
    }
}

impl std::error::Error for LeaseError {}

/// A lease in a file: `holder=NAME` and `until_ms=UNIX_MS` lines, read and
/// written under an exclusive lock on the file. See the module
/// documentation.
#[derive(Debug, Clone)]
pub struct FileLease {
    path: PathBuf,
}

impl FileLease {
    /// The lease kept at `path` (created on first use).
    pub fn new(path: impl Into<PathBuf>) -> FileLease {
        FileLease { path: path.into() }
    }

    /// Where it is kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, problem: impl fmt::Display) -> LeaseError {
        LeaseError { at: self.path.display().to_string(), problem: problem.to_string() }
    }

    /// The file, open for reading and writing (created empty if absent):
    /// refused, before and after it is opened, unless it is a regular file.
    /// Opening never waits: a named pipe is refused by its type before it
    /// is opened, and opened without blocking should it become one
    /// meanwhile.
    fn open(&self) -> Result<File, LeaseError> {
        // Absent, it is created below if its directory exists; anything
        // else that cannot be looked at is said by the opening.
        if let Ok(m) = std::fs::metadata(&self.path)
            && !m.is_file()
        {
            return Err(self.error(not_a_file(m.file_type())));
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
        let file = options.open(&self.path).map_err(|e| self.open_error(&e))?;
        let m = file.metadata().map_err(|e| self.error(plain(&e)))?;
        if !m.is_file() {
            return Err(self.error(not_a_file(m.file_type())));
        }
        Ok(file)
    }

    /// Why the file could not be opened, in plain words: a directory that
    /// does not exist is named.
    fn open_error(&self, e: &io::Error) -> LeaseError {
        if e.kind() != ErrorKind::NotFound {
            return self.error(plain(e));
        }
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return self.error(format!("no such directory ({})", dir.display()));
        }
        match std::fs::read_link(&self.path) {
            Ok(target) => self.error(format!("a symbolic link to {}, which cannot be created", target.display())),
            Err(_) => self.error(plain(e)),
        }
    }

    /// Locks the open file, for as long as it stays open: waits for
    /// another holder of the lock at most [`LOCK_WAIT`].
    fn lock(&self, file: &File) -> Result<(), LeaseError> {
        let until = std::time::Instant::now() + LOCK_WAIT;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(()),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(
                        self.error(format!("locked by another process for more than {} s", LOCK_WAIT.as_secs()))
                    );
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(self.error(format!("cannot lock it: {}", plain(&e))));
                }
            }
        }
    }

    /// What the open file holds: at most [`MAX_LEASE_FILE`] bytes are
    /// read, whatever its length says (a file of `/proc` says 0).
    fn read(&self, file: &mut File) -> Result<Option<(String, u64)>, LeaseError> {
        let len = file.metadata().map_err(|e| self.error(plain(&e)))?.len();
        if len > MAX_LEASE_FILE {
            return Err(self.error(format!("{len} bytes: not a lease (at most {MAX_LEASE_FILE})")));
        }
        let mut bytes = Vec::new();
        Read::by_ref(file).take(MAX_LEASE_FILE + 1).read_to_end(&mut bytes).map_err(|e| self.error(plain(&e)))?;
        if bytes.len() as u64 > MAX_LEASE_FILE {
            return Err(self.error(format!("more than {MAX_LEASE_FILE} bytes: not a lease")));
        }
        let text = String::from_utf8(bytes).map_err(|_| self.error("not text (UTF-8): not a lease"))?;
        parse(&text).map_err(|e| self.error(e))
    }
}

/// What a path that is not a regular file is, for a person: "not a regular
/// file (a character device)".
fn not_a_file(t: FileType) -> String {
    #[cfg(unix)]
    let special = {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            Some("a character device")
        } else if t.is_block_device() {
            Some("a block device")
        } else if t.is_fifo() {
            Some("a named pipe")
        } else if t.is_socket() {
            Some("a socket")
        } else {
            None
        }
    };
    #[cfg(not(unix))]
    let special = None;
    let what = special.unwrap_or(if t.is_dir() { "a directory" } else { "neither a file nor a directory" });
    format!("not a regular file ({what})")
}

/// An I/O error in plain words, without the system's error number.
fn plain(e: &io::Error) -> String {
    match e.kind() {
        ErrorKind::ReadOnlyFilesystem => "read-only file system".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::NotFound => "no such file or directory".into(),
        ErrorKind::NotADirectory => "a part of the path is not a directory".into(),
        ErrorKind::IsADirectory => "not a regular file (a directory)".into(),
        ErrorKind::StorageFull => "no space left on the device".into(),
        _ => e.to_string(),
    }
}

/// What a running member found when it last checked its lease
/// ([`Snapshot::lease`](crate::Snapshot::lease)): checked every
/// [`CHECK_EVERY`] and when a member becomes unreachable, while
/// `lease-majority` decides.
///
/// # Examples
///
/// ```
/// use vigil_net::lease::LeaseHealth;
///
/// let health = LeaseHealth::default();
/// assert_eq!(health.usable(), None, "not checked yet");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct LeaseHealth {
    /// Checks made.
    pub checks: u64,
    /// Checks that found the lease could not be asked.
    pub checks_failed: u64,
    /// What the last check found wrong; `None` if it found nothing wrong
    /// (or none was made yet).
    pub problem: Option<String>,
}

impl LeaseHealth {
    /// Whether the last check found the lease could be asked; `None`
    /// before the first check.
    pub fn usable(&self) -> Option<bool> {
        (self.checks > 0).then_some(self.problem.is_none())
    }
}

/// Asks `lease` off the event loop what a running member's downing
/// strategy asks it (a decision's request or a renewal): waits
/// [`ANSWER_WAIT`] at most, and says in the log why a lease that could not
/// be asked downs this side, or was taken from it.
pub(crate) async fn ask(lease: Option<Arc<dyn Lease>>, request: LeaseRequest) -> LeaseAnswer {
    let LeaseRequest { holder, replacing, renewal } = request;
    if renewal {
        return renew(lease, holder).await;
    }
    let answer = match lease {
        Some(lease) => {
            let answer = acquire_within(lease, holder.clone(), replacing).await;
            if let LeaseAnswer::Unusable(why) = &answer {
                tracing::warn!("the lease could not be asked ({why}): this side cannot hold it and downs itself");
            }
            answer
        }
        None => {
            tracing::warn!("lease-majority wants a lease and none is configured: this side downs itself");
            LeaseAnswer::Unusable("no lease is configured".into())
        }
    };
    tracing::info!(holder, granted = answer.granted(), "lease asked");
    answer
}

/// Renews the lease this member's side holds for `holder`: a renewal that
/// could not be asked is said at WARN (the side keeps the lease only while
/// some member renews it) and asked again later; one refused is said at
/// WARN (another side took it: this member downs itself).
async fn renew(lease: Option<Arc<dyn Lease>>, holder: String) -> LeaseAnswer {
    let Some(lease) = lease else { return LeaseAnswer::Unusable("no lease is configured".into()) };
    let answer = acquire_within(lease, holder.clone(), None).await;
    match &answer {
        LeaseAnswer::Refused { holder: taker } => {
            let who = taker.as_deref().unwrap_or("a holder it does not name");
            tracing::warn!(
                "the lease this side held ({holder}) was taken by {who}: another side acts as the cluster, and this \
                 member downs itself unless that side counts it in"
            );
        }
        LeaseAnswer::Unusable(why) => tracing::warn!(
            "the lease this side holds ({holder}) could not be renewed: {why}; asked again in {} s. Once its time \
             to live ({} s) runs out, the side this one downed could take it",
            vigil_membership::downing::LEASE_RENEW_EVERY.as_secs(),
            TTL.as_secs()
        ),
        LeaseAnswer::Granted => {}
    }
    tracing::debug!(holder, granted = answer.granted(), "lease renewed");
    answer
}

/// Asks `lease` for `holder` (replacing `replacing`) off the event loop,
/// for [`ANSWER_WAIT`] at most; refused, it is asked who holds it (the
/// side that won).
async fn acquire_within(lease: Arc<dyn Lease>, holder: String, replacing: Option<String>) -> LeaseAnswer {
    let asking = tokio::task::spawn_blocking(move || {
        lease
            .acquire(&holder, replacing.as_deref(), TTL)
            .map(|granted| (granted, (!granted).then(|| lease.holder()).flatten()))
    });
    match tokio::time::timeout(ANSWER_WAIT, asking).await {
        Ok(Ok(Ok((true, _)))) => LeaseAnswer::Granted,
        Ok(Ok(Ok((false, holder)))) => LeaseAnswer::Refused { holder },
        Ok(Ok(Err(e))) => LeaseAnswer::Unusable(e.to_string()),
        Ok(Err(e)) => LeaseAnswer::Unusable(format!("the request did not run: {e}")),
        Err(_) => LeaseAnswer::Unusable(format!("no answer within {} s", ANSWER_WAIT.as_secs())),
    }
}

/// A running member's watch over its lease: checks it off the event loop
/// every [`CHECK_EVERY`] and when poked, keeps what it found, and logs
/// once when the lease becomes unusable (or unusable for another reason)
/// and once when it is usable again.
#[derive(Debug, Clone, Default)]
pub(crate) struct Watch {
    health: Arc<Mutex<LeaseHealth>>,
    poke: Arc<tokio::sync::Notify>,
}

impl Watch {
    /// What the last check found.
    pub(crate) fn health(&self) -> LeaseHealth {
        self.health.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Checks at once (after the check under way, if any).
    pub(crate) fn poke(&self) {
        self.poke.notify_one();
    }

    /// Checks `lease` for as long as the task runs. One check at a time:
    /// one that does not answer within [`ANSWER_WAIT`] fails (a request
    /// would not be answered in time either), and is waited for before the
    /// next.
    pub(crate) async fn run(self, lease: Arc<dyn Lease>) {
        loop {
            let checked = lease.clone();
            let mut check = tokio::task::spawn_blocking(move || checked.check());
            match tokio::time::timeout(ANSWER_WAIT, &mut check).await {
                Ok(Ok(Ok(()))) => self.record(Ok(())),
                Ok(Ok(Err(e))) => self.record(Err(e.to_string())),
                Ok(Err(e)) => self.record(Err(format!("the lease's check did not run: {e}"))),
                Err(_) => {
                    self.record(Err(format!("the lease did not answer a check within {} s", ANSWER_WAIT.as_secs())));
                    let _ = check.await;
                }
            }
            tokio::select! {
                () = tokio::time::sleep(CHECK_EVERY) => {}
                () = self.poke.notified() => {}
            }
        }
    }

    /// Keeps what a check found, and says it when it changed.
    fn record(&self, found: Result<(), String>) {
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        health.checks += 1;
        match found {
            Ok(()) => match health.problem.take() {
                Some(was) => tracing::info!(
                    "the lease can be asked again (it was: {was}): lease-majority can keep this side at its \
                     next decision"
                ),
                None if health.checks == 1 => tracing::debug!("the lease can be asked"),
                None => {}
            },
            Err(problem) => {
                health.checks_failed += 1;
                if health.problem.as_ref() != Some(&problem) {
                    tracing::warn!(
                        "{problem}: lease-majority cannot keep this side at its next decision; every side that \
                         needs the lease will down itself. Make the lease readable, writable and lockable by \
                         this member again (a file lease: a regular file, or nothing in a directory that \
                         exists); a line will say when it can be asked again"
                    );
                }
                health.problem = Some(problem);
            }
        }
    }
}

/// The holder and until when, as the file says; `None` for an empty file.
fn parse(text: &str) -> Result<Option<(String, u64)>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let (mut holder, mut until) = (None, None);
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match line.split_once('=') {
            Some(("holder", v)) => holder = Some(v.to_owned()),
            Some(("until_ms", v)) => {
                until = Some(v.parse::<u64>().map_err(|_| format!("until_ms={v} is not a number of milliseconds"))?)
            }
            _ => {
                let shown: String = line.chars().take(40).flat_map(char::escape_debug).collect();
                return Err(format!("'{shown}' is not a line of a lease (holder=NAME, until_ms=UNIX_MS)"));
            }
        }
    }
    match (holder, until) {
        (Some(h), Some(u)) => Ok(Some((h, u))),
        _ => Err("a lease needs both holder= and until_ms=".into()),
    }
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Lease for FileLease {
    fn acquire(&self, holder: &str, replacing: Option<&str>, ttl: Duration) -> Result<bool, LeaseError> {
        if holder.is_empty() || holder.contains(['\n', '\r']) {
            return Err(self.error(format!("{holder:?} cannot hold a lease (an empty name, or a line break)")));
        }
        let mut file = self.open()?;
        // Held until the file is closed, at the end of this call.
        self.lock(&file)?;
        let now = unix_ms();
        if let Some((current, until)) = self.read(&mut file)?
            && current != holder
            && Some(current.as_str()) != replacing
            && until > now
        {
            return Ok(false);
        }
        let until = now.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        let body = format!("holder={holder}\nuntil_ms={until}\n");
        let write = |e: io::Error| self.error(format!("cannot write it: {}", plain(&e)));
        file.set_len(0).map_err(write)?;
        file.seek(SeekFrom::Start(0)).map_err(write)?;
        file.write_all(body.as_bytes()).map_err(write)?;
        file.sync_all().map_err(write)?;
        Ok(true)
    }

    /// Checks the file without taking the lease or changing what it holds:
    /// it is a regular file this member can open for reading and writing
    /// and lock, and it holds a lease or nothing. Where there is nothing
    /// yet, its directory must exist, and the file is created empty, as
    /// [`acquire`](Lease::acquire) would create it: that is how a
    /// directory this member cannot write is found.
    ///
    /// ```
    /// use vigil_net::lease::{FileLease, Lease};
    ///
    /// let dir = std::env::temp_dir().join(format!("vigil-lease-check-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("lease");
    /// FileLease::new(&path).check()?;
    /// assert_eq!(std::fs::read_to_string(&path)?, "", "created empty; nobody holds it");
    ///
    /// std::fs::write(&path, "#!/bin/sh\n")?;
    /// let e = FileLease::new(&path).check().unwrap_err();
    /// assert!(e.problem.starts_with("'#!/bin/sh' is not a line of a lease"), "{e}");
    /// assert_eq!(std::fs::read_to_string(&path)?, "#!/bin/sh\n", "left as it was");
    ///
    /// let e = FileLease::new(dir.join("gone/lease")).check().unwrap_err();
    /// assert_eq!(e.problem, format!("no such directory ({})", dir.join("gone").display()));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn check(&self) -> Result<(), LeaseError> {
        let mut file = self.open()?;
        self.lock(&file)?;
        self.read(&mut file).map(drop)
    }

    /// The holder the file names, while its time runs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_net::lease::{FileLease, Lease};
    ///
    /// let dir = std::env::temp_dir().join(format!("vigil-lease-holder-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let lease = FileLease::new(dir.join("lease"));
    /// assert_eq!(lease.holder(), None);
    /// assert!(lease.acquire("side-of-a", None, Duration::from_secs(60))?);
    /// assert_eq!(lease.holder().as_deref(), Some("side-of-a"));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn holder(&self) -> Option<String> {
        let mut file = self.open().ok()?;
        self.lock(&file).ok()?;
        let (holder, until) = self.read(&mut file).ok()??;
        (until > unix_ms()).then_some(holder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lease path, `lease` in a directory of its own that is removed,
    /// with whatever a test put there, when the test is done with it.
    struct Scratch {
        path: PathBuf,
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            if let Some(dir) = self.path.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    impl std::ops::Deref for Scratch {
        type Target = PathBuf;
        fn deref(&self) -> &PathBuf {
            &self.path
        }
    }

    impl AsRef<Path> for Scratch {
        fn as_ref(&self) -> &Path {
            &self.path
        }
    }

    impl AsRef<std::ffi::OsStr> for Scratch {
        fn as_ref(&self) -> &std::ffi::OsStr {
            self.path.as_os_str()
        }
    }

    fn temp(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("vigil-lease-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch { path: dir.join("lease") }
    }

    fn decision(holder: &str) -> LeaseRequest {
        LeaseRequest { holder: holder.into(), replacing: None, renewal: false }
    }

    #[test]
    fn a_holder_is_taken_over_once_by_a_part_of_its_side() {
        let path = temp("takeover");
        let lease = FileLease::new(&path);
        assert!(lease.acquire("side-ab", None, TTL).unwrap());
        assert!(!lease.acquire("side-b", None, TTL).unwrap(), "not naming the holder it replaces");
        assert!(lease.acquire("side-a", Some("side-ab"), TTL).unwrap(), "taken over");
        assert!(!lease.acquire("side-b", Some("side-ab"), TTL).unwrap(), "the holder it replaces is gone");
        assert_eq!(lease.holder().as_deref(), Some("side-a"));
        assert!(lease.acquire("side-a", Some("side-ab"), TTL).unwrap(), "asked again: renewed");
    }

    #[test]
    fn racing_parts_of_a_side_take_it_over_once() {
        let path = temp("takeover-race");
        assert!(FileLease::new(&path).acquire("side-all", None, TTL).unwrap());
        let granted: Vec<bool> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let lease = FileLease::new(&path);
                    s.spawn(move || lease.acquire(&format!("side-{i}"), Some("side-all"), TTL).unwrap())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(granted.iter().filter(|g| **g).count(), 1, "{granted:?}");
    }

    #[test]
    fn one_holder_until_its_time_runs_out() {
        let path = temp("ttl");
        let lease = FileLease::new(&path);
        assert!(lease.acquire("a", None, Duration::from_millis(200)).unwrap());
        assert!(!lease.acquire("d", None, Duration::from_secs(60)).unwrap());
        std::thread::sleep(Duration::from_millis(250));
        assert!(lease.acquire("d", None, Duration::from_secs(60)).unwrap(), "a's time ran out");
        assert!(!lease.acquire("a", None, Duration::from_secs(60)).unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("holder=d\nuntil_ms="), "{text}");
    }

    #[test]
    fn a_file_that_is_not_a_lease_is_refused_and_left_alone() {
        for (body, why) in [
            ("holder=a\n", "a lease needs both holder= and until_ms="),
            ("holder=a\nuntil_ms=soon\n", "until_ms=soon is not a number of milliseconds"),
            ("#!/bin/sh\nrm -rf /\n", "'#!/bin/sh' is not a line of a lease"),
        ] {
            let path = temp("junk");
            std::fs::write(&path, body).unwrap();
            let e = FileLease::new(&path).acquire("a", None, TTL).unwrap_err();
            assert!(e.to_string().contains(why), "{e}");
            let e = FileLease::new(&path).check().unwrap_err();
            assert!(e.to_string().contains(why), "{e}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), body, "nothing is written over it");
        }
        let path = temp("big");
        std::fs::write(&path, vec![b'x'; 5000]).unwrap();
        let e = FileLease::new(&path).acquire("a", None, TTL).unwrap_err();
        assert!(e.to_string().contains("5000 bytes: not a lease"), "{e}");
        let e = FileLease::new(&temp("name")).acquire("a\nuntil_ms=0", None, TTL).unwrap_err();
        assert!(e.to_string().contains("cannot hold a lease"), "{e}");
    }

    /// `f` run on a thread of its own, its result if it returns within
    /// 30 s: a bound for a call that must never wait, not a measurement.
    fn returns<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("{what} still waits after 30 s"))
    }

    /// A symbolic link at `temp(name)` to `target`.
    fn link_to(name: &str, target: &str) -> Scratch {
        let path = temp(name);
        let _ = std::fs::remove_file(&path);
        std::os::unix::fs::symlink(target, &path).unwrap();
        path
    }

    #[test]
    fn devices_behind_a_link_are_refused_unread() {
        for device in ["/dev/full", "/dev/zero"] {
            let path = link_to(&format!("dev-{}", &device[5..]), device);
            let lease = FileLease::new(&path);
            let e = returns(device, move || (lease.acquire("a", None, TTL).unwrap_err(), lease.check().unwrap_err()));
            for e in [e.0, e.1] {
                assert_eq!(e.at, path.display().to_string());
                assert_eq!(e.problem, "not a regular file (a character device)", "{device}");
            }
        }
    }

    #[test]
    fn a_named_pipe_is_refused_without_waiting() {
        let path = temp("fifo");
        let _ = std::fs::remove_file(&path);
        match std::process::Command::new("mkfifo").arg(&path).status() {
            Ok(s) if s.success() => {}
            other => {
                println!("SKIPPED: a named pipe could not be made with mkfifo ({other:?})");
                return;
            }
        }
        let lease = FileLease::new(&path);
        let e =
            returns("a named pipe", move || (lease.acquire("a", None, TTL).unwrap_err(), lease.check().unwrap_err()));
        assert_eq!(e.0.problem, "not a regular file (a named pipe)");
        assert_eq!(e.1.problem, "not a regular file (a named pipe)");
    }

    #[test]
    fn a_directory_or_a_missing_one_is_named() {
        let dir = temp("dir");
        let _ = std::fs::remove_file(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let gone = dir.join("not-here");
        let dangling = link_to("dangling", "/nonexistent-vigil/lease");
        for (path, problem) in [
            (dir.clone(), "not a regular file (a directory)".to_owned()),
            (gone.join("lease"), format!("no such directory ({})", gone.display())),
            (dangling.to_path_buf(), "a symbolic link to /nonexistent-vigil/lease, which cannot be created".to_owned()),
        ] {
            let lease = FileLease::new(&path);
            assert_eq!(lease.acquire("a", None, TTL).unwrap_err().problem, problem);
            assert_eq!(lease.check().unwrap_err().problem, problem);
        }
        assert!(!gone.exists(), "nothing is created on the way");
    }

    #[test]
    fn a_file_of_proc_is_read_no_further_than_the_limit_and_left_alone() {
        // /proc/version says it is 0 bytes long; it cannot be written by
        // anyone but root, and root may open it but not write it: what a
        // lease finds there is not a lease either way.
        let before = std::fs::read_to_string("/proc/version").unwrap();
        let lease = FileLease::new("/proc/version");
        for e in [lease.acquire("a", None, TTL).unwrap_err(), lease.check().unwrap_err()] {
            assert!(
                e.problem == "permission denied" || e.problem.contains("is not a line of a lease"),
                "{}",
                e.problem
            );
        }
        assert_eq!(std::fs::read_to_string("/proc/version").unwrap(), before);
        // A file longer than its length says is read up to the limit only:
        // /proc/self/smaps of this test is several times longer than 4096 bytes.
        assert!(std::fs::read_to_string("/proc/self/smaps").unwrap().len() > 4 * 4096);
        let lease = FileLease::new("/proc/self/smaps");
        for e in [lease.acquire("a", None, TTL).unwrap_err(), lease.check().unwrap_err()] {
            assert!(
                e.problem == "permission denied" || e.problem == "more than 4096 bytes: not a lease",
                "{}",
                e.problem
            );
        }
    }

    #[test]
    fn io_errors_are_said_in_plain_words() {
        for (kind, said) in [
            (ErrorKind::ReadOnlyFilesystem, "read-only file system"),
            (ErrorKind::PermissionDenied, "permission denied"),
            (ErrorKind::StorageFull, "no space left on the device"),
            (ErrorKind::NotADirectory, "a part of the path is not a directory"),
        ] {
            assert_eq!(plain(&io::Error::from(kind)), said);
        }
        let file = temp("plain");
        std::fs::write(&file, "").unwrap();
        let lease = FileLease::new(file.join("lease"));
        assert_eq!(lease.acquire("a", None, TTL).unwrap_err().problem, "a part of the path is not a directory");
        assert_eq!(lease.check().unwrap_err().problem, "a part of the path is not a directory");
    }

    #[test]
    fn a_lock_held_by_another_process_is_waited_for_a_while_only() {
        let path = temp("locked");
        let lease = FileLease::new(&path);
        assert!(lease.acquire("a", None, TTL).unwrap());
        // A lock of another open file of it is another process's, to flock.
        let other = File::open(&path).unwrap();
        other.lock().unwrap();
        let e =
            returns("a locked lease", move || (lease.acquire("a", None, TTL).unwrap_err(), lease.check().unwrap_err()));
        assert_eq!(e.0.problem, "locked by another process for more than 5 s");
        assert_eq!(e.1.problem, "locked by another process for more than 5 s");
        drop(other);
        assert!(FileLease::new(&path).acquire("a", None, TTL).unwrap(), "granted once the lock is let go");
    }

    #[test]
    fn a_check_takes_nothing_and_changes_nothing() {
        let path = temp("check");
        let _ = std::fs::remove_file(&path);
        let lease = FileLease::new(&path);
        lease.check().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "", "created empty: nobody holds it");
        assert!(lease.acquire("a", None, TTL).unwrap());
        let held = std::fs::read_to_string(&path).unwrap();
        FileLease::new(&path).check().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), held, "a's lease is as it was");
        assert!(!FileLease::new(&path).acquire("d", None, TTL).unwrap(), "still a's");
        // The default of the trait finds nothing wrong.
        #[derive(Debug)]
        struct Always;
        impl Lease for Always {
            fn acquire(&self, _: &str, _: Option<&str>, _: Duration) -> Result<bool, LeaseError> {
                Ok(true)
            }
        }
        assert!(Always.check().is_ok());
    }

    /// A lease whose check finds what the test says.
    #[derive(Debug, Default)]
    struct Switch {
        broken: std::sync::atomic::AtomicBool,
    }

    impl Lease for Switch {
        fn acquire(&self, _: &str, _: Option<&str>, _: Duration) -> Result<bool, LeaseError> {
            Ok(true)
        }

        fn check(&self) -> Result<(), LeaseError> {
            if self.broken.load(std::sync::atomic::Ordering::Relaxed) {
                Err(LeaseError { at: "/x/lease".into(), problem: "no such directory (/x)".into() })
            } else {
                Ok(())
            }
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_watch_checks_when_poked_and_keeps_what_it_found() {
        let lease = Arc::new(Switch::default());
        let watch = Watch::default();
        let task = tokio::spawn(watch.clone().run(lease.clone()));
        // Waits (in real time: the checks run on blocking threads) until
        // `n` checks were made.
        let checked = |n: u64| {
            let watch = watch.clone();
            async move {
                for _ in 0..3000 {
                    if watch.health().checks >= n {
                        return watch.health();
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                panic!("{n} checks were not made: {:?}", watch.health());
            }
        };
        assert_eq!(checked(1).await.usable(), Some(true), "checked at the start");
        lease.broken.store(true, std::sync::atomic::Ordering::Relaxed);
        watch.poke();
        let h = checked(2).await;
        assert_eq!((h.usable(), h.checks_failed), (Some(false), 1));
        assert_eq!(h.problem.as_deref(), Some("lease /x/lease: no such directory (/x)"));
        watch.poke();
        assert_eq!(checked(3).await.checks_failed, 2, "counted each time");
        lease.broken.store(false, std::sync::atomic::Ordering::Relaxed);
        watch.poke();
        let h = checked(4).await;
        assert_eq!((h.usable(), h.checks_failed, h.problem), (Some(true), 2, None));
        task.abort();
    }

    /// A lease that answers nothing until the test lets it go.
    #[derive(Debug)]
    struct Stuck(Mutex<std::sync::mpsc::Receiver<()>>);

    impl Lease for Stuck {
        fn acquire(&self, _: &str, _: Option<&str>, _: Duration) -> Result<bool, LeaseError> {
            let _ = self.0.lock().unwrap().recv();
            Ok(true)
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_lease_that_does_not_answer_is_not_taken() {
        let (release, stuck) = std::sync::mpsc::channel();
        let lease: Arc<dyn Lease> = Arc::new(Stuck(Mutex::new(stuck)));
        let answer = ask(Some(lease.clone()), decision("a")).await;
        assert_eq!(answer, LeaseAnswer::Unusable("no answer within 10 s".into()));
        release.send(()).unwrap();
        let path = temp("ask");
        let _ = std::fs::remove_file(&path);
        assert_eq!(ask(Some(Arc::new(FileLease::new(&path))), decision("a")).await, LeaseAnswer::Granted);
        // Refused, with the holder named: the side that won.
        let refused = ask(Some(Arc::new(FileLease::new(&path))), decision("d")).await;
        assert_eq!(refused, LeaseAnswer::Refused { holder: Some("a".into()) });
        let e = ask(Some(Arc::new(FileLease::new(path.join("lease")))), decision("a")).await;
        assert_eq!(
            e,
            LeaseAnswer::Unusable(format!(
                "lease {}: a part of the path is not a directory",
                path.join("lease").display()
            ))
        );
        assert_eq!(ask(None, decision("a")).await, LeaseAnswer::Unusable("no lease is configured".into()));
    }

    /// A lease whose check answers nothing until the test lets it go.
    #[derive(Debug)]
    struct Hung(Mutex<std::sync::mpsc::Receiver<()>>);

    impl Lease for Hung {
        fn acquire(&self, _: &str, _: Option<&str>, _: Duration) -> Result<bool, LeaseError> {
            Ok(true)
        }

        fn check(&self) -> Result<(), LeaseError> {
            let _ = self.0.lock().unwrap().recv();
            Ok(())
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_check_that_does_not_answer_fails_and_is_not_checked_twice() {
        let (release, hung) = std::sync::mpsc::channel();
        let watch = Watch::default();
        let task = tokio::spawn(watch.clone().run(Arc::new(Hung(Mutex::new(hung)))));
        let mut waited = 0;
        while watch.health().checks == 0 {
            assert!(waited < 30_000, "no check failed in 30 s");
            tokio::time::sleep(Duration::from_millis(10)).await;
            waited += 10;
        }
        let h = watch.health();
        assert_eq!((h.checks, h.checks_failed), (1, 1));
        assert_eq!(h.problem.as_deref(), Some("the lease did not answer a check within 10 s"));
        // Poked meanwhile, it does not start a second check beside the first.
        watch.poke();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(watch.health().checks, 1);
        release.send(()).unwrap();
        release.send(()).unwrap();
        while watch.health().checks < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(watch.health().usable(), Some(true), "the next check answered");
        task.abort();
    }

    #[test]
    fn holders_racing_from_threads_get_it_once() {
        let path = temp("race");
        let granted: Vec<bool> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let lease = FileLease::new(&path);
                    s.spawn(move || lease.acquire(&format!("side-{i}"), None, TTL).unwrap())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(granted.iter().filter(|g| **g).count(), 1, "{granted:?}");
    }
}

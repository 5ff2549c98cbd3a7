//! The members this one knew, kept in the data directory (file `members`)
//! so that a restarted member finds its cluster again without its seeds: a
//! seed that moved, a DNS name that no longer answers, or no seed at all.
//!
//! The file is written whole (a temporary beside it, synced, renamed) when
//! the live members change: looked at every [`CHECK_EVERY`], written at
//! most every [`WRITE_EVERY`], and when the member stops; a crash leaves
//! the last one written (the first about a second after the member met
//! anyone). It holds one member a
//! line, `NAME ADDRESS`, and is read back with every limit checked first: a
//! damaged or foreign file costs the rejoin, never the start.
//!
//! ```
//! use vigil_net::known;
//!
//! let dir = std::env::temp_dir().join(format!("vigil-doc-known-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! known::write(&dir, &[("b".into(), "10.0.0.2:7946".parse()?)])?;
//! assert_eq!(known::read(&dir).addrs, ["10.0.0.2:7946".parse()?]);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// The file's name in the data directory.
pub const FILE: &str = "members";

/// Removes the file from `dir` (a member that left for good); no file is
/// no error.
pub fn forget(dir: &Path) -> io::Result<()> {
    match std::fs::remove_file(dir.join(FILE)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Members kept at most (as many as a member keeps seeds).
pub const MAX_MEMBERS: usize = crate::seed::MAX_RESOLVED;

/// The longest file read: `MAX_MEMBERS` lines of a 64-byte name and an IPv6
/// address fit easily.
const MAX_BYTES: u64 = 64 * 1024;

/// How often the file may be written while members come and go.
pub const WRITE_EVERY: Duration = Duration::from_secs(10);

/// How often the live members are compared with the file's.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What a read found: the addresses, and the lines it skipped (damaged,
/// beyond the limits), to be logged.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Known {
    /// The members' addresses, in the file's order, without repeats.
    pub addrs: Vec<SocketAddr>,
    /// Lines that were not `NAME ADDRESS` or past [`MAX_MEMBERS`].
    pub skipped: usize,
    /// Why nothing could be read, if so (a missing file is not a problem).
    pub problem: Option<String>,
}

/// Reads the file in `dir`.
pub fn read(dir: &Path) -> Known {
    let path = dir.join(FILE);
    let mut known = Known::default();
    let mut text = String::new();
    let read = std::fs::File::open(&path).and_then(|f| {
        let mut limited = f.take(MAX_BYTES + 1);
        limited.read_to_string(&mut text)
    });
    match read {
        Ok(n) if n as u64 > MAX_BYTES => {
            known.problem = Some(format!("{}: larger than {MAX_BYTES} bytes, not read", path.display()));
            return known;
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return known,
        Err(e) => {
            known.problem = Some(format!("{}: {e}", path.display()));
            return known;
        }
    }
    for line in text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let addr = line.split_whitespace().nth(1).and_then(|a| a.parse::<SocketAddr>().ok());
        match addr {
            Some(a) if known.addrs.len() < MAX_MEMBERS && !a.ip().is_unspecified() && a.port() != 0 => {
                if !known.addrs.contains(&a) {
                    known.addrs.push(a);
                }
            }
            _ => known.skipped += 1,
        }
    }
    known
}

/// Writes `members` (name, address) into `dir`'s file, whole or not at
/// all; names are cut at whitespace so that a line always reads back.
pub fn write(dir: &Path, members: &[(String, SocketAddr)]) -> io::Result<()> {
    let path = dir.join(FILE);
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut text =
        String::from("# The members this one knew when it last wrote this file: it rejoins them after a restart.\n");
    for (name, addr) in members.iter().take(MAX_MEMBERS) {
        let name: String = name.chars().map(|c| if c.is_whitespace() || c.is_control() { '_' } else { c }).collect();
        text.push_str(&format!("{} {addr}\n", if name.is_empty() { "-" } else { &name }));
    }
    let tmp = dir.join(format!(".{FILE}.tmp-{}", std::process::id()));
    let write = || -> io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        named(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(what: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("vigil-known-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn what_is_written_reads_back_and_names_cannot_break_a_line() {
        let d = dir("roundtrip");
        let members = vec![
            ("a b\nc".to_owned(), "10.0.0.1:7946".parse().unwrap()),
            ("d".to_owned(), "[fd00::2]:7946".parse().unwrap()),
        ];
        write(&d, &members).unwrap();
        let k = read(&d);
        assert_eq!(k.addrs, [members[0].1, members[1].1]);
        assert_eq!((k.skipped, k.problem), (0, None));
        let text = std::fs::read_to_string(d.join(FILE)).unwrap();
        assert!(text.contains("a_b_c 10.0.0.1:7946"), "{text}");
        // No temporary left beside it.
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_damaged_or_hostile_file_costs_the_rejoin_not_the_start() {
        let d = dir("hostile");
        assert_eq!(read(&d), Known::default(), "no file: nothing, and no problem");
        let lines = "a 10.0.0.1:7946\ngarbage\nb 0.0.0.0:7946\nc 10.0.0.3:0\nd 10.0.0.1:7946\n\u{0}\u{ff} x\ne 10.0.0.5:7946 extra\n";
        std::fs::write(d.join(FILE), lines).unwrap();
        let k = read(&d);
        assert_eq!(k.addrs, ["10.0.0.1:7946".parse().unwrap(), "10.0.0.5:7946".parse().unwrap()]);
        assert_eq!(k.skipped, 4);
        // Too many lines: the first MAX_MEMBERS kept, the rest counted.
        let many: String = (0..MAX_MEMBERS + 10).map(|i| format!("m{i} 10.1.{}.{}:7946\n", i / 256, i % 256)).collect();
        std::fs::write(d.join(FILE), many).unwrap();
        let k = read(&d);
        assert_eq!((k.addrs.len(), k.skipped), (MAX_MEMBERS, 10));
        // Too large: not read at all, and said.
        std::fs::write(d.join(FILE), vec![b'#'; usize::try_from(MAX_BYTES).unwrap() + 1]).unwrap();
        let k = read(&d);
        assert!(k.addrs.is_empty() && k.problem.unwrap().contains("larger than"));
        // Not valid UTF-8: said, not a panic.
        std::fs::write(d.join(FILE), [0xff, 0xfe, b'\n']).unwrap();
        assert!(read(&d).problem.is_some());
        // A directory where the file should be.
        std::fs::remove_file(d.join(FILE)).unwrap();
        std::fs::create_dir(d.join(FILE)).unwrap();
        assert!(read(&d).problem.is_some());
        assert!(write(&d, &[]).unwrap_err().to_string().contains(FILE));
        std::fs::remove_dir_all(&d).unwrap();
    }
}

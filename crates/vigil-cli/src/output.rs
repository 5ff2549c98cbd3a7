//! Files the command writes: the directory is checked before any work
//! starts, and each file is written whole or not at all (to a temporary file
//! beside it, then renamed), so a failure leaves no truncated file behind and
//! nothing already there is lost.
//!
//! Only a regular file (or nothing) is ever replaced. A named pipe or a
//! character device (`/dev/null`, `/dev/full`, a terminal) is written into,
//! as a shell's `>` would, and its write errors are the command's; a
//! symbolic link is followed to what it names, and one that names nothing is
//! refused; a directory, a block device or a socket is refused. Every path
//! goes through [`destination`], so every command that writes a file
//! behaves the same.

use std::fs;
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::error::UsageError;

/// How a path is written.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Destination {
    /// Nothing is there, or a regular file: written whole to a temporary
    /// beside it, then renamed over it. The path is the one renamed over (a
    /// symbolic link's target, so the link stays).
    Replace(PathBuf),
    /// A named pipe or a character device: opened and written into; it is
    /// never replaced.
    Stream(PathBuf),
}

/// A path to write, resolved, with how messages name it (the path as given,
/// and where a link leads).
#[derive(Debug)]
struct Resolved {
    to: Destination,
    shown: String,
}

/// What writing `path` means, or why it is refused: see the module's
/// documentation.
fn destination(path: &Path) -> Result<Resolved> {
    let shown = path.display();
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Resolved { to: Destination::Replace(path.to_path_buf()), shown: shown.to_string() });
        }
        Err(e) => return Err(e).with_context(|| format!("writing {shown}")),
    };
    if meta.file_type().is_symlink() {
        let link = fs::read_link(path).map(|t| t.display().to_string()).unwrap_or_default();
        return match fs::metadata(path) {
            Ok(m) => {
                let real = fs::canonicalize(path).with_context(|| format!("writing {shown}: following the link"))?;
                kind(&real, &m.file_type(), &format!("{shown} (a link to {})", real.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(UsageError(format!(
                "{shown}: a symbolic link to {link}, which does not exist; nothing is written through a link that \
                 names nothing (remove the link, or give the path it should name)"
            ))
            .into()),
            Err(e) => Err(e).with_context(|| format!("writing {shown}: following the link to {link}")),
        };
    }
    kind(path, &meta.file_type(), &shown.to_string())
}

/// A destination by the type of what is at `path` (`shown` names it).
fn kind(path: &Path, t: &fs::FileType, shown: &str) -> Result<Resolved> {
    let to = |to| Ok(Resolved { to, shown: shown.to_owned() });
    let refused = |what: &str| -> Result<Resolved> {
        Err(UsageError(format!(
            "{shown}: {what}; vigil writes regular files, named pipes and character devices, and replaces only \
             regular files"
        ))
        .into())
    };
    if t.is_file() {
        to(Destination::Replace(path.to_path_buf()))
    } else if t.is_fifo() || t.is_char_device() {
        to(Destination::Stream(path.to_path_buf()))
    } else if t.is_dir() {
        refused("a directory is in the way")
    } else if t.is_block_device() {
        refused("a block device (a disk) is never written")
    } else if t.is_socket() {
        refused("a socket is in the way")
    } else {
        refused("not a file vigil can write")
    }
}

/// Writes one line on standard error (the `say!` macro): a closed or full
/// standard error loses the line, never the command. What a terminal would
/// act on (an escape sequence in a name the user gave) is shown as an
/// escape.
pub(crate) fn say(args: std::fmt::Arguments<'_>) {
    let line = format!("{}\n", vigil_lab::text::escaped_lines(&args.to_string()));
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Writes `bytes` into a pipe or a device at `path`; `shown` names it in
/// errors.
fn stream(path: &Path, shown: &str, bytes: &[u8]) -> Result<()> {
    let result = fs::OpenOptions::new().write(true).open(path).and_then(|mut f| {
        f.write_all(bytes)?;
        f.flush()
    });
    // The error is told, not kept as an I/O error: a pipe closed under a
    // file the user named is a failure, unlike standard output's.
    result.map_err(|e| UsageError(format!("writing {shown}: {e}")).into())
}

/// A directory the command will write into, known to exist and accept files.
///
/// A directory this creates and nothing is written into (the work failed
/// after the check) is removed again when it is dropped: a failed command
/// leaves no empty directory behind.
#[derive(Debug)]
pub(crate) struct OutputDir {
    path: PathBuf,
    created: bool,
    written: std::cell::Cell<bool>,
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        if self.created && !self.written.get() {
            // Only an empty directory is removed; anything else stays.
            let _ = fs::remove_dir(&self.path);
        }
    }
}

impl OutputDir {
    /// Creates `path` if needed and checks that a file can be written in it,
    /// before any work starts. `flag` names the option the user set.
    pub(crate) fn prepare(path: &Path, flag: &str) -> Result<OutputDir> {
        let shown = path.display();
        if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) && fs::metadata(path).is_err() {
            let link = fs::read_link(path).map(|t| t.display().to_string()).unwrap_or_default();
            return Err(UsageError(format!(
                "{flag} {shown}: a symbolic link to {link}, which does not exist; no directory is made through a \
                 link that names nothing"
            ))
            .into());
        }
        if path.exists() && !path.is_dir() {
            bail!("{flag} {shown}: exists and is not a directory");
        }
        let created = !path.exists();
        fs::create_dir_all(path).with_context(|| format!("{flag} {shown}: creating the directory"))?;
        let dir = OutputDir { path: path.to_path_buf(), created, written: std::cell::Cell::new(false) };
        let probe = temporary(&path.join("write-check"));
        create_new(&probe).with_context(|| format!("{flag} {shown}: cannot write in the directory"))?;
        let _ = fs::remove_file(&probe);
        Ok(dir)
    }

    /// The path of `name` in the directory.
    pub(crate) fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes `name` whole, or not at all (see [`write_whole`]). Returns its
    /// path. `name` is one file name: no name vigil makes leads out of the
    /// directory.
    pub(crate) fn write(&self, name: &str, bytes: &[u8]) -> Result<PathBuf> {
        let path = self.plain(name)?;
        write_whole(&path, bytes)?;
        self.written.set(true);
        Ok(path)
    }

    /// Writes a set of files that belong together (a report and its
    /// figures): every file goes to a temporary beside it first, and only
    /// when all are written are they renamed into place. A failure (a full
    /// disk) removes the temporaries and leaves the directory as it was.
    /// A file of the set that is a named pipe or a device is written into
    /// once every other file is staged, before any is renamed (what went
    /// into a pipe cannot be taken back). Returns the paths, in order. The
    /// files are produced one at a time, so a large set is never held in
    /// memory whole.
    pub(crate) fn write_set(&self, files: impl IntoIterator<Item = (String, Vec<u8>)>) -> Result<Vec<PathBuf>> {
        let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
        let mut streams: Vec<(PathBuf, String, Vec<u8>)> = Vec::new();
        let mut paths = Vec::new();
        let unstage = |staged: &[(PathBuf, PathBuf)]| {
            for (tmp, _) in staged {
                let _ = fs::remove_file(tmp);
            }
        };
        for (name, bytes) in files {
            let resolved = self.plain(&name).and_then(|p| Ok((destination(&p)?, p)));
            let (resolved, path) = match resolved {
                Ok(r) => r,
                Err(e) => {
                    unstage(&staged);
                    return Err(e);
                }
            };
            match resolved.to {
                Destination::Replace(real) => {
                    let tmp = temporary(&real);
                    if let Err(e) = write_synced(&tmp, &bytes) {
                        let _ = fs::remove_file(&tmp);
                        unstage(&staged);
                        return Err(e).with_context(|| format!("writing {}", resolved.shown));
                    }
                    staged.push((tmp, real));
                }
                Destination::Stream(p) => streams.push((p, resolved.shown, bytes)),
            }
            paths.push(path);
        }
        for (path, shown, bytes) in &streams {
            if let Err(e) = stream(path, shown, bytes) {
                unstage(&staged);
                return Err(e);
            }
        }
        self.written.set(true);
        for (i, (tmp, path)) in staged.iter().enumerate() {
            if let Err(e) = fs::rename(tmp, path) {
                unstage(&staged[i..]);
                return Err(e).with_context(|| format!("writing {}", path.display()));
            }
        }
        Ok(paths)
    }

    /// `name` in the directory, if it is one plain file name.
    fn plain(&self, name: &str) -> Result<PathBuf> {
        let plain = Path::new(name).file_name().is_some_and(|f| f == name) && name != ".." && name != ".";
        if !plain {
            bail!(
                "{}: '{name}' is not a plain file name; nothing is written outside the directory",
                self.path.display()
            );
        }
        Ok(self.join(name))
    }
}

/// The temporary a file is written to before it is renamed into place.
fn temporary(path: &Path) -> PathBuf {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dir.join(format!(".{name}.tmp-{}", std::process::id()))
}

/// A new file at `path`, never one that is there already (nor what a link
/// there names): a leftover of this process id is removed first.
fn create_new(path: &Path) -> std::io::Result<fs::File> {
    let open = || fs::OpenOptions::new().write(true).create_new(true).open(path);
    match open() {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            fs::remove_file(path)?;
            open()
        }
        r => r,
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = create_new(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Writes `path` whole or not at all: the bytes go to a temporary file in the
/// same directory, which is synced and renamed over `path`. On failure the
/// temporary file is removed and `path` is as it was. A link is followed (the
/// file it names is replaced, the link stays); a named pipe or a device is
/// written into; anything else is refused (see [`destination`]).
pub(crate) fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let resolved = destination(path)?;
    match resolved.to {
        Destination::Replace(real) => {
            let tmp = temporary(&real);
            let result = write_synced(&tmp, bytes).and_then(|()| fs::rename(&tmp, &real));
            if let Err(e) = result {
                let _ = fs::remove_file(&tmp);
                return Err(e).with_context(|| format!("writing {}", resolved.shown));
            }
            Ok(())
        }
        Destination::Stream(p) => stream(&p, &resolved.shown, bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_written_whole_and_a_failed_write_leaves_the_old_one() {
        let dir = std::env::temp_dir().join(format!("vigil-output-{}", std::process::id()));
        let out = OutputDir::prepare(&dir, "--out").unwrap();
        let path = out.write("a.txt", b"first").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"first");
        out.write("a.txt", b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        // A directory in the way of the rename: the write fails, the
        // directory is untouched and no temporary file is left.
        fs::create_dir_all(dir.join("b.txt")).unwrap();
        let e = out.write("b.txt", b"x").unwrap_err();
        assert!(format!("{e:#}").contains("b.txt"), "{e:#}");
        let left: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().contains(".tmp-")), "{left:?}");
        // Only plain names: nothing lands outside the directory.
        for name in ["../escaped", "/tmp/abs", "a/b", ".."] {
            let e = out.write(name, b"x").unwrap_err();
            assert!(format!("{e:#}").contains("not a plain file name"), "{name}: {e:#}");
        }
        // A set: one file cannot be renamed into place (a directory is in
        // the way), so none is written, whatever its place in the set.
        let set = vec![("c.txt".to_owned(), b"c".to_vec()), ("b.txt".to_owned(), b"b".to_vec())];
        assert!(out.write_set(set).is_err());
        assert!(!dir.join("c.txt").exists(), "the rest of a failed set is not written");
        let left: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().contains(".tmp-")), "{left:?}");
        let set = vec![("d.txt".to_owned(), b"d".to_vec()), ("../e.txt".to_owned(), b"e".to_vec())];
        assert!(out.write_set(set).is_err());
        assert!(!dir.join("d.txt").exists(), "nothing of a refused set is written");
        let paths = out.write_set([("f.txt".to_owned(), b"f".to_vec())]).unwrap();
        assert_eq!(fs::read(&paths[0]).unwrap(), b"f");
        // A directory made for a command that then wrote nothing is removed;
        // one that was there already stays.
        let fresh = dir.join("fresh");
        drop(OutputDir::prepare(&fresh, "--out").unwrap());
        assert!(!fresh.exists(), "an unused new directory is removed");
        drop(OutputDir::prepare(&dir, "--out").unwrap());
        assert!(dir.exists(), "a directory that was there stays");
        // Under a regular file there is no directory to make.
        let e = OutputDir::prepare(&path.join("sub"), "--out").unwrap_err();
        assert!(format!("{e:#}").starts_with("--out "), "{e:#}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_regular_files_are_replaced_and_the_rest_written_into_or_refused() {
        let dir = std::env::temp_dir().join(format!("vigil-output-kinds-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let kind_of = |p: &Path| fs::symlink_metadata(p).map(|m| m.file_type());
        // A regular file behind a link: replaced whole, the link stays.
        let real = dir.join("real.txt");
        fs::write(&real, b"old").unwrap();
        let link = dir.join("link.txt");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_whole(&link, b"new").unwrap();
        assert!(kind_of(&link).unwrap().is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"new");
        // A link that names nothing: refused, named; nothing is made.
        let dangling = dir.join("dangling.txt");
        std::os::unix::fs::symlink(dir.join("nowhere/x"), &dangling).unwrap();
        let e = format!("{:#}", write_whole(&dangling, b"x").unwrap_err());
        assert!(e.starts_with(&format!("{}: a symbolic link to", dangling.display())), "{e}");
        assert!(e.contains("which does not exist"), "{e}");
        assert!(!dir.join("nowhere").exists());
        let e = format!("{:#}", OutputDir::prepare(&dangling, "--out").unwrap_err());
        assert!(e.starts_with("--out ") && e.contains("which does not exist"), "{e}");
        // A directory or a socket in the way: refused.
        let sub = dir.join("sub");
        fs::create_dir(&sub).unwrap();
        let e = format!("{:#}", write_whole(&sub, b"x").unwrap_err());
        assert!(e.contains("a directory is in the way"), "{e}");
        let socket = dir.join("socket");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let e = format!("{:#}", write_whole(&socket, b"x").unwrap_err());
        assert!(e.contains("a socket is in the way"), "{e}");
        assert!(kind_of(&socket).unwrap().is_socket());
        // Character devices are written into: their errors are the write's.
        assert_eq!(destination(Path::new("/dev/null")).unwrap().to, Destination::Stream("/dev/null".into()));
        write_whole(Path::new("/dev/null"), b"x").unwrap();
        assert!(kind_of(Path::new("/dev/null")).unwrap().is_char_device());
        let e = format!("{:#}", write_whole(Path::new("/dev/full"), b"x").unwrap_err());
        assert!(e.starts_with("writing /dev/full: No space left on device"), "{e}");
        // Nothing at all: a new file.
        assert_eq!(destination(&dir.join("new")).unwrap().to, Destination::Replace(dir.join("new")));
        let left: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().contains(".tmp-")), "{left:?}");
        let _ = fs::remove_dir_all(&dir);
    }
}

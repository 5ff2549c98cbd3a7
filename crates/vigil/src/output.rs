//! Files the command writes: the directory is checked before any work
//! starts, and each file is written whole or not at all (to a temporary file
//! beside it, then renamed), so a failure leaves no truncated file behind and
//! nothing already there is lost.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

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
        if path.exists() && !path.is_dir() {
            bail!("{flag} {}: exists and is not a directory", path.display());
        }
        let created = !path.exists();
        fs::create_dir_all(path).with_context(|| format!("{flag} {}: creating the directory", path.display()))?;
        let dir = OutputDir { path: path.to_path_buf(), created, written: std::cell::Cell::new(false) };
        let probe = path.join(format!(".vigil-write-check-{}", std::process::id()));
        fs::write(&probe, b"").with_context(|| format!("{flag} {}: cannot write in the directory", path.display()))?;
        let _ = fs::remove_file(&probe);
        Ok(dir)
    }

    /// The path of `name` in the directory.
    pub(crate) fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes `name` whole, or not at all. Returns its path. `name` is one
    /// file name: nothing outside the directory is ever written.
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
    /// Returns the paths, in order. The files are produced one at a time,
    /// so a large set is never held in memory whole.
    pub(crate) fn write_set(&self, files: impl IntoIterator<Item = (String, Vec<u8>)>) -> Result<Vec<PathBuf>> {
        let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
        let unstage = |staged: &[(PathBuf, PathBuf)]| {
            for (tmp, _) in staged {
                let _ = fs::remove_file(tmp);
            }
        };
        for (name, bytes) in files {
            let path = match self.plain(&name) {
                Ok(p) => p,
                Err(e) => {
                    unstage(&staged);
                    return Err(e);
                }
            };
            let tmp = temporary(&path);
            if let Err(e) = write_synced(&tmp, &bytes) {
                let _ = fs::remove_file(&tmp);
                unstage(&staged);
                return Err(e).with_context(|| format!("writing {}", path.display()));
            }
            staged.push((tmp, path));
        }
        // A directory where a file should go would stop a rename halfway:
        // found before any file is moved into place.
        if let Some((_, path)) = staged.iter().find(|(_, path)| path.is_dir()) {
            unstage(&staged);
            bail!("writing {}: a directory is in the way", path.display());
        }
        self.written.set(true);
        for (i, (tmp, path)) in staged.iter().enumerate() {
            if let Err(e) = fs::rename(tmp, path) {
                unstage(&staged[i..]);
                return Err(e).with_context(|| format!("writing {}", path.display()));
            }
        }
        Ok(staged.into_iter().map(|(_, p)| p).collect())
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

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = fs::File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Writes `path` whole or not at all: the bytes go to a temporary file in the
/// same directory, which is synced and renamed over `path`. On failure the
/// temporary file is removed and `path` is as it was.
pub(crate) fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temporary(path);
    let result = write_synced(&tmp, bytes).and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    Ok(())
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
}

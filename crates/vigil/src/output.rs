//! Files the command writes: the directory is checked before any work
//! starts, and each file is written whole or not at all (to a temporary file
//! beside it, then renamed), so a failure leaves no truncated file behind and
//! nothing already there is lost.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// A directory the command will write into, known to exist and accept files.
#[derive(Debug)]
pub(crate) struct OutputDir {
    path: PathBuf,
}

impl OutputDir {
    /// Creates `path` if needed and checks that a file can be written in it,
    /// before any work starts. `flag` names the option the user set.
    pub(crate) fn prepare(path: &Path, flag: &str) -> Result<OutputDir> {
        if path.exists() && !path.is_dir() {
            bail!("{flag} {}: exists and is not a directory", path.display());
        }
        fs::create_dir_all(path).with_context(|| format!("{flag} {}: creating the directory", path.display()))?;
        let probe = path.join(format!(".vigil-write-check-{}", std::process::id()));
        fs::write(&probe, b"").with_context(|| format!("{flag} {}: cannot write in the directory", path.display()))?;
        let _ = fs::remove_file(&probe);
        Ok(OutputDir { path: path.to_path_buf() })
    }

    /// The path of `name` in the directory.
    pub(crate) fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes `name` whole, or not at all. Returns its path. `name` is one
    /// file name: nothing outside the directory is ever written.
    pub(crate) fn write(&self, name: &str, bytes: &[u8]) -> Result<PathBuf> {
        let plain = Path::new(name).file_name().is_some_and(|f| f == name) && name != ".." && name != ".";
        if !plain {
            bail!(
                "{}: '{name}' is not a plain file name; nothing is written outside the directory",
                self.path.display()
            );
        }
        let path = self.join(name);
        write_whole(&path, bytes)?;
        Ok(path)
    }
}

/// Writes `path` whole or not at all: the bytes go to a temporary file in the
/// same directory, which is synced and renamed over `path`. On failure the
/// temporary file is removed and `path` is as it was.
pub(crate) fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
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
        // Under a regular file there is no directory to make.
        let e = OutputDir::prepare(&path.join("sub"), "--out").unwrap_err();
        assert!(format!("{e:#}").starts_with("--out "), "{e:#}");
        let _ = fs::remove_dir_all(&dir);
    }
}

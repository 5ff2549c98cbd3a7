//! Generations that only grow, across restarts.
//!
//! A member's generation tells its peers that a restarted process is a new
//! life of the same name: its old rumours, and the accusations against the
//! old process, no longer apply. So a restart must always come back with a
//! higher generation. With a data directory the last generation used is
//! recorded there, and the next start takes one more than it (or the wall
//! clock in milliseconds, if that is higher): a wall clock that stepped back
//! cannot make a generation go down. Without one, the wall clock alone is
//! used, which a clock stepped back by more than a restart takes can defeat.
//!
//! # Examples
//!
//! ```
//! use vigil_net::generation::next_generation;
//!
//! let dir = std::env::temp_dir().join(format!("vigil-doc-generation-{}", std::process::id()));
//! let first = next_generation(Some(&dir))?;
//! let restart = next_generation(Some(&dir))?;
//! assert!(restart > first);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The file in the data directory: the last generation, in decimal, on one
/// line.
///
/// # Examples
///
/// ```
/// use vigil_net::generation::{FILE, next_generation};
///
/// let dir = std::env::temp_dir().join(format!("vigil-doc-generation-file-{}", std::process::id()));
/// let g = next_generation(Some(&dir))?;
/// assert_eq!(std::fs::read_to_string(dir.join(FILE))?, format!("{g}\n"));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub const FILE: &str = "generation";

fn wall_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The largest generation a file may hold: beyond it a restart could not
/// come back higher for long (a year of restarts a millisecond apart from
/// the largest u64 down). A file holding more is refused, not taken.
///
/// # Examples
///
/// ```
/// use vigil_net::generation::{FILE, MAX_GENERATION, next_generation};
///
/// let dir = std::env::temp_dir().join(format!("vigil-doc-generation-max-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join(FILE), format!("{}\n", MAX_GENERATION + 1))?;
/// assert!(next_generation(Some(&dir)).is_err());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub const MAX_GENERATION: u64 = u64::MAX - 365 * 86_400_000;

/// The generation for this start, recorded in `dir` (created if needed)
/// before it is returned: one more than the last recorded, or the wall
/// clock in milliseconds if that is higher. Without a directory, the wall
/// clock alone.
///
/// # Errors
///
/// An [`io::Error`] naming the path when the directory cannot be created,
/// the file cannot be read, or the new generation cannot be written (it is
/// written whole, to a temporary renamed into place, or not at all); and
/// one of kind [`InvalidData`](io::ErrorKind::InvalidData) when the file
/// does not hold a number, or holds one above [`MAX_GENERATION`] (the file
/// is not overwritten then: someone should look).
///
/// # Examples
///
/// ```
/// use vigil_net::generation::{FILE, next_generation};
///
/// let dir = std::env::temp_dir().join(format!("vigil-doc-next-generation-{}", std::process::id()));
/// let first = next_generation(Some(&dir))?;
/// assert!(next_generation(Some(&dir))? > first);
/// std::fs::write(dir.join(FILE), "garbage")?;
/// let e = next_generation(Some(&dir)).unwrap_err();
/// assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn next_generation(dir: Option<&Path>) -> io::Result<u64> {
    let Some(dir) = dir else { return Ok(wall_ms().max(1)) };
    let named = |e: io::Error, path: &Path| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    fs::create_dir_all(dir).map_err(|e| named(e, dir))?;
    let path = dir.join(FILE);
    let bad = |why: String| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {why}", path.display()));
    let last = match fs::read_to_string(&path) {
        Ok(text) => {
            let g = text.trim().parse::<u64>().map_err(|_| {
                bad(format!("not a generation number: {:?}", text.chars().take(40).collect::<String>()))
            })?;
            if g > MAX_GENERATION {
                return Err(bad(format!(
                    "generation {g} leaves no room to restart higher (at most {MAX_GENERATION}); remove the file to \
                     start again from the clock's"
                )));
            }
            Some(g)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(named(e, &path)),
    };
    let next = last.map_or(0, |g| g + 1).max(wall_ms()).max(1);
    // Whole or not at all: a temporary beside it, synced, renamed.
    let tmp = dir.join(format!(".{FILE}.tmp-{}", std::process::id()));
    let write = || -> io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(format!("{next}\n").as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, &path)
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(named(e, &path));
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_always_comes_back_higher_even_when_the_clock_steps_back() {
        let dir = std::env::temp_dir().join(format!("vigil-generation-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let first = next_generation(Some(&dir)).unwrap();
        let second = next_generation(Some(&dir)).unwrap();
        assert!(second > first);
        // A generation recorded far in the future (a clock that was ahead,
        // then stepped back): the next is still higher.
        let future = wall_ms() + 86_400_000;
        fs::write(dir.join(FILE), format!("{future}\n")).unwrap();
        assert_eq!(next_generation(Some(&dir)).unwrap(), future + 1);
        // A file that is not a number is an error and is left alone.
        fs::write(dir.join(FILE), "garbage").unwrap();
        assert!(next_generation(Some(&dir)).is_err());
        assert_eq!(fs::read_to_string(dir.join(FILE)).unwrap(), "garbage");
        // The largest number would freeze every restart at it: refused,
        // naming the file.
        fs::write(dir.join(FILE), format!("{}\n", u64::MAX)).unwrap();
        let e = next_generation(Some(&dir)).unwrap_err().to_string();
        assert!(e.contains("leaves no room") && e.contains(&dir.join(FILE).display().to_string()), "{e}");
        fs::write(dir.join(FILE), format!("{MAX_GENERATION}\n")).unwrap();
        assert_eq!(next_generation(Some(&dir)).unwrap(), MAX_GENERATION + 1);
        let _ = fs::remove_dir_all(&dir);
    }
}

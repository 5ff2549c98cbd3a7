//! The command's errors: what it reports with exit status 1 or 2, and
//! standard output's own, named as such.

use std::io;

/// A run that completed and failed what it checks: reported as
/// `vigil: <message>` with exit status 1.
#[derive(Debug)]
pub(crate) struct CheckFailed(pub(crate) String);

impl std::fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CheckFailed {}

/// An error that is the user's input: reported as `vigil: <message>` with
/// exit status 2.
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

pub(crate) fn name_stdout(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), StdoutError(e))
}

/// An error writing standard output.
#[derive(Debug)]
struct StdoutError(io::Error);

impl std::fmt::Display for StdoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "standard output: {}", self.0)
    }
}

impl std::error::Error for StdoutError {}

/// Standard output closed by its reader (`vigil replay ... | head`): the
/// reader has taken what it wanted, which is not an error. Only standard
/// output's: a pipe the user named as a file (`--write-trace FIFO`) whose
/// reader went away is an error like any other.
pub(crate) fn closed_stdout(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>().is_some_and(|e| {
            e.kind() == io::ErrorKind::BrokenPipe && e.get_ref().is_some_and(|inner| inner.is::<StdoutError>())
        })
    })
}

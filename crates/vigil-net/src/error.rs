//! Why a member could not start.

use std::fmt;
use std::io;
use std::net::SocketAddr;

use vigil_membership::ConfigError;
use vigil_membership::seal::SealError;

/// A member that could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// The protocol configuration is not valid.
    Config(ConfigError),
    /// The sealing settings are not valid.
    Seal(SealError),
    /// A socket could not be bound.
    Bind(SocketAddr, io::Error),
    /// The generation could not be read or recorded in the data directory.
    Generation(io::Error),
    /// A runtime setting is not valid.
    Setting(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Config(e) => write!(f, "{e}"),
            StartError::Seal(e) => write!(f, "{e}"),
            StartError::Bind(addr, e) => write!(f, "cannot bind {addr}: {e}"),
            StartError::Generation(e) => write!(f, "generation: {e}"),
            StartError::Setting(s) => f.write_str(s),
        }
    }
}

/// The message carries the inner error's; it is not given again as a
/// source.
impl std::error::Error for StartError {}

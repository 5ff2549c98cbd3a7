//! What can go wrong with a member: at its start, and when it is asked
//! something after it stopped.

use std::fmt;
use std::io;
use std::net::SocketAddr;

use vigil_membership::ConfigError;
use vigil_membership::keyring::KeyringError;
use vigil_membership::seal::SealError;

/// A member that could not start ([`Builder::start`](crate::Builder::start)).
/// Nothing was left running; a data directory made for this start is
/// removed. Its message names the setting or the address at fault.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use vigil_net::{Cluster, NetConfig, StartError};
///
/// let e = Cluster::builder("").bind("127.0.0.1:0".parse().unwrap()).start().await.unwrap_err();
/// assert!(matches!(e, StartError::Config(_)), "an empty name");
///
/// let mut net = NetConfig::default();
/// net.max_connections = 0;
/// let e = Cluster::builder("a").bind("127.0.0.1:0".parse().unwrap()).net(net).start().await.unwrap_err();
/// assert_eq!(e.to_string(), "max_connections must be at least 1");
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// The protocol configuration, or the member's name, is not valid
    /// ([`ConfigError::field`] names what).
    Config(ConfigError),
    /// The sealing settings are not valid (a mode that seals, without
    /// keys).
    Seal(SealError),
    /// A socket could not be bound: the address is taken, or not this
    /// host's.
    Bind(SocketAddr, io::Error),
    /// The generation could not be read or recorded in the data directory
    /// (the error names the path).
    Generation(io::Error),
    /// A runtime setting ([`NetConfig`](crate::NetConfig)) is out of range.
    Net {
        /// The setting.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// The address to advertise is one other members cannot reach (an
    /// unspecified address or port 0): give one with
    /// [`Builder::advertise`](crate::Builder::advertise).
    Unreachable(SocketAddr),
    /// A seed given by name cannot be used ([`Builder::seed_names`](crate::Builder::seed_names)).
    Seed(crate::SeedError),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Config(e) => write!(f, "{e}"),
            StartError::Seal(e) => write!(f, "{e}"),
            StartError::Bind(addr, e) => write!(f, "cannot bind {addr}: {e}"),
            StartError::Generation(e) => write!(f, "generation: {e}"),
            StartError::Net { field, expected } => write!(f, "{field} must be {expected}"),
            StartError::Seed(e) => write!(f, "{e}"),
            StartError::Unreachable(addr) => write!(
                f,
                "{addr} is not an address other members can reach (an unspecified address or port 0): give one to \
                 advertise"
            ),
        }
    }
}

/// The message carries the inner error's; it is not given again as a
/// source.
impl std::error::Error for StartError {}

/// The member has stopped (it left, was shut down, or failed): it answers
/// nothing any more, and changes nothing. Every method of
/// [`Cluster`](crate::Cluster) that asks the member something returns it
/// then.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use vigil_net::{Cluster, Stopped};
///
/// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
/// a.leave().await;
/// assert_eq!(a.stats().await, Err(Stopped));
/// assert_eq!(Stopped.to_string(), "the member has stopped");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the member has stopped")
    }
}

impl std::error::Error for Stopped {}

/// A keyring operation that was not done ([`Cluster::install_key`](crate::Cluster::install_key),
/// [`use_key`](crate::Cluster::use_key),
/// [`remove_key`](crate::Cluster::remove_key)); the keyring is unchanged.
///
/// # Examples
///
/// ```
/// use vigil_net::{KeyError, KeyId, KeyringError};
///
/// let e = KeyError::Keyring(KeyringError::Unknown(KeyId(0x0a0b0c0d)));
/// assert!(e.to_string().contains("0a0b0c0d"));
/// assert_eq!(KeyError::NoKeyring.to_string(), "this member has no keyring: it runs in plaintext without keys");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// The member has stopped.
    Stopped,
    /// The member was started without keys
    /// ([`Builder::keys`](crate::Builder::keys)), so it has no keyring to
    /// change.
    NoKeyring,
    /// The keyring refused (an unknown id, the primary key removed, a full
    /// keyring, an id collision).
    Keyring(KeyringError),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::Stopped => Stopped.fmt(f),
            KeyError::NoKeyring => f.write_str("this member has no keyring: it runs in plaintext without keys"),
            KeyError::Keyring(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for KeyError {}

impl From<Stopped> for KeyError {
    fn from(_: Stopped) -> KeyError {
        KeyError::Stopped
    }
}

impl From<KeyringError> for KeyError {
    fn from(e: KeyringError) -> KeyError {
        KeyError::Keyring(e)
    }
}

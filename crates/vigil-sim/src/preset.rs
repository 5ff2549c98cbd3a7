//! The cluster the simulated nodes form, and the protocol configuration
//! each scenario protocol stands for.

use vigil_membership::Config;

use crate::scenario::Protocol;

/// The cluster id of simulated nodes.
///
/// # Example
///
/// ```
/// assert_eq!(vigil_sim::preset(vigil_sim::Protocol::Phi).cluster, vigil_sim::CLUSTER);
/// ```
pub const CLUSTER: u64 = 0x5eed;

/// The protocol configuration a scenario's protocol stands for.
///
/// # Example
///
/// ```
/// use vigil_sim::{Protocol, preset};
///
/// let classic = preset(Protocol::Classic);
/// assert!(classic.validate().is_ok());
/// ```
pub fn preset(protocol: Protocol) -> Config {
    match protocol {
        Protocol::Phi => Config::lan(CLUSTER),
        Protocol::PhiFast => Config::lan_fast(CLUSTER),
        Protocol::Classic => Config::classic_lan(CLUSTER),
    }
}

//! `vigil keygen`: a fresh key for `--key-file` and `vigil keys install`.
//! Reading key and token files is the agent's ([`vigil_agent::secrets`]).

use std::io::Write;

use anyhow::{Context, Result};
use clap::Args;
use vigil_membership::keyring::Key;

/// Arguments of `vigil keygen`.
#[derive(Debug, Args)]
pub(crate) struct KeygenArgs {
    /// Print the key as 64 hex digits instead of base64.
    #[arg(long)]
    hex: bool,
}

/// `vigil keygen`: a fresh 32-byte key from the operating system's random
/// source.
pub(crate) fn keygen(a: &KeygenArgs, out: &mut dyn Write) -> Result<()> {
    let mut key = Key([0u8; 32]);
    getrandom::fill(&mut key.0).context("the operating system's random source")?;
    let text = if a.hex { key.to_hex() } else { key.to_string() };
    writeln!(out, "{text}")?;
    Ok(())
}

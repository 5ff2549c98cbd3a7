//! Limits checked before work starts: the memory a run will need against
//! what the machine (or `--max-memory-gb`) allows.

use std::fs;

use anyhow::Result;

use crate::UsageError;

/// A number as a user would write it: plain, or in exponent form when plain
/// would take more than 15 digits (so 1e20 is not echoed as 21 digits).
pub(crate) fn number(v: f64) -> String {
    if v.is_finite() && v != 0.0 && !(1e-6..1e15).contains(&v.abs()) { format!("{v:e}") } else { format!("{v}") }
}

/// The memory a run may take: `--max-memory-gb`, or 80 % of the machine's
/// memory (8 GB if it cannot be read).
pub(crate) fn memory_budget(flag: Option<f64>) -> Result<u64> {
    match flag {
        Some(gb) if gb.is_finite() && gb > 0.0 && gb <= 1e6 => Ok((gb * 1e9) as u64),
        Some(gb) => {
            Err(UsageError(format!("--max-memory-gb: {} is not a size between 0 and 1,000,000 GB", number(gb))).into())
        }
        None => {
            let total_kb = fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
            });
            Ok(total_kb.map_or(8_000_000_000, |kb| kb.saturating_mul(1024) / 10 * 8))
        }
    }
}

/// Refuses work whose memory estimate `need` exceeds `budget`: `what` says
/// what needs it and why, `change` which flag to change.
pub(crate) fn check_memory(need: u64, budget: u64, what: &str, change: &str) -> Result<()> {
    if need > budget {
        return Err(UsageError(format!(
            "{what} need about {:.1} GB of memory, more than the {:.1} GB allowed; {change}, or raise --max-memory-gb",
            need as f64 / 1e9,
            budget as f64 / 1e9
        ))
        .into());
    }
    Ok(())
}

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

/// The memory a run may take: `--max-memory-gb`, or 80 % of what this
/// process can have: the machine's memory, or the process's address-space
/// limit (`ulimit -v`) if that is lower (8 GB if neither can be read).
pub(crate) fn memory_budget(flag: Option<f64>) -> Result<u64> {
    match flag {
        Some(gb) if gb.is_finite() && gb > 0.0 && gb <= MAX_BUDGET_GB => Ok((gb * 1e9) as u64),
        Some(gb) => {
            Err(UsageError(format!("--max-memory-gb: {} is not a size between 0 and {MAX_BUDGET_GB} GB", number(gb)))
                .into())
        }
        None => {
            let total = fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
                text.lines().find_map(|l| {
                    let kb = l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
                    Some(kb.saturating_mul(1024))
                })
            });
            // `Max address space  <soft>  <hard>  bytes`, soft "unlimited"
            // when there is no limit.
            let limit = fs::read_to_string("/proc/self/limits").ok().and_then(|text| {
                let line = text.lines().find(|l| l.starts_with("Max address space"))?;
                line.split_whitespace().nth(3)?.parse::<u64>().ok()
            });
            let can_have = match (total, limit) {
                (Some(t), Some(l)) => t.min(l),
                (a, b) => a.or(b).unwrap_or(10_000_000_000),
            };
            Ok(can_have / 10 * 8)
        }
    }
}

/// The largest `--max-memory-gb`.
const MAX_BUDGET_GB: f64 = 1e6;

/// Refuses work whose memory estimate `need` exceeds `budget`: `what` says
/// what needs it and why, `change` which flag to change.
pub(crate) fn check_memory(need: u64, budget: u64, what: &str, change: &str) -> Result<()> {
    if need > budget {
        // Raising the budget helps only if the need is within its range.
        let raise = if (need as f64) <= MAX_BUDGET_GB * 1e9 { ", or raise --max-memory-gb" } else { "" };
        return Err(UsageError(format!(
            "{what} need about {:.1} GB of memory, more than the {:.1} GB allowed; {change}{raise}",
            need as f64 / 1e9,
            budget as f64 / 1e9
        ))
        .into());
    }
    Ok(())
}

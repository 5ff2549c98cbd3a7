//! Limits checked before work starts: the memory a run will need against
//! what the machine (or `--max-memory-gb`) allows.

use std::fs;

use anyhow::Result;

use crate::error::UsageError;

pub(crate) use vigil_lab::text::number;

/// A figure of a table or a line of results, with `decimals` places (as
/// `{:.N}`), but in exponent form where that would mislead: from 10¹⁵ on
/// (1e308 is not 309 digits) and below what the places can show (2e-7 is
/// not `0.0`). Not a number prints as `—`, infinities as `∞` and `−∞`.
pub(crate) fn fixed(v: f64, decimals: usize) -> String {
    if v.is_nan() {
        "—".into()
    } else if v.is_infinite() {
        if v > 0.0 { "∞".into() } else { "−∞".into() }
    } else if v != 0.0 && (v.abs() >= 1e15 || v.abs() < 0.5 * 10f64.powi(-(decimals as i32))) {
        format!("{v:.3e}")
    } else {
        format!("{v:.decimals$}")
    }
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

/// The most threads the parallel pool may be asked for (as many as `vigil
/// sim frontier --threads` takes).
const MAX_THREADS: usize = 256;

/// Checks the environment variables that size the parallel pool (rayon's:
/// `RAYON_NUM_THREADS`, and the older `RAYON_RS_NUM_CPUS`) before any
/// command starts, so the pool is never built from a value rayon would
/// ignore silently (`-1`, `4x`) or could not build (`100000000`). Unset,
/// empty or `0` mean one thread per core.
pub(crate) fn check_thread_env() -> Result<()> {
    for name in ["RAYON_NUM_THREADS", "RAYON_RS_NUM_CPUS"] {
        let Some(value) = std::env::var_os(name) else { continue };
        let text = value.to_string_lossy();
        // Exactly what rayon reads, or refused: it takes no sign and no
        // space, and ignores anything else without a word.
        match text.parse::<usize>() {
            _ if text.is_empty() => {}
            Ok(n) if n <= MAX_THREADS => {}
            _ => {
                return Err(UsageError(format!(
                    "{name}: {} is not a number of threads from 1 to {MAX_THREADS} (0, empty or unset: one per \
                     core)",
                    vigil_lab::millis::quoted(&text)
                ))
                .into());
            }
        }
    }
    Ok(())
}

/// The largest `--max-memory-gb`.
const MAX_BUDGET_GB: f64 = 1e6;

/// Refuses work whose memory estimate `need` exceeds `budget`: `what` says
/// what needs it and why, `change` which flag to change. `need` is exact
/// (128-bit), however absurd the request.
pub(crate) fn check_memory(need: u128, budget: u64, what: &str, change: &str) -> Result<()> {
    if need > u128::from(budget) {
        // Raising the budget helps only if the need is within its range.
        let raise = if (need as f64) <= MAX_BUDGET_GB * 1e9 { ", or raise --max-memory-gb" } else { "" };
        return Err(UsageError(format!(
            "{what} need about {} of memory, more than the {} allowed; {change}{raise}",
            bytes(need as f64),
            bytes(budget as f64)
        ))
        .into());
    }
    Ok(())
}

/// A size in bytes, in the unit that shows it best (`1.5 GB`, `320.0 MB`,
/// `12 kB`, `1e12 GB` beyond a petabyte).
pub(crate) fn bytes(b: f64) -> String {
    if b >= 1e15 {
        format!("{} GB", number((b / 1e9).round()))
    } else if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.0} kB", b / 1e3)
    } else {
        format!("{b:.0} bytes")
    }
}

pub(crate) use vigil_agent::input::binary_size;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_typed() {
        assert_eq!(number(1.0 / 1e6 * (1.0 + f64::EPSILON)), "1e-6");
        assert_eq!(number(0.0000010000000000000002), "1e-6");
        assert_eq!(number(1e300), "1e300");
        assert_eq!(number(-1e-300), "-1e-300");
        assert_eq!(number(250.0), "250");
        assert_eq!(number(0.1 + 0.2), "0.3");
        assert_eq!(number(123456789.125), "123456789.125");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(0.0), "0");
    }

    #[test]
    fn limits_print_in_a_unit_that_shows_them() {
        assert_eq!(binary_size(64 * 1024), "64 KiB");
        assert_eq!(binary_size(16 * 1024 * 1024), "16 MiB");
        assert_eq!(binary_size(512 * 1024 * 1024), "512 MiB");
        assert_eq!(binary_size(4 << 30), "4 GiB");
        assert_eq!(binary_size(1536 * 1024), "1.5 MiB");
        assert_eq!(binary_size(4096), "4 KiB");
        assert_eq!(binary_size(1000), "1000 bytes");
    }

    #[test]
    fn figures_take_exponent_form_where_places_would_mislead() {
        assert_eq!(fixed(1e308, 2), "1.000e308");
        assert_eq!(fixed(-1e20, 0), "-1.000e20");
        assert_eq!(fixed(2e-7, 1), "2.000e-7");
        assert_eq!(fixed(0.04, 1), "4.000e-2");
        assert_eq!(fixed(0.05, 1), "0.1");
        assert_eq!(fixed(0.0, 1), "0.0");
        assert_eq!(fixed(1234.5678, 2), "1234.57");
        assert_eq!(fixed(999_999_999_999_999.0, 0), "999999999999999");
        assert_eq!(fixed(f64::NAN, 1), "—");
        assert_eq!(fixed(f64::INFINITY, 1), "∞");
        assert_eq!(fixed(f64::NEG_INFINITY, 1), "−∞");
    }
}

//! Numbers in error messages, as a reader takes them in.

/// A number plain when short, in exponent form when it would run to many
/// digits (`1e300`, not 301 of them).
pub(crate) fn shown(v: f64) -> String {
    if v == 0.0 || (v.is_finite() && (1e-4..1e9).contains(&v.abs())) { format!("{v}") } else { format!("{v:e}") }
}

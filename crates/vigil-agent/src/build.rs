//! What this build of the agent is: its version, the source revision it was
//! built from and the build date, for `vigil --version`, the
//! `vigil_build_info` metric and `/v1/self`.
//!
//! ```
//! let line = vigil_agent::build::describe();
//! assert!(line.starts_with(vigil_agent::build::VERSION));
//! ```

/// The package version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git revision the sources were at (12 hex digits, `-modified` when the
/// checkout had uncommitted changes), or `unknown` for a build outside a git
/// checkout (a published package).
pub const REVISION: &str = env!("VIGIL_REVISION");

/// The build date, `YYYY-MM-DD` in UTC (`SOURCE_DATE_EPOCH` when set, for
/// reproducible builds).
pub const DATE: &str = env!("VIGIL_BUILD_DATE");

/// `VERSION (REVISION DATE)`, the way `--version` shows it.
pub fn describe() -> String {
    format!("{VERSION} ({REVISION} {DATE})")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_date_is_a_calendar_date() {
        let parts: Vec<u32> = super::DATE.split('-').map(|p| p.parse().unwrap()).collect();
        assert_eq!(parts.len(), 3, "{}", super::DATE);
        assert!((2024..3000).contains(&parts[0]) && (1..=12).contains(&parts[1]) && (1..=31).contains(&parts[2]));
        assert!(super::REVISION == "unknown" || super::REVISION.len() >= 12, "{}", super::REVISION);
    }
}

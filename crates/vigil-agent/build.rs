//! Records what this build is: the source revision and the build date
//! (`SOURCE_DATE_EPOCH` for reproducible builds, otherwise today). The
//! revision comes from git when these sources are tracked by a git checkout,
//! from the `.cargo_vcs_info.json` cargo writes into a published package
//! otherwise, and is `unknown` when neither says.

use std::process::Command;

fn main() {
    let tracked = git(&["ls-files", "--error-unmatch", "build.rs"]).is_some();
    let revision = if tracked {
        let head = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        if dirty && head != "unknown" { format!("{head}-modified") } else { head }
    } else {
        packaged().unwrap_or_else(|| "unknown".to_owned())
    };
    let epoch =
        std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
        });
    println!("cargo:rustc-env=VIGIL_REVISION={revision}");
    println!("cargo:rustc-env=VIGIL_BUILD_DATE={}", civil_date(epoch));
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    // Built again when the checked-out commit moves.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]).filter(|_| tracked) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{head}");
        }
    }
}

/// The commit a published package was made from, as cargo recorded it
/// (`{"git": {"sha1": "...", "dirty": true}, ...}`), cut to 12 digits.
fn packaged() -> Option<String> {
    let info = std::fs::read_to_string(".cargo_vcs_info.json").ok()?;
    let after = &info[info.find("\"sha1\"")? + 6..];
    let start = after.find('"')? + 1;
    let sha: String = after[start..].chars().take_while(char::is_ascii_hexdigit).take(12).collect();
    let dirty = info.contains("\"dirty\": true") || info.contains("\"dirty\":true");
    (sha.len() == 12).then(|| if dirty { format!("{sha}-modified") } else { sha })
}

/// What `git ARGS` printed, trimmed, when git ran and succeeded.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `YYYY-MM-DD` (UTC) of a Unix time, by the days-from-civil algorithm run
/// backwards (no date crate for one line of a version string).
fn civil_date(epoch: u64) -> String {
    let days = i64::try_from(epoch / 86_400).unwrap_or(0);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

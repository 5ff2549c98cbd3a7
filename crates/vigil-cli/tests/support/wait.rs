//! Waiting on agents, and asking them over HTTP, as the tests do.

use std::time::{Duration, Instant};

/// Waits until `ok` holds, for at most `bound`; whether it did.
pub(crate) fn within(bound: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline {
        if ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    ok()
}

/// An HTTP client that returns every status as a response and gives up
/// after 10 s.
pub(crate) fn client() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

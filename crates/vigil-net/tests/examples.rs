//! The examples, run as tests: each shows what its documentation says.
//!
//! Bounds are generous for a loaded two-core machine: each example bounds
//! its own wait (30 s for a death that takes about 5 s on an idle one), and each test bounds the whole run at 90 s.

use std::time::Duration;

// `main` is the example's entry point; the tests call `run` instead.
#[allow(dead_code)]
#[path = "../examples/three_members.rs"]
mod three_members;

const RUN_BOUND: Duration = Duration::from_secs(90);

#[tokio::test]
async fn three_members_the_killed_one_is_declared_dead_by_both_others() {
    let s = tokio::time::timeout(RUN_BOUND, three_members::run()).await.expect("bounded").expect("runs");
    assert_eq!(s.killed, "c");
    let mut by: Vec<&str> = s.declared_dead.iter().map(|(b, _)| b.as_str()).collect();
    by.sort_unstable();
    assert_eq!(by, ["a", "b"], "declared dead by both survivors within the example's 30 s");
    // Three joins seen by each of two members at least, and two deaths.
    assert!(s.events >= 8, "{} events", s.events);
}

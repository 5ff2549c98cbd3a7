//! The examples, run as tests: each shows what its documentation says.
//!
//! Bounds are generous for a loaded two-core machine: each example bounds
//! its own wait (30 s for a death or a removal that takes about 5 s on an
//! idle one), and each test bounds the whole run at 90 s.

use std::time::Duration;

// `main` is the example's entry point; the tests call `run` instead.
#[allow(dead_code)]
#[path = "../examples/three_members.rs"]
mod three_members;

#[allow(dead_code)]
#[path = "../examples/task_queue.rs"]
mod task_queue;

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

#[tokio::test]
async fn task_queue_ejects_the_503_worker_and_removes_the_frozen_one_in_order() {
    let s = tokio::time::timeout(RUN_BOUND, task_queue::run()).await.expect("bounded").expect("runs");

    // The worker answering 503s, heartbeats fine: ejected, and
    // `stop-assigning` fired by the ejection.
    assert!(s.ejected.contains(&s.gray), "ejected: {:?}", s.ejected);
    assert!(
        s.verdicts.iter().any(|v| v.worker == s.gray
            && v.policy == "stop-assigning"
            && v.fired
            && matches!(v.signal, vigil_net::Signal::Ejected { .. })),
        "{:?}",
        s.verdicts
    );

    // The frozen worker: removed, its policies fired by φ in order. A
    // healthy worker's late heartbeat on a loaded machine may fire and
    // clear a policy before the freeze, so the last firing of each counts.
    assert!(s.removed.iter().any(|(w, _)| *w == s.frozen), "removed: {:?}", s.removed);
    let last = |policy: &str| {
        s.verdicts
            .iter()
            .rposition(|v| v.worker == s.frozen && v.policy == policy && v.fired)
            .unwrap_or_else(|| panic!("{policy} never fired for {}: {:?}", s.frozen, s.verdicts))
    };
    let (stop, reassign, remove) = (last("stop-assigning"), last("reassign"), last("remove"));
    assert!(stop < reassign && reassign < remove, "{:?}", s.verdicts);
    for i in [stop, reassign, remove] {
        assert!(matches!(s.verdicts[i].signal, vigil_net::Signal::Phi { .. }), "{:?}", s.verdicts[i]);
    }

    // Nobody else was removed: the gray worker is only ejected, and the
    // healthy one did its work.
    assert_eq!(s.removed.len(), 1, "{:?}", s.removed);
    assert!(s.done.get("worker-1").is_some_and(|&n| n > 0), "{:?}", s.done);
}

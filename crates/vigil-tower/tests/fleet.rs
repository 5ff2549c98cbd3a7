//! The tower stacks under the fleet lab's closed loop (`src/fleet.rs`): what
//! each makes of a crash, a low-traffic crash, a gray failure and a
//! brownout, seeded (seed 1). The figures are those of one seeded run; the
//! bounds below are the claims made of them, with room for the draws.

use vigil_lab::fleet::{FleetResult, FleetScenario};

fn run(scenario: &str, stack: &str) -> FleetResult {
    let s = FleetScenario::builtin(scenario).unwrap();
    let r = vigil_tower::fleet::run(&s, stack, 1).unwrap();
    eprintln!(
        "{scenario:18} {stack:18} stopped after {:?} ms, {} to the bad host, {} false removals, {} at most, {} refused",
        r.stopped_routing_after_ms.map(|m| m.round()),
        r.requests_to_bad_host,
        r.false_removals,
        r.max_removed_at_once,
        r.refused
    );
    r
}

#[test]
fn a_crash_black_holes_plain_p2c_and_every_detector_stops_it() {
    let p2c = run("crash", "p2c");
    // A refused connection fails fast, so PeakEWMA prefers the dead host:
    // it gets more than its tenth of the 48,000 requests after the fault.
    assert!(p2c.stopped_routing_after_ms.is_none());
    assert!(p2c.requests_to_bad_host > 4_800, "{}", p2c.requests_to_bad_host);
    for stack in ["p2c-accrual", "consecutive-eject", "vigil-tower"] {
        let r = run("crash", stack);
        assert!(r.stopped_routing_after_ms.is_some_and(|ms| ms < 1_000.0), "{stack}");
        assert!(r.requests_to_bad_host <= 20, "{stack}: {}", r.requests_to_bad_host);
        assert_eq!(r.false_removals, 0, "{stack}");
    }
}

#[test]
fn a_low_traffic_crash_is_caught_only_by_heartbeats() {
    for stack in ["p2c", "p2c-accrual", "consecutive-eject"] {
        let r = run("low-traffic-crash", stack);
        // A request every 5 s: five failures in a row take 25 s and more.
        assert!(r.requests_to_bad_host >= 5, "{stack}: {}", r.requests_to_bad_host);
        assert!(r.stopped_routing_after_ms.is_none_or(|ms| ms > 60_000.0), "{stack}");
    }
    let v = run("low-traffic-crash", "vigil-tower");
    assert_eq!(v.requests_to_bad_host, 0);
    // Heartbeats every second; φ = 2 about 1.25 s after the last.
    assert!(v.stopped_routing_after_ms.is_some_and(|ms| ms < 2_500.0));
}

#[test]
fn a_gray_failure_is_stopped_soonest_by_vigil_tower() {
    let p2c = run("gray", "p2c");
    assert!(p2c.stopped_routing_after_ms.is_none());
    let vigil = run("gray", "vigil-tower");
    // Outlier detection's failure percentage, at its 10 s interval.
    assert!(vigil.stopped_routing_after_ms.is_some_and(|ms| ms <= 10_500.0));
    for stack in ["p2c-accrual", "consecutive-eject"] {
        let r = run("gray", stack);
        // Failures in a row are rare while the rate of failures is low.
        assert!(r.stopped_routing_after_ms.is_some_and(|ms| ms > 15_000.0), "{stack}");
        assert!(r.requests_to_bad_host > 2 * vigil.requests_to_bad_host, "{stack}");
    }
    assert!(p2c.requests_to_bad_host > 10 * vigil.requests_to_bad_host);
}

#[test]
fn a_brownout_ejects_within_the_cap() {
    let vigil = run("brownout", "vigil-tower");
    assert_eq!(vigil.max_removed_at_once, 1, "vigil's preset: 10 % of 10, at least one");
    let eject = run("brownout", "consecutive-eject");
    assert!(eject.max_removed_at_once <= 5, "its cap: 50 % of 10");
    assert!(eject.max_removed_at_once > vigil.max_removed_at_once);
}

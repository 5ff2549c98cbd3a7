//! Sealing at scale: a key rotation and an encryption rollout on a live
//! cluster of 100 without a false suspicion, and an attacker's replays
//! refused. Each prints its figures (`cargo test -p vigil-sim --release
//! --test sealing -- --nocapture`).

use std::time::Duration;

use vigil_membership::seal::OVERHEAD;
use vigil_sim::{Fault, Operation, Report, Scenario, Sealing, Sim, Timed};

const N: usize = 100;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn run(s: &Scenario) -> Report {
    let r = Sim::new(s).unwrap().run(&mut |_| {});
    println!(
        "{}: sealed {}, opened {}, plaintext accepted {}, rejected {:?}, replays injected {}, false suspicions {}, \
         false deaths {}, {:.2} msgs and {:.0} B per member-second, violations {}",
        s.name,
        r.sealing.sealed,
        r.sealing.opened,
        r.sealing.plaintext_accepted,
        r.sealing.rejected,
        r.sealing.replays_injected,
        r.false_suspicions,
        r.false_deaths,
        r.messages_per_member_second,
        r.bytes_per_member_second,
        r.violations.total
    );
    r
}

fn scenario(name: &str, sealing: Sealing, duration: u64) -> Scenario {
    let mut s = Scenario::new(name, N);
    s.duration = secs(duration);
    s.seed = 7;
    s.sealing = sealing;
    s
}

#[test]
fn a_key_rotation_on_a_live_cluster_costs_no_suspicion() {
    // Each step rolled out over 20 s, as an operator's tooling would.
    let mut s = scenario("rotation", Sealing::Sealed, 200);
    s.faults.push(Timed::new(secs(40), Operation::RotateKey).lasting(secs(20) * Operation::STEPS));
    let r = run(&s);
    assert_eq!(r.false_suspicions, 0, "no member was suspected while keys changed");
    assert_eq!(r.false_deaths, 0);
    assert!(r.sealing.rejected.is_empty(), "every packet opened: {:?}", r.sealing.rejected);
    assert_eq!(r.sealing.key_steps_failed, 0);
    assert_eq!(r.sealing.plaintext_accepted, 0, "nothing travelled in plaintext");
    // Every datagram sent was sealed and the ones delivered opened (none is
    // lost on this network).
    assert_eq!(r.sealing.sealed, r.totals.messages);
    assert_eq!(r.sealing.opened, r.sealing.sealed);
    assert!(r.violations.is_empty(), "{:?}", r.violations.first);
}

#[test]
fn encryption_is_turned_on_in_a_running_cluster_without_a_suspicion() {
    // plaintext → staged on every node → sealed on every node (the
    // rollout consul#5590's users could not do without a partition).
    let mut s = scenario("rollout", Sealing::Plaintext, 200);
    s.faults.push(Timed::new(secs(40), Operation::EnableSealing).lasting(secs(30) * Operation::STEPS));
    let r = run(&s);
    assert_eq!(r.false_suspicions, 0);
    assert_eq!(r.false_deaths, 0);
    assert!(r.sealing.rejected.is_empty(), "{:?}", r.sealing.rejected);
    assert!(r.sealing.plaintext_accepted > 0 && r.sealing.opened > 0, "both kinds travelled");
    assert_eq!(r.sealing.key_steps_failed, 0);
    assert!(r.violations.is_empty(), "{:?}", r.violations.first);
}

#[test]
fn replays_to_a_receiver_that_restarted_are_refused_as_stale() {
    // The attacker captures every datagram from 30 s to 60 s and sends each
    // again 30 s later; n5 crashes at 40 s and restarts at 70 s, a new
    // process with empty replay windows. What was sealed before it started
    // is refused for that, whatever the windows remember.
    let mut s = scenario("replay-after-restart", Sealing::Sealed, 150);
    s.faults.push(Timed::new(secs(30), Fault::Replay).lasting(secs(30)));
    s.faults.push(Timed::new(secs(40), Fault::Crash { node: 5 }));
    s.faults.push(Timed::new(secs(70), Fault::Restart { node: 5 }));
    let r = run(&s);
    let refused = |why: &str| r.sealing.rejected.get(why).copied().unwrap_or(0);
    assert!(r.sealing.replays_injected > 1_000, "the attacker replayed {}", r.sealing.replays_injected);
    assert!(refused("stale") > 0, "{:?}", r.sealing.rejected);
    // Every copy that reached a running node was refused.
    let delivered = r.sealing.replays_injected - r.sealing.replays_undelivered;
    assert!(r.sealing.replays_undelivered > 0, "some arrived while n5 was down");
    assert_eq!(refused("replayed") + refused("too-old") + refused("stale"), delivered);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
}

#[test]
fn replayed_datagrams_are_refused_and_counted() {
    // For 30 s an attacker captures every datagram and sends each again
    // 30 s later.
    let mut sealed = scenario("replay-sealed", Sealing::Sealed, 120);
    sealed.faults.push(Timed::new(secs(30), Fault::Replay).lasting(secs(30)));
    let r = run(&sealed);
    let refused = r.sealing.rejected.get("replayed").copied().unwrap_or(0)
        + r.sealing.rejected.get("too-old").copied().unwrap_or(0);
    assert!(r.sealing.replays_injected > 1_000, "the attacker replayed {}", r.sealing.replays_injected);
    assert_eq!(refused, r.sealing.replays_injected, "every replay refused");
    assert_eq!(r.false_suspicions, 0);
    assert_eq!(r.false_deaths, 0);
    // Without sealing, the same replays are taken as new packets: what the
    // window is for.
    let mut plain = scenario("replay-plaintext", Sealing::Plaintext, 120);
    plain.faults.push(Timed::new(secs(30), Fault::Replay).lasting(secs(30)));
    let p = run(&plain);
    assert!(p.sealing.rejected.is_empty());
    assert_eq!(p.sealing.plaintext_accepted, p.totals.messages + p.sealing.replays_injected);
}

#[test]
fn sealing_costs_its_overhead_and_nothing_else() {
    // The same run sealed and in plaintext: the same messages, each
    // OVERHEAD bytes longer.
    let plain = run(&scenario("plain", Sealing::Plaintext, 60));
    let sealed = run(&scenario("sealed", Sealing::Sealed, 60));
    assert_eq!(plain.totals.messages, sealed.totals.messages);
    assert_eq!(sealed.totals.bytes, plain.totals.bytes + OVERHEAD as u64 * sealed.totals.messages);
    assert_eq!(plain.log_hash, sealed.log_hash, "sealing changes the wire, not the protocol's course");
}

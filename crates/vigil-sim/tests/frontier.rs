//! The frontier sweep on a small grid: memberlist's own setting against
//! three φ settings, and the sweep's independence from its thread count.
//! (The full sweep is `vigil sim frontier`; its table is in the README.)

use std::time::Duration;

use vigil_sim::frontier::{self, ClassicSetting, FrontierSpec, PhiSetting, Setting};

fn spec(threads: usize) -> FrontierSpec {
    let mut spec = FrontierSpec::new(60);
    spec.crash_runs = 2;
    spec.loss_duration = Duration::from_secs(120);
    spec.crash_at = Duration::from_secs(60);
    spec.crash_run = Duration::from_secs(150);
    spec.threads = threads;
    let phi = |ms: u64, observers: usize| {
        Setting::Phi(PhiSetting { heartbeat: Duration::from_millis(ms), observers, suspect_level: 8.0 })
    };
    spec.settings = vec![
        phi(1050, 2),
        phi(525, 1),
        phi(2100, 2),
        Setting::Classic(ClassicSetting { probe_interval: Duration::from_secs(1), suspicion_mult: 4 }),
    ];
    spec
}

#[test]
fn the_lan_preset_answers_memberlists_setting_and_threads_do_not_change_the_result() {
    let one = frontier::run(&spec(1), &|_, _| {}).unwrap();
    let two = frontier::run(&spec(2), &|_, _| {}).unwrap();
    assert_eq!(one, two, "the result does not depend on the number of threads");
    for p in &one.points {
        println!(
            "{}: {:.2} msgs, {:.0} B, {:.0} ms, {} false suspicions",
            p.label,
            p.messages_per_member_second,
            p.bytes_per_member_second,
            p.detection_median_ms,
            p.loss_false_suspicions
        );
        assert!(p.detected_by_all, "{}", p.label);
    }
    let (lan, classic) = (&one.points[0], &one.points[3]);
    // memberlist's constants: 2 messages per member-second (probe and ack)
    // plus anti-entropy; the LAN preset stays under it.
    assert!(lan.messages_per_member_second < classic.messages_per_member_second);
    assert!(lan.bytes_per_member_second < classic.bytes_per_member_second);
    assert!(lan.detection_median_ms <= classic.detection_median_ms / 2.0);
    assert_eq!(one.answers.len(), 1);
    let (c, answer) = one.answers[0];
    assert_eq!(c, 3);
    let best = answer.expect("a φ setting is twice as fast on memberlist's budget");
    assert!(one.points[best].twice_as_fast_on_the_budget_of(classic));
    // The Pareto frontier of φ points holds no point that another beats on
    // both messages and detection.
    let pareto = one.pareto(true);
    assert!(!pareto.is_empty());
    for p in &pareto {
        assert!(
            !one.points
                .iter()
                .filter(|q| q.setting.is_phi())
                .any(|q| q.messages_per_member_second < p.messages_per_member_second
                    && q.detection_median_ms < p.detection_median_ms)
        );
    }
}

#[test]
fn an_invalid_setting_is_refused_before_anything_runs() {
    let mut s = spec(1);
    s.settings.push(Setting::Phi(PhiSetting { heartbeat: Duration::ZERO, observers: 2, suspect_level: 8.0 }));
    let started = std::sync::atomic::AtomicUsize::new(0);
    let err = frontier::run(&s, &|_, _| {
        started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap_err();
    assert!(err.to_string().contains("heartbeat_interval"), "{err}");
    assert_eq!(started.into_inner(), 0);
}

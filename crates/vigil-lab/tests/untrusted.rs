//! Untrusted input (trace files, scenario files, specs) gives errors, never
//! panics, and what parses is judged without panicking.

use proptest::prelude::*;
use vigil_lab::engine::judge;
use vigil_lab::scenario::Scenario;
use vigil_lab::spec::DetectorSpec;
use vigil_lab::sweep::Family;
use vigil_lab::trace::Trace;

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("hb".to_string()),
        Just("crash".to_string()),
        Just("end".to_string()),
        Just(",".to_string()),
        Just("\n".to_string()),
        Just("#".to_string()),
        Just("{\"t\":".to_string()),
        Just("}".to_string()),
        Just("-".to_string()),
        Just(".".to_string()),
        Just("e9".to_string()),
        Just("18446744073709551615".to_string()),
        (0u64..100_000).prop_map(|n| n.to_string()),
        "[ -~]{0,6}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn traces_parse_or_fail_cleanly_and_judging_never_panics(parts in prop::collection::vec(fragment(), 0..40)) {
        let text: String = parts.concat();
        if let Ok(trace) = Trace::parse(&text) {
            for spec in ["normal:window=10,min-std-ms=1", "akka:pause-ms=0", "chen:window=5,alpha-ms=1", "empirical:window=5", "fixed:timeout-ms=0.000001"] {
                let spec: DetectorSpec = spec.parse().unwrap();
                let timelines = judge(&trace, spec.config(), &[0.5, spec.threshold(), 1e9], 1).unwrap();
                prop_assert_eq!(timelines.len(), 3);
            }
            // Round trip.
            prop_assert_eq!(Trace::parse(&trace.to_csv()).unwrap(), trace);
        } else {
            let err = Trace::parse(&text).unwrap_err();
            prop_assert!(err.line >= 1 && !err.message.is_empty());
        }
    }

    #[test]
    fn arbitrary_text_is_never_a_panic(text in "\\PC{0,200}") {
        let _ = Trace::parse(&text);
        let _ = Scenario::from_toml(&text);
        let _ = text.parse::<DetectorSpec>();
        let _ = Family::parse(&text);
    }
}

#[test]
fn absurd_but_valid_scenarios_generate_without_panicking() {
    for toml in [
        "name='a'\nperiod_ms=1e9\n[[phases]]\nbeats=5\ndelay={kind='constant',ms=1e9}",
        "name='b'\nperiod_ms=1e-9\n[[phases]]\nbeats=1000\ndelay={kind='pareto',scale_ms=1e-9,shape=0.5}",
        "name='c'\nperiod_ms=1\ncrash={at-ms=0}\n[[phases]]\nbeats=5\ndelay={kind='constant',ms=0}",
        "name='d'\nperiod_ms=1\nreorder='keep'\nsender_pauses={chance=1,min_ms=0,max_ms=1e9}\n[[phases]]\nbeats=50\ndelay={kind='exponential',mean_ms=1e6}",
    ] {
        let s = Scenario::from_toml(toml).unwrap();
        for t in s.generate(1, 3) {
            let spec: DetectorSpec = "normal:window=10,min-std-ms=1".parse().unwrap();
            judge(&t, spec.config(), &[8.0], 1).unwrap();
        }
    }
}

#[test]
fn durations_beyond_what_a_trace_can_hold_are_refused_by_name() {
    for (toml, field) in [
        ("name='a'\nperiod_ms=1e300\n[[phases]]\nbeats=5\ndelay={kind='constant',ms=1}", "period_ms"),
        (
            "name='d'\nperiod_ms=1\nsender_pauses={chance=1,min_ms=0,max_ms=1e300}\n[[phases]]\nbeats=5\ndelay={kind='constant',ms=1}",
            "sender_pauses.max_ms",
        ),
        (
            "name='j'\nperiod_ms=1\njitter={kind='uniform',ms=1e308}\n[[phases]]\nbeats=5\ndelay={kind='constant',ms=1}",
            "jitter",
        ),
        // Delays that would often exceed 11.6 days, and spans past 31.7
        // years, are refused before anything is generated.
        (
            "name='a'\nperiod_ms=1\n[[phases]]\nbeats=5\ndelay={kind='constant',ms=1e300}",
            "phases[0].delay is constant 1e300 ms, which would exceed",
        ),
        (
            "name='b'\nperiod_ms=1\n[[phases]]\nbeats=5\ndelay={kind='pareto',scale_ms=1e-9,shape=0.05}",
            "with probability 1.259e-1",
        ),
        ("name='s'\nperiod_ms=1e9\n[[phases]]\nbeats=20000\ndelay={kind='constant',ms=1}", "could span 2.000e13 ms"),
        (
            "name='c'\nperiod_ms=1\ncrash={at-ms=1e308}\n[[phases]]\nbeats=5\ndelay={kind='constant',ms=1}",
            "crash.at-ms",
        ),
    ] {
        let e = Scenario::from_toml(toml).unwrap_err();
        assert!(e.to_string().contains(field), "{field}: {e}");
    }
}

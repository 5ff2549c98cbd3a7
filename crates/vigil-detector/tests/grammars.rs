//! The text grammars (detector specs, health policies, outcomes) on
//! arbitrary input: never a panic, and whatever parses prints back to text
//! that parses to the same value.

use proptest::prelude::*;
use vigil_detector::health::HealthPolicy;
use vigil_detector::outlier::Outcome;
use vigil_detector::spec::DetectorSpec;

/// Text built from the grammars' own pieces, so that much of it parses.
fn near_grammar() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "akka",
        "normal",
        "2w",
        "fixed",
        "exponential",
        ":",
        ",",
        "=",
        "window",
        "threshold",
        "min-std-ms",
        "timeout-ms",
        "initial-ms",
        "none",
        "dwell",
        "rearm",
        "recovery",
        "ejection",
        "destructive",
        "route",
        "0",
        "1",
        "2.5",
        "8",
        "-1",
        "1e3",
        "500ms",
        "1.5s",
        "2min",
        "ms",
        "s",
        "NaN",
        "inf",
        " ",
        "\u{1b}",
        "é",
        "φ",
    ]);
    prop::collection::vec(pieces, 0..12).prop_map(|v| v.concat())
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![near_grammar(), any::<String>()]
}

proptest! {
    #[test]
    fn detector_specs_never_panic_and_round_trip(text in any_text()) {
        if let Ok(spec) = text.parse::<DetectorSpec>() {
            prop_assert_eq!(spec.to_string().parse::<DetectorSpec>().unwrap(), spec);
        } else {
            let err = text.parse::<DetectorSpec>().unwrap_err().to_string();
            prop_assert!(!err.is_empty() && err.len() < 1_000, "{}", err);
        }
    }

    #[test]
    fn health_policies_never_panic_and_round_trip(text in any_text()) {
        match text.parse::<HealthPolicy>() {
            Ok(p) => {
                prop_assert!(p.validate().is_ok());
                prop_assert_eq!(p.to_string().parse::<HealthPolicy>().unwrap(), p);
            }
            Err(e) => prop_assert!(e.to_string().len() < 1_000, "{}", e),
        }
    }

    #[test]
    fn outcomes_never_panic_and_round_trip(text in any_text()) {
        if let Ok(o) = text.parse::<Outcome>() {
            prop_assert_eq!(o.to_string().parse::<Outcome>().unwrap(), o);
        }
    }
}

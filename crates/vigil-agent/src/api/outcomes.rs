//! `POST /v1/outcomes`: request outcomes from the application (a sidecar, a
//! proxy's log), for outlier detection. Every entry is checked before any
//! is recorded.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use vigil_detector::outlier::Outcome;
use vigil_lab::millis::quoted;
use vigil_net::RequestOutcome;

use super::body::{Accepted, OutcomeText, OutcomesIn};
use super::{ApiError, ApiState};
use crate::defaults::{MAX_LATENCY_MS, MAX_OUTCOMES};

/// What a batch is, for the error that says it was not given.
const EXPECTED: &str = "{\"outcomes\": [{\"member\": NAME, \"outcome\": STATUS or \"timeout\", \"latency_ms\": MS}]}";

/// An outcome as written.
fn outcome(text: &OutcomeText) -> Option<Outcome> {
    match text {
        OutcomeText::Status(code) => (100..600).contains(code).then_some(Outcome::Response(*code)),
        OutcomeText::Text(t) => vigil_lab::fleet_trace::parse_outcome(t),
    }
}

pub(super) async fn record(
    State(state): State<ApiState>,
    body: Result<Json<OutcomesIn>, JsonRejection>,
) -> Result<Json<Accepted>, ApiError> {
    let Json(batch) = body.map_err(|e| ApiError::body(EXPECTED, e))?;
    if batch.outcomes.len() > MAX_OUTCOMES {
        return Err(ApiError::BadRequest(format!(
            "{} outcomes in one batch, at most {MAX_OUTCOMES}",
            batch.outcomes.len()
        )));
    }
    let mut parsed = Vec::with_capacity(batch.outcomes.len());
    for (i, o) in batch.outcomes.into_iter().enumerate() {
        let Some(outcome) = outcome(&o.outcome) else {
            let text = match &o.outcome {
                OutcomeText::Status(c) => c.to_string(),
                OutcomeText::Text(t) => t.clone(),
            };
            return Err(ApiError::BadRequest(format!(
                "outcomes[{i}].outcome: {} is not an outcome (an HTTP status 100-599, timeout, connect-failed or connected)",
                quoted(&text)
            )));
        };
        let latency = match o.latency_ms {
            Some(ms) if ms.is_finite() && (0.0..=MAX_LATENCY_MS).contains(&ms) => {
                Some(Duration::from_secs_f64(ms / 1e3))
            }
            Some(ms) => {
                return Err(ApiError::BadRequest(format!(
                    "outcomes[{i}].latency_ms: {} is not a latency (0 to a day, in ms)",
                    vigil_lab::text::number(ms)
                )));
            }
            None => None,
        };
        parsed.push(RequestOutcome { member: o.member, outcome, latency });
    }
    let names: Vec<String> = parsed.iter().map(|p| p.member.clone()).collect();
    let taken = state.member.record_outcomes(parsed).await?;
    let mut unknown: Vec<String> = names.into_iter().zip(&taken).filter(|(_, t)| !**t).map(|(n, _)| n).collect();
    unknown.sort();
    unknown.dedup();
    unknown.truncate(20);
    let unknown_members = unknown.iter().map(|n| quoted(n)).collect();
    Ok(Json(Accepted { accepted: taken.iter().filter(|t| **t).count(), unknown_members }))
}

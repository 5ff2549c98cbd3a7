//! Seed 002's lab in the browser: the page at `/lab`, and
//! `GET /v1/lab/run?...` that recomputes it with the Rust engine
//! (`vigil_lab::interactive`) on every change of a control. Served by
//! `vigil lab serve` and by every agent.

use std::collections::HashMap;

use axum::Router;
use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::{Value, json};
use vigil_lab::interactive::{Controls, run};

use super::ApiError;
use super::openapi::Endpoint;

/// The page: no external assets.
const PAGE: &str = include_str!("lab.html");

/// The lab's routes, stateless.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(Endpoint::Lab.path(), get(page))
        .route(Endpoint::LabCases.path(), get(cases))
        .route(Endpoint::LabRun.path(), get(lab_run))
}

async fn page() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], PAGE)
}

/// The four audit cases, by label.
async fn cases() -> axum::Json<Value> {
    let cases: Vec<Value> =
        Controls::audit_cases().iter().map(|(label, c)| json!({"label": label, "controls": c})).collect();
    axum::Json(json!({"cases": cases}))
}

/// The controls from a query: every one optional (the default noisy path's
/// value otherwise), each a number, nothing unknown.
fn controls(q: &HashMap<String, String>) -> Result<Controls, ApiError> {
    let mut c = Controls::audit_cases()[0].1;
    for (key, text) in q {
        let bad = || {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("{key}: {} is not a number", vigil_lab::millis::quoted(text)),
            )
        };
        let x = || text.trim().parse::<f64>().map_err(|_| bad());
        match key.as_str() {
            "heartbeat" => c.heartbeat = x()?,
            "jitter" => c.jitter = x()?,
            "pause_chance" => c.pause_chance = x()?,
            "pause_size" => c.pause_size = x()?,
            "pause_margin" => c.pause_margin = x()?,
            "phi_threshold" => c.phi_threshold = x()?,
            "fixed_timeout" => c.fixed_timeout = x()?,
            "seed" => c.seed = text.trim().parse::<u64>().map_err(|_| bad())?,
            other => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "{} is not a control (heartbeat, jitter, pause_chance, pause_size, pause_margin, \
                         phi_threshold, fixed_timeout, seed)",
                        vigil_lab::millis::quoted(other)
                    ),
                ));
            }
        }
    }
    Ok(c)
}

async fn lab_run(Query(q): Query<HashMap<String, String>>) -> Result<axum::Json<Value>, ApiError> {
    let c = controls(&q)?;
    // The value in exponent form when it is huge or tiny (not 309 digits).
    let out = run(&c).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("{}: {} is out of range ({})", e.control, vigil_lab::text::number(e.value), e.allowed),
        )
    })?;
    Ok(axum::Json(
        serde_json::to_value(&out).map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?,
    ))
}

/// Serves the lab alone (`vigil lab serve`) until the process ends, on
/// connections bounded and timed as the API's are.
pub async fn serve(listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let app = routes::<()>().route("/", get(|| async { axum::response::Redirect::to("/lab") })).fallback(
        |req: axum::extract::Request| async move {
            let path = vigil_lab::millis::quoted(req.uri().path());
            ApiError::new(StatusCode::NOT_FOUND, format!("no such page: {path} (the lab is at /lab)"))
        },
    );
    super::listener::serve(listener, app.layer(axum::middleware::map_response(super::json_errors))).await;
    Ok(())
}

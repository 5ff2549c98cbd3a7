//! `vigil cluster`'s faults over HTTP: the members, and a fault injected
//! into one of them (behind the token).

use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use serde::Deserialize;

use super::body::{Done, Fleet};
use super::{ApiError, ApiState};
use crate::fleet::{Fault, FleetError};

fn no_fleet() -> ApiError {
    ApiError::NotFound("faults are injected only in `vigil cluster`, not into an agent".into())
}

impl From<FleetError> for ApiError {
    fn from(e: FleetError) -> ApiError {
        match e {
            FleetError::NoSuchMember(_) => ApiError::NotFound(e.to_string()),
            FleetError::BadPause(_) => ApiError::BadRequest(e.to_string()),
            FleetError::Start(_) => ApiError::Internal(e.to_string()),
            _ => ApiError::Conflict(e.to_string()),
        }
    }
}

pub(super) async fn list(State(state): State<ApiState>) -> Result<Json<Fleet>, ApiError> {
    let fleet = state.fleet.as_ref().ok_or_else(no_fleet)?;
    Ok(Json(fleet.list()))
}

/// A pause's length.
#[derive(Debug, Deserialize)]
pub(super) struct PauseQuery {
    seconds: Option<f64>,
}

pub(super) async fn inject(
    State(state): State<ApiState>,
    path: Result<Path<(String, String)>, PathRejection>,
    query: Result<Query<PauseQuery>, QueryRejection>,
) -> Result<Json<Done>, ApiError> {
    let fleet = state.fleet.as_ref().ok_or_else(no_fleet)?;
    let (Path((name, fault)), Query(q)) = (path?, query?);
    let fault = match fault.parse::<Fault>().map_err(|e| ApiError::BadRequest(e.to_string()))? {
        Fault::Pause(d) => Fault::pause(q.seconds.unwrap_or(d.as_secs_f64()))?,
        other => other,
    };
    let done = fleet.inject(&name, fault).await?;
    Ok(Json(Done { done }))
}

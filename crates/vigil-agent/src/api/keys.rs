//! The keyring, behind the token: list, install, use, remove.

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use vigil_lab::millis::quoted;
use vigil_net::{Key, KeyId};

use super::body::{KeyInstalled, KeyRemoved, KeyUsed, KeyView, Keys, NewKey};
use super::{ApiError, ApiState};

/// What an install takes, for the error that says it was not given.
const EXPECTED: &str = "{\"key\": \"<64 hex digits or base64>\"}";

fn key_id(path: Result<Path<String>, PathRejection>) -> Result<KeyId, ApiError> {
    let Path(text) = path?;
    text.parse::<KeyId>().map_err(|e| ApiError::BadRequest(format!("{}: {e}", quoted(&text))))
}

pub(super) async fn list(State(state): State<ApiState>) -> Result<Json<Keys>, ApiError> {
    let keys = state.member.keys().await?;
    Ok(Json(Keys { keys: keys.iter().map(KeyView::from).collect() }))
}

pub(super) async fn install(
    State(state): State<ApiState>,
    body: Result<Json<NewKey>, JsonRejection>,
) -> Result<(StatusCode, Json<KeyInstalled>), ApiError> {
    let Json(NewKey { key }) = body.map_err(|e| ApiError::body(EXPECTED, e))?;
    let key: Key = key.parse().map_err(|e| ApiError::BadRequest(format!("key: {e}")))?;
    let id = state.member.install_key(key.0).await?;
    Ok((StatusCode::CREATED, Json(KeyInstalled { id: id.to_string() })))
}

pub(super) async fn use_key(
    State(state): State<ApiState>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<KeyUsed>, ApiError> {
    let id = key_id(id)?;
    state.member.use_key(id).await?;
    Ok(Json(KeyUsed { primary: id.to_string() }))
}

pub(super) async fn remove(
    State(state): State<ApiState>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<KeyRemoved>, ApiError> {
    let id = key_id(id)?;
    state.member.remove_key(id).await?;
    Ok(Json(KeyRemoved { removed: id.to_string() }))
}

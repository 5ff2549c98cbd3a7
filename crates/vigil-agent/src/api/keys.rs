//! The keyring, behind the token: list, install, use, remove, on this
//! member (`/v1/keys`) or on every member at once (`/v1/cluster/keys`).

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use vigil_lab::millis::quoted;
use vigil_net::{Key, KeyId};

use super::body::{
    ClusterKey, ClusterKeyOp, ClusterKeys, KeyInstalled, KeyRemoved, KeyUsed, KeyView, Keys, MemberKeyResult, NewKey,
};
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

/// What a cluster key operation takes, for the error that says it was not
/// given.
const EXPECTED_OP: &str =
    "{\"op\": \"list\" | \"install\" | \"use\" | \"remove\", \"key\": KEY (install), \"id\": ID (use, remove)}";

/// `POST /v1/cluster/keys`: the operation on every member, each member's
/// answer; checked whole before anything is asked.
pub(super) async fn everywhere(
    State(state): State<ApiState>,
    body: Result<Json<ClusterKeyOp>, JsonRejection>,
) -> Result<Json<ClusterKeys>, ApiError> {
    use vigil_net::control::KeyOp;
    let Json(req) = body.map_err(|e| ApiError::body(EXPECTED_OP, e))?;
    let id = |what: &str| -> Result<KeyId, ApiError> {
        let text = req.id.as_deref().ok_or_else(|| ApiError::BadRequest(format!("{what} needs \"id\"")))?;
        text.parse::<KeyId>().map_err(|e| ApiError::BadRequest(format!("id {}: {e}", quoted(text))))
    };
    let op = match req.op.as_str() {
        "list" => KeyOp::List,
        "install" => {
            let text = req.key.as_deref().ok_or_else(|| ApiError::BadRequest("install needs \"key\"".into()))?;
            let key: Key = text.parse().map_err(|e| ApiError::BadRequest(format!("key: {e}")))?;
            KeyOp::Install(key.0)
        }
        "use" => KeyOp::Use(id("use")?),
        "remove" => KeyOp::Remove(id("remove")?),
        other => return Err(ApiError::BadRequest(format!("op {}: expected {EXPECTED_OP}", quoted(other)))),
    };
    let answers = state.member.keys_everywhere(op).await?;
    let members: Vec<MemberKeyResult> = answers
        .into_iter()
        .map(|m| {
            let (keys, error) = match m.result {
                Ok(keys) => (
                    Some(keys.into_iter().map(|(id, primary)| ClusterKey { id: id.to_string(), primary }).collect()),
                    None,
                ),
                Err(why) => (None, Some(why)),
            };
            MemberKeyResult { name: m.name, address: m.addr.to_string(), keys, error }
        })
        .collect();
    let failed = members.iter().filter(|m| m.error.is_some()).count();
    Ok(Json(ClusterKeys { failed, members }))
}

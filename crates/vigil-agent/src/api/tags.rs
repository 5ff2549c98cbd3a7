//! `PATCH /v1/self/tags`: change this member's tags without a restart. The
//! new tags take a new incarnation and are announced to every member, as a
//! SIGHUP with new tags in the file does (and the next SIGHUP applies the
//! file's tags again). Checked whole before anything changes: the
//! `vigil.` prefix is the agent's own, and all tags fit 512 bytes.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use vigil_lab::millis::quoted;
use vigil_net::Tags;

use super::body::{TagChange, TagsNow};
use super::{ApiError, ApiState};

/// What a change takes, for the error that says it was not given.
const EXPECTED: &str = "{\"set\": {\"KEY\": \"VALUE\", ...}, \"delete\": [\"KEY\", ...]}";

/// Keys under this prefix are the agent's (shared outlier verdicts).
const RESERVED: &str = "vigil.";

pub(super) async fn change(
    State(state): State<ApiState>,
    body: Result<Json<TagChange>, JsonRejection>,
) -> Result<Json<TagsNow>, ApiError> {
    let Json(change) = body.map_err(|e| ApiError::body(EXPECTED, e))?;
    if let Some(k) = change.set.keys().chain(&change.delete).find(|k| k.starts_with(RESERVED)) {
        return Err(ApiError::BadRequest(format!(
            "tag {}: keys starting with {RESERVED:?} are the agent's own",
            quoted(k)
        )));
    }
    let now = state.member.snapshot().await?.node.tags;
    let mut all: BTreeMap<String, String> =
        now.iter().filter(|(k, _)| !k.starts_with(RESERVED)).map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
    all.extend(change.set);
    for k in &change.delete {
        all.remove(k);
    }
    let tags = Tags::new(all.clone()).map_err(|e| ApiError::BadRequest(format!("tags: {e}")))?;
    state.member.set_tags(tags).await?;
    Ok(Json(TagsNow { tags: all }))
}

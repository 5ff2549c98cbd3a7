//! `POST /v1/join`: join through more seeds on a running member, the way
//! `--join` does at the start. Every seed is checked before any is asked;
//! the answer says, seed by seed, what it resolved to and which members
//! answered there within [`JOIN_WAIT`].

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use vigil_lab::millis::quoted;
use vigil_net::{Seed, Status};

use super::body::{JoinRequest, Joined, SeedResult};
use super::{ApiError, ApiState};

/// What a join takes, for the error that says it was not given.
const EXPECTED: &str = "{\"seeds\": [\"IP:PORT\" | \"HOST:PORT\" | \"dns+HOST:PORT\" | \"dnssrv+NAME\", ...]}";

/// Seeds in one request, at most.
pub const MAX_JOIN_SEEDS: usize = 64;

/// How long a join waits for the addresses to answer.
pub const JOIN_WAIT: Duration = Duration::from_secs(5);

pub(super) async fn join(
    State(state): State<ApiState>,
    body: Result<Json<JoinRequest>, JsonRejection>,
) -> Result<Json<Joined>, ApiError> {
    let Json(JoinRequest { seeds }) = body.map_err(|e| ApiError::body(EXPECTED, e))?;
    if seeds.is_empty() || seeds.len() > MAX_JOIN_SEEDS {
        return Err(ApiError::BadRequest(format!("seeds: {} given, 1 to {MAX_JOIN_SEEDS} expected", seeds.len())));
    }
    let parsed = seeds
        .iter()
        .map(|s| {
            s.parse::<Seed>()
                .map_err(|e| ApiError::BadRequest(format!("seeds: {} is not a seed: {}", quoted(s), e.why)))
        })
        .collect::<Result<Vec<Seed>, ApiError>>()?;
    let resolved = state.member.join(&parsed).await?;
    let me = state.member.advertise_addr();
    let deadline = tokio::time::Instant::now() + JOIN_WAIT;
    loop {
        let members = state.member.members().await?;
        let at = |addr: std::net::SocketAddr| -> Option<String> {
            if addr == me {
                return Some(state.member.id().name.to_string());
            }
            members.iter().find(|m| m.addr == addr && m.status == Status::Alive).map(|m| m.id.name.to_string())
        };
        let results: Vec<SeedResult> = seeds
            .iter()
            .zip(&resolved)
            .map(|(text, (_, found))| match found {
                Err(why) => SeedResult {
                    seed: text.clone(),
                    addresses: Vec::new(),
                    members: Vec::new(),
                    error: Some(why.clone()),
                },
                Ok(addrs) => {
                    let members: Vec<String> = addrs.iter().filter_map(|a| at(*a)).collect();
                    let error =
                        members.is_empty().then(|| format!("no member answered within {} s", JOIN_WAIT.as_secs()));
                    SeedResult {
                        seed: text.clone(),
                        addresses: addrs.iter().map(ToString::to_string).collect(),
                        members,
                        error,
                    }
                }
            })
            .collect();
        let pending = resolved.iter().zip(&results).any(|((_, found), r)| found.is_ok() && r.members.is_empty());
        if !pending || tokio::time::Instant::now() >= deadline {
            let joined = results.iter().filter(|r| !r.members.is_empty()).count();
            return Ok(Json(Joined { joined, seeds: results }));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

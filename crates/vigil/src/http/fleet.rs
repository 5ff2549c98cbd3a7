//! `vigil cluster`'s members, and the faults a newcomer injects into them
//! from the page or the API: crash, restart, pause, partition, heal.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use vigil_net::{Builder, Cluster, Faults};

use super::{Api, ApiError, ApiResult};

/// The longest pause asked for.
pub(crate) const MAX_PAUSE: Duration = Duration::from_secs(60);

/// One member of the fleet.
#[derive(Debug)]
struct Slot {
    name: String,
    builder: Builder,
    /// What cuts it off or stops it (its builder's intercept).
    faults: Arc<Faults>,
    /// `None` while crashed.
    cluster: Option<Arc<Cluster>>,
    partitioned: bool,
}

/// The members `vigil cluster` runs in one process. The first one serves
/// the API and the page, and takes no faults.
#[derive(Debug)]
pub(crate) struct Fleet {
    slots: Mutex<Vec<Slot>>,
}

impl Fleet {
    /// A fleet of running members, each with the builder that restarts it
    /// and the faults its builder's intercept injects.
    pub(crate) fn new(members: Vec<(Builder, Arc<Faults>, Arc<Cluster>)>) -> Fleet {
        let slots = members
            .into_iter()
            .map(|(builder, faults, c)| Slot {
                name: c.id().name.to_string(),
                builder,
                faults,
                cluster: Some(c),
                partitioned: false,
            })
            .collect();
        Fleet { slots: Mutex::new(slots) }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every member: name, address, and whether it runs and is cut off.
    pub(crate) fn list(&self) -> Value {
        let slots = self.slots();
        let members: Vec<Value> = slots
            .iter()
            .enumerate()
            .map(|(i, s)| {
                json!({
                    "name": s.name,
                    "address": s.cluster.as_ref().map(|c| c.advertise_addr().to_string()),
                    "running": s.cluster.as_ref().is_some_and(|c| c.is_running()),
                    "partitioned": s.partitioned,
                    "observer": i == 0,
                })
            })
            .collect();
        json!({"members": members})
    }

    /// Applies `fault` to the member named `name`; returns what was done.
    pub(crate) async fn inject(&self, name: &str, fault: &str, pause: Duration) -> ApiResult<String> {
        let index = {
            let slots = self.slots();
            let i = slots.iter().position(|s| s.name == name).ok_or_else(|| {
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    format!("no member named {} in this cluster", vigil_lab::millis::quoted(name)),
                )
            })?;
            if i == 0 {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    format!("{name} serves this page and the API: inject faults into the others"),
                ));
            }
            i
        };
        match fault {
            "crash" => {
                let c = self.slots()[index].cluster.take();
                match c {
                    Some(c) => {
                        c.shutdown().await;
                        Ok(format!("{name} crashed (stopped without leaving)"))
                    }
                    None => Err(ApiError::new(StatusCode::CONFLICT, format!("{name} is not running"))),
                }
            }
            "restart" => {
                if self.slots()[index].cluster.as_ref().is_some_and(|c| c.is_running()) {
                    return Err(ApiError::new(StatusCode::CONFLICT, format!("{name} is running: crash it first")));
                }
                let builder = self.slots()[index].builder.clone();
                let c = builder
                    .start()
                    .await
                    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
                let generation = c.id().generation;
                {
                    let mut slots = self.slots();
                    slots[index].cluster = Some(Arc::new(c));
                    slots[index].partitioned = false;
                }
                // Members still cut off must not hear the new process.
                self.apply_partitions().await;
                Ok(format!("{name} restarted (generation {generation})"))
            }
            "pause" => {
                self.running(index)?;
                self.slots()[index].faults.pause(pause);
                Ok(format!("{name} paused for {:.1} s", pause.as_secs_f64()))
            }
            "partition" => {
                self.slots()[index].partitioned = true;
                self.apply_partitions().await;
                Ok(format!("{name} cut off from every other member"))
            }
            "heal" => {
                self.slots()[index].partitioned = false;
                self.apply_partitions().await;
                Ok(format!("{name} reconnected"))
            }
            other => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("{} is not a fault (crash, restart, pause, partition, heal)", vigil_lab::millis::quoted(other)),
            )),
        }
    }

    fn running(&self, index: usize) -> ApiResult<Arc<Cluster>> {
        let slots = self.slots();
        slots[index]
            .cluster
            .clone()
            .filter(|c| c.is_running())
            .ok_or_else(|| ApiError::new(StatusCode::CONFLICT, format!("{} is not running", slots[index].name)))
    }

    /// Tells every member whom to drop: a partitioned member drops everyone,
    /// and everyone drops it.
    async fn apply_partitions(&self) {
        let slots = self.slots();
        let addr = |s: &Slot| s.cluster.as_ref().map(|c| c.advertise_addr());
        for s in slots.iter() {
            let blocked =
                slots.iter().filter(|o| o.name != s.name && (s.partitioned || o.partitioned)).filter_map(addr);
            s.faults.block(blocked);
        }
    }

    /// Stops every member (the first one is the caller's to stop).
    pub(crate) async fn shutdown(&self) {
        let all: Vec<Arc<Cluster>> = self.slots().iter_mut().skip(1).filter_map(|s| s.cluster.take()).collect();
        for c in all {
            c.shutdown().await;
        }
    }
}

pub(super) async fn list(State(api): State<Api>) -> ApiResult<axum::Json<Value>> {
    let fleet = api.fleet.as_ref().ok_or_else(no_fleet)?;
    Ok(axum::Json(fleet.list()))
}

fn no_fleet() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "faults are injected only in `vigil cluster`, not into an agent")
}

#[derive(Debug, Deserialize)]
pub(super) struct PauseQuery {
    seconds: Option<f64>,
}

pub(super) async fn inject(
    State(api): State<Api>,
    Path((name, fault)): Path<(String, String)>,
    Query(q): Query<PauseQuery>,
) -> ApiResult<axum::Json<Value>> {
    let fleet = api.fleet.as_ref().ok_or_else(no_fleet)?;
    let seconds = q.seconds.unwrap_or(5.0);
    if !(seconds > 0.0 && seconds <= MAX_PAUSE.as_secs_f64()) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("seconds: {} is not a pause (more than 0, at most 60)", crate::limits::number(seconds)),
        ));
    }
    let done = fleet.inject(&name, &fault, Duration::from_secs_f64(seconds)).await?;
    Ok(axum::Json(json!({"done": done})))
}

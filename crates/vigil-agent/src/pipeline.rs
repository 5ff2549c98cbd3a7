//! What happens to each of a member's events, once, for `vigil agent` and
//! for every member of `vigil cluster`: the application's watch list
//! follows the members that come up, the log says the verdicts, and the
//! record goes into the history (and so `/v1/events`) and the metrics. The
//! caller then passes the record on (standard output's JSON lines, or the
//! terminal's sentences).
//!
//! ```no_run
//! use std::collections::BTreeSet;
//! use std::sync::Arc;
//! use vigil_agent::pipeline::Pipeline;
//! use vigil_agent::recorder::Recorder;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let builder = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?);
//! let mut events = builder.events();
//! let member = Arc::new(builder.start().await?);
//! let mut pipeline = Pipeline::new(member, Recorder::new(1_000), BTreeSet::from(["db1".to_owned()]));
//! while let Some(e) = events.next().await {
//!     for (record, line) in pipeline.take(&e, events.missed()).await {
//!         println!("{line}"); // or `{record}`, a sentence
//! #       let _ = record;
//!     }
//! }
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use vigil_net::{Cluster, ClusterEvent};

use crate::record::{EventRecord, Sink, What};
use crate::recorder::Recorder;

/// Milliseconds since the Unix epoch, on this host's clock.
pub fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// One member's event pipeline. See the module documentation.
#[derive(Debug)]
pub struct Pipeline {
    node: String,
    member: Arc<Cluster>,
    recorder: Recorder,
    watch: BTreeSet<String>,
    /// Events the stream had skipped at the last call.
    missed: u64,
}

impl Pipeline {
    /// The pipeline of `member`'s events, recorded by `recorder`; members
    /// named in `watch` are watched for the application as they come up.
    pub fn new(member: Arc<Cluster>, recorder: Recorder, watch: BTreeSet<String>) -> Pipeline {
        Pipeline { node: member.id().name.clone(), member, recorder, watch, missed: 0 }
    }

    /// What the pipeline records into.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Takes one event of the member's stream; `missed_in_all` is how many
    /// the stream has skipped so far ([`vigil_net::Events::missed`]).
    /// Returns the records to pass on, with their JSON lines: a `missed`
    /// record first if the stream skipped some since the last call, then
    /// the event's.
    pub async fn take(&mut self, e: &ClusterEvent, missed_in_all: u64) -> Vec<(EventRecord, String)> {
        let mut out = Vec::with_capacity(1);
        if missed_in_all > self.missed {
            let n = missed_in_all - self.missed;
            self.missed = missed_in_all;
            tracing::warn!("{n} events were not read in time: they are missing from stdout and the history");
            self.recorder.metrics().dropped(Sink::Stream, n);
            let r = EventRecord::missed(&self.node, e.unix_ms, n, Sink::Stream);
            let line = self.recorder.record(&r);
            out.push((r, line));
        }
        let r = EventRecord::from_event(&self.node, e);
        // Members to watch for the application, as they come.
        if let What::Up { member, .. } = &r.what
            && self.watch.contains(member)
        {
            let _ = self.member.watch(member).await;
        }
        log(&r);
        let line = self.recorder.record(&r);
        out.push((r, line));
        out
    }
}

/// The log line of a record: verdicts (and decisions that down someone)
/// at `info`, what happened to this member itself at `warn`, the rest at
/// `debug`.
fn log(r: &EventRecord) {
    match &r.what {
        What::Suspected { .. }
        | What::Dead { .. }
        | What::Left { .. }
        | What::PathProblem { .. }
        | What::Withdrawn { .. } => tracing::info!("{r}"),
        What::Decided { down, .. } if !down.is_empty() => tracing::info!("{r}"),
        What::Downed { member, .. } if *member != r.node => tracing::info!("{r}"),
        What::Downed { .. } => tracing::warn!("{r}"),
        What::SelfRefuted { .. } | What::LocalStall { .. } | What::Renewed { .. } | What::NameConflict { .. } => {
            tracing::warn!("{r}")
        }
        _ => tracing::debug!("{r}"),
    }
}

//! `vigil cluster`'s members, and the faults a newcomer injects into them
//! from the page, the API or the terminal: crash, restart, pause,
//! partition, heal.
//!
//! Each member runs with a [`Faults`] intercept between it and its sockets;
//! a partition is every member told whom to drop, a pause the member told to
//! stand still. The runtime itself knows nothing of faults.
//!
//! ```no_run
//! use std::time::Duration;
//! use vigil_agent::fleet::{Fault, Fleet};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let fleet = Fleet::start(3, vigil_net::Config::lan(vigil_net::DEFAULT_CLUSTER)).await?;
//! println!("{}", fleet.inject("n3", Fault::Pause(Duration::from_secs(5))).await?);
//! println!("{}", fleet.inject("n2", "crash".parse()?).await?);
//! fleet.shutdown().await;
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use vigil_lab::millis::quoted;
use vigil_net::{Builder, Cluster, Config, Faults, StartError};

use crate::api::body::{self, FleetMember};
use crate::defaults::MAX_PAUSE;

/// A fault to inject into a member.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Stop without leaving (the others find it dead).
    Crash,
    /// Start again, with a new generation, on a fresh port.
    Restart,
    /// Handle nothing for this long, as if the process were stopped.
    Pause(Duration),
    /// Cut it off from every other member.
    Partition,
    /// Reconnect it.
    Heal,
}

/// Text that is not a fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFault(String);

impl fmt::Display for BadFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not a fault (crash, restart, pause, partition, heal)", quoted(&self.0))
    }
}

impl std::error::Error for BadFault {}

/// `crash`, `restart`, `pause` (for [`crate::defaults::PAUSE`]), `partition`
/// or `heal`.
impl FromStr for Fault {
    type Err = BadFault;

    fn from_str(text: &str) -> Result<Fault, BadFault> {
        match text {
            "crash" => Ok(Fault::Crash),
            "restart" => Ok(Fault::Restart),
            "pause" => Ok(Fault::Pause(crate::defaults::PAUSE)),
            "partition" => Ok(Fault::Partition),
            "heal" => Ok(Fault::Heal),
            other => Err(BadFault(other.to_owned())),
        }
    }
}

/// Why a fault was not injected; nothing changed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FleetError {
    /// No member of that name.
    NoSuchMember(String),
    /// The first member serves the page and the API: faults go to the
    /// others.
    Observer(String),
    /// The fault does not apply now (crash a member not running, restart
    /// one that runs).
    NotNow(String),
    /// A pause outside (0, 60 s].
    BadPause(f64),
    /// A restarted member could not start.
    Start(String),
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetError::NoSuchMember(name) => write!(f, "no member named {} in this cluster", quoted(name)),
            FleetError::Observer(name) => {
                write!(f, "{name} serves this page and the API: inject faults into the others")
            }
            FleetError::NotNow(why) => f.write_str(why),
            FleetError::BadPause(s) => write!(
                f,
                "seconds: {} is not a pause (more than 0, at most {})",
                vigil_lab::text::number(*s),
                MAX_PAUSE.as_secs()
            ),
            FleetError::Start(why) => write!(f, "the member could not start again: {why}"),
        }
    }
}

impl std::error::Error for FleetError {}

impl Fault {
    /// A pause of `seconds`, checked: more than 0, at most 60.
    ///
    /// # Errors
    ///
    /// [`FleetError::BadPause`] outside that range.
    pub fn pause(seconds: f64) -> Result<Fault, FleetError> {
        if seconds > 0.0 && seconds <= MAX_PAUSE.as_secs_f64() {
            Ok(Fault::Pause(Duration::from_secs_f64(seconds)))
        } else {
            Err(FleetError::BadPause(seconds))
        }
    }
}

/// One member of the fleet.
#[derive(Debug)]
struct Slot {
    name: String,
    builder: Builder,
    /// What cuts it off or stops it (its builder's intercept).
    faults: Arc<Faults>,
    /// `None` while crashed.
    member: Option<Arc<Cluster>>,
    partitioned: bool,
}

/// The members `vigil cluster` runs in one process. The first one serves
/// the API and the page, and takes no faults.
#[derive(Debug)]
pub struct Fleet {
    slots: Mutex<Vec<Slot>>,
}

impl Fleet {
    /// Starts `n` members named `n1`, `n2`, ... on loopback, each on a port
    /// of its own, joining through `n1`.
    ///
    /// # Errors
    ///
    /// A member could not start (its error says why).
    pub async fn start(n: usize, config: Config) -> Result<Fleet, StartError> {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let mut slots = Vec::with_capacity(n);
        let mut seed = None;
        for i in 1..=n {
            let faults = Arc::new(Faults::default());
            let mut b =
                Cluster::builder(&format!("n{i}")).bind(loopback).config(config.clone()).intercept(faults.clone());
            if let Some(s) = seed {
                b = b.seeds([s]);
            }
            let member = b.clone().start().await?;
            seed.get_or_insert(member.local_addr());
            // A restart takes a fresh port, joining through n1.
            let builder = b.bind(loopback).seeds(seed);
            slots.push(Slot {
                name: member.id().name.clone(),
                builder,
                faults,
                member: Some(Arc::new(member)),
                partitioned: false,
            });
        }
        Ok(Fleet { slots: Mutex::new(slots) })
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The first member, which serves the API; `None` if the fleet is empty.
    pub fn observer(&self) -> Option<Arc<Cluster>> {
        self.slots().first().and_then(|s| s.member.clone())
    }

    /// Every member: name, address, and whether it runs and is cut off.
    pub fn list(&self) -> body::Fleet {
        let slots = self.slots();
        let members = slots
            .iter()
            .enumerate()
            .map(|(i, s)| FleetMember {
                name: s.name.clone(),
                address: s.member.as_ref().map(|c| c.advertise_addr().to_string()),
                running: s.member.as_ref().is_some_and(|c| c.is_running()),
                partitioned: s.partitioned,
                observer: i == 0,
            })
            .collect();
        body::Fleet { members }
    }

    /// Applies `fault` to the member named `name`; returns what was done,
    /// for a person.
    ///
    /// # Errors
    ///
    /// A [`FleetError`]: no such member, the observer, or a fault that does
    /// not apply now; nothing changed.
    pub async fn inject(&self, name: &str, fault: Fault) -> Result<String, FleetError> {
        let index = {
            let slots = self.slots();
            let i = slots.iter().position(|s| s.name == name).ok_or_else(|| FleetError::NoSuchMember(name.into()))?;
            if i == 0 {
                return Err(FleetError::Observer(name.into()));
            }
            i
        };
        match fault {
            Fault::Crash => {
                let member = self.slots()[index].member.take();
                match member {
                    Some(c) => {
                        c.shutdown().await;
                        Ok(format!("{name} crashed (stopped without leaving)"))
                    }
                    None => Err(FleetError::NotNow(format!("{name} is not running"))),
                }
            }
            Fault::Restart => {
                if self.slots()[index].member.as_ref().is_some_and(|c| c.is_running()) {
                    return Err(FleetError::NotNow(format!("{name} is running: crash it first")));
                }
                let builder = self.slots()[index].builder.clone();
                let c = builder.start().await.map_err(|e| FleetError::Start(e.to_string()))?;
                let generation = c.id().generation;
                {
                    let mut slots = self.slots();
                    slots[index].member = Some(Arc::new(c));
                    slots[index].partitioned = false;
                }
                // Members still cut off must not hear the new process.
                self.apply_partitions();
                Ok(format!("{name} restarted (generation {generation})"))
            }
            Fault::Pause(d) => {
                let slots = self.slots();
                let s = &slots[index];
                if !s.member.as_ref().is_some_and(|c| c.is_running()) {
                    return Err(FleetError::NotNow(format!("{name} is not running")));
                }
                s.faults.pause(d);
                Ok(format!("{name} paused for {:.1} s", d.as_secs_f64()))
            }
            Fault::Partition => {
                self.slots()[index].partitioned = true;
                self.apply_partitions();
                Ok(format!("{name} cut off from every other member"))
            }
            Fault::Heal => {
                self.slots()[index].partitioned = false;
                self.apply_partitions();
                Ok(format!("{name} reconnected"))
            }
        }
    }

    /// Tells every member whom to drop: a partitioned member drops everyone,
    /// and everyone drops it.
    fn apply_partitions(&self) {
        let slots = self.slots();
        let addr = |s: &Slot| s.member.as_ref().map(|c| c.advertise_addr());
        for s in slots.iter() {
            let cut = slots.iter().filter(|o| o.name != s.name && (s.partitioned || o.partitioned)).filter_map(addr);
            s.faults.block(cut);
        }
    }

    /// Stops every member.
    pub async fn shutdown(&self) {
        let all: Vec<Arc<Cluster>> = self.slots().iter_mut().filter_map(|s| s.member.take()).collect();
        for c in all {
            c.shutdown().await;
        }
    }
}

//! What a scenario makes happen: faults done to the machines and the
//! network, and operations an operator rolls out, each [`Timed`] once with
//! when it starts and, if it lasts, for how long.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Something a scenario makes happen, when it starts (since the start of
/// the run) and how long it lasts.
///
/// In TOML it is one `[[faults]]` table: its `kind`, its own fields, `at`
/// and, for what lasts, `duration`. A rollout is written with its `spread`
/// instead, the time each of its three steps takes across the cluster: it
/// lasts three spreads.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Fault, Scenario, Timed};
///
/// let s = Scenario::from_toml(
///     "name = 'x'\nnodes = 5\n[[faults]]\nkind = 'pause'\nnode = 3\nat = 10\nduration = 2.5\n",
/// )?;
/// let pause = Timed::new(Duration::from_secs(10), Fault::Pause { node: 3 }).lasting(Duration::from_millis(2500));
/// assert_eq!(s.faults, [pause]);
/// # Ok::<(), vigil_sim::ScenarioError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "file::Fault", into = "file::Fault")]
#[non_exhaustive]
pub struct Timed {
    /// When it starts, since the start of the run.
    pub at: Duration,
    /// How long it lasts: required for what lasts, `None` for what happens
    /// at once (see [`Action::lasts`]).
    pub duration: Option<Duration>,
    /// What happens.
    pub action: Action,
}

impl Timed {
    /// `action` at `at`, with no duration yet (see [`Timed::lasting`]).
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::{Fault, Timed};
    ///
    /// let crash = Timed::new(Duration::from_secs(30), Fault::Crash { node: 7 });
    /// assert_eq!((crash.at.as_secs(), crash.duration), (30, None));
    /// ```
    pub fn new(at: Duration, action: impl Into<Action>) -> Timed {
        Timed { at, duration: None, action: action.into() }
    }

    /// The same, lasting `duration`.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::{Operation, Timed};
    ///
    /// // A rotation whose three steps take 20 s each.
    /// let rotation = Timed::new(Duration::from_secs(40), Operation::RotateKey).lasting(Duration::from_secs(60));
    /// assert_eq!(rotation.duration, Some(Duration::from_secs(60)));
    /// ```
    pub fn lasting(mut self, duration: Duration) -> Timed {
        self.duration = Some(duration);
        self
    }

    /// Its action's short name (see [`Action::kind`]).
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::{Fault, Timed};
    ///
    /// assert_eq!(Timed::new(Duration::ZERO, Fault::Replay).kind(), "replay");
    /// ```
    pub fn kind(&self) -> &'static str {
        self.action.kind()
    }
}

/// What a [`Timed`] entry does: a fault or an operation.
///
/// # Example
///
/// ```
/// use vigil_sim::{Action, Fault, Operation};
///
/// assert_eq!(Action::from(Fault::Partition { split: 5 }).kind(), "partition");
/// assert_eq!(Action::from(Operation::EnableSealing).kind(), "enable-sealing");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Action {
    /// Something goes wrong with a machine or the network.
    Fault(Fault),
    /// An operator changes the running cluster.
    Operation(Operation),
}

impl Action {
    /// A short name, as the scenario format's `kind`: `crash`, `restart`,
    /// `pause`, `slow`, `block`, `partition`, `loss`, `degrade`, `replay`,
    /// `rotate-key`, `enable-sealing`.
    ///
    /// # Example
    ///
    /// ```
    /// use vigil_sim::{Action, Operation};
    ///
    /// assert_eq!(Action::Operation(Operation::RotateKey).kind(), "rotate-key");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Fault(f) => f.kind(),
            Action::Operation(o) => o.kind(),
        }
    }

    /// Whether it lasts a while, and so needs a duration: everything but a
    /// crash and a restart, which happen at once.
    ///
    /// # Example
    ///
    /// ```
    /// use vigil_sim::{Action, Fault};
    ///
    /// assert!(!Action::from(Fault::Crash { node: 1 }).lasts());
    /// assert!(Action::from(Fault::Loss { p: 0.1 }).lasts());
    /// ```
    pub fn lasts(&self) -> bool {
        !matches!(self, Action::Fault(Fault::Crash { .. } | Fault::Restart { .. }))
    }
}

impl From<Fault> for Action {
    fn from(f: Fault) -> Action {
        Action::Fault(f)
    }
}

impl From<Operation> for Action {
    fn from(o: Operation) -> Action {
        Action::Operation(o)
    }
}

/// A fault injected into the run: to one machine (`node` is its index), to
/// the links between machines, or by an attacker on the network.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Fault, Scenario, Sim, Timed};
///
/// let mut s = Scenario::new("a slow machine", 5);
/// s.duration = Duration::from_secs(20);
/// let slow = Fault::Slow { node: 2, delay: Duration::from_millis(300) };
/// s.faults.push(Timed::new(Duration::from_secs(5), slow).lasting(Duration::from_secs(10)));
/// let report = Sim::new(&s)?.run(&mut |_| {});
/// assert_eq!(report.fault_windows[0].kind, "slow");
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Fault {
    /// The machine's node stops for good (until a restart). A crash of a
    /// machine that is already down does nothing.
    Crash {
        /// Machine index.
        node: usize,
    },
    /// A crashed machine's node starts again under the same name with a new
    /// generation, and joins through node 0 (or 1 if it is node 0). A
    /// restart of a machine that is up does nothing.
    Restart {
        /// Machine index.
        node: usize,
    },
    /// The machine stops processing for a while (datagrams wait).
    Pause {
        /// Machine index.
        node: usize,
    },
    /// The machine handles every datagram and timer `delay` late for a
    /// while.
    Slow {
        /// Machine index.
        node: usize,
        /// Processing delay.
        delay: Duration,
    },
    /// Datagrams from `from` to `to` are dropped (one direction).
    Block {
        /// Sender.
        from: usize,
        /// Receiver.
        to: usize,
    },
    /// Machines below `split` and the others cannot reach each other.
    Partition {
        /// The first machine of the second side.
        split: usize,
    },
    /// Every link loses datagrams with probability `p` for a while.
    Loss {
        /// Loss probability.
        p: f64,
    },
    /// One machine's datagrams and stream attempts are lost with
    /// probability `p` on their way in, out or both, for a while (Rapid's
    /// faulty processes: 80 % loss on 1 % of them, or every packet in
    /// dropped 20 s out of 40).
    Lossy {
        /// Machine index.
        node: usize,
        /// Loss probability.
        p: f64,
        /// Which way.
        way: Way,
    },
    /// The whole network degrades for a while: every link's one-way latency
    /// becomes `base_ms` plus an exponential jitter of mean `jitter_ms`
    /// (seed 001's regime change, seed 003's degradation).
    Degrade {
        /// Fixed latency, ms.
        base_ms: f64,
        /// Mean of the exponential extra latency, ms.
        jitter_ms: f64,
    },
    /// An attacker on the network captures every datagram delivered while
    /// it lasts and sends each again to its receiver one duration after the
    /// original.
    Replay,
    /// An attacker sends every running machine a forged datagram every
    /// second while it lasts: `by` a stranger (a host that is not a
    /// member: its packets are plaintext, so a sealed cluster does not
    /// open them) or a member holding the key (its packets come from its
    /// own address, sealed, in its own name; its node runs as before).
    Forge {
        /// Who sends the forgeries.
        by: Forger,
        /// What they say.
        forgery: Forgery,
    },
    /// The lease `lease-majority` asks for cannot be asked while it lasts
    /// (unreachable, read-only, gone).
    LeaseDown,
    /// A second process takes machine `node`'s name, at an address of its
    /// own, and joins through n0 (n1 if `node` is 0) while it lasts; it
    /// leaves at the end, if it is still running.
    Impostor {
        /// The machine whose name it takes.
        node: usize,
    },
    /// The application on machine `by` sees its requests to machine
    /// `victim` fail (status 503), one every two seconds while it lasts,
    /// and reports each to its member, as `vigil agent`'s outcome endpoint
    /// would: gray evidence, which the member's outlier detection weighs
    /// and, with [`Downing::gray_evidence`](crate::Downing::gray_evidence),
    /// counts towards downing.
    Errors {
        /// The machine whose application reports the failures.
        by: usize,
        /// The machine its requests fail at.
        victim: usize,
    },
}

/// Who sends a [`Fault::Forge`]'s datagrams.
///
/// # Example
///
/// ```
/// use vigil_sim::Forger;
///
/// assert_eq!(Forger::Stranger.to_string(), "a stranger");
/// assert_eq!(Forger::Insider { node: 2 }.to_string(), "n2, holding the key");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", deny_unknown_fields)]
pub enum Forger {
    /// A host that is not a member.
    Stranger,
    /// A member that lies: machine `node`.
    Insider {
        /// The machine.
        node: usize,
    },
}

impl std::fmt::Display for Forger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Forger::Stranger => f.write_str("a stranger"),
            Forger::Insider { node } => write!(f, "n{node}, holding the key"),
        }
    }
}

/// What a [`Fault::Forge`]'s datagrams say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", deny_unknown_fields)]
pub enum Forgery {
    /// For every ordered pair (x, y) of the other running members: "x is
    /// suspected, accused by y", and "x is dead, declared by y"; from a
    /// member holding the key, also "x is dead" in its own name (first-hand,
    /// as a decision it carried out would be told) and its own
    /// reachability row naming every other member unreachable.
    Accuse,
    /// "`victim` is alive at another address" (its generation, a much
    /// higher incarnation): the address is one no machine has.
    Move {
        /// The member said to have moved.
        victim: usize,
    },
}

impl Fault {
    /// A short name: `crash`, `restart`, `pause`, `slow`, `block`,
    /// `partition`, `loss`, `lossy`, `degrade`, `replay`, `forge`,
    /// `lease-down`, `impostor`.
    ///
    /// # Example
    ///
    /// ```
    /// use vigil_sim::Fault;
    ///
    /// assert_eq!(Fault::Block { from: 1, to: 2 }.kind(), "block");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Crash { .. } => "crash",
            Fault::Restart { .. } => "restart",
            Fault::Pause { .. } => "pause",
            Fault::Slow { .. } => "slow",
            Fault::Block { .. } => "block",
            Fault::Partition { .. } => "partition",
            Fault::Loss { .. } => "loss",
            Fault::Lossy { .. } => "lossy",
            Fault::Degrade { .. } => "degrade",
            Fault::Replay => "replay",
            Fault::Forge { .. } => "forge",
            Fault::LeaseDown => "lease-down",
            Fault::Impostor { .. } => "impostor",
            Fault::Errors { .. } => "errors",
        }
    }
}

/// Which way a [`Fault::Lossy`] machine loses packets.
///
/// # Example
///
/// ```
/// use vigil_sim::Way;
///
/// assert!(Way::In.inbound() && !Way::In.outbound());
/// assert!(Way::Both.inbound() && Way::Both.outbound());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Way {
    /// What it receives.
    In,
    /// What it sends.
    Out,
    /// Both.
    Both,
}

impl Way {
    /// Whether what the machine receives is lost.
    pub fn inbound(self) -> bool {
        matches!(self, Way::In | Way::Both)
    }

    /// Whether what the machine sends is lost.
    pub fn outbound(self) -> bool {
        matches!(self, Way::Out | Way::Both)
    }
}

/// An operator's change to the running cluster, rolled out in three steps:
/// each machine takes each step at a random time in its third of the
/// duration (`spread` in the scenario format), as an operator's rollout
/// would.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Operation, Scenario, Sealing, Sim, Timed};
///
/// let mut s = Scenario::new("a rotation", 5);
/// s.duration = Duration::from_secs(30);
/// s.sealing = Sealing::Sealed;
/// s.faults.push(Timed::new(Duration::from_secs(5), Operation::RotateKey).lasting(Duration::from_secs(15)));
/// let report = Sim::new(&s)?.run(&mut |_| {});
/// assert_eq!(report.sealing.key_steps_failed, 0);
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Operation {
    /// A key rotation (the cluster must seal): each machine installs a new
    /// key, then seals with it, then removes the old key.
    RotateKey,
    /// Turning encryption on in a running cluster (it must start in
    /// plaintext): each machine takes the cluster key (and so opens sealed
    /// packets), then goes staged (sealed out, anything in), then sealed.
    EnableSealing,
}

impl Operation {
    /// The steps of every rollout. Each takes an equal part of its
    /// duration: the `spread` of the scenario format.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::{Operation, Timed};
    ///
    /// // `--rotate-key 40+20`: steps of 20 s from 40 s.
    /// let spread = Duration::from_secs(20);
    /// let rotation = Timed::new(Duration::from_secs(40), Operation::RotateKey).lasting(spread * Operation::STEPS);
    /// assert_eq!(rotation.duration, Some(Duration::from_secs(60)));
    /// ```
    pub const STEPS: u32 = 3;

    /// A short name: `rotate-key`, `enable-sealing`.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(vigil_sim::Operation::RotateKey.kind(), "rotate-key");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Operation::RotateKey => "rotate-key",
            Operation::EnableSealing => "enable-sealing",
        }
    }
}

/// The scenario format's form of a [`Timed`] entry: every kind with its
/// own fields and its time, as files have always written them.
mod file {
    use std::time::Duration;

    use serde::{Deserialize, Serialize};

    use super::{Action, Fault as Model, Operation, Timed};

    /// A `[[faults]]` table. The name is the one serde's messages give
    /// ("expected internally tagged enum Fault").
    #[derive(Serialize, Deserialize)]
    #[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
    pub(super) enum Fault {
        Crash {
            node: usize,
            #[serde(with = "crate::secs")]
            at: Duration,
        },
        Restart {
            node: usize,
            #[serde(with = "crate::secs")]
            at: Duration,
        },
        Pause {
            node: usize,
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            duration: Duration,
        },
        Slow {
            node: usize,
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            duration: Duration,
            #[serde(with = "crate::secs")]
            delay: Duration,
        },
        Block {
            from: usize,
            to: usize,
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            duration: Duration,
        },
        Partition {
            split: usize,
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            duration: Duration,
        },
        Loss {
            p: f64,
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            duration: Duration,
        },
        Lossy {
            node: usize,
            p: f64,
            way: super::Way,
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            duration: Duration,
        },
        RotateKey {
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            spread: Duration,
        },
        EnableSealing {
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            spread: Duration,
        },
        Replay {
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            duration: Duration,
        },
        Degrade {
            base_ms: f64,
            jitter_ms: f64,
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            duration: Duration,
        },
        Forge {
            by: super::Forger,
            forgery: super::Forgery,
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            duration: Duration,
        },
        LeaseDown {
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            duration: Duration,
        },
        Impostor {
            node: usize,
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            duration: Duration,
        },
        Errors {
            by: usize,
            victim: usize,
            #[serde(with = "crate::secs")]
            at: Duration,
            #[serde(with = "crate::secs")]
            duration: Duration,
        },
    }

    impl From<Fault> for Timed {
        fn from(f: Fault) -> Timed {
            let (at, duration, action): (_, _, Action) = match f {
                Fault::Crash { node, at } => (at, None, Model::Crash { node }.into()),
                Fault::Restart { node, at } => (at, None, Model::Restart { node }.into()),
                Fault::Pause { node, at, duration } => (at, Some(duration), Model::Pause { node }.into()),
                Fault::Slow { node, at, duration, delay } => (at, Some(duration), Model::Slow { node, delay }.into()),
                Fault::Block { from, to, at, duration } => (at, Some(duration), Model::Block { from, to }.into()),
                Fault::Partition { split, at, duration } => (at, Some(duration), Model::Partition { split }.into()),
                Fault::Loss { p, at, duration } => (at, Some(duration), Model::Loss { p }.into()),
                Fault::Forge { by, forgery, at, duration } => (at, Some(duration), Model::Forge { by, forgery }.into()),
                Fault::LeaseDown { at, duration } => (at, Some(duration), Model::LeaseDown.into()),
                Fault::Impostor { node, at, duration } => (at, Some(duration), Model::Impostor { node }.into()),
                Fault::Errors { by, victim, at, duration } => (at, Some(duration), Model::Errors { by, victim }.into()),
                Fault::Lossy { node, p, way, at, duration } => {
                    (at, Some(duration), Model::Lossy { node, p, way }.into())
                }
                Fault::Degrade { base_ms, jitter_ms, at, duration } => {
                    (at, Some(duration), Model::Degrade { base_ms, jitter_ms }.into())
                }
                Fault::Replay { at, duration } => (at, Some(duration), Model::Replay.into()),
                Fault::RotateKey { at, spread } => {
                    (at, Some(spread.saturating_mul(Operation::STEPS)), Operation::RotateKey.into())
                }
                Fault::EnableSealing { at, spread } => {
                    (at, Some(spread.saturating_mul(Operation::STEPS)), Operation::EnableSealing.into())
                }
            };
            Timed { at, duration, action }
        }
    }

    impl From<Timed> for Fault {
        fn from(t: Timed) -> Fault {
            let Timed { at, duration, action } = t;
            // An entry that lasts has a duration once validated; one built
            // in code without it is written as lasting nothing.
            let duration = duration.unwrap_or_default();
            match action {
                Action::Fault(Model::Crash { node }) => Fault::Crash { node, at },
                Action::Fault(Model::Restart { node }) => Fault::Restart { node, at },
                Action::Fault(Model::Pause { node }) => Fault::Pause { node, at, duration },
                Action::Fault(Model::Slow { node, delay }) => Fault::Slow { node, at, duration, delay },
                Action::Fault(Model::Block { from, to }) => Fault::Block { from, to, at, duration },
                Action::Fault(Model::Partition { split }) => Fault::Partition { split, at, duration },
                Action::Fault(Model::Loss { p }) => Fault::Loss { p, at, duration },
                Action::Fault(Model::Lossy { node, p, way }) => Fault::Lossy { node, p, way, at, duration },
                Action::Fault(Model::Degrade { base_ms, jitter_ms }) => {
                    Fault::Degrade { base_ms, jitter_ms, at, duration }
                }
                Action::Fault(Model::Replay) => Fault::Replay { at, duration },
                Action::Fault(Model::Forge { by, forgery }) => Fault::Forge { by, forgery, at, duration },
                Action::Fault(Model::LeaseDown) => Fault::LeaseDown { at, duration },
                Action::Fault(Model::Impostor { node }) => Fault::Impostor { node, at, duration },
                Action::Fault(Model::Errors { by, victim }) => Fault::Errors { by, victim, at, duration },
                Action::Operation(Operation::RotateKey) => Fault::RotateKey { at, spread: duration / Operation::STEPS },
                Action::Operation(Operation::EnableSealing) => {
                    Fault::EnableSealing { at, spread: duration / Operation::STEPS }
                }
            }
        }
    }
}

//! The agent's settings: flags and a TOML file with the same names become
//! one validated [`AgentConfig`], once, before anything starts.
//!
//! Two stages, as ripgrep has them: [`Flags`] and [`FileSettings`] are what
//! was typed, as typed; [`Flags::resolve`] reads the file and the secrets,
//! lets each flag override the file's key (tags key by key), fills in the
//! [`defaults`], checks every value, and says where a bad
//! one was given ([`Origin`]: `--bind`, or `agent.toml: bind`).
//!
//! ```
//! use vigil_agent::settings::{Flags, Http};
//!
//! let config = Flags {
//!     name: Some("a".into()),
//!     bind: Some("127.0.0.1:7946".into()),
//!     tags: vec!["zone=eu-1".into()],
//!     ..Flags::default()
//! }
//! .resolve()?;
//! assert_eq!(config.bind.to_string(), "127.0.0.1:7946");
//! assert_eq!(config.tags.get("zone"), Some("eu-1"));
//! assert!(matches!(config.http, Http::Default));
//!
//! let e = Flags { name: Some("a".into()), bind: Some("1.2.3".into()), ..Flags::default() }.resolve().unwrap_err();
//! assert_eq!(e.to_string(), "--bind: '1.2.3' is not an address (IP:PORT)");
//! # Ok::<(), vigil_agent::settings::SettingsError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use vigil_detector::health::{HealthPolicy, PolicyError};
use vigil_detector::spec::{DetectorSpec, SpecError};
use vigil_lab::millis::quoted;
use vigil_membership::keyring::Keyring;
use vigil_membership::seal::SealMode;
use vigil_membership::{Config, ConfigError, Tags, TagsError};

use crate::api::origin::Host;
use crate::defaults;
use crate::input::{InputError, read_text};
use crate::secrets::{self, SecretError};

/// The protocol's preset: [`Config::lan`], [`Config::lan_fast`],
/// [`Config::wan`] or [`Config::classic_lan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// The LAN preset (the default).
    #[default]
    Lan,
    /// About half the detection time for about twice the messages; a paused
    /// member must resume within about 1.5 s.
    LanFast,
    /// Wide-area links.
    Wan,
    /// memberlist's LAN constants: SWIM without φ.
    Classic,
}

impl Preset {
    /// The protocol configuration of this preset, for `cluster`.
    pub fn config(self, cluster: u64) -> Config {
        match self {
            Preset::Lan => Config::lan(cluster),
            Preset::LanFast => Config::lan_fast(cluster),
            Preset::Wan => Config::wan(cluster),
            Preset::Classic => Config::classic_lan(cluster),
        }
    }
}

/// How much the agent logs on standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Warnings too.
    Warn,
    /// The start, verdicts, stalls, leaving.
    #[default]
    Info,
    /// Also refused packets and failed sends.
    Debug,
    /// Everything.
    Trace,
}

impl LogLevel {
    /// The `tracing` level.
    pub fn level(self) -> tracing::Level {
        match self {
            LogLevel::Error => tracing::Level::ERROR,
            LogLevel::Warn => tracing::Level::WARN,
            LogLevel::Info => tracing::Level::INFO,
            LogLevel::Debug => tracing::Level::DEBUG,
            LogLevel::Trace => tracing::Level::TRACE,
        }
    }
}

/// How the agent's log lines on standard error are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    /// Text for a terminal or journald (the default).
    #[default]
    Text,
    /// One JSON object a line (`timestamp`, `level`, `message`, `target`
    /// and any other fields of the line), for a log shipper.
    Json,
}

/// How packets are sealed, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Sealing {
    /// Plaintext out; sealed in too.
    Plaintext,
    /// Sealed out, plaintext still in: the step that turns encryption on in
    /// a running cluster.
    Staged,
    /// Sealed out, sealed in.
    Sealed,
}

/// What the protocol's messages travel on, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// Datagrams, and a stream ping beside a probe's indirect requests (the
    /// default).
    #[default]
    Udp,
    /// Datagrams only: no stream pings.
    UdpOnly,
    /// Streams only, for networks that block UDP.
    Stream,
}

impl Transport {
    /// Sets the protocol's `stream_ping` and `stream_only` to match.
    pub fn apply(self, protocol: &mut Config) {
        protocol.stream_ping = self != Transport::UdpOnly;
        protocol.stream_only = self == Transport::Stream;
    }
}

/// How a periodic push-pull starts, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum PushPull {
    /// With the digest of the view; views are exchanged only when the
    /// digests differ (the default, but for the `classic` preset).
    Digest,
    /// With the whole view, as memberlist does and as builds before the
    /// digest expect.
    Full,
}

impl PushPull {
    /// Sets the protocol's `push_pull_digest` to match.
    pub fn apply(self, protocol: &mut Config) {
        protocol.push_pull_digest = self == PushPull::Digest;
    }
}

/// Whether stream messages (push-pull views) are compressed, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum StreamCompression {
    /// LZ4 (the default).
    #[default]
    Lz4,
    /// Sent bare: while agents of a build before compression still run.
    Off,
}

/// The cipher sealed packets are sent with, as typed (both are opened).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum SealCipher {
    /// Envelope version 3, the default.
    #[cfg_attr(feature = "clap", value(name = "aes-256-gcm"))]
    #[serde(rename = "aes-256-gcm")]
    Aes256Gcm,
    /// Envelope version 2, what agents before version 3 send: keep it
    /// while such agents are still in the cluster.
    #[cfg_attr(feature = "clap", value(name = "xchacha20-poly1305"))]
    #[serde(rename = "xchacha20-poly1305")]
    XChaCha20Poly1305,
}

impl SealCipher {
    /// The envelope it names.
    pub fn envelope(self) -> vigil_membership::seal::Envelope {
        match self {
            SealCipher::Aes256Gcm => vigil_membership::seal::Envelope::Aes256Gcm,
            SealCipher::XChaCha20Poly1305 => vigil_membership::seal::Envelope::XChaCha20Poly1305,
        }
    }
}

/// The agent's flags, as typed: every one optional (the file or the
/// default applies), lists empty when not given. With the `clap` feature,
/// `vigil agent` takes them as they are.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Flags {
    /// A TOML file with the same settings (a flag overrides it; tags key by
    /// key). SIGHUP reads it again.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub config: Option<PathBuf>,
    /// This member's name (1 to 64 bytes), unique in the cluster (default:
    /// the host's name, from /proc/sys/kernel/hostname or $HOSTNAME).
    #[cfg_attr(feature = "clap", arg(long))]
    pub name: Option<String>,
    /// Address to listen on, UDP and TCP (default 0.0.0.0:7946).
    #[cfg_attr(feature = "clap", arg(long, value_name = "IP:PORT"))]
    pub bind: Option<String>,
    /// Address the others reach this member at (default: the bound one).
    #[cfg_attr(feature = "clap", arg(long, value_name = "IP:PORT"))]
    pub advertise: Option<String>,
    /// Members to join through, comma-separated or repeated: `IP:PORT`,
    /// `HOST:PORT` or `dns+HOST:PORT` (every A and AAAA record of the name),
    /// or `dnssrv+NAME` (every target and port of the name's SRV records,
    /// e.g. `dnssrv+_vigil._udp.vigil.default.svc.cluster.local.`). Names are
    /// resolved again, and the seeds asked again with a backoff from 1 s to
    /// 30 s, whenever this member knows no live member, for as long as it
    /// runs.
    #[cfg_attr(feature = "clap", arg(long, value_name = "ADDR[,...]"))]
    pub join: Vec<String>,
    /// Keys: one 32-byte key per line, 64 hex digits or base64 (`vigil
    /// keygen` makes one); the first is the primary. With keys, every packet
    /// is sealed. The file must be readable by its owner only (chmod 600).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub key_file: Option<PathBuf>,
    /// With keys: `sealed` (default), or `staged` (sealed out, plaintext
    /// still in: the step that turns encryption on in a running cluster),
    /// or `plaintext` (plaintext out; sealed in too). Without keys,
    /// `plaintext` is what `--plaintext` says.
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub seal_mode: Option<Sealing>,
    /// The cipher sealed packets are sent with: `aes-256-gcm` (envelope 3,
    /// the default) or `xchacha20-poly1305` (envelope 2, what agents
    /// before version 3 send). Both are opened either way: upgrade every
    /// agent with `xchacha20-poly1305`, then move each to `aes-256-gcm`.
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub seal_cipher: Option<SealCipher>,
    /// What messages travel on: `udp` (default: datagrams, and a TCP ping
    /// beside a probe's indirect requests, whose retransmissions get
    /// through loss), `udp-only` (no TCP pings) or `stream` (TCP only, a
    /// connection per message, for networks that block UDP). Members with
    /// different transports interoperate.
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub transport: Option<Transport>,
    /// Push-pull views of 256 bytes or more are sent `lz4`-compressed (the
    /// default) or bare (`off`). Every agent takes both; agents of a build
    /// before compression take only bare ones, so upgrade them all with
    /// `off`, then turn it on.
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub stream_compression: Option<StreamCompression>,
    /// How each periodic push-pull starts: `digest` (the default but for
    /// `--preset classic`: the digest of the view, and the views only when
    /// the digests differ) or `full` (the whole view, as memberlist does).
    /// Agents of a build before the digest drop it, so run `full` until
    /// they are all upgraded.
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub push_pull: Option<PushPull>,
    /// Run without keys on an address other hosts can reach: nothing is
    /// encrypted or authenticated, so anyone who can reach the port can read
    /// the membership, join, and send rumours (refuted, and bounded per
    /// source). Without it, such an agent refuses to start without
    /// `--key-file` (make a key with `vigil keygen`).
    #[cfg_attr(feature = "clap", arg(long))]
    pub plaintext: bool,
    /// The protocol's preset: lan (default), lan-fast (about half the
    /// detection time for about twice the messages; a paused member must
    /// resume within about 1.5 s), wan or classic (memberlist's LAN
    /// constants).
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub preset: Option<Preset>,
    /// The detector that watches members, in the lab's spec grammar (what
    /// `vigil lab recommend` prints, taken verbatim): `MODEL[:NAME=VALUE,...]`
    /// with its `threshold`, the level at which a silent member is probed,
    /// e.g. `normal:window=1000,min-std-ms=100,threshold=8` (default: the
    /// preset's Akka φ at 8).
    #[cfg_attr(feature = "clap", arg(long, value_name = "SPEC"))]
    pub detector: Option<String>,
    /// Cluster id: members of other clusters are ignored (default 0x76696769).
    #[cfg_attr(feature = "clap", arg(long))]
    pub cluster: Option<u64>,
    /// Where the generation is recorded, so a restart always comes back
    /// with a higher one, and the members known (file `members`), which a
    /// restarted member rejoins without its seeds.
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub data_dir: Option<PathBuf>,
    /// A tag: `KEY=VALUE` (repeatable), carried to every member; all of a
    /// member's tags take at most 512 bytes (each pair its key and value
    /// plus 2).
    #[cfg_attr(feature = "clap", arg(long = "tag", value_name = "KEY=VALUE"))]
    pub tags: Vec<String>,
    /// The largest datagram sent, in bytes before sealing (1024 to 65000;
    /// default 1400): lower it when the seal (43 bytes) and the headers must
    /// fit a smaller path MTU.
    #[cfg_attr(feature = "clap", arg(long, value_name = "BYTES"))]
    pub datagram_budget: Option<usize>,
    /// How much to log on stderr: error, warn, info (default: starts,
    /// verdicts, stalls, leaving), debug (also refused packets and failed
    /// sends) or trace.
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub log_level: Option<LogLevel>,
    /// How to write the log on stderr: text (default) or json (one object a
    /// line, for a log shipper).
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub log_format: Option<LogFormat>,
    /// A graded policy on the members this one watches (repeatable):
    /// `NAME=THRESHOLD[,dwell=DURATION][,rearm=LEVEL][,recovery=N][,ejection][,destructive]`,
    /// or `NAME=ejection` for outlier ejection only; e.g. `--policy
    /// route=2,dwell=500ms,ejection --policy remove=8,dwell=5s,destructive`.
    /// Each reports `policy` events for members given with `--watch`, and
    /// its time to threshold for every watched member in the API.
    #[cfg_attr(feature = "clap", arg(long = "policy", value_name = "NAME=THRESHOLD[,...]"))]
    pub policies: Vec<String>,
    /// Watch this member for the application too (repeatable): its policies'
    /// verdicts become `policy` events (its heartbeats are asked for if it
    /// is not one this member watches anyway).
    #[cfg_attr(feature = "clap", arg(long = "watch", value_name = "NAME"))]
    pub watch: Vec<String>,
    /// The HTTP API, metrics and dashboard: `IP:PORT`, or `off` (default
    /// 127.0.0.1:8470; if that port is taken, the agent runs without it and
    /// says so).
    #[cfg_attr(feature = "clap", arg(long, value_name = "IP:PORT|off"))]
    pub http: Option<String>,
    /// A file holding the bearer token that keyring operations and leaving
    /// through the API need (without one they are allowed on a loopback
    /// address only). Like a key file, it must be readable by its owner
    /// only (chmod 600).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub http_token_file: Option<PathBuf>,
    /// Another name the API may be reached by (repeatable): `NAME` on any
    /// port or `NAME:PORT`, e.g. behind a proxy; requests naming another
    /// Host than these and the API's own addresses are refused.
    #[cfg_attr(feature = "clap", arg(long = "http-host", value_name = "NAME[:PORT]"))]
    pub http_hosts: Vec<String>,
    /// Heartbeat arrivals kept per watched member, served as lab traces at
    /// /v1/traces/NAME (0 to 1000000; default 10000, about 3 hours at the
    /// LAN preset's rate, 80 KB per member).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub record_arrivals: Option<usize>,
    /// Events kept for clients of /v1/events that resume (1 to 100000;
    /// default 1000).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub event_history: Option<usize>,
    /// How often to try to reconnect to one member believed dead (a
    /// duration with its unit: 10s; default 10 s, 30 s on wan).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION"))]
    pub reconnect_interval: Option<String>,
    /// How long to keep trying to reconnect to a dead member before it is
    /// reaped (default 24h).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION"))]
    pub reconnect_timeout: Option<String>,
    /// How long a member that left is remembered (default 24h).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION"))]
    pub tombstone_timeout: Option<String>,
    /// Who survives a partition. `auto` (default): a member whose suspicion
    /// runs out is declared dead, on both sides, and both carry on (unsafe
    /// for anything exclusive). Otherwise it is only unreachable, and once
    /// the picture holds still the strategy decides; the losing side downs
    /// itself (a `downed` event) and rejoins at a new generation:
    /// `keep-majority[:tag=KEY=VALUE]`, `static-quorum:size=N[,tag=..]`,
    /// `keep-oldest[:down-if-alone][,tag=..]`,
    /// `keep-referee:address=IP:PORT[,down-all-if-less-than=N]`,
    /// `lease-majority[:acquire-delay-for-minority=DURATION][,tag=..]` (with
    /// `--lease-file`) or `down-all`.
    #[cfg_attr(feature = "clap", arg(long, value_name = "STRATEGY"))]
    pub downing: Option<String>,
    /// Calm needed before the downing strategy decides (a duration; default
    /// 20s, Akka's; keep it above the preset's longest suspicion).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION"))]
    pub stable_after: Option<String>,
    /// How long the surviving side waits before it declares the losers dead
    /// (default: --stable-after).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION"))]
    pub down_removal_margin: Option<String>,
    /// Instability tolerated past --stable-after before everyone is downed,
    /// a duration or `off` (default: ¾ of --stable-after, at least 4s).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION|off"))]
    pub decide_when_unstable: Option<String>,
    /// The lease `lease-majority` asks for: a file every member can reach
    /// (one host, or a shared file system), locked while it is read and
    /// written. A regular file, or nothing yet in a directory that exists,
    /// that this member can write: checked at the start (a lease that
    /// cannot be asked stops the agent), then every 15 s.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub lease_file: Option<PathBuf>,
    /// What becomes of outlier verdicts (ejections from the outcomes
    /// posted to /v1/outcomes): `share` passes this agent's on to every
    /// member and shows everyone's (the default), `down` also lets a member
    /// ejected by others count as unreachable from them when --downing
    /// decides, `off` keeps them to this agent.
    #[cfg_attr(feature = "clap", arg(long, value_name = "share|down|off"))]
    pub gray_evidence: Option<String>,
}

/// The settings file: the flags' names, in `snake_case`, with `[tags]` and
/// `[policies]` tables.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct FileSettings {
    /// `name`.
    pub name: Option<String>,
    /// `bind`.
    pub bind: Option<String>,
    /// `advertise`.
    pub advertise: Option<String>,
    /// `join`.
    #[serde(default)]
    pub join: Vec<String>,
    /// `key_file`.
    pub key_file: Option<PathBuf>,
    /// `seal_mode`.
    pub seal_mode: Option<Sealing>,
    /// `seal_cipher`.
    pub seal_cipher: Option<SealCipher>,
    /// `transport`.
    pub transport: Option<Transport>,
    /// `stream_compression`.
    pub stream_compression: Option<StreamCompression>,
    /// `push_pull`.
    pub push_pull: Option<PushPull>,
    /// `preset`.
    pub preset: Option<Preset>,
    /// `detector`.
    pub detector: Option<String>,
    /// `cluster`.
    pub cluster: Option<u64>,
    /// `data_dir`.
    pub data_dir: Option<PathBuf>,
    /// `datagram_budget`.
    pub datagram_budget: Option<usize>,
    /// `log_level`.
    pub log_level: Option<LogLevel>,
    /// `log_format`.
    pub log_format: Option<LogFormat>,
    /// `http`.
    pub http: Option<String>,
    /// `http_token_file`.
    pub http_token_file: Option<PathBuf>,
    /// `http_hosts`.
    #[serde(default)]
    pub http_hosts: Vec<String>,
    /// `record_arrivals`.
    pub record_arrivals: Option<usize>,
    /// `event_history`.
    pub event_history: Option<usize>,
    /// `watch`.
    #[serde(default)]
    pub watch: Vec<String>,
    /// `[tags]`.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// `[policies]`: name = threshold, or name = the rest of a `--policy`.
    #[serde(default)]
    pub policies: BTreeMap<String, FilePolicy>,
    /// `reconnect_interval`.
    pub reconnect_interval: Option<String>,
    /// `reconnect_timeout`.
    pub reconnect_timeout: Option<String>,
    /// `tombstone_timeout`.
    pub tombstone_timeout: Option<String>,
    /// `downing`.
    pub downing: Option<String>,
    /// `stable_after`.
    pub stable_after: Option<String>,
    /// `down_removal_margin`.
    pub down_removal_margin: Option<String>,
    /// `decide_when_unstable`.
    pub decide_when_unstable: Option<String>,
    /// `lease_file`.
    pub lease_file: Option<PathBuf>,
    /// `gray_evidence`.
    pub gray_evidence: Option<String>,
}

impl FileSettings {
    /// Reads and parses the settings file at `path`.
    ///
    /// # Errors
    ///
    /// A [`SettingsError`] naming the file: unreadable, not TOML, or a key
    /// it does not know.
    pub fn read(path: &Path) -> Result<FileSettings, SettingsError> {
        let whole = || Origin::File { path: path.to_owned(), key: None };
        let text = read_text(path, "config file", defaults::MAX_CONFIG_BYTES)
            .map_err(|e| SettingsError::new(whole(), Problem::Input(e)))?;
        toml::from_str(&text).map_err(|e| SettingsError::new(whole(), Problem::Toml(e.to_string())))
    }

    /// The names of the settings that differ between two readings, but the
    /// tags (which a running agent takes again).
    pub fn changed_but_tags(&self, other: &FileSettings) -> Vec<&'static str> {
        let mut changed = Vec::new();
        macro_rules! each {
            ($($field:ident),*) => {
                $(if self.$field != other.$field { changed.push(stringify!($field)); })*
            };
        }
        each!(
            name,
            bind,
            detector,
            advertise,
            join,
            key_file,
            seal_mode,
            seal_cipher,
            transport,
            stream_compression,
            push_pull,
            preset,
            cluster,
            data_dir,
            datagram_budget,
            log_level,
            log_format,
            http,
            http_token_file,
            http_hosts,
            record_arrivals,
            event_history,
            watch,
            policies,
            reconnect_interval,
            reconnect_timeout,
            tombstone_timeout,
            downing,
            stable_after,
            down_removal_margin,
            decide_when_unstable,
            lease_file,
            gray_evidence
        );
        changed
    }
}

/// Where a setting was given: a flag, or a key of the settings file (or
/// the file itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A flag, as typed (`--bind`).
    Flag(&'static str),
    /// The settings file, and the key in it.
    File {
        /// The file.
        path: PathBuf,
        /// The key (`bind`); `None` for the file as a whole.
        key: Option<&'static str>,
    },
    /// The host's name, for a member given no name: where it was read
    /// (`/proc/sys/kernel/hostname`, or `$HOSTNAME`).
    Host(&'static str),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Flag(flag) => f.write_str(flag),
            Origin::File { path, key: Some(key) } => write!(f, "{}: {key}", path.display()),
            Origin::File { path, key: None } => write!(f, "{}", path.display()),
            Origin::Host(from) => write!(f, "the host's name ({from})"),
        }
    }
}

/// What is wrong with a setting.
#[derive(Debug)]
#[non_exhaustive]
pub enum Problem {
    /// A setting every agent needs was not given.
    Missing(&'static str),
    /// The text does not read as what the setting takes.
    Invalid {
        /// What was typed, quoted and bounded.
        text: String,
        /// What it should be.
        expected: String,
    },
    /// A number outside its range.
    OutOfRange {
        /// The value.
        value: String,
        /// Its range.
        range: String,
    },
    /// The protocol configuration refused it.
    Protocol(ConfigError),
    /// The tags refused it.
    Tags(TagsError),
    /// A file could not be read.
    Input(InputError),
    /// A key or token file that cannot be used.
    Secret(SecretError),
    /// A graded policy that does not read.
    Policy(PolicyError),
    /// A detector spec that does not read or build.
    Detector(SpecError),
    /// A downing strategy that does not read.
    Downing(vigil_net::downing::BadStrategy),
    /// No name given, and the host's name cannot be a member's.
    HostName {
        /// The host's name, if it has one.
        name: Option<String>,
        /// Why it cannot.
        why: String,
    },
    /// `lease-majority` without a lease to ask.
    NoLease,
    /// A lease that cannot be asked ([`Lease::check`](vigil_net::lease::Lease::check)).
    Lease(vigil_net::lease::LeaseError),
    /// The settings file is not TOML, or holds a key it should not.
    Toml(String),
    /// Sealing asked for without keys.
    NoKeys,
    /// Bound where other hosts reach it, without keys, and without
    /// `--plaintext`.
    Reachable(SocketAddr),
    /// The watched members' detectors and recordings would take more memory
    /// than [`defaults::MAX_WATCH_MEMORY`].
    TooMuchMemory {
        /// Bytes per watched member.
        per_member: usize,
        /// Members watched at most.
        members: usize,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Missing(what) => f.write_str(what),
            Problem::Invalid { text, expected } => write!(f, "{text} is not {expected}"),
            Problem::OutOfRange { value, range } => write!(f, "{value} is out of range ({range})"),
            Problem::Protocol(e) => e.fmt(f),
            Problem::Tags(e) => e.fmt(f),
            Problem::Input(e) => e.fmt(f),
            Problem::Secret(e) => e.fmt(f),
            Problem::Policy(e) => e.fmt(f),
            Problem::Detector(e) => e.fmt(f),
            Problem::Downing(e) => e.fmt(f),
            Problem::HostName { name: Some(name), why } => write!(
                f,
                "not given, and the host's name {} cannot be a member's name ({why}): give --name",
                quoted(name)
            ),
            Problem::HostName { name: None, why } => write!(f, "not given, and {why}: give --name"),
            Problem::NoLease => f.write_str(
                "lease-majority needs a lease that every side can reach: give --lease-file (or pick another strategy)",
            ),
            Problem::Lease(e) => write!(f, "{}: {}", e.at, e.problem),
            Problem::Toml(e) => f.write_str(e.trim_end()),
            Problem::NoKeys => f.write_str("sealing needs keys (--key-file)"),
            Problem::TooMuchMemory { per_member, members } => write!(
                f,
                "{members} watched members at {} each (the detector's window and the recorded arrivals) would take {}, \
                 more than {}: ask for a smaller window or fewer recorded arrivals, or watch fewer members",
                crate::input::binary_size(*per_member as u64),
                crate::input::binary_size(per_member.saturating_mul(*members) as u64),
                crate::input::binary_size(defaults::MAX_WATCH_MEMORY as u64)
            ),
            Problem::Reachable(bind) => write!(
                f,
                "{bind}: other hosts can reach this member, and without keys nothing it sends or takes is \
                 authenticated; give --key-file (make a key with `vigil keygen`), or say --plaintext to run so"
            ),
        }
    }
}

/// A setting the agent cannot start with: where it was given, and what is
/// wrong with it. Nothing was started.
#[derive(Debug)]
pub struct SettingsError {
    /// Where.
    pub origin: Origin,
    /// What (boxed: an error is rare, and a result stays small).
    pub problem: Box<Problem>,
}

impl SettingsError {
    /// The error of `problem`, with the setting given at `origin`.
    pub fn new(origin: Origin, problem: Problem) -> SettingsError {
        SettingsError { origin, problem: Box::new(problem) }
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.problem {
            // The address is said after the flag that gave it.
            Problem::Reachable(_) => write!(f, "{} {}", self.origin, self.problem),
            _ => write!(f, "{}: {}", self.origin, self.problem),
        }
    }
}

impl std::error::Error for SettingsError {}

/// Where the HTTP API goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Http {
    /// Nowhere (`off`).
    Off,
    /// The default address; if it is taken, the agent runs without the API
    /// and says so.
    Default,
    /// An address the user gave, which must work.
    At(SocketAddr, Origin),
}

/// Everything `vigil agent` starts with, checked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgentConfig {
    /// This member's name, and where it was given.
    pub name: String,
    /// Where the name was given (a start refused for the name says so), or
    /// [`Origin::Host`] when it is the host's.
    pub name_origin: Origin,
    /// Where the sockets are bound.
    pub bind: SocketAddr,
    /// Where others reach this member, if not the bound address.
    pub advertise: Option<SocketAddr>,
    /// Seeds, `IP:PORT` or `HOST:PORT`.
    pub seeds: Vec<String>,
    /// The keys, if any.
    pub keyring: Option<Keyring>,
    /// How packets are sealed.
    pub seal_mode: SealMode,
    /// The envelope sealed packets are sent in.
    pub envelope: vigil_membership::seal::Envelope,
    /// Whether push-pull views are compressed.
    pub stream_compression: StreamCompression,
    /// Where the generation is recorded, and where that was given.
    pub data_dir: Option<(PathBuf, Origin)>,
    /// The protocol's configuration: the preset, the settings that adjust
    /// it, and the graded policies.
    pub protocol: Config,
    /// The detector as given with `--detector` (or the file's `detector`);
    /// `None` for the preset's.
    pub detector: Option<DetectorSpec>,
    /// This member's tags.
    pub tags: Tags,
    /// The HTTP API.
    pub http: Http,
    /// The API's bearer token.
    pub token: Option<String>,
    /// Other names the API may be reached by.
    pub http_hosts: Vec<Host>,
    /// Events kept for resuming clients.
    pub event_history: usize,
    /// Members watched for the application.
    pub watch: BTreeSet<String>,
    /// The log's level.
    pub log_level: LogLevel,
    /// The log's format.
    pub log_format: LogFormat,
    /// The lease `lease-majority` asks for (`--lease-file`), and where it
    /// was given.
    pub lease_file: Option<(PathBuf, Origin)>,
    /// The settings file, to read again on SIGHUP, with what it said at the
    /// start.
    pub file: Option<(PathBuf, FileSettings)>,
    /// The tags given as flags (they override the file's on SIGHUP too).
    pub tag_flags: Vec<String>,
}

impl AgentConfig {
    /// Whether other hosts can reach the member's sockets.
    pub fn reachable(&self) -> bool {
        !self.bind.ip().is_loopback()
    }

    /// The tags again after the settings file changed: `file`'s `[tags]`
    /// with the flags' over them.
    ///
    /// # Errors
    ///
    /// The tags do not make a valid set.
    pub fn tags_with(&self, file: &FileSettings, path: &Path) -> Result<Tags, SettingsError> {
        tags(&self.tag_flags, &file.tags, Some(path))
    }
}

/// Where a setting came from: the flag if it was given (or there is no
/// file), else the file's key.
fn origin(flag: bool, name: &'static str, flag_name: &'static str, file: Option<&Path>) -> Origin {
    match (flag, file) {
        (true, _) | (false, None) => Origin::Flag(flag_name),
        (false, Some(f)) => Origin::File { path: f.to_owned(), key: Some(name) },
    }
}

fn invalid(origin: Origin, text: &str, expected: impl Into<String>) -> SettingsError {
    SettingsError::new(origin, Problem::Invalid { text: quoted(text), expected: expected.into() })
}

fn address(origin: Origin, text: &str) -> Result<SocketAddr, SettingsError> {
    text.to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or_else(|| invalid(origin, text, "an address (IP:PORT)"))
}

/// A seed as given to `--join`, in one of [`vigil_net::Seed`]'s forms.
fn seed(origin: &Origin, text: &str) -> Result<String, SettingsError> {
    match text.parse::<vigil_net::Seed>() {
        Ok(_) => Ok(text.to_owned()),
        Err(e) => Err(invalid(origin.clone(), text, format!("a member's address ({})", e.why))),
    }
}

/// The tags: the file's `[tags]`, then each `--tag KEY=VALUE` over them.
fn tags(flags: &[String], file: &BTreeMap<String, String>, path: Option<&Path>) -> Result<Tags, SettingsError> {
    let mut all = file.clone();
    for t in flags {
        let (k, v) = t.split_once('=').ok_or_else(|| invalid(Origin::Flag("--tag"), t, "a tag (KEY=VALUE)"))?;
        all.insert(k.to_owned(), v.to_owned());
    }
    Tags::new(all).map_err(|e| SettingsError::new(origin(!flags.is_empty(), "tags", "--tag", path), Problem::Tags(e)))
}

/// A policy as the settings file gives it: `name = THRESHOLD`, or `name =
/// "THRESHOLD,dwell=500ms,..."` in the grammar of `--policy` (without the
/// name).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum FilePolicy {
    /// A threshold.
    Threshold(f64),
    /// The rest of a `--policy` after `NAME=`.
    Spec(String),
}

/// The graded policies: the file's `[policies]`, then each `--policy` over
/// them (`NAME=THRESHOLD[,dwell=D][,rearm=L][,recovery=N][,ejection][,destructive]`
/// or `NAME=ejection`).
fn policies(
    flags: &[String],
    file: &BTreeMap<String, FilePolicy>,
    path: Option<&Path>,
) -> Result<Vec<HealthPolicy>, SettingsError> {
    let mut all: BTreeMap<String, HealthPolicy> = BTreeMap::new();
    for (name, p) in file {
        let text = match p {
            FilePolicy::Threshold(t) => format!("{name}={t}"),
            FilePolicy::Spec(rest) => format!("{name}={rest}"),
        };
        let at = Origin::File { path: path.map(Path::to_path_buf).unwrap_or_default(), key: Some("policies") };
        let policy: HealthPolicy = text.parse().map_err(|e: PolicyError| SettingsError::new(at, Problem::Policy(e)))?;
        all.insert(policy.name.clone(), policy);
    }
    for p in flags {
        let policy: HealthPolicy =
            p.parse().map_err(|e: PolicyError| SettingsError::new(Origin::Flag("--policy"), Problem::Policy(e)))?;
        all.insert(policy.name.clone(), policy);
    }
    if all.len() > defaults::MAX_POLICIES {
        let at = origin(!flags.is_empty(), "policies", "--policy", path);
        let range = format!("at most {} policies", defaults::MAX_POLICIES);
        return Err(SettingsError::new(at, Problem::OutOfRange { value: all.len().to_string(), range }));
    }
    Ok(all.into_values().collect())
}

/// A duration with its unit: `250ms`, `30s`, `5min`, `72h`, `1d`.
fn duration(origin: Origin, text: &str) -> Result<Duration, SettingsError> {
    let t = text.trim();
    // The unit is the trailing letters; an exponent (`1e4s`) is part of the
    // number.
    let split = t.trim_end_matches(|c: char| c.is_ascii_alphabetic()).len();
    let (num, unit) = t.split_at(split);
    let value: f64 =
        num.trim().parse().map_err(|_| invalid(origin.clone(), text, "a duration like 250ms, 30s or 30d"))?;
    let scale = match unit.trim() {
        "" => {
            let n = Some(num.trim()).filter(|n| n.len() <= 20).unwrap_or("N");
            return Err(invalid(
                origin,
                text,
                format!("a duration: it has no unit; write {n}ms, {n}s, {n}min, {n}h or {n}d"),
            ));
        }
        "ms" => 1e-3,
        "s" => 1.0,
        "min" | "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => return Err(invalid(origin, text, "a duration (units: ms, s, min, h, d)")),
    };
    let secs = value * scale;
    // A year bounds every duration the agent takes, and keeps it
    // representable.
    if !(secs.is_finite() && secs > 0.0 && secs <= 3.156e7) {
        return Err(invalid(origin, text, "a duration in (0, 1 year]"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `--http-host` values (or the file's `http_hosts`), checked.
fn host_names(texts: &[String], origin: Origin) -> Result<Vec<Host>, SettingsError> {
    if texts.len() > defaults::MAX_HTTP_HOSTS {
        let range = format!("at most {} names", defaults::MAX_HTTP_HOSTS);
        return Err(SettingsError::new(origin, Problem::OutOfRange { value: texts.len().to_string(), range }));
    }
    texts
        .iter()
        .map(|t| {
            t.trim().parse::<Host>().map_err(|_| {
                invalid(origin.clone(), t, "a host name (NAME or NAME:PORT, e.g. vigil.example.com or vigil:8470)")
            })
        })
        .collect()
}

/// Where the kernel keeps the host's name.
const KERNEL_HOST_NAME: &str = "/proc/sys/kernel/hostname";

/// Host names that many hosts have (the kernel's when none was set, and
/// the loopback's): as members' names, they would clash.
const SHARED_HOST_NAMES: [&str; 3] = ["(none)", "localhost", "localhost.localdomain"];

/// The host's name as each source gives it, for a member given no name.
#[derive(Debug, Clone, Default)]
struct HostNames {
    /// [`KERNEL_HOST_NAME`], as read.
    kernel: Option<String>,
    /// `$HOSTNAME`.
    env: Option<String>,
}

impl HostNames {
    /// This host's.
    fn here() -> HostNames {
        HostNames {
            kernel: read_text(Path::new(KERNEL_HOST_NAME), "host name", 4096).ok(),
            env: std::env::var("HOSTNAME").ok(),
        }
    }

    /// The first usable name, trimmed, with where it was read: the
    /// kernel's, else `$HOSTNAME`. A name must be one the protocol takes
    /// (1 to 64 bytes, no control character), and not one many hosts have.
    fn name(&self) -> Result<(String, Origin), Problem> {
        use vigil_membership::message::MAX_NAME_LEN;
        use vigil_membership::wire::{BadNameReason, control_character};
        let mut refused = None;
        for (text, from) in [(&self.kernel, KERNEL_HOST_NAME), (&self.env, "$HOSTNAME")] {
            let Some(name) = text.as_deref().map(str::trim).filter(|n| !n.is_empty()) else { continue };
            let why = if name.len() > MAX_NAME_LEN {
                Some(BadNameReason::TooLong { len: name.len() }.to_string())
            } else if let Some(at) = control_character(name) {
                Some(BadNameReason::ControlCharacter { at }.to_string())
            } else if SHARED_HOST_NAMES.contains(&name) {
                Some("many hosts have it".to_owned())
            } else {
                None
            };
            match why {
                None => return Ok((name.to_owned(), Origin::Host(from))),
                Some(why) => {
                    refused.get_or_insert(Problem::HostName { name: Some(name.to_owned()), why });
                }
            }
        }
        Err(refused.unwrap_or_else(|| Problem::HostName {
            name: None,
            why: format!("this host has no name ({KERNEL_HOST_NAME} and $HOSTNAME are empty or unreadable)"),
        }))
    }
}

impl Flags {
    /// Reads the settings file (if given) and the secrets, and checks every
    /// setting: the one configuration the agent starts with. Without a
    /// name, the member is named after the host
    /// (`/proc/sys/kernel/hostname`, else `$HOSTNAME`).
    ///
    /// # Errors
    ///
    /// A [`SettingsError`] naming the first setting at fault, where it was
    /// given, and what is wrong with it.
    pub fn resolve(&self) -> Result<AgentConfig, SettingsError> {
        self.resolve_on(&HostNames::here())
    }

    /// [`Flags::resolve`] on a host named as `host` says.
    fn resolve_on(&self, host: &HostNames) -> Result<AgentConfig, SettingsError> {
        let a = self;
        let path = a.config.as_deref();
        let file = match path {
            Some(p) => FileSettings::read(p)?,
            None => FileSettings::default(),
        };
        let pick =
            |flag: &Option<String>, from_file: &Option<String>, key: &'static str, flag_name: &'static str| match (
                flag, from_file,
            ) {
                (Some(v), _) => Some((v.clone(), origin(true, key, flag_name, path))),
                (None, Some(v)) => Some((v.clone(), origin(false, key, flag_name, path))),
                _ => None,
            };
        let (name, name_origin) = match pick(&a.name, &file.name, "name", "--name") {
            Some(given) => given,
            None => host.name().map_err(|p| SettingsError::new(Origin::Flag("--name"), p))?,
        };
        if let Some(at) = vigil_membership::wire::control_character(&name) {
            return Err(invalid(
                name_origin,
                &name,
                format!("a name: it has a control character at byte {at}; a name is printable text"),
            ));
        }
        let (bind, bind_origin) = match pick(&a.bind, &file.bind, "bind", "--bind") {
            Some((v, from)) => (address(from.clone(), &v)?, from),
            None => (defaults::BIND, Origin::Flag("--bind")),
        };
        let advertise = match pick(&a.advertise, &file.advertise, "advertise", "--advertise") {
            Some((v, from)) => {
                let addr = address(from.clone(), &v)?;
                if addr.ip().is_unspecified() || addr.port() == 0 {
                    return Err(invalid(
                        from,
                        &v,
                        "an address other members can reach (it is an unspecified address or port 0)",
                    ));
                }
                Some(addr)
            }
            None => None,
        };
        let (join_texts, join_origin) = if a.join.is_empty() {
            (file.join.clone(), origin(false, "join", "--join", path))
        } else {
            (a.join.clone(), Origin::Flag("--join"))
        };
        let mut seeds = Vec::new();
        for text in &join_texts {
            for t in text.split(',').map(str::trim) {
                if t.is_empty() {
                    return Err(invalid(
                        join_origin,
                        text,
                        "a list of addresses: it holds an empty address; give IP:PORT, HOST:PORT, dns+HOST:PORT or dnssrv+NAME, comma-separated",
                    ));
                }
                seeds.push(seed(&join_origin, t)?);
            }
        }
        if seeds.len() > defaults::MAX_SEEDS {
            let range = format!("at most {} seeds", defaults::MAX_SEEDS);
            return Err(SettingsError::new(join_origin, Problem::OutOfRange { value: seeds.len().to_string(), range }));
        }
        let cluster = a.cluster.or(file.cluster).unwrap_or(vigil_net::DEFAULT_CLUSTER);
        let mut protocol = a.preset.or(file.preset).unwrap_or_default().config(cluster);
        let detector = match pick(&a.detector, &file.detector, "detector", "--detector") {
            Some((text, from)) => {
                let spec: DetectorSpec =
                    text.parse().map_err(|e| SettingsError::new(from.clone(), Problem::Detector(e)))?;
                // The spec's threshold is the level at which a silent member
                // is probed: the protocol's suspect level.
                protocol.detector = spec.config().clone();
                protocol.suspect_level = spec.threshold();
                protocol.validate().map_err(|e| SettingsError::new(from, Problem::Protocol(e)))?;
                Some(spec)
            }
            None => None,
        };
        let key_file = match (&a.key_file, &file.key_file) {
            (Some(p), _) => Some((p.clone(), Origin::Flag("--key-file"))),
            (None, Some(p)) => Some((p.clone(), origin(false, "key_file", "--key-file", path))),
            (None, None) => None,
        };
        let keyring = match key_file {
            Some((p, from)) => Some(secrets::key_file(&p).map_err(|e| SettingsError::new(from, Problem::Secret(e)))?),
            None => None,
        };
        let sealing = if a.plaintext { Some(Sealing::Plaintext) } else { a.seal_mode.or(file.seal_mode) };
        let seal_mode = match (sealing, &keyring) {
            (Some(Sealing::Plaintext), _) => SealMode::Plaintext,
            (Some(Sealing::Staged), _) => SealMode::Staged,
            (Some(Sealing::Sealed), _) | (None, Some(_)) => SealMode::Sealed,
            (None, None) => SealMode::Plaintext,
        };
        if seal_mode != SealMode::Plaintext && keyring.is_none() {
            let from = origin(a.seal_mode.is_some(), "seal_mode", "--seal-mode", path);
            return Err(SettingsError::new(from, Problem::NoKeys));
        }
        let envelope = a.seal_cipher.or(file.seal_cipher).map(SealCipher::envelope).unwrap_or_default();
        let data_dir = match (&a.data_dir, &file.data_dir) {
            (Some(d), _) => Some((d.clone(), Origin::Flag("--data-dir"))),
            (None, Some(d)) => Some((d.clone(), origin(false, "data_dir", "--data-dir", path))),
            (None, None) => None,
        };
        let tags = tags(&a.tags, &file.tags, path)?;
        let protocol_error = |from: Origin| move |e: ConfigError| SettingsError::new(from, Problem::Protocol(e));
        for (key, flag_name, flag, from_file) in [
            ("reconnect_interval", "--reconnect-interval", &a.reconnect_interval, &file.reconnect_interval),
            ("reconnect_timeout", "--reconnect-timeout", &a.reconnect_timeout, &file.reconnect_timeout),
            ("tombstone_timeout", "--tombstone-timeout", &a.tombstone_timeout, &file.tombstone_timeout),
        ] {
            let Some((text, from)) = pick(flag, from_file, key, flag_name) else { continue };
            let d = duration(from.clone(), &text)?;
            match key {
                "reconnect_interval" => protocol.reconnect_interval = d,
                "reconnect_timeout" => protocol.reconnect_timeout = d,
                _ => protocol.tombstone_timeout = d,
            }
            protocol.validate().map_err(protocol_error(from))?;
        }
        a.transport.or(file.transport).unwrap_or_default().apply(&mut protocol);
        if let Some(p) = a.push_pull.or(file.push_pull) {
            p.apply(&mut protocol);
        }
        if let Some(budget) = a.datagram_budget.or(file.datagram_budget) {
            protocol.datagram_budget = budget;
            let from = origin(a.datagram_budget.is_some(), "datagram_budget", "--datagram-budget", path);
            protocol.validate().map_err(protocol_error(from))?;
        }
        let lease_file = match (&a.lease_file, &file.lease_file) {
            (Some(p), _) => Some((p.clone(), Origin::Flag("--lease-file"))),
            (None, Some(p)) => Some((p.clone(), origin(false, "lease_file", "--lease-file", path))),
            (None, None) => None,
        };
        if let Some((text, from)) = pick(&a.downing, &file.downing, "downing", "--downing") {
            let strategy: vigil_net::downing::Strategy =
                text.parse().map_err(|e| SettingsError::new(from.clone(), Problem::Downing(e)))?;
            if matches!(strategy, vigil_net::downing::Strategy::LeaseMajority { .. }) && lease_file.is_none() {
                return Err(SettingsError::new(from, Problem::NoLease));
            }
            protocol.downing = vigil_net::downing::Downing::new(strategy);
        }
        if let Some((text, from)) = pick(&a.stable_after, &file.stable_after, "stable_after", "--stable-after") {
            protocol.downing = protocol.downing.clone().with_stable_after(duration(from.clone(), &text)?);
            protocol.validate().map_err(protocol_error(from))?;
        }
        if let Some((text, from)) =
            pick(&a.down_removal_margin, &file.down_removal_margin, "down_removal_margin", "--down-removal-margin")
        {
            protocol.downing.down_removal_margin = duration(from.clone(), &text)?;
            protocol.validate().map_err(protocol_error(from))?;
        }
        if let Some((text, from)) =
            pick(&a.decide_when_unstable, &file.decide_when_unstable, "decide_when_unstable", "--decide-when-unstable")
        {
            protocol.downing.decide_when_unstable =
                if text.trim() == "off" { None } else { Some(duration(from.clone(), &text)?) };
            protocol.validate().map_err(protocol_error(from))?;
        }
        if let Some((text, from)) = pick(&a.gray_evidence, &file.gray_evidence, "gray_evidence", "--gray-evidence") {
            let (share, counts_for_downing) = match text.trim() {
                "share" => (true, false),
                "down" => (true, true),
                "off" => (false, false),
                _ => return Err(invalid(from, &text, "share, down or off")),
            };
            protocol.gray = vigil_net::gray::GraySharing { share, counts_for_downing, ..protocol.gray };
        }
        let http = match pick(&a.http, &file.http, "http", "--http") {
            Some((v, _)) if v == "off" => Http::Off,
            Some((v, from)) => Http::At(address(from.clone(), &v)?, from),
            None => Http::Default,
        };
        let token = match (&a.http_token_file, &file.http_token_file) {
            (Some(p), _) => Some((p.clone(), Origin::Flag("--http-token-file"))),
            (None, Some(p)) => Some((p.clone(), origin(false, "http_token_file", "--http-token-file", path))),
            (None, None) => None,
        };
        let token = match token {
            Some((p, from)) => Some(secrets::token_file(&p).map_err(|e| SettingsError::new(from, Problem::Secret(e)))?),
            None => None,
        };
        let http_hosts = if a.http_hosts.is_empty() {
            host_names(&file.http_hosts, origin(false, "http_hosts", "--http-host", path))?
        } else {
            host_names(&a.http_hosts, Origin::Flag("--http-host"))?
        };
        protocol.recorded_arrivals = a.record_arrivals.or(file.record_arrivals).unwrap_or(defaults::RECORDED_ARRIVALS);
        let from = origin(a.record_arrivals.is_some(), "record_arrivals", "--record-arrivals", path);
        protocol.validate().map_err(protocol_error(from))?;
        let event_history = a.event_history.or(file.event_history).unwrap_or(defaults::EVENT_HISTORY);
        if !(1..=defaults::MAX_EVENT_HISTORY).contains(&event_history) {
            let from = origin(a.event_history.is_some(), "event_history", "--event-history", path);
            let range = format!("1 to {}", defaults::MAX_EVENT_HISTORY);
            return Err(SettingsError::new(from, Problem::OutOfRange { value: event_history.to_string(), range }));
        }
        protocol.policies = policies(&a.policies, &file.policies, path)?;
        let from = origin(!a.policies.is_empty(), "policies", "--policy", path);
        protocol.validate().map_err(protocol_error(from))?;
        let watch: BTreeSet<String> =
            if a.watch.is_empty() { file.watch.iter().cloned().collect() } else { a.watch.iter().cloned().collect() };
        if watch.len() > defaults::MAX_WATCH {
            let from = origin(!a.watch.is_empty(), "watch", "--watch", path);
            let range = format!("at most {} members", defaults::MAX_WATCH);
            return Err(SettingsError::new(from, Problem::OutOfRange { value: watch.len().to_string(), range }));
        }
        // Every watched member has a detector and a recording of its own:
        // their memory is bounded before anything starts, not found out
        // after days of heartbeats.
        let detector_bytes: usize = protocol.detector.build().map_or(0, |d| vigil_detector::Detector::heap_bytes(&d));
        let per_member = detector_bytes
            .saturating_add(protocol.recorded_arrivals.saturating_mul(size_of::<vigil_detector::Instant>()));
        let members = protocol.observers.saturating_add(watch.len()).max(1);
        if per_member.saturating_mul(members) > defaults::MAX_WATCH_MEMORY {
            let from = match (&a.detector, &file.detector, a.record_arrivals.or(file.record_arrivals)) {
                (Some(_), _, _) => Origin::Flag("--detector"),
                (None, Some(_), _) => origin(false, "detector", "--detector", path),
                (None, None, Some(_)) => {
                    origin(a.record_arrivals.is_some(), "record_arrivals", "--record-arrivals", path)
                }
                (None, None, None) => origin(!a.watch.is_empty(), "watch", "--watch", path),
            };
            return Err(SettingsError::new(from, Problem::TooMuchMemory { per_member, members }));
        }
        // Secure by default: reachable from other hosts means keys, unless
        // the user says plaintext.
        if !bind.ip().is_loopback() && keyring.is_none() && sealing != Some(Sealing::Plaintext) {
            return Err(SettingsError::new(bind_origin, Problem::Reachable(bind)));
        }
        Ok(AgentConfig {
            name,
            name_origin,
            bind,
            advertise,
            seeds,
            keyring,
            seal_mode,
            envelope,
            stream_compression: a.stream_compression.or(file.stream_compression).unwrap_or_default(),
            data_dir,
            protocol,
            tags,
            detector,
            http,
            token,
            http_hosts,
            event_history,
            watch,
            log_level: a.log_level.or(file.log_level).unwrap_or_default(),
            log_format: a.log_format.or(file.log_format).unwrap_or_default(),
            lease_file,
            file: path.map(|p| (p.to_owned(), file.clone())),
            tag_flags: a.tags.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(name: &str) -> Flags {
        Flags { name: Some(name.into()), bind: Some("127.0.0.1:0".into()), ..Flags::default() }
    }

    fn error(f: Flags) -> String {
        f.resolve().unwrap_err().to_string()
    }

    #[test]
    fn gray_evidence_is_shared_by_default_and_bad_values_name_the_flag() {
        let g = flags("x").resolve().unwrap().protocol.gray;
        assert!(g.share && !g.counts_for_downing);
        for (text, share, counts) in [("off", false, false), ("down", true, true), (" share ", true, false)] {
            let mut f = flags("x");
            f.gray_evidence = Some(text.into());
            let g = f.resolve().unwrap().protocol.gray;
            assert_eq!((g.share, g.counts_for_downing), (share, counts), "{text}");
        }
        let mut f = flags("x");
        f.gray_evidence = Some("loud".into());
        assert_eq!(error(f), "--gray-evidence: 'loud' is not share, down or off");
    }

    #[test]
    fn downing_settings_are_checked_and_name_the_flag() {
        let mut f = flags("x");
        f.downing = Some("keep-most".into());
        assert!(error(f).starts_with("--downing: 'keep-most' is not a downing strategy"));
        let mut f = flags("x");
        f.downing = Some("lease-majority".into());
        assert_eq!(
            error(f),
            "--downing: lease-majority needs a lease that every side can reach: give --lease-file (or pick another strategy)"
        );
        let mut f = flags("x");
        f.downing = Some("keep-majority".into());
        f.stable_after = Some("soon".into());
        let e = error(f);
        assert!(e.starts_with("--stable-after: "), "{e}");
        assert!(e.contains("soon") && e.contains("a duration like 250ms"), "{e}");
        let mut f = flags("x");
        f.downing = Some("static-quorum:size=3".into());
        f.stable_after = Some("8s".into());
        f.decide_when_unstable = Some("off".into());
        f.down_removal_margin = Some("2s".into());
        let c = f.resolve().unwrap();
        let d = &c.protocol.downing;
        assert_eq!(d.strategy.to_string(), "static-quorum:size=3");
        assert_eq!(
            (d.stable_after, d.decide_when_unstable, d.down_removal_margin),
            (Duration::from_secs(8), None, Duration::from_secs(2))
        );
        // Without a strategy the protocol's own verdicts decide.
        assert!(!flags("x").resolve().unwrap().protocol.downing.decides());
    }

    fn host(kernel: Option<&str>, env: Option<&str>) -> HostNames {
        HostNames { kernel: kernel.map(Into::into), env: env.map(Into::into) }
    }

    #[test]
    fn without_a_name_the_member_is_named_after_the_host() {
        let f = Flags { bind: Some("127.0.0.1:0".into()), ..Flags::default() };
        let named = |kernel, env| {
            let c = f.resolve_on(&host(kernel, env)).unwrap();
            (c.name, c.name_origin.to_string())
        };
        let kernel = || "the host's name (/proc/sys/kernel/hostname)".to_owned();
        let env = || "the host's name ($HOSTNAME)".to_owned();
        assert_eq!(named(Some("db-7\n"), Some("web-2")), ("db-7".into(), kernel()), "the kernel's first, trimmed");
        assert_eq!(named(None, Some(" web-2 ")), ("web-2".into(), env()));
        assert_eq!(named(Some(" \n"), Some("web-2")), ("web-2".into(), env()), "an empty name is none");
        assert_eq!(named(Some("(none)"), Some("web-2")), ("web-2".into(), env()), "the kernel's when none was set");
        assert_eq!(named(Some(&"h".repeat(64)), None), ("h".repeat(64), kernel()));
        // A name given, as a flag or in the file, is the name.
        let c = Flags { name: Some("x".into()), ..f.clone() }.resolve_on(&host(Some("db-7"), None)).unwrap();
        assert_eq!((c.name.as_str(), c.name_origin), ("x", Origin::Flag("--name")));
        let refused = |kernel, env| f.resolve_on(&host(kernel, env)).unwrap_err().to_string();
        assert_eq!(
            refused(None, Some("")),
            "--name: not given, and this host has no name (/proc/sys/kernel/hostname and $HOSTNAME are empty or \
             unreadable): give --name"
        );
        assert_eq!(
            refused(Some("(none)"), None),
            "--name: not given, and the host's name '(none)' cannot be a member's name (many hosts have it): give --name"
        );
        assert_eq!(
            refused(Some("localhost"), Some("localhost.localdomain")),
            "--name: not given, and the host's name 'localhost' cannot be a member's name (many hosts have it): give \
             --name",
            "the first refused is said"
        );
        let long = "h".repeat(65);
        assert_eq!(
            refused(Some(&long), None),
            format!(
                "--name: not given, and the host's name {} cannot be a member's name (65 bytes long, more than the \
                 maximum of 64): give --name",
                quoted(&long)
            )
        );
        assert_eq!(
            refused(None, Some("web\u{1b}[2J")),
            "--name: not given, and the host's name 'web\\u{1b}[2J' cannot be a member's name (a control character \
             at byte 3): give --name"
        );
    }

    #[test]
    fn flags_name_what_is_wrong_and_where() {
        let mut f = flags("x");
        f.join = vec!["10.0.0.1:7946,,10.0.0.2:7946".into()];
        assert!(error(f).starts_with(
            "--join: '10.0.0.1:7946,,10.0.0.2:7946' is not a list of addresses: it holds an empty address"
        ));
        let mut f = flags("x");
        f.reconnect_timeout = Some("30".into());
        assert!(error(f).contains("--reconnect-timeout: '30' is not a duration: it has no unit; write 30ms"));
        let mut f = flags("x");
        f.event_history = Some(0);
        assert_eq!(error(f), "--event-history: 0 is out of range (1 to 100000)");
        let mut f = flags("x");
        f.bind = None;
        assert!(error(f).starts_with("--bind 0.0.0.0:7946: other hosts can reach this member"));
        let mut f = flags("x");
        f.seal_mode = Some(Sealing::Sealed);
        assert_eq!(error(f), "--seal-mode: sealing needs keys (--key-file)");
        use vigil_membership::seal::Envelope;
        assert_eq!(flags("x").resolve().unwrap().envelope, Envelope::Aes256Gcm, "envelope 3 by default");
        let mut f = flags("x");
        f.seal_cipher = Some(SealCipher::XChaCha20Poly1305);
        assert_eq!(f.resolve().unwrap().envelope, Envelope::XChaCha20Poly1305);
        assert_eq!(flags("x").resolve().unwrap().stream_compression, StreamCompression::Lz4);
        let mut f = flags("x");
        f.stream_compression = Some(StreamCompression::Off);
        assert_eq!(f.resolve().unwrap().stream_compression, StreamCompression::Off);
        let p = flags("x").resolve().unwrap().protocol;
        assert_eq!((p.stream_ping, p.stream_only), (true, false), "udp with stream pings by default");
        for (t, expected) in
            [(Transport::UdpOnly, (false, false)), (Transport::Stream, (true, true)), (Transport::Udp, (true, false))]
        {
            let mut f = flags("x");
            f.transport = Some(t);
            let p = f.resolve().unwrap().protocol;
            assert_eq!((p.stream_ping, p.stream_only), expected, "{t:?}");
        }
        assert!(flags("x").resolve().unwrap().protocol.push_pull_digest, "digests by default");
        let mut f = flags("x");
        f.preset = Some(Preset::Classic);
        assert!(!f.resolve().unwrap().protocol.push_pull_digest, "whole views for the classic preset");
        for (p, digest) in [(PushPull::Full, false), (PushPull::Digest, true)] {
            let mut f = flags("x");
            f.push_pull = Some(p);
            assert_eq!(f.resolve().unwrap().protocol.push_pull_digest, digest, "{p:?}");
        }
        let mut f = flags("x");
        f.policies = (0..17).map(|i| format!("p{i}=2")).collect();
        assert_eq!(error(f), "--policy: 17 is out of range (at most 16 policies)");
        let mut f = flags("x");
        f.detector = Some("normal:window=0".into());
        assert!(error(f).starts_with("--detector: detector 'normal:window=0': window=0:"));
        let mut f = flags("x");
        f.detector = Some("normal:window=1000,min-std-ms=100,threshold=4".into());
        let c = f.resolve().unwrap();
        assert_eq!(
            (c.protocol.suspect_level, c.detector.unwrap().to_string().as_str()),
            (4.0, "normal:window=1000,min-std-ms=100,threshold=4")
        );
        let mut f = flags("x");
        f.detector = Some("normal:window=16777216".into());
        f.watch = (0..10).map(|i| format!("m{i}")).collect();
        let e = error(f);
        assert!(e.starts_with("--detector: 12 watched members at 64.1 MiB each"), "{e}");
        let mut f = flags("x");
        f.record_arrivals = Some(1_000_000);
        f.watch = (0..100).map(|i| format!("m{i}")).collect();
        assert!(error(f).starts_with("--record-arrivals: 102 watched members"));
        let mut f = flags("x");
        f.policies = vec!["route=2,dwel=1s".into()];
        assert_eq!(
            error(f),
            "--policy: policy 'route=2,dwel=1s': dwel: not a setting (dwell, rearm, recovery, ejection, destructive)"
        );
        let mut f = flags("x");
        f.tags = vec!["zone".into()];
        assert_eq!(error(f), "--tag: 'zone' is not a tag (KEY=VALUE)");
    }

    #[test]
    fn the_file_is_named_with_its_key_and_flags_override_it() {
        let dir = std::env::temp_dir().join(format!("vigil-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("agent.toml");
        std::fs::write(&path, "name = \"x\"\nbind = \"nowhere\"\n").unwrap();
        let f = Flags { config: Some(path.clone()), ..Flags::default() };
        assert_eq!(error(f), format!("{}: bind: 'nowhere' is not an address (IP:PORT)", path.display()));
        std::fs::write(&path, "name = \"x\"\nbind = \"127.0.0.1:1\"\nevent_history = 5\n[tags]\nzone = \"a\"\n")
            .unwrap();
        let f = Flags { config: Some(path.clone()), tags: vec!["role=db".into()], ..Flags::default() };
        let c = f.resolve().unwrap();
        assert_eq!((c.event_history, c.tags.get("zone"), c.tags.get("role")), (5, Some("a"), Some("db")));
        let f = Flags { config: Some(path.clone()), event_history: Some(7), ..Flags::default() };
        assert_eq!(f.resolve().unwrap().event_history, 7, "a flag overrides the file");
        std::fs::write(
            &path,
            "name = \"x\"\nbind = \"127.0.0.1:1\"\n[policies]\nroute = 2\nremove = \"8,dwell=5s,destructive\"\n",
        )
        .unwrap();
        let f = Flags { config: Some(path.clone()), policies: vec!["route=3,ejection".into()], ..Flags::default() };
        let shown: Vec<String> = f.resolve().unwrap().protocol.policies.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["remove=8,dwell=5s,destructive", "route=3,ejection"], "a flag replaces the file's policy");
        std::fs::write(&path, "name = \"x\"\nbind = \"127.0.0.1:1\"\n[policies]\nroute = \"2,dwell=5\"\n").unwrap();
        let e = error(Flags { config: Some(path.clone()), ..Flags::default() });
        assert!(e.starts_with(&format!("{}: policies: policy 'route=2,dwell=5'", path.display())), "{e}");
        std::fs::write(&path, "name = \"x\"\nbindd = \"127.0.0.1:1\"\n").unwrap();
        let e = error(Flags { config: Some(path.clone()), ..Flags::default() });
        assert!(e.starts_with(&format!("{}: ", path.display())) && e.contains("bindd"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_lease_file_says_where_it_was_given() {
        let dir = std::env::temp_dir().join(format!("vigil-settings-lease-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("agent.toml");
        std::fs::write(&path, "name = \"x\"\nbind = \"127.0.0.1:1\"\nlease_file = \"/run/lease\"\n").unwrap();
        let c = Flags { config: Some(path.clone()), ..Flags::default() }.resolve().unwrap();
        let (lease, at) = c.lease_file.unwrap();
        assert_eq!((lease.to_str(), at.to_string()), (Some("/run/lease"), format!("{}: lease_file", path.display())));
        let f = Flags { config: Some(path.clone()), lease_file: Some("l".into()), ..Flags::default() };
        let (lease, at) = f.resolve().unwrap().lease_file.unwrap();
        assert_eq!((lease.to_str(), at), (Some("l"), Origin::Flag("--lease-file")), "the flag overrides the file");
        let e = vigil_net::lease::LeaseError { at: "l".into(), problem: "not a regular file (a directory)".into() };
        let e = SettingsError::new(Origin::Flag("--lease-file"), Problem::Lease(e));
        assert_eq!(e.to_string(), "--lease-file: l: not a regular file (a directory)");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn durations_need_a_unit_and_stay_within_a_year() {
        let at = || Origin::Flag("--x");
        assert_eq!(duration(at(), "250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(duration(at(), "1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(duration(at(), "2d").unwrap(), Duration::from_secs(172_800));
        for bad in ["30", "0s", "-1s", "2y", "inf s", "1e400s", "400d"] {
            assert!(duration(at(), bad).is_err(), "{bad}");
        }
    }
}

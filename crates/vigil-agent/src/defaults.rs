//! Every default and limit of the agent, in one place. The protocol's own
//! (intervals, timeouts, tombstones) are `vigil_membership::Config`'s
//! presets, and the runtime's `vigil_net::NetConfig`'s; these are the
//! agent's.

use std::net::SocketAddr;
use std::time::Duration;

/// Where a member listens when told nothing: every interface, UDP and TCP
/// on port 7946 (memberlist's and Serf's port).
pub const BIND: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 7946);

/// Where the HTTP API listens when told nothing (this host only), and where
/// the command-line clients look for it.
pub const HTTP: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 8470);

/// Heartbeat arrivals kept per watched member, served as lab traces: about
/// 3 hours at the LAN preset's rate, 80 KB per member. (The most is the
/// protocol's to say: `Config::validate`.)
pub const RECORDED_ARRIVALS: usize = 10_000;

/// Events kept for clients of `/v1/events` that resume.
pub const EVENT_HISTORY: usize = 1_000;

/// The most events kept for resuming clients.
pub const MAX_EVENT_HISTORY: usize = 100_000;

/// The most graded policies an agent takes.
pub const MAX_POLICIES: usize = 16;

/// The most members given with `--watch`.
pub const MAX_WATCH: usize = 1_024;

/// The most memory the watched members may take together: each has a
/// detector (its window of intervals) and its recorded arrivals. Checked
/// before the member starts, from the detector and the recording asked for,
/// and the members watched (the ring's and `--watch`'s).
pub const MAX_WATCH_MEMORY: usize = 256 * 1024 * 1024;

/// The most seeds given with `--join`.
pub const MAX_SEEDS: usize = 256;

/// How long leaving may take before the process exits anyway (with the
/// runtime's own wait, the process is gone within 3 s of SIGTERM).
pub const LEAVE_TIMEOUT: Duration = Duration::from_millis(2_500);

/// Event lines queued for standard output at most; beyond, they are
/// dropped and counted, and a `missed` line says how many.
pub const STDOUT_QUEUE: usize = 1_000;

/// φ samples kept per watched member for the dashboard's charts: two
/// minutes at one a second.
pub const PHI_SAMPLES: usize = 120;

/// How often the sampler reads φ and new heartbeat intervals.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// A refutation this soon after the suspicion counts as a flap.
pub const FLAP_WINDOW: Duration = Duration::from_secs(10);

/// The largest configuration file read.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The largest key or token file read.
pub const MAX_SECRET_BYTES: u64 = 64 * 1024;

/// A bearer token's length, in printable ASCII characters.
pub const TOKEN_LEN: std::ops::RangeInclusive<usize> = 16..=4096;

/// The most names `--http-host` takes.
pub const MAX_HTTP_HOSTS: usize = 64;

/// The largest request body the API takes (a key is well under 1 KiB).
pub const MAX_BODY: usize = 16 * 1024;

/// The largest batch of outcomes (`POST /v1/outcomes`), in bytes.
pub const MAX_OUTCOMES_BODY: usize = 1024 * 1024;

/// The most outcomes in one batch.
pub const MAX_OUTCOMES: usize = 10_000;

/// The longest latency an outcome may report: a day, in milliseconds.
pub const MAX_LATENCY_MS: f64 = 86_400_000.0;

/// The longest pause `vigil cluster` injects.
pub const MAX_PAUSE: Duration = Duration::from_secs(60);

/// The pause `vigil cluster` injects when told no length.
pub const PAUSE: Duration = Duration::from_secs(5);

/// How often the event stream sends a comment to a follower, so that a
/// reading follower's connection never looks idle.
pub const SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// HTTP connections served at once.
pub const MAX_CONNECTIONS: usize = 256;

/// HTTP connections from one address (IPv4, or IPv6) at once.
pub const PER_SOURCE: usize = 64;

/// HTTP connections beyond the others, for the health endpoints only, when
/// every other connection has a request in progress.
pub const RESERVE: usize = 32;

/// How long a request's headers may take to arrive (and how long a
/// kept-alive connection may stay idle).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// The same on a reserve connection.
pub const RESERVE_HEADER_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a response may wait on a client that does not read.
pub const WRITE_STALL: Duration = Duration::from_secs(30);

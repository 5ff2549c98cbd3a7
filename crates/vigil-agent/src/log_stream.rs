//! The agent's log as a stream, for `GET /v1/monitor` and `vigil monitor`
//! (the way `serf monitor` and `consul monitor` follow a running agent's
//! log, at a level of their own).
//!
//! [`layer`] is a `tracing` layer the process installs beside its own log
//! output; it hands each log line to every follower that asked for its
//! level. Nothing is formatted, and no callsite is enabled for it, while
//! nobody follows: the levels followed are counted, and the layer's filter
//! lets through only the most verbose of them. A follower may ask for more
//! than the agent's own `--log-level` (`debug` while the agent logs `info`)
//! without a restart, and only while it follows.
//!
//! A follower that reads too slowly loses lines, never the agent's memory:
//! the stream keeps the last [`BACKLOG`] lines for its followers, and one
//! that falls behind is told how many it missed.
//!
//! ```
//! use vigil_agent::log_stream::{LogStream, Level};
//!
//! let stream = LogStream::global();
//! let follower = stream.follow(Level::Debug);
//! assert_eq!(stream.followed(), Some(Level::Debug));
//! drop(follower);
//! assert_eq!(stream.followed(), None);
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use tracing::field::{Field, Visit};
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Filter, Layer};

/// Lines kept for followers that fall behind (older ones are lost to them,
/// and said to be).
pub const BACKLOG: usize = 1024;

/// The longest message or field value passed on, in bytes (a longer one is
/// cut at a character boundary, and ends with `…`).
pub const MAX_TEXT: usize = 4096;

/// The most fields passed on per line.
pub const MAX_FIELDS: usize = 32;

/// A log level a follower asks for: that level and every less verbose one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Errors only.
    Error,
    /// Warnings too.
    Warn,
    /// What the agent logs by default: its start, verdicts, stalls.
    Info,
    /// Also refused packets and failed sends.
    Debug,
    /// Everything.
    Trace,
}

impl Level {
    const ALL: [Level; 5] = [Level::Error, Level::Warn, Level::Info, Level::Debug, Level::Trace];

    /// Its name: `error`, `warn`, `info`, `debug`, `trace`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        }
    }

    fn of(level: &tracing::Level) -> Level {
        match *level {
            tracing::Level::ERROR => Level::Error,
            tracing::Level::WARN => Level::Warn,
            tracing::Level::INFO => Level::Info,
            tracing::Level::DEBUG => Level::Debug,
            tracing::Level::TRACE => Level::Trace,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A level name that is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelError(pub String);

impl fmt::Display for LevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: String = self.0.chars().take(40).collect();
        write!(f, "{shown:?} is not a log level (error, warn, info, debug or trace)")
    }
}

impl std::error::Error for LevelError {}

impl FromStr for Level {
    type Err = LevelError;
    fn from_str(s: &str) -> Result<Level, LevelError> {
        Level::ALL.into_iter().find(|l| l.name().eq_ignore_ascii_case(s)).ok_or_else(|| LevelError(s.to_owned()))
    }
}

/// One line of the agent's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogLine {
    /// When it was logged, milliseconds since the Unix epoch.
    pub ts_ms: u64,
    /// `error`, `warn`, `info`, `debug` or `trace`.
    pub level: String,
    /// The module that logged it.
    pub target: String,
    /// What it says.
    pub message: String,
    /// Its other fields, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, String>,
}

/// The agent's log lines, to whoever follows them. One per process, as the
/// `tracing` subscriber is: [`LogStream::global`].
#[derive(Debug)]
pub struct LogStream {
    lines: broadcast::Sender<Arc<LogLine>>,
    /// Followers, by the level they asked for.
    following: [AtomicUsize; 5],
}

/// A follower of the log: its lines, at the level it asked for, until it
/// is dropped.
#[derive(Debug)]
pub struct Follower {
    stream: &'static LogStream,
    level: Level,
    lines: broadcast::Receiver<Arc<LogLine>>,
}

/// What a follower receives next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// A line.
    Line(Arc<LogLine>),
    /// This many lines were lost: the follower read too slowly.
    Missed(u64),
}

impl Follower {
    /// The next line at or under the level asked for (waits for it), or how
    /// many were lost; `None` once the stream has ended.
    pub async fn next(&mut self) -> Option<Next> {
        loop {
            match self.lines.recv().await {
                Ok(line) if line_level(&line).is_none_or(|l| l <= self.level) => return Some(Next::Line(line)),
                Ok(_) => continue,
                Err(broadcast::error::RecvError::Lagged(n)) => return Some(Next::Missed(n)),
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The level it follows.
    pub fn level(&self) -> Level {
        self.level
    }
}

fn line_level(line: &LogLine) -> Option<Level> {
    line.level.parse().ok()
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stream.following[self.level as usize].fetch_sub(1, Ordering::Relaxed);
    }
}

static GLOBAL: OnceLock<LogStream> = OnceLock::new();

impl LogStream {
    /// The process's log stream.
    pub fn global() -> &'static LogStream {
        GLOBAL.get_or_init(LogStream::new)
    }

    fn new() -> LogStream {
        LogStream { lines: broadcast::channel(BACKLOG).0, following: Default::default() }
    }

    /// Follows the log at `level` (and every less verbose level) from now
    /// on.
    pub fn follow(&'static self, level: Level) -> Follower {
        self.following[level as usize].fetch_add(1, Ordering::Relaxed);
        Follower { stream: self, level, lines: self.lines.subscribe() }
    }

    /// The most verbose level anyone follows now, if anyone does.
    pub fn followed(&self) -> Option<Level> {
        Level::ALL.into_iter().rev().find(|l| self.following[*l as usize].load(Ordering::Relaxed) > 0)
    }

    fn wants(&self, meta: &Metadata<'_>) -> bool {
        self.followed().is_some_and(|l| Level::of(meta.level()) <= l)
    }

    fn publish(&self, line: LogLine) {
        // No follower: nothing to do (and nothing kept).
        let _ = self.lines.send(Arc::new(line));
    }
}

/// The layer that passes log lines to [`LogStream::global`]'s followers,
/// with its own filter: install it beside the process's log output, e.g.
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt as _;
///
/// // Beside the process's own output (a `fmt` layer with its level filter).
/// let subscriber = tracing_subscriber::registry().with(vigil_agent::log_stream::layer());
/// # let _ = subscriber;
/// ```
pub fn layer<S>() -> impl Layer<S>
where
    S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    layer_to(LogStream::global())
}

fn layer_to<S>(stream: &'static LogStream) -> impl Layer<S>
where
    S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    Publish(stream).with_filter(Followed(stream))
}

struct Publish(&'static LogStream);

impl<S: Subscriber> Layer<S> for Publish {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        let mut fields = Fields::default();
        event.record(&mut fields);
        let ts_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        self.0.publish(LogLine {
            ts_ms,
            level: Level::of(meta.level()).name().to_owned(),
            target: cut(meta.target().to_owned()),
            message: fields.message,
            fields: fields.others,
        });
    }
}

/// Lets through what someone follows; asked again at every event, since
/// followers come and go.
struct Followed(&'static LogStream);

impl<S> Filter<S> for Followed {
    fn enabled(&self, meta: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        self.0.wants(meta)
    }

    fn callsite_enabled(&self, _: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
}

#[derive(Default)]
struct Fields {
    message: String,
    others: BTreeMap<String, String>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: String) {
        if field.name() == "message" {
            self.message = cut(value);
        } else if self.others.len() < MAX_FIELDS {
            self.others.insert(field.name().to_owned(), cut(value));
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.chars().take(MAX_TEXT + 1).collect());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, bounded_debug(value));
    }
}

/// `value`'s Debug text, formatted into at most `MAX_TEXT` + 4 bytes (a
/// huge value is never formatted whole).
fn bounded_debug(value: &dyn fmt::Debug) -> String {
    struct Bounded(String);
    impl fmt::Write for Bounded {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let room = (MAX_TEXT + 4).saturating_sub(self.0.len());
            if room == 0 {
                return Err(fmt::Error);
            }
            let mut end = room.min(s.len());
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.0.push_str(&s[..end]);
            Ok(())
        }
    }
    let mut out = Bounded(String::new());
    let _ = fmt::write(&mut out, format_args!("{value:?}"));
    out.0
}

/// `text`, cut to at most [`MAX_TEXT`] bytes at a character boundary.
fn cut(mut text: String) -> String {
    if text.len() > MAX_TEXT {
        let mut end = MAX_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt as _;

    /// A stream of its own for one test (tests run in parallel), and a
    /// subscriber with the layer only, for this thread.
    fn with_layer(f: impl FnOnce(&'static LogStream)) {
        let stream: &'static LogStream = Box::leak(Box::new(LogStream::new()));
        let subscriber = tracing_subscriber::registry().with(layer_to(stream));
        tracing::subscriber::with_default(subscriber, || f(stream));
    }

    #[test]
    fn followers_get_their_level_and_nothing_is_kept_without_one() {
        with_layer(|stream| {
            tracing::info!("before anyone follows");
            let mut info = stream.follow(Level::Info);
            let mut debug = stream.follow(Level::Debug);
            assert_eq!(stream.followed(), Some(Level::Debug));
            tracing::debug!(peer = "10.0.0.2:7946", "a refused packet");
            tracing::info!(member = "b", "b is dead");
            tracing::trace!("too verbose for anyone");
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let take = |f: &mut Follower| rt.block_on(async { f.next().await });
            let Some(Next::Line(l)) = take(&mut debug) else { panic!("a line") };
            assert_eq!((l.level.as_str(), l.message.as_str()), ("debug", "a refused packet"));
            assert_eq!(l.fields.get("peer").map(String::as_str), Some("10.0.0.2:7946"));
            let Some(Next::Line(l)) = take(&mut debug) else { panic!("a line") };
            assert_eq!(l.message, "b is dead");
            // The info follower skips the debug line.
            let Some(Next::Line(l)) = take(&mut info) else { panic!("a line") };
            assert_eq!((l.level.as_str(), l.message.as_str()), ("info", "b is dead"));
            drop(debug);
            assert_eq!(stream.followed(), Some(Level::Info));
            drop(info);
            assert_eq!(stream.followed(), None);
            // Nobody follows: the layer's filter stops every line.
            let quiet = stream.lines.receiver_count();
            tracing::error!("unheard");
            assert_eq!((quiet, stream.lines.len()), (0, 0));
        });
    }

    #[test]
    fn a_slow_follower_is_told_what_it_missed_and_memory_stays_bounded() {
        with_layer(|stream| {
            let mut slow = stream.follow(Level::Warn);
            for i in 0..BACKLOG + 10 {
                tracing::warn!(i, "line");
            }
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let first = rt.block_on(slow.next());
            assert_eq!(first, Some(Next::Missed(10)));
            let Some(Next::Line(l)) = rt.block_on(slow.next()) else { panic!("a line") };
            assert_eq!(l.fields.get("i").map(String::as_str), Some("10"));
        });
    }

    #[test]
    fn huge_and_hostile_text_is_cut_at_a_character_boundary() {
        with_layer(|stream| {
            let mut f = stream.follow(Level::Error);
            let huge = "é".repeat(MAX_TEXT);
            tracing::error!(host = %huge, "{}", "x".repeat(3 * MAX_TEXT));
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let Some(Next::Line(l)) = rt.block_on(f.next()) else { panic!("a line") };
            assert!(l.message.len() <= MAX_TEXT + '…'.len_utf8() && l.message.ends_with('…'));
            let host = &l.fields["host"];
            assert!(host.len() <= MAX_TEXT + 4 && host.starts_with('é'), "{}", host.len());
        });
    }

    #[test]
    fn levels_read_and_refuse_by_name() {
        assert_eq!("DEBUG".parse::<Level>(), Ok(Level::Debug));
        assert_eq!("warn".parse::<Level>().map(|l| l.to_string()), Ok("warn".to_owned()));
        let e = "verbose".parse::<Level>().unwrap_err().to_string();
        assert_eq!(e, "\"verbose\" is not a log level (error, warn, info, debug or trace)");
        let long = "x".repeat(10_000).parse::<Level>().unwrap_err().to_string();
        assert!(long.len() < 120, "{long}");
    }
}

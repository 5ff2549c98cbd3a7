//! The `vigil` command.
//!
//! Argument parsing, the commands' wiring and their terminal presentation.
//! What they run lives in the libraries: the detectors in `vigil-detector`,
//! the lab in `vigil-lab`, the simulator in `vigil-sim`, and the agent (its
//! settings, event records, API and metrics) in `vigil-agent`.

// Standard output is written through `main`'s writer, which names its
// errors; standard error through `say!`, which cannot panic.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::{CheckFailed, closed_stdout, name_stdout};

/// `eprintln!` that never panics: a closed or full standard error loses the
/// line and nothing else (the command's result and exit status stay what
/// they are). Every note, progress line and error goes through it.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::say(format_args!($($arg)*))
    };
}

mod agent;
mod client;
mod cluster;
mod demo;
mod error;
mod fleet;
mod input;
mod json;
mod keys;
mod lab;
mod limits;
mod manual;
mod output;
mod policies;
mod replay;
mod report;
mod sim;

/// Failure detection for distributed systems: accrual detectors, graded
/// policies, trace replay.
#[derive(Debug, Parser)]
#[command(name = "vigil", version, about, long_about = None, propagate_version = true, after_help = EXIT_STATUS)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Replay a heartbeat trace through one detector model and print its level
    /// at every query.
    Replay(Box<replay::ReplayArgs>),
    /// Graded policies at work: a seeded heartbeat stream through every
    /// model, then a registry's policies, brake and pause guard over a small
    /// cluster.
    Policies(policies::DemoArgs),
    /// The lab: scenarios and recorded traces through every detector, with
    /// exact quality-of-service metrics, frontiers and reports.
    Lab(lab::LabArgs),
    /// The membership protocol on a simulated cluster: fault scenarios,
    /// checkers, metrics, and scale runs.
    Sim(sim::SimArgs),
    /// Run one member of a cluster: events on stdout as JSON lines; SIGTERM
    /// or SIGINT leaves.
    Agent(Box<vigil_agent::settings::Flags>),
    /// A small cluster in this process on loopback, with the dashboard and
    /// the API: crash, pause or partition a member and watch detection.
    Cluster(cluster::ClusterArgs),
    /// The members a running agent knows (a client of its HTTP API).
    Members(client::MembersArgs),
    /// Follow a running agent's events (a client of its HTTP API).
    Events(client::EventsArgs),
    /// Follow a running agent's log at a level of your own, whatever its
    /// --log-level (a client of its HTTP API).
    Monitor(client::MonitorArgs),
    /// A running agent's keyring: list, install, use, remove (a client of
    /// its HTTP API).
    Keys(client::KeysArgs),
    /// Join a running agent through more seeds (a client of its HTTP API):
    /// says which members answered at each.
    Join(client::JoinArgs),
    /// Make a running agent leave the cluster for good and stop: a restart
    /// rejoins through its seeds only, not the members it knew (a client of its
    /// HTTP API).
    Leave(client::LeaveArgs),
    /// Force a member believed dead out of the cluster: left everywhere, no
    /// more reconnects (a client of an agent's HTTP API).
    ForceLeave(client::ForceLeaveArgs),
    /// Retune a running agent's graded policy without a restart: threshold,
    /// dwell, rearm, recovery (a client of its HTTP API).
    Tune(client::TuneArgs),
    /// A running agent's tags: shown, or set and deleted, announced to the
    /// cluster (a client of its HTTP API).
    Tags(client::TagsArgs),
    /// A fresh 32-byte key for `--key-file` (base64, from the operating
    /// system's random source).
    Keygen(keys::KeygenArgs),
    /// A completion script for a shell (bash, zsh, fish, elvish,
    /// powershell), on standard output.
    Completions(manual::CompletionsArgs),
    /// The manual page, on standard output; with `--out DIR`, a page for
    /// every command and subcommand.
    Man(manual::ManArgs),
}

/// What the exit status means, for scripts.
const EXIT_STATUS: &str = "Exit status: 0 when the command did what it was asked; 1 when it ran to the end and what it \
checks failed (a simulator checker violation, no detector setting within the bound, QoS requirements that cannot be \
met); 2 for a usage or input error, named on stderr.";

/// Standard output, with its errors named as such: a full disk reads
/// "standard output: No space left on device", not a bare OS message. The
/// error's kind is kept (a closed pipe stays a closed pipe), and it is known
/// for standard output's (see [`closed_stdout`]).
struct Named<W>(W);

impl<W: Write> Write for Named<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(name_stdout)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(name_stdout)
    }
}

/// The command line, with every option value allowed to start with `-`: a
/// negative or odd value (`--threshold -inf`, `--loss -1e-300`,
/// `--max-detection -5s`) reaches vigil's own checks, which name it, instead
/// of being taken for an unknown flag.
fn command() -> clap::Command {
    fn hyphens(cmd: clap::Command) -> clap::Command {
        cmd.mut_args(
            |a| if a.get_action().takes_values() && !a.is_positional() { a.allow_hyphen_values(true) } else { a },
        )
        .mut_subcommands(hyphens)
    }
    hyphens(<Cli as clap::CommandFactory>::command()).version(VERSION.as_str())
}

/// `--version`'s text: the version, the source revision and the build date.
static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(vigil_agent::build::describe);

fn main() -> ExitCode {
    let matches = match command().try_get_matches() {
        Ok(m) => m,
        // A usage error quotes what was typed: shown through `say!`, so
        // that an escape sequence in an argument is shown, not acted on.
        Err(e) if e.use_stderr() => {
            // The same error again without styles: the only escape
            // sequences left in its text are the user's, which say! shows.
            let plain = command().styles(clap::builder::Styles::plain()).try_get_matches();
            let text = plain.err().map_or_else(|| e.render().to_string(), |p| p.render().ansi().to_string());
            say!("{}", text.trim_end());
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
        Err(e) => e.exit(),
    };
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(Named(stdout.lock()));
    // The parallel pool is sized from the environment when first used:
    // checked before anything runs.
    let result = limits::check_thread_env().and_then(|()| match cli.command {
        Command::Replay(args) => replay::run(&args, &mut out),
        Command::Policies(args) => policies::run(&args, &mut out),
        Command::Lab(args) => lab::run(&args, &mut out),
        Command::Sim(args) => sim::run(&args, &mut out),
        Command::Agent(args) => agent::run(&args),
        Command::Cluster(args) => cluster::run(&args, &mut out),
        Command::Members(args) => client::members(&args, &mut out),
        Command::Events(args) => client::events(&args, &mut out),
        Command::Monitor(args) => client::monitor(&args, &mut out),
        Command::Keys(args) => client::keys(&args, &mut out),
        Command::Keygen(args) => keys::keygen(&args, &mut out),
        Command::Join(args) => client::join(&args, &mut out),
        Command::Leave(args) => client::leave(&args, &mut out),
        Command::ForceLeave(args) => client::force_leave(&args, &mut out),
        Command::Tune(args) => client::tune(&args, &mut out),
        Command::Tags(args) => client::tags(&args, &mut out),
        Command::Completions(args) => manual::completions(&args, command(), &mut out),
        Command::Man(args) => manual::man(&args, command(), &mut out),
    });
    let flushed = out.flush();
    match result.and_then(|()| flushed.map_err(anyhow::Error::from)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if closed_stdout(&err) => ExitCode::SUCCESS,
        Err(err) => {
            say!("vigil: {}", bounded(&format!("{err:#}")));
            if err.downcast_ref::<CheckFailed>().is_some() { ExitCode::from(1) } else { ExitCode::from(2) }
        }
    }
}

/// The longest line of an error message, in characters. Messages quote
/// what the user typed; a value of megabytes (a 10 MB field, a scenario
/// name, a TOML line) is cut here whatever path it took, with its length.
const MAX_ERROR_LINE: usize = 300;

/// `message` with every line cut to [`MAX_ERROR_LINE`] characters.
fn bounded(message: &str) -> String {
    message
        .split('\n')
        .map(|line| match line.char_indices().nth(MAX_ERROR_LINE) {
            None => line.to_owned(),
            Some((end, _)) => format!("{}… ({} bytes in all)", &line[..end], line.len()),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

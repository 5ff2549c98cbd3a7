//! What the command says of itself, for packagers and shells: `vigil
//! completions SHELL` prints a completion script, `vigil man` the manual
//! page (or, with `--out DIR`, one page per command and subcommand), both
//! generated from the same clap definition the command parses with, so they
//! cannot drift from it.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use clap_complete::Shell;

/// Arguments of `vigil completions`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell. For bash, e.g.
    /// `vigil completions bash > /usr/share/bash-completion/completions/vigil`.
    shell: Shell,
}

/// Arguments of `vigil man`.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// Write every page (vigil.1, vigil-agent.1, vigil-lab-run.1, ...) into
    /// this directory, made if missing, instead of printing vigil.1. Each
    /// page is written whole or not at all.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// `vigil completions SHELL`.
pub(crate) fn completions(a: &CompletionsArgs, cmd: clap::Command, out: &mut dyn Write) -> Result<()> {
    let mut cmd = cmd;
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "vigil", &mut script);
    out.write_all(&script)?;
    Ok(())
}

/// `vigil man [--out DIR]`.
pub(crate) fn man(a: &ManArgs, cmd: clap::Command, out: &mut dyn Write) -> Result<()> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut pages = Vec::new();
    render(&cmd, &mut pages)?;
    let Some(dir) = &a.out else {
        // The top page first: `vigil man | man -l -`.
        let (_, top) = pages.pop().context("no manual page was rendered")?;
        out.write_all(&top)?;
        return Ok(());
    };
    if dir.exists() && !dir.is_dir() {
        bail!("--out {}: not a directory", dir.display());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("--out {}: cannot make the directory", dir.display()))?;
    for (name, page) in &pages {
        write_whole(&dir.join(name), page)?;
    }
    writeln!(out, "{} manual pages written to {}", pages.len(), dir.display())?;
    Ok(())
}

/// Every page under `cmd`, the subcommands' first, then its own, as
/// (file name, roff text).
fn render(cmd: &clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        render(sub, pages)?;
    }
    let man = clap_mangen::Man::new(cmd.clone())
        .date(vigil_agent::build::DATE)
        .source(format!("vigil {}", vigil_agent::build::VERSION));
    let mut text = Vec::new();
    man.render(&mut text).context("rendering a manual page")?;
    pages.push((man.get_filename(), text));
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename: a reader never sees half a page.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("1.partial");
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

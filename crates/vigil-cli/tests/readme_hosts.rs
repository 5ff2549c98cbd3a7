//! The README's "Three hosts in ten minutes", run as written: every line of
//! its `hN$ ...` block, in the order given, in the namespace of host `hN`
//! (addresses 10.0.0.1 to 10.0.0.3, as the README says), each host in a
//! directory of its own with `vigil` on its PATH. Agents stay running in
//! the background; every other command must succeed, and the `vigil
//! members` lines must show what their comments say, waited for within a
//! bound (a dead member within 20 s, for the README's "about 5 s").
//!
//! Copying the key is the one step the block describes in a comment
//! instead of a command: done here between the first and second lines.
//!
//! Needs root and `ip`; runs only with `VIGIL_NETNS=1`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::netns::{Net, enabled};

/// The agents started, killed when the test ends, whichever way.
struct Agents(Vec<Child>);

impl Drop for Agents {
    fn drop(&mut self) {
        for a in &mut self.0 {
            let _ = a.kill();
            let _ = a.wait();
        }
    }
}

/// The block's lines: (host index, command).
fn readme_lines() -> Vec<(usize, String)> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let section = readme.split("## Three hosts in ten minutes").nth(1).expect("the README has the section");
    let block = section.split("```sh\n").nth(1).and_then(|b| b.split("```").next()).expect("its code block");
    block
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (host, cmd) = l.split_once("$ ").unwrap_or_else(|| panic!("a line without a host prompt: {l}"));
            let i: usize = host.trim_start_matches('h').parse().unwrap_or_else(|_| panic!("host {host} in {l}"));
            (i - 1, cmd.to_owned())
        })
        .collect()
}

/// `cmd` through bash on host `i`, in its directory.
fn command(net: &Net, dirs: &[PathBuf], bin: &Path, i: usize, cmd: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &net.hosts[i], "bash", "-c", cmd]);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    c.current_dir(&dirs[i]).env("PATH", path).env_remove("VIGIL_HTTP_ADDR");
    c
}

/// Runs `vigil members...` until `check` holds of its output, or `bound`.
fn until(
    net: &Net,
    dirs: &[PathBuf],
    bin: &Path,
    i: usize,
    cmd: &str,
    bound: Duration,
    check: impl Fn(&str) -> bool,
) -> String {
    let start = Instant::now();
    loop {
        let o = command(net, dirs, bin, i, cmd).output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        if o.status.success() && check(&out) {
            println!("h{}$ {cmd}\n{out}({:.1?})", i + 1, start.elapsed());
            return out;
        }
        assert!(
            start.elapsed() < bound,
            "h{}$ {cmd}: not as the README says within {bound:?}:\n{out}{}",
            i + 1,
            String::from_utf8_lossy(&o.stderr)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The status column of `name`'s row.
fn status_of(out: &str, name: &str) -> Option<String> {
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .and_then(|l| l.split_whitespace().nth(2).map(str::to_owned))
}

#[test]
fn the_readmes_three_hosts_run_as_written() {
    if !enabled("the_readmes_three_hosts_run_as_written") {
        return;
    }
    let lines = readme_lines();
    assert_eq!(lines.len(), 9, "the test knows nine lines: {lines:?}");
    let net = Net::new("rd", 3, "10.0.0");
    let work = std::env::temp_dir().join(format!("vigil-readme-hosts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let dirs: Vec<PathBuf> = (1..=3).map(|i| work.join(format!("h{i}"))).collect();
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    // `vigil` on the PATH: the binary under test, in a directory of its own.
    let bin = work.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_vigil"), bin.join("vigil")).unwrap();
    let mut agents = Agents(Vec::new());
    for (n, (i, cmd)) in lines.iter().enumerate() {
        let i = *i;
        if cmd.starts_with("vigil agent") {
            // Its log kept, to see where a restarted agent found its cluster.
            let log = std::fs::File::create(work.join(format!("line{n}.log"))).unwrap();
            let child = command(&net, &dirs, &bin, i, cmd).stdout(Stdio::null()).stderr(log).spawn().unwrap();
            agents.0.push(child);
            // Its API up before the next line asks it.
            std::thread::sleep(Duration::from_millis(500));
            continue;
        }
        let names = ["h1 (self)", "h2", "h3"];
        match n {
            4 => {
                until(&net, &dirs, &bin, i, cmd, Duration::from_secs(20), |out| {
                    out.contains("h1 (self)")
                        && ["h2", "h3"].iter().all(|m| status_of(out, m).as_deref() == Some("alive"))
                });
            }
            6 => {
                until(&net, &dirs, &bin, i, cmd, Duration::from_secs(20), |out| {
                    status_of(out, "h2").as_deref() == Some("dead")
                });
            }
            8 => {
                let out = until(&net, &dirs, &bin, i, cmd, Duration::from_secs(30), |out| {
                    status_of(out, "h2").as_deref() == Some("alive") && status_of(out, "h3").as_deref() == Some("alive")
                });
                assert!(out.contains(names[0]), "{out}");
            }
            _ => {
                let o = command(&net, &dirs, &bin, i, cmd).output().unwrap();
                assert!(o.status.success(), "h{}$ {cmd}: {}", i + 1, String::from_utf8_lossy(&o.stderr));
                println!("h{}$ {cmd}", i + 1);
            }
        }
        if n == 0 {
            // "copy cluster.key to h2 and h3, mode 600"
            let key = dirs[0].join("cluster.key");
            let mode = std::fs::metadata(&key).unwrap().permissions();
            assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);
            for d in &dirs[1..] {
                std::fs::copy(&key, d.join("cluster.key")).unwrap();
            }
        }
    }
    // The restarted h2 asked the members its first run kept.
    let log = std::fs::read_to_string(work.join("line7.log")).unwrap();
    assert!(log.contains("2 members known before the restart are asked too"), "{log}");
    let kept = std::fs::read_to_string(dirs[1].join("state/members")).unwrap();
    assert!(kept.contains("10.0.0.1:7946") && kept.contains("10.0.0.3:7946"), "{kept}");
    drop(agents);
    let _ = std::fs::remove_dir_all(&work);
}

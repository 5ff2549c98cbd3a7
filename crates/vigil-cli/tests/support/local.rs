//! `vigil agent` processes on loopback, each on ports the system chose,
//! found from what the agent says on stderr when it starts.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// One `vigil agent` process; killed when dropped.
pub(crate) struct Agent {
    pub(crate) name: String,
    pub(crate) child: Child,
    /// The gossip address.
    pub(crate) addr: String,
    /// The API's base URL.
    pub(crate) url: String,
}

impl Agent {
    /// Starts `vigil agent --name NAME` on loopback, joining through `join`
    /// if given, with `extra` flags; returns once it said where it listens.
    pub(crate) fn start(name: &str, join: Option<&str>, extra: &[&str]) -> Agent {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
        cmd.args(["agent", "--name", name, "--bind", "127.0.0.1:0", "--http", "127.0.0.1:0"]).args(extra);
        if let Some(j) = join {
            cmd.args(["--join", j]);
        }
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("vigil agent starts");
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let (mut addr, mut url) = (None, None);
        let mut line = String::new();
        while addr.is_none() || url.is_none() {
            line.clear();
            assert!(err.read_line(&mut line).unwrap() > 0, "{name}: stderr ended before it said where it listens");
            if line.contains(" started ") {
                addr = line.split(" on ").nth(1).and_then(|s| s.split(',').next()).map(str::to_owned);
            }
            if let Some(rest) = line.split("HTTP API on ").nth(1) {
                url = rest.split_whitespace().next().map(str::to_owned);
            }
        }
        std::thread::spawn(move || for _ in err.lines() {});
        Agent { name: name.to_owned(), child, addr: addr.unwrap(), url: url.unwrap() }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

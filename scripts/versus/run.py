#!/usr/bin/env python3
"""vigil, hashicorp/memberlist and a Serf agent side by side, on one machine.

The same scenarios at the same N, one process per member for each (a
`vigil agent`; `mlpeer`, memberlist 0.2.2's DefaultLANConfig, the Go
program beside this script; or `serf agent`, Debian's Serf 0.9.4 with its
LAN profile, which is memberlist's DefaultLANConfig under Serf's own
gossip), encrypted on every side (vigil's AES-256-GCM seal (envelope 3),
memberlist's and Serf's AES-256-GCM), on 127.0.0.1 or, with
--netns, one network namespace per member on a bridge (10.78.0.0/16, the
bridge in a namespace of its own, nothing changed in the host's). Faults
come from signals and nftables rules; traffic is counted by nftables on the
wire, the same way for each.

Per implementation and scenario it reports: detection of a crash (first,
median and last survivor), accusations and false deaths, packets and bytes
per member-second on the wire in the steady state, CPU (cores) and resident
memory per member.

Serf's events are read from its log as it writes it (unbuffered, timed on
arrival, as vigil's and mlpeer's JSON lines are; within a few milliseconds):
`serf: EventMemberJoin` is up, `serf: EventMemberFailed` dead,
`serf: EventMemberLeave` left, logged at INFO (hence `-log-level info`) by
the Serf library the moment memberlist tells it, and memberlist's `Suspect
NAME has failed` an accusation by this member, as mlpeer reads it. An
`-event-handler` would hear of them later and in batches: the agent
coalesces member events (3 s, or 1 s of quiet) before it runs a handler.

Needs root, nftables, Go with Debian's memberlist and Debian's serf
(scripts/versus/setup.sh installs them) and a release build of vigil. Run
from the repository root:

    sudo scripts/versus/setup.sh
    scripts/versus/run.py --nodes 20 > versus.md
    scripts/versus/run.py --nodes 20 --impls vigil,memberlist,serf --scenarios steady,crash > serf.md
    scripts/versus/run.py --nodes 20 --netns > versus-netns.md

Rapid's experiments (USENIX ATC 2018) are two more scenarios, with vigil
also run with a downing strategy (`vigil+STRATEGY` is `vigil agent
--downing STRATEGY`; `vigil/TRANSPORT`, e.g. `vigil/udp-only`, is `vigil
agent --transport TRANSPORT`, and the two combine as
`vigil/udp-only+keep-majority`; `~FLAG=VALUE` passes any other flag of
`vigil agent`, as in `vigil~push-pull=full`):

    scripts/versus/run.py --nodes 50 --scenarios lossy80,flipflop \
        --impls vigil,vigil+keep-majority,memberlist --fault-secs 240
"""

import argparse
import base64
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY_HEX = "5c" * 32
TABLE = "vigil_versus"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def sh(*args, **kw):
    return subprocess.run(args, check=True, **kw)


def nft(script):
    subprocess.run(["nft", "-f", "-"], input=script.encode(), check=True)


# Serf's log lines that are events: (pattern, event).
SERF_EVENTS = [
    (re.compile(rb"serf: EventMemberJoin: (\S+)"), "up"),
    (re.compile(rb"serf: EventMemberFailed: (\S+)"), "dead"),
    (re.compile(rb"serf: EventMemberLeave: (\S+)"), "left"),
    (re.compile(rb"memberlist: Suspect (\S+) has failed"), "suspected"),
]


def serf_event(line, name):
    """The event a Serf agent's log line tells, in vigil's shape, or None."""
    for pattern, event in SERF_EVENTS:
        m = pattern.search(line)
        if m:
            v = {"event": event, "member": m.group(1).decode(errors="replace")}
            if event == "suspected":
                v["by"] = name
            return v
    return None


class Member:
    def __init__(self, impl, name, argv):
        self.impl, self.name = impl, name
        # Serf logs (its events among them) to stdout and stderr.
        err = subprocess.STDOUT if impl == "serf" else subprocess.DEVNULL
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err)
        self.events = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if self.impl == "serf":
                v = serf_event(line, self.name)
                if v is None:
                    continue
            else:
                try:
                    v = json.loads(line)
                except ValueError:
                    continue
            v["_t"] = time.time()
            with self.lock:
                self.events.append(v)

    def seen(self):
        with self.lock:
            return list(self.events)

    def cpu_ticks(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def vigil_options(impl):
    """The agent's flags an implementation's name asks for:
    vigil[/TRANSPORT][+STRATEGY][~FLAG=VALUE ...], e.g.
    `vigil/udp-only+keep-majority` or `vigil~push-pull=full`."""
    name, *extra = impl.split("~")
    argv = []
    if "+" in name:
        # vigil+keep-majority: a downing strategy decides.
        argv += ["--downing", name.split("+", 1)[1]]
    if "/" in name:
        # vigil/udp-only: another transport.
        argv += ["--transport", name.split("/", 1)[1].split("+", 1)[0]]
    for option in extra:
        # vigil~push-pull=full: any other flag of `vigil agent`.
        flag, sep, value = option.partition("=")
        if not flag or not sep:
            sys.exit(f"--impls: {impl!r}: each ~ takes FLAG=VALUE, as in vigil~push-pull=full")
        argv += [f"--{flag}", value]
    return argv


def start(impl, n, topo, bins):
    members = []
    for i in range(n):
        ip, port = topo.addr(impl, i)
        seed_ip, seed_port = topo.addr(impl, 0)
        name = f"{impl[0]}{i}"
        if impl.startswith("vigil"):
            # No HTTP API: memberlist's side has none either (its cost is measured on its own).
            argv = [bins["vigil"], "agent", "--name", name, "--bind", f"{ip}:{port}", "--key-file", bins["keyfile"], "--http", "off"]
            argv += ["--preset", bins["preset"]]
            argv += vigil_options(impl)
            if i:
                argv += ["--join", f"{seed_ip}:{seed_port}"]
        elif impl == "serf":
            # The RPC port (for serf's CLI) on loopback, outside the counted ranges.
            argv = [bins["serf"], "agent", "-node", name, "-bind", f"{ip}:{port}", "-rpc-addr", f"127.0.0.1:{23000 + i}"]
            argv += ["-encrypt", base64.b64encode(bytes.fromhex(KEY_HEX)).decode(), "-log-level", "info"]
            if i:
                argv += ["-join", f"{seed_ip}:{seed_port}"]
        else:
            argv = [bins["mlpeer"], "-name", name, "-addr", ip, "-port", str(port), "-key", KEY_HEX]
            if i:
                argv += ["-join", f"{seed_ip}:{seed_port}"]
        members.append(Member(impl, name, topo.prefix(i) + argv))
        time.sleep(0.05 if i else 0.3)
    return members


def unconverged(members):
    """Who has not yet seen whom up: {member: missing names}."""
    names = {m.name for m in members}
    out = {}
    for m in members:
        up = {e["member"] for e in m.seen() if e.get("event") == "up"}
        missing = names - {m.name} - up
        if missing:
            out[m.name] = sorted(missing)
    return out


def converged(members):
    return not unconverged(members)


def sum_counters(out, tag):
    """(packets, bytes) by protocol from `nft -j` output, rules commented `tag proto`."""
    c = {"udp": [0, 0], "tcp": [0, 0]}
    for item in json.loads(out)["nftables"]:
        rule = item.get("rule")
        comment = (rule or {}).get("comment", "")
        if not comment.startswith(f"{tag} "):
            continue
        proto = comment.rsplit(" ", 1)[1]
        for e in rule["expr"]:
            if "counter" in e:
                c[proto][0] += e["counter"]["packets"]
                c[proto][1] += e["counter"]["bytes"]
    return c


class Loopback:
    """Every member on 127.0.0.1, vigil from port 20000, memberlist from 21000, serf from 22000."""

    def __init__(self, n):
        self.n = n
        rules = [f"table inet {TABLE} {{", "  chain out { type filter hook output priority 0; policy accept;"]
        for impl in ("vigil", "memberlist", "serf"):
            lo, hi = self.range(impl)
            # Datagrams leave from the members' ports; a stream connection's
            # client side has an ephemeral port, so TCP is counted both ways.
            rules.append(f'    udp sport {lo}-{hi} counter comment "{impl} udp"')
            rules.append(f'    tcp sport {lo}-{hi} counter comment "{impl} tcp"')
            rules.append(f'    tcp dport {lo}-{hi} counter comment "{impl} tcp"')
        rules += ["  }", "  chain in { type filter hook input priority 0; policy accept; }", "}"]
        subprocess.run(["nft", "delete", "table", "inet", TABLE], stderr=subprocess.DEVNULL)
        nft("\n".join(rules))

    def range(self, impl):
        base = 20000 if impl.startswith("vigil") else 22000 if impl == "serf" else 21000
        return base, base + self.n - 1

    def addr(self, impl, i):
        return "127.0.0.1", self.range(impl)[0] + i

    def prefix(self, i):
        return []

    def counters(self, impl):
        out = subprocess.run(["nft", "-j", "list", "table", "inet", TABLE], capture_output=True, check=True).stdout
        return sum_counters(out, "vigil" if impl.startswith("vigil") else impl)

    def fault(self, impl, kind, victim, peer):
        lo, hi = self.range(impl)
        if kind.startswith("loss"):
            per_mille = int(kind[4:]) * 10
            nft(f"add rule inet {TABLE} in th dport {lo}-{hi} numgen random mod 1000 < {per_mille} drop")
        elif kind == "oneway":
            nft(f"add rule inet {TABLE} in udp sport {lo + victim} udp dport {lo + peer} drop")

    def member_fault(self, impl, kind, victims):
        """`lossy`: 80 % of what a victim sends or receives is lost; `deaf`:
        everything sent to it. On loopback a member is its port: a stream a
        victim opens leaves from an ephemeral port, so only its datagrams
        and the streams opened to it are hit (namespaces hit everything)."""
        lo, _ = self.range(impl)
        for v in victims:
            p = lo + v
            if kind == "lossy":
                nft(f"add rule inet {TABLE} in th dport {p} numgen random mod 1000 < 800 drop")
                nft(f"add rule inet {TABLE} in th sport {p} numgen random mod 1000 < 800 drop")
            else:
                nft(f"add rule inet {TABLE} in th dport {p} drop")

    def clear(self):
        subprocess.run(["nft", "flush", "chain", "inet", TABLE, "in"], stderr=subprocess.DEVNULL)

    def close(self):
        subprocess.run(["nft", "delete", "table", "inet", TABLE], stderr=subprocess.DEVNULL)


class Namespaces:
    """One network namespace per member on a bridge; port 7946 everywhere."""

    PORT = 7946

    def __init__(self, n):
        self.n = n
        self.sw = "vsw"
        self.hosts = [f"vs{i}" for i in range(n)]
        self.close()
        # The kernel's ARP table is shared by every namespace: N members
        # resolving each other need about N² entries, beyond the default
        # limit of 1,024 from N = 33 ("neighbor table overflow", and lost
        # connections). Raised for the run, restored after.
        self.neigh = {}
        for k, v in (("gc_thresh1", 8192), ("gc_thresh2", 16384), ("gc_thresh3", 32768)):
            path = f"/proc/sys/net/ipv4/neigh/default/{k}"
            with open(path) as f:
                self.neigh[path] = f.read().strip()
            with open(path, "w") as f:
                f.write(str(max(v, int(self.neigh[path]))))
        sh("ip", "netns", "add", self.sw)
        sh("ip", "-n", self.sw, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.sw, "link", "set", "br0", "up")
        for i, h in enumerate(self.hosts):
            sh("ip", "netns", "add", h)
            sh("ip", "-n", self.sw, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0", "netns", h)
            sh("ip", "-n", self.sw, "link", "set", f"v{i}", "master", "br0", "up")
            sh("ip", "-n", h, "link", "set", "lo", "up")
            sh("ip", "-n", h, "addr", "add", f"{self.ip(i)}/16", "dev", "eth0")
            sh("ip", "-n", h, "link", "set", "eth0", "up")
            p = self.PORT
            self.nft(
                h,
                f"""table inet {TABLE} {{
  chain out {{ type filter hook output priority 0; policy accept;
    udp sport {p} counter comment "all udp"
    tcp sport {p} counter comment "all tcp"
    tcp dport {p} counter comment "all tcp"
  }}
}}
table inet {TABLE}_fault {{
  chain in {{ type filter hook input priority 0; policy accept; }}
  chain out {{ type filter hook output priority 0; policy accept; }}
}}""",
            )

    @staticmethod
    def ip(i):
        return f"10.78.{i // 250}.{i % 250 + 1}"

    @staticmethod
    def nft(ns, script):
        subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=script.encode(), check=True)

    def addr(self, impl, i):
        return self.ip(i), self.PORT

    def prefix(self, i):
        return ["ip", "netns", "exec", self.hosts[i]]

    def counters(self, impl):
        c = {"udp": [0, 0], "tcp": [0, 0]}
        for h in self.hosts:
            out = subprocess.run(
                ["ip", "netns", "exec", h, "nft", "-j", "list", "table", "inet", TABLE], capture_output=True, check=True
            ).stdout
            for proto, (p, b) in sum_counters(out, "all").items():
                c[proto][0] += p
                c[proto][1] += b
        return c

    def fault(self, impl, kind, victim, peer):
        if kind.startswith("loss"):
            per_mille = int(kind[4:]) * 10
            for h in self.hosts:
                self.nft(
                    h,
                    f"add rule inet {TABLE}_fault in meta l4proto {{ udp, tcp }} numgen random mod 1000 < {per_mille} drop",
                )
        elif kind == "oneway":
            self.nft(
                self.hosts[victim], f"add rule inet {TABLE}_fault out ip daddr {self.ip(peer)} udp dport {self.PORT} drop"
            )

    def member_fault(self, impl, kind, victims):
        """As Loopback.member_fault, in the victims' own namespaces."""
        for v in victims:
            h = self.hosts[v]
            if kind == "lossy":
                for chain in ("in", "out"):
                    rule = f"add rule inet {TABLE}_fault {chain} meta l4proto {{ udp, tcp }} numgen random mod 1000 < 800 drop"
                    self.nft(h, rule)
            else:
                self.nft(h, f"add rule inet {TABLE}_fault in meta l4proto {{ udp, tcp }} drop")

    def clear(self):
        for h in self.hosts:
            for chain in ("in", "out"):
                subprocess.run(["ip", "netns", "exec", h, "nft", "flush", "chain", "inet", f"{TABLE}_fault", chain])

    def close(self):
        for ns in self.hosts + [self.sw]:
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        for path, value in getattr(self, "neigh", {}).items():
            with open(path, "w") as f:
                f.write(value)


def steady_state(members, n, topo, impl, args):
    """Traffic, CPU and memory per member once every periodic task is in phase.

    memberlist starts its push-pull timer after a random stagger of up to one
    interval (30 s) and then waits a whole interval, so its first exchange
    comes 30 to 60 s after start: the window opens after 65 s and spans a
    whole number of push-pull intervals.
    """
    time.sleep(args.settle)
    k0 = topo.counters(impl)
    c0, t0 = sum(m.cpu_ticks() for m in members), time.time()
    time.sleep(args.steady)
    k1 = topo.counters(impl)
    c1, t1 = sum(m.cpu_ticks() for m in members), time.time()
    secs = t1 - t0
    rate = lambda proto, i: (k1[proto][i] - k0[proto][i]) / n / secs  # noqa: E731
    return {
        "packets": rate("udp", 0) + rate("tcp", 0),
        "bytes": rate("udp", 1) + rate("tcp", 1),
        "udp_packets": rate("udp", 0),
        "udp_bytes": rate("udp", 1),
        "tcp_packets": rate("tcp", 0),
        "tcp_bytes": rate("tcp", 1),
        "cpu": (c1 - c0) / CLK_TCK / secs / n,
        "rss_mb": statistics.mean(m.rss_kb() for m in members) / 1024,
    }


def run(impl, scenario, args, bins, topo):
    n = args.nodes
    members = start(impl, n, topo, bins)
    try:
        deadline = time.time() + 30
        while not converged(members) and time.time() < deadline:
            time.sleep(0.2)
        if not converged(members):
            missing = unconverged(members)
            exited = [m.name for m in members if m.proc.poll() is not None]
            sample = dict(list(missing.items())[:5])
            raise RuntimeError(
                f"{impl}: {n} members did not converge in 30 s: {len(missing)} still miss someone, "
                f"for example {sample}; exited: {exited}"
            )
        if scenario == "steady":
            return {"steady": steady_state(members, n, topo, impl, args)}
        time.sleep(10)  # settle: joins' extra traffic ends
        victim = members[-1]
        others = members[:-1]
        mark = time.time()
        handles = []
        if scenario == "crash":
            victim.signal(signal.SIGKILL)
            time.sleep(args.crash_wait)
        elif scenario in ("lossy80", "flipflop"):
            return rapid(members, scenario, args, topo, impl, mark)
        elif scenario == "pause":
            victim.signal(signal.SIGSTOP)
            time.sleep(3)
            victim.signal(signal.SIGCONT)
            time.sleep(20)
        else:
            # What each side sends while the fault lasts (counted before
            # any drop: what was offered, not what arrived).
            k0, t0 = topo.counters(impl), time.time()
            topo.fault(impl, scenario, n - 1, 0)
            time.sleep(args.fault_secs)
            k1, t1 = topo.counters(impl), time.time()
            topo.clear()
            traffic = {
                "packets": sum(k1[p][0] - k0[p][0] for p in ("udp", "tcp")) / n / (t1 - t0),
                "bytes": sum(k1[p][1] - k0[p][1] for p in ("udp", "tcp")) / n / (t1 - t0),
            }
            time.sleep(10)
        # What the others said after the mark.
        detect, false_deaths, accusations = [], 0, 0
        for m in others:
            after = [e for e in m.seen() if e["_t"] >= mark]
            dead_victim = [e for e in after if e.get("event") == "dead" and e.get("member") == victim.name]
            if scenario == "crash":
                if dead_victim:
                    detect.append(dead_victim[0]["_t"] - mark)
            else:
                false_deaths += len(dead_victim)
            false_deaths += sum(
                1 for e in after if e.get("event") == "dead" and e.get("member") not in (victim.name, m.name)
            )
            accusations += sum(
                1
                for e in after
                if e.get("event") == "suspected" and e.get("by") == m.name and not (scenario == "crash" and e.get("member") == victim.name)
            )
        return {
            **(traffic if scenario not in ("crash", "pause") else {}),
            "detect": sorted(detect),
            "undetected": len(others) - len(detect) if scenario == "crash" else 0,
            "false_deaths": false_deaths,
            "accusations": accusations,
        }
    finally:
        for m in members:
            try:
                m.signal(signal.SIGCONT)
            except ProcessLookupError:
                pass
            m.stop()
        topo.clear()


def faulty_count(scenario, n):
    """Rapid's experiments as the simulator runs them: 1 % of the members
    (at least one) at 80 % loss; 10 members (or 1 %, the larger, at most a
    tenth) flip-flopping."""
    if scenario == "lossy80":
        return max(1, -(-n // 100))
    return max(1, min(max(10, n // 100), n // 10))


def rapid(members, scenario, args, topo, impl, mark):
    """Rapid's 1 %-at-80 %-loss and flip-flop experiments on real members:
    the last ones are faulty. Reports who was removed (declared dead by a
    healthy member, or downed by itself), how many membership changes each
    healthy member saw, and the accusations."""
    n = len(members)
    k = faulty_count(scenario, n)
    faulty = list(range(n - k, n))
    names = {members[i].name for i in faulty}
    healthy = [m for i, m in enumerate(members) if i not in faulty]
    # What the run costs on the wire, from the first fault to the end.
    k0, t0 = topo.counters(impl), time.time()
    if scenario == "lossy80":
        topo.member_fault(impl, "lossy", faulty)
        time.sleep(args.fault_secs)
        topo.clear()
    else:
        end = time.time() + args.fault_secs
        while time.time() < end:
            topo.member_fault(impl, "deaf", faulty)
            time.sleep(min(20, max(0, end - time.time())))
            topo.clear()
            time.sleep(min(20, max(0, end - time.time())))
    time.sleep(10)
    k1, secs = topo.counters(impl), time.time() - t0
    packets = sum(k1[p][0] - k0[p][0] for p in ("udp", "tcp")) / n / secs
    octets = sum(k1[p][1] - k0[p][1] for p in ("udp", "tcp")) / n / secs
    removed_faulty, removed_healthy, changes, accusations = set(), set(), [], 0
    for m in healthy:
        after = [e for e in m.seen() if e["_t"] >= mark]
        for e in after:
            who = e.get("member")
            if e.get("event") == "dead" or (e.get("event") == "downed" and who == m.name):
                (removed_faulty if who in names else removed_healthy).add(who)
        changes.append(sum(1 for e in after if e.get("event") in ("dead", "up", "left")))
        accusations += sum(1 for e in after if e.get("event") == "suspected" and e.get("by") == m.name)
    for i in faulty:
        if any(e.get("event") == "downed" and e.get("member") == members[i].name for e in members[i].seen()):
            removed_faulty.add(members[i].name)
    return {
        "faulty": k,
        "faulty_removed": len(removed_faulty),
        "healthy_removed": len(removed_healthy),
        "changes": statistics.mean(changes) if changes else 0.0,
        "packets": packets,
        "bytes": octets,
        "detect": [],
        "undetected": 0,
        "false_deaths": 0,
        "accusations": accusations,
    }


def build(tmp, cargo=True):
    if cargo:
        log("building vigil (release)")
        sh("cargo", "build", "--release", "-q", "-p", "vigil-cli", cwd=ROOT)
    log("building mlpeer (memberlist 0.2.2, Debian's Go packages)")
    gopath = os.path.join(tmp, "go")
    os.makedirs(os.path.join(gopath, "src"))
    shutil.copytree(os.path.join(ROOT, "scripts", "versus", "mlpeer"), os.path.join(gopath, "src", "mlpeer"))
    lib = subprocess.run(
        ["dpkg", "-L", "golang-github-hashicorp-memberlist-dev"], capture_output=True, text=True, check=True
    ).stdout
    mlroot = next(l for l in lib.splitlines() if l.endswith("/src/github.com/hashicorp/memberlist/config.go"))
    mlroot = mlroot[: -len("/src/github.com/hashicorp/memberlist/config.go")]
    env = dict(os.environ, GO111MODULE="off", GOCACHE=os.path.join(tmp, "gocache"), GOPATH=f"{gopath}:{mlroot}")
    sh("go", "build", "-o", os.path.join(tmp, "mlpeer"), "mlpeer", cwd=gopath, env=env)
    keyfile = os.path.join(tmp, "keys")
    with open(os.open(keyfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(KEY_HEX + "\n")
    # A copy, so that rebuilding the tree during a run changes nothing.
    vigil = os.path.join(tmp, "vigil")
    shutil.copy(os.path.join(ROOT, "target", "release", "vigil"), vigil)
    serf = shutil.which("serf") or "serf"
    return {"preset": "lan", "vigil": vigil, "mlpeer": os.path.join(tmp, "mlpeer"), "keyfile": keyfile, "serf": serf}


def fmt_detect(r):
    d = r["detect"]
    if not d:
        return "—"
    s = f"{d[0]:.1f} / {statistics.median(d):.1f} / {d[-1]:.1f} s"
    medians = r.get("crash_medians", [])
    if len(medians) > 1:
        s += f" (medians of {len(medians)} crashes: " + ", ".join(f"{m:.1f}" for m in sorted(medians)) + ")"
    if r["undetected"]:
        s += f" ({r['undetected']} never)"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--scenarios", default="steady,crash,pause,loss10,loss40,oneway")
    ap.add_argument("--settle", type=float, default=65, help="seconds after convergence before the steady window")
    ap.add_argument("--steady", type=float, default=120, help="seconds of steady state measured (a multiple of 30)")
    ap.add_argument("--crash-wait", type=float, default=40)
    ap.add_argument("--crash-repeat", type=int, default=5, help="crashes per implementation")
    ap.add_argument("--fault-secs", type=float, default=60)
    ap.add_argument("--netns", action="store_true", help="one network namespace per member on a bridge")
    ap.add_argument("--impls", default="vigil,memberlist", help="which implementations to run (vigil, vigil/TRANSPORT, vigil+STRATEGY, vigil~FLAG=VALUE, memberlist, serf)")
    ap.add_argument("--vigil-preset", default="lan", help="vigil agent --preset (lan, lan-fast, wan, classic)")
    ap.add_argument("--no-build", action="store_true", help="use target/release/vigil as it is, without cargo")
    args = ap.parse_args()
    impls = args.impls.split(",")
    # Every name checked before anything is built or started.
    for impl in impls:
        if impl.startswith("vigil"):
            vigil_options(impl)
        elif impl not in ("memberlist", "serf"):
            sys.exit(f"--impls: {impl!r} is not vigil[/TRANSPORT][+STRATEGY][~FLAG=VALUE], memberlist or serf")
    if os.geteuid() != 0:
        sys.exit("run as root (nftables)")
    tmp = tempfile.mkdtemp(prefix="vigil-versus-")
    bins = build(tmp, cargo=not args.no_build)
    bins["preset"] = args.vigil_preset
    topo = Namespaces(args.nodes) if args.netns else Loopback(args.nodes)
    results = {}
    try:
        for scenario in args.scenarios.split(","):
            # One crash is one sample of the protocol's timers (every
            # survivor hears the verdict within a fraction of a second), so
            # crashes are repeated, the implementations taking turns.
            reps = args.crash_repeat if scenario == "crash" else 1
            for rep in range(reps):
                for impl in impls:
                    log(f"{scenario}: {impl}, N = {args.nodes}" + (f", crash {rep + 1} of {reps}" if reps > 1 else ""))
                    r = run(impl, scenario, args, bins, topo)
                    log(f"  {r}")
                    if (scenario, impl) not in results:
                        results[(scenario, impl)] = dict(r, crash_medians=[])
                    else:
                        acc = results[(scenario, impl)]
                        acc["detect"] = sorted(acc["detect"] + r["detect"])
                        for k in ("undetected", "false_deaths", "accusations"):
                            acc[k] += r[k]
                        for k in ("packets", "bytes"):
                            if k in r:
                                acc[k] = (acc[k] * rep + r[k]) / (rep + 1)
                    if r.get("detect"):
                        results[(scenario, impl)]["crash_medians"].append(statistics.median(r["detect"]))
    finally:
        topo.close()
    names = {
        "crash": "crash (kill -9)",
        "pause": "3 s pause (SIGSTOP)",
        "loss10": f"10 % loss, UDP and TCP, {args.fault_secs:.0f} s",
        "loss20": f"20 % loss, UDP and TCP, {args.fault_secs:.0f} s",
        "loss40": f"40 % loss, UDP and TCP, {args.fault_secs:.0f} s",
        "oneway": f"one-way UDP block, {args.fault_secs:.0f} s",
    }
    where = "one network namespace per member on a bridge" if args.netns else "127.0.0.1"
    preset = "" if args.vigil_preset == "lan" else f", vigil with --preset {args.vigil_preset}"
    print(f"N = {args.nodes} on {where}, one process per member, encrypted on every side{preset}.\n")
    rapids = [(k, r) for k, r in results.items() if k[0] in ("lossy80", "flipflop")]
    faults = [(k, r) for k, r in results.items() if k[0] not in ("steady", "lossy80", "flipflop")]
    if rapids:
        print("Rapid's experiments (the last members faulty; removed: declared dead by a healthy member, or downed by itself):\n")
        print(
            "| experiment | implementation | faulty removed | healthy removed | membership changes per healthy member "
            "| accusations | packets / member·s | bytes / member·s |"
        )
        print("|---|---|---|---|---|---|---|---|")
        rapid_names = {
            "lossy80": f"1 % at 80 % loss both ways, {args.fault_secs:.0f} s",
            "flipflop": f"flip-flop: all inbound lost 20 s on / 20 s off, {args.fault_secs:.0f} s",
        }
        for (scenario, impl), r in rapids:
            print(
                f"| {rapid_names[scenario]} | {impl} | {r['faulty_removed']}/{r['faulty']} | {r['healthy_removed']} | "
                f"{r['changes']:.1f} | {r['accusations']} | {r['packets']:.2f} | {r['bytes']:.0f} |"
            )
        print()
    if faults:
        print(
            "| scenario | implementation | crash → dead at the survivors: first / median / last | accusations | false deaths "
            "| packets / member·s during the fault | bytes / member·s |"
        )
        print("|---|---|---|---|---|---|---|")
    for (scenario, impl), r in faults:
        traffic = f"{r['packets']:.2f} | {r['bytes']:.0f}" if "packets" in r else "— | —"
        print(
            f"| {names.get(scenario, scenario)} | {impl} | {fmt_detect(r) if scenario == 'crash' else '—'} | "
            f"{r['accusations']} | {r['false_deaths']} | {traffic} |"
        )
    if not any(k[0] == "steady" for k in results):
        return
    print(f"\nSteady state per member, {args.steady:.0f} s measured from {args.settle:.0f} s after convergence:\n")
    print("| implementation | packets / s (UDP + TCP) | bytes / s on the wire (UDP + TCP) | CPU (cores) | resident memory |")
    print("|---|---|---|---|---|")
    for impl in impls:
        r = results.get(("steady", impl))
        if r:
            m = lambda k: r["steady"][k]  # noqa: E731
            print(
                f"| {impl} | {m('packets'):.2f} ({m('udp_packets'):.2f} + {m('tcp_packets'):.2f}) | "
                f"{m('bytes'):.0f} ({m('udp_bytes'):.0f} + {m('tcp_bytes'):.0f}) | {m('cpu'):.4f} | {m('rss_mb'):.1f} MB |"
            )


if __name__ == "__main__":
    main()

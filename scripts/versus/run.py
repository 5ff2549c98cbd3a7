#!/usr/bin/env python3
"""vigil and hashicorp/memberlist side by side, on one machine.

The same scenarios at the same N, one process per member for both (a
`vigil agent`, or `mlpeer`: memberlist 0.2.2's DefaultLANConfig, the Go
program beside this script), encrypted on both sides (vigil's
XChaCha20-Poly1305 seal, memberlist's AES-256-GCM), on 127.0.0.1. Faults
come from signals and nftables rules on the loopback interface; traffic is
counted by nftables on the wire, the same way for both.

Per implementation and scenario it reports: detection of a crash (first,
median and last survivor), accusations and false deaths, packets and bytes
per member-second on the wire in the steady state, CPU (cores) and resident
memory per member.

Needs root, nftables, Go with Debian's memberlist (scripts/versus/setup.sh
installs them) and a release build of vigil. Run from the repository root:

    sudo scripts/versus/setup.sh
    scripts/versus/run.py --nodes 20 > versus.md
"""

import argparse
import json
import os
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


class Member:
    def __init__(self, impl, name, argv):
        self.impl, self.name = impl, name
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.events = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
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


def start(impl, n, base, bins, tmp):
    members = []
    for i in range(n):
        port = base + i
        name = f"{impl[0]}{i}"
        if impl == "vigil":
            argv = [bins["vigil"], "agent", "--name", name, "--bind", f"127.0.0.1:{port}", "--key-file", bins["keyfile"]]
            if i:
                argv += ["--join", f"127.0.0.1:{base}"]
        else:
            argv = [bins["mlpeer"], "-name", name, "-port", str(port), "-key", KEY_HEX]
            if i:
                argv += ["-join", f"127.0.0.1:{base}"]
        members.append(Member(impl, name, argv))
        time.sleep(0.05 if i else 0.3)
    return members


def converged(members):
    names = {m.name for m in members}
    for m in members:
        up = {e["member"] for e in m.seen() if e.get("event") == "up"}
        if not names - {m.name} <= up:
            return False
    return True


def counters(lo, hi):
    """(packets, bytes) on the wire from and to the range, by protocol."""
    out = subprocess.run(["nft", "-j", "list", "table", "inet", TABLE], capture_output=True, check=True).stdout
    c = {"udp": [0, 0], "tcp": [0, 0]}
    for item in json.loads(out)["nftables"]:
        rule = item.get("rule")
        comment = (rule or {}).get("comment", "")
        if not comment.startswith(f"count {lo}-{hi} "):
            continue
        proto = comment.rsplit(" ", 1)[1]
        for e in rule["expr"]:
            if "counter" in e:
                c[proto][0] += e["counter"]["packets"]
                c[proto][1] += e["counter"]["bytes"]
    return c


def setup_nft(ranges):
    rules = [f"table inet {TABLE} {{", "  chain out { type filter hook output priority 0; policy accept;"]
    for lo, hi in ranges:
        # Datagrams leave from the members' ports; a stream connection's
        # client side has an ephemeral port, so TCP is counted both ways.
        rules.append(f'    udp sport {lo}-{hi} counter comment "count {lo}-{hi} udp"')
        rules.append(f'    tcp sport {lo}-{hi} counter comment "count {lo}-{hi} tcp"')
        rules.append(f'    tcp dport {lo}-{hi} counter comment "count {lo}-{hi} tcp"')
    rules += ["  }", "  chain in { type filter hook input priority 0; policy accept; }", "}"]
    subprocess.run(["nft", "delete", "table", "inet", TABLE], stderr=subprocess.DEVNULL)
    nft("\n".join(rules))


def fault_rules(kind, lo, hi, victim_port, peer_port):
    """nft rules for a network fault, in the input chain."""
    if kind.startswith("loss"):
        per_mille = int(kind[4:]) * 10
        return [f"th dport {lo}-{hi} numgen random mod 1000 < {per_mille} drop"]
    if kind == "oneway":
        return [f"udp sport {victim_port} udp dport {peer_port} drop"]
    return []


def run(impl, scenario, args, bins, tmp):
    n, base = args.nodes, (20000 if impl == "vigil" else 21000)
    lo, hi = base, base + n - 1
    members = start(impl, n, base, bins, tmp)
    try:
        deadline = time.time() + 30
        while not converged(members) and time.time() < deadline:
            time.sleep(0.2)
        if not converged(members):
            raise RuntimeError(f"{impl}: {n} members did not converge in 30 s")
        time.sleep(5)  # settle: joins' extra traffic ends
        # The steady state: traffic, CPU, memory.
        k0 = counters(lo, hi)
        c0, t0 = sum(m.cpu_ticks() for m in members), time.time()
        time.sleep(args.steady)
        k1 = counters(lo, hi)
        c1, t1 = sum(m.cpu_ticks() for m in members), time.time()
        secs = t1 - t0
        rate = lambda proto, i: (k1[proto][i] - k0[proto][i]) / n / secs  # noqa: E731
        steady = {
            "packets": rate("udp", 0) + rate("tcp", 0),
            "bytes": rate("udp", 1) + rate("tcp", 1),
            "udp_packets": rate("udp", 0),
            "udp_bytes": rate("udp", 1),
            "tcp_packets": rate("tcp", 0),
            "tcp_bytes": rate("tcp", 1),
            "cpu": (c1 - c0) / CLK_TCK / secs / n,
            "rss_mb": statistics.mean(m.rss_kb() for m in members) / 1024,
        }
        victim = members[-1]
        others = members[:-1]
        mark = time.time()
        handles = []
        if scenario == "crash":
            victim.signal(signal.SIGKILL)
            time.sleep(args.crash_wait)
        elif scenario == "pause":
            victim.signal(signal.SIGSTOP)
            time.sleep(3)
            victim.signal(signal.SIGCONT)
            time.sleep(20)
        else:
            rules = fault_rules(scenario, lo, hi, lo + n - 1, lo)
            for r in rules:
                nft(f"add rule inet {TABLE} in {r}")
            time.sleep(args.fault_secs)
            subprocess.run(["nft", "flush", "chain", "inet", TABLE, "in"], check=True)
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
            "steady": steady,
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
        subprocess.run(["nft", "flush", "chain", "inet", TABLE, "in"], stderr=subprocess.DEVNULL)


def build(tmp):
    log("building vigil (release)")
    sh("cargo", "build", "--release", "-q", "-p", "vigil", cwd=ROOT)
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
    with open(keyfile, "w") as f:
        f.write(KEY_HEX + "\n")
    return {"vigil": os.path.join(ROOT, "target", "release", "vigil"), "mlpeer": os.path.join(tmp, "mlpeer"), "keyfile": keyfile}


def fmt_detect(r):
    d = r["detect"]
    if not d:
        return "—"
    s = f"{d[0]:.1f} / {statistics.median(d):.1f} / {d[-1]:.1f} s"
    if r["undetected"]:
        s += f" ({r['undetected']} never)"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--scenarios", default="crash,pause,loss10,loss40,oneway")
    ap.add_argument("--steady", type=float, default=30, help="seconds of steady state measured")
    ap.add_argument("--crash-wait", type=float, default=30)
    ap.add_argument("--fault-secs", type=float, default=60)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (nftables)")
    tmp = tempfile.mkdtemp(prefix="vigil-versus-")
    bins = build(tmp)
    setup_nft([(20000, 20000 + args.nodes - 1), (21000, 21000 + args.nodes - 1)])
    results = {}
    try:
        for scenario in args.scenarios.split(","):
            for impl in ("vigil", "memberlist"):
                log(f"{scenario}: {impl}, N = {args.nodes}")
                results[(scenario, impl)] = run(impl, scenario, args, bins, tmp)
                log(f"  {results[(scenario, impl)]}")
    finally:
        subprocess.run(["nft", "delete", "table", "inet", TABLE], stderr=subprocess.DEVNULL)
    names = {
        "crash": "crash (kill -9)",
        "pause": "3 s pause (SIGSTOP)",
        "loss10": f"10 % loss, UDP and TCP, {args.fault_secs:.0f} s",
        "loss40": f"40 % loss, UDP and TCP, {args.fault_secs:.0f} s",
        "oneway": f"one-way UDP block, {args.fault_secs:.0f} s",
    }
    print(f"N = {args.nodes} on 127.0.0.1, one process per member, encrypted on both sides.\n")
    print("| scenario | implementation | crash → dead: first / median / last | accusations | false deaths |")
    print("|---|---|---|---|---|")
    for (scenario, impl), r in results.items():
        print(f"| {names.get(scenario, scenario)} | {impl} | {fmt_detect(r) if scenario == 'crash' else '—'} | {r['accusations']} | {r['false_deaths']} |")
    print("\nSteady state (before each fault, averaged over the runs), per member:\n")
    print("| implementation | packets / s (UDP + TCP) | bytes / s on the wire (UDP + TCP) | CPU (cores) | resident memory |")
    print("|---|---|---|---|---|")
    for impl in ("vigil", "memberlist"):
        rs = [r["steady"] for (s, i), r in results.items() if i == impl]
        if rs:
            m = lambda k: statistics.mean(x[k] for x in rs)  # noqa: E731
            print(
                f"| {impl} | {m('packets'):.2f} ({m('udp_packets'):.2f} + {m('tcp_packets'):.2f}) | "
                f"{m('bytes'):.0f} ({m('udp_bytes'):.0f} + {m('tcp_bytes'):.0f}) | {m('cpu'):.4f} | {m('rss_mb'):.1f} MB |"
            )


if __name__ == "__main__":
    main()

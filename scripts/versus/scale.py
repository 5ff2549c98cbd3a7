#!/usr/bin/env python3
"""vigil and memberlist at hundreds of real processes on one host.

For each N (200, 500 and 1,000 by default) and each implementation, N
processes on 127.0.0.1 (vigil from port 30000, memberlist from 31000; the
same members, keys, encryption and nftables counters as run.py, beside
it, in a table of its own), started one after another every --pace seconds, each joining
through the first. It reports:

- the cold start: when every member's view was complete (every other
  member up), from the first start and from the last, and Rapid's count of
  distinct cluster sizes each member saw on the way (its view's size after
  each change; events stamped within the same millisecond are one change);
- the steady state once every view is complete (after --settle seconds):
  packets, bytes (UDP + TCP), CPU and memory (resident; proportional, the
  program's shared pages divided among its processes; anonymous) per
  member over
  --steady seconds, by the same nftables counters and /proc readings as
  run.py's;
- a crash (kill -9 of the last member): when each survivor declared it
  dead (first, median, last) and how many never did within --crash-wait;
- false deaths and accusations from convergence to the end;
- the host's limits that bind at this scale, and what the script raised.

With --hosts distinct each member binds an address of its own in 127/8
(127.1.0.1 and on) instead of 127.0.0.1: what separate hosts look like to
anything that counts per source address (vigil's budget for members a
stranger proposes is per IP address: 32 per 10 s by default).

Event times are the members' own stamps (`ts_ms`, the same clock for
both), so a slow reader here does not delay them; a vigil agent whose
reader falls behind by more than its queue drops lines and says so (a
`missed` record), which the report counts.

Needs root (nftables), a release build of vigil and Go with Debian's
memberlist (scripts/versus/setup.sh). From the repository root:

    scripts/versus/scale.py --nodes 200,500,1000 --impls vigil,memberlist > scale.md
"""

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as versus  # noqa: E402

MB = 1024 * 1024
# Its own nftables table and ports, so that it never meets a run.py run.
versus.TABLE = "vigil_scale"


class Ports(versus.Loopback):
    """run.py's loopback layout, moved: vigil from port 30000, memberlist
    from 31000 (below the kernel's ephemeral ports, from 32768)."""

    def __init__(self, n, hosts="one"):
        self.hosts = hosts
        super().__init__(n)

    def range(self, impl):
        base = 30000 if impl == "vigil" else 31000
        return base, base + self.n - 1

    def addr(self, impl, i):
        """127.0.0.1, or with --hosts distinct one loopback address per
        member (127.1.0.1, 127.1.0.2, ...: all of 127/8 is this host's),
        as members on separate hosts would have; the ports stay distinct,
        so the counters are the same."""
        ip, port = super().addr(impl, i)
        if self.hosts == "distinct":
            ip = f"127.1.{i // 250}.{i % 250 + 1}"
        return ip, port


class Proc(versus.Member):
    """One member, as run.py's, but with its event lines kept raw (parsed
    later, so that reading keeps up with a thousand writers)."""

    def __init__(self, impl, name, argv):
        self.raw, self.parsed = [], 0
        super().__init__(impl, name, argv)

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.raw.append(line)

    def seen(self):
        """Every event so far, parsed once: dicts with `t` in seconds."""
        with self.lock:
            new = self.raw[self.parsed :]
            self.parsed = len(self.raw)
        for line in new:
            try:
                v = json.loads(line)
            except ValueError:
                continue
            v["t"] = v.get("ts_ms", 0) / 1000
            self.events.append(v)
        return self.events

    def smaps_kb(self):
        """(proportional set size, anonymous) in kB: what the member costs
        beside others running the same program (resident memory counts the
        program's shared pages in full for each)."""
        pss = anon = 0
        with open(f"/proc/{self.proc.pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
                elif line.startswith("Anonymous:"):
                    anon = int(line.split()[1])
        return pss, anon


def argv_of(impl, i, topo, bins):
    ip, port = topo.addr(impl, i)
    seed_ip, seed_port = topo.addr(impl, 0)
    name = f"{impl[0]}{i}"
    if impl == "vigil":
        argv = [bins["vigil"], "agent", "--name", name, "--bind", f"{ip}:{port}", "--key-file", bins["keyfile"]]
        argv += ["--http", "off", "--preset", "lan"]
    else:
        argv = [bins["mlpeer"], "-name", name, "-addr", ip, "-port", str(port), "-key", versus.KEY_HEX]
    if i:
        argv += ["--join" if impl == "vigil" else "-join", f"{seed_ip}:{seed_port}"]
    return name, argv


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "?"


def limits(n, impls):
    """The host's limits at this scale: raises what this script may (its own
    open files: a pipe per member), refuses to start what memory cannot
    hold, and returns what it found as lines for the report."""
    lines = []
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * n + 256
    if soft < need:
        new = need if hard == resource.RLIM_INFINITY else min(hard, need)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        lines.append(f"open files of this script (a pipe per member): soft limit {soft} raised to {new}")
    else:
        lines.append(f"open files of this script: soft limit {soft}, enough for {need}")
    for what, path in [
        ("kernel.pid_max", "/proc/sys/kernel/pid_max"),
        ("kernel.threads-max", "/proc/sys/kernel/threads-max"),
        ("net.core.somaxconn (the seed's accept queue)", "/proc/sys/net/core/somaxconn"),
        ("net.core.rmem_default (a UDP socket's receive buffer)", "/proc/sys/net/core/rmem_default"),
        ("net.ipv4.ip_local_port_range (streams' client ports)", "/proc/sys/net/ipv4/ip_local_port_range"),
    ]:
        lines.append(f"{what}: {read(path)}")
    avail = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    # Resident memory per member measured at N = 200 (scale.py): vigil
    # 10.7 MB, memberlist 13.0 MB; half as much again is asked for, one
    # implementation at a time.
    per = max({"vigil": 16, "memberlist": 20}[i] for i in impls)
    need_mem = n * per * MB
    lines.append(f"memory available {avail / MB / 1024:.1f} GiB, asked for {need_mem / MB / 1024:.1f} GiB ({n} × {per} MB)")
    if avail and avail < need_mem:
        sys.exit(f"N = {n} needs about {need_mem / MB / 1024:.1f} GiB and {avail / MB / 1024:.1f} GiB is available")
    return lines


def views(members, names):
    """Per member: when its view became complete (or None), and the distinct
    sizes its view took (itself included)."""
    out = {}
    for m in members:
        alive, sizes, complete, stamp = set(), set(), None, None
        for e in m.seen():
            ev, who = e.get("event"), e.get("member")
            if ev == "up" and who != m.name:
                alive.add(who)
            elif ev in ("dead", "left") and who != m.name:
                alive.discard(who)
            else:
                continue
            # Events stamped within the same millisecond are one change:
            # the size counted is the one after the last of them.
            if stamp is not None and e.get("ts_ms") != stamp:
                sizes.add(size)
            stamp, size = e.get("ts_ms"), len(alive) + 1
            if complete is None and alive >= names - {m.name}:
                complete = e["t"]
        if stamp is not None:
            sizes.add(size)
        out[m.name] = (complete, len(sizes))
    return out


def one(impl, n, args, bins):
    topo = Ports(n, args.hosts)
    members = []
    names = set()
    try:
        t_first = time.time()
        for i in range(n):
            name, argv = argv_of(impl, i, topo, bins)
            names.add(name)
            members.append(Proc(impl, name, argv))
            time.sleep(args.pace if i else 0.3)
        t_last = time.time()
        versus.log(f"{impl}: {n} started in {t_last - t_first:.0f} s")
        deadline = t_last + args.converge_within
        while time.time() < deadline:
            v = views(members, names)
            done = sum(1 for c, _ in v.values() if c is not None)
            if done == n:
                break
            time.sleep(2)
        v = views(members, names)
        done = [c for c, _ in v.values() if c is not None]
        exited = [m.name for m in members if m.proc.poll() is not None]
        r = {
            "n": n,
            "impl": impl,
            "started_in": t_last - t_first,
            "complete": len(done),
            "exited": exited,
            "sizes": sorted(s for _, s in v.values()),
        }
        if len(done) < n:
            versus.log(f"{impl}: {len(done)} of {n} views complete {args.converge_within:.0f} s after the last start")
            return r
        converged = max(done)
        r["from_first"] = converged - t_first
        r["from_last"] = converged - t_last
        versus.log(f"{impl}: every view complete {r['from_first']:.0f} s after the first start")
        steady_args = argparse.Namespace(settle=args.settle, steady=args.steady)
        r["steady"] = versus.steady_state(members, n, topo, impl, steady_args)
        mem = [m.smaps_kb() for m in members]
        r["pss_mb"] = statistics.mean(p for p, _ in mem) / 1024
        r["anon_mb"] = statistics.mean(a for _, a in mem) / 1024
        versus.log(f"{impl}: steady {r['steady']}")
        victim, others = members[-1], members[:-1]
        mark = time.time()
        victim.signal(signal.SIGKILL)
        end = mark + args.crash_wait
        while time.time() < end:
            if all(any(e.get("event") == "dead" and e.get("member") == victim.name for e in m.seen()) for m in others):
                break
            time.sleep(1)
        detect = []
        for m in others:
            d = [e["t"] for e in m.seen() if e.get("event") == "dead" and e.get("member") == victim.name and e["t"] >= mark]
            if d:
                detect.append(d[0] - mark)
        r["detect"] = sorted(detect)
        r["undetected"] = len(others) - len(detect)
        r["false_deaths"] = sum(
            1
            for m in others
            for e in m.seen()
            if e["t"] >= converged and e.get("event") == "dead" and e.get("member") not in (victim.name, m.name)
        )
        r["accusations"] = sum(
            1
            for m in others
            for e in m.seen()
            if e["t"] >= converged and e.get("event") == "suspected" and e.get("by") == m.name and e.get("member") != victim.name
        )
        r["missed"] = sum(e.get("count", 0) for m in members for e in m.seen() if e.get("event") == "missed")
        versus.log(f"{impl}: crash {fmt_detect(r)}")
        return r
    finally:
        for m in members:
            m.stop()
        topo.close()


def fmt_detect(r):
    d = r.get("detect") or []
    if not d:
        return "—"
    s = f"{d[0]:.1f} / {statistics.median(d):.1f} / {d[-1]:.1f} s"
    if r["undetected"]:
        s += f" ({r['undetected']} never)"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="200,500,1000", help="cluster sizes, comma-separated (at most 1000)")
    ap.add_argument("--impls", default="vigil,memberlist", help="vigil, memberlist, or both")
    ap.add_argument("--memberlist-max", type=int, default=1000, help="the largest N memberlist is run at")
    ap.add_argument("--pace", type=float, default=0.02, help="seconds between two starts")
    ap.add_argument("--converge-within", type=float, default=240, help="seconds after the last start")
    ap.add_argument("--settle", type=float, default=30, help="seconds after convergence before the steady window")
    ap.add_argument("--steady", type=float, default=180, help="seconds of steady state measured")
    ap.add_argument("--crash-wait", type=float, default=60)
    ap.add_argument(
        "--hosts",
        choices=["one", "distinct"],
        default="one",
        help="every member on 127.0.0.1 (one), or each on an address of its own in 127/8 (distinct)",
    )
    ap.add_argument("--no-build", action="store_true", help="use target/release/vigil as it is, without cargo")
    args = ap.parse_args()
    sizes = [int(x) for x in args.nodes.split(",")]
    impls = args.impls.split(",")
    if any(not 2 <= n <= 1000 for n in sizes):
        sys.exit(f"--nodes {args.nodes}: each size must be 2 to 1000 (the port ranges hold 1,000 each)")
    if any(i not in ("vigil", "memberlist") for i in impls):
        sys.exit(f"--impls {args.impls}: vigil and memberlist only")
    if os.geteuid() != 0:
        sys.exit("run as root (nftables)")
    tmp = tempfile.mkdtemp(prefix="vigil-scale-")
    bins = versus.build(tmp, cargo=not args.no_build)
    results, host = [], {}
    for n in sizes:
        host[n] = limits(n, impls)
        for impl in impls:
            if impl == "memberlist" and n > args.memberlist_max:
                continue
            versus.log(f"== {impl}, N = {n}")
            r = one(impl, n, args, bins)
            # Everything, as it comes: a run stopped halfway keeps what it measured.
            versus.log(f"{impl}, N = {n}: {r}")
            results.append(r)
    where = "127.0.0.1" if args.hosts == "one" else "an address of its own in 127/8"
    print(f"One process per member on {where}, encrypted on every side; started every {args.pace} s, each joining")
    print(f"through the first; steady state {args.steady:.0f} s from {args.settle:.0f} s after every view was complete.\n")
    print(
        "| N | implementation | every view complete: after the first start (after the last) | distinct sizes per member: "
        "fewest / median / most | packets / member·s (UDP + TCP) | bytes / member·s (UDP + TCP) | CPU (cores) / member "
        "| resident memory (proportional; anonymous) | crash → dead: first / median / last | false deaths | accusations |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        s = r["sizes"]
        sizes_txt = f"{s[0]} / {statistics.median(s):.0f} / {s[-1]}" if s else "—"
        if "steady" not in r:
            print(
                f"| {r['n']} | {r['impl']} | {r['complete']} of {r['n']} complete {args.converge_within:.0f} s after the "
                f"last start (exited: {len(r['exited'])}) | {sizes_txt} | | | | | | | |"
            )
            continue
        m = r["steady"]
        print(
            f"| {r['n']} | {r['impl']} | {r['from_first']:.0f} s ({r['from_last']:.0f} s) | {sizes_txt} | "
            f"{m['packets']:.2f} ({m['udp_packets']:.2f} + {m['tcp_packets']:.2f}) | "
            f"{m['bytes']:.0f} ({m['udp_bytes']:.0f} + {m['tcp_bytes']:.0f}) | {m['cpu']:.4f} | {m['rss_mb']:.1f} MB ({r['pss_mb']:.1f}; {r['anon_mb']:.1f}) | "
            f"{fmt_detect(r)} | {r['false_deaths']} | {r['accusations']} |"
        )
    missed = sum(r.get("missed", 0) for r in results)
    if missed:
        print(f"\nEvent lines the agents dropped because this script read too slowly: {missed}.")
    print("\nThe host:\n")
    for n, lines in host.items():
        print(f"- N = {n}: " + "; ".join(lines))


if __name__ == "__main__":
    main()

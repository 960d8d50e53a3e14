"""Run jobs in a network namespace of their own and record every way out they try.

Started as ``unshare --net --mount python netns_watch.py PLAN.json`` (tests/test_no_phone_home.py);
prints one JSON report line. Inside the new namespaces (nothing here outlives them):

- loopback is up, and every IPv4 and IPv6 address is routed to it, so a connect to any address
  sends a real packet there instead of failing at once, and a packet socket on ``lo`` sees it;
- ``/etc/resolv.conf`` names 127.0.0.1, ``/etc/hosts`` holds only localhost, the hosts line of
  ``/etc/nsswitch.conf`` is ``files dns`` and nscd's socket is hidden, so every name lookup
  reaches the resolver here, which logs it (on port 53 of every address, so a resolver address
  compiled into a library is caught too) and answers with a documentation address, so what
  the job does next with the name (a connect) is logged as well;
- probes (a lookup, a datagram and a TCP connect to a documentation address) check that both
  loggers see what they must before any job starts.

A job is ``{"name", "argv", "ready"}``: it is ready when its stdout holds ``ready``. Once every
job is ready the plan's ``idle`` seconds pass, then each job still running gets SIGTERM.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

PACKET_OUTGOING = 4  # linux/if_packet.h: a packet this host sent
ETH_P_ALL = 3
PROBE_NAME = "netns-watch-probe.invalid"
PROBE_ADDRESS = ("192.0.2.1", 9)  # TEST-NET-1 (RFC 5737), discard port
ANSWER_V4 = ipaddress.ip_address("192.0.2.53").packed  # every name, as far as jobs can tell
ANSWER_V6 = ipaddress.ip_address("2001:db8::53").packed
START = time.monotonic()


def now() -> float:
    return round(time.monotonic() - START, 2)


# --- the namespace ---------------------------------------------------------------------------


def isolate(work: Path) -> list[str]:
    """Route everything to loopback and point every name lookup at the resolver here; returns
    notes on what could not be done (the report carries them)."""
    notes: list[str] = []
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(["ip", "route", "add", "local", "0.0.0.0/0", "dev", "lo"], check=True)
    six = subprocess.run(["ip", "-6", "route", "add", "local", "::/0", "dev", "lo"],
                         capture_output=True, text=True, check=False)
    if six.returncode != 0:  # IPv6 off in this kernel: nothing can be sent over it either
        notes.append(f"no IPv6 route: {six.stderr.strip()}")
    nsswitch = Path("/etc/nsswitch.conf")
    lines = nsswitch.read_text().splitlines() if nsswitch.exists() else []
    hosts_line = "hosts: files dns"
    lines = [hosts_line if ln.split(":")[0].strip() == "hosts" else ln for ln in lines]
    replacements = {
        "/etc/resolv.conf": "nameserver 127.0.0.1\n",
        "/etc/hosts": "127.0.0.1 localhost\n::1 localhost\n",
        "/etc/nsswitch.conf": "\n".join(lines if hosts_line in lines else [*lines, hosts_line])
        + "\n",
    }
    for target, text in replacements.items():
        copy = work / Path(target).name
        copy.write_text(text)
        if Path(target).exists():  # a missing resolv.conf already means 127.0.0.1
            subprocess.run(["mount", "--bind", str(copy), target], check=True)
    for nscd in {Path(p).resolve() for p in ("/run/nscd", "/var/run/nscd")}:
        if nscd.is_dir():  # glibc asks a running nscd before it reads nsswitch
            subprocess.run(["mount", "-t", "tmpfs", "none", str(nscd)], check=True)
    return notes


# --- the resolver ----------------------------------------------------------------------------


def question(message: bytes) -> tuple[str, int]:
    """The first question of a DNS message: its name and type (1 A, 28 AAAA, ...)."""
    labels, at = [], 12
    while at < len(message) and message[at]:
        size = message[at]
        labels.append(message[at + 1 : at + 1 + size].decode("ascii", "replace"))
        at += 1 + size
    kind = struct.unpack("!H", message[at + 1 : at + 3])[0] if at + 3 <= len(message) else 0
    return ".".join(labels), kind


def answer(message: bytes) -> bytes:
    """The reply to a query, its question echoed: an A query gets 192.0.2.53 and an AAAA query
    2001:db8::53 (documentation addresses, routed to loopback here, where the packet socket
    sees the connect that follows); any other type "no such name"."""
    if len(message) < 12:
        return b""
    flags = struct.unpack("!H", message[2:4])[0] & 0x7900  # the query's opcode and RD kept
    end = 12
    while end < len(message) and message[end]:
        end += 1 + message[end]
    asked = message[12 : end + 5]
    address = {1: ANSWER_V4, 28: ANSWER_V6}.get(question(message)[1])
    if address is None:  # QR, RA, NXDOMAIN
        return message[:2] + struct.pack("!HHHHH", 0x8083 | flags, 1, 0, 0, 0) + asked
    record = struct.pack("!HHHIH", 0xC00C, 1 if len(address) == 4 else 28, 1, 60, len(address))
    return (message[:2] + struct.pack("!HHHHH", 0x8080 | flags, 1, 1, 0, 0) + asked + record
            + address)


class Watch:
    """The resolver on port 53 (UDP and TCP, IPv4 and IPv6) and the packet socket on ``lo``,
    served by one thread; ``queries`` and ``packets`` are what they saw."""

    def __init__(self) -> None:
        self.queries: list[dict[str, Any]] = []
        self.packets: list[dict[str, Any]] = []
        self.selector = selectors.DefaultSelector()
        for family, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
            for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
                try:
                    sock = socket.socket(family, kind)
                except OSError:  # no IPv6 here
                    continue
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((host, 53))
                if kind == socket.SOCK_STREAM:
                    sock.listen(16)
                self.selector.register(sock, selectors.EVENT_READ, kind)
        sniffer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        sniffer.bind(("lo", 0))
        self.selector.register(sniffer, selectors.EVENT_READ, "packet")
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            for key, _ in self.selector.select():
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    if key.data == "packet":
                        self._packet(*sock.recvfrom(65535))
                    elif key.data == socket.SOCK_DGRAM:
                        message, peer = sock.recvfrom(4096)
                        self._query(message, "udp")
                        sock.sendto(answer(message), peer)
                    else:
                        self._tcp_query(sock.accept()[0])
                except OSError:
                    continue

    def _query(self, message: bytes, transport: str) -> None:
        name, kind = question(message)
        self.queries.append({"t": now(), "name": name, "type": kind, "via": transport})

    def _tcp_query(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(2)
            size = struct.unpack("!H", conn.recv(2, socket.MSG_WAITALL))[0]
            message = conn.recv(size, socket.MSG_WAITALL)
            self._query(message, "tcp")
            reply = answer(message)
            conn.sendall(struct.pack("!H", len(reply)) + reply)

    def _packet(self, frame: bytes, where: tuple[Any, ...]) -> None:
        if where[2] != PACKET_OUTGOING:  # each packet on lo is seen leaving and arriving
            return
        seen = outbound(frame[14:])  # after the (all-zero) Ethernet header of lo
        if seen is not None:
            self.packets.append({"t": now(), **seen})


def outbound(packet: bytes) -> dict[str, Any] | None:
    """What a packet is, when it opens a way out to a non-loopback address: a TCP SYN, a UDP
    datagram, an ICMP echo request or any other protocol; None for loopback traffic and for
    replies (TCP segments after the SYN, ICMP errors)."""
    version = packet[0] >> 4 if packet else 0
    if version == 4:
        proto, header = packet[9], (packet[0] & 0x0F) * 4
        dst, echo = ipaddress.ip_address(packet[16:20]), 8
    elif version == 6:
        proto, header = packet[6], 40
        dst, echo = ipaddress.ip_address(packet[24:40]), 128
    else:
        return None
    if dst.is_loopback:
        return None
    body = packet[header:]
    port = struct.unpack("!H", body[2:4])[0] if proto in (6, 17) and len(body) >= 4 else None
    if proto == 17 and body[:2] == b"\x00\x35":  # the resolver here answering, from port 53
        return None
    if proto == 6 and (len(body) < 14 or body[13] & 0x12 != 0x02):  # SYN without ACK only
        return None
    if proto in (1, 58) and (not body or body[0] != echo):
        return None
    return {"proto": {6: "tcp", 17: "udp", 1: "icmp", 58: "icmp6"}.get(proto, str(proto)),
            "dst": str(dst), "port": port}


def self_check(watch: Watch) -> dict[str, bool]:
    """A lookup through the C library, a datagram and a TCP connect to a documentation
    address: each must show up, or a job's would not either."""
    with contextlib.suppress(OSError):  # whether it was logged is what counts
        socket.getaddrinfo(PROBE_NAME, 443)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"probe", PROBE_ADDRESS)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, contextlib.suppress(OSError):
        sock.connect(PROBE_ADDRESS)  # refused: nothing listens there
    seen: dict[str, bool] = {}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (seen and all(seen.values())):
        time.sleep(0.1)
        probes = [p["proto"] for p in watch.packets if p["dst"] == PROBE_ADDRESS[0]]
        seen = {"dns": any(q["name"] == PROBE_NAME for q in watch.queries),
                "udp": "udp" in probes, "tcp": "tcp" in probes}
    watch.queries[:] = [q for q in watch.queries if q["name"] != PROBE_NAME]
    watch.packets[:] = [p for p in watch.packets if p["dst"] != PROBE_ADDRESS[0]]
    return seen


# --- the jobs --------------------------------------------------------------------------------


def run_jobs(plan: dict[str, Any], work: Path) -> dict[str, Any]:
    """Start every job, wait until all are ready (or one exits or the start timeout passes),
    idle, then stop them; what each did, by name."""
    procs: dict[str, subprocess.Popen[bytes]] = {}
    report: dict[str, dict[str, Any]] = {}
    try:
        for job in plan["jobs"]:
            out, err = work / f"{job['name']}.out", work / f"{job['name']}.err"
            with out.open("wb") as o, err.open("wb") as e:
                procs[job["name"]] = subprocess.Popen(job["argv"], stdout=o, stderr=e)
            report[job["name"]] = {"ready_at": None}
        deadline = time.monotonic() + plan["start_timeout"]
        while time.monotonic() < deadline:
            for job in plan["jobs"]:
                entry = report[job["name"]]
                if entry["ready_at"] is None and job["ready"] in (
                        work / f"{job['name']}.out").read_text(errors="replace"):
                    entry["ready_at"] = now()
            waiting = [n for n, e in report.items() if e["ready_at"] is None]
            if not waiting or any(procs[n].poll() is not None for n in waiting):
                break
            time.sleep(0.2)
        if all(e["ready_at"] is not None for e in report.values()):
            time.sleep(plan["idle"])
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in procs.items():
            try:
                report[name]["rc"] = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                report[name]["rc"] = proc.wait()
            for stream in ("out", "err"):
                text = (work / f"{name}.{stream}").read_text(errors="replace")
                report[name][stream] = text[-4000:]
    return report


def main() -> int:
    plan = json.loads(Path(sys.argv[1]).read_text())
    work = Path(plan["workdir"])
    notes = isolate(work)
    watch = Watch()
    checked = self_check(watch)
    jobs = run_jobs(plan, work) if all(checked.values()) else {}
    time.sleep(0.5)  # the last packets of a job that just stopped
    print(json.dumps({"self_check": checked, "notes": notes, "jobs": jobs, "stopped_at": now(),
                      "queries": watch.queries, "packets": watch.packets}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

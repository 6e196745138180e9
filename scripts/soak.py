#!/usr/bin/env python3
# The driver behind scripts/soak: the daemon under abuse for a bounded count and time,
# on loopback only (the test server on 127.0.0.1, the paced ALSA card), reporting
# reconnections made out of those attempted, crashes, results lost, and descriptors and
# RSS at the start and the end. Easy to get wrong: a request whose client left before
# its result is not a lost result, so a half line is sent on a connection of its own;
# the killed server's successor must be warm (Python and aiohttp imported) or the
# restart measures Python's start-up; every process started here must end.
"""Soaks parlour-satellite on loopback; see BENCHMARKS.md ("Soak")."""

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, TRIP_QUESTION, Bench, BenchError, open_fds, proc_status  # noqa: E402

# A test server that imports everything, then waits for a line on stdin before it
# binds: the spare that takes over the moment the running one is killed.
SPARE = """
import runpy, sys
path = sys.argv[1]
sys.argv = sys.argv[1:]
import aiohttp.web  # the slow part, done before the go
sys.stdin.readline()
runpy.run_path(path, run_name="__main__")
"""


class Tally:
    """What the soak counts; a lock because the phases' threads count at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rows = {}

    def add(self, key, n=1):
        with self.lock:
            self.rows[key] = self.rows.get(key, 0) + n

    def get(self, key):
        return self.rows.get(key, 0)


class Soak(Bench):
    def __init__(self, args):
        args.capture_seconds = args.stream_seconds = 0
        args.callgrind_seconds = 0
        super().__init__(args)
        self.tally = Tally()
        self.crashes = []
        self.memory = []  # (what, (fds, threads, RSS, anonymous memory) at the start, at the end)
        self.phases = []  # (what, seconds it took)
        self.trend = []  # the streaming daemon's anonymous memory (kB) at each quarter of the restarts
        self.garbage_trends = {}  # the record and push daemons' anonymous memory (kB) after each round of garbage

    # -------------------------------------------------------------- the server, killable

    def start_server(self, port=0, knobs=None):
        """A test server on 127.0.0.1 (`port` 0: any); returns it once it listens."""
        spare = self.start_spare(port, knobs)
        return self.go(spare)

    def start_spare(self, port, knobs=None):
        """A test server started as far as it can go without binding; `go` lets it bind."""
        out = open(self.path(f"server-{time.monotonic_ns()}.out"), "w+")
        process = self.procs.start(
            [self.args.python, "-c", SPARE, os.path.join(ROOT, "Tests/Server/parlour_test_server.py"),
             "--host", "127.0.0.1", "--port", str(port), "--token", self.token, "--knobs", json.dumps(knobs or {})],
            stdin=subprocess.PIPE, stdout=out, stderr=subprocess.DEVNULL)
        process.out = out
        return process

    def go(self, spare, timeout=20):
        spare.stdin.write(b"\n")
        spare.stdin.flush()
        until = time.monotonic() + timeout
        while True:
            spare.out.seek(0)
            text = spare.out.read()
            if "LISTENING" in text:
                self.port = int(text.split()[1])
                self.server = spare
                return spare
            if spare.poll() is not None or time.monotonic() > until:
                raise BenchError(f"A test server did not start on port {self.port}.")
            time.sleep(0.01)

    # -------------------------------------------------------------- the daemons' clocks

    def clocks(self):
        """A time namespace whose CLOCK_MONOTONIC and CLOCK_BOOTTIME start --uptime-days on, held by a
        sleeping process that every daemon joins (nsenter execs the daemon in place: its pid is its own);
        and, with --clock-jumps, libfaketime's file for the daemons' wall clock, which `jump` moves."""
        self.prefix, self.preload = [], {}
        if self.args.uptime_days:
            seconds = str(int(self.args.uptime_days * 86400))
            holder = self.procs.start(["unshare", "--time", "--monotonic", seconds, "--boottime", seconds, "--fork",
                                       "--kill-child=SIGKILL", "sleep", "infinity"],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            until = time.monotonic() + 10
            children = ""
            while not children and time.monotonic() < until:
                children = open(f"/proc/{holder.pid}/task/{holder.pid}/children").read().split()
                time.sleep(0.01)
            if not children:
                raise BenchError("unshare --time made no namespace (Linux 5.6 and root are needed).")
            self.prefix = ["nsenter", f"--time=/proc/{children[0]}/ns/time", "--"]
        if self.args.clock_jumps:
            library = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
            if not os.path.exists(library):
                raise BenchError("libfaketime is not installed (scripts/deps --test installs faketime).")
            self.preload = {"LD_PRELOAD": library, "FAKETIME_TIMESTAMP_FILE": self.path("wall-clock"),
                            "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
            self.jumps = 0
            self.jump()

    # The wall clock's round: five years on, back to 1970, a year behind, true again (libfaketime's words).
    JUMPS = [f"+{5 * 365 * 86400}", "@1970-01-02 00:00:00", f"-{365 * 86400}", "+0"]

    def jump(self):
        """Moves the daemons' wall clock to the next place in its round."""
        if not self.args.clock_jumps:
            return
        with open(self.path("wall-clock") + ".new", "w") as f:
            f.write(self.JUMPS[self.jumps % len(self.JUMPS)] + "\n")
        os.replace(self.path("wall-clock") + ".new", self.path("wall-clock"))
        self.jumps += 1
        self.tally.add("wall clock jumps")

    def prepare(self):
        super().prepare()  # the ALSA card, speech, the first server (replaced below: it cannot be killed warm)
        self.clocks()
        self.procs.stop(self.server)
        self.start_server()
        # The stream's microphone keeps a copy of what it captured in a FIFO that this
        # driver reads: closing the reader makes snd_pcm_readi fail with -EIO, as an
        # unplugged card does; opening it again plugs it back (AudioCaptureTests does the same).
        os.mkfifo(self.path("copy.fifo"))
        with open(self.path("asound.conf"), "a") as f:
            f.write(f'pcm.soakmic {{ type file slave.pcm "clock" file "{self.path("copy.fifo")}" '
                    f'infile "{self.path("mic.raw")}" format "raw" }}\n')
        self.plug()

    def plug(self):
        """Opens a reader of the microphone's copy and drains it, so the writer never blocks."""
        self.reader = os.open(self.path("copy.fifo"), os.O_RDONLY | os.O_NONBLOCK)
        fd = self.reader

        def drain():
            while True:
                try:
                    if not os.read(fd, 65536):
                        time.sleep(0.05)
                except BlockingIOError:
                    time.sleep(0.02)
                except OSError:
                    return  # closed: unplugged
        threading.Thread(target=drain, daemon=True).start()

    def unplug(self):
        os.close(self.reader)

    def test_route(self, path, body=None, wait=10.0):
        """A call to the test server's /_test routes (GET, or POST with `body`), tried again while
        its port is closed: its simulated restart (used below) closes it for a moment."""
        until = time.monotonic() + wait
        while True:
            request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method="POST" if body is not None else "GET",
                                             data=json.dumps(body).encode() if body is not None else None)
            try:
                with urllib.request.urlopen(request, timeout=5) as answer:
                    return json.load(answer)
            except ConnectionRefusedError:
                pass
            except urllib.error.URLError as error:
                if not isinstance(error.reason, ConnectionRefusedError):
                    raise
            if time.monotonic() > until:
                raise BenchError(f"The test server on port {self.port} did not answer {path} within {wait:g} s.")
            time.sleep(0.05)

    def binary_messages(self):
        return sum(1 for e in self.test_route("/_test/log")["socket"] if e.get("dir") == "in" and e.get("kind") == "binary")

    def audio_arrived(self):
        return self.binary_messages() > 0

    # -------------------------------------------------------------- daemons

    def daemon(self, name, settings, microphone):
        d = self.path(name)
        env = self.daemon_env(d, settings, microphone=microphone)
        # parlourctl runs with `env`, without libfaketime: a Swift program under it sees no arguments.
        daemon, notify, _ = self.start_daemon(d, {**env, **self.preload}, self.prefix)
        self.await_notify(notify, daemon, "READY=1", 15)
        notify.close()
        daemon.env, daemon.dir, daemon.name = env, d, name
        return daemon

    def alive(self, daemon, during):
        """False, and the crash noted, when the daemon has exited."""
        if daemon.poll() is None:
            return True
        self.crashes.append(f"{daemon.name} exited {daemon.returncode} during {during}; see {daemon.dir}/daemon.log (--keep)")
        return False

    def footprint(self, daemon):
        # RssAnon beside VmRSS: the daemon unmaps its start-up's code 10 s after start
        # (ResidentPages), which takes megabytes off VmRSS and would hide a leak of as much.
        status = proc_status(daemon.pid)
        threads = len(os.listdir(f"/proc/{daemon.pid}/task"))
        return open_fds(daemon.pid), threads, status["VmRSS"], status["RssAnon"]

    def settle(self, daemon, what, first):
        time.sleep(3)  # pool threads wind down, queued writes finish
        self.memory.append((what, first, self.footprint(daemon)))

    def log(self, daemon):
        return open(os.path.join(daemon.dir, "daemon.log"), errors="replace").read()

    def await_text(self, daemon, text, count, timeout):
        """Waits until the daemon's log holds `text` at least `count` times."""
        until = time.monotonic() + timeout
        while self.log(daemon).count(text) < count:
            if time.monotonic() > until or not self.alive(daemon, f"waiting for '{text}'"):
                return False
            time.sleep(0.05)
        return True

    # -------------------------------------------------------------- 1. the server killed, the control socket abused

    def restarts_and_control(self):
        # No wake word while streaming: the servers only take the audio in.
        quiet = {"wake": "never"}
        self.procs.stop(self.server)
        self.start_server(self.port, quiet)
        daemon = self.daemon("stream", {"transport": "stream", "wake": "server", "server": {"retryMs": 1000}}, "soakmic")
        if not self.await_audio(daemon, 20):
            raise BenchError("The streaming daemon sent no audio to begin with; see --keep.")
        first = self.footprint(daemon)
        abuse = threading.Thread(target=self.control_abuse, args=(daemon,), daemon=True)
        abuse.start()
        port = self.port
        spare = self.start_spare(port, quiet)
        for number in range(1, self.args.restarts + 1):
            if not self.alive(daemon, f"server restart {number}"):
                break
            self.tally.add("restarts attempted")
            os.kill(self.server.pid, signal.SIGKILL)
            self.procs.stop(self.server)
            self.go(spare)
            spare = self.start_spare(port, quiet)  # warms while the daemon reconnects
            if self.await_audio(daemon, 30):
                self.tally.add("reconnections made")
            if number % 5 == 0:
                self.jump()
            if number * 4 % self.args.restarts < 4 and self.alive(daemon, f"server restart {number}"):
                self.trend.append(proc_status(daemon.pid)["RssAnon"])
            if number % 20 == 0:
                print(f"  {number} restarts…", file=sys.stderr, flush=True)
        self.procs.stop(spare)
        abuse.join()
        if self.alive(daemon, "the end of the restarts"):
            self.settle(daemon, "streaming daemon (restarts, control abuse, device cycles)", first)
        return daemon

    def await_audio(self, daemon, timeout):
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            try:
                if self.audio_arrived():
                    return True
            except OSError:
                pass
            if daemon.poll() is not None:
                return False
            time.sleep(0.05)
        return False

    def knob(self, **patch):
        self.test_route("/_test/knobs", patch)

    def control_abuse(self, daemon):
        """--malformed bad requests over many connections, and --clients clients at once,
        each answered line checked off; a half line then a disconnect on a connection of its own."""
        socket_path = daemon.env["PARLOUR_SATELLITE_SOCKET"]
        rng = random.Random(8)
        sent = 0
        while sent < self.args.malformed:
            if rng.random() < 0.1:
                self.half_line(socket_path, rng)
                sent += 1
                continue
            lines = [self.bad_line(rng) for _ in range(min(rng.randint(1, 40), self.args.malformed - sent))]
            sent += len(lines)
            self.converse(socket_path, lines, "malformed")
        # Many clients at once, each with a good request and a bad one.
        threads = [threading.Thread(target=self.converse, args=(
            socket_path, [json.dumps({"v": 1, "id": n, "cmd": "status"}), self.bad_line(random.Random(n))], "concurrent"))
            for n in range(self.args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    @staticmethod
    def bad_line(rng):
        kind = rng.randrange(8)
        if kind == 0:  # random bytes, no newline among them
            return bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))).replace(b"\n", b" ") or b"x"
        if kind == 1:  # over 64 KiB
            return b"{" + b"x" * (64 * 1024 + rng.randint(1, 8000))
        if kind == 2:  # a version not spoken
            return json.dumps({"v": rng.choice([0, 2, 99, "1", None, 1.5]), "id": "w", "cmd": "status"})
        if kind == 3:  # not JSON
            return '{"v": 1, "id": "broken", "cmd": "status"'
        if kind == 4:  # JSON, not an object
            return json.dumps(rng.choice([[1, 2], "status", 42, None]))
        if kind == 5:  # an unknown command
            return json.dumps({"v": 1, "id": "u", "cmd": "self-destruct"})
        if kind == 6:  # wrong types
            return json.dumps({"v": 1, "id": {"nested": True}, "cmd": 7})
        return json.dumps({"v": 1, "id": "r", "cmd": "room"})  # a command missing its argument

    def converse(self, socket_path, lines, what):
        """Sends each line, half-closes, reads results until the daemon closes; every
        line must have exactly one result."""
        self.tally.add(f"{what} requests", len(lines))
        data = b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines)
        results = 0
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(30)
                s.connect(socket_path)
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                stream = s.makefile("rb")
                for line in stream:
                    result = json.loads(line)
                    if result.get("status") in ("completed", "error", "cancelled"):
                        results += 1
        except (OSError, ValueError) as error:
            self.tally.add(f"{what} connection failures")
            self.tally.add(f"note: {type(error).__name__}: {error}"[:120])
        self.tally.add(f"{what} results", results)

    def half_line(self, socket_path, rng):
        self.tally.add("half lines then a disconnect")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(socket_path)
                s.sendall(b'{"v": 1, "id": "half", "cmd": "sta'[:rng.randint(1, 30)])
        except OSError:
            self.tally.add("half line connection failures")

    # -------------------------------------------------------------- 2. the microphone vanishing

    def device_cycles(self, daemon):
        first = self.footprint(daemon)
        failed_text = "The microphone soakmic cannot be used"
        works_text = "The microphone soakmic works."
        for number in range(1, self.args.device_cycles + 1):
            if not self.alive(daemon, f"device cycle {number}"):
                return
            self.tally.add("device removals")
            self.jump()
            failures, works = self.log(daemon).count(failed_text), self.log(daemon).count(works_text)
            self.unplug()
            if not self.await_text(daemon, failed_text, failures + 1, 15):
                self.plug()
                continue
            self.tally.add("device removals noticed")
            self.plug()
            if self.await_text(daemon, works_text, works + 1, 40) and self.await_fresh_audio(daemon, 20):
                self.tally.add("device returns recovered")
        self.settle(daemon, "streaming daemon, after the microphone cycles", first)

    def await_fresh_audio(self, daemon, timeout):
        """Audio the server received after this call (the log grows)."""
        before = self.binary_messages()
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            if self.binary_messages() > before:
                return True
            if daemon.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    # -------------------------------------------------------------- 3. a server answering garbage

    HTTP_FAULTS = [{"garbage": "json"}, {"garbage": "html"}, {"garbage": "wrong-types"}, {"garbage": "wav"},
                   {"garbage": "truncated-wav"}, {"closeMidAnswer": True}, {"status": 500}, {"status": 503},
                   {"status": 404}, {"refuseToken": True}, {"delayMs": 300}, {}]
    SOCKET_FAULTS = [{"socketBadWav": True}, {"socketBadWav": "truncated"}, {"socketHugeText": True},
                     {"socketHugeBinary": True}, {"socketUnknownType": True}, {"socketSilentDrop": True},
                     {"socketStopAfterWavMs": 50}, {"audioFormat": "pcm24"}, {"audioExtraChunk": True},
                     {"socketCloseAfterReady": True}, {"socketCloseAfterReady": "abort"}, {"delayMs": 300}, {}]

    def garbage(self):
        record = self.daemon("record", {"transport": "record"}, "benchmic")
        # The start is read once the daemon has answered a question of each kind from a well
        # server: what it loads for its first answer is not growth.
        self.reset_knobs({})
        self.ask(record, ["ask", "what time is it"], "a well server")
        self.ask(record, ["listen"], "a well server")
        time.sleep(3)
        first = self.footprint(record)
        trend = self.garbage_trends.setdefault("record daemon", [first[3]])
        for _ in range(self.args.garbage_rounds):
            for faults in self.HTTP_FAULTS:
                self.jump()
                self.reset_knobs(faults)
                for _ in range(self.args.garbage_asks):
                    self.ask(record, ["ask", "what time is it"], f"http {faults}")
                self.ask(record, ["listen"], f"http {faults}")
                if not self.alive(record, f"garbage {faults}"):
                    break
            if record.poll() is not None:
                break
            trend.append(proc_status(record.pid)["RssAnon"])
        if record.poll() is None:
            self.settle(record, "record daemon (HTTP garbage)", first)
        self.procs.stop(record)

        self.reset_knobs({"audioMs": 300})
        push = self.daemon("push", {"transport": "stream", "wake": "push", "audio": {"silenceMs": 400}}, "benchtripmic")
        self.await_text(push, "Connected to the server's /listen.", 1, 20)
        self.ask(push, ["listen"], "a well server")
        time.sleep(3)
        first = self.footprint(push)
        trend = self.garbage_trends.setdefault("push daemon", [first[3]])
        for _ in range(self.args.garbage_rounds):
            for faults in self.SOCKET_FAULTS:
                self.jump()
                # Some faults act right after `ready`: a simulated restart makes the daemon connect anew.
                self.reset_knobs({"audioMs": 300, "restartDownMs": 100, **faults})
                self.reconnect(push)
                for _ in range(self.args.garbage_turns):
                    self.ask(push, ["listen"], f"socket {faults}")
                if not self.alive(push, f"garbage {faults}"):
                    break
                # Back to a well server and a fresh connection, so one fault does not spill into the next.
                self.reset_knobs({"audioMs": 300, "restartDownMs": 100})
                self.reconnect(push)
            if push.poll() is not None:
                break
            trend.append(proc_status(push.pid)["RssAnon"])
        if push.poll() is None:
            self.settle(push, "push daemon (socket garbage)", first)
        self.procs.stop(push)

    def reconnect(self, daemon):
        """Drops the server's connections (its simulated restart) and waits for the daemon to connect again."""
        text = "Connected to the server's /listen."
        connected = self.log(daemon).count(text)
        self.test_route("/_test/restart", {})
        self.await_text(daemon, text, connected + 1, 20)

    def reset_knobs(self, knobs):
        self.test_route("/_test/reset", {})
        if knobs:
            self.knob(**knobs)

    def ask(self, daemon, command, what):
        """One parlourctl request: it must print exactly one result and exit 0, 1 or 3."""
        self.tally.add("garbage requests")
        try:
            done = subprocess.run([os.path.join(self.bin, "parlourctl"), "--json"] + command, env=daemon.env,
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90)
        except subprocess.TimeoutExpired:
            self.tally.add(f"note: no result within 90 s for {' '.join(command[:1])} under {what}")
            return
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        try:
            results = [json.loads(line) for line in lines]
        except ValueError:
            results = []
        if done.returncode in (0, 1, 3) and len(results) == 1 and results[0].get("status"):
            self.tally.add("garbage results")
            outcome = results[0].get("error") or results[0].get("reason") or results[0]["status"]
            self.tally.add(f"outcome: {outcome}")
        else:
            self.tally.add(f"note: {' '.join(command[:1])} under {what} exited {done.returncode} with {done.stdout.strip()[:80]!r}")


def report(soak, host, elapsed, args):
    t = soak.tally
    lines = [f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}", f"Command: {args.command}", f"Took {elapsed:.0f} s", ""]
    lines += [f"- {name}: {value}" for name, value in host]
    lines += [f"- Load average at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}", ""]
    lines += [f"- {what}: {seconds:.0f} s" for what, seconds in soak.phases] + [""]
    lost_control = (t.get("malformed requests") - t.get("malformed results")
                    + t.get("concurrent requests") - t.get("concurrent results"))
    lost_garbage = t.get("garbage requests") - t.get("garbage results")
    rows = [
        ("Server killed and restarted while streaming: reconnections made / attempted",
         f"{t.get('reconnections made')} / {t.get('restarts attempted')}"),
        ("Malformed control requests: results / sent", f"{t.get('malformed results')} / {t.get('malformed requests')}"),
        ("… and half lines then a disconnect (no result owed)", str(t.get("half lines then a disconnect"))),
        (f"{args.clients} clients at once: results / sent", f"{t.get('concurrent results')} / {t.get('concurrent requests')}"),
        ("Garbage-answering server: results / requests", f"{t.get('garbage results')} / {t.get('garbage requests')}"),
        ("Microphone removed: noticed / removals", f"{t.get('device removals noticed')} / {t.get('device removals')}"),
        ("Microphone back: streaming again / returns", f"{t.get('device returns recovered')} / {t.get('device removals')}"),
        ("The daemons' uptime (a time namespace; 0: the machine's own)", f"{args.uptime_days:g} days"),
        ("The daemons' wall clock jumped (by years, both ways)", str(t.get("wall clock jumps"))),
        ("Crashes (must be 0)", str(len(soak.crashes))),
        ("Results lost (must be 0)", str(lost_control + lost_garbage)),
    ]
    lines += ["| What | Count |", "| --- | ---: |"] + [f"| {a} | {b} |" for a, b in rows]
    lines += ["", "| Daemon | Descriptors start → end | Threads start → end | RSS start → end | of which anonymous (what a leak grows) |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for what, (fd0, th0, rss0, anon0), (fd1, th1, rss1, anon1) in soak.memory:
        lines.append(f"| {what} | {fd0} → {fd1} | {th0} → {th1} | {rss0 / 1024:.2f} → {rss1 / 1024:.2f} MiB "
                     f"| {anon0 / 1024:.2f} → {anon1 / 1024:.2f} MiB |")
    if soak.trend:
        lines += ["", "The streaming daemon's anonymous memory at each quarter of the restarts: "
                  + " → ".join(f"{kb / 1024:.2f}" for kb in soak.trend) + " MiB"]
    for what, kbs in soak.garbage_trends.items():
        lines += ["", f"The {what}'s anonymous memory at its start and after each round of garbage: "
                  + " → ".join(f"{kb / 1024:.2f}" for kb in kbs) + " MiB"]
    outcomes = sorted((k[len("outcome: "):], v) for k, v in t.rows.items() if k.startswith("outcome: "))
    if outcomes:
        lines += ["", "Results of the garbage requests: " + ", ".join(f"{k} {v}" for k, v in outcomes)]
    notes = [k[len("note: "):] for k in t.rows if k.startswith("note: ")]
    lines += [f"Note: {n}" for n in notes + soak.crashes]
    return "\n".join(lines), len(soak.crashes) == 0 and lost_control + lost_garbage == 0


def main():
    from bench import machine
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True, help="The folder holding parlour-satellite and parlourctl.")
    parser.add_argument("--python", required=True, help="The test venv's python, for the test server.")
    parser.add_argument("--restarts", type=int, default=200, help="Times the server is killed and restarted.")
    parser.add_argument("--malformed", type=int, default=10000, help="Malformed control requests.")
    parser.add_argument("--clients", type=int, default=100, help="Control clients at once.")
    parser.add_argument("--device-cycles", type=int, default=20, help="Times the microphone is removed and returned.")
    parser.add_argument("--garbage-asks", type=int, default=3, help="`ask` requests under each HTTP fault.")
    parser.add_argument("--garbage-turns", type=int, default=2, help="Push turns under each socket fault.")
    parser.add_argument("--garbage-rounds", type=int, default=2,
                        help="Times every fault is served, with each daemon's anonymous memory read after each time.")
    parser.add_argument("--uptime-days", type=float, default=3 * 365,
                        help="The daemons run in a time namespace this many days after boot (0: the machine's own uptime).")
    parser.add_argument("--clock-jumps", type=int, default=1, choices=(0, 1),
                        help="1: the daemons' wall clock jumps by years, both ways, every 5 server restarts and between phases.")
    parser.add_argument("--time-limit", type=float, default=900, help="Give up after this many seconds.")
    parser.add_argument("--keep", action="store_true", help="Keep the working folder (the daemons' logs).")
    parser.add_argument("--command", default="scripts/soak", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.runs, args.idle_seconds, args.trips, args.stream_runs, args.callgrind_runs = 0, 0, 0, 0, 0
    args.wyoming = False

    def interrupted(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)
    signal.alarm(int(args.time_limit))
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(BenchError(f"Over the time limit ({args.time_limit:g} s).")))

    host = machine()
    soak = Soak(args)
    began = time.monotonic()
    try:
        soak.prepare()
        what = (f"The server killed {args.restarts} times while streaming, with {args.malformed} malformed "
                f"control requests and {args.clients} clients at once")
        print(f"{what}…", file=sys.stderr, flush=True)
        t = time.monotonic()
        daemon = soak.restarts_and_control()
        soak.phases.append((what, time.monotonic() - t))
        what = f"The microphone removed and returned {args.device_cycles} times"
        print(f"{what}…", file=sys.stderr, flush=True)
        t = time.monotonic()
        if daemon.poll() is None:
            soak.device_cycles(daemon)
        soak.procs.stop(daemon)
        soak.phases.append((what, time.monotonic() - t))
        what = "A server answering garbage"
        print(f"{what}…", file=sys.stderr, flush=True)
        t = time.monotonic()
        soak.garbage()
        soak.phases.append((what, time.monotonic() - t))
    except (BenchError, OSError, subprocess.SubprocessError) as error:
        print(f"soak: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("soak: interrupted; everything it started has been stopped.", file=sys.stderr)
        return 130
    finally:
        signal.alarm(0)
        soak.close()
    text, ok = report(soak, host, time.monotonic() - began, args)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

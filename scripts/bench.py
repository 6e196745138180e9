#!/usr/bin/env python3
# The driver behind scripts/bench: starts the test server, the paced ALSA card
# and a fresh daemon per run, measures it from outside (/proc, the notify
# socket, the daemon's debug lines) and prints each figure's median and spread.
# Easy to get wrong: every process started here must end, whatever fails; the
# kernel's utime+stime is in clock ticks (10 ms), too coarse alone for a
# daemon that uses well under 1 % of a core, so per-thread schedstat is read too.
"""Measures parlour-satellite on loopback; see BENCHMARKS.md for the figures."""

import argparse
import base64
import json
import os
import platform
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUESTION = "what time is it in the kitchen"
# The answer's audio as the real server's default voice makes it: 24 kHz float32.
REPLY = {"audioFormat": "float32", "audioRate": 24000, "audioMs": 3000}
TICK = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    """A step that did not work; the message says which and why."""


# ------------------------------------------------------------------ figures

class Figure:
    """One printed row: a name, a unit, how many decimals, and its samples."""

    def __init__(self, key, title, unit, decimals):
        self.key, self.title, self.unit, self.decimals = key, title, unit, decimals
        self.samples = []


# The rows, in print order. A new measurement adds its rows here and appends
# samples to them by key; the report needs nothing else.
FIGURES = [
    Figure("ready_ms", "Start of the process to READY=1", "ms", 1),
    Figure("idle_hwm_mb", "Peak RSS idle (VmHWM, READY then idle)", "MiB", 2),
    Figure("idle_rss_mb", "RSS idle (VmRSS, READY then idle)", "MiB", 2),
    Figure("idle_anon_mb", "… of which anonymous (heap, stacks)", "MiB", 2),
    Figure("idle_file_mb", "… of which file-backed (code and data of the binary and its libraries)", "MiB", 2),
    Figure("trip_hwm_mb", "Peak RSS after a round trip (VmHWM)", "MiB", 2),
    Figure("trip_rss_max_mb", "Highest RSS sampled during a round trip (VmRSS)", "MiB", 2),
    Figure("cpu_ticks_s_per_min", "CPU per minute of capture (utime+stime, clock ticks)", "s/min", 3),
    Figure("cpu_s_per_min", "CPU per minute of capture (threads' schedstat, ns)", "s/min", 3),
    Figure("cpu_percent", "The same, as a share of one core", "%", 2),
    Figure("answer_to_alsa_ms", "Answer's last byte in to its first frame handed to ALSA", "ms", 2),
    Figure("answer_decode_ms", "… of which reading the answer (JSON, base64)", "ms", 2),
    Figure("idle_cpu_s_per_min", "CPU per minute idle, after READY (context)", "s/min", 3),
    Figure("trip_wall_s", "A whole round trip, as parlourctl sees it (context)", "s", 2),
    Figure("voice_bytes_per_s", "Bytes posted to /voice per second of audio (context)", "B/s", 0),
    # Stream: the daemon holding /listen (wake "server"), and wyoming-satellite in the same run.
    Figure("stream_cpu_ticks_s_per_min", "Stream: CPU per minute (utime+stime, clock ticks)", "s/min", 3),
    Figure("stream_cpu_s_per_min", "Stream: CPU per minute (threads' schedstat, ns)", "s/min", 3),
    Figure("stream_hwm_mb", "Stream: peak RSS (VmHWM)", "MiB", 2),
    Figure("stream_bytes_per_s", "Stream: binary bytes received by /listen per second (raw audio: 32000)", "B/s", 0),
    Figure("wyoming_cpu_ticks_s_per_min", "wyoming-satellite + arecord: CPU per minute (utime+stime)", "s/min", 3),
    Figure("wyoming_cpu_s_per_min", "wyoming-satellite + arecord: CPU per minute (schedstat)", "s/min", 3),
    Figure("wyoming_hwm_mb", "wyoming-satellite + arecord: peak RSS (sum of VmHWM)", "MiB", 2),
    Figure("wyoming_bytes_per_s", "wyoming-satellite: audio payload bytes received per second (context)", "B/s", 0),
    Figure("ratio_cpu", "Ratio ours/theirs, CPU (schedstat)", "×", 3),
    Figure("ratio_rss", "Ratio ours/theirs, peak RSS", "×", 3),
]
FIG = {f.key: f for f in FIGURES}


def mb(kb):
    return kb / 1024


# ------------------------------------------------------------------ processes

class Processes:
    """Every process this driver started, so that all of them end."""

    def __init__(self):
        self.running = []

    def start(self, args, **kw):
        process = subprocess.Popen(args, **kw)
        self.running.append(process)
        return process

    def stop(self, process, grace=5.0):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process in self.running:
            self.running.remove(process)

    def stop_all(self):
        for process in reversed(list(self.running)):
            self.stop(process)


def run(args, **kw):
    done = subprocess.run(args, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        raise BenchError(f"{' '.join(args[:3])} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return done.stdout


# ------------------------------------------------------------------ /proc

def proc_file(pid, name):
    """A file of /proc/PID; the process having ended is a BenchError that says so."""
    try:
        with open(f"/proc/{pid}/{name}") as f:
            return f.read()
    except FileNotFoundError:
        raise BenchError(f"The daemon (pid {pid}) has ended in the middle of a run; run with --keep to see its log.")


def proc_status(pid):
    """VmHWM, VmRSS and its parts (RssAnon: the heap; RssFile: mapped code) in kB."""
    fields = {}
    for line in proc_file(pid, "status").splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
            fields[key] = int(value.split()[0])
    if "VmRSS" not in fields:  # a zombie has no memory left to show
        raise BenchError(f"The daemon (pid {pid}) has ended in the middle of a run; run with --keep to see its log.")
    return fields


def cpu_seconds(pid):
    """utime+stime of the whole process (live and ended threads), in seconds, to a clock tick."""
    # The command name is in parentheses and may hold spaces: split after it.
    after = proc_file(pid, "stat").rsplit(")", 1)[1].split()
    return (int(after[11]) + int(after[12])) / TICK


def thread_cpu_ns(pid):
    """Each live thread's time on a CPU, in ns (schedstat), by thread id."""
    times = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        proc_file(pid, "stat")  # says the daemon ended
        raise
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                times[tid] = int(f.read().split()[0])
        except FileNotFoundError:
            pass  # ended between listdir and open
    return times


class ThreadTimes:
    """The process's CPU time over a window, to the nanosecond, from each thread's
    schedstat. A thread that ends takes its counter with it, so the threads are read
    every `every` seconds and each one's last reading counts: at most that much of an
    ending thread's time is lost (idle pool threads end; the capture thread does not)."""

    def __init__(self, pid):
        self.pid = pid
        self.first = thread_cpu_ns(pid)
        self.last = dict(self.first)

    def sample(self):
        self.last.update(thread_cpu_ns(self.pid))

    def seconds(self):
        return sum(ns - self.first.get(tid, 0) for tid, ns in self.last.items()) / 1e9

    def watch(self, duration, every=0.1):
        until = time.monotonic() + duration
        while (left := until - time.monotonic()) > 0:
            time.sleep(min(every, left))
            self.sample()


def children(pid):
    """The ids of a process's children (all its threads'), from /proc."""
    found = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            found += [int(c) for c in f.read().split()]
    return found


class WyomingPeer:
    """The least a Wyoming peer (Home Assistant's part) does: connects to the satellite,
    sends run-satellite, answers ping, and counts the audio-chunk payload bytes. An event
    is a JSON header line, then data_length bytes of JSON, then payload_length bytes."""

    def __init__(self, port):
        self.port = port
        self.payload_bytes = 0
        self.sock = None
        self.thread = None

    def start(self, satellite):
        until = time.monotonic() + 15
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=1)
                break
            except OSError:
                if time.monotonic() > until or satellite.poll() is not None:
                    raise BenchError("wyoming-satellite did not listen within 15 s.")
                time.sleep(0.1)
        self.sock.settimeout(None)
        self.send("run-satellite")
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def send(self, kind):
        self.sock.sendall((json.dumps({"type": kind}) + "\n").encode())

    def read(self):
        stream = self.sock.makefile("rb")
        try:
            while line := stream.readline():
                header = json.loads(line)
                if header.get("data_length"):
                    stream.read(header["data_length"])
                payload = stream.read(header["payload_length"]) if header.get("payload_length") else b""
                if header.get("type") == "audio-chunk":
                    self.payload_bytes += len(payload)
                elif header.get("type") == "ping":
                    self.send("pong")
        except (OSError, ValueError):
            pass  # the socket closed under it when the measurement ended

    def stop(self):
        if self.sock:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()
        if self.thread:
            self.thread.join(5)


# ------------------------------------------------------------------ the setup

class Bench:
    def __init__(self, args):
        self.args = args
        self.bin = args.bin
        self.tmp = tempfile.mkdtemp(prefix="parlour-bench.")
        self.procs = Processes()
        self.deadline = time.monotonic() + args.time_limit

    def check_time(self, what):
        if time.monotonic() > self.deadline:
            raise BenchError(f"Over the time limit ({self.args.time_limit} s) before {what}; raise --time-limit or lower --runs.")

    def path(self, name):
        return os.path.join(self.tmp, name)

    def close(self):
        self.procs.stop_all()
        if not self.args.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            print(f"Kept {self.tmp}", file=sys.stderr)

    def prepare(self):
        run(["cc", "-O2", "-shared", "-fPIC", "-DPIC", "-o", self.path("libasound_module_pcm_paced.so"),
             os.path.join(ROOT, "Tests/Fixtures/alsa_paced.c"), "-lasound"])
        # One microphone file serves both turns: a question and 2 s of quiet, again and
        # again. A plain listen ends on the first quiet; a held one hears them all. The
        # file plugin reopens it each time the microphone opens, so each turn starts at
        # the top; it is made longer than the held capture so it never runs dry.
        run(["espeak-ng", "-w", self.path("q.wav"), QUESTION])
        run(["sox", self.path("q.wav"), "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-t", "raw",
             self.path("turn.raw"), "pad", "0.5", "2"])
        turn = open(self.path("turn.raw"), "rb").read()
        seconds = len(turn) / 32000
        repeats = int((max(self.args.capture_seconds, self.args.stream_seconds) + 15) / seconds) + 1
        with open(self.path("mic.raw"), "wb") as f:
            f.write(turn * repeats)
        with open(self.path("asound.conf"), "w") as f:
            f.write(f"""pcm_type.paced {{ lib "{self.path('libasound_module_pcm_paced.so')}" }}
pcm.clock {{ type paced }}
pcm.benchmic {{ type file slave.pcm "clock" file "/dev/null" infile "{self.path('mic.raw')}" format "raw" }}
pcm.benchspeaker_file {{ type file slave.pcm "clock" file "{self.path('played.raw')}" format "raw" }}
pcm.benchspeaker {{ type plug slave {{ pcm "benchspeaker_file" format S16_LE rate 16000 channels 1 }} }}
""")
        self.token = base64.b32encode(os.urandom(10)).decode()
        with open(self.path("server.out"), "w") as out, open(self.path("server.err"), "w") as err:
            self.server = self.procs.start(
                [self.args.python, os.path.join(ROOT, "Tests/Server/parlour_test_server.py"),
                 "--host", "127.0.0.1", "--port", "0", "--token", self.token, "--knobs", json.dumps(REPLY)],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        until = time.monotonic() + 20
        while True:
            text = open(self.path("server.out")).read()
            if "LISTENING" in text:
                self.port = int(text.split()[1])
                break
            if self.server.poll() is not None or time.monotonic() > until:
                raise BenchError(f"The test server did not start: {open(self.path('server.err')).read()[-400:]}")
            time.sleep(0.05)

    def server_log(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_test/log", timeout=5) as answer:
            return json.load(answer)

    def daemon_env(self, d, transport):
        """Makes the daemon's folder `d` (config with `transport`'s keys, state, token) and
        returns the environment that points it there, without the systemd variables."""
        os.makedirs(os.path.join(d, "state"))
        with open(os.path.join(d, "state", "token"), "w") as f:
            f.write(self.token + "\n")
        os.chmod(os.path.join(d, "state", "token"), 0o600)
        with open(os.path.join(d, "satellite.json"), "w") as f:
            json.dump({"name": "bench", "room": "kitchen", **transport,
                       "server": {"url": f"http://127.0.0.1:{self.port}"},
                       "audio": {"input": "benchmic", "output": "benchspeaker",
                                 "maxUtteranceMs": 120000}}, f)
        env = {k: v for k, v in os.environ.items()
               if k not in ("PARLOUR_TOKEN", "JOURNAL_STREAM", "WATCHDOG_USEC", "WATCHDOG_PID",
                            "STATE_DIRECTORY", "RUNTIME_DIRECTORY", "CREDENTIALS_DIRECTORY")}
        env.update(self.alsa_env(),
                   PARLOUR_SATELLITE_CONFIG=os.path.join(d, "satellite.json"),
                   PARLOUR_SATELLITE_STATE=os.path.join(d, "state"),
                   PARLOUR_SATELLITE_SOCKET=os.path.join(d, "control.sock"),
                   NOTIFY_SOCKET=os.path.join(d, "notify.sock"))
        return env

    def alsa_env(self):
        return {"ALSA_CONFIG_PATH": f"/usr/share/alsa/alsa.conf:{self.path('asound.conf')}"}

    # -------------------------------------------------------------- one run

    def run_once(self, number):
        d = self.path(f"run{number}")
        env = self.daemon_env(d, {"transport": "record"})
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(env["NOTIFY_SOCKET"])
        stderr_path = os.path.join(d, "daemon.log")
        try:
            # 4. Start to READY=1: the clock is read just before the fork and exec.
            started = time.monotonic_ns()
            with open(stderr_path, "w") as stderr:
                daemon = self.procs.start([os.path.join(self.bin, "parlour-satellite")], env=env,
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
            ready = self.await_notify(notify, daemon, "READY=1", 10)
            FIG["ready_ms"].samples.append((ready - started) / 1e6)

            # 1. Idle: nothing asked of it for a while after READY.
            threads = ThreadTimes(daemon.pid)
            threads.watch(self.args.idle_seconds)
            FIG["idle_cpu_s_per_min"].samples.append(threads.seconds() / self.args.idle_seconds * 60)
            idle = proc_status(daemon.pid)
            FIG["idle_hwm_mb"].samples.append(mb(idle["VmHWM"]))
            FIG["idle_rss_mb"].samples.append(mb(idle["VmRSS"]))
            FIG["idle_anon_mb"].samples.append(mb(idle["RssAnon"]))
            FIG["idle_file_mb"].samples.append(mb(idle["RssFile"] + idle["RssShmem"]))

            # 1 and 3. A plain round trip: question, answer, answer played.
            self.check_time("a round trip")
            began = time.monotonic()
            ctl = self.procs.start([os.path.join(self.bin, "parlourctl"), "--json", "listen"], env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            highest = 0
            while ctl.poll() is None:
                highest = max(highest, proc_status(daemon.pid)["VmRSS"])
                if time.monotonic() - began > 60:
                    raise BenchError("A round trip took over 60 s.")
                time.sleep(0.02)
            FIG["trip_wall_s"].samples.append(time.monotonic() - began)
            self.expect_completed(ctl, "listen")
            after = proc_status(daemon.pid)
            FIG["trip_hwm_mb"].samples.append(mb(after["VmHWM"]))
            FIG["trip_rss_max_mb"].samples.append(mb(max(highest, after["VmRSS"])))
            self.latencies(stderr_path, 1)

            # 2. CPU while a held listen captures, from the moment the daemon says it listens.
            self.check_time("a held capture")
            self.drain(notify)
            hold = self.procs.start([os.path.join(self.bin, "parlourctl"), "--json", "listen", "--hold"], env=env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.await_notify(notify, daemon, "STATUS=Listening", 10)
            ticks0, threads, t0 = cpu_seconds(daemon.pid), ThreadTimes(daemon.pid), time.monotonic()
            threads.watch(self.args.capture_seconds)
            ticks1, t1 = cpu_seconds(daemon.pid), time.monotonic()
            hold.stdin.close()
            per_min = 60 / (t1 - t0)
            FIG["cpu_ticks_s_per_min"].samples.append((ticks1 - ticks0) * per_min)
            FIG["cpu_s_per_min"].samples.append(threads.seconds() * per_min)
            FIG["cpu_percent"].samples.append(threads.seconds() / (t1 - t0) * 100)
            try:
                hold.wait(60)
            except subprocess.TimeoutExpired:
                raise BenchError("The held listen did not end within 60 s of its standard input closing.")
            self.expect_completed(hold, "listen --hold")
            self.latencies(stderr_path, 2)
        finally:
            for process in list(self.procs.running):
                if process is not self.server:
                    self.procs.stop(process)
            notify.close()

    # -------------------------------------------------------------- stream

    def received_binary(self):
        """Binary bytes /listen has received so far, over all its sockets."""
        return sum(e.get("bytes", 0) for e in self.server_log()["socket"]
                   if e.get("dir") == "in" and e.get("kind") == "binary")

    def stream_once(self):
        """The daemon streaming the room to /listen (transport stream, wake server) for
        --stream-seconds. The server's wake word is off ("never"), so no turn starts and
        what is measured is streaming alone, as wyoming-satellite's run below."""
        self.check_time("the stream measurement")
        post = urllib.request.Request(f"http://127.0.0.1:{self.port}/_test/knobs", method="POST",
                                      data=json.dumps({"wake": "never"}).encode())
        urllib.request.urlopen(post, timeout=5).close()
        d = self.path("stream")
        env = self.daemon_env(d, {"transport": "stream", "wake": "server"})
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(env["NOTIFY_SOCKET"])
        try:
            with open(os.path.join(d, "daemon.log"), "w") as stderr:
                daemon = self.procs.start([os.path.join(self.bin, "parlour-satellite")], env=env,
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
            self.await_notify(notify, daemon, "READY=1", 10)
            until = time.monotonic() + 10
            while self.received_binary() == 0:
                if time.monotonic() > until or daemon.poll() is not None:
                    raise BenchError("The daemon in transport stream sent no audio to /listen within 10 s.")
                time.sleep(0.1)
            time.sleep(1)  # past the socket's start
            bytes0, ticks0 = self.received_binary(), cpu_seconds(daemon.pid)
            threads, t0 = ThreadTimes(daemon.pid), time.monotonic()
            threads.watch(self.args.stream_seconds)
            t1 = time.monotonic()
            bytes1, ticks1 = self.received_binary(), cpu_seconds(daemon.pid)
            per_min = 60 / (t1 - t0)
            FIG["stream_cpu_ticks_s_per_min"].samples.append((ticks1 - ticks0) * per_min)
            FIG["stream_cpu_s_per_min"].samples.append(threads.seconds() * per_min)
            FIG["stream_hwm_mb"].samples.append(mb(proc_status(daemon.pid)["VmHWM"]))
            FIG["stream_bytes_per_s"].samples.append((bytes1 - bytes0) / (t1 - t0))
        finally:
            for process in list(self.procs.running):
                if process is not self.server:
                    self.procs.stop(process)
            notify.close()

    def wyoming_once(self):
        """wyoming-satellite in its lightest mode (always streaming: no wake word, no VAD),
        its microphone arecord on the same ALSA device, streaming to WyomingPeer."""
        self.check_time("the wyoming-satellite measurement")
        python = os.path.join(ROOT, ".build", "bench-venv", "bin", "python")
        with socket.socket() as probe:  # a free loopback port for the satellite to listen on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = dict(os.environ, **self.alsa_env())
        with open(self.path("wyoming.log"), "w") as log:
            satellite = self.procs.start(
                [python, "-m", "wyoming_satellite", "--name", "bench", "--uri", f"tcp://127.0.0.1:{port}",
                 "--no-zeroconf",
                 "--mic-command", "arecord -q -D benchmic -r 16000 -c 1 -f S16_LE -t raw",
                 "--snd-command", "aplay -q -D null -r 22050 -c 1 -f S16_LE -t raw"],
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        peer = WyomingPeer(port)
        try:
            peer.start(satellite)
            until = time.monotonic() + 15
            while peer.payload_bytes == 0:
                if time.monotonic() > until or satellite.poll() is not None:
                    raise BenchError(f"wyoming-satellite streamed no audio within 15 s; see {self.path('wyoming.log')} (--keep).")
                time.sleep(0.1)
            time.sleep(1)
            pids = [satellite.pid] + children(satellite.pid)
            if len(pids) < 2:
                raise BenchError("wyoming-satellite has no arecord child while it streams.")
            bytes0, ticks0 = peer.payload_bytes, sum(cpu_seconds(p) for p in pids)
            times, t0 = [ThreadTimes(p) for p in pids], time.monotonic()
            until = t0 + self.args.stream_seconds
            while (left := until - time.monotonic()) > 0:
                time.sleep(min(0.1, left))
                for t in times:
                    t.sample()
            t1 = time.monotonic()
            bytes1, ticks1 = peer.payload_bytes, sum(cpu_seconds(p) for p in pids)
            per_min = 60 / (t1 - t0)
            FIG["wyoming_cpu_ticks_s_per_min"].samples.append((ticks1 - ticks0) * per_min)
            FIG["wyoming_cpu_s_per_min"].samples.append(sum(t.seconds() for t in times) * per_min)
            FIG["wyoming_hwm_mb"].samples.append(mb(sum(proc_status(p)["VmHWM"] for p in pids)))
            FIG["wyoming_bytes_per_s"].samples.append((bytes1 - bytes0) / (t1 - t0))
        finally:
            peer.stop()
            if satellite.poll() is None:  # its arecord is in its session: end them together
                os.killpg(satellite.pid, signal.SIGTERM)
            self.procs.stop(satellite)
        ours, theirs = FIG["stream_cpu_s_per_min"].samples, FIG["wyoming_cpu_s_per_min"].samples
        if ours and theirs:
            FIG["ratio_cpu"].samples.append(ours[-1] / theirs[-1])
            FIG["ratio_rss"].samples.append(FIG["stream_hwm_mb"].samples[-1] / FIG["wyoming_hwm_mb"].samples[-1])

    def await_notify(self, notify, daemon, prefix, timeout):
        """Waits for a notify datagram with a line starting `prefix`; returns when it came (ns)."""
        until = time.monotonic() + timeout
        while True:
            left = until - time.monotonic()
            if left <= 0 or daemon.poll() is not None:
                raise BenchError(f"The daemon sent no {prefix} within {timeout} s"
                                 + (f" (it exited {daemon.returncode})" if daemon.poll() is not None else "") + ".")
            readable, _, _ = select.select([notify], [], [], min(left, 0.5))
            if readable:
                message = notify.recv(4096).decode(errors="replace")
                if any(line.startswith(prefix) for line in message.splitlines()):
                    return time.monotonic_ns()

    @staticmethod
    def drain(notify):
        """Drops the datagrams already queued, such as the last turn's STATUS lines."""
        while select.select([notify], [], [], 0)[0]:
            notify.recv(4096)

    def expect_completed(self, ctl, what):
        ctl.wait(10)
        out, err = ctl.stdout.read(), ctl.stderr.read()
        self.procs.running.remove(ctl)
        try:
            result = json.loads(out)
        except json.JSONDecodeError:
            raise BenchError(f"parlourctl {what} printed no JSON result: {out!r} {err!r}")
        if result.get("status") != "completed":
            raise BenchError(f"parlourctl {what} did not complete: {out.strip()}")

    def latencies(self, stderr_path, count):
        """Times turn `count` from the daemon's debug lines: the answer to /voice all in
        (HTTPClient), read (Conversation), and its first frame handed to ALSA (Playback)."""
        pattern = re.compile(r"^debug: (Answer received|Answer decoded|First frame handed to ALSA)\.(.*)$", re.M)
        until = time.monotonic() + 5
        while True:
            stamps = {"Answer received": [], "Answer decoded": [], "First frame handed to ALSA": []}
            for what, fields in pattern.findall(open(stderr_path).read()):
                if what == "Answer received" and not re.search(r"\burl=\S*/voice\b", fields):
                    continue
                stamps[what].append(int(re.search(r"\bmonotonic_ns=(\d+)", fields).group(1)))
            if all(len(found) >= count for found in stamps.values()):
                break
            if time.monotonic() > until:
                raise BenchError(f"The daemon's stderr ({stderr_path}) lacks the debug lines that time the answer "
                                 "(they come from HTTPClient.swift, Conversation.swift and Playback.swift).")
            time.sleep(0.02)
        received = stamps["Answer received"][count - 1]
        FIG["answer_to_alsa_ms"].samples.append((stamps["First frame handed to ALSA"][count - 1] - received) / 1e6)
        FIG["answer_decode_ms"].samples.append((stamps["Answer decoded"][count - 1] - received) / 1e6)

    def voice_context(self):
        for entry in self.server_log()["requests"]:
            if entry["path"] == "/voice" and entry.get("audioMs"):
                FIG["voice_bytes_per_s"].samples.append(entry["bodyBytes"] / (entry["audioMs"] / 1000))


# ------------------------------------------------------------------ the report

def machine():
    model, cores = "unknown", os.cpu_count()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) for line in f if line.startswith("MemTotal"))
    try:
        swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        swift = "unknown"
    load = open("/proc/loadavg").read().split()[:3]
    return [("CPU", model), ("Cores", str(cores)), ("Memory", f"{total / 1024 / 1024:.1f} GiB"),
            ("Kernel", platform.release()), ("Swift", swift), ("Load average at start", " ".join(load))]


def report(args, host, elapsed):
    lines = [f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}", f"Command: {args.command}",
             f"Runs: {args.runs} (a fresh daemon each; held capture {args.capture_seconds:g} s, idle {args.idle_seconds:g} s); "
             f"stream {args.stream_seconds:g} s each; "
             f"took {elapsed:.0f} s", ""]
    lines += [f"- {name}: {value}" for name, value in host]
    lines += ["", "| Figure | Median | Spread (min–max) | n |", "| --- | ---: | ---: | ---: |"]
    for f in FIGURES:
        if not f.samples:
            lines.append(f"| {f.title} | — | — | 0 |")
            continue
        fmt = lambda v: f"{v:.{f.decimals}f}"
        lines.append(f"| {f.title} | {fmt(statistics.median(f.samples))} {f.unit} | "
                     f"{fmt(min(f.samples))}–{fmt(max(f.samples))} {f.unit} | {len(f.samples)} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True, help="The folder holding parlour-satellite and parlourctl (release build).")
    parser.add_argument("--python", required=True, help="The test venv's python, for the test server.")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--capture-seconds", type=float, default=15)
    parser.add_argument("--stream-seconds", type=float, default=60,
                        help="How long the daemon and wyoming-satellite each stream (0: skip both).")
    parser.add_argument("--idle-seconds", type=float, default=5)
    parser.add_argument("--time-limit", type=float, default=300, help="Give up after this many seconds.")
    parser.add_argument("--keep", action="store_true", help="Keep the working folder (logs) for a look.")
    parser.add_argument("--command", default="scripts/bench", help=argparse.SUPPRESS)
    args = parser.parse_args()

    # SIGTERM (and SIGHUP) take the same way out as Ctrl-C, so `finally` stops everything.
    def interrupted(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)

    host = machine()
    bench = Bench(args)
    began = time.monotonic()
    try:
        bench.prepare()
        for number in range(1, args.runs + 1):
            bench.check_time(f"run {number}")
            print(f"run {number} of {args.runs}…", file=sys.stderr, flush=True)
            bench.run_once(number)
        bench.voice_context()
        if args.stream_seconds > 0:
            print("stream…", file=sys.stderr, flush=True)
            bench.stream_once()
            print("wyoming-satellite…", file=sys.stderr, flush=True)
            bench.wyoming_once()
    except (BenchError, OSError, subprocess.SubprocessError) as error:
        print(f"bench: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted; everything it started has been stopped.", file=sys.stderr)
        return 130
    finally:
        bench.close()
    print(report(args, host, time.monotonic() - began))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# The driver behind scripts/bench: starts the test server, the paced ALSA card, the
# daemon and wyoming-satellite, measures them from outside (/proc, the notify socket,
# the daemon's debug lines, a preloaded tracer, callgrind) and prints each figure's
# median and spread with the machine it ran on, then the aims, met or missed.
# Easy to get wrong: every process started here must end, whatever fails; the
# kernel's utime+stime is in clock ticks (10 ms), too coarse alone for a daemon that
# uses well under 1 % of a core, so per-thread schedstat is read too; a thread that
# ends takes its counters with it, so threads are read often.
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
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from bench_echo import MODES, EchoBench
from bench_house import HouseBench, WINDOW_MS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUESTION = "what time is it in the kitchen"
# The short question the round trips ask, so a hundred of them take minutes, not ten.
TRIP_QUESTION = "lights on"
# What the shipped okay_nabu model hears in espeak-ng's voice (TESTING.md).
WAKE_WORD = "okay nabu"
# The wake word corpus: the three words espeak-ng says well, each with its model (TESTING.md),
# in these voices and speeds (words a minute; espeak-ng's own is 175).
CORPUS_WORDS = [("okay nabu", "okay_nabu"), ("alexa", "alexa"), ("hey mycroft", "hey_mycroft")]
CORPUS_VOICES = ["en", "en-us", "en+f3", "en+m3", "en-gb-x-rp"]
CORPUS_RATES = [130, 175, 210]
# The false wakes' speech: the manual read in these voices and speeds.
FALSE_VOICES = ["en", "en-us", "en+f3", "en+m3", "en-gb-scotland", "en-029"]
FALSE_RATES = [150, 175, 200]
# The answer's audio as the real server's default voice makes it: 24 kHz float32.
REPLY = {"audioFormat": "float32", "audioRate": 24000, "audioMs": 3000}
TRIP_REPLY = {"audioFormat": "float32", "audioRate": 24000, "audioMs": 300}
TICK = os.sysconf("SC_CLK_TCK")
BLOCK_BYTES = 2560  # one /listen message: 80 ms of 16 kHz mono S16_LE
WS_BINARY, WS_TEXT = 0x82, 0x81  # the first byte of a final binary or text frame


class BenchError(Exception):
    """A step that did not work; the message says which and why."""


# ------------------------------------------------------------------ figures

class Figure:
    """One printed row: a name, a unit, how many decimals, and its samples. `spread`
    is "range" (min–max, for a figure with one sample a run) or "p5–p95" (for a
    latency with many samples, where the extremes are the machine's, not ours)."""

    def __init__(self, key, title, unit, decimals, spread="range"):
        self.key, self.title, self.unit, self.decimals, self.spread = key, title, unit, decimals, spread
        self.samples = []


def section(title):
    return Figure(None, title, "", 0)


# The rows, in print order; a section row has no key. A new measurement adds its rows
# here and appends samples to them by key; the report needs nothing else.
FIGURES = [
    section("Start, and idle while paired (record transport, nothing asked)"),
    Figure("ready_ms", "Start of the process to READY=1", "ms", 1),
    Figure("idle_hwm_mb", "Peak RSS idle (VmHWM)", "MiB", 2),
    Figure("idle_rss_mb", "Steady RSS idle (VmRSS)", "MiB", 2),
    Figure("idle_anon_mb", "… of which anonymous (heap, stacks)", "MiB", 2),
    Figure("idle_file_mb", "… of which file-backed (the binary and its libraries)", "MiB", 2),
    Figure("idle_cpu_s_per_min", "CPU per minute idle (context)", "s/min", 3),
    section("A round trip (record transport: /voice)"),
    Figure("trip_hwm_mb", "Peak RSS after a round trip (VmHWM)", "MiB", 2),
    Figure("trip_rss_max_mb", "Highest RSS sampled during a round trip (VmRSS)", "MiB", 2),
    Figure("answer_to_alsa_ms", "Answer's last byte in to its first frame handed to ALSA", "ms", 2),
    Figure("answer_decode_ms", "… of which reading the answer (JSON, base64)", "ms", 2),
    Figure("cpu_s_per_min", "CPU per minute of a held capture (context)", "s/min", 3),
    Figure("trip_wall_s", "A whole round trip, as parlourctl sees it (context)", "s", 2),
    Figure("voice_bytes_per_s", "Bytes posted to /voice per second of audio (context)", "B/s", 0),
    section("Streaming the room (stream transport, wake server), wyoming-satellite at the same time"),
    Figure("stream_hwm_mb", "Peak RSS streaming (VmHWM)", "MiB", 2),
    Figure("stream_rss_mb", "Steady RSS streaming (VmRSS, median of the window's second half)", "MiB", 2),
    Figure("stream_pss_mb", "PSS streaming: shared pages divided among their users (context)", "MiB", 2),
    Figure("stream_cpu_s_per_min", "CPU per minute of streamed audio (threads' schedstat)", "s/min", 3),
    Figure("stream_cpu_ticks_s_per_min", "CPU per minute of streamed audio (utime+stime, clock ticks)", "s/min", 3),
    Figure("stream_cpu_capture", "… of which the audio thread (audio: capture, playback and the /listen socket)", "s/min", 3),
    Figure("stream_cpu_rest", "… of which the other threads (the main loop: tasks and actors; the rest)", "s/min", 3),
    Figure("stream_wakeups_per_s", "Times a thread was put on a CPU, per second", "/s", 2),
    Figure("stream_wakeups_audio", "… of which the audio thread", "/s", 2),
    Figure("stream_threads", "Threads of the daemon streaming, at the window's end (context)", "", 0),
    Figure("capture_to_socket_ms", "A captured period to its message's bytes on the socket", "ms", 3, "p5–p95"),
    Figure("stream_bytes_per_s", "Binary bytes received by /listen per second (raw audio: 32000)", "B/s", 0),
    Figure("wyoming_hwm_mb", "wyoming-satellite + arecord: peak RSS (sum of VmHWM)", "MiB", 2),
    Figure("wyoming_rss_mb", "wyoming-satellite + arecord: steady RSS (sum of VmRSS)", "MiB", 2),
    Figure("wyoming_cpu_s_per_min", "wyoming-satellite + arecord: CPU per minute (schedstat)", "s/min", 3),
    Figure("wyoming_cpu_ticks_s_per_min", "wyoming-satellite + arecord: CPU per minute (utime+stime)", "s/min", 3),
    Figure("wyoming_wakeups_per_s", "wyoming-satellite + arecord: times on a CPU per second (context)", "/s", 1),
    Figure("wyoming_bytes_per_s", "wyoming-satellite: audio payload bytes per second (context)", "B/s", 0),
    Figure("ratio_cpu", "Ratio ours/theirs, CPU (schedstat)", "×", 3),
    Figure("ratio_rss", "Ratio ours/theirs, steady RSS", "×", 3),
    section("The satellite's own wake word (wake local, stream transport), the Python reference at the same time"),
    Figure("local_cpu_s_per_min", "CPU per minute, idle in wake local (ear open, no wake word said)", "s/min", 3),
    Figure("local_cpu_audio", "… of which the audio thread (audio)", "s/min", 3),
    Figure("local_cpu_rest", "… of which the other threads (the main loop: tasks and actors; the rest)", "s/min", 3),
    Figure("local_wakeups_per_s", "Times a thread was put on a CPU, per second", "/s", 1),
    Figure("local_wakeups_audio", "… of which the audio thread", "/s", 1),
    Figure("local_rss_mb", "Steady RSS in wake local (VmRSS)", "MiB", 2),
    Figure("local_hwm_mb", "Peak RSS in wake local (VmHWM)", "MiB", 2),
    Figure("local_bytes", "Binary bytes /listen received meanwhile (nothing is sent)", "B", 0),
    Figure("reference_cpu_s_per_min", "pymicro-wakeword + arecord: CPU per minute (schedstat)", "s/min", 3),
    Figure("reference_wakeups_per_s", "pymicro-wakeword + arecord: times on a CPU per second", "/s", 1),
    Figure("reference_rss_mb", "pymicro-wakeword + arecord: steady RSS (sum of VmRSS)", "MiB", 2),
    Figure("ratio_local_reference_cpu", "Ratio ours (whole satellite) / the Python detector, CPU", "×", 3),
    Figure("local_vs_stream_cpu", "Ratio wake local / wake server streaming, CPU (medians)", "×", 3),
    Figure("local_minus_stream_rss", "Steady RSS, wake local less wake server streaming (medians)", "MiB", 2),
    Figure("wake_to_start_ms", "The wake's decision to `start` on the socket", "ms", 3, "p5–p95"),
    section("A house: who answers a wake (scripts/bench --house)"),
    Figure("house_start_off_ms", "The wake's decision to `start` on the socket, arbitration off", "ms", 3, "p5–p95"),
    Figure("house_start_0_ms", "… arbitration on, no sibling", "ms", 3, "p5–p95"),
    Figure("house_start_1_ms", "… one sibling (the winner's)", "ms", 3, "p5–p95"),
    Figure("house_start_2_ms", "… two siblings (the winner's)", "ms", 3, "p5–p95"),
    Figure("house_loudest_1", "Share of wakes the loudest alone answered: two satellites 6 dB apart", "", 2),
    Figure("house_loudest_2", "… three satellites at 0, -6 and -12 dB", "", 2),
    section("The wake word's decisions, heard faster than real time (wakeword-bench beside wakeword_reference.py)"),
    Figure("corpus_clips", "Clips of the three wake words in the corpus (context)", "", 0),
    Figure("corpus_detected", "Clips that woke their own word's model: the satellite", "", 0),
    Figure("reference_corpus_detected", "Clips that woke their own word's model: the reference", "", 0),
    Figure("corpus_cross_wakes", "Clips that woke another word's model: the satellite", "", 0),
    Figure("reference_corpus_cross_wakes", "Clips that woke another word's model: the reference", "", 0),
    Figure("corpus_alike", "Decisions alike (each clip with each of the three models)", "", 0),
    Figure("corpus_unlike", "Decisions unlike (listed in the notes)", "", 0),
    Figure("false_audio_min", "Non-wake speech and noise heard (context)", "min", 1),
] + [Figure(f"{side}false_wakes_{model}", f"False wakes per hour, {model}: the {who}", "/h", 2)
     for _, model in CORPUS_WORDS for side, who in (("", "satellite"), ("reference_", "reference"))] + [
    Figure("corpus_ns_off", "The corpus after 2 s of its noise, each clip with its own word's model: woke, heard as it is", "", 0),
    Figure("corpus_ns_on", "… woke, heard through the daemon's noise suppression first (noiseSuppression, the default)", "", 0),
    Figure("engine_cpu_s_per_min", "The engine's CPU per minute of audio (front end and model, okay_nabu)", "s/min", 4),
    Figure("frontend_cpu_s_per_min", "… of which the front end (MicroFrontend)", "s/min", 4),
    Figure("model_cpu_s_per_min", "… of which the model (TensorFlow Lite's invoke, quantising)", "s/min", 4),
    Figure("reference_engine_cpu_s_per_min", "The reference's CPU per minute of audio (pymicro-features, pymicro-wakeword)", "s/min", 4),
    section("A room with an echo (issue 15): the speaker through sox's reverb, 12 dB down, 100 ms late, into the microphone"),
    Figure("erle_speech_db", "ERLE on speech, after the answer's first 2 s (echoCancel on)", "dB", 1),
    Figure("erle_tones_db", "ERLE on music-like tones (plucked chords), after 2 s", "dB", 1),
    Figure("erle_off_db", "ERLE with echoCancel off (context: what the microphone heard)", "dB", 1),
] + [Figure(f"erle_{wake}_{answer}_db", title, "dB", 1)
     for wake, period in (("push", "80 ms periods"), ("local", "120 ms"), ("server", "streaming, 80 ms"))
     for answer, title in (("first", f"ERLE, wake {wake} ({period}): the first answer after the start, from 2 s in"),
                           ("later", "… the next answer, from half a second in"))] + [
    Figure("barge_rate_0", "Wake word over an answer, heard (wake local): echo 0 dB over the talker", "", 2),
    Figure("barge_rate_6", "… echo 6 dB over the talker", "", 2),
    Figure("barge_rate_12", "… echo 12 dB over the talker", "", 2),
    Figure("barge_server_6", "… wake server (the test server's reference detector): echo 6 dB over the talker", "", 2),
    Figure("barge_stop_ms", "The wake's decision over an answer to playback stopped (wake local)", "ms", 1, "p5–p95"),
    Figure("echo_cpu_on", "CPU per minute while an answer plays, echoCancel on (utime+stime)", "s/min", 3),
    Figure("echo_cpu_off", "… echoCancel off", "s/min", 3),
    Figure("echo_rss_on", "RSS while an answer plays, echoCancel on", "MiB", 2),
    Figure("echo_rss_off", "… echoCancel off", "MiB", 2),
    Figure("offline_erle_db", "Offline (wakeword-bench --played): ERLE after 2 s, the cancellers alone, delay 115–353 ms", "dB", 1),
    Figure("offline_barge_0", "Offline: wake word over an answer, heard: echo 0 dB over the talker", "", 2),
    Figure("offline_barge_6", "… echo 6 dB over the talker", "", 2),
    Figure("offline_barge_12", "… echo 12 dB over the talker", "", 2),
    Figure("offline_barge_off_0", "Offline, the same clips with echoCancel off (noise suppression alone): heard at 0 dB", "", 2),
    Figure("offline_barge_off_6", "… at 6 dB", "", 2),
    Figure("offline_barge_off_12", "… at 12 dB", "", 2),
    Figure("offline_cpu_ns", "Offline: the processing's CPU per minute, noise suppression alone", "s/min", 3),
    Figure("offline_cpu_aec_ns_idle", "… echo cancelling and noise suppression, nothing playing", "s/min", 3),
    Figure("offline_cpu_aec_ns", "… echo cancelling and noise suppression, an answer playing", "s/min", 3),
    section("Round trips in a row (stream transport, push turns over /listen)"),
    Figure("trips_rss_first_mb", "RSS after the first round trip (VmRSS)", "MiB", 2),
    Figure("trips_rss_mb", "Steady RSS after the last round trip (VmRSS)", "MiB", 2),
    Figure("trips_hwm_mb", "Peak RSS after the last round trip (VmHWM)", "MiB", 2),
    Figure("trips_fds_growth", "Open descriptors, last round trip less first (context)", "", 0),
    Figure("end_to_end_sent_ms", "End of speech decided to `end` on the socket", "ms", 3, "p5–p95"),
    Figure("stream_answer_to_alsa_ms", "Reply WAV's last byte in to its first frame handed to ALSA", "ms", 2, "p5–p95"),
    Figure("trips_wall_s", "A whole round trip, as parlourctl sees it (context)", "s", 2, "p5–p95"),
    section("Instructions under valgrind --tool=callgrind (repeatable on a busy machine)"),
    Figure("cg_instr_per_s", "Instructions per second of streamed audio", "M/s", 3),
    Figure("cg_wyoming_instr_per_s", "wyoming-satellite + arecord: instructions per second of audio", "M/s", 3),
    Figure("cg_ratio", "Ratio ours/theirs, instructions", "×", 3),
]
FIG = {f.key: f for f in FIGURES if f.key}


def mb(kb):
    return kb / 1024


def percentile(values, p):
    ordered = sorted(values)
    at = (len(ordered) - 1) * p / 100
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


# ------------------------------------------------------------------ processes

class Processes:
    """Every process this driver started, so that all of them end."""

    def __init__(self):
        self.running = []

    def start(self, args, **kw):
        process = subprocess.Popen(args, **kw)
        self.running.append(process)
        return process

    def stop(self, process, grace=5.0, group=False):
        """SIGTERM, then SIGKILL after `grace`; `group`: the whole session it leads."""
        if process.poll() is None:
            try:
                if group:
                    os.killpg(process.pid, signal.SIGTERM)
                else:
                    process.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.pid, signal.SIGKILL) if group else process.kill()
                except ProcessLookupError:
                    pass
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
    except (FileNotFoundError, ProcessLookupError):
        raise BenchError(f"Process {pid} has ended in the middle of a run; run with --keep to see its log.")


def proc_status(pid):
    """VmHWM, VmRSS and its parts (RssAnon: the heap; RssFile: mapped code) in kB."""
    fields = {}
    for line in proc_file(pid, "status").splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
            fields[key] = int(value.split()[0])
    if "VmRSS" not in fields:  # a zombie has no memory left to show
        raise BenchError(f"Process {pid} has ended in the middle of a run; run with --keep to see its log.")
    return fields


def tracer_kb(pid):
    """What the preloaded tracer's own mapping (trace.bin) holds resident, in kB: its records
    (and the replies' bytes it keeps) are not the daemon's memory, so RSS figures leave them out."""
    total, inside = 0, False
    for line in proc_file(pid, "smaps").splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            inside = line.rstrip().endswith("/trace.bin")
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def resident_by_mapping(pid, shown=8):
    """Where the resident memory is, by the object (or [heap], [stack], anonymous) each mapping
    holds, largest first: the first `shown`, then the rest together. The tracer's own pages are left out."""
    sizes, name = {}, None
    for line in proc_file(pid, "smaps").splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            fields = line.split(None, 5)
            name = os.path.basename(fields[5].strip()) if len(fields) > 5 and fields[5].strip() else "[anon]"
        elif line.startswith("Rss:") and name != "trace.bin":
            sizes[name] = sizes.get(name, 0) + int(line.split()[1])
    ranked = sorted(sizes.items(), key=lambda item: -item[1])
    parts = [f"{name} {kb / 1024:.2f}" for name, kb in ranked[:shown]]
    rest = sum(kb for _, kb in ranked[shown:])
    return ", ".join(parts + [f"the other {len(ranked) - shown} {rest / 1024:.2f}", f"total {sum(sizes.values()) / 1024:.2f}"])


def own_status(pid):
    """proc_status with VmRSS, VmHWM and RssFile less the tracer's pages (see tracer_kb)."""
    status = proc_status(pid)
    traced = tracer_kb(pid)
    for key in ("VmRSS", "VmHWM", "RssFile", "RssShmem"):
        if key in status:
            status[key] = max(0, status[key] - traced)
    return status


def proc_pss(pid):
    """Proportional set size in kB: each shared page divided among the processes mapping it."""
    for line in proc_file(pid, "smaps_rollup").splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def open_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except FileNotFoundError:
        proc_file(pid, "stat")
        raise


def cpu_seconds(pid):
    """utime+stime of the whole process (live and ended threads), in seconds, to a clock tick."""
    # The command name is in parentheses and may hold spaces: split after it.
    after = proc_file(pid, "stat").rsplit(")", 1)[1].split()
    return (int(after[11]) + int(after[12])) / TICK


def thread_name(pid, tid):
    try:
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            return f.read().strip()
    except (FileNotFoundError, ProcessLookupError):
        return "?"


def thread_stats(pid):
    """Each live thread's (ns on a CPU, times put on a CPU), from schedstat, by thread id."""
    stats = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        proc_file(pid, "stat")  # says the process ended
        raise
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ran, _, slices = f.read().split()[:3]
                stats[tid] = (int(ran), int(slices))
        except (FileNotFoundError, ProcessLookupError):
            pass  # ended between listdir and open
    return stats


class ThreadTimes:
    """A process's CPU time and wake-ups over a window, from each thread's schedstat. A
    thread that ends takes its counters with it, so the threads are read every `every`
    seconds and each one's last reading counts: at most that much of an ending thread's
    time is lost (a thread a child process or a library starts may end; the audio thread does not)."""

    def __init__(self, pid):
        self.pid = pid
        self.first = thread_stats(pid)
        self.last = dict(self.first)

    def sample(self):
        self.last.update(thread_stats(self.pid))

    def seconds(self):
        return sum(ran - self.first.get(tid, (0, 0))[0] for tid, (ran, _) in self.last.items()) / 1e9

    def runs(self):
        return sum(slices - self.first.get(tid, (0, 0))[1] for tid, (_, slices) in self.last.items())

    def seconds_by_name(self):
        """CPU seconds by thread name (the daemon names its capture and WebSocket threads)."""
        by = {}
        for tid, (ran, _) in self.last.items():
            name = thread_name(self.pid, tid)
            by[name] = by.get(name, 0) + (ran - self.first.get(tid, (0, 0))[0]) / 1e9
        return by

    def runs_by_name(self):
        """Times on a CPU by thread name."""
        by = {}
        for tid, (_, slices) in self.last.items():
            name = thread_name(self.pid, tid)
            by[name] = by.get(name, 0) + slices - self.first.get(tid, (0, 0))[1]
        return by

    def watch(self, duration, every=0.1):
        until = time.monotonic() + duration
        while (left := until - time.monotonic()) > 0:
            time.sleep(min(every, left))
            self.sample()


def children(pid):
    """The ids of a process's children (all its threads'), from /proc."""
    found = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                found += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            pass
    return found


class Window:
    """CPU, wake-ups and RSS of a group of processes (ours: one; wyoming-satellite: Python
    and its arecord) over the same stretch of time, sampled every 0.1 s (schedstat) and
    every second (VmRSS)."""

    def __init__(self, pids):
        self.pids = pids
        self.ticks0 = sum(cpu_seconds(p) for p in pids)
        self.threads = [ThreadTimes(p) for p in pids]
        self.rss = []
        self.t0 = time.monotonic()
        self.t1 = None
        self.next_rss = self.t0

    def sample(self):
        for t in self.threads:
            t.sample()
        now = time.monotonic()
        if now >= self.next_rss:
            self.rss.append(sum(own_status(p)["VmRSS"] for p in self.pids))
            self.next_rss += 1

    def close(self):
        self.sample()
        self.t1 = time.monotonic()
        self.ticks1 = sum(cpu_seconds(p) for p in self.pids)
        self.hwm = sum(own_status(p)["VmHWM"] for p in self.pids)
        self.pss = sum(proc_pss(p) - tracer_kb(p) for p in self.pids)

    @property
    def length(self):
        return self.t1 - self.t0

    def cpu_per_min(self):
        return sum(t.seconds() for t in self.threads) * 60 / self.length

    def ticks_per_min(self):
        return (self.ticks1 - self.ticks0) * 60 / self.length

    def runs_per_s(self):
        return sum(t.runs() for t in self.threads) / self.length

    def steady_rss(self):
        """The median VmRSS of the window's second half: after start-up growth, without one odd sample."""
        return statistics.median(self.rss[len(self.rss) // 2:])


def watch_windows(windows, duration):
    until = time.monotonic() + duration
    while (left := until - time.monotonic()) > 0:
        time.sleep(min(0.1, left))
        for w in windows:
            w.sample()
    for w in windows:
        w.close()


# ------------------------------------------------------------------ the tracer's records

class Trace:
    """The records scripts/bench-preload.c wrote (see its header): opens and reads of the
    microphone's infile, sends, and the /listen socket's receives with their bytes."""

    OPEN_INFILE, READ_INFILE, SEND, RECV = 1, 2, 3, 4
    RECORD = struct.Struct("<QiiiiqiB3x")

    def __init__(self, path):
        self.records = []
        if not os.path.exists(path):
            return
        with open(path, "rb") as f:
            data = f.read()
        used = struct.unpack_from("<Q", data, 0)[0]
        end = min(64 + used, len(data))
        if 64 + used > len(data):
            raise BenchError(f"The trace file {path} filled up; measure a shorter stretch.")
        at = 64
        while at + self.RECORD.size <= end:
            ns, pid, tid, fd, kind, count, keep, first = self.RECORD.unpack_from(data, at)
            if ns == 0:  # reserved but not yet written when the file was read
                break
            body = data[at + self.RECORD.size:at + self.RECORD.size + keep] if keep else b""
            self.records.append((ns, pid, fd, kind, count, first, body))
            at += (self.RECORD.size + keep + 7) & ~7
        self.records.sort(key=lambda r: r[0])

    def of(self, pid, kind):
        return [r for r in self.records if r[1] == pid and r[3] == kind]

    def capture_to_socket(self, pid, since_ns, until_ns):
        """Each /listen message's latency (ns): from the read of the infile that completed its
        80 ms of audio to the send() of its frame. Streaming opens the microphone once, so
        the k-th binary frame holds bytes k·2560 up to (k+1)·2560 of the last infile open."""
        opens = self.of(pid, self.OPEN_INFILE)
        if not opens:
            return []
        opened = opens[-1][0]
        done, total = [], 0
        for r in self.of(pid, self.READ_INFILE):
            if r[0] >= opened:
                total += r[4]
                done.append((total, r[0]))
        sends = [r[0] for r in self.of(pid, self.SEND)
                 if r[0] >= opened and r[5] == WS_BINARY and r[4] == BLOCK_BYTES + 8]
        latencies, at = [], 0
        for k, sent in enumerate(sends):
            need = (k + 1) * BLOCK_BYTES
            while at < len(done) and done[at][0] < need:
                at += 1
            if at == len(done):
                break
            if since_ns <= sent <= until_ns:
                latencies.append(sent - done[at][1])
        return latencies

    def first_send_after(self, pid, ns, first_byte):
        for r in self.of(pid, self.SEND):
            if r[0] >= ns and r[5] == first_byte:
                return r[0]
        return None

    def binary_messages_in(self, pid):
        """When each binary message from the server (a reply's WAV) had its last byte
        received: the WebSocket frames are rebuilt from the recv()s' bytes, per socket."""
        done = []
        by_fd = {}
        for r in self.of(pid, self.RECV):
            by_fd.setdefault(r[2], []).append(r)
        for records in by_fd.values():
            stream, stamps = bytearray(), []  # stamps: (offset where a recv's bytes end, when)
            for r in records:
                stream += r[6]
                stamps.append((len(stream), r[0]))
            at = stream.find(b"\r\n\r\n")  # after the handshake's answer
            if at < 0:
                continue
            at += 4
            opcode_of_message = None
            while at + 2 <= len(stream):
                b0, b1 = stream[at], stream[at + 1]
                size, head = b1 & 0x7F, 2
                if size == 126:
                    size, head = struct.unpack_from(">H", stream, at + 2)[0], 4
                elif size == 127:
                    size, head = struct.unpack_from(">Q", stream, at + 2)[0], 10
                if b1 & 0x80:
                    head += 4
                end = at + head + size
                if end > len(stream):
                    break
                opcode = b0 & 0x0F
                if opcode in (1, 2):
                    opcode_of_message = opcode
                if b0 & 0x80 and opcode in (0, 2) and opcode_of_message == 2:
                    when = next(t for offset, t in stamps if offset >= end)
                    done.append(when)
                at = end
        return sorted(done)


# ------------------------------------------------------------------ wyoming's peer

class WyomingPeer:
    """The least a Wyoming peer (Home Assistant's part) does: connects to the satellite,
    sends run-satellite, answers ping, and counts the audio-chunk payload bytes. An event
    is a JSON header line, then data_length bytes of JSON, then payload_length bytes."""

    def __init__(self, port):
        self.port = port
        self.payload_bytes = 0
        self.sock = None
        self.thread = None

    def start(self, satellite, timeout=15):
        until = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=1)
                break
            except OSError:
                if time.monotonic() > until or satellite.poll() is not None:
                    raise BenchError(f"wyoming-satellite did not listen within {timeout} s.")
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
        self.notes = []  # what a reader of the report should know about this run
        self.callgrind_top = []
        self.corpus_rows = []  # the corpus by noise: (noise, clips, ours: woke, missed, theirs: woke, missed)

    def check_time(self, what):
        if time.monotonic() > self.deadline:
            raise BenchError(f"Over the time limit ({self.args.time_limit:g} s) before {what}; "
                             "raise --time-limit or ask for fewer runs.")

    def path(self, name):
        return os.path.join(self.tmp, name)

    def close(self):
        self.procs.stop_all()
        if not self.args.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            print(f"Kept {self.tmp}", file=sys.stderr)

    def speech(self, text, name, lead, trail, rate=None):
        """`text` spoken by espeak-ng as raw 16 kHz mono S16_LE, with `lead` and `trail` s of quiet."""
        run(["espeak-ng"] + (["-s", str(rate)] if rate else []) + ["-w", self.path(f"{name}.wav"), text])
        run(["sox", self.path(f"{name}.wav"), "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-t", "raw",
             self.path(f"{name}.raw"), "pad", str(lead), str(trail)])
        with open(self.path(f"{name}.raw"), "rb") as f:
            return f.read()

    def prepare(self):
        run(["cc", "-O2", "-shared", "-fPIC", "-DPIC", "-o", self.path("libasound_module_pcm_paced.so"),
             os.path.join(ROOT, "Tests/Fixtures/alsa_paced.c"), "-lasound"])
        run(["cc", "-O2", "-shared", "-fPIC", "-o", self.path("preload.so"),
             os.path.join(ROOT, "scripts/bench-preload.c"), "-ldl"])
        # One microphone file serves the record turns and the stream: a question and 2 s of
        # quiet, again and again. A plain listen ends on the first quiet; a held one hears
        # them all. The file plugin reopens it each time the microphone opens, so each turn
        # starts at the top; it is made longer than the longest capture so it never runs dry.
        turn = self.speech(QUESTION, "q", 0.5, 2)
        repeats = int((max(self.args.capture_seconds, self.args.stream_seconds, self.args.callgrind_seconds) + 60)
                      / (len(turn) / 32000)) + 1
        with open(self.path("mic.raw"), "wb") as f:
            f.write(turn * repeats)
        # The round trips' microphone: a short question, then quiet for the endpointer.
        self.speech(TRIP_QUESTION, "trip", 0.1, 2, rate=220)
        # The local wake word's microphone: the word, the question, then quiet. Each turn ends with
        # the microphone closed, and the file plugin starts the file again when the ear reopens it.
        wake = self.speech(WAKE_WORD, "ww", 0.5, 0.5) + self.speech(QUESTION, "wq", 0, 4)
        with open(self.path("wake.raw"), "wb") as f:
            f.write(wake * 4)
        with open(self.path("asound.conf"), "w") as f:
            f.write(f"""pcm_type.paced {{ lib "{self.path('libasound_module_pcm_paced.so')}" }}
pcm.clock {{ type paced }}
pcm.benchmic {{ type file slave.pcm "clock" file "/dev/null" infile "{self.path('mic.raw')}" format "raw" }}
pcm.benchtripmic {{ type file slave.pcm "clock" file "/dev/null" infile "{self.path('trip.raw')}" format "raw" }}
pcm.benchwakemic {{ type file slave.pcm "clock" file "/dev/null" infile "{self.path('wake.raw')}" format "raw" }}
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
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_test/log", timeout=10) as answer:
            return json.load(answer)

    def knobs(self, **patch):
        post = urllib.request.Request(f"http://127.0.0.1:{self.port}/_test/knobs", method="POST",
                                      data=json.dumps(patch).encode())
        urllib.request.urlopen(post, timeout=5).close()

    def daemon_env(self, d, settings, microphone="benchmic", trace=None):
        """Makes the daemon's folder `d` (config with `settings`, state, token) and returns the
        environment that points it there, without the systemd variables. `trace`: the
        infile whose reads the preloaded tracer records, into `d`/trace.bin."""
        os.makedirs(os.path.join(d, "state"))
        with open(os.path.join(d, "state", "token"), "w") as f:
            f.write(self.token + "\n")
        os.chmod(os.path.join(d, "state", "token"), 0o600)
        audio = {"input": microphone, "output": "benchspeaker", "maxUtteranceMs": 120000}
        audio.update(settings.pop("audio", {}))
        # No cues: the test server answers at once, while the "done" cue still plays, and the
        # answer would wait for the cue to stop (BENCHMARKS.md); a real server takes longer.
        sounds = {"awake": "", "done": "", "error": ""}
        with open(os.path.join(d, "satellite.json"), "w") as f:
            json.dump({"name": "bench", "room": "kitchen", "sounds": sounds, **settings,
                       "server": {"url": f"http://127.0.0.1:{self.port}"}, "audio": audio}, f)
        env = {k: v for k, v in os.environ.items()
               if k not in ("PARLOUR_TOKEN", "JOURNAL_STREAM", "WATCHDOG_USEC", "WATCHDOG_PID",
                            "STATE_DIRECTORY", "RUNTIME_DIRECTORY", "CREDENTIALS_DIRECTORY", "LD_PRELOAD")}
        env.update(self.alsa_env(),
                   PARLOUR_SATELLITE_CONFIG=os.path.join(d, "satellite.json"),
                   PARLOUR_SATELLITE_STATE=os.path.join(d, "state"),
                   PARLOUR_SATELLITE_SOCKET=os.path.join(d, "control.sock"),
                   NOTIFY_SOCKET=os.path.join(d, "notify.sock"))
        if trace:
            env.update(LD_PRELOAD=self.path("preload.so"), PARLOUR_TRACE_FILE=os.path.join(d, "trace.bin"),
                       PARLOUR_TRACE_INFILE=self.path(trace))
        return env

    def alsa_env(self):
        return {"ALSA_CONFIG_PATH": f"/usr/share/alsa/alsa.conf:{self.path('asound.conf')}"}

    def start_daemon(self, d, env, prefix=(), program=None):
        """Starts the daemon (`program`, or the build's) with its stderr in `d`/daemon.log and a
        bound notify socket; returns (process, notify socket, when the fork began in ns)."""
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(env["NOTIFY_SOCKET"])
        started = time.monotonic_ns()
        with open(os.path.join(d, "daemon.log"), "w") as stderr:
            daemon = self.procs.start(list(prefix) + [program or os.path.join(self.bin, "parlour-satellite")], env=env,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
        return daemon, notify, started

    def stop_others(self):
        """Stops everything but the test server."""
        for process in list(self.procs.running):
            if process is not self.server:
                self.procs.stop(process, group=getattr(process, "group", False))

    # -------------------------------------------------------------- record runs

    def run_once(self, number):
        d = self.path(f"run{number}")
        env = self.daemon_env(d, {"transport": "record"})
        stderr_path = os.path.join(d, "daemon.log")
        # Start to READY=1: the clock is read just before the fork and exec.
        daemon, notify, started = self.start_daemon(d, env)
        try:
            ready = self.await_notify(notify, daemon, "READY=1", 10)
            FIG["ready_ms"].samples.append((ready - started) / 1e6)

            # Idle: nothing asked of it for a while after READY.
            threads = ThreadTimes(daemon.pid)
            threads.watch(self.args.idle_seconds)
            FIG["idle_cpu_s_per_min"].samples.append(threads.seconds() / self.args.idle_seconds * 60)
            idle = proc_status(daemon.pid)
            FIG["idle_hwm_mb"].samples.append(mb(idle["VmHWM"]))
            FIG["idle_rss_mb"].samples.append(mb(idle["VmRSS"]))
            FIG["idle_anon_mb"].samples.append(mb(idle["RssAnon"]))
            FIG["idle_file_mb"].samples.append(mb(idle["RssFile"] + idle["RssShmem"]))

            # A plain round trip: question, answer, answer played.
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

            # CPU while a held listen captures, from the moment the daemon says it listens.
            if self.args.capture_seconds > 0:
                self.check_time("a held capture")
                self.drain(notify)
                hold = self.procs.start([os.path.join(self.bin, "parlourctl"), "--json", "listen", "--hold"], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                self.await_notify(notify, daemon, "STATUS=Listening", 10)
                threads = ThreadTimes(daemon.pid)
                threads.watch(self.args.capture_seconds)
                FIG["cpu_s_per_min"].samples.append(threads.seconds() * 60 / self.args.capture_seconds)
                hold.stdin.close()
                try:
                    hold.wait(60)
                except subprocess.TimeoutExpired:
                    raise BenchError("The held listen did not end within 60 s of its standard input closing.")
                self.expect_completed(hold, "listen --hold")
                self.latencies(stderr_path, 2)
        finally:
            self.stop_others()
            notify.close()

    # -------------------------------------------------------------- stream

    def received_binary(self):
        """Binary bytes /listen has received so far, over all its sockets."""
        return sum(e.get("bytes", 0) for e in self.server_log()["socket"]
                   if e.get("dir") == "in" and e.get("kind") == "binary")

    def start_stream_daemon(self, d, prefix=(), trace=True, program=None):
        """The daemon streaming the room to /listen (transport stream, wake server); returns
        once audio arrives. The server's wake word is off ("never"), so no turn starts and
        what is measured is streaming alone, as wyoming-satellite's run beside it."""
        env = self.daemon_env(d, {"transport": "stream", "wake": "server"}, trace="mic.raw" if trace else None)
        if prefix:
            env["LD_PRELOAD"] = self.path("preload.so")  # valgrind needs its sigsuspend fix
        daemon, notify, _ = self.start_daemon(d, env, prefix, program)
        notify.close()
        return daemon

    def await_streaming(self, daemon, since, timeout):
        until = time.monotonic() + timeout
        while self.received_binary() <= since:
            if time.monotonic() > until or daemon.poll() is not None:
                raise BenchError(f"The daemon in transport stream sent no audio to /listen within {timeout} s.")
            time.sleep(0.2)

    def start_wyoming(self, prefix=()):
        """wyoming-satellite in its lightest mode (always streaming: no wake word, no VAD),
        its microphone arecord on the same ALSA device, in a session of its own so that
        it and its arecord end together; returns (process, its peer)."""
        python = os.path.join(ROOT, ".build", "bench-venv", "bin", "python")
        with socket.socket() as probe:  # a free loopback port for the satellite to listen on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = dict(os.environ, **self.alsa_env())
        env.pop("LD_PRELOAD", None)
        if prefix:
            env["LD_PRELOAD"] = self.path("preload.so")
        log = self.path(f"wyoming{len(self.procs.running)}.log")
        with open(log, "w") as out:
            satellite = self.procs.start(
                list(prefix) + [python, "-m", "wyoming_satellite", "--name", "bench", "--uri", f"tcp://127.0.0.1:{port}",
                                "--no-zeroconf",
                                "--mic-command", "arecord -q -D benchmic -r 16000 -c 1 -f S16_LE -t raw",
                                "--snd-command", "aplay -q -D null -r 22050 -c 1 -f S16_LE -t raw"],
                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        satellite.group = True
        satellite.log = log
        return satellite, WyomingPeer(port)

    def await_wyoming(self, satellite, peer, timeout):
        peer.start(satellite, timeout)
        until = time.monotonic() + timeout
        while peer.payload_bytes == 0:
            if time.monotonic() > until or satellite.poll() is not None:
                raise BenchError(f"wyoming-satellite streamed no audio within {timeout} s; see {satellite.log} (--keep).")
            time.sleep(0.1)
        pids = [satellite.pid] + children(satellite.pid)
        if len(pids) < 2:
            raise BenchError("wyoming-satellite has no arecord child while it streams.")
        return pids

    def stream_once(self, number):
        """Ours and wyoming-satellite streaming the same microphone at the same time, so that
        both see the same machine; --stream-seconds of each, measured over the same window."""
        self.check_time("a stream run")
        self.knobs(wake="never")
        d = self.path(f"stream{number}")
        os.makedirs(d)
        since = self.received_binary()
        daemon = self.start_stream_daemon(d)
        wyoming = None
        try:
            if self.args.wyoming:
                satellite, wyoming = self.start_wyoming()
            self.await_streaming(daemon, since, 15)
            pids = self.await_wyoming(satellite, wyoming, 20) if wyoming else []
            time.sleep(2)  # past the sockets' start
            bytes0 = self.received_binary()
            theirs0 = wyoming.payload_bytes if wyoming else 0
            ours = Window([daemon.pid])
            theirs = Window(pids) if pids else None
            t0 = time.monotonic_ns()
            watch_windows([ours] + ([theirs] if theirs else []), self.args.stream_seconds)
            t1 = time.monotonic_ns()
            FIG["stream_cpu_s_per_min"].samples.append(ours.cpu_per_min())
            FIG["stream_cpu_ticks_s_per_min"].samples.append(ours.ticks_per_min())
            FIG["stream_wakeups_per_s"].samples.append(ours.runs_per_s())
            runs = ours.threads[0].runs_by_name()
            FIG["stream_wakeups_audio"].samples.append(runs.get("audio", 0) / ours.length)
            self.notes.append(f"Stream run {number}: times on a CPU by thread: "
                              + ", ".join(f"{name} {count / ours.length:.1f}/s" for name, count in sorted(runs.items())))
            self.notes.append(f"Stream run {number}: resident by mapping (smaps, MiB): " + resident_by_mapping(daemon.pid))
            # Read before the daemon stops: the names are in /proc only while it runs.
            by_name = ours.threads[0].seconds_by_name()
            FIG["stream_threads"].samples.append(len(os.listdir(f"/proc/{daemon.pid}/task")))
            capture = by_name.pop("audio", 0)
            for key, value in (("stream_cpu_capture", capture), ("stream_cpu_rest", sum(by_name.values()))):
                FIG[key].samples.append(value * 60 / ours.length)
            FIG["stream_hwm_mb"].samples.append(mb(ours.hwm))
            FIG["stream_rss_mb"].samples.append(mb(ours.steady_rss()))
            FIG["stream_pss_mb"].samples.append(mb(ours.pss))
            FIG["stream_bytes_per_s"].samples.append((self.received_binary() - bytes0) / ours.length)
            if theirs:
                FIG["wyoming_cpu_s_per_min"].samples.append(theirs.cpu_per_min())
                FIG["wyoming_cpu_ticks_s_per_min"].samples.append(theirs.ticks_per_min())
                FIG["wyoming_wakeups_per_s"].samples.append(theirs.runs_per_s())
                FIG["wyoming_hwm_mb"].samples.append(mb(theirs.hwm))
                FIG["wyoming_rss_mb"].samples.append(mb(theirs.steady_rss()))
                FIG["wyoming_bytes_per_s"].samples.append((wyoming.payload_bytes - theirs0) / theirs.length)
                FIG["ratio_cpu"].samples.append(ours.cpu_per_min() / theirs.cpu_per_min())
                FIG["ratio_rss"].samples.append(ours.steady_rss() / theirs.steady_rss())
        finally:
            if wyoming:
                wyoming.stop()
            self.stop_others()
        latencies = Trace(os.path.join(d, "trace.bin")).capture_to_socket(daemon.pid, t0, t1)
        if not latencies:
            self.notes.append(f"Stream run {number}: the tracer saw no message to time (see {d}, --keep).")
        FIG["capture_to_socket_ms"].samples.extend(ns / 1e6 for ns in latencies)

    # -------------------------------------------------------------- the local wake word

    def local_env(self, d, microphone, trace=None):
        env = self.daemon_env(d, {"transport": "stream", "wake": "local"}, microphone=microphone, trace=trace)
        env["PARLOUR_SATELLITE_WAKEWORD"] = os.path.join(ROOT, ".build", "wakeword")
        return env

    def start_reference(self):
        """pymicro-wakeword with pymicro-features (its live mode: 2048-byte reads of standard
        input) reading the same paced microphone through arecord, as linux-voice-assistant
        does; returns the two processes."""
        env = dict(os.environ, **self.alsa_env())
        env.pop("LD_PRELOAD", None)
        arecord = self.procs.start(["arecord", "-q", "-D", "benchmic", "-r", "16000", "-c", "1", "-f", "S16_LE", "-t", "raw"],
                                   env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        detector = self.procs.start([self.args.python, "-m", "pymicro_wakeword", "--model", "okay_nabu"], env=env,
                                    stdin=arecord.stdout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        arecord.stdout.close()
        return [detector, arecord]

    def local_once(self, number):
        """The satellite idle in wake local (its ear open, the room a question again and again,
        never the wake word), and the Python reference on the same microphone at the same time."""
        self.check_time("a local wake word run")
        d = self.path(f"local{number}")
        since = self.received_binary()
        env = self.local_env(d, "benchmic")
        daemon, notify, _ = self.start_daemon(d, env)
        notify.close()
        try:
            self.await_log(os.path.join(d, "daemon.log"), "Listening for the wake word", daemon, 15)
            reference = self.start_reference()
            time.sleep(2)  # past both starts: the model loaded, the microphone open
            for process in reference:
                if process.poll() is not None:
                    raise BenchError("The Python reference (arecord | python -m pymicro_wakeword) ended at once; "
                                     "is pymicro-wakeword in the test venv (scripts/test-venv)?")
            ours, theirs = Window([daemon.pid]), Window([p.pid for p in reference])
            watch_windows([ours, theirs], self.args.local_seconds)
            FIG["local_cpu_s_per_min"].samples.append(ours.cpu_per_min())
            by_name = ours.threads[0].seconds_by_name()
            audio = by_name.pop("audio", 0)
            for key, value in (("local_cpu_audio", audio), ("local_cpu_rest", sum(by_name.values()))):
                FIG[key].samples.append(value * 60 / ours.length)
            runs = ours.threads[0].runs_by_name()
            FIG["local_wakeups_audio"].samples.append(runs.get("audio", 0) / ours.length)
            self.notes.append(f"Local run {number}: times on a CPU by thread: "
                              + ", ".join(f"{name} {count / ours.length:.1f}/s" for name, count in sorted(runs.items())))
            FIG["local_wakeups_per_s"].samples.append(ours.runs_per_s())
            FIG["local_rss_mb"].samples.append(mb(ours.steady_rss()))
            FIG["local_hwm_mb"].samples.append(mb(ours.hwm))
            FIG["local_bytes"].samples.append(self.received_binary() - since)
            FIG["reference_cpu_s_per_min"].samples.append(theirs.cpu_per_min())
            FIG["reference_wakeups_per_s"].samples.append(theirs.runs_per_s())
            FIG["reference_rss_mb"].samples.append(mb(theirs.steady_rss()))
            FIG["ratio_local_reference_cpu"].samples.append(ours.cpu_per_min() / theirs.cpu_per_min())
            if "Heard the wake word" in open(os.path.join(d, "daemon.log")).read():
                self.notes.append(f"Local run {number}: the satellite woke on speech without its wake word.")
        finally:
            self.stop_others()

    def local_wakes(self):
        """--wakes turns started by the wake word (stream transport): the wake's decision (the
        daemon's debug line) to `start` on the socket (the tracer's send)."""
        self.check_time("the wakes")
        self.knobs(**TRIP_REPLY)
        d = self.path("wakes")
        env = self.local_env(d, "benchwakemic", trace="wake.raw")
        daemon, notify, _ = self.start_daemon(d, env)
        notify.close()
        log_path = os.path.join(d, "daemon.log")
        try:
            self.await_log(log_path, "Listening for the wake word", daemon, 15)
            until = time.monotonic() + 30 * self.args.wakes
            while open(log_path).read().count("listen completed") < self.args.wakes:
                if time.monotonic() > until or daemon.poll() is not None:
                    raise BenchError(f"Fewer than {self.args.wakes} wakes came; see {log_path} (--keep).")
                time.sleep(0.2)
            pid = daemon.pid
        finally:
            self.stop_others()
        trace = Trace(os.path.join(d, "trace.bin"))
        decided = [int(n) for n in re.findall(r"^debug: Wake word decided\..*\bmonotonic_ns=(\d+)", open(log_path).read(), re.M)]
        for ns in decided:
            sent = trace.first_send_after(pid, ns, WS_TEXT)
            if sent is not None:
                FIG["wake_to_start_ms"].samples.append((sent - ns) / 1e6)
        self.knobs(**REPLY)

    def local_against_stream(self):
        """The medians of local mode against the server's wake word streaming, from their runs."""
        for key, local, stream in (("local_vs_stream_cpu", "local_cpu_s_per_min", "stream_cpu_s_per_min"),):
            if FIG[local].samples and FIG[stream].samples:
                FIG[key].samples.append(statistics.median(FIG[local].samples) / statistics.median(FIG[stream].samples))
        if FIG["local_rss_mb"].samples and FIG["stream_rss_mb"].samples:
            FIG["local_minus_stream_rss"].samples.append(
                statistics.median(FIG["local_rss_mb"].samples) - statistics.median(FIG["stream_rss_mb"].samples))

    # -------------------------------------------------------------- the wake word's decisions

    def spoken(self, text, name, voice, rate, lead=0.5, trail=1.0):
        """`text` (or a file of it, `text` starting with @) in espeak-ng's `voice` at `rate` words a
        minute, as 16 kHz S16_LE samples (numpy) with `lead` and `trail` seconds of quiet."""
        import numpy as np
        source = ["-f", text[1:]] if text.startswith("@") else [text]
        run(["espeak-ng", "-v", voice, "-s", str(rate), "-w", self.path(f"{name}.wav")] + source)
        run(["sox", self.path(f"{name}.wav"), "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-t", "raw",
             self.path(f"{name}.raw"), "pad", str(lead), str(trail)])
        samples = np.fromfile(self.path(f"{name}.raw"), dtype="<i2")
        os.remove(self.path(f"{name}.wav"))
        os.remove(self.path(f"{name}.raw"))
        return samples

    def noise(self, kind, seconds):
        """sox's `kind` of noise (whitenoise, pinknoise, brownnoise), the same every run."""
        import numpy as np
        out = self.path(f"{kind}.raw")
        run(["sox", "-R", "-n", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-t", "raw", out,
             "synth", str(seconds), kind, "vol", "0.5"])
        return np.fromfile(out, dtype="<i2").astype(np.float64)

    @staticmethod
    def mixed(speech, noise, at, snr):
        """`speech` with `noise` (from sample `at`, wrapping) at `snr` dB below the speech's level:
        its RMS over the 10 ms windows within 40 dB of the loudest, as the tests' Speech does."""
        import numpy as np
        if snr is None:
            return speech
        windows = speech[:len(speech) // 160 * 160].astype(np.float64).reshape(-1, 160)
        levels = np.sqrt((windows ** 2).mean(axis=1))
        active = levels[levels >= levels.max() / 100]
        level = np.sqrt((active ** 2).mean())
        part = np.resize(np.roll(noise, -at), len(speech))
        gain = level / np.sqrt((part ** 2).mean()) / 10 ** (snr / 20)
        return np.clip(speech + gain * part, -32768, 32767).astype("<i2")

    def engines(self, model, paths, name):
        """The satellite's engine (wakeword-bench) and the reference (wakeword_reference.py wakes) on
        the same clips with `model`: two answers, each {"clips": [{"wakes": [...]}, ...], ...}."""
        folder = os.path.join(ROOT, ".build", "wakeword")
        ours = json.loads(run([os.path.join(self.bin, "wakeword-bench"), folder, model] + paths))
        out = self.path(f"{name}-{model}.json")
        run([self.args.python, os.path.join(ROOT, "Tests/Fixtures/wakeword_reference.py"), "wakes", out, model] + paths)
        with open(out) as f:
            theirs = json.load(f)
        for answer in (ours, theirs):
            if len(answer["clips"]) != len(paths):
                raise BenchError(f"The {name} run: {len(answer['clips'])} answers for {len(paths)} clips")
        return ours, theirs

    def corpus(self):
        """The brief's corpus, larger than the tests': espeak-ng saying the three wake words in
        CORPUS_VOICES at CORPUS_RATES, clean and in sox's white and pink noise at 20, 10 and 5
        dB SNR; every clip heard by each of the three models, ours and the reference's."""
        self.check_time("the wake word corpus")
        noises = {kind: self.noise(kind, 60) for kind in ("whitenoise", "pinknoise")}
        clips = []  # (path, model, snr, description, the speech alone)
        for phrase, model in CORPUS_WORDS:
            for voice in CORPUS_VOICES:
                for rate in CORPUS_RATES:
                    said = self.spoken(phrase, "said", voice, rate)
                    for kind, snr in [(None, None)] + [(k, snr) for k in noises for snr in (20, 10, 5)]:
                        path = self.path(f"corpus-{len(clips)}.raw")
                        at = (len(clips) * 7919) % len(noises["whitenoise"])
                        self.mixed(said, noises.get(kind), at, snr).tofile(path)
                        where = "clean" if snr is None else f"{kind} {snr} dB SNR"
                        clips.append((path, model, snr, f'"{phrase}" {voice} {rate} wpm, {where}', said))
        paths = [c[0] for c in clips]
        woke = {}  # (side, clip index, model) -> bool
        for _, model in CORPUS_WORDS:
            ours, theirs = self.engines(model, paths, "corpus")
            for side, answer in (("ours", ours), ("theirs", theirs)):
                for index, clip in enumerate(answer["clips"]):
                    woke[(side, index, model)] = bool(clip["wakes"])
        models = [m for _, m in CORPUS_WORDS]
        FIG["corpus_clips"].samples.append(len(clips))
        for side, own, cross in (("ours", "corpus_detected", "corpus_cross_wakes"),
                                 ("theirs", "reference_corpus_detected", "reference_corpus_cross_wakes")):
            FIG[own].samples.append(sum(woke[(side, i, c[1])] for i, c in enumerate(clips)))
            FIG[cross].samples.append(sum(any(woke[(side, i, m)] for m in models if m != c[1]) for i, c in enumerate(clips)))
        unlike = [(i, m) for i in range(len(clips)) for m in models if woke[("ours", i, m)] != woke[("theirs", i, m)]]
        FIG["corpus_alike"].samples.append(len(clips) * len(models) - len(unlike))
        FIG["corpus_unlike"].samples.append(len(unlike))
        for i, m in unlike:
            self.notes.append(f"Corpus: {clips[i][3]} with {m}: the satellite "
                              f"{'wakes' if woke[('ours', i, m)] else 'does not'}, the reference "
                              f"{'wakes' if woke[('theirs', i, m)] else 'does not'}.")
        # Detections and misses by noise, each clip with its own word's model.
        self.corpus_rows = []
        for snr in (None, 20, 10, 5):
            chosen = [(i, c) for i, c in enumerate(clips) if c[2] == snr]
            row = [("clean" if snr is None else f"{snr} dB SNR"), len(chosen)]
            for side in ("ours", "theirs"):
                hits = sum(woke[(side, i, c[1])] for i, c in chosen)
                row += [hits, len(chosen) - hits]
            self.corpus_rows.append(row)
        for path in paths:
            os.remove(path)
        self.corpus_suppressed(clips, noises)

    def corpus_suppressed(self, clips, noises):
        """Whether noise suppression before the wake word (INTERFACE.md's noiseSuppression, on by default)
        helps it or harms it: each corpus clip again, 2 s of its own noise before the speech (the daemon's
        suppressor has long learnt the room's noise when the word is said), heard by the satellite's engine
        as it is and through the daemon's processing with noise suppression alone (wakeword-bench
        --played with nothing played, --processing ns). The reference has no suppressor: not compared."""
        import numpy as np
        self.check_time("the corpus through noise suppression")
        silent = self.path("played-nothing.raw")
        open(silent, "wb").close()
        folder = os.path.join(ROOT, ".build", "wakeword")
        woke = {"off": 0, "on": 0}
        self.corpus_ns_rows = {}
        for _, model in CORPUS_WORDS:
            chosen = [(i, c) for i, c in enumerate(clips) if c[1] == model]
            paths = []
            for i, (_, _, snr, description, speech) in chosen:
                said = np.concatenate([np.zeros(32000, dtype="<i2"), speech])
                kind = "pinknoise" if "pinknoise" in description else "whitenoise"
                path = self.path(f"corpus-ns-{i}.raw")
                self.mixed(said, noises[kind] if snr is not None else None, (i * 7919) % len(noises["whitenoise"]), snr).tofile(path)
                paths.append(path)
            plain = json.loads(run([os.path.join(self.bin, "wakeword-bench"), folder, model] + paths))
            suppressed = json.loads(run([os.path.join(self.bin, "wakeword-bench"), "--played", silent, "--processing", "ns",
                                         folder, model] + paths))
            for (i, c), a, b in zip(chosen, plain["clips"], suppressed["clips"]):
                row = self.corpus_ns_rows.setdefault("clean" if c[2] is None else f"{c[2]} dB SNR", [0, 0, 0])
                row[0] += 1
                row[1] += bool(a["wakes"])
                row[2] += bool(b["wakes"])
                woke["off"] += bool(a["wakes"])
                woke["on"] += bool(b["wakes"])
            for path in paths:
                os.remove(path)
        FIG["corpus_ns_off"].samples.append(woke["off"])
        FIG["corpus_ns_on"].samples.append(woke["on"])
        self.notes.append("The corpus after 2 s of its noise, woke as it is / through noise suppression, by noise: "
                          + "; ".join(f"{k} {r[1]}/{r[2]} of {r[0]}" for k, r in self.corpus_ns_rows.items()) + ".")

    def false_wakes(self):
        """--false-wake-minutes of espeak-ng reading this project's manual (never a wake word) in
        FALSE_VOICES at FALSE_RATES, each stretch clean or in noise at 20, 10 or 5 dB SNR, with
        stretches of noise alone between; heard as one recording by the satellite's engine and
        the reference's with each of the three models, the model started afresh after each wake."""
        import numpy as np
        self.check_time("the false wakes")
        wanted = int(self.args.false_wake_minutes * 60 * 16000)
        sentences = []
        for name in sorted(os.listdir(os.path.join(ROOT, "docs"))):
            if name.endswith(".md"):
                text = open(os.path.join(ROOT, "docs", name), encoding="utf-8").read()
                text = re.sub(r"```.*?```", " ", text, flags=re.S)
                text = re.sub(r"[`*_#|<>\[\]()]", " ", text)
                for sentence in re.split(r"(?<=[.!?])\s+|\n\s*\n", text):
                    sentence = " ".join(sentence.split())
                    if len(sentence) > 20 and not re.search(r"nabu|alexa|mycroft|jarvis", sentence, re.I):
                        sentences.append(sentence)
        noises = {kind: self.noise(kind, 120) for kind in ("whitenoise", "pinknoise", "brownnoise")}
        parts, total, stretch = [], 0, 0
        while total < wanted:
            self.check_time("the false wakes' speech")
            voice = FALSE_VOICES[stretch % len(FALSE_VOICES)]
            rate = FALSE_RATES[stretch // len(FALSE_VOICES) % len(FALSE_RATES)]
            chosen = sentences[(stretch * 25) % len(sentences):][:25] or sentences[:25]
            with open(self.path("stretch.txt"), "w", encoding="utf-8") as f:
                f.write("\n".join(chosen))
            said = self.spoken("@" + self.path("stretch.txt"), "stretch", voice, rate, lead=0.3, trail=0.3)
            kind = ("whitenoise", "pinknoise", "brownnoise")[stretch % 3]
            snr = (None, 20, 10, 5)[stretch % 4]
            parts.append(self.mixed(said, noises[kind], stretch * 104729, snr))
            # Every third stretch, 20 s of that noise alone.
            if stretch % 3 == 2:
                parts.append(np.clip(noises[kind][:20 * 16000] * 0.3, -32768, 32767).astype("<i2"))
            total = sum(len(p) for p in parts)
            stretch += 1
        audio = np.concatenate(parts)[:wanted]
        path = self.path("false.raw")
        audio.tofile(path)
        hours = len(audio) / 16000 / 3600
        FIG["false_audio_min"].samples.append(hours * 60)
        for _, model in CORPUS_WORDS:
            found, theirs = self.engines(model, [path], "false")
            if model == "okay_nabu":
                ours, reference = found, theirs
            FIG[f"false_wakes_{model}"].samples.append(len(found["clips"][0]["wakes"]) / hours)
            FIG[f"reference_false_wakes_{model}"].samples.append(len(theirs["clips"][0]["wakes"]) / hours)
            for side, answer in (("the satellite", found), ("the reference", theirs)):
                for wake in answer["clips"][0]["wakes"]:
                    ms = wake["ms"] if isinstance(wake, dict) else wake
                    self.notes.append(f"False wake: {model}, {side}, at {ms / 1000:.1f} s of the non-wake speech.")
        # The engines' CPU per minute of audio, faster than real time (context for the live runs).
        minutes = ours["audio_s"] / 60
        FIG["engine_cpu_s_per_min"].samples.append(ours["engine_cpu_s"] / minutes)
        FIG["frontend_cpu_s_per_min"].samples.append(ours["frontend_cpu_s"] / minutes)
        FIG["model_cpu_s_per_min"].samples.append((ours["engine_cpu_s"] - ours["frontend_cpu_s"]) / minutes)
        FIG["reference_engine_cpu_s_per_min"].samples.append(reference["cpu_s"] / (reference["audio_s"] / 60))
        os.remove(path)

    # -------------------------------------------------------------- round trips

    def trips(self):
        """--trips push turns in a row on one daemon (stream transport, wake push): each
        `parlourctl listen` hears a short question, the satellite's endpointer ends it, the
        server answers over the socket and the answer plays. RSS and descriptors after the
        first and the last; each turn's `end` and reply timed by the tracer."""
        self.check_time("the round trips")
        self.knobs(**TRIP_REPLY)
        d = self.path("trips")
        env = self.daemon_env(d, {"transport": "stream", "wake": "push", "audio": {"silenceMs": 400}},
                              microphone="benchtripmic", trace="trip.raw")
        daemon, notify, _ = self.start_daemon(d, env)
        try:
            self.await_notify(notify, daemon, "READY=1", 10)
            self.await_log(os.path.join(d, "daemon.log"), "Connected to the server's /listen.", daemon, 15)
            for number in range(1, self.args.trips + 1):
                if number % 10 == 0:
                    self.check_time(f"round trip {number}")
                began = time.monotonic()
                ctl = self.procs.start([os.path.join(self.bin, "parlourctl"), "--json", "listen"], env=env,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                try:
                    ctl.wait(30)
                except subprocess.TimeoutExpired:
                    raise BenchError(f"Round trip {number} took over 30 s.")
                FIG["trips_wall_s"].samples.append(time.monotonic() - began)
                self.expect_completed(ctl, f"listen (round trip {number})")
                if number == 1:
                    first = own_status(daemon.pid)
                    fds = open_fds(daemon.pid)
                    FIG["trips_rss_first_mb"].samples.append(mb(first["VmRSS"]))
            last = own_status(daemon.pid)
            FIG["trips_rss_mb"].samples.append(mb(last["VmRSS"]))
            FIG["trips_hwm_mb"].samples.append(mb(last["VmHWM"]))
            FIG["trips_fds_growth"].samples.append(open_fds(daemon.pid) - fds)
            pid = daemon.pid
        finally:
            self.stop_others()
            notify.close()
        trace = Trace(os.path.join(d, "trace.bin"))
        log = open(os.path.join(d, "daemon.log")).read()
        decided = [int(n) for n in re.findall(r"^debug: End of speech decided\..*\bmonotonic_ns=(\d+)", log, re.M)]
        for ns in decided:
            sent = trace.first_send_after(pid, ns, WS_TEXT)
            if sent is not None:
                FIG["end_to_end_sent_ms"].samples.append((sent - ns) / 1e6)
        if not decided:
            self.notes.append("The daemon says nothing when its endpointer ends a push turn (an older build?), "
                              "so `end` could not be timed.")
        played = [int(n) for n in re.findall(r"^debug: First frame handed to ALSA\..*\bmonotonic_ns=(\d+)", log, re.M)]
        for wav in trace.binary_messages_in(pid):
            first = next((ns for ns in played if ns >= wav), None)
            if first is not None:
                FIG["stream_answer_to_alsa_ms"].samples.append((first - wav) / 1e6)
        self.knobs(**REPLY)

    # -------------------------------------------------------------- callgrind

    def callgrind_once(self, number):
        """Ours (and wyoming-satellite with arecord, at the same time) streaming under
        callgrind: counters zeroed once audio flows, dumped --callgrind-seconds later.
        Instructions do not depend on what else the machine is doing."""
        self.check_time("a callgrind run")
        self.knobs(wake="never")
        d = self.path(f"callgrind{number}")
        os.makedirs(d)
        valgrind = ["valgrind", "--tool=callgrind", "--trace-children=yes",
                    f"--callgrind-out-file={d}/callgrind.%p"]
        # valgrind 3.19 cannot read the DWARF 5 the toolchain writes ("Possibly corrupted debuginfo
        # file"); a copy without it keeps the symbol table, which names the functions.
        program = self.path("parlour-satellite-nodebug")
        if not os.path.exists(program):
            run(["objcopy", "--strip-debug", os.path.join(self.bin, "parlour-satellite"), program])
        since = self.received_binary()
        daemon = self.start_stream_daemon(d, prefix=valgrind, trace=False, program=program)
        wyoming = None
        try:
            if self.args.wyoming:
                satellite, wyoming = self.start_wyoming(prefix=valgrind)
            # Under valgrind the Swift runtime starts in tens of seconds on a busy machine.
            self.await_streaming(daemon, since, 120)
            theirs = self.await_wyoming(satellite, wyoming, 180) if wyoming else []
            time.sleep(3)
            ours = [daemon.pid]
            for pid in ours + theirs:
                run(["callgrind_control", "-z", str(pid)])
            bytes0, theirs0, t0 = self.received_binary(), wyoming.payload_bytes if wyoming else 0, time.monotonic()
            time.sleep(self.args.callgrind_seconds)
            for pid in ours + theirs:
                run(["callgrind_control", "-d", str(pid)])
            ours_audio = (self.received_binary() - bytes0) / 32000
            theirs_audio = (wyoming.payload_bytes - theirs0) / 32000 if wyoming else 0
            wall = time.monotonic() - t0
        finally:
            if wyoming:
                wyoming.stop()
            self.stop_others()
        for name, audio in (("ours", ours_audio), ("theirs", theirs_audio)):
            if audio and audio < 0.9 * wall:
                self.notes.append(f"Callgrind run {number}: {name} streamed {audio:.1f} s of audio in {wall:.1f} s: "
                                  "under valgrind it fell behind the microphone.")
        mine = self.callgrind_total(d, ours)
        FIG["cg_instr_per_s"].samples.append(mine / ours_audio / 1e6)
        if theirs:
            other = self.callgrind_total(d, theirs)
            FIG["cg_wyoming_instr_per_s"].samples.append(other / theirs_audio / 1e6)
            FIG["cg_ratio"].samples.append((mine / ours_audio) / (other / theirs_audio))
        if number == 1:
            self.callgrind_top = self.callgrind_functions(d, ours[0], ours_audio)

    @staticmethod
    def callgrind_dump(d, pid):
        dumps = sorted(f for f in os.listdir(d) if f.startswith(f"callgrind.{pid}.") and not f.endswith(".0"))
        if not dumps:
            raise BenchError(f"callgrind left no dump for process {pid} in {d}.")
        return os.path.join(d, dumps[-1])

    def callgrind_total(self, d, pids):
        total = 0
        for pid in pids:
            with open(self.callgrind_dump(d, pid)) as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("summary:"))
        return total

    def callgrind_functions(self, d, pid, audio_seconds, count=8):
        """The functions that cost the most instructions themselves, per second of audio."""
        costs = callgrind_self_costs(self.callgrind_dump(d, pid))
        return [(name, where, ir / audio_seconds) for (name, where), ir in costs.most_common(count)]

    # -------------------------------------------------------------- helpers

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
    def await_log(path, text, daemon, timeout):
        until = time.monotonic() + timeout
        while text not in open(path).read():
            if time.monotonic() > until or daemon.poll() is not None:
                raise BenchError(f"The daemon did not say \"{text}\" within {timeout} s; see {path} (--keep).")
            time.sleep(0.1)

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


def callgrind_self_costs(path):
    """Instructions each function spent itself (not in what it called), from a callgrind
    dump: cost lines after `fn=` count for it; the line after `calls=` is the callee's
    inclusive cost and does not. Names are compressed as `(id) name` the first time."""
    from collections import Counter
    names, objects, costs = {}, {}, Counter()
    function = obj = None
    skip = False
    with open(path, errors="replace") as f:
        for line in f:
            if skip:
                skip = False
                continue
            if line[:1].isdigit() or line[:1] in "+-*":
                if function is not None:
                    parts = line.split()
                    if len(parts) >= 2:
                        costs[function] += int(parts[1])
                continue
            key, _, value = line.rstrip("\n").partition("=")
            match = re.match(r"\((\d+)\)(?: (.*))?$", value)
            if key in ("ob", "cob") and match:
                if match.group(2):
                    objects[match.group(1)] = match.group(2)
                if key == "ob":
                    obj = match.group(1)
            elif key in ("fn", "cfn") and match:
                if match.group(2):
                    names.setdefault(match.group(1), (match.group(2), objects.get(obj, "") if key == "fn" else None))
                if key == "fn":
                    function = match.group(1)
                    if names[function][1] is None:
                        names[function] = (names[function][0], objects.get(obj, ""))
            elif key == "calls":
                skip = True
    total = Counter()
    for id_, ir in costs.items():
        name, where = names.get(id_, (id_, ""))
        total[(name, os.path.basename(where or ""))] += ir
    return total


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
    return [("CPU", model), ("Cores", str(cores)), ("Memory", f"{total / 1024 / 1024:.1f} GiB"),
            ("Kernel", platform.release()), ("Swift", swift), ("Load average at start", load_average())]


def load_average():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def summary(f):
    """(median, low, high, how the spread was taken) of a figure's samples."""
    values = f.samples
    if f.spread == "p5–p95" and len(values) >= 20:
        return statistics.median(values), percentile(values, 5), percentile(values, 95), "p5–p95"
    return statistics.median(values), min(values), max(values), "min–max"


def aims():
    """Each aim of issue 8 against the figures: (aim, what was measured, verdict)."""
    rows = []

    def median(key):
        f = FIG[key]
        return statistics.median(f.samples) if f.samples else None

    def judge(aim, measured, ok, unit=""):
        if measured is None:
            rows.append((aim, "not measured", "—"))
        else:
            rows.append((aim, f"{measured:.3g}{unit}", "met" if ok(measured) else "missed"))

    judge("Steady RSS while streaming under 12 MB (all processes)", median("stream_rss_mb"), lambda v: v * 1.048576 < 12, " MiB")
    judge("CPU under a third of wyoming-satellite's (schedstat, same run)", median("ratio_cpu"), lambda v: v < 1 / 3, " ×")
    judge("… the same in instructions (callgrind)", median("cg_ratio"), lambda v: v < 1 / 3, " ×")
    # One wake-up per 80 ms message (12.5 a second) plus the socket's pings (one every 3 s).
    judge("Wake-ups streaming: one a period plus the socket's pings (12.83 a second)", median("stream_wakeups_per_s"),
          lambda v: v <= 12.5 + 1 / 3, " /s")
    for key, aim in (("capture_to_socket_ms", "A captured period to the socket: under 5 ms beyond the 80 ms message"),
                     ("answer_to_alsa_ms", "Reply's last byte to the first frame to ALSA (record): under 5 ms"),
                     ("stream_answer_to_alsa_ms", "Reply's last byte to the first frame to ALSA (stream): under 5 ms"),
                     ("end_to_end_sent_ms", "End of speech decided to `end` sent: under 5 ms")):
        f = FIG[key]
        if f.samples:
            p95 = percentile(f.samples, 95)
            rows.append((aim, f"median {statistics.median(f.samples):.3g} ms, p95 {p95:.3g} ms",
                         "met" if statistics.median(f.samples) < 5 else "missed"))
        else:
            rows.append((aim, "not measured", "—"))
    judge("READY=1 within 100 ms of start", median("ready_ms"), lambda v: v < 100, " ms")
    judge("Listening locally: under half the CPU of the Python detector alone", median("ratio_local_reference_cpu"),
          lambda v: v < 0.5, " ×")
    judge("Listening locally: under wyoming-satellite's CPU for merely streaming", median("local_cpu_s_per_min"),
          lambda v: median("wyoming_cpu_s_per_min") is not None and v < median("wyoming_cpu_s_per_min"), " s/min")
    judge("The wake word adds under 4 MiB to the daemon's RSS (against streaming)", median("local_minus_stream_rss"),
          lambda v: v < 4, " MiB")
    judge("The wake reaches the socket within 100 ms of the decision", median("wake_to_start_ms"), lambda v: v < 100, " ms")
    off, alone = median("house_start_off_ms"), median("house_start_0_ms")
    judge("A satellite with no sibling: arbitration adds under 1 ms to the wake's `start` (medians)",
          None if off is None or alone is None else alone - off, lambda v: v < 1, " ms")
    for key, siblings in (("house_start_1_ms", "one sibling"), ("house_start_2_ms", "two siblings")):
        judge(f"With {siblings}: `start` within the window plus 20 ms ({WINDOW_MS + 20} ms)", median(key),
              lambda v: v < WINDOW_MS + 20, " ms")
    for key, who in (("house_loudest_1", "two satellites"), ("house_loudest_2", "three satellites")):
        judge(f"The loudest alone answers every wake, {who} 6 dB apart", median(key), lambda v: v == 1)
    judge("The satellite and the reference decide alike on every clip of the corpus", median("corpus_unlike"),
          lambda v: v == 0, " unlike")
    judge("ERLE on speech of 25 dB or more after 2 s", median("erle_speech_db"), lambda v: v >= 25, " dB")
    for wake in MODES:
        judge(f"Echo cancelled by 25 dB within 2 s of the first answer, wake {wake}", median(f"erle_{wake}_first_db"),
              lambda v: v >= 25, " dB")
        judge(f"… and from the first half second of a later answer, wake {wake}", median(f"erle_{wake}_later_db"),
              lambda v: v >= 25, " dB")
    judge("The wake word over an answer at 6 dB: nine times in ten (wake local)", median("barge_rate_6"), lambda v: v >= 0.9)
    judge("… the same with wake server (the test server's reference detector)", median("barge_server_6"), lambda v: v >= 0.9)
    judge("Playback stopped within 150 ms of the detection", median("barge_stop_ms"), lambda v: v < 150, " ms")
    judge("The processing under 3 % of one core (on less off)",
          None if median("echo_cpu_on") is None or median("echo_cpu_off") is None
          else (median("echo_cpu_on") - median("echo_cpu_off")) / 60 * 100, lambda v: v < 3, " %")
    return rows


def report(args, host, elapsed, bench):
    lines = [f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}", f"Command: {args.command}",
             f"Runs: {args.runs} record runs (idle {args.idle_seconds:g} s, held capture {args.capture_seconds:g} s); "
             f"{args.stream_runs} stream runs of {args.stream_seconds:g} s; {args.local_runs} local wake word runs of "
             f"{args.local_seconds:g} s; {args.wakes} wakes; {args.house_trials} wakes in each house; corpus {'yes' if args.corpus else 'no'}; "
             f"{args.false_wake_minutes:g} min for false wakes; {args.trips} round trips; "
             f"{args.callgrind_runs} callgrind runs of {args.callgrind_seconds:g} s; echo room: {args.echo_runs} runs, "
             f"{args.echo_mode_runs} in each wake mode, {args.barge_trials} barge-in trials at 6 dB; "
             f"took {elapsed:.0f} s", ""]
    lines += [f"- {name}: {value}" for name, value in host]
    lines += [f"- Load average at the end: {load_average()}", ""]
    lines += ["| Figure | Median | Spread | n |", "| --- | ---: | ---: | ---: |"]
    for f in FIGURES:
        if f.key is None:
            lines.append(f"| **{f.title}** | | | |")
            continue
        if not f.samples:
            lines.append(f"| {f.title} | — | — | 0 |")
            continue
        middle, low, high, how = summary(f)
        fmt = lambda v: f"{v:.{f.decimals}f}"
        unit = f" {f.unit}" if f.unit else ""
        lines.append(f"| {f.title} | {fmt(middle)}{unit} | {fmt(low)}–{fmt(high)}{unit} ({how}) | {len(f.samples)} |")
    lines += ["", "| Aim | Measured | |", "| --- | --- | --- |"]
    lines += [f"| {aim} | {measured} | {verdict} |" for aim, measured, verdict in aims()]
    if bench.callgrind_top:
        lines += ["", "Where the daemon's instructions go while streaming (callgrind, the function's own cost, first run):", "",
                  "| Function | Object | Instructions per second of audio |", "| --- | --- | ---: |"]
        for name, where, per_s in bench.callgrind_top:
            lines.append(f"| `{name[:90]}` | {where} | {per_s / 1000:.0f} k |")
    if bench.corpus_rows:
        lines += ["", "The corpus by noise, each clip heard by its own word's model:", "",
                  "| Noise | Clips | Satellite: woke | missed | Reference: woke | missed |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in bench.corpus_rows]
    if bench.notes:
        lines += [""] + [f"Note: {note}" for note in bench.notes]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True, help="The folder holding parlour-satellite and parlourctl (release build).")
    parser.add_argument("--python", required=True, help="The test venv's python, for the test server.")
    parser.add_argument("--runs", type=int, default=5, help="Record runs: start, idle, a round trip, a held capture.")
    parser.add_argument("--capture-seconds", type=float, default=10, help="The held capture of each record run (0: none).")
    parser.add_argument("--idle-seconds", type=float, default=5)
    parser.add_argument("--stream-runs", type=int, default=3, help="Stream runs, ours and wyoming-satellite's at once.")
    parser.add_argument("--stream-seconds", type=float, default=60, help="How long each stream run measures (0: none).")
    parser.add_argument("--trips", type=int, default=100, help="Round trips in a row on one daemon (0: none).")
    parser.add_argument("--local-runs", type=int, default=3, help="Local wake word runs, ours and the Python reference's at once.")
    parser.add_argument("--local-seconds", type=float, default=60, help="How long each local wake word run measures (0: none).")
    parser.add_argument("--wakes", type=int, default=10, help="Turns started by the wake word, timed to `start` (0: none).")
    parser.add_argument("--no-corpus", dest="corpus", action="store_false",
                        help="Skip the wake word corpus (ours and the reference on espeak-ng's wake words in noise).")
    parser.add_argument("--false-wake-minutes", type=float, default=60,
                        help="Minutes of non-wake speech and noise heard for false wakes (0: none).")
    parser.add_argument("--wake", action="store_true",
                        help="Only what the wake word's aims need: the stream runs, the local runs, the wakes, "
                             "the corpus and the false wakes (as --runs 0 --trips 0 --callgrind-seconds 0).")
    parser.add_argument("--only", choices=["echo"],
                        help="Only one section: echo, the echo room (as every other section's count 0).")
    parser.add_argument("--house-trials", type=int, default=6,
                        help="Wakes said in a house of one, two and three satellites, each way (0: none); needs Avahi, "
                             "so it runs inside scripts/netns-run (scripts/bench --house), and is skipped elsewhere.")
    parser.add_argument("--house", action="store_true",
                        help="Only the house: who answers a wake among satellites of one house.")
    parser.add_argument("--echo-runs", type=int, default=3, help="Echo room runs: speech, tones, and off (0: none).")
    parser.add_argument("--echo-mode-runs", type=int, default=2,
                        help="Echo room runs in each wake mode, two answers each (0: none).")
    parser.add_argument("--barge-trials", type=int, default=10,
                        help="Wake words over an answer at 6 dB, in wake local and wake server (half at the other ratios, local).")
    parser.add_argument("--barge-ratios", default="6,0,12", help="Speaker-to-talker ratios (dB) the wake word is said at.")
    parser.add_argument("--offline-barge-trials", type=int, default=40,
                        help="Offline wake words over an answer per ratio, through wakeword-bench --played (0: none).")
    parser.add_argument("--callgrind-runs", type=int, default=1)
    parser.add_argument("--callgrind-seconds", type=float, default=20, help="How long callgrind counts (0: no callgrind).")
    parser.add_argument("--no-wyoming", dest="wyoming", action="store_false", help="Measure ours alone.")
    parser.add_argument("--time-limit", type=float, default=2100, help="Give up after this many seconds.")
    parser.add_argument("--keep", action="store_true", help="Keep the working folder (logs, traces, callgrind dumps).")
    parser.add_argument("--command", default="scripts/bench", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.wake:
        args.runs, args.trips, args.callgrind_seconds, args.echo_runs, args.barge_trials, args.offline_barge_trials = 0, 0, 0, 0, 0, 0
        args.echo_mode_runs = 0
    if args.only == "echo":
        args.runs, args.capture_seconds, args.stream_seconds, args.local_seconds, args.wakes = 0, 0, 0, 0, 0
        args.corpus, args.false_wake_minutes, args.trips, args.callgrind_seconds, args.wyoming = False, 0, 0, 0, False
        args.house_trials = 0
    if args.house:
        args.runs, args.trips, args.callgrind_seconds, args.echo_runs, args.barge_trials, args.offline_barge_trials = 0, 0, 0, 0, 0, 0
        args.stream_seconds, args.local_seconds, args.wakes, args.corpus, args.false_wake_minutes = 0, 0, 0, False, 0
        args.echo_mode_runs = 0

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
            bench.check_time(f"record run {number}")
            print(f"record run {number} of {args.runs}…", file=sys.stderr, flush=True)
            bench.run_once(number)
        if args.runs:
            bench.voice_context()
        if args.stream_seconds > 0:
            for number in range(1, args.stream_runs + 1):
                print(f"stream run {number} of {args.stream_runs}…", file=sys.stderr, flush=True)
                bench.stream_once(number)
        if args.local_seconds > 0:
            for number in range(1, args.local_runs + 1):
                print(f"local wake word run {number} of {args.local_runs}…", file=sys.stderr, flush=True)
                bench.local_once(number)
            bench.local_against_stream()
        if args.wakes > 0:
            print(f"{args.wakes} wakes…", file=sys.stderr, flush=True)
            bench.local_wakes()
        if args.house_trials > 0:
            house = HouseBench(bench, FIG, BenchError, Trace, WS_TEXT, WAKE_WORD, QUESTION, TRIP_REPLY)
            reason = house.skip_reason()
            if reason:
                print(f"the house: skipped: {reason}.", file=sys.stderr, flush=True)
                bench.notes.append(f"The house was not measured: {reason}.")
            else:
                house.run(args.house_trials)
                bench.knobs(**REPLY)
        if args.corpus:
            print("the wake word corpus…", file=sys.stderr, flush=True)
            bench.corpus()
        if args.false_wake_minutes > 0:
            print(f"{args.false_wake_minutes:g} minutes of speech for false wakes…", file=sys.stderr, flush=True)
            bench.false_wakes()
        if args.echo_runs > 0 or args.echo_mode_runs > 0 or args.barge_trials > 0 or args.offline_barge_trials > 0:
            echo = EchoBench(bench, FIG, cpu_seconds, own_status, mb, BenchError)
            echo.prepare()
            echo.erle(args.echo_runs)
            began_modes = time.monotonic()
            echo.modes(args.echo_mode_runs)
            bench.notes.append(f"The echo room in each wake mode took {time.monotonic() - began_modes:.0f} s.")
            if args.offline_barge_trials > 0:
                print("the echo room offline…", file=sys.stderr, flush=True)
                echo.offline([int(r) for r in args.barge_ratios.split(",")], args.offline_barge_trials)
            if args.barge_trials > 0:
                for ratio in [int(r) for r in args.barge_ratios.split(",")]:
                    print(f"wake words over an answer at {ratio} dB…", file=sys.stderr, flush=True)
                    echo.barge_in(ratio, args.barge_trials if ratio == 6 else max(1, args.barge_trials // 2))
                print("wake words over an answer at 6 dB with wake server…", file=sys.stderr, flush=True)
                began_server = time.monotonic()
                echo.barge_server(6, args.barge_trials)
                bench.notes.append(f"The barge-in trials with wake server took {time.monotonic() - began_server:.0f} s.")
        if args.trips > 0:
            print(f"{args.trips} round trips…", file=sys.stderr, flush=True)
            bench.trips()
        if args.callgrind_seconds > 0:
            for number in range(1, args.callgrind_runs + 1):
                print(f"callgrind run {number} of {args.callgrind_runs}…", file=sys.stderr, flush=True)
                bench.callgrind_once(number)
    except (BenchError, OSError, subprocess.SubprocessError) as error:
        print(f"bench: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted; everything it started has been stopped.", file=sys.stderr)
        return 130
    finally:
        bench.close()
    print(report(args, host, time.monotonic() - began, bench))
    return 0


if __name__ == "__main__":
    sys.exit(main())

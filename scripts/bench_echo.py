# scripts/bench's echo section (issue 15): a room with an echo, as the tests build
# it (Tests/SatelliteTests/Support/EchoRoom.swift): the daemon's speaker writes a
# FIFO, what it played goes through sox (reverb, 12 dB down) and comes back 100 ms
# later into the microphone's FIFO, under a talker. The 100 ms (it was 40) and the
# fresh start for each answer keep the room's own path steady: with 40 ms the
# echo ran short whenever the speaker's FIFO or sox gave their bytes late, and
# the path grew by what was missing (the daemon measured 191 then 198, 185 then
# 206 ms within an answer). A daemon late to read finds what it missed, up to
# HOLD, as a card captures while its reader is late (dropped, it shortened the
# path; EchoModesTests saw one 20 ms loss take a later answer to 8 dB). Measured: ERLE on speech and on music-like tones (the capture's copy before processing against `meter`
# after it); ERLE in each wake mode over two answers (what the room wrote into
# the microphone against `meter`, window by window, as EchoModesTests does);
# the wake word said over an answer at speaker-to-talker ratios of 0, 6 and
# 12 dB with the daemon's ear (detected or not; the decision to playback
# stopped), and at 6 dB with the test server's reference detector; and CPU and RSS
# over an answer with the processing on and off. Easy to get wrong: the
# room's FIFOs are held read-write and non-blocking, so nothing here blocks on
# the daemon nor the daemon on it; and the talker's level is set against the
# echo's as the microphone hears it (the same sox chain, offline).
"""The echo room for scripts/bench."""

import array
import fcntl
import json
import math
import os
import re
import socket
import subprocess
import sys
import termios
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAW = ["-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1"]
ROOM = ["reverb", "40", "50", "60", "vol", "-12dB"]
# What the microphone's FIFO holds ahead of the reader (bytes): 320 ms. ALSA's file plugin fills
# what a read of its infile comes short of with the card's silence, so a FIFO that holds less
# than the daemon takes at once puts gaps into the microphone, which no card does. The ear reads
# 120 ms periods, two at a time on the paced card; with 200 ms (as MicFeeder holds) each answer's
# first seconds had gaps, the echo moved against what was played by up to 16 ms, and those were
# the live misses (the daemon's own near and reference, dumped and heard again offline, missed
# exactly where live did; with 320 ms its microphone is the room's sample for sample).
HOLD = 10240
# Echo held in hand, at least, for the speaker's frames that reach the room late (EchoRoom.inHandMs).
IN_HAND_MS = 200
# The wake modes, each with the microphone's period it reads: push 20 ms, local 120, server 80.
MODES = ("push", "local", "server")
ANSWER = ("The weather today is mostly sunny with a light breeze from the west, and temperatures reaching "
          "twenty degrees by the afternoon. Tomorrow brings rain in the morning, clearing later, so take an umbrella.")


def rms(samples):
    return math.sqrt(sum(s * s for s in samples) / max(1, len(samples)))


class EchoRoom:
    """The speaker's FIFO through sox back into the microphone's FIFO, 20 ms at a time."""

    def __init__(self, directory, delay_ms=100):
        self.microphone = os.path.join(directory, "room-mic.fifo")
        self.speaker = os.path.join(directory, "room-speaker.fifo")
        for path in (self.microphone, self.speaker):
            os.mkfifo(path, 0o600)
        self.mic_fd = os.open(self.microphone, os.O_RDWR | os.O_NONBLOCK)
        self.speaker_fd = os.open(self.speaker, os.O_RDWR | os.O_NONBLOCK)
        self.sox = subprocess.Popen(["sox", "-q", "--buffer", "640"] + RAW + ["-"] + RAW + ["-"] + ROOM,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        os.set_blocking(self.sox.stdout.fileno(), False)
        # The echo held in hand for frames that reach the room late: ALSA's file plugin hands the FIFO
        # what was written a buffer (160 ms) earlier, as the daemon writes more (EchoRoom.swift says more).
        self.delay = max(delay_ms, IN_HAND_MS) * 16
        self.lock = threading.Lock()
        self.talker, self.echo, self.echoing, self.stopped = array.array("h"), array.array("h"), False, False
        # What moved the room's echo path, for the bench's notes: microphone periods lost because the
        # daemon was too late to read them (the path shrank by them), and echo that ran short while an
        # answer played (the path grew by it: for a speaker that paused, as a room's does).
        self.dropped, self.short = [], []
        # What the microphone's FIFO held after the last write, when the daemon was last seen to read
        # it, and what it has yet to be given.
        self.left, self.read_at, self.backlog = 0, 0.0, b""
        # The energy (sum of squares, full scale 1) of each period written into the microphone, and when.
        self.written = []
        self.heard_at = 0.0
        # The room on one timeline of 20 ms ticks from `started`: what the microphone was given
        # (dropped or not) and what the speaker played, for a trial to be cut out and heard again
        # offline (wakeword-bench --played). What was played is placed by its echo, not by when it was
        # read: each sample sox is given waits in `dry`, a twin of the echo's queue, and is logged at the
        # tick its echo is heard (a trial is cut `delay` later from it), so the replay has the room's
        # own path, sample for sample.
        self.started, self.heard_log, self.played_log = time.monotonic(), array.array("h"), array.array("h")
        self.fed, self.dry, self.odd = array.array("h"), array.array("h"), {"played": b"", "back": b""}
        self.thread = threading.Thread(target=self.pump, daemon=True)
        self.thread.start()

    def whole(self, side, data):
        """`data` up to its last whole sample, with the byte a read left over before it."""
        data = self.odd[side] + data
        cut = len(data) // 2 * 2
        self.odd[side] = data[cut:]
        return data[:cut]

    def say(self, samples):
        """`samples`: an array of 16-bit samples, said after what is still being said; returns when
        (monotonic) the room starts on them."""
        with self.lock:
            start = time.monotonic() + len(self.talker) / 16000
            self.talker.extend(samples)
        return start

    def heard_dbfs(self, start, end):
        """The mean power (dBFS) of what went into the microphone from `start` to `end` (monotonic, by
        when it was written), or None when nothing was. It is read HOLD (320 ms) after it was written."""
        periods = [energy for at, energy in list(self.written) if start <= at < end]
        if not periods:
            return None
        return 10 * math.log10(max(sum(periods) / (len(periods) * 320), 1e-12))

    def stop(self):
        self.stopped = True
        self.thread.join(2)
        self.sox.kill()
        self.sox.wait()
        os.close(self.mic_fd)
        os.close(self.speaker_fd)

    def pump(self):
        next_tick = self.started
        while not self.stopped:
            try:
                played = os.read(self.speaker_fd, 65536)
                self.sox.stdin.write(played)
                self.sox.stdin.flush()
                self.fed.frombytes(self.whole("played", played))
            except BlockingIOError:
                pass
            try:
                back = self.whole("back", os.read(self.sox.stdout.fileno(), 65536))
            except BlockingIOError:
                back = b""
            with self.lock:
                if back:
                    if not self.echoing:
                        self.echo.extend([0] * self.delay)
                        self.dry.extend([0] * self.delay)
                        self.echoing = True
                    self.echo.frombytes(back)
                    # sox gives back one sample for each it was given, in order.
                    n = len(back) // 2
                    self.dry.extend(self.fed[:n])
                    del self.fed[:n]
                    self.heard_at = time.monotonic()
                elif self.echoing and not self.echo and time.monotonic() - self.heard_at > 0.3:
                    # The speaker has stopped: the next answer's echo starts `delay` after its first sound,
                    # as a real card's would, instead of wherever this one's ended.
                    self.echoing = False
                period = array.array("h", [0] * 320)
                if self.echoing and 0 < len(self.echo) < 320:
                    self.short.append((time.monotonic(), 320 - len(self.echo)))
                for source in (self.talker, self.echo):
                    n = min(320, len(source))
                    for i in range(n):
                        period[i] = max(-32768, min(32767, period[i] + source[i]))
                    del source[:n]
                dry = self.dry[:320]
                del self.dry[:320]
                self.heard_log.extend(period)
                self.played_log.extend(dry + array.array("h", [0] * (320 - len(dry))))
            # A daemon that is late finds what it missed waiting, up to HOLD, as a card captures while
            # its reader is late: the path holds. One gone for longer (the microphone closed, or far
            # behind) finds only HOLD: the rest is lost.
            self.written.append((time.monotonic(), sum(s * s for s in period) / 32768 ** 2))
            self.backlog += period.tobytes()
            queued = array.array("i", [0])
            fcntl.ioctl(self.mic_fd, termios.FIONREAD, queued)
            if queued[0] < self.left:
                self.read_at = time.monotonic()
            room = min(len(self.backlog), HOLD - queued[0]) & ~1
            self.left = queued[0]
            if room > 0:
                wrote = os.write(self.mic_fd, self.backlog[:room])
                self.backlog = self.backlog[wrote:]
                self.left += wrote
            if self.backlog and time.monotonic() - self.read_at > HOLD / 32000:
                self.dropped.extend([time.monotonic()] * ((len(self.backlog) + 639) // 640))
                self.backlog = b""
            next_tick += 0.02
            time.sleep(max(0, next_tick - time.monotonic()))


def meter(d, seconds):
    """`seconds` of the daemon's `meter` on its processed microphone: (monotonic, dBFS) every 100 ms,
    each with when it came; `d` is the daemon's folder (control.sock)."""
    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    control.connect(os.path.join(d, "control.sock"))
    control.sendall(b'{"v": 1, "id": "m", "cmd": "meter", "seconds": %d, "processed": true}\n' % seconds)
    levels, buffer = [], b""
    with control:
        while chunk := control.recv(65536):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                value = json.loads(line)
                if value.get("event") == "level":
                    levels.append((time.monotonic(), value["rms"]))
                if value.get("id") == "m":
                    return levels
    return levels


def state(log):
    """The daemon's last state (`State idle.` and the like) in its log, or None."""
    states = re.findall(r"\bState (\w+)\.", open(log).read())
    return states[-1] if states else None


def mean_dbfs(levels):
    """The mean power of levels in dBFS, in dBFS."""
    return 10 * math.log10(max(sum(10 ** (level / 10) for level in levels) / max(1, len(levels)), 1e-12))


class EchoBench:
    """`cpu_seconds`, `own_status` and `mb` are bench.py's readers of /proc; `error` its BenchError."""

    def __init__(self, bench, fig, cpu_seconds, own_status, mb, error):
        self.bench, self.fig, self.error = bench, fig, error
        self.cpu_seconds, self.own_status, self.mb = cpu_seconds, own_status, mb

    def prepare(self):
        b = self.bench
        b.speech(ANSWER, "answer", 0, 0.2)
        subprocess.run(["sox"] + RAW + [b.path("answer.raw"), b.path("answer16.wav")], check=True)
        # Music-like: three plucked notes at a time, changing every half second, for 11 s.
        notes = []
        for i, chord in enumerate([("C4", "E4", "G4"), ("A3", "C4", "E4"), ("F3", "A3", "C4"), ("G3", "B3", "D4")] * 6):
            notes.append(b.path(f"n{i}.wav"))
            subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", notes[-1], "synth", "0.5"]
                           + [x for n in chord for x in ("pluck", n)] + ["vol", "0.3"], check=True)
        subprocess.run(["sox"] + notes + [b.path("tones16.wav")], check=True)
        self.wake = array.array("h", self.bench.speech("okay nabu", "echo-wake", 0.3, 0.3))
        self.question = array.array("h", self.bench.speech("what is the weather like", "echo-q", 0.3, 2))
        # The echo's level at the microphone, from the same room offline.
        subprocess.run(["sox", b.path("answer16.wav")] + RAW + [b.path("answer-echo.raw")] + ROOM, check=True)
        self.echo_rms = rms(array.array("h", open(b.path("answer-echo.raw"), "rb").read()))

    def room_devices(self, d, room):
        """ALSA names for this room's microphone (its copy in `d`/heard.raw) and speaker."""
        with open(self.bench.path("asound.conf"), "a") as f:
            name = os.path.basename(d)
            f.write(f"""pcm.{name}mic {{ type file slave.pcm "clock" file "{d}/heard.raw" infile "{room.microphone}" format "raw" }}
pcm.{name}speaker {{ type plug slave {{ pcm {{ type file slave.pcm "clock" file "{room.speaker}" format "raw" }} format S16_LE rate 16000 channels 1 }} }}
""")
        return f"{name}mic", f"{name}speaker"

    def in_room(self, name, wake, audio):
        """A daemon (transport stream, `wake`, `audio` settings) in a room of its own in folder `name`:
        returns (its folder, the room, its environment, the process, its notify socket, its log)."""
        b = self.bench
        d = b.path(name)
        os.makedirs(d)
        room = EchoRoom(d)
        mic, speaker = self.room_devices(d, room)
        env = b.daemon_env(d, {"transport": "stream", "wake": wake, "audio": {"input": mic, "output": speaker, **audio}})
        daemon, notify, _ = b.start_daemon(d, env)
        return d, room, env, daemon, notify, os.path.join(d, "daemon.log")

    def wake_under(self, ratio_db):
        """The wake word at the level that puts the answer's echo `ratio_db` over it at the microphone."""
        gain = self.echo_rms / max(1.0, rms(self.wake[4800:-4800])) / 10 ** (ratio_db / 20)
        return array.array("h", [max(-32768, min(32767, int(s * gain))) for s in self.wake])

    def await_count(self, log, text, count, daemon, timeout):
        until = time.monotonic() + timeout
        while open(log).read().count(text) < count:
            if time.monotonic() > until or daemon.poll() is not None:
                return False
            time.sleep(0.02)
        return True

    def erle_once(self, number, answer, processing):
        """One answer played into the room; returns (ERLE dB, CPU s per minute, RSS MiB) over 6 s of it."""
        b = self.bench
        b.check_time(f"echo run {number}")
        b.knobs(audioFile=b.path(answer), wake="never")
        d, room, env, daemon, notify, log = self.in_room(f"echo{number}", "push", {
            "leadingSilenceMs": 4000, "echoCancel": processing, "noiseSuppression": False, "autoGain": False})
        try:
            b.await_notify(notify, daemon, "READY=1", 10)
            b.await_log(log, "Connected to the server's /listen.", daemon, 15)
            ctl = b.procs.start([os.path.join(b.bin, "parlourctl"), "--json", "listen"], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            # The room goes on whether or not anyone listens: the question is said once the turn does.
            if not self.await_count(log, "State listening.", 1, daemon, 15):
                raise self.error(f"echo run {number}: the turn did not start; see {log} (--keep)")
            room.say(self.question)
            if not self.await_count(log, "State speaking.", 1, daemon, 30):
                raise self.error(f"echo run {number}: the answer did not play; see {log} (--keep)")
            cpu0, t0 = self.cpu_seconds(daemon.pid), time.monotonic()
            levels = [level for _, level in meter(d, 6)]
            cpu = (self.cpu_seconds(daemon.pid) - cpu0) / (time.monotonic() - t0) * 60
            rss = self.mb(self.own_status(daemon.pid)["VmRSS"])
            ctl.wait(60)
        finally:
            b.stop_others()
            notify.close()
            room.stop()
        heard = array.array("h", open(os.path.join(d, "heard.raw"), "rb").read())
        windows = min(len(levels), len(heard) // 1600)
        before = sum((s / 32768) ** 2 for s in heard[20 * 1600: windows * 1600])
        after = sum(10 ** (level / 10) * 1600 for level in levels[20:windows])
        return 10 * math.log10(before / max(after, 1e-12)), cpu, rss

    def erle(self, runs):
        for number in range(1, runs + 1):
            print(f"echo run {number} of {runs}…", flush=True, file=sys.stderr)
            erle, cpu, rss = self.erle_once(f"s{number}", "answer16.wav", True)
            self.fig["erle_speech_db"].samples.append(erle)
            self.fig["echo_cpu_on"].samples.append(cpu)
            self.fig["echo_rss_on"].samples.append(rss)
            self.fig["erle_tones_db"].samples.append(self.erle_once(f"t{number}", "tones16.wav", True)[0])
            erle, cpu, rss = self.erle_once(f"o{number}", "answer16.wav", False)
            self.fig["erle_off_db"].samples.append(erle)
            self.fig["echo_cpu_off"].samples.append(cpu)
            self.fig["echo_rss_off"].samples.append(rss)

    def mode_once(self, number, wake):
        """Two answers in the room with `wake`, each turn asked as that mode asks one (the server's
        stand-in wake hears the question; otherwise `parlourctl listen`); returns the ERLE (dB) of the
        first answer from 2 s after its echo's first sound and of the second from half a second."""
        b = self.bench
        b.check_time(f"echo with wake {wake}, run {number}")
        # The server's speaking flag is held until `spoke`: its stand-in wake word (any loud 240 ms)
        # would take an uncancelled echo for a wake and stop the answer being measured.
        b.knobs(audioFile=b.path("answer16.wav"), wake="loud" if wake == "server" else "never", speakingHoldMs=60000)
        d, room, env, daemon, notify, log = self.in_room(f"mode-{wake}{number}", wake, {
            "leadingSilenceMs": 4000, "echoCancel": True, "noiseSuppression": False, "autoGain": False})
        erle = []
        try:
            b.await_notify(notify, daemon, "READY=1", 10)
            b.await_log(log, "Connected to the server's /listen.", daemon, 15)
            connected = time.monotonic()
            for turn in range(2):
                text = open(log).read()
                listening, speaking, idle = (text.count(f"State {s}.") for s in ("listening", "speaking", "idle"))
                ctl = None
                if wake != "server":
                    ctl = b.procs.start([os.path.join(b.bin, "parlourctl"), "--json", "listen"], env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    if not self.await_count(log, "State listening.", listening + 1, daemon, 15):
                        raise self.error(f"echo with wake {wake}: turn {turn + 1} did not start; see {log} (--keep)")
                room.say(self.question)
                if not self.await_count(log, "State speaking.", speaking + 1, daemon, 30):
                    raise self.error(f"echo with wake {wake}: answer {turn + 1} did not play; see {log} (--keep)")
                levels = meter(d, 7)
                if ctl:
                    ctl.wait(60)
                    b.procs.running.remove(ctl)
                self.await_count(log, "State idle.", idle + 1, daemon, 30)
                # What the room put into the microphone over each window: it is read HOLD after it was written.
                hold = HOLD / 32000
                heard = [room.heard_dbfs(at - 0.1 - hold, at - hold) or -120 for at, _ in levels]
                # The answer counts from its echo's first sound: the first from 2 s on, the later from half a second.
                onset = next((i for i, level in enumerate(heard) if level > -60), None)
                if onset is None:
                    raise self.error(f"echo with wake {wake}: answer {turn + 1}'s echo was not heard; see {log} (--keep)")
                start = onset + (20 if turn == 0 else 5)
                if len(levels) < start + 10:
                    raise self.error(f"echo with wake {wake}: the meter measured {len(levels)} windows of answer {turn + 1}")
                erle.append(mean_dbfs(heard[start:]) - mean_dbfs([level for _, level in levels[start:]]))
        finally:
            b.stop_others()
            notify.close()
            room.stop()
            b.knobs(speakingHoldMs=250)
        self.room_note(f"The echo room with wake {wake}, run {number}", room, log, connected)
        return erle

    def modes(self, runs):
        """ERLE in each wake mode, for the first answer after the daemon starts and the next."""
        for number in range(1, runs + 1):
            for wake in MODES:
                print(f"echo with wake {wake}, run {number} of {runs}…", flush=True, file=sys.stderr)
                first, later = self.mode_once(number, wake)
                self.fig[f"erle_{wake}_first_db"].samples.append(first)
                self.fig[f"erle_{wake}_later_db"].samples.append(later)

    def barge_server(self, ratio_db, trials):
        """`trials` answers in wake server with the wake word said over each, the echo `ratio_db` louder
        than the talker. The test server hears "okay nabu" with the reference detector (wake "word"), on
        what the satellite streams from 2 s into an answer, as a server that listens over its answers
        would. Its `stop` ends the playback (the daemon's `Playback stopped.`): from the word to 3 s
        after it, the word was heard; before it, something else woke the server."""
        b = self.bench
        b.check_time(f"barge-in with wake server at {ratio_db} dB")
        b.knobs(audioFile=b.path("answer16.wav"), wake="word", speakingHoldMs=2000)
        d, room, env, daemon, notify, log = self.in_room(f"barge-server{ratio_db}", "server", {"leadingSilenceMs": 1500})
        quiet = self.wake_under(ratio_db)
        heard, echoed, outcomes = 0, 0, []
        try:
            b.await_notify(notify, daemon, "READY=1", 10)
            b.await_log(log, "Connected to the server's /listen.", daemon, 15)
            listening = time.monotonic()
            for trial in range(trials):
                said = int(self.word_over_answer(room, log, daemon, quiet, f"barge-in with wake server, trial {trial}") * 1e9)
                began, end = said - 2_500_000_000, said + int((len(quiet) / 16000 + 3) * 1e9)
                # The answer stopped (the server's `stop`), or played to its end (the daemon idle again).
                stopped, until = None, time.monotonic() + 30
                while stopped is None and state(log) != "idle" and time.monotonic() < until and daemon.poll() is None:
                    time.sleep(0.05)
                    stops = re.findall(r"^debug: Playback stopped\..*\bmonotonic_ns=(\d+)", open(log).read(), re.M)
                    stopped = next((int(n) for n in stops if int(n) >= began), None)
                if stopped is not None and said <= stopped <= end:
                    heard += 1
                elif stopped is not None and stopped < said:
                    echoed += 1
                # When the server heard the word, on the same clock (its log counts from its start).
                log_now = b.server_log()
                wakes = [log_now["started"] + e["t"] / 1000 for e in log_now["socket"] if e.get("event") == "wake"]
                woke = next((w for w in wakes if w * 1e9 >= began), None)
                server = "" if woke is None else f" (the server woke {woke - said / 1e9:+.2f})"
                outcomes.append(("played on" if stopped is None else f"{(stopped - said) / 1e9:+.2f}") + server)
                self.settle(log, daemon, env)
        finally:
            b.stop_others()
            notify.close()
            room.stop()
            b.knobs(speakingHoldMs=250, wake="loud")
        self.fig[f"barge_server_{ratio_db}"].samples.append(heard / trials)
        b.notes.append(f"Wake word over an answer with wake server (the test server's reference detector), echo {ratio_db} dB "
                       f"over the talker: {heard} of {trials}; the answer stopped before the word was said (its echo "
                       f"woke the server) {echoed} times. Each trial, playback stopped this long after the word began, "
                       f"and when the server's detector woke (s): {', '.join(outcomes)}.")
        self.room_note(f"The echo room with wake server at {ratio_db} dB", room, log, listening)

    def settle(self, log, daemon, env):
        """Returns once the daemon has been idle for 2 s; an answer the server gives to what it heard
        after a wake (the rest of the word) is cancelled, not waited for."""
        until, idle_since = time.monotonic() + 60, None
        while time.monotonic() < until and daemon.poll() is None:
            now = state(log)
            if now == "speaking":
                subprocess.run([os.path.join(self.bench.bin, "parlourctl"), "cancel"], env=env, capture_output=True, timeout=10)
            idle_since = (idle_since or time.monotonic()) if now == "idle" else None
            if idle_since and time.monotonic() - idle_since > 2:
                return
            time.sleep(0.1)
        raise self.error(f"the daemon was not idle again within 60 s; see {log} (--keep)")

    def offline(self, ratios, trials):
        """The same room offline (OfflineRoom): ERLE, the wake word over an answer at each ratio, and
        the processing's CPU with echo cancelling and noise suppression, or noise suppression alone."""
        b = self.bench
        b.check_time("the echo room offline")
        d = b.path("offline")
        os.makedirs(d)
        room = OfflineRoom(d, os.path.join(b.bin, "wakeword-bench"), os.path.join(ROOT, ".build", "wakeword"),
                           b.path("answer.raw"), b.path("echo-wake.raw"))
        self.fig["offline_erle_db"].samples.extend(room.erle(5))
        for ratio in ratios:
            key = f"offline_barge_{ratio}"
            if key in self.fig:
                on, off = room.barge(ratio, trials)
                self.fig[key].samples.append(on / trials)
                self.fig[f"offline_barge_off_{ratio}"].samples.append(off / trials)
        self.fig["offline_cpu_ns"].samples.append(room.cpu_per_minute("ns"))
        self.fig["offline_cpu_aec_ns"].samples.append(room.cpu_per_minute("aec,ns"))
        self.fig["offline_cpu_aec_ns_idle"].samples.append(room.cpu_per_minute("aec,ns", playing=False))

    def barge_in(self, ratio_db, trials):
        """`trials` answers with the wake word said over each, the echo `ratio_db` louder than the talker."""
        b = self.bench
        b.check_time(f"barge-in at {ratio_db} dB")
        b.knobs(audioFile=b.path("answer16.wav"), wake="never")
        d, room, env, daemon, notify, log = self.in_room(f"barge{ratio_db}", "local", {"leadingSilenceMs": 1500})
        quiet = self.wake_under(ratio_db)
        detected, outcomes = 0, []
        try:
            b.await_notify(notify, daemon, "READY=1", 10)
            b.await_log(log, "Listening for the wake word", daemon, 15)
            listening = time.monotonic()
            for trial in range(trials):
                wakes = open(log).read().count("Heard the wake word")
                said = self.word_over_answer(room, log, daemon, quiet, f"barge-in trial {trial}")
                heard = self.await_count(log, "Heard the wake word", wakes + 2, daemon, 8)
                if heard:
                    detected += 1
                # What the room lost while the word was said: periods nobody read, echo that ran short.
                end = said + len(quiet) / 16000 + 0.5
                outcomes.append((heard, sum(1 for t in room.dropped if said <= t <= end),
                                 sum(n for t, n in room.short if said <= t <= end)))
                # The trial as the room had it, from half a second before the answer to 2 s after the
                # word, with what the speaker played on the same timeline (kept with --keep).
                first = max(0, int((said - 3.0 - room.started) * 16000))
                last = int((end + 1.5 - room.started) * 16000)
                with room.lock:
                    heard_part = room.heard_log[first:last]
                    played_part = room.played_log[first + room.delay:last + room.delay]
                played_part.extend([0] * (len(heard_part) - len(played_part)))
                name = f"trial{trial}-{'heard' if heard else 'missed'}"
                with open(os.path.join(d, name + ".raw"), "wb") as f:
                    heard_part.tofile(f)
                with open(os.path.join(d, name + "-played.raw"), "wb") as f:
                    played_part.tofile(f)
                # Idle again: the new turn hears nothing, or the answer ends.
                idles = open(log).read().count("State idle.")
                self.await_count(log, "State idle.", idles + 1, daemon, 30)
            text = open(log).read()
        finally:
            b.stop_others()
            notify.close()
            room.stop()
        decided = [int(n) for n in re.findall(r"^debug: Wake word decided\..*\bmonotonic_ns=(\d+)", text, re.M)]
        stopped = [int(n) for n in re.findall(r"^debug: Playback stopped\..*\bmonotonic_ns=(\d+)", text, re.M)]
        for ns in decided:
            after = [s for s in stopped if s >= ns]
            if after and after[0] - ns < 2e9:
                self.fig["barge_stop_ms"].samples.append((after[0] - ns) / 1e6)
        key = f"barge_rate_{ratio_db}"
        if key in self.fig:
            self.fig[key].samples.append(detected / trials)
        self.bench.notes.append(f"Wake word over an answer with wake local, echo {ratio_db} dB over the talker: {detected} of {trials}.")
        self.bench.notes.append(
            f"Each trial at {ratio_db} dB (heard, microphone periods dropped and echo samples short while the word was said): "
            + "; ".join(f"{'heard' if woke else 'missed'} {lost} {short}" for woke, lost, short in outcomes) + ".")
        self.room_note(f"The echo room at {ratio_db} dB", room, log, listening)

    def word_over_answer(self, room, log, daemon, word, what):
        """The wake word and a question said, then `word` 2.5 s after the question's trailing quiet, in the
        answer; returns when it was said (monotonic), which the daemon hears HOLD later."""
        speaking = open(log).read().count("State speaking.")
        room.say(self.wake + self.question)
        if not self.await_count(log, "State speaking.", speaking + 1, daemon, 30):
            raise self.error(f"{what}: the answer did not play; see {log} (--keep)")
        # After what is left of the question's trailing quiet, which the server's endpointer did not wait for.
        return room.say(array.array("h", [0] * 40000) + word) + 2.5

    def room_note(self, which, room, log, since):
        """A note of what moved the room's echo path from `since` on, and the delays the daemon measured."""
        delays = re.findall(r"Echo delay measured\..*\bdelay_ms=(-?\d+)", open(log).read())
        dropped = [t for t in room.dropped if t > since]
        self.bench.notes.append(
            f"{which}: {len(dropped)} microphone periods dropped (the daemon was not reading), the echo "
            f"short {len(room.short)} times ({sum(n for _, n in room.short)} samples in all); delays measured (ms): {' '.join(delays)}.")


class OfflineRoom:
    """The same room offline: what the microphone would hear, made by sox from what the speaker
    played, and run through the daemon's processing and wake word by `wakeword-bench --played`
    (Sources/wakeword-bench), as fast as the CPU allows. No clock and no card: what it measures is
    the processing alone, whatever the machine's load; the delay is drawn afresh for each clip,
    over the range the live room was measured at (EchoDelay: 115–353 ms past the timeline)."""

    def __init__(self, directory, wakeword_bench, folder, answer_raw, wake_raw, seed=15):
        self.directory, self.tool, self.folder = directory, wakeword_bench, folder
        self.answer = array.array("h", open(answer_raw, "rb").read())
        self.wake = array.array("h", open(wake_raw, "rb").read())
        self.played = os.path.join(directory, "played.raw")
        self.answer.tofile(open(self.played, "wb"))
        subprocess.run(["sox"] + RAW + [self.played] + RAW + [os.path.join(directory, "echo.raw")] + ROOM, check=True)
        self.echo = array.array("h", open(os.path.join(directory, "echo.raw"), "rb").read())
        self.echo_rms = rms(self.echo)
        self.random = __import__("random").Random(seed)

    def clip(self, name, delay_ms, ratio_db=None, wake_at=2.5):
        """A microphone's recording: the echo `delay_ms` late, and the wake word at `wake_at` s,
        `ratio_db` under the echo (none when None)."""
        out = array.array("h", [0] * len(self.answer))
        d = int(delay_ms * 16)
        for i in range(d, len(out)):
            if i - d < len(self.echo):
                out[i] = self.echo[i - d]
        if ratio_db is not None:
            gain = self.echo_rms / max(1.0, rms(self.wake[4800:-4800])) / 10 ** (ratio_db / 20)
            at = int(wake_at * 16000)
            for i, s in enumerate(self.wake):
                if at + i < len(out):
                    out[at + i] = max(-32768, min(32767, out[at + i] + int(s * gain)))
        path = os.path.join(self.directory, f"{name}.raw")
        out.tofile(open(path, "wb"))
        return path

    def run(self, clips, processing="aec,ns"):
        result = subprocess.run([self.tool, "--played", self.played, "--processing", processing, self.folder, "okay_nabu"] + clips,
                                check=True, capture_output=True, text=True)
        return json.loads(result.stdout)

    def barge(self, ratio_db, trials):
        """Of `trials` clips, in how many the wake word said 2.5–6 s into the answer is heard within 2 s of it:
        through echo cancelling and noise suppression, and the same clips through noise suppression alone
        (echoCancel off: what the wake word would hear if the microphone stayed open)."""
        clips, windows = [], []
        for trial in range(trials):
            at = self.random.uniform(2.5, 6)
            clips.append(self.clip(f"b{ratio_db}-{trial}", self.random.uniform(115, 353), ratio_db, at))
            windows.append((at * 1000, at * 1000 + len(self.wake) / 16 + 2000))

        def heard(report):
            return sum(1 for clip, (lo, hi) in zip(report["clips"], windows) if any(lo <= w["ms"] <= hi for w in clip["wakes"]))
        return heard(self.run(clips)), heard(self.run(clips, "ns"))

    def erle(self, runs, processing="aec"):
        """ERLE (dB) after 2 s on the echo alone, one per run, each at a delay drawn afresh."""
        clips = [self.clip(f"e{n}", self.random.uniform(115, 353)) for n in range(runs)]
        report = self.run(clips, processing)
        return [c["heard_dbfs"] - c["processed_dbfs"] for c in report["clips"]]

    def cpu_per_minute(self, processing, playing=True):
        """CPU seconds per minute of audio the processing takes on the echo with the answer playing, or
        on the same microphone with the speaker silent."""
        played = self.played
        if not playing:
            played = os.path.join(self.directory, "silent.raw")
            array.array("h", [0] * len(self.answer)).tofile(open(played, "wb"))
        result = subprocess.run([self.tool, "--played", played, "--processing", processing, self.folder, "okay_nabu"]
                                + [self.clip("cpu", 200)] * 3, check=True, capture_output=True, text=True)
        report = json.loads(result.stdout)
        return report["processing_cpu_s"] / report["audio_s"] * 60


if __name__ == "__main__":
    # By hand: python3 scripts/bench_echo.py WAKEWORD_BENCH FOLDER WORKDIR [RATIO...]
    import tempfile
    tool, folder, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    for text, name, trail in ((ANSWER, "answer", 0.2), ("okay nabu", "wake", 0.3)):
        subprocess.run(["espeak-ng", "-w", os.path.join(work, f"{name}.wav"), text], check=True)
        subprocess.run(["sox", os.path.join(work, f"{name}.wav")] + RAW + [os.path.join(work, f"{name}.raw"), "pad", "0.3", str(trail)], check=True)
    room = OfflineRoom(work, tool, folder, os.path.join(work, "answer.raw"), os.path.join(work, "wake.raw"))
    print("ERLE aec:", [round(e, 1) for e in room.erle(4)])
    for ratio in [int(r) for r in sys.argv[4:]] or [6]:
        on, off = room.barge(ratio, 20)
        print(f"{ratio} dB: {on} of 20 ({off} with echo cancelling off)")

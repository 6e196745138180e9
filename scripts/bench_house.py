# scripts/bench's house section: satellites of one house deciding who answers a
# wake, as the tests build it (Tests/SatelliteTests/Support/House.swift): one,
# two or three daemons (wake local, one token, one test server) beside the
# namespace's avahi-daemon, each microphone a FIFO kept full of silence at real
# time, and the same wake word and question said into each, 6 dB apart from one
# room to the next and 20 ms apart. Measured: the wake's decision (the daemon's
# debug line) to `start` on the socket (the preloaded tracer's send), with
# arbitration off, on alone, and on with one and two siblings; and the share of
# trials in which the loudest alone reached the server. Easy to get wrong: a
# loser never sends `start`, so a decision is paired only with a send soon
# after it, never with the next trial's; and siblings find each other by
# Bonjour, so this runs only inside scripts/netns-run (scripts/bench --house).
"""The house of satellites for scripts/bench."""

import fcntl
import json
import os
import re
import struct
import subprocess
import sys
import termios
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ["kitchen", "hall", "lounge"]
WINDOW_MS = 200  # arbitration.windowMs's default
CHUNK = 640  # 20 ms of 16 kHz mono S16_LE
LEAD = 6400  # what a microphone's FIFO holds ahead of the daemon: 200 ms, as the tests' MicFeeder


class Room:
    """A microphone FIFO kept `LEAD` bytes ahead of its reader: silence, or what was said."""

    def __init__(self, path):
        os.mkfifo(path, 0o600)
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)  # never blocks, and no EPIPE when the reader goes
        self.queue, self.lock, self.stopped = bytearray(), threading.Lock(), False
        self.thread = threading.Thread(target=self.pump, daemon=True)
        self.thread.start()

    def say(self, audio):
        with self.lock:
            self.queue += audio

    def pump(self):
        while not self.stopped:
            queued = struct.unpack("i", fcntl.ioctl(self.fd, termios.FIONREAD, b"\0\0\0\0"))[0]
            if queued >= LEAD:
                time.sleep(0.005)
                continue
            with self.lock:
                chunk = bytes(self.queue[:CHUNK]) or bytes(CHUNK)
            try:
                written = os.write(self.fd, chunk)
            except BlockingIOError:
                time.sleep(0.005)
                continue
            with self.lock:
                del self.queue[:min(written, len(self.queue))]

    def stop(self):
        self.stopped = True
        self.thread.join()
        os.close(self.fd)


def scaled(audio, db):
    gain = 10 ** (db / 20)
    samples = struct.unpack(f"<{len(audio) // 2}h", audio)
    return struct.pack(f"<{len(samples)}h", *(max(-32768, min(32767, round(s * gain))) for s in samples))


class HouseBench:
    def __init__(self, bench, fig, error, trace, ws_text, wake_word, question, reply):
        self.bench, self.fig, self.error, self.trace, self.ws_text = bench, fig, error, trace, ws_text
        self.wake_word, self.question, self.reply = wake_word, question, reply

    def skip_reason(self):
        """Why the house cannot be measured here, or None."""
        if os.environ.get("PARLOUR_TEST_AVAHI") != "1":
            return "it needs Avahi in a namespace of its own: run scripts/bench --house (as root)"
        d = self.bench.path("house-probe")
        env = self.env(d, "probe", True)
        room = Room(os.path.join(d, "mic.fifo"))
        daemon, notify, _ = self.bench.start_daemon(d, env)
        try:
            self.bench.await_notify(notify, daemon, "READY=1", 15)
            status = self.status(env)
        finally:
            notify.close()
            room.stop()
            self.bench.stop_others()
        if "arbitration" not in status:
            return "this parlour-satellite has no arbitration yet (its status has no `arbitration`)"
        return None

    def env(self, d, name, enabled):
        house = self.bench.path("house-asound.conf")
        if not os.path.exists(house):
            with open(house, "w") as f:
                f.write(f"""pcm_type.paced {{ lib "{self.bench.path('libasound_module_pcm_paced.so')}" }}
pcm.clock {{ type paced }}
pcm.housemic {{ @args [ INFILE ] @args.INFILE {{ type string }}
  type file slave.pcm "clock" file "/dev/null" infile $INFILE format "raw" }}
pcm.housespeaker {{ @args [ FILE ] @args.FILE {{ type string }}
  type plug slave {{ pcm {{ type file slave.pcm "clock" file $FILE format "raw" }} format S16_LE rate 16000 channels 1 }} }}
""")
        mic = os.path.join(d, "mic.fifo")
        env = self.bench.daemon_env(d, {
            "name": name, "room": name, "transport": "stream", "wake": "local",
            "arbitration": {"enabled": enabled},
            "audio": {"input": f'housemic:INFILE="{mic}"', "output": f'housespeaker:FILE="{os.path.join(d, "played.raw")}"',
                      "leadingSilenceMs": 4000}}, trace=None)
        env.update(ALSA_CONFIG_PATH=f"/usr/share/alsa/alsa.conf:{house}",
                   PARLOUR_SATELLITE_WAKEWORD=os.path.join(ROOT, ".build", "wakeword"),
                   LD_PRELOAD=self.bench.path("preload.so"), PARLOUR_TRACE_FILE=os.path.join(d, "trace.bin"),
                   PARLOUR_TRACE_INFILE=mic)
        return env

    def status(self, env):
        done = subprocess.run([os.path.join(self.bench.bin, "parlourctl"), "--json", "status"], env=env,
                              capture_output=True, text=True, timeout=10)
        try:
            return json.loads(done.stdout).get("response", {})
        except json.JSONDecodeError:
            raise self.error(f"parlourctl status printed no JSON: {done.stdout!r} {done.stderr!r}")

    def run(self, trials):
        phrase = (self.bench.speech(self.wake_word, "house-ww", 0.5, 0.5)
                  + self.bench.speech(self.question, "house-q", 0, 2))
        self.bench.knobs(**self.reply)
        for key, share, count, enabled in (("house_start_off_ms", None, 1, False), ("house_start_0_ms", None, 1, True),
                                           ("house_start_1_ms", "house_loudest_1", 2, True),
                                           ("house_start_2_ms", "house_loudest_2", 3, True)):
            self.bench.check_time(f"a house of {count}")
            print(f"a house of {count}, arbitration {'on' if enabled else 'off'}: {trials} wakes…", file=sys.stderr, flush=True)
            self.house(key, share, count, enabled, trials, phrase)

    def house(self, key, share, count, enabled, trials, phrase):
        tag = f"house{count}{'on' if enabled else 'off'}"
        satellites = []
        try:
            for name in NAMES[:count]:
                d = self.bench.path(f"{tag}-{name}")
                env = self.env(d, name, enabled)
                room = Room(os.path.join(d, "mic.fifo"))
                daemon, notify, _ = self.bench.start_daemon(d, env)
                notify.close()
                satellites.append((name, d, env, room, daemon))
            for name, d, env, room, daemon in satellites:
                self.bench.await_log(os.path.join(d, "daemon.log"), "Listening for the wake word", daemon, 20)
            self.await_siblings(satellites, enabled)
            won = 0
            for trial in range(trials):
                loudest = trial % count
                mark = max((e.get("t", 0) for e in self.bench.server_log()["socket"]), default=-1)
                completed = sum(open(os.path.join(d, "daemon.log")).read().count("listen completed")
                                for _, d, _, _, _ in satellites)
                for index, (name, d, env, room, daemon) in enumerate(satellites):
                    level = -6 * ((index - loudest) % count)
                    room.say(bytes(index * 20 * 32) + scaled(phrase, level))
                self.await_turn(satellites, completed)
                # Time for a second turn, had there been one, to show at the server.
                time.sleep(1.5)
                starts = [e.get("client") for e in self.bench.server_log()["socket"]
                          if e.get("t", 0) > mark and e.get("dir") == "in" and e.get("type") == "start"]
                if starts == [NAMES[loudest]]:
                    won += 1
                else:
                    self.bench.notes.append(f"House of {count} ({'on' if enabled else 'off'}), wake {trial + 1}: "
                                            f"`start` from {starts or 'nobody'}, the loudest was {NAMES[loudest]}.")
            pids = [(d, daemon.pid) for _, d, _, _, daemon in satellites]
        finally:
            for _, _, _, room, _ in satellites:
                room.stop()
            self.bench.stop_others()
        if share:
            self.fig[share].samples.append(won / trials)
        for d, pid in pids:
            trace = self.trace(os.path.join(d, "trace.bin"))
            log = open(os.path.join(d, "daemon.log")).read()
            for ns in (int(n) for n in re.findall(r"^debug: Wake word decided\..*\bmonotonic_ns=(\d+)", log, re.M)):
                sent = trace.first_send_after(pid, ns, self.ws_text)
                # A loser sends no `start`: the next one it sends is another wake's.
                if sent is not None and sent - ns < (1000 + 500) * 1e6:
                    self.fig[key].samples.append((sent - ns) / 1e6)

    def await_siblings(self, satellites, enabled):
        if not enabled or len(satellites) < 2:
            return
        until = time.monotonic() + 20
        for name, _, env, _, _ in satellites:
            others = {n for n, *_ in satellites} - {name}
            while not others <= {s.get("name") for s in self.status(env).get("arbitration", {}).get("siblings", [])}:
                if time.monotonic() > until:
                    raise self.error(f"{name} did not list {sorted(others)} among its siblings within 20 s.")
                time.sleep(0.2)

    def await_turn(self, satellites, completed):
        until = time.monotonic() + 30
        while sum(open(os.path.join(d, "daemon.log")).read().count("listen completed") for _, d, _, _, _ in satellites) <= completed:
            if time.monotonic() > until:
                raise self.error("No satellite of the house completed a turn within 30 s of the wake word; "
                                 "see the daemons' logs (--keep).")
            if any(daemon.poll() is not None for *_, daemon in satellites):
                raise self.error("A satellite of the house exited during a trial (--keep keeps its log).")
            time.sleep(0.1)

#!/usr/bin/env python3
"""A test Parlour server: the peer the satellite's integration tests talk to.

It follows shared/parlour-protocol.md (and the public server that document
describes) to the letter: the same routes, refusals, texts and socket order,
so a satellite that passes here behaves against the real one. It cannot
recognise speech, so "heard" means "the audio was loud somewhere", and the
reply audio is a sine tone. Knobs (POST /_test/knobs) make it misbehave in
the ways a satellite must survive; GET /_test/log says what it was sent.

Easy to get wrong: the credential header counts only when it starts with the
exact text "Bearer "; a refused socket upgrade gets no HTTP answer at all,
the TCP connection is simply dropped; stdout carries only "LISTENING <port>";
and no token value may reach the log.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import base64
import copy
import hmac
import json
import os
import math
import re
import signal
import socket
import ssl
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import WSMsgType, web

# --------------------------------------------------------------- constants

MAX_BODY = 8 * 1024 * 1024
MAX_SOCKET_MESSAGE = 256 * 1024
MAX_SOCKET_TEXT = 4 * 1024
MAX_CLIENT_ID = 64
MAX_ROOM = 40
SAMPLE_RATE = 16000
FRAME_MS = 80
FRAME_SAMPLES = 1280
FRAME_BYTES = FRAME_SAMPLES * 2
MAX_LOG_ENTRIES = 50000
# aiohttp 3.9 moved shutdown_timeout from the site to the runner. Debian 12's
# python3-aiohttp is 3.8, which the systemd test (scripts/test-service) uses.
SHUTDOWN = {"shutdown_timeout": 0.5}
OLD_AIOHTTP = tuple(int(part) for part in aiohttp.__version__.split(".")[:2]) < (3, 9)

ADMIN_ROUTES = {
    "GET /admin",
    "POST /admin/pipeline",
    "POST /admin/service",
    "GET /admin/logs",
    "POST /admin/doctor",
    "POST /admin/restart",
}
API_ROUTES = {"POST /ask", "POST /voice", "GET /v1/models", "POST /v1/chat/completions"} | ADMIN_ROUTES

# ------------------------------------------------------------------- knobs

# Every knob and its default. POST /_test/knobs refuses names not listed here,
# so a typo in a test fails loudly instead of testing nothing.
DEFAULT_KNOBS: dict[str, Any] = {
    # What the "brain" says.
    "replyText": None,  # None: "You asked: <text>"
    "replyTexts": [],  # the next answers' words, one each, in order (a question, then a statement); then replyText
    "via": "local",
    "heardText": "turn off the kitchen lights",
    # The reply audio.
    "toneHz": 440,
    "audioMs": 1200,
    "audioFormat": "pcm16",  # pcm16 float32 pcm24 pcm32 extensible-float32 extensible-pcm16
    "audioRate": 24000,
    "audioChannels": 1,
    "audioExtraChunk": False,  # a LIST chunk of odd size between fmt and data
    "audioFile": None,  # the path of a WAV sent as it is instead of the tone (speech, for the echo tests)
    # Hearing: a frame is loud when RMS/32768 >= loudThreshold.
    "loudThreshold": 0.012,
    # "loud": a loud stretch of wakeMs is the wake word; "word": "okay nabu", heard by the reference
    # detector (pymicro_wakeword, as a server that runs microWakeWord on the stream); "never"
    "wake": "loud",
    "wakeMs": 240,
    # A wake word begins an utterance: the loud stretch counts only after this much quiet on the
    # socket (from its opening), so the rest of a question (a satellite that reopened its socket
    # mid-question) does not wake it as a real detector would not. 0: any loud stretch.
    "wakeAfterQuietMs": 0,
    "muted": False,  # the server's mute gate: a wake word is ignored
    "silenceMs": 800,
    "maxUtteranceMs": 15000,
    "leadingSilenceMs": 2500,
    "speakingHoldMs": 250,  # frames after the WAV are ignored this long, or until "spoke"
    # The hostile part's notebook: log every credential shown, in clear, under "shownCredential"
    # (so a test can prove the house's token never reached this server).
    "recordCredentials": False,
    # HTTP misbehaviour on token routes.
    "refuseToken": False,
    "delayMs": 0,
    "garbage": None,  # "json" "html" "wav" "truncated-wav" "wrong-types"
    "closeMidAnswer": False,
    "status": None,
    "errorText": None,
    "healthOld": False,  # /health without running and waiting, as older servers
    # Socket misbehaviour.
    "socketCloseAfterReady": False,  # true: close 1000 after ready; "abort": drop the TCP connection
    "socketNoPong": False,
    "socketHugeText": False,
    "socketHugeBinary": False,
    "socketUnknownType": False,
    "socketBadWav": False,  # true: bytes that are not a WAV; "truncated": a WAV cut short
    "socketSilentDrop": False,
    "socketStopAfterWavMs": None,  # a number: send {"type":"stop"} this long after each WAV
    # Admin.
    "adminOff": False,
    "adminWorkMs": 0,  # how long pipeline/service/doctor hold the one-at-a-time lock
    "adminTooBig": False,  # starting llm is refused as too big for memory
    "adminManagerRefuses": None,  # a text: the service manager refuses every service action with it (409)
    "adminServices": None,  # {"llm": {"installed": false, ...}}: merged into the services' state when set
    "adminRepeatMs": 15000,
    "restartManual": False,  # started in a terminal: restart is refused
    "restartDownMs": 1000,  # how long a simulated restart leaves the port closed
    "restartDelayMs": 500,  # how long after a restart is scheduled the agent goes down (admin.ts: 500)
    # The callback sink (/_test/callback).
    "callbackStatuses": [],
    # A hostile server: every request but /_test/ (HTTP and the /listen upgrade alike) is
    # answered with this 3xx and a Location of redirectTo + the request's path and query.
    "redirectStatus": None,
    "redirectTo": "",  # statuses for the next callbacks, one each, in order; then 200
}

SERVICE_FIELDS = {"what", "configured", "installed", "running", "pid", "lastExit", "held"}
GARBAGE_KINDS = {None, "json", "html", "wav", "truncated-wav", "wrong-types"}
AUDIO_FORMATS = {"pcm16", "float32", "pcm24", "pcm32", "extensible-float32", "extensible-pcm16"}


def check_knobs(patch: Any) -> str | None:
    """What is wrong with a knob patch, or None."""
    if not isinstance(patch, dict):
        return "send a JSON object of knobs"
    unknown = sorted(set(patch) - set(DEFAULT_KNOBS))
    if unknown:
        return f"unknown knob {', '.join(unknown)}; known: {', '.join(DEFAULT_KNOBS)}"
    if patch.get("garbage", None) not in GARBAGE_KINDS:
        return f"garbage must be one of {sorted(k for k in GARBAGE_KINDS if k)} or null"
    texts = patch.get("replyTexts", [])
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        return "replyTexts must be a list of texts"
    statuses = patch.get("callbackStatuses", [])
    if not isinstance(statuses, list) or not all(isinstance(code, int) and 100 <= code <= 599 for code in statuses):
        return "callbackStatuses must be a list of HTTP statuses (100-599)"
    audio_file = patch.get("audioFile")
    if audio_file is not None and not (isinstance(audio_file, str) and os.path.isfile(audio_file)):
        return "audioFile must be the path of a WAV file, or null"
    if "audioFormat" in patch and patch["audioFormat"] not in AUDIO_FORMATS:
        return f"audioFormat must be one of {sorted(AUDIO_FORMATS)}"
    redirect = patch.get("redirectStatus")
    if redirect is not None and not (isinstance(redirect, int) and 300 <= redirect <= 399):
        return "redirectStatus must be a 3xx status (300-399) or null"
    if not isinstance(patch.get("redirectTo", ""), str):
        return "redirectTo must be text: the start of the Location (empty: a relative one)"
    services = patch.get("adminServices")
    if services is not None:
        if not isinstance(services, dict) or not all(isinstance(v, dict) for v in services.values()):
            return "adminServices must be an object of service names to objects of fields"
        for name, fields in services.items():
            if name not in ("llm", "whisper"):
                return f"adminServices: no service called {name}; try llm or whisper"
            unknown = sorted(set(fields) - SERVICE_FIELDS)
            if unknown:
                return f"adminServices.{name}: unknown field {', '.join(unknown)}; known: {', '.join(sorted(SERVICE_FIELDS))}"
    return None


# --------------------------------------------------------------------- log


class Log:
    """What the server was sent, for GET /_test/log. Never holds a token value."""

    def __init__(self, path: str | None, started: float):
        self.path = path
        self.started = started
        self.requests: list[dict[str, Any]] = []
        self.socket: list[dict[str, Any]] = []
        self.dropped = 0
        # Woken at every socket entry, for GET /_test/log?until=TYPE.
        self.changed = asyncio.Condition()

    def now(self) -> float:
        return round((time.monotonic() - self.started) * 1000, 1)

    def clear(self) -> None:
        self.requests.clear()
        self.socket.clear()
        self.dropped = 0

    def add_request(self, entry: dict[str, Any]) -> None:
        self._append(self.requests, entry)

    def add_socket(self, **entry: Any) -> dict[str, Any]:
        entry = {"t": self.now(), **entry}
        self._append(self.socket, entry)
        self.write(entry)
        asyncio.get_running_loop().create_task(self._notify())
        return entry

    async def _notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    async def until(self, kind: str, seconds: float, count: int = 1) -> bool:
        """Waits until the satellite has sent `count` text messages of type `kind` (or, for "ping",
        `count` pings); False after `seconds`."""
        def seen() -> bool:
            return sum(1 for e in self.socket if e.get("dir") == "in"
                       and (e.get("type") == kind or kind == "ping" and e.get("kind") == "ping")) >= count
        async with self.changed:
            try:
                await asyncio.wait_for(self.changed.wait_for(seen), seconds)
                return True
            except asyncio.TimeoutError:
                return False

    def write(self, entry: dict[str, Any]) -> None:
        if self.path:
            with open(self.path, "a", encoding="utf-8") as file:
                file.write(json.dumps(entry) + "\n")

    def _append(self, entries: list[dict[str, Any]], entry: dict[str, Any]) -> None:
        # A soak test streams for a long time; the oldest entries go first.
        if len(entries) >= MAX_LOG_ENTRIES:
            del entries[0]
            self.dropped += 1
        entries.append(entry)


def redacted_query(request: web.BaseRequest) -> dict[str, str]:
    return {key: ("<redacted>" if key == "token" else value) for key, value in request.query.items()}


def redacted_headers(request: web.BaseRequest) -> dict[str, str]:
    headers = {}
    for name, value in request.headers.items():
        if name.lower() == "authorization":
            value = "Bearer <redacted>" if value.startswith("Bearer ") else "<redacted>"
        headers[name] = value
    return headers


# ------------------------------------------------------------------- audio


class WavError(Exception):
    pass


@dataclass
class Pcm:
    samples: array.array  # int16, mono
    rate: int


def parse_wav(data: bytes) -> Pcm:
    """PCM16 mono at any rate, found by walking the RIFF chunks to fmt and data."""
    if len(data) < 12 or data[0:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise WavError("not a RIFF WAVE file")
    offset, fmt, payload = 12, None, None
    while offset + 8 <= len(data):
        chunk_id, size = data[offset : offset + 4], struct.unpack_from("<I", data, offset + 4)[0]
        body = data[offset + 8 : offset + 8 + size]  # a short last chunk is clamped, as decoders do
        if chunk_id == b"fmt ":
            fmt = body
        elif chunk_id == b"data":
            payload = body
            break
        offset += 8 + size + (size & 1)
    if fmt is None or len(fmt) < 16:
        raise WavError("no fmt chunk")
    if payload is None:
        raise WavError("no data chunk")
    tag, channels, rate, _, _, bits = struct.unpack_from("<HHIIHH", fmt)
    if tag == 0xFFFE and len(fmt) >= 40:
        tag = struct.unpack_from("<H", fmt, 24)[0]
    if tag != 1 or bits != 16 or channels != 1:
        raise WavError(f"only PCM16 mono is taken here, got format {tag}, {bits} bits, {channels} channels")
    if rate <= 0:
        raise WavError("sample rate 0")
    samples = array.array("h")
    samples.frombytes(payload[: len(payload) // 2 * 2])
    return Pcm(samples, rate)


def rms(samples: Any) -> float:
    if not samples:
        return 0.0
    return math.sqrt(sum(s * s for s in samples) / len(samples)) / 32768


@dataclass
class Loudness:
    audioMs: int
    sampleRate: int
    firstLoudMs: int | None
    lastLoudMs: int | None
    rms: float

    @property
    def heard(self) -> bool:
        return self.firstLoudMs is not None


def loudness(pcm: Pcm, threshold: float) -> Loudness:
    """Where the audio is loud, in 80 ms frames: the stand-in for speech to text."""
    step = max(1, pcm.rate * FRAME_MS // 1000)
    loud = [
        i * FRAME_MS
        for i, start in enumerate(range(0, len(pcm.samples), step))
        if rms(pcm.samples[start : start + step]) >= threshold
    ]
    return Loudness(
        audioMs=round(len(pcm.samples) * 1000 / pcm.rate),
        sampleRate=pcm.rate,
        firstLoudMs=loud[0] if loud else None,
        lastLoudMs=loud[-1] if loud else None,
        rms=round(rms(pcm.samples), 5),
    )


GUID_TAIL = b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"


def reply_wav(knobs: dict[str, Any], truncated: bool = False) -> bytes:
    """The reply: a sine at toneHz, amplitude 0.5, in the format the knobs name (or audioFile's WAV)."""
    if knobs["audioFile"]:
        with open(knobs["audioFile"], "rb") as wav:
            data = wav.read()
        return data[: len(data) // 2] if truncated else data
    rate, channels, kind = int(knobs["audioRate"]), int(knobs["audioChannels"]), knobs["audioFormat"]
    count = rate * int(knobs["audioMs"]) // 1000
    tone = [0.5 * math.sin(2 * math.pi * knobs["toneHz"] * n / rate) for n in range(count)]
    if kind.endswith("float32"):
        bits, tag, sub = 32, 3, 3
        frame = b"".join(struct.pack("<f", v) * channels for v in tone)
    else:
        bits = {"pcm16": 16, "extensible-pcm16": 16, "pcm24": 24, "pcm32": 32}[kind]
        tag, sub, scale = 1, 1, (1 << (bits - 1)) - 1
        frame = b"".join(round(v * scale).to_bytes(bits // 8, "little", signed=True) * channels for v in tone)
    return wav_bytes(frame, rate, channels, bits, tag, sub, kind.startswith("extensible"), knobs["audioExtraChunk"], truncated)


def wav_bytes(
    payload: bytes,
    rate: int,
    channels: int,
    bits: int,
    tag: int = 1,
    sub: int = 1,
    extensible: bool = False,
    extra_chunk: bool = False,
    truncated: bool = False,
) -> bytes:
    align = channels * bits // 8
    if extensible:
        mask = 0x4 if channels == 1 else (1 << channels) - 1
        fmt = struct.pack("<HHIIHHHHI", 0xFFFE, channels, rate, rate * align, align, bits, 22, bits, mask)
        fmt += bytes([sub, 0]) + GUID_TAIL
    else:
        fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * align, align, bits)
    chunks = b"fmt " + struct.pack("<I", len(fmt)) + fmt
    if extra_chunk:
        info = b"INFOISFT\x05\x00\x00\x00test\x00"  # odd length, so a pad byte follows
        chunks += b"LIST" + struct.pack("<I", len(info)) + info + b"\x00"
    declared = len(payload)
    if truncated:
        payload = payload[: len(payload) // 2]
    chunks += b"data" + struct.pack("<I", declared) + payload
    return b"RIFF" + struct.pack("<I", 4 + len(chunks) - len(payload) + declared) + b"WAVE" + chunks


NOT_A_WAV = b"this is not a WAV file, whatever the client hoped" * 20

# ---------------------------------------------------- auth, loopback, names


def credential(request: web.BaseRequest) -> tuple[str, str | None]:
    """The supplied token and where it came from: the header only when it starts "Bearer "."""
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        return header[7:], "header"
    if "token" in request.query:
        return request.query["token"], "query"
    return "", None


def token_ok(request: web.BaseRequest, token: str | None) -> bool:
    if not token:
        return True  # loopback only; see local()
    supplied, _ = credential(request)
    return hmac.compare_digest(supplied.encode(), token.encode())


def loopback(address: str | None) -> bool:
    """localhost, 127.0.0.0/8 or [::1], with or without a scheme and a port."""
    if not address:
        return False
    try:
        host = urlsplit(address if "://" in address else f"http://{address}").hostname or ""
    except ValueError:
        return False
    parts = host.split(".")
    return (
        host in ("localhost", "::1")
        or (len(parts) == 4 and parts[0] == "127" and all(p.isdigit() and len(p) <= 3 for p in parts))
    )


def local(request: web.BaseRequest, token: str | None) -> bool:
    """Without a token, the request must name a loopback host, and a loopback Origin if it has one."""
    if token:
        return True
    origin = request.headers.get("Origin")
    return loopback(request.headers.get("Host")) and (origin is None or loopback(origin))


def clean_client(raw: str | None, fallback: str, taken: set[str] | None = None) -> str:
    base = re.sub(r"[^\w.:-]+", "-", raw or "", flags=re.ASCII).strip("-")[:MAX_CLIENT_ID] or fallback
    if taken is None:
        return base
    ident, n = base, 2
    while ident in taken:
        ident, n = f"{base}~{n}", n + 1
    taken.add(ident)
    return ident


def clean_room(raw: str | None) -> str | None:
    return " ".join((raw or "").split())[:MAX_ROOM] or None


# ------------------------------------------------------------ HTTP plumbing


class RequestError(Exception):
    """A refusal the client is told about, as {"error": message}."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Answer:
    status: int
    payload: Any


def json_response(status: int, payload: Any) -> web.Response:
    return web.Response(status=status, body=json.dumps(payload, separators=(",", ":")).encode(), content_type="application/json")


async def read_body(request: web.BaseRequest, entry: dict[str, Any]) -> bytes:
    chunks, size = [], 0
    while chunk := await request.content.readany():
        size += len(chunk)
        if size > MAX_BODY:
            entry["bodyBytes"] = size
            raise RequestError(413, "body too large")
        chunks.append(chunk)
    entry["bodyBytes"] = size
    return b"".join(chunks)


async def read_json(request: web.BaseRequest, entry: dict[str, Any]) -> Any:
    media = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise RequestError(415, "send application/json")
    raw = (await read_body(request, entry)).decode("utf-8", "replace")
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        raise RequestError(400, "the body is not JSON") from None


def not_what_route_takes(path: str = "") -> RequestError:
    return RequestError(400, f"the body is not what this route takes{f' ({path})' if path else ''}")


def js_type(value: Any) -> str:
    """The type word zod puts in its messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "unknown")


def destroy(request: web.BaseRequest) -> web.Response:
    """Drops the TCP connection with no answer. aiohttp then fails to write the
    returned response to the closed transport, and ignores that."""
    if request.transport is not None:
        request.transport.close()
    return web.Response(status=500)


# ------------------------------------------------------------------- admin


@dataclass
class Admin:
    """The fake state behind /admin: a plausible Parlour server with two model servers."""

    pipeline: dict[str, Any] = field(
        default_factory=lambda: {"concurrency": 2, "queueDepth": 2, "triage": "auto", "maxTasks": 3, "timeoutMs": 45000}
    )
    saved: dict[str, Any] = field(default_factory=dict)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    last: dict[str, float] = field(default_factory=dict)
    busy: bool = False
    restarting: bool = False

    def __post_init__(self) -> None:
        self.saved = dict(self.pipeline)
        self.services = {
            "llm": self._service("llm", "the local model", 4242),
            "whisper": self._service("whisper", "whisper, kept warm", 4243),
        }

    @staticmethod
    def _service(name: str, what: str, pid: int) -> dict[str, Any]:
        return {"name": name, "what": what, "configured": True, "installed": True, "running": True,
                "pid": pid, "lastExit": None, "held": False}


PIPELINE_BOUNDS = {"concurrency": (1, 4), "queueDepth": (1, 10), "maxTasks": (1, 10), "timeoutMs": (5000, 300000)}
TRIAGE = ("auto", "always", "never")


def pipeline_problem(patch: dict[str, Any]) -> str | None:
    """The first problem zod would report, as `<key>: <message>`."""
    for key in ("concurrency", "queueDepth", "triage", "maxTasks", "timeoutMs"):
        if key not in patch:
            continue
        value = patch[key]
        if key == "triage":
            if not isinstance(value, str):
                return f"triage: Expected 'auto' | 'always' | 'never', received {js_type(value)}"
            if value not in TRIAGE:
                return f"triage: Invalid enum value. Expected 'auto' | 'always' | 'never', received '{value}'"
            continue
        if js_type(value) != "number":
            return f"{key}: Expected number, received {js_type(value)}"
        low, high = PIPELINE_BOUNDS[key]
        if not float(value).is_integer():
            return f"{key}: Expected integer, received float"
        if value < low:
            return f"{key}: Number must be greater than or equal to {low}"
        if value > high:
            return f"{key}: Number must be less than or equal to {high}"
    unknown = [key for key in patch if key not in PIPELINE_BOUNDS and key != "triage"]
    if unknown:
        return "pipeline: Unrecognized key(s) in object: " + ", ".join(f"'{k}'" for k in unknown)
    return None


def js_number(text: str) -> float:
    text = text.strip()
    if not text:
        return 0.0
    try:
        return float(text)
    except ValueError:
        return math.nan


# ------------------------------------------------------------------ socket


class Endpointer:
    """The server's energy endpointer (section 5): speech, then silenceMs of quiet, or the maximum."""

    def __init__(self, knobs: dict[str, Any]):
        self.knobs = knobs
        self.frames: list[bytes] = []
        self.speech_seen = False
        self.quiet = 0

    def push(self, frame: bytes, loud: bool) -> str:
        self.frames.append(frame)
        total = len(self.frames) * FRAME_MS
        if loud:
            self.speech_seen, self.quiet = True, 0
        else:
            self.quiet += 1
        if not self.speech_seen:
            return "empty" if total >= self.knobs["leadingSilenceMs"] else "listening"
        if self.quiet * FRAME_MS >= self.knobs["silenceMs"]:
            return "done"
        return "done" if total >= self.knobs["maxUtteranceMs"] else "listening"


class WordEar:
    """The wake word as a server that runs microWakeWord on the stream hears it: okay_nabu through the
    reference (pymicro_wakeword), started afresh after each wake."""

    def __init__(self) -> None:
        from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures, Model

        self.model = MicroWakeWord.from_builtin(Model.OKAY_NABU)
        self.frontend = MicroWakeWordFeatures()
        self.fresh = MicroWakeWordFeatures

    def heard(self, frame: bytes) -> bool:
        woke = False
        for features in self.frontend.process_streaming(frame):
            woke = self.model.process_streaming(features) or woke
        if woke:
            self.model.reset()
            self.frontend = self.fresh()
        return woke


class Listener:
    """One /listen connection: the frame cutter, the push buffer, and the voice session's states."""

    def __init__(self, server: "TestServer", ws: web.WebSocketResponse, number: int, client: str, room: str | None, mode: str):
        self.server, self.ws, self.number = server, ws, number
        self.transport: asyncio.Transport | None = None
        self.client, self.room, self.mode = client, room, mode
        self.remainder = b""
        self.pending: list[bytes] | None = None
        self.state = "idle"
        self.speaking = False  # set from the reply until speakingHoldMs after the WAV, or "spoke"
        self.speaking_timer: asyncio.TimerHandle | None = None
        self.loud_run = 0  # the stand-in wake word detector
        self.word: WordEar | None = None  # the reference detector, with wake "word"
        self.quiet_run = 0  # quiet frames before it, for wakeAfterQuietMs
        self.endpointer: Endpointer | None = None
        self.wav_sent_at: float | None = None
        self.tasks: set[asyncio.Task] = set()

    @property
    def knobs(self) -> dict[str, Any]:
        return self.server.knobs

    def log(self, direction: str, **fields: Any) -> None:
        self.server.log.add_socket(conn=self.number, client=self.client, dir=direction, **fields)

    async def tell(self, message: dict[str, Any]) -> None:
        # A turn that outlives its socket finishes without sending anything.
        if self.ws.closed:
            return
        text = json.dumps(message, separators=(",", ":"))
        self.log("out", kind="text", type=message.get("type"), bytes=len(text.encode()), message=message)
        try:
            await self.ws.send_str(text)
        except ConnectionError:
            pass  # the client went away mid-turn

    async def send_binary(self, data: bytes, what: str) -> None:
        if self.ws.closed:
            return
        self.log("out", kind="binary", what=what, bytes=len(data))
        try:
            await self.ws.send_bytes(data)
        except ConnectionError:
            pass

    async def enter(self, state: str, text: str | None = None) -> None:
        self.state = state
        await self.tell({"type": "state", "value": state, "text": text} if text else {"type": "state", "value": state})

    def spawn(self, work) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # ---- receiving

    async def on_text(self, data: str) -> None:
        size = len(data.encode())
        if size > MAX_SOCKET_TEXT:
            self.log("in", kind="text", bytes=size, ignored="over 4 KiB")
            return
        try:
            message = json.loads(data)
        except ValueError:
            self.log("in", kind="text", bytes=size, ignored="not JSON")
            return
        kind = message.get("type") if isinstance(message, dict) else None
        fields: dict[str, Any] = {"kind": "text", "type": kind, "bytes": size}
        if kind == "spoke" and self.wav_sent_at is not None:
            fields["afterWavMs"] = round((time.monotonic() - self.wav_sent_at) * 1000, 1)
        self.log("in", **fields)
        if kind == "start":
            self.pending = []
        elif kind == "cancel":
            self.pending = None
        elif kind == "end":
            self.finish()
        elif kind == "spoke":
            self.speaking = False

    async def on_binary(self, data: bytes) -> None:
        self.log("in", kind="binary", bytes=len(data))
        data = self.remainder + data
        whole = len(data) // FRAME_BYTES * FRAME_BYTES
        self.remainder = data[whole:]
        max_frames = math.ceil(self.knobs["maxUtteranceMs"] / FRAME_MS)
        for start in range(0, whole, FRAME_BYTES):
            frame = data[start : start + FRAME_BYTES]
            if self.pending is not None:
                self.pending.append(frame)
                if len(self.pending) >= max_frames:
                    self.finish()
            elif self.mode == "wake":
                await self.push(frame)

    def finish(self) -> None:
        frames, self.pending = self.pending, None
        if frames is not None:
            self.spawn(self.utterance(frames))

    def loud(self, frame: bytes) -> bool:
        samples = array.array("h")
        samples.frombytes(frame)
        return rms(samples) >= self.knobs["loudThreshold"]

    # ---- the voice session (S/core/session.ts)

    async def push(self, frame: bytes) -> None:
        """Wake mode: wake word, then the endpointer, then the answer."""
        if self.state in ("thinking", "speaking"):
            return
        if self.speaking:
            self.loud_run = 0  # its own voice is in the microphone
            return
        loud = self.loud(frame)
        if self.state == "idle":
            if loud and self.loud_run == 0 and self.quiet_run * FRAME_MS < self.knobs["wakeAfterQuietMs"]:
                self.quiet_run = 0
                return
            self.quiet_run = 0 if loud else self.quiet_run + 1
            self.loud_run = self.loud_run + 1 if loud else 0
            if self.knobs["wake"] == "word":
                self.word = self.word or WordEar()
                if not self.word.heard(frame):
                    return
            else:
                needed = math.ceil(self.knobs["wakeMs"] / FRAME_MS)
                if self.knobs["wake"] != "loud" or self.loud_run < needed:
                    return
            self.loud_run = 0
            if self.knobs["muted"]:
                self.log("event", event="wake ignored: muted")
                return
            self.log("event", event="wake")
            await self.tell({"type": "stop"})
            await self.enter("listening")
            self.endpointer = Endpointer(self.knobs)
            return
        assert self.endpointer is not None
        verdict = self.endpointer.push(frame, loud)
        if verdict == "listening":
            return
        frames, self.endpointer = self.endpointer.frames, None
        self.log("event", event=f"endpoint {verdict}", frames=len(frames))
        if verdict == "empty":
            self.loud_run = 0
            await self.enter("idle")
            return
        await self.enter("thinking")

        async def answer_then_idle() -> None:
            try:
                await self.answer(frames)
            finally:
                self.loud_run = 0
                await self.enter("idle")

        self.spawn(answer_then_idle())

    async def utterance(self, frames: list[bytes]) -> None:
        """Push mode: no wake word, no endpointing."""
        await self.enter("thinking")
        try:
            await self.answer(frames)
        finally:
            await self.enter("idle")

    async def answer(self, frames: list[bytes]) -> None:
        samples = array.array("h")
        samples.frombytes(b"".join(frames))
        heard = loudness(Pcm(samples, SAMPLE_RATE), self.knobs["loudThreshold"])
        self.log("event", event="utterance", **vars(heard))
        self.server.running += 1
        try:
            if self.knobs["delayMs"]:
                await asyncio.sleep(self.knobs["delayMs"] / 1000)
            if not heard.heard or self.knobs["socketSilentDrop"]:
                return  # nothing said: thinking, then idle, and no message says why
            text = self.knobs["heardText"]
            await self.enter("thinking", text)
            reply = self.server.reply_to(text)
            await self.enter("speaking")
            await self.say(reply)
        finally:
            self.server.running -= 1

    async def say(self, text: str) -> None:
        await self.tell({"type": "reply", "text": text, "via": self.knobs["via"]})
        self.speaking = True
        try:
            bad = self.knobs["socketBadWav"]
            if bad == "truncated":
                await self.send_binary(reply_wav(self.knobs, truncated=True), "truncated wav")
            elif bad:
                await self.send_binary(NOT_A_WAV, "not a wav")
            else:
                await self.send_binary(reply_wav(self.knobs), "wav")
            self.wav_sent_at = time.monotonic()
            stop_after = self.knobs["socketStopAfterWavMs"]
            if stop_after is not None:
                asyncio.get_running_loop().call_later(stop_after / 1000, lambda: self.spawn(self.tell({"type": "stop"})))
        finally:
            if self.speaking_timer:
                self.speaking_timer.cancel()
            self.speaking_timer = asyncio.get_running_loop().call_later(
                self.knobs["speakingHoldMs"] / 1000, self._stop_speaking
            )

    def _stop_speaking(self) -> None:
        self.speaking = False

    # ---- misbehaviour right after ready

    async def misbehave_after_ready(self) -> bool:
        """Sends what the socket knobs ask for; False when the connection was ended."""
        knobs = self.knobs
        if knobs["socketHugeText"]:
            message = {"type": "padding", "text": ""}
            message["text"] = "x" * (5 * 1024 - len(json.dumps(message, separators=(",", ":"))))
            await self.tell(message)
        if knobs["socketHugeBinary"]:
            size = 9 * 1024 * 1024
            silence = bytes(size - 44)
            await self.send_binary(wav_bytes(silence, 24000, 1, 16), "9 MiB wav of silence")
        if knobs["socketUnknownType"]:
            await self.tell({"type": "weird"})
        if knobs["socketCloseAfterReady"] == "abort":
            self.log("event", event="aborted after ready")
            if self.transport is not None:
                self.transport.abort()
            return False
        if knobs["socketCloseAfterReady"]:
            self.log("event", event="closing after ready")
            await self.ws.close(code=1000)
            return False
        return True


# ------------------------------------------------------------------ server


class TestServer:
    def __init__(self, host: str, port: int, token: str | None, name: str, log_path: str | None,
                 tls: ssl.SSLContext | None = None):
        self.host, self.port, self.token, self.name, self.tls = host, port, token, name, tls
        self.knobs = copy.deepcopy(DEFAULT_KNOBS)
        self.log = Log(log_path, time.monotonic())
        self.callbacks: list[dict[str, Any]] = []
        self.admin = Admin()
        self.running = 0
        self.live: set[str] = set()
        self.listeners: set[Listener] = set()
        self.connections = 0
        self.restarts = 0
        self.runner: web.AppRunner | None = None
        self.site: web.TCPSite | None = None

    # ---- lifecycle

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.dispatch)
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False, **({} if OLD_AIOHTTP else SHUTDOWN))
        await self.runner.setup()
        await self.listen()
        self.port = self.runner.addresses[0][1]

    async def listen(self) -> None:
        self.site = web.TCPSite(self.runner, self.host, self.port, reuse_address=True, ssl_context=self.tls, **(SHUTDOWN if OLD_AIOHTTP else {}))
        await self.site.start()

    def drop_connections(self) -> None:
        """What a dying process does: every socket gone, no close frames (clients see 1006)."""
        for listener in list(self.listeners):
            for task in listener.tasks:
                task.cancel()
        assert self.runner is not None
        for connection in self.runner.server.connections:
            if connection.transport is not None:
                connection.transport.abort()

    async def close(self) -> None:
        self.drop_connections()
        if self.runner:
            await self.runner.cleanup()

    def schedule_restart(self) -> None:
        if self.admin.restarting:
            return
        self.admin.restarting = True
        delay = self.knobs["restartDelayMs"] / 1000
        asyncio.get_running_loop().call_later(delay, lambda: asyncio.ensure_future(self.restart()))

    async def restart(self) -> None:
        """The agent exits and launchd starts it again: the port is closed for restartDownMs."""
        self.restarts += 1
        self.drop_connections()
        assert self.site is not None
        await self.site.stop()
        await asyncio.sleep(self.knobs["restartDownMs"] / 1000)
        self.admin.pipeline = dict(self.admin.saved)
        self.admin.restarting = False
        self.admin.busy = False
        self.live.clear()
        await self.listen()
        print(f"restarted on port {self.port}", file=sys.stderr, flush=True)

    # ---- dispatch

    async def dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.path.startswith("/_test/"):
            return await self.test_route(request)
        supplied, source = credential(request)
        entry: dict[str, Any] = {
            "t": self.log.now(),
            "method": request.method,
            "path": request.path,
            "query": redacted_query(request),
            "tokenOk": token_ok(request, self.token),
            "credential": source,
            "shownCredential": supplied if source and self.knobs["recordCredentials"] else None,
            "headers": redacted_headers(request),
            "bodyBytes": request.content_length,
            "remote": request.remote,
            "status": None,
        }
        self.log.add_request(entry)
        try:
            response = await self.route(request, entry)
            if entry["status"] is None and not entry.get("destroyed"):
                entry["status"] = response.status
            return response
        finally:
            self.log.write(entry)

    async def route(self, request: web.BaseRequest, entry: dict[str, Any]) -> web.StreamResponse:
        if self.knobs["redirectStatus"]:
            location = self.knobs["redirectTo"] + request.rel_url.path_qs
            entry["redirectedTo"] = self.knobs["redirectTo"] + request.path
            return web.Response(status=self.knobs["redirectStatus"], headers={"Location": location},
                                text="moved", content_type="text/plain")
        if is_upgrade(request):
            return await self.upgrade(request, entry)
        if not local(request, self.token):
            return json_response(403, {"error": "this server answers its own machine only"})
        cors = self.cors_headers(request)
        if request.method == "OPTIONS":
            return web.Response(status=204, headers=cors)
        response = await self.route_http(request, entry)
        response.headers.update(cors)
        return response

    def cors_headers(self, request: web.BaseRequest) -> dict[str, str]:
        origin = "*" if self.token else request.headers.get("Origin")
        if not origin:
            return {}
        headers = {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Headers": "authorization, content-type",
            "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
        }
        if origin != "*":
            headers["Vary"] = "origin"
        return headers

    async def route_http(self, request: web.BaseRequest, entry: dict[str, Any]) -> web.StreamResponse:
        route = f"{request.method} {request.path}"
        if route == "GET /health":
            health = {"ok": True, "tools": 3, "cloud": False}
            if not self.knobs["healthOld"]:
                health |= {"running": self.running, "waiting": 0}
            return json_response(200, health)
        if route not in API_ROUTES:
            if request.method == "GET" and request.path == "/":
                return web.Response(text="<!doctype html><title>Parlour</title><p>Parlour test server</p>", content_type="text/html")
            if request.method == "GET":
                return json_response(404, {"error": "no such file"})
            return json_response(404, {"error": "no such route"})

        knobs = self.knobs
        # What counts as "running" on /health: requests in flight, the delay included.
        asking = route in ("POST /ask", "POST /voice", "POST /v1/chat/completions")
        self.running += asking
        try:
            if knobs["delayMs"]:
                await asyncio.sleep(knobs["delayMs"] / 1000)
            if knobs["refuseToken"] or not entry["tokenOk"]:
                return json_response(401, {"error": "a bearer token is required"})
            if knobs["status"]:
                return json_response(int(knobs["status"]), {"error": knobs["errorText"] or "the test server was told to fail"})
            answer = await self.api(route, request, entry)
        except RequestError as refusal:
            answer = Answer(refusal.status, {"error": refusal.message})
        except Exception as error:  # the real server's 500: details to the log only
            print(f"internal error on {route}: {error!r}", file=sys.stderr, flush=True)
            entry["internalError"] = repr(error)
            answer = Answer(500, {"error": "internal error"})
        finally:
            self.running -= asking

        body, content_type = json.dumps(answer.payload, separators=(",", ":")).encode(), "application/json"
        garbage = knobs["garbage"]
        if garbage == "json":
            body, answer.status = b'{"reply": "unterminated', 200
        elif garbage == "html":
            body, content_type, answer.status = HTML_GARBAGE, "text/html", 200
        elif garbage == "wrong-types":
            body, answer.status = json.dumps({"reply": 42, "via": None, "heard": []}, separators=(",", ":")).encode(), 200
        if knobs["closeMidAnswer"]:
            return await self.close_mid_answer(request, entry, answer.status, body, content_type)
        response = web.Response(status=answer.status, body=body, content_type=content_type)
        if answer.status == 413:
            response.force_close()
        return response

    async def close_mid_answer(self, request, entry, status: int, body: bytes, content_type: str) -> web.StreamResponse:
        response = web.StreamResponse(status=status)
        response.content_type = content_type
        response.content_length = len(body) + 100
        await response.prepare(request)
        await response.write(body[: max(1, len(body) // 2)])
        entry["status"], entry["closedMidAnswer"] = status, True
        request.transport.close()
        return response

    async def api(self, route: str, request: web.BaseRequest, entry: dict[str, Any]) -> Answer:
        if route in ADMIN_ROUTES:
            return await self.admin_route(route, request, entry)
        if route == "POST /ask":
            return await self.ask(request, entry)
        if route == "POST /voice":
            return await self.voice(request, entry)
        if route == "GET /v1/models":
            return Answer(200, {"object": "list", "data": [{"id": "parlour", "object": "model", "created": 0, "owned_by": "parlour"}]})
        return await self.completions(request, entry)

    # ---- client routes

    def reply_to(self, text: str) -> str:
        """The answer's words: the next of replyTexts, else replyText, else an echo of what was heard."""
        queued = self.knobs["replyTexts"]
        if queued:
            self.knobs["replyTexts"] = queued[1:]
            return queued[0]
        return self.knobs["replyText"] or f"You asked: {text}"

    async def ask(self, request: web.BaseRequest, entry: dict[str, Any]) -> Answer:
        body = await read_json(request, entry)
        if not isinstance(body, dict):
            raise not_what_route_takes()
        if not isinstance(body.get("text"), str) or not body["text"]:
            raise not_what_route_takes("text")
        for key in ("client", "room"):
            if key in body and not isinstance(body[key], str):
                raise not_what_route_takes(key)
        entry.update(text=body["text"], client=clean_client(body.get("client"), "api"), room=clean_room(body.get("room")))
        return Answer(200, {"reply": self.reply_to(body["text"]), "via": self.knobs["via"]})

    async def voice(self, request: web.BaseRequest, entry: dict[str, Any]) -> Answer:
        audio = await read_body(request, entry)
        if not audio:
            raise RequestError(400, "no audio")
        entry.update(client=clean_client(request.query.get("client"), "phone"), room=clean_room(request.query.get("room")))
        try:
            pcm = parse_wav(audio)
        except WavError as error:
            entry["audioError"] = str(error)
            raise
        heard = loudness(pcm, self.knobs["loudThreshold"])
        entry.update(vars(heard))
        via = self.knobs["via"]
        if not heard.heard:
            return Answer(200, {"heard": "", "reply": "", "via": via, "audio": None})
        text = self.knobs["heardText"]
        garbage = self.knobs["garbage"]
        if garbage == "wav":
            wav = NOT_A_WAV
        else:
            wav = reply_wav(self.knobs, truncated=garbage == "truncated-wav")
        entry["heard"] = text
        return Answer(200, {"heard": text, "reply": self.reply_to(text), "via": via, "audio": base64.b64encode(wav).decode()})

    async def completions(self, request: web.BaseRequest, entry: dict[str, Any]) -> Answer:
        body = await read_json(request, entry)
        if not isinstance(body, dict):
            raise not_what_route_takes()
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise not_what_route_takes("messages")
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                raise not_what_route_takes(f"messages.{i}" if not isinstance(message, dict) else f"messages.{i}.role")
        last = next((m for m in reversed(messages) if m["role"] == "user"), None)
        content = last.get("content") if last else None
        if isinstance(content, list):
            content = " ".join(p["text"] if isinstance(p, dict) and isinstance(p.get("text"), str) else "" for p in content)
        text = content if isinstance(content, str) else ""
        if not text.strip():
            raise RequestError(400, "no user message")
        entry["text"] = text
        return Answer(200, {
            "id": f"chatcmpl-{int(time.time() * 1000)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "parlour",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": self.reply_to(text)}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        })

    # ---- admin (S/core/admin.ts)

    async def admin_route(self, route: str, request: web.BaseRequest, entry: dict[str, Any]) -> Answer:
        if self.knobs["adminOff"]:
            raise RequestError(403, "remote management is switched off on this server")
        admin = self.admin
        if route == "GET /admin":
            return Answer(200, {
                "version": "0.1.0",
                "role": "server",
                "restart": "manual" if self.knobs["restartManual"] else "automatic",
                "pipeline": dict(admin.pipeline),
                "saved": dict(admin.saved),
                "services": [dict(s) for s in admin.services.values()],
                "memory": {"totalGb": 16.0, "freeGb": 7.4},
            })
        if route == "POST /admin/pipeline":
            patch = await read_json(request, entry)
            entry["patch"] = patch
            if not isinstance(patch, dict):
                raise not_what_route_takes()
            problem = pipeline_problem(patch)
            if problem:
                raise RequestError(400, problem)
            return await self.exclusive(lambda: self.set_pipeline(patch, request.query.get("apply") != "false"))
        if route == "POST /admin/service":
            body = await read_json(request, entry)
            if not isinstance(body, dict):
                raise not_what_route_takes()
            entry.update({key: body.get(key) for key in ("service", "action")})
            for key in ("service", "action"):
                if not isinstance(body.get(key), str):
                    raise not_what_route_takes(key)
            return await self.service(body["service"], body["action"])
        if route == "GET /admin/logs":
            name = request.query.get("service", "agent")
            if name not in ("agent", "llm", "whisper"):
                raise RequestError(404, f"no log called {name}; try agent, llm or whisper")
            # Math.max(1, Math.min(200, Math.floor(Number(lines)) || 50)), NaN and all.
            wanted = js_number(request.query.get("lines", "50"))
            floored = math.floor(wanted) if math.isfinite(wanted) else wanted
            count = 50 if math.isnan(wanted) or floored == 0 else max(1, min(200, floored))
            lines = [f"2025-11-30T01:{i // 60:02d}:{i % 60:02d}Z {name}: test line {i + 1}" for i in range(int(count))]
            return Answer(200, {"service": name, "lines": lines})
        if route == "POST /admin/doctor":
            return await self.exclusive(lambda: self.doctor())
        # POST /admin/restart
        if self.knobs["restartManual"]:
            raise RequestError(409, "this agent was started in a terminal, so nothing would start it again. Restart it there")
        self.throttle("agent")
        self.schedule_restart()
        return Answer(202, {"restart": "scheduled"})

    async def exclusive(self, work) -> Answer:
        admin = self.admin
        if admin.restarting:
            raise RequestError(503, "the agent is restarting; ask again in a moment")
        if admin.busy:
            raise RequestError(409, "another change is still being made; try again when it is done")
        admin.busy = True
        try:
            if self.knobs["adminWorkMs"]:
                await asyncio.sleep(self.knobs["adminWorkMs"] / 1000)
            return await work()
        finally:
            admin.busy = False

    def throttle(self, key: str) -> None:
        now, last = time.monotonic() * 1000, self.admin.last.get(key)
        cooldown = self.knobs["adminRepeatMs"]
        if last is not None and now - last < cooldown:
            raise RequestError(429, f"that was done a moment ago; try again in {math.ceil((cooldown - (now - last)) / 1000)}s")
        self.admin.last[key] = now

    async def set_pipeline(self, patch: dict[str, Any], apply: bool) -> Answer:
        admin = self.admin
        admin.saved = {**admin.saved, **{k: int(v) if k != "triage" else v for k, v in patch.items()}}
        if admin.saved == admin.pipeline:
            restart = "none"
        elif not apply or self.knobs["restartManual"]:
            restart = "needed"
        else:
            restart = "scheduled"
            self.schedule_restart()
        return Answer(200, {"pipeline": dict(admin.saved), "restart": restart})

    async def service(self, name: str, action: str) -> Answer:
        """In admin.ts's order: the name, the action, whether this server runs it at all, then one at a
        time, memory, the repeat guard, whether it is installed, and the manager's own refusal."""
        if name not in self.admin.services:
            raise RequestError(404, f"no service called {name}; try llm or whisper")
        if action not in ("start", "stop", "restart"):
            raise RequestError(400, f"{action} is not something a service does; try start, stop, restart")
        state = self.admin.services[name]
        if not state["configured"] and action != "stop":
            raise RequestError(404, f"this server does not run {name}: its config has no use for it, or its model is missing")

        async def work() -> Answer:
            if name == "llm" and action != "stop" and self.knobs["adminTooBig"]:
                raise RequestError(409, "the local model needs about 20 GB and this machine has 16 GB; pick a smaller model")
            self.throttle(f"service:{name}:{action}")
            if state["configured"] and not state["installed"]:
                raise RequestError(409, f"{state['what']} is not installed as a service. parlour service install on the server sets it up")
            if self.knobs["adminManagerRefuses"]:
                raise RequestError(409, self.knobs["adminManagerRefuses"])
            # As the sandbox's companions do: a stop holds the service down until it is started.
            if action == "stop":
                state.update(running=False, pid=None, lastExit=0, held=True)
            else:
                state.update(running=True, pid=(state["pid"] or 5000) + 1, held=False)
            return Answer(200, dict(state))

        return await self.exclusive(work)

    async def doctor(self) -> Answer:
        return Answer(200, {"checks": [
            {"name": "config", "status": "ok", "detail": "config.json reads and is valid"},
            {"name": "llm", "status": "ok", "detail": "the local model answers on port 8080"},
            {"name": "whisper", "status": "ok", "detail": "whisper answers on port 8178"},
            {"name": "memory", "status": "warn", "detail": "7.4 GB free of 16 GB"},
        ]})

    # ---- /listen

    async def upgrade(self, request: web.BaseRequest, entry: dict[str, Any]) -> web.StreamResponse:
        if (
            request.path != "/listen"
            or not local(request, self.token)
            or not entry["tokenOk"]
            or self.knobs["refuseToken"]
        ):
            entry["destroyed"] = True
            return destroy(request)
        ws = web.WebSocketResponse(autoping=False, compress=False, max_msg_size=MAX_SOCKET_MESSAGE + 1)
        await ws.prepare(request)
        entry["status"] = 101
        self.connections += 1
        mode = "push" if request.query.get("mode") == "push" else "wake"
        client = clean_client(request.query.get("client"), f"socket-{int(time.time() * 1000)}", self.live)
        listener = Listener(self, ws, self.connections, client, clean_room(request.query.get("room")), mode)
        listener.transport = request.transport
        entry.update(client=client, room=listener.room, mode=mode)
        self.listeners.add(listener)
        listener.log("event", event="open", mode=mode, room=listener.room)
        try:
            await listener.tell({"type": "ready", "sampleRate": SAMPLE_RATE, "frameSamples": FRAME_SAMPLES, "mode": mode})
            if await listener.misbehave_after_ready():
                await self.receive(listener)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.live.discard(client)
            self.listeners.discard(listener)
            listener.log("event", event="close", code=ws.close_code)
        return ws

    async def receive(self, listener: Listener) -> None:
        ws = listener.ws
        while True:
            message = await ws.receive()
            if message.type == WSMsgType.TEXT:
                await listener.on_text(message.data)
            elif message.type == WSMsgType.BINARY:
                await listener.on_binary(message.data)
            elif message.type == WSMsgType.PING:
                listener.log("in", kind="ping", bytes=len(message.data))
                if not self.knobs["socketNoPong"]:
                    await ws.pong(message.data)
            elif message.type == WSMsgType.PONG:
                listener.log("in", kind="pong", bytes=len(message.data))
            elif message.type == WSMsgType.ERROR:
                listener.log("event", event="error", error=str(message.data))
                return
            else:  # CLOSE, CLOSING, CLOSED
                listener.log("in", kind="close", code=ws.close_code)
                return

    # ---- test routes

    async def test_route(self, request: web.BaseRequest) -> web.StreamResponse:
        if not self.from_this_machine(request):
            return json_response(403, {"error": "test routes answer this machine only"})
        route = f"{request.method} {request.path}"
        if route in ("GET /_test/knobs", "POST /_test/knobs"):
            if request.method == "POST":
                try:
                    patch = json.loads(await request.text() or "{}")
                except ValueError:
                    return json_response(400, {"error": "the body is not JSON"})
                problem = check_knobs(patch)
                if problem:
                    return json_response(400, {"error": problem})
                self.knobs.update(patch)
                for name, fields in (patch.get("adminServices") or {}).items():
                    self.admin.services[name].update(fields)
            return json_response(200, self.knobs)
        if request.path == "/_test/callback":
            return self.callback(request)
        if route == "POST /_test/reset":
            self.knobs = copy.deepcopy(DEFAULT_KNOBS)
            self.log.clear()
            self.callbacks.clear()
            self.admin = Admin()
            return json_response(200, self.knobs)
        if route == "GET /_test/log":
            # ?until=TYPE answers once the satellite has sent a message of that type (or after 15 s, within a client's 20 s,
            # with "until": false): a test waits for a message in flight instead of polling. &count=N waits for the Nth;
            # until=ping counts the satellite's pings.
            until = request.query.get("until")
            try:
                count = max(1, int(request.query.get("count", "1")))
            except ValueError:
                return json_response(400, {"error": "count is not a whole number"})
            found = await self.log.until(until, 15, count) if until else None
            return json_response(200, {
                **({"until": found} if until else {}),
                "server": {"name": self.name, "port": self.port, "tokenRequired": bool(self.token), "restarts": self.restarts},
                # Each entry's "t" is milliseconds from this monotonic time (seconds): a bench on the same machine places it.
                "started": self.log.started,
                "requests": self.log.requests,
                "socket": self.log.socket,
                "dropped": self.log.dropped,
                "callbacks": self.callbacks,
            })
        if route == "POST /_test/restart":
            self.schedule_restart()
            return json_response(202, {"restart": "scheduled"})
        return json_response(404, {"error": "no such test route; try /_test/knobs, /_test/reset, /_test/log, /_test/restart, /_test/callback"})

    def callback(self, request: web.BaseRequest) -> web.Response:
        """The sink a satellite's callbacks are pointed at: logs what came, answers the next of callbackStatuses.

        The request is logged as it came, so a test sees any header or value that should not be there;
        only the token itself is replaced, and `tokenSeen` says whether it was anywhere in the request.
        """
        seen = False

        def scrub(text: str) -> str:
            nonlocal seen
            if self.token and self.token in text:
                seen = True
                return text.replace(self.token, "<token>")
            return text

        statuses = self.knobs["callbackStatuses"]
        status = int(statuses[0]) if statuses else 200
        self.knobs["callbackStatuses"] = statuses[1:]
        entry = {
            "t": self.log.now(),
            "method": request.method,
            "path": scrub(request.path),
            "query": scrub(request.rel_url.raw_query_string),
            "headers": {scrub(name): scrub(value) for name, value in request.headers.items()},
            "status": status,
        }
        entry["tokenSeen"] = seen
        self.callbacks.append(entry)
        return json_response(status, {"ok": 200 <= status < 300})

    def from_this_machine(self, request: web.BaseRequest) -> bool:
        """Loopback, or this machine talking to its own address (a test inside a network namespace)."""
        remote = request.remote or ""
        own = request.transport.get_extra_info("sockname") if request.transport else None
        return (loopback(remote if ":" not in remote else f"[{remote}]") or (own is not None and own[0] == remote)
                or own_address(remote))


HTML_GARBAGE = b"<!doctype html><html><head><title>Sign in</title></head><body><h1>Sign in to the guest network</h1></body></html>"


def own_address(address: str) -> bool:
    """Whether the address is one of this machine's (a namespace with several on one interface): only those bind."""
    try:
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind((address, 0))
        return True
    except OSError:
        return False


def is_upgrade(request: web.BaseRequest) -> bool:
    """A request node's http server hands to its "upgrade" event."""
    connection = {part.strip().lower() for part in request.headers.get("Connection", "").split(",")}
    return "upgrade" in connection and "Upgrade" in request.headers


# -------------------------------------------------------------------- main


async def serve(args: argparse.Namespace) -> None:
    host = args.host
    if not args.token and host != "127.0.0.1":
        print("no --token, so the server is bound to 127.0.0.1 (loopback only)", file=sys.stderr, flush=True)
        host = "127.0.0.1"
    tls = None
    if args.cert:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(args.cert, args.key)
    server = TestServer(host, args.port, args.token or None, args.name, args.log, tls)
    if args.knobs:
        knobs = json.loads(args.knobs)
        problem = check_knobs(knobs)
        if problem:
            raise SystemExit(f"Error: --knobs: {problem}")
        server.knobs.update(knobs)
        for name, fields in (knobs.get("adminServices") or {}).items():
            server.admin.services[name].update(fields)
    await server.start()
    print(f"LISTENING {server.port}", flush=True)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="Run a test Parlour server for the satellite's tests.")
    parser.add_argument("--host", default="127.0.0.1", help="Listen on this address.")
    parser.add_argument("--port", type=int, default=0, help="Listen on this port; 0 picks a free one.")
    parser.add_argument("--token", help="Require this token; without it, answer loopback only.")
    parser.add_argument("--name", default="Parlour on den", help="The Bonjour instance name this server stands for.")
    parser.add_argument("--knobs", help="Start with these knobs (a JSON object).")
    parser.add_argument("--cert", help="Serve https and wss with this certificate (PEM); --key is its private key.")
    parser.add_argument("--key", help="The private key (PEM) of --cert.")
    parser.add_argument("--log", help="Also append every logged request and socket message to this file.")
    # A Swift test starts us through Foundation's Process, which passes on its thread's
    # blocked signals: unblock the two we stop on, or the test would wait forever.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()

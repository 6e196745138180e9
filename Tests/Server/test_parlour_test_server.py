"""Self-check of the test Parlour server: the peer the Swift tests trust must itself be right.

Each test talks to a real server process started on port 0, over real HTTP and
WebSocket connections, and checks the wire against parlour-protocol.md. Run
with the venv that scripts/test-venv prints: `$PY -m pytest Tests/Server`.
"""

from __future__ import annotations

import array
import asyncio
import base64
import http.client
import json
import math
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import aiohttp
import pytest

SERVER = Path(__file__).with_name("parlour_test_server.py")
TOKEN = "s3cret-token-value"


def start_server(*args: str) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--host", "127.0.0.1", "--port", "0", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    assert line.startswith("LISTENING "), f"server said {line!r}"
    return process, int(line.split()[1])


def stop_server(process: subprocess.Popen) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=10)


@pytest.fixture(scope="module")
def port():
    process, port = start_server("--token", TOKEN)
    yield port
    assert stop_server(process) == 0


@pytest.fixture(autouse=True)
def reset(port):
    call(port, "POST", "/_test/reset", token=None)


def call(port, method, path, body=None, headers=None, token=TOKEN, timeout=10):
    """One HTTP request; returns (status, content type, raw body)."""
    headers = dict(headers or {})
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        headers.setdefault("Content-Type", "application/json")
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type"), response.read()
    finally:
        connection.close()


def call_json(port, method, path, body=None, **kwargs):
    status, _, data = call(port, method, path, body, **kwargs)
    return status, json.loads(data)


def knobs(port, **values):
    status, _, data = call(port, "POST", "/_test/knobs", values, token=None)
    assert status == 200, data


def server_log(port):
    return call_json(port, "GET", "/_test/log", token=None)[1]


def wav(samples: list[int], rate: int = 16000) -> bytes:
    payload = array.array("h", samples).tobytes()
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    return (b"RIFF" + struct.pack("<I", 36 + len(payload)) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
            + b"data" + struct.pack("<I", len(payload)) + payload)


def tone(ms: int, amplitude: float = 0.3, rate: int = 16000) -> list[int]:
    return [round(amplitude * 32767 * math.sin(2 * math.pi * 300 * n / rate)) for n in range(rate * ms // 1000)]


def silence(ms: int, rate: int = 16000) -> list[int]:
    return [0] * (rate * ms // 1000)


def wav_header(data: bytes) -> dict:
    """The fields of fmt and the data size, walking the chunks."""
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    offset, info = 12, {}
    while offset + 8 <= len(data):
        cid, size = data[offset : offset + 4], struct.unpack_from("<I", data, offset + 4)[0]
        if cid == b"fmt ":
            tag, channels, rate, _, align, bits = struct.unpack_from("<HHIIHH", data, offset + 8)
            info.update(tag=tag, channels=channels, rate=rate, align=align, bits=bits, fmtSize=size)
            if tag == 0xFFFE:
                info["subformat"] = data[offset + 32]
        if cid == b"data":
            info.update(declared=size, present=len(data) - offset - 8)
            break
        offset += 8 + size + (size & 1)
    return info


# ------------------------------------------------------------------ HTTP


def test_health_and_models_have_the_exact_shapes(port):
    assert call_json(port, "GET", "/health", token=None) == (
        200, {"ok": True, "tools": 3, "cloud": False, "running": 0, "waiting": 0})
    assert call_json(port, "GET", "/v1/models") == (
        200, {"object": "list", "data": [{"id": "parlour", "object": "model", "created": 0, "owned_by": "parlour"}]})


@pytest.mark.parametrize("headers, path, ok", [
    ({}, "/v1/models", False),
    ({"Authorization": f"Bearer {TOKEN}"}, "/v1/models", True),
    ({}, f"/v1/models?token={TOKEN}", True),
    ({"Authorization": "Bearer wrong"}, f"/v1/models?token={TOKEN}", False),  # the header decides
    ({"Authorization": f"bearer {TOKEN}"}, "/v1/models", False),  # "Bearer " is case-sensitive
    ({"Authorization": f"bearer {TOKEN}"}, f"/v1/models?token={TOKEN}", True),  # ...so the query counts
    ({"Authorization": f"Bearer {TOKEN}x"}, "/v1/models", False),
])
def test_the_token_is_read_as_the_real_server_reads_it(port, headers, path, ok):
    status, body = call_json(port, "GET", path, headers=headers, token=None)
    assert status == (200 if ok else 401)
    if not ok:
        assert body == {"error": "a bearer token is required"}


@pytest.mark.parametrize("method, path, body, headers, status, error", [
    ("POST", "/ask", b'{"text":"hi"}', {"Content-Type": "text/plain"}, 415, "send application/json"),
    ("POST", "/ask", b"{nope", {"Content-Type": "application/json"}, 400, "the body is not JSON"),
    ("POST", "/ask", b'{"text":""}', {"Content-Type": "application/json; charset=utf-8"}, 400,
     "the body is not what this route takes (text)"),
    ("POST", "/voice", b"", {}, 400, "no audio"),
    ("POST", "/voice", b"not a wav at all", {}, 500, "internal error"),
    ("GET", "/ask", None, {}, 404, "no such file"),
    ("POST", "/nowhere", b"", {}, 404, "no such route"),
])
def test_refusals_have_the_protocol_status_and_text(port, method, path, body, headers, status, error):
    got_status, content_type, data = call(port, method, path, body, headers=headers)
    assert (got_status, json.loads(data)) == (status, {"error": error})
    assert content_type == "application/json"


def test_a_body_over_8_mib_is_refused(port):
    status, body = call_json(port, "POST", "/voice", b"\0" * (8 * 1024 * 1024 + 1))
    assert (status, body) == (413, {"error": "body too large"})


def test_ask_answers_and_the_log_keeps_the_cleaned_names(port):
    assert call_json(port, "POST", "/ask", {"text": "what time is it", "client": "  kitchen sat!", "room": " the  den "}) == (
        200, {"reply": "You asked: what time is it", "via": "local"})
    knobs(port, replyText="Ten past two.", via="cloud")
    assert call_json(port, "POST", "/ask", {"text": "x"})[1] == {"reply": "Ten past two.", "via": "cloud"}
    entry = server_log(port)["requests"][0]
    assert (entry["client"], entry["room"], entry["text"]) == ("kitchen-sat", "the den", "what time is it")


def test_reply_texts_answer_in_order_then_reply_text(port):
    knobs(port, replyTexts=["Which room?", "Done."], replyText="Anything else?")
    answers = [call_json(port, "POST", "/ask", {"text": "x"})[1]["reply"] for _ in range(3)]
    assert answers == ["Which room?", "Done.", "Anything else?"]
    assert call_json(port, "POST", "/_test/knobs", {"replyTexts": "Which room?"}, token=None)[0] == 400
    assert call_json(port, "POST", "/_test/knobs", {"replyTexts": [1]}, token=None)[0] == 400


def test_the_log_never_holds_the_token(port):
    call(port, "GET", f"/v1/models?token={TOKEN}&client=x", token=None)
    call(port, "GET", "/v1/models")
    log = server_log(port)
    assert TOKEN not in json.dumps(log)
    first, second = log["requests"]
    assert first["query"] == {"token": "<redacted>", "client": "x"} and first["credential"] == "query"
    assert second["headers"]["Authorization"] == "Bearer <redacted>" and second["tokenOk"] is True


def test_record_credentials_keeps_every_credential_shown_and_nothing_else(port):
    knobs(port, recordCredentials=True)
    call(port, "GET", "/v1/models", headers={"Authorization": "Bearer someone-elses"}, token=None)
    call(port, "GET", "/v1/models?token=from-the-query", token=None)
    call(port, "GET", "/health", token=None)
    shown = [entry["shownCredential"] for entry in server_log(port)["requests"]]
    assert shown == ["someone-elses", "from-the-query", None]
    knobs(port, recordCredentials=False)
    call(port, "GET", "/v1/models")
    assert server_log(port)["requests"][-1]["shownCredential"] is None


# ------------------------------------------------------------ /voice


def test_voice_hears_loud_audio_and_answers_with_a_wav(port):
    audio = wav(silence(400) + tone(640) + silence(400))
    status, body = call_json(port, "POST", "/voice?client=den-sat&room=den", audio, headers={"Content-Type": "audio/wav"})
    assert status == 200
    assert (body["heard"], body["reply"], body["via"]) == (
        "turn off the kitchen lights", "You asked: turn off the kitchen lights", "local")
    header = wav_header(base64.b64decode(body["audio"]))
    assert (header["tag"], header["bits"], header["channels"], header["rate"]) == (1, 16, 1, 24000)
    assert header["declared"] == header["present"] == 24000 * 2 * 1200 // 1000
    entry = server_log(port)["requests"][0]
    assert (entry["audioMs"], entry["sampleRate"], entry["firstLoudMs"], entry["lastLoudMs"]) == (1440, 16000, 400, 960)
    assert entry["client"] == "den-sat" and entry["bodyBytes"] == len(audio) and 0 < entry["rms"] < 0.3


def test_voice_with_silence_gets_the_nothing_heard_shape(port):
    assert call_json(port, "POST", "/voice", wav(silence(800))) == (
        200, {"heard": "", "reply": "", "via": "local", "audio": None})


@pytest.mark.parametrize("fmt, tag, bits, subformat", [
    ("pcm16", 1, 16, None), ("float32", 3, 32, None), ("pcm24", 1, 24, None), ("pcm32", 1, 32, None),
    ("extensible-float32", 0xFFFE, 32, 3), ("extensible-pcm16", 0xFFFE, 16, 1),
])
def test_the_reply_audio_comes_in_each_format(port, fmt, tag, bits, subformat):
    knobs(port, audioFormat=fmt, audioRate=22050, audioChannels=2, audioMs=500, audioExtraChunk=True)
    body = call_json(port, "POST", "/voice", wav(tone(300)))[1]
    header = wav_header(base64.b64decode(body["audio"]))
    assert (header["tag"], header["bits"], header["channels"], header["rate"]) == (tag, bits, 2, 22050)
    assert header.get("subformat") == subformat
    assert header["declared"] == header["present"] == 22050 * 500 // 1000 * 2 * bits // 8


# -------------------------------------------------------- misbehaviour


@pytest.mark.parametrize("kind, content_type, expected", [
    ("json", "application/json", b'{"reply": "unterminated'),
    ("wrong-types", "application/json", b'{"reply":42,"via":null,"heard":[]}'),
    ("html", "text/html", None),
])
def test_garbage_bodies(port, kind, content_type, expected):
    knobs(port, garbage=kind)
    status, got_type, data = call(port, "POST", "/ask", {"text": "hi"})
    assert (status, got_type) == (200, content_type)
    if expected is not None:
        assert data == expected
    else:
        assert data.startswith(b"<!doctype html>")


def test_garbage_wav_is_not_a_wav_and_truncated_wav_is_short(port):
    knobs(port, garbage="wav")
    audio = base64.b64decode(call_json(port, "POST", "/voice", wav(tone(300)))[1]["audio"])
    assert audio[:4] != b"RIFF"
    knobs(port, garbage="truncated-wav")
    header = wav_header(base64.b64decode(call_json(port, "POST", "/voice", wav(tone(300)))[1]["audio"]))
    assert header["present"] < header["declared"]


def test_refuse_token_status_and_delay(port):
    knobs(port, refuseToken=True)
    assert call_json(port, "GET", "/v1/models") == (401, {"error": "a bearer token is required"})
    assert call_json(port, "GET", "/health", token=None)[0] == 200  # not a token route
    knobs(port, refuseToken=False, status=503, errorText="the model is loading")
    assert call_json(port, "POST", "/ask", {"text": "hi"}) == (503, {"error": "the model is loading"})
    knobs(port, status=None, delayMs=300)
    started = time.monotonic()
    assert call_json(port, "POST", "/ask", {"text": "hi"})[0] == 200
    assert time.monotonic() - started >= 0.3


def test_close_mid_answer_sends_less_than_content_length(port):
    knobs(port, closeMidAnswer=True)
    with pytest.raises(http.client.IncompleteRead):
        call(port, "POST", "/ask", {"text": "hi"})
    assert server_log(port)["requests"][0]["closedMidAnswer"] is True


# -------------------------------------------------------------- admin


def test_admin_status_and_refusals(port):
    status, body = call_json(port, "GET", "/admin")
    assert status == 200 and body["restart"] == "automatic" and body["pipeline"] == body["saved"]
    assert [s["name"] for s in body["services"]] == ["llm", "whisper"]
    assert call_json(port, "POST", "/admin/pipeline", {"concurrency": 9}) == (
        400, {"error": "concurrency: Number must be less than or equal to 4"})
    assert call_json(port, "POST", "/admin/pipeline", {"triage": "sometimes"})[0] == 400
    assert call_json(port, "POST", "/admin/pipeline", {"colour": 1}) == (
        400, {"error": "pipeline: Unrecognized key(s) in object: 'colour'"})
    assert call_json(port, "POST", "/admin/pipeline?apply=false", {"concurrency": 3}) == (
        200, {"pipeline": {**body["pipeline"], "concurrency": 3}, "restart": "needed"})
    logged = [r for r in server_log(port)["requests"] if r["path"] == "/admin/pipeline"]
    assert logged[-1]["patch"] == {"concurrency": 3}
    assert call_json(port, "POST", "/admin/service", {"service": "tts", "action": "start"})[0] == 404
    assert call_json(port, "POST", "/admin/service", {"service": "llm", "action": "explode"})[0] == 400
    assert call_json(port, "POST", "/admin/service", {"service": "whisper", "action": "stop"})[1]["running"] is False
    status, body = call_json(port, "POST", "/admin/service", {"service": "whisper", "action": "stop"})
    assert status == 429 and body["error"].startswith("that was done a moment ago; try again in ")
    assert len(call_json(port, "GET", "/admin/logs?service=llm&lines=500")[1]["lines"]) == 200
    assert call_json(port, "GET", "/admin/logs?service=nope")[0] == 404
    knobs(port, adminTooBig=True)
    assert call_json(port, "POST", "/admin/service", {"service": "llm", "action": "restart"})[0] == 409
    knobs(port, adminOff=True)
    assert call_json(port, "GET", "/admin") == (403, {"error": "remote management is switched off on this server"})


def test_admin_service_states_and_their_refusals(port):
    # A stop holds the service down; a start lets it go.
    status, body = call_json(port, "POST", "/admin/service", {"service": "llm", "action": "stop"})
    assert status == 200 and (body["running"], body["pid"], body["lastExit"], body["held"]) == (False, None, 0, True)
    status, body = call_json(port, "POST", "/admin/service", {"service": "llm", "action": "start"})
    assert status == 200 and body["running"] is True and body["held"] is False
    logged = [(r["service"], r["action"]) for r in server_log(port)["requests"] if r["path"] == "/admin/service"]
    assert logged == [("llm", "stop"), ("llm", "start")]
    # The knob sets the state GET /admin shows, and the refusals follow it.
    knobs(port, adminServices={"whisper": {"installed": False, "running": False, "pid": None, "lastExit": 1}})
    whisper = call_json(port, "GET", "/admin")[1]["services"][1]
    assert (whisper["installed"], whisper["running"], whisper["lastExit"]) == (False, False, 1)
    assert call_json(port, "POST", "/admin/service", {"service": "whisper", "action": "start"}) == (
        409, {"error": "whisper, kept warm is not installed as a service. parlour service install on the server sets it up"})
    knobs(port, adminServices={"llm": {"configured": False}})
    assert call_json(port, "POST", "/admin/service", {"service": "llm", "action": "restart"}) == (
        404, {"error": "this server does not run llm: its config has no use for it, or its model is missing"})
    knobs(port, adminServices={"llm": {"configured": True}}, adminManagerRefuses="launchctl: no such job")
    assert call_json(port, "POST", "/admin/service", {"service": "llm", "action": "restart"}) == (
        409, {"error": "launchctl: no such job"})
    assert call(port, "POST", "/_test/knobs", {"adminServices": {"tts": {}}}, token=None)[0] == 400
    assert call(port, "POST", "/_test/knobs", {"adminServices": {"llm": {"colour": 1}}}, token=None)[0] == 400
    # Reset brings the two healthy services back.
    call(port, "POST", "/_test/reset", token=None)
    assert all(s["running"] and s["installed"] for s in call_json(port, "GET", "/admin")[1]["services"])


def test_admin_needs_the_token(port):
    for method, path in (("GET", "/admin"), ("POST", "/admin/doctor"), ("GET", "/admin/logs")):
        assert call_json(port, method, path, token="wrong") == (401, {"error": "a bearer token is required"})


def test_admin_runs_one_action_at_a_time(port):
    knobs(port, adminWorkMs=600)
    results = []
    first = threading.Thread(target=lambda: results.append(call_json(port, "POST", "/admin/doctor")[0]))
    first.start()
    while not any(r["path"] == "/admin/doctor" for r in server_log(port)["requests"]):
        time.sleep(0.01)
    # Logged means its handler ran up to the lock, which it holds for 600 ms.
    assert call_json(port, "POST", "/admin/doctor") == (
        409, {"error": "another change is still being made; try again when it is done"})
    first.join()
    assert results == [200]


def test_restart_is_503_while_pending_and_the_server_comes_back(port):
    knobs(port, restartDownMs=200, restartDelayMs=300)
    assert call_json(port, "POST", "/admin/restart") == (202, {"restart": "scheduled"})
    assert call_json(port, "POST", "/admin/doctor")[0] == 503
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if server_log(port)["server"]["restarts"] == 1 and call_json(port, "POST", "/admin/doctor")[0] == 200:
                break
        except (ConnectionError, http.client.HTTPException):
            pass
        time.sleep(0.05)
    else:
        pytest.fail("the server did not come back after the restart")


# ------------------------------------------------------------- /listen


async def receive_until(ws, predicate, limit=5.0):
    """Messages (text as dicts, binary as bytes) up to and including the first that matches."""
    seen = []
    async with asyncio.timeout(limit):
        while True:
            message = await ws.receive()
            if message.type == aiohttp.WSMsgType.TEXT:
                seen.append(json.loads(message.data))
            elif message.type == aiohttp.WSMsgType.BINARY:
                seen.append(message.data)
            else:
                seen.append(message.type)
                return seen
            if predicate(seen[-1]):
                return seen


def summary(messages):
    """A compact form: "ready", "state:thinking", "state:thinking+text", "reply", "wav"."""
    out = []
    for m in messages:
        if isinstance(m, bytes):
            out.append("wav" if m[:4] == b"RIFF" else "binary")
        elif isinstance(m, dict):
            out.append(f"state:{m['value']}{'+text' if 'text' in m else ''}" if m["type"] == "state" else m["type"])
        else:
            out.append(str(m))
    return out


def run(coroutine):
    return asyncio.run(coroutine)


def socket_url(port, query=f"token={TOKEN}&client=den&mode=push", path="/listen"):
    return f"http://127.0.0.1:{port}{path}?{query}"


def test_push_round_trip(port):
    async def go():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(socket_url(port), max_msg_size=0) as ws:
                ready = await receive_until(ws, lambda m: True)
                assert ready == [{"type": "ready", "sampleRate": 16000, "frameSamples": 1280, "mode": "push"}]
                await ws.send_str('{"type":"start"}')
                audio = array.array("h", silence(300) + tone(800) + silence(300)).tobytes()
                for start in range(0, len(audio), 1000):  # odd sizes: the server re-cuts them
                    await ws.send_bytes(audio[start : start + 1000])
                await ws.send_str('{"type":"end"}')
                messages = await receive_until(ws, lambda m: m == {"type": "state", "value": "idle"})
                assert summary(messages) == ["state:thinking", "state:thinking+text", "state:speaking", "reply", "wav", "state:idle"]
                assert messages[1]["text"] == "turn off the kitchen lights"
                assert messages[3] == {"type": "reply", "text": "You asked: turn off the kitchen lights", "via": "local"}
                await ws.send_str('{"type":"spoke"}')
                await ws.send_str("not json")
                await ws.send_str(json.dumps({"type": "start", "pad": "x" * 5000}))  # over 4 KiB: ignored
                await ws.close()

    run(go())
    log = server_log(port)
    assert log["requests"][0]["status"] == 101 and log["requests"][0]["mode"] == "push"
    incoming = [e for e in log["socket"] if e["dir"] == "in"]
    assert [e.get("type") for e in incoming if e["kind"] == "text"] == ["start", "end", "spoke", None, None]
    assert sum(e["bytes"] for e in incoming if e["kind"] == "binary") == 16000 * 2 * 1400 // 1000
    spoke = next(e for e in incoming if e.get("type") == "spoke")
    assert spoke["afterWavMs"] >= 0
    utterance = next(e for e in log["socket"] if e.get("event") == "utterance")
    assert utterance["firstLoudMs"] is not None


def test_log_until_waits_for_a_message_in_flight(port):
    async def go():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(socket_url(port)) as ws:
                await receive_until(ws, lambda m: True)
                # Asked before the message is sent: the answer waits for it.
                waiting = asyncio.create_task(session.get(f"http://127.0.0.1:{port}/_test/log?until=cancel"))
                await asyncio.sleep(0.2)  # not synchronisation: the ask must be waiting when the message comes
                assert not waiting.done()
                await ws.send_str('{"type":"cancel"}')
                async with await waiting as response:
                    return await response.json()

    log = run(go())
    assert log["until"] is True
    assert [e.get("type") for e in log["socket"] if e["dir"] == "in" and e["kind"] == "text"] == ["cancel"]


def test_log_until_counts_pings(port):
    async def go():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(socket_url(port), autoping=False) as ws:
                await receive_until(ws, lambda m: True)
                waiting = asyncio.create_task(session.get(f"http://127.0.0.1:{port}/_test/log?until=ping&count=2"))
                await ws.ping(b"1")
                await asyncio.sleep(0.2)  # not synchronisation: the answer must still be waiting after one ping
                assert not waiting.done()
                await ws.ping(b"2")
                async with await waiting as response:
                    return await response.json()

    log = run(go())
    assert log["until"] is True
    assert [e["kind"] for e in log["socket"] if e["dir"] == "in"] == ["ping", "ping"]


def test_push_with_nothing_heard_is_thinking_then_idle(port):
    async def go():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(socket_url(port)) as ws:
                await receive_until(ws, lambda m: True)
                await ws.send_str('{"type":"start"}')
                await ws.send_bytes(array.array("h", silence(800)).tobytes())
                await ws.send_str('{"type":"end"}')
                return summary(await receive_until(ws, lambda m: m.get("value") == "idle"))

    assert run(go()) == ["state:thinking", "state:idle"]


def test_wake_mode_wakes_on_a_loud_stretch_and_endpoints_on_silence(port):
    async def go():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(socket_url(port, f"token={TOKEN}&client=hall")) as ws:
                assert (await receive_until(ws, lambda m: True))[0]["mode"] == "wake"
                audio = silence(400) + tone(320) + silence(160) + tone(640) + silence(1000)
                await ws.send_bytes(array.array("h", audio).tobytes())
                return summary(await receive_until(ws, lambda m: isinstance(m, dict) and m.get("value") == "idle"))

    assert run(go()) == ["stop", "state:listening", "state:thinking", "state:thinking+text",
                         "state:speaking", "reply", "wav", "state:idle"]


def test_wake_after_quiet_wakes_only_on_a_loud_stretch_that_follows_quiet(port):
    knobs(port, wakeAfterQuietMs=400)

    async def go():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(socket_url(port, f"token={TOKEN}&client=hall")) as ws:
                await receive_until(ws, lambda m: True)
                # Sound from the socket's opening, short gaps in it: the rest of a question, no wake.
                await ws.send_bytes(array.array("h", tone(640) + silence(160) + tone(640)).tobytes())
                await ws.send_bytes(array.array("h", silence(480) + tone(640) + silence(1000)).tobytes())
                return summary(await receive_until(ws, lambda m: isinstance(m, dict) and m.get("value") == "idle"))

    assert run(go())[:2] == ["stop", "state:listening"]
    kinds = [e.get("event") or e.get("kind") for e in server_log(port)["socket"] if e.get("event") or e.get("dir") == "in"]
    # The wake came in the second message, after the quiet: none in the first.
    assert kinds.count("wake") == 1
    assert [k for k in kinds if k in ("binary", "wake")][:3] == ["binary", "binary", "wake"]


def test_refused_handshakes_get_no_answer_and_are_logged(port):
    async def attempt(url):
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientError):
                await session.ws_connect(url)

    run(attempt(socket_url(port, "token=wrong")))
    run(attempt(socket_url(port, path="/listen/")))
    knobs(port, refuseToken=True)
    run(attempt(socket_url(port)))
    # aiohttp's client tries a dropped handshake a second time, so count kinds, not entries.
    requests = server_log(port)["requests"]
    assert all(r["destroyed"] and r["status"] is None for r in requests)
    assert {(r["path"], r["tokenOk"]) for r in requests} == {("/listen", False), ("/listen/", True), ("/listen", True)}


def test_ids_in_use_are_made_unique_and_big_messages_close_1009(port):
    async def go():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(socket_url(port)) as first, session.ws_connect(socket_url(port)) as second:
                await receive_until(first, lambda m: True)
                await receive_until(second, lambda m: True)
                await second.send_bytes(b"\0" * (256 * 1024))  # exactly the limit is allowed
                await second.send_bytes(b"\0" * (256 * 1024 + 1))
                await receive_until(second, lambda m: False)
                return second.close_code

    assert run(go()) == 1009
    assert [r["client"] for r in server_log(port)["requests"]] == ["den", "den~2"]


@pytest.mark.parametrize("knob, expected", [
    ({"socketHugeText": True}, ["ready", "padding"]),
    ({"socketHugeBinary": True}, ["ready", "wav"]),
    ({"socketUnknownType": True}, ["ready", "weird"]),
    ({"socketCloseAfterReady": True}, ["ready", "CLOSE"]),
])
def test_socket_misbehaviour_after_ready(port, knob, expected):
    knobs(port, **knob)

    async def go():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(socket_url(port), max_msg_size=0) as ws:
                seen = []
                async with asyncio.timeout(5):
                    while len(seen) < 2:
                        message = await ws.receive()
                        seen.append(message)
                return seen

    seen = run(go())
    kinds = [json.loads(m.data)["type"] if m.type == aiohttp.WSMsgType.TEXT
             else ("wav" if m.type == aiohttp.WSMsgType.BINARY and m.data[:4] == b"RIFF" else m.type.name) for m in seen]
    assert kinds == expected
    if "socketHugeText" in knob:
        assert len(seen[1].data.encode()) == 5 * 1024
    if "socketHugeBinary" in knob:
        assert len(seen[1].data) == 9 * 1024 * 1024


@pytest.mark.parametrize("knob, expected", [
    ({"socketBadWav": True}, ["state:thinking", "state:thinking+text", "state:speaking", "reply", "binary", "state:idle"]),
    ({"socketSilentDrop": True}, ["state:thinking", "state:idle"]),
])
def test_socket_misbehaviour_in_a_turn(port, knob, expected):
    knobs(port, **knob)

    async def go():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(socket_url(port)) as ws:
                await receive_until(ws, lambda m: True)
                await ws.send_str('{"type":"start"}')
                await ws.send_bytes(array.array("h", tone(400)).tobytes())
                await ws.send_str('{"type":"end"}')
                return summary(await receive_until(ws, lambda m: isinstance(m, dict) and m.get("value") == "idle"))

    assert run(go()) == expected


def test_socket_no_pong_leaves_pings_unanswered(port):
    async def ping_answered():
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(socket_url(port), autoping=False) as ws:
                await receive_until(ws, lambda m: True)
                await ws.ping(b"are you there")
                try:
                    async with asyncio.timeout(0.5):
                        return (await ws.receive()).type == aiohttp.WSMsgType.PONG
                except TimeoutError:
                    return False

    assert run(ping_answered()) is True
    knobs(port, socketNoPong=True)
    assert run(ping_answered()) is False


# ------------------------------------------------------ no token, test routes, signals


def test_without_a_token_only_loopback_names_are_answered():
    process, port = start_server()
    try:
        assert call_json(port, "GET", "/v1/models", token=None)[0] == 200
        assert call_json(port, "GET", "/health", headers={"Host": "den.local:8765"}, token=None) == (
            403, {"error": "this server answers its own machine only"})
        assert call_json(port, "GET", "/health", headers={"Origin": "http://evil.example"}, token=None)[0] == 403
        assert call_json(port, "GET", "/health", headers={"Host": "127.0.0.2"}, token=None)[0] == 200
    finally:
        assert stop_server(process) == 0


def test_unknown_knobs_are_refused(port):
    status, body = call_json(port, "POST", "/_test/knobs", {"delayMS": 5}, token=None)
    assert status == 400 and "delayMS" in body["error"]


def test_the_callback_sink_logs_what_came_and_answers_the_statuses_set(port):
    assert call_json(port, "POST", "/_test/knobs", {"callbackStatuses": [503]}, token=None)[0] == 200
    status, _, _ = call(port, "GET", "/_test/callback?ctx=a%20b&status=completed&response=eyJ9", token=None)
    assert status == 503
    status, _, _ = call(port, "GET", f"/_test/callback?leak={TOKEN}", token=TOKEN)
    assert status == 200
    _, log = call_json(port, "GET", "/_test/log", token=None)
    first, second = log["callbacks"]
    assert first["query"] == "ctx=a%20b&status=completed&response=eyJ9"
    assert first["status"] == 503 and first["tokenSeen"] is False
    assert second["tokenSeen"] is True
    assert TOKEN not in json.dumps(log)
    assert second["headers"]["Authorization"] == "Bearer <token>"
    assert log["requests"] == []
    assert call_json(port, "POST", "/_test/knobs", {"callbackStatuses": ["x"]}, token=None)[0] == 400


def test_sigterm_ends_the_server_with_an_open_socket():
    process, port = start_server("--token", TOKEN)

    async def hold():
        async with aiohttp.ClientSession() as session:
            ws = await session.ws_connect(socket_url(port))
            await receive_until(ws, lambda m: True)
            process.send_signal(signal.SIGTERM)
            message = await ws.receive(timeout=5)
            return message.type, ws.close_code

    kind, code = run(hold())
    assert kind in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR) and code in (None, 1006)
    assert process.wait(timeout=5) == 0


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirect_answers_http_and_the_upgrade_with_a_location(port, status):
    knobs(port, redirectStatus=status, redirectTo="http://elsewhere.example:9")
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/v1/models?x=1", headers={"Authorization": f"Bearer {TOKEN}"})
        response = connection.getresponse()
        assert response.status == status
        assert response.getheader("Location") == "http://elsewhere.example:9/v1/models?x=1"
    finally:
        connection.close()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/listen?client=hall", headers={
            "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": base64.b64encode(b"0123456789abcdef").decode()})
        response = connection.getresponse()
        assert response.status == status
        assert response.getheader("Location") == "http://elsewhere.example:9/listen?client=hall"
    finally:
        connection.close()
    assert [entry["redirectedTo"] for entry in server_log(port)["requests"]] == [
        "http://elsewhere.example:9/v1/models", "http://elsewhere.example:9/listen"]


def test_redirect_knobs_are_checked(port):
    status, _, data = call(port, "POST", "/_test/knobs", {"redirectStatus": 200}, token=None)
    assert status == 400 and b"3xx" in data


def test_tls_serves_https_with_the_given_certificate(tmp_path):
    import ssl
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=den.local"],
                   check=True, capture_output=True)
    process, tls_port = start_server("--token", TOKEN, "--cert", str(cert), "--key", str(key))
    try:
        context = ssl.create_default_context(cafile=str(cert))
        context.check_hostname = False
        connection = http.client.HTTPSConnection("127.0.0.1", tls_port, timeout=10, context=context)
        connection.request("GET", "/health")
        assert connection.getresponse().status == 200
        connection.close()
    finally:
        assert stop_server(process) == 0


def test_audio_file_must_be_a_file(port):
    status, body = call_json(port, "POST", "/_test/knobs", {"audioFile": "/nonexistent/reply.wav"}, token=None)
    assert status == 400 and "audioFile" in body["error"]

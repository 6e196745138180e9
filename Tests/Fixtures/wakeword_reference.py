"""The local wake word's reference: what pymicro-features and pymicro-wakeword
(microWakeWord as linux-voice-assistant runs it) make of a recording, printed as
JSON for the Swift tests to compare with the satellite's own front end and engine.

    wakeword_reference.py features CLIP.raw OUT.json
        {"features": [[40 ints], ...]}  one row every 10 ms, in the front end's
        own unit (the uint16 it computes; pymicro-features hands it out times 0.0390625)
    wakeword_reference.py detect OUT.json MODEL,MODEL... CLIP.raw...
        {"clips": [{"MODEL": {"probabilities": [...], "detected": bool, "cutoff": x}, ...}, ...]}
        for each clip in order, each model started afresh: one averaged probability
        per model step, as MicroWakeWord.process_streaming_prob returns it
    wakeword_reference.py wakes OUT.json MODEL CLIP.raw...
        {"clips": [{"wakes": [ms, ...]}, ...], "cpu_s": x, "audio_s": y}  for scripts/bench:
        each clip heard afresh in 64 ms reads, the model started afresh after each wake (as
        the satellite's is); ms is where the read that woke it ends; cpu_s the CPU it took

CLIP.raw is 16 kHz mono signed 16-bit little-endian audio. The answer goes to
OUT.json, not stdout, so that the test's runner need not read a pipe.
"""

import json
import sys
import time

from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures, Model

FEATURE_SCALE = 0.0390625
MODELS = {}
READ_BYTES = 2048  # 64 ms, as pymicro_wakeword reads standard input live


def features(audio: bytes):
    frontend = MicroWakeWordFeatures()
    return [[round(v / FEATURE_SCALE) for v in frame.reshape(-1).tolist()]
            for frame in frontend.process_streaming(audio)]


def detect(audio: bytes, names):
    result = {}
    for name in names:
        if name not in MODELS:
            MODELS[name] = MicroWakeWord.from_builtin(Model(name))
        model = MODELS[name]
        model.reset()  # a fresh model state for each clip
        frontend = MicroWakeWordFeatures()
        probabilities = []
        for frame in frontend.process_streaming(audio):
            probability = model.process_streaming_prob(frame)
            # The model runs once every `stride` frames; between runs it answers 0.0 unchanged.
            if len(model._features) == 0:
                probabilities.append(probability)
        result[name] = {
            "probabilities": probabilities,
            "detected": any(p > model.probability_cutoff for p in probabilities),
            "cutoff": model.probability_cutoff,
        }
    return result


def wakes(paths, name):
    model = MicroWakeWord.from_builtin(Model(name))
    clips, cpu, audio_s = [], 0.0, 0.0
    for path in paths:
        audio = read(path)
        began = time.process_time()
        model.reset()
        frontend = MicroWakeWordFeatures()
        found = []
        for start in range(0, len(audio), READ_BYTES):
            woke = False
            for frame in frontend.process_streaming(audio[start:start + READ_BYTES]):
                woke = model.process_streaming(frame) or woke
            # As the satellite: the read that woke it goes to the turn, the model starts afresh after it.
            if woke:
                found.append((start + min(READ_BYTES, len(audio) - start)) // 32)
                model.reset()
        cpu += time.process_time() - began
        audio_s += len(audio) / 32000
        clips.append({"wakes": found})
    return {"clips": clips, "cpu_s": cpu, "audio_s": audio_s}


def read(path):
    with open(path, "rb") as clip:
        return clip.read()


def main():
    command, *rest = sys.argv[1:]
    if command == "features":
        path, out = rest
        answer = {"features": features(read(path))}
    elif command == "detect":
        out, models, *paths = rest
        answer = {"clips": [detect(read(path), models.split(",")) for path in paths]}
    elif command == "wakes":
        out, name, *paths = rest
        answer = wakes(paths, name)
    else:
        sys.exit(f"unknown command {command!r}: features, detect or wakes")
    with open(out, "w", encoding="utf-8") as file:
        json.dump(answer, file)


if __name__ == "__main__":
    main()

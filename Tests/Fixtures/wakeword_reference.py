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

CLIP.raw is 16 kHz mono signed 16-bit little-endian audio. The answer goes to
OUT.json, not stdout, so that the test's runner need not read a pipe.
"""

import json
import sys

from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures, Model

FEATURE_SCALE = 0.0390625
MODELS = {}


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
    else:
        sys.exit(f"unknown command {command!r}: features or detect")
    with open(out, "w", encoding="utf-8") as file:
        json.dump(answer, file)


if __name__ == "__main__":
    main()

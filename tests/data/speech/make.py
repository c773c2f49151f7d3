"""Regenerate the speech clips of this folder (run once by hand; the tests only read the files).

Needs ``espeak-ng`` (Debian: ``apt-get install espeak-ng``, 1.51) and soxr (a librosa dependency).
espeak-ng writes 22,050 Hz 16-bit mono WAV; the 16 kHz clips are resampled with soxr (VHQ) and
written as 16-bit PCM. See README.md in tests/data for licences.
"""

import pathlib
import subprocess
import tempfile

import numpy as np
import soundfile as sf
import soxr

HERE = pathlib.Path(__file__).parent
SENTENCE = "The quick brown fox jumps over the lazy dog."
WORDS = ("yes", "no", "stop")
#: (voice, speed in words per minute, pitch 0-99): eight speakers per word
SPEAKERS = [("en+m1", 150, 40), ("en+m3", 175, 55), ("en+f2", 160, 70), ("en+f4", 140, 60),
            ("en-us+m2", 190, 35), ("en-us+f1", 170, 80), ("en-gb-scotland+m4", 155, 50), ("en-us+f3", 130, 65)]


def speak(text: str, voice: str, speed: int, pitch: int) -> tuple[np.ndarray, int]:
    with tempfile.NamedTemporaryFile(suffix=".wav") as f:
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-w", f.name, text], check=True)
        return sf.read(f.name, dtype="float32")


def trim(y: np.ndarray, threshold: float = 1e-3) -> np.ndarray:
    loud = np.flatnonzero(np.abs(y) > threshold)
    return y[loud[0]:loud[-1] + 1] if loud.size else y


def main() -> None:
    y, sr = speak(SENTENCE, "en+m1", 165, 50)
    sf.write(HERE / "sentence_22k.wav", y, sr, subtype="PCM_16")
    sf.write(HERE / "sentence_16k.wav", soxr.resample(y, sr, 16000, quality="VHQ"), 16000, subtype="PCM_16")
    words = HERE / "words"
    words.mkdir(exist_ok=True)
    for word in WORDS:
        for i, (voice, speed, pitch) in enumerate(SPEAKERS):
            y, sr = speak(word, voice, speed, pitch)
            sf.write(words / f"{word}_{i}.wav", soxr.resample(trim(y), sr, 16000, quality="VHQ"), 16000,
                     subtype="PCM_16")


if __name__ == "__main__":
    main()

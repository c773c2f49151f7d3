"""Media preprocessing in the graph vs the library it equals: 1 and 64 images, 1 and 64 10-second clips.

Candidates, measured side by side (interleaved rounds, best round kept; see ``_timing.py``), each checked
to give the library's values first:

* images, 512 x 512 RGB uint8 (scikit-image's astronaut, and its horizontal mirror) -> 224 x 224:
  Pillow ``Image.resize`` bilinear / bicubic per image (``np.asarray`` of the result), the onegraph graph
  (``match="pil"``) in onnxruntime on the batch; torch ``interpolate`` (torchvision's resize on tensors) on a
  float32 NCHW batch, bilinear antialias, and the graph (``match="torchvision"``);
* audio, 10 s of espeak-ng speech at 22,050 Hz (tests/data/speech, repeated): ``librosa.feature
  .melspectrogram`` + ``power_to_db`` per clip (n_fft 2048, hop 512, 128 mels) and the graph; at 16 kHz,
  Whisper's log-mel features (``WhisperFeatureExtractor._np_extract_fbank_features``, its NumPy reference,
  30 s chunks) and the graph.

Ratios are library time / graph time (above 1: the graph is faster). onnxruntime and torch use their default
threads (2 on the project's machines); Pillow, librosa and NumPy run on one.

Run: ``python bench/media.py [--rounds 5] [--seconds 0.5]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, interleaved  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def session(pipeline):
    from onegraph.runtime.session import Session

    return Session(pipeline.to_onnx(), trusted=True)


def image_cases(batch: int):
    import skimage.data
    import torch
    import torch.nn.functional as F
    from PIL import Image

    from onegraph.media import image as im
    from onegraph.media.pipeline import ImagePipeline

    base = skimage.data.astronaut()
    images = np.stack([base if i % 2 == 0 else base[:, ::-1] for i in range(batch)])
    floats = np.ascontiguousarray(images.transpose(0, 3, 1, 2) / np.float32(255), dtype=np.float32)
    cases = {}
    for mode in ("bilinear", "bicubic"):
        resample = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC}[mode]
        s = session(ImagePipeline([im.Resize((224, 224), mode, match="pil")]))
        pil = lambda resample=resample: np.stack([np.asarray(Image.fromarray(x).resize((224, 224), resample))
                                                  for x in images])
        graph = lambda s=s: s.run_feeds({"image": images})[0]
        assert np.array_equal(pil(), graph())
        cases[f"Pillow {mode}, uint8"] = (pil, graph)
    s = session(ImagePipeline([im.Resize((224, 224), "bilinear", match="torchvision")], dtype="float32"))
    tensor = torch.from_numpy(floats)
    tv = lambda: F.interpolate(tensor, size=(224, 224), mode="bilinear", antialias=True, align_corners=False).numpy()
    graph = lambda: s.run_feeds({"image": floats})[0]
    assert np.abs(tv() - graph()).max() < 1e-5
    cases["torch interpolate bilinear aa, float32"] = (tv, graph)
    return cases


def audio_cases(batch: int):
    import librosa
    import soundfile as sf
    from transformers import WhisperFeatureExtractor

    from onegraph.media import audio as au
    from onegraph.media.pipeline import AudioPipeline

    cases = {}
    y, sr = sf.read(ROOT / "tests/data/speech/sentence_22k.wav", dtype="float32")
    clip = np.resize(y, 10 * sr)
    clips = np.stack([clip] * batch)
    s = session(AudioPipeline([au.MelSpectrogram(sr), au.PowerToDB()], sample_rate=sr))
    lib = lambda: np.stack([librosa.power_to_db(librosa.feature.melspectrogram(y=c, sr=sr)) for c in clips])
    graph = lambda: s.run_feeds({"audio": clips})[0]
    assert np.abs(lib() - graph()).max() < 1e-4
    cases["librosa log-mel (power_to_db), 10 s"] = (lib, graph)
    y16, _ = sf.read(ROOT / "tests/data/speech/sentence_16k.wav", dtype="float32")
    clips16 = np.stack([np.resize(y16, 160000)] * batch)
    fe = WhisperFeatureExtractor(feature_size=80, sampling_rate=16000, hop_length=160, chunk_length=30, n_fft=400)
    padded = np.pad(clips16, ((0, 0), (0, 480000 - 160000)))
    s16 = session(AudioPipeline([au.WhisperLogMel()], sample_rate=16000))
    lib16 = lambda: fe._np_extract_fbank_features(padded, "cpu")
    graph16 = lambda: s16.run_feeds({"audio": clips16})[0]
    assert np.abs(lib16() - graph16()).max() < 1e-4
    cases["Whisper log-mel (NumPy reference), 10 s in 30 s"] = (lib16, graph16)
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5)
    args = parser.parse_args()
    import onnxruntime
    import PIL
    import librosa
    import torch

    print(f"onnxruntime {onnxruntime.__version__}, Pillow {PIL.__version__}, torch {torch.__version__}, "
          f"librosa {librosa.__version__}")
    print(f"{'case':50} {'batch':>5} {'library':>12} {'graph':>12}  library / graph")
    for make in (image_cases, audio_cases):
        for batch in (1, 64):
            for name, (lib, graph) in make(batch).items():
                best = interleaved({"lib": lib, "graph": graph}, rounds=args.rounds, seconds=args.seconds)
                print(f"{name:50} {batch:5d} {fmt(best['lib'])} {fmt(best['graph'])}  {best['lib'] / best['graph']:.2f}x",
                      flush=True)


if __name__ == "__main__":
    main()

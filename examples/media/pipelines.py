"""Two media pipelines, each one ONNX file: resize + normalize + CNN on images, log-mel + CNN on speech.

* ``digits.onnx``: scikit-learn's bundled handwritten digits (8 x 8, 0..16) as 32 x 32 gray photos (Pillow
  bicubic upscale); the graph resizes them to 16 x 16 as Pillow's bilinear does, scales to [0, 1] and
  normalizes (torchvision's ToTensor + Normalize), then a small CNN trained here with torch on the pipeline's
  own output.
* ``words.onnx``: "yes" / "no" / "stop" spoken by eight espeak-ng voices (``tests/data/speech/words``), cut or
  padded to one second, librosa's mel spectrogram (40 bands) in dB, then a small 1-D CNN trained here on
  speakers 0-5; speakers 6 and 7 are held out.

``build`` checks each graph against Pillow / librosa then torch on a sample before writing it.

Run: ``python examples/media/pipelines.py OUT`` (writes OUT/digits.onnx, OUT/words.onnx and two folders of
files to score: OUT/photos, OUT/clips). Then ``onegraph check OUT/digits.onnx`` and
``onegraph score OUT/digits.onnx OUT/photos -o digits.csv``.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

from onegraph.media import audio as au
from onegraph.media import image as im
from onegraph.media.pipeline import AudioPipeline, ImagePipeline, build

WORDS = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "speech" / "words"
CLASSES = ["no", "stop", "yes"]


def train(net, x: np.ndarray, y: np.ndarray, steps: int, batch: int = 128):
    """Adam, cross-entropy, seeded; one thread (small batches only contend on shared cores)."""
    import torch

    torch.manual_seed(0)
    opt = torch.optim.Adam(net.parameters(), 1e-2)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for _ in range(steps):
            idx = torch.randint(0, len(x), (batch,)) if len(x) > batch else torch.arange(len(x))
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx]).backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    return net.eval()


# -- images -------------------------------------------------------------------------------------------
def digit_photos() -> tuple[np.ndarray, np.ndarray]:
    """uint8 [1797, 32, 32, 1] photos of scikit-learn's digits and their labels (int64)."""
    from PIL import Image
    from sklearn.datasets import load_digits

    d = load_digits()
    small = np.round(d.images * (255 / 16)).astype(np.uint8)
    big = [np.asarray(Image.fromarray(s).resize((32, 32), Image.Resampling.BICUBIC)) for s in small]
    return np.stack(big)[..., None], d.target.astype(np.int64)


def image_pipeline() -> ImagePipeline:
    return ImagePipeline([im.Resize((16, 16), "bilinear", match="pil"), im.ToFloat(), im.ToCHW(),
                          im.Normalize([0.5], [0.5])], channels=1)


def digits_model(path: pathlib.Path | str | None = None):
    """The pipeline, the CNN trained on the first 1,500 photos, and the composed model (written to path)."""
    import torch

    images, labels = digit_photos()
    pipe = image_pipeline()
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(16 * 4 * 4, 10))
    train(net, pipe.reference(images[:1500]), labels[:1500], steps=120)
    proto = build(pipe, net, images[1500:1564], classes=list(range(10)), path=path)
    return pipe, net, proto


# -- audio --------------------------------------------------------------------------------------------
def spoken_words() -> tuple[list[pathlib.Path], np.ndarray, np.ndarray]:
    """The word files, their clips as float32 [24, 16000] (one second, zero-padded) and their words."""
    import soundfile as sf

    files = sorted(WORDS.glob("*.wav"))
    clips = [sf.read(f, dtype="float32")[0] for f in files]
    x = au.FixLength(16000).reference(np.stack([np.pad(c, (0, max(0, 16000 - len(c))))[:16000] for c in clips]),
                                      "NT")
    return files, x, np.array([f.name.split("_")[0] for f in files])


def audio_pipeline() -> AudioPipeline:
    return AudioPipeline([au.FixLength(16000), au.MelSpectrogram(16000, 512, 160, n_mels=40), au.PowerToDB(ref="max")],
                         sample_rate=16000)


def held_out(files: list[pathlib.Path]) -> np.ndarray:
    """Speakers 6 and 7."""
    return np.array([int(f.stem.split("_")[1]) >= 6 for f in files])


def words_model(path: pathlib.Path | str | None = None):
    """The pipeline, the CNN trained on speakers 0-5, and the composed model (written to path)."""
    import torch

    files, x, y = spoken_words()
    test = held_out(files)
    pipe = audio_pipeline()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.BatchNorm1d(40), torch.nn.Conv1d(40, 16, 5), torch.nn.ReLU(),
                              torch.nn.AdaptiveMaxPool1d(1), torch.nn.Flatten(), torch.nn.Linear(16, 3))
    target = np.array([CLASSES.index(v) for v in y], dtype=np.int64)
    train(net, pipe.reference(x[~test]), target[~test], steps=60)
    proto = build(pipe, net, x, classes=CLASSES, path=path)
    return pipe, net, proto


def main(out: pathlib.Path) -> None:
    from PIL import Image

    out.mkdir(parents=True, exist_ok=True)
    digits_model(out / "digits.onnx")
    images, labels = digit_photos()
    photos = out / "photos"
    photos.mkdir(exist_ok=True)
    for i, size in zip(range(1790, 1797), (24, 32, 40, 32, 48, 28, 32)):  # the graph takes any size
        Image.fromarray(images[i, ..., 0]).resize((size, size), Image.Resampling.BICUBIC).save(
            photos / f"digit_{i}_is_{labels[i]}.png")
    words_model(out / "words.onnx")
    files, _, _ = spoken_words()
    clips = out / "clips"
    clips.mkdir(exist_ok=True)
    for f in np.asarray(files)[held_out(files)]:
        (clips / f.name).write_bytes(f.read_bytes())
    print(f"wrote {out / 'digits.onnx'}, {out / 'words.onnx'}; files to score in {photos} and {clips}")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "out"))

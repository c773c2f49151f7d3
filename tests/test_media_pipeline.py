"""Media pipelines composed with a model into one ONNX file, built, checked and scored (the README's examples).

* images: scikit-learn's bundled handwritten digits (8 x 8, 0..16) upscaled with Pillow to 32 x 32 photos,
  resized back to 16 x 16 in the graph (Pillow bilinear), scaled and normalized, then a small CNN trained
  here with torch on the pipeline's own output;
* audio: "yes" / "no" / "stop" spoken by eight espeak-ng voices (tests/data/speech/words), cut to one second,
  log-mel (librosa), then a small 1-D CNN trained here.

Each model is checked with ``onegraph check`` and scored with ``onegraph score MODEL FOLDER`` in-process;
build's parity check has compared the graph with the libraries (Pillow / librosa, then torch) on the sample.
"""

from __future__ import annotations

import functools
import json
import sys

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from media_helpers import SPEECH
from onegraph.errors import ExportError
from onegraph.media import audio as au
from onegraph.media import image as im
from onegraph.media.pipeline import AudioPipeline, ImagePipeline, build
from onegraph.runtime.session import Session
from onegraph.verify.portable import portability_problems

torch = pytest.importorskip("torch")


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """``onegraph ARGS`` in this process: exit code, stdout, stderr."""
    from onegraph.cli import main

    argv = sys.argv
    sys.argv = ["onegraph", *args]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = argv
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def train(net, x: np.ndarray, y: np.ndarray, steps: int, batch: int = 128):
    torch.manual_seed(0)
    opt = torch.optim.Adam(net.parameters(), 1e-2)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny batches: threads only contend on the shared 2-core machines
    try:
        for _ in range(steps):
            idx = torch.randint(0, len(x), (batch,)) if len(x) > batch else torch.arange(len(x))
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx]).backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    return net.eval()


# -- images -----------------------------------------------------------------------------------------
@functools.cache
def digits() -> tuple[np.ndarray, np.ndarray]:
    """uint8 [1797, 32, 32, 1] photos of scikit-learn's digits (Pillow bicubic upscale) and their labels."""
    from PIL import Image
    from sklearn.datasets import load_digits

    d = load_digits()
    small = np.round(d.images * (255 / 16)).astype(np.uint8)
    big = [np.asarray(Image.fromarray(s).resize((32, 32), Image.Resampling.BICUBIC)) for s in small]
    return np.stack(big)[..., None], d.target


def image_pipeline() -> ImagePipeline:
    return ImagePipeline([im.Resize((16, 16), "bilinear", match="pil"), im.ToFloat(), im.ToCHW(),
                          im.Normalize([0.5], [0.5])], channels=1)


@pytest.fixture(scope="module")
def digits_model(tmp_path_factory):
    """The pipeline, the trained CNN and the composed model's path (trained and built once)."""
    path = tmp_path_factory.mktemp("digits") / "digits.onnx"
    images, labels = digits()
    pipe = image_pipeline()
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(16 * 4 * 4, 10))
    train(net, pipe.reference(images[:1500]), labels[:1500].astype(np.int64), steps=120)
    build(pipe, net, images[1500:1564], classes=list(range(10)), path=path)
    return pipe, net, path


def test_image_pipeline_is_one_checked_file(digits_model, capsys):
    pipe, net, path = digits_model
    images, labels = digits()
    session = Session(path)
    label, proba = session.run_feeds({"image": images[1500:]})
    with torch.no_grad():
        logits = net(torch.from_numpy(pipe.reference(images[1500:])))
    np.testing.assert_array_equal(label, logits.argmax(1).numpy())  # the graph answers as Pillow + torch do
    np.testing.assert_allclose(proba, torch.softmax(logits.double(), 1).numpy(), rtol=1e-5, atol=1e-5)
    assert (label == labels[1500:]).mean() > 0.85  # held-out digits
    from onegraph.io import load_model

    proto = load_model(path)
    assert not portability_problems(proto)
    assert {o.name for o in proto.graph.output} == {"label", "probabilities"}
    code, out, err = cli(capsys, "check", str(path))
    assert code == 0 and "clean" in out, (out, err)
    code, out, _ = cli(capsys, "show", str(path), "--json")
    media = json.loads(out)["metadata"]["media"]
    assert media["kind"] == "image" and media["channels"] == 1 and media["steps"][0]["match"] == "pil"


def test_score_a_folder_of_images(digits_model, tmp_path, capsys):
    from PIL import Image

    path = digits_model[2]
    images, labels = digits()
    folder = tmp_path / "photos"
    folder.mkdir()
    for i, size in zip(range(1790, 1797), (24, 32, 40, 32, 48, 28, 32)):  # the graph takes any size
        rgb = Image.fromarray(images[i, ..., 0]).resize((size, size), Image.Resampling.BICUBIC).convert("RGB")
        rgb.convert("L").save(folder / f"digit_{i}.png")
    code, out, err = cli(capsys, "score", str(path), str(folder), "-o", str(tmp_path / "scores.csv"))
    assert code == 0, err
    assert "7 files" in out
    scores = pd.read_csv(tmp_path / "scores.csv")
    assert list(scores.columns[:3]) == ["file", "label", "probabilities_0"]
    assert scores["file"].tolist() == sorted(f"digit_{i}.png" for i in range(1790, 1797))
    session = Session(path)
    direct = session.run_feeds({"image": np.asarray(Image.open(folder / "digit_1791.png"))[None, ..., None]})[0]
    assert scores.loc[scores.file == "digit_1791.png", "label"].item() == direct[0]
    (folder / "notes.txt").write_text("not an image")
    code, out, err = cli(capsys, "score", str(path), str(folder), "-o", str(tmp_path / "bad.csv"))
    assert code == 1 and len(err.strip().splitlines()) == 1 and "notes.txt: not an image" in err


# -- audio ------------------------------------------------------------------------------------------
def words() -> tuple[list, np.ndarray, np.ndarray]:
    files = sorted((SPEECH / "words").glob("*.wav"))
    clips = [sf.read(f, dtype="float32")[0] for f in files]
    x = au.FixLength(16000).reference(np.stack([np.pad(c, (0, 16000 - len(c))) if len(c) < 16000 else c[:16000]
                                                for c in clips]), "NT")
    return files, x, np.array([f.name.split("_")[0] for f in files])


def test_audio_pipeline_built_checked_scored(tmp_path, capsys):
    files, x, y = words()
    classes = ["no", "stop", "yes"]
    pipe = AudioPipeline([au.FixLength(16000), au.MelSpectrogram(16000, 512, 160, n_mels=40),
                          au.PowerToDB(ref="max")], sample_rate=16000)
    held_out = np.array([int(f.stem.split("_")[1]) >= 6 for f in files])  # speakers 6 and 7
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.BatchNorm1d(40), torch.nn.Conv1d(40, 16, 5), torch.nn.ReLU(),
                              torch.nn.AdaptiveMaxPool1d(1), torch.nn.Flatten(), torch.nn.Linear(16, 3))
    target = np.array([classes.index(v) for v in y], dtype=np.int64)
    train(net, pipe.reference(x[~held_out]), target[~held_out], steps=60)
    path = tmp_path / "words.onnx"
    build(pipe, net, x, classes=classes, path=path)
    code, out, err = cli(capsys, "check", str(path))
    assert code == 0 and "clean" in out, (out, err)
    folder = tmp_path / "clips"
    folder.mkdir()
    for f in np.asarray(files)[held_out]:
        (folder / f.name).write_bytes(f.read_bytes())  # raw files, of different lengths
    code, out, err = cli(capsys, "score", str(path), str(folder), "-o", str(tmp_path / "words.csv"))
    assert code == 0, err
    scores = pd.read_csv(tmp_path / "words.csv")
    assert scores["file"].tolist() == sorted(f.name for f in np.asarray(files)[held_out])
    with torch.no_grad():
        expected = np.asarray(classes)[net(torch.from_numpy(pipe.reference(x[held_out]))).argmax(1).numpy()]
    assert scores["label"].tolist() == expected.tolist()
    sf.write(folder / "fast.wav", x[0], 22050)
    code, _, err = cli(capsys, "score", str(path), str(folder), "-o", str(tmp_path / "bad.csv"))
    assert code == 1 and "fast.wav: sampled at 22050 Hz; the model takes 16000 Hz" in err


def test_features_only_and_onnx_model(tmp_path):
    """A pipeline alone outputs its features; an ONNX file taking them composes like a torch module."""
    images, _ = digits()
    pipe = image_pipeline()
    features = build(pipe, None, images[:8])
    (got,) = Session(features, trusted=True).run_feeds({"image": images[:8]})
    np.testing.assert_allclose(got, pipe.reference(images[:8]), rtol=0, atol=1e-6)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(256, 3)).eval()
    onnx_file = tmp_path / "head.onnx"
    program = torch.onnx.export(net, (torch.zeros(2, 1, 16, 16),), input_names=["x"], output_names=["y"],
                                dynamic_shapes=({0: torch.export.Dim("batch")},), dynamo=True, opset_version=21)
    onnx_file.write_bytes(program.model_proto.SerializeToString())
    composed = build(pipe, str(onnx_file), images[:8], classes=["a", "b", "c"])
    label, proba = Session(composed, trusted=True).run_feeds({"image": images[:8]})
    with torch.no_grad():
        logits = net(torch.from_numpy(pipe.reference(images[:8])))
    np.testing.assert_array_equal(label, np.asarray(["a", "b", "c"])[logits.argmax(1).numpy()])


def test_bad_model_and_table_model(tmp_path, capsys):
    images, _ = digits()
    with pytest.raises(ExportError, match="needs sample="):
        build(image_pipeline(), torch.nn.Flatten(), None, classes=[0, 1])
    with pytest.raises(ExportError, match="cannot follow a media pipeline"):
        build(image_pipeline(), object(), images[:2])
    # a table model given a folder: one line naming what to do
    table_model = SPEECH.parent / "penguins-mlp.onnx"
    code, _, err = cli(capsys, "score", str(table_model), str(tmp_path), "-o", str(tmp_path / "x.csv"))
    assert code == 1 and "takes table columns, not a folder" in err and len(err.strip().splitlines()) == 1

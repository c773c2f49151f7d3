"""Media pipelines composed with a model into one ONNX file, built, checked and scored.

The two pipelines of examples/media/pipelines.py (imported from there, so the README's example is the one
tested): scikit-learn's digits as 32 x 32 photos, resized (Pillow bilinear), scaled, normalized, then a
small CNN trained with torch on the pipeline's output; "yes" / "no" / "stop" spoken by eight espeak-ng
voices (tests/data/speech/words), one second, log-mel (librosa), then a small 1-D CNN.

Each model is checked with ``onegraph check`` and scored with ``onegraph score MODEL FOLDER`` in-process;
build's parity check has already compared the graph with the libraries (Pillow / librosa, then torch) on its
sample.
"""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from media_helpers import SPEECH, examples
from onegraph.errors import ExportError
from onegraph.media.pipeline import build
from onegraph.runtime.session import Session
from onegraph.verify.portable import portability_problems

torch = pytest.importorskip("torch")
pipelines = examples("media", "pipelines")


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


@pytest.fixture(scope="module")
def digits_model(tmp_path_factory):
    """The pipeline, the trained CNN and the composed model's path (trained and built once)."""
    path = tmp_path_factory.mktemp("digits") / "digits.onnx"
    pipe, net, _ = pipelines.digits_model(path)
    return pipe, net, path


def test_image_pipeline_is_one_checked_file(digits_model, capsys):
    pipe, net, path = digits_model
    images, labels = pipelines.digit_photos()
    label, proba = Session(path).run_feeds({"image": images[1500:]})
    with torch.no_grad():
        logits = net(torch.from_numpy(pipe.reference(images[1500:])))
    np.testing.assert_array_equal(label, logits.argmax(1).numpy())  # the graph answers as Pillow + torch do
    np.testing.assert_allclose(proba, torch.softmax(logits.double(), 1).numpy(), rtol=1e-5, atol=1e-5)
    assert (label == labels[1500:]).mean() > 0.85  # held-out digits
    from onegraph.check.loader import load_model

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
    images, _ = pipelines.digit_photos()
    folder = tmp_path / "photos"
    folder.mkdir()
    for i, size in zip(range(1790, 1797), (24, 32, 40, 32, 48, 28, 32)):  # the graph takes any size
        rgb = Image.fromarray(images[i, ..., 0]).resize((size, size), Image.Resampling.BICUBIC).convert("RGB")
        rgb.save(folder / f"digit_{i}.png")  # RGB files: decoded to the model's one channel (Pillow's "L")
    code, out, err = cli(capsys, "score", str(path), str(folder), "-o", str(tmp_path / "scores.csv"))
    assert code == 0, err
    assert "7 files" in out
    scores = pd.read_csv(tmp_path / "scores.csv")
    assert list(scores.columns[:3]) == ["file", "label", "probabilities_0"]
    assert scores["file"].tolist() == sorted(f"digit_{i}.png" for i in range(1790, 1797))
    gray = np.asarray(Image.open(folder / "digit_1791.png").convert("L"))[None, ..., None]
    direct = Session(path).run_feeds({"image": gray})[0]
    assert scores.loc[scores.file == "digit_1791.png", "label"].item() == direct[0]
    (folder / "notes.txt").write_text("not an image")
    code, out, err = cli(capsys, "score", str(path), str(folder), "-o", str(tmp_path / "bad.csv"))
    assert code == 1 and len(err.strip().splitlines()) == 1 and "notes.txt: not an image" in err


def test_audio_pipeline_built_checked_scored(tmp_path, capsys):
    path = tmp_path / "words.onnx"
    pipe, net, _ = pipelines.words_model(path)
    files, x, _ = pipelines.spoken_words()
    held_out = pipelines.held_out(files)
    code, out, err = cli(capsys, "check", str(path))
    assert code == 0 and "clean" in out, (out, err)
    folder = tmp_path / "clips"
    folder.mkdir()
    for f in np.asarray(files)[held_out]:
        (folder / f.name).write_bytes(f.read_bytes())  # the raw files, of different lengths
    code, out, err = cli(capsys, "score", str(path), str(folder), "-o", str(tmp_path / "words.csv"))
    assert code == 0, err
    scores = pd.read_csv(tmp_path / "words.csv")
    assert scores["file"].tolist() == sorted(f.name for f in np.asarray(files)[held_out])
    with torch.no_grad():
        logits = net(torch.from_numpy(pipe.reference(x[held_out])))
    assert scores["label"].tolist() == np.asarray(pipelines.CLASSES)[logits.argmax(1).numpy()].tolist()
    sf.write(folder / "fast.wav", x[0], 22050)
    code, _, err = cli(capsys, "score", str(path), str(folder), "-o", str(tmp_path / "bad.csv"))
    assert code == 1 and "fast.wav: sampled at 22050 Hz; the model takes 16000 Hz" in err


def test_features_only_and_onnx_model(tmp_path):
    """A pipeline alone outputs its features; an ONNX file taking them composes like a torch module."""
    images, _ = pipelines.digit_photos()
    pipe = pipelines.image_pipeline()
    features = build(pipe, None, images[:8])
    (got,) = Session(features, trusted=True).run_feeds({"image": images[:8]})
    np.testing.assert_allclose(got, pipe.reference(images[:8]), rtol=0, atol=1e-6)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(256, 3)).eval()
    onnx_file = tmp_path / "head.onnx"
    program = torch.onnx.export(net, (torch.zeros(2, 1, 16, 16),), input_names=["x"], output_names=["y"],
                                dynamic_shapes=({0: torch.export.Dim("batch")},), dynamo=True, opset_version=21)
    onnx_file.write_bytes(program.model_proto.SerializeToString())
    composed = build(pipe, str(onnx_file), images[:8], classes=["a", "b", "c"])
    label, _ = Session(composed, trusted=True).run_feeds({"image": images[:8]})
    with torch.no_grad():
        logits = net(torch.from_numpy(pipe.reference(images[:8])))
    np.testing.assert_array_equal(label, np.asarray(["a", "b", "c"])[logits.argmax(1).numpy()])


def test_bad_model_and_table_model(tmp_path, capsys):
    images, _ = pipelines.digit_photos()
    with pytest.raises(ExportError, match="needs sample="):
        build(pipelines.image_pipeline(), torch.nn.Flatten(), None, classes=[0, 1])
    with pytest.raises(ExportError, match="cannot follow a media pipeline"):
        build(pipelines.image_pipeline(), object(), images[:2])
    # a table model given a folder: one line saying what to do
    table_model = SPEECH.parent / "penguins-mlp.onnx"
    code, _, err = cli(capsys, "score", str(table_model), str(tmp_path), "-o", str(tmp_path / "x.csv"))
    assert code == 1 and "takes table columns, not a folder" in err and len(err.strip().splitlines()) == 1


def test_16_bit_images_subfolders_and_one_file(digits_model, tmp_path, capsys):
    """A 16-bit grayscale PNG went through Pillow's convert("L"), which clips at 255: 99.8% of a photo's pixels
    reached the model white, scored with exit 0. It is read as 8-bit round(v / 257). Files in subfolders were
    skipped silently and a single file was refused as "not a folder"; a float image is refused naming it."""
    from PIL import Image

    path = digits_model[2]
    images, _ = pipelines.digit_photos()
    folder = tmp_path / "photos"
    (folder / "inner").mkdir(parents=True)
    eight = images[1791, ..., 0]
    sixteen = eight.astype(np.uint16) * 257 + np.arange(eight.size).reshape(eight.shape).astype(np.uint16) % 100
    Image.fromarray(sixteen).save(folder / "deep.png")  # Pillow writes uint16 as a 16-bit grayscale PNG
    assert Image.open(folder / "deep.png").mode == "I;16"
    Image.fromarray(images[1792, ..., 0]).save(folder / "inner" / "nine.png")
    code, _, err = cli(capsys, "score", str(path), str(folder), "-o", str(tmp_path / "s.csv"))
    assert code == 0, err
    scores = pd.read_csv(tmp_path / "s.csv")
    assert scores["file"].tolist() == ["deep.png", "inner/nine.png"]
    expected = np.rint(sixteen / 257.0).astype(np.uint8)  # numpy's rounding of the exact quotient, no tie possible
    direct = Session(path).run_feeds({"image": np.stack([expected, images[1792, ..., 0]])[..., None]})[1]
    np.testing.assert_allclose(scores.filter(like="probabilities_").to_numpy(), direct, rtol=1e-15)
    code, _, err = cli(capsys, "score", str(path), str(folder / "inner" / "nine.png"), "-o", str(tmp_path / "1.csv"))
    assert code == 0, err
    assert pd.read_csv(tmp_path / "1.csv")["file"].tolist() == ["nine.png"]
    Image.fromarray(images[1793, ..., 0].astype(np.float32)).save(folder / "float.tiff")
    code, _, err = cli(capsys, "score", str(path), str(folder), "-o", str(tmp_path / "bad.csv"))
    assert code == 1 and len(err.strip().splitlines()) == 1 and "float.tiff: a floating-point image" in err, err
    assert not (tmp_path / "bad.csv").exists()


@pytest.mark.parametrize("samples,said", [(np.zeros(0, np.float32), "holds no samples"),
                                          (np.r_[np.zeros(100), np.nan, np.zeros(99)], "sample 100 is nan"),
                                          (np.r_[np.zeros(5), -np.inf], "sample 5 is -inf")])
def test_audio_without_samples_or_with_non_finite_ones_is_refused(tmp_path, samples, said):
    """An empty WAV (or a header cut off before its data) was scored "yes" at 0.9999 with exit 0; a NaN sample
    wrote the internal missing marker U+FFFF as the label. Both are refused naming the file."""
    from onegraph.errors import DataError
    from onegraph.media.score import read_audio

    sf.write(tmp_path / "clip.wav", np.asarray(samples, dtype=np.float32), 16000, subtype="FLOAT")
    with pytest.raises(DataError, match=f"clip.wav: {said}"):
        read_audio(tmp_path / "clip.wav", 16000)
    header_only = (tmp_path / "clip.wav").read_bytes()[:44]  # the RIFF header alone: a download cut short
    (tmp_path / "cut.wav").write_bytes(header_only)
    with pytest.raises(DataError, match="cut.wav"):
        read_audio(tmp_path / "cut.wav", 16000)


def test_files_the_model_cannot_take_together_are_named_in_one_line(tmp_path, capsys):
    """The user's reports: files whose features differ in size (no FixLength / Resize step) ended in an internal
    error (numpy's "all input arrays must have the same shape", exit 70, no file named); a clip shorter than a
    reflect pad printed onnxruntime's log line beside its error and named no file; a decompression-bomb PNG was
    an internal error too. Each is one line naming the file, exit 1, nothing written."""
    import onegraph.media as m

    speech, _ = sf.read(SPEECH / "sentence_16k.wav", dtype="float32")
    (tmp_path / "aud").mkdir()
    sf.write(tmp_path / "aud" / "a.wav", speech[:8000], 16000)
    sf.write(tmp_path / "aud" / "b.wav", speech[:16000], 16000)
    spec = tmp_path / "spec.onnx"
    m.build(m.AudioPipeline([m.Spectrogram(512, 160)], sample_rate=16000), None, speech[None, :16000], path=spec)
    padded = tmp_path / "pad.onnx"
    m.build(m.AudioPipeline([m.Spectrogram(1024, 256, match="torch")], sample_rate=16000), None, speech[None, :16000],
            path=padded)
    (tmp_path / "short").mkdir()
    sf.write(tmp_path / "short" / "tiny.wav", speech[:300], 16000)
    (tmp_path / "bomb").mkdir()
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    # a 100-byte PNG whose header says 60000 x 60000 pixels (3.6e9, Pillow's decompression-bomb limit is 1.8e8)
    (tmp_path / "bomb" / "big.png").write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(
        ">IIBBBBB", 60000, 60000, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(b"\0" * 4)) + chunk(b"IEND", b""))
    digits = tmp_path / "img.onnx"
    m.build(m.ImagePipeline([m.ToFloat()], channels=1), None, np.zeros((1, 10, 10, 1), np.uint8), path=digits)
    for model, folder, said in [
        (spec, "aud", "a.wav and b.wav: the model's 'features' has shape [257, 51] for one and [257, 101]"),
        (padded, "short", "tiny.wav (300): onnxruntime failed"),
        (digits, "bomb", "big.png: Image size (3600000000 pixels) exceeds limit"),
    ]:
        code, _, err = cli(capsys, "score", str(model), str(tmp_path / folder), "-o", str(tmp_path / "out.csv"))
        assert code == 1 and len(err.strip().splitlines()) == 1 and said in err, err
        assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("make, said", [
    (lambda m: m.Normalize([float("nan")] * 3, [0.5] * 3), "Normalize: mean=[nan, nan, nan] is not finite"),
    (lambda m: m.Normalize("abc", "def"), "Normalize: mean='abc' is not finite"),
    (lambda m: m.ToFloat(scale=0), "ToFloat: scale=0 is not positive and finite"),
    (lambda m: m.ToUInt8(scale=float("nan")), "ToUInt8: scale=nan is not positive and finite"),
    (lambda m: m.PowerToDB(amin=float("nan")), "PowerToDB: amin=nan must be > 0"),
    (lambda m: m.PowerToDB(top_db=float("nan")), "top_db=nan >= 0"),
    (lambda m: m.Pad((1, 1, 1, 1), fill=float("nan")), "Pad: fill=nan is not finite"),
    (lambda m: m.Resize((True, True)), "size=(True, True) is not 2 positive integers"),
    (lambda m: m.Resize((10**6, 10**6)), "1,000,000,000,000 pixels per image"),
    (lambda m: m.Spectrogram(1), "n_fft=1 gives the default hop_length n_fft // 4 = 0"),
])
def test_step_parameters_no_image_can_take_are_refused_naming_them(make, said):
    """The user's reports: NaN means / scales built graphs of NaN that parity called diverging ("report
    this"), a huge Resize exhausted memory, a string mean raised numpy's ValueError, bools passed as sizes."""
    import onegraph.media as m
    from onegraph.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(said)):
        make(m)


@pytest.mark.parametrize("fill, padding, mode, said", [
    (300, (1, 1, 1, 1), "constant", "Pad: fill=300.0 is not a uint8 pixel value"),
    (-1, (1, 1, 1, 1), "constant", "Pad: fill=-1.0 is not a uint8 pixel value"),
    (0, (36, 60, 36, 60), "reflect", "padding (60, 60) along the height must be less than the image's 37 pixels"),
])
def test_pads_uint8_images_cannot_take_are_refused_at_build(fill, padding, mode, said):
    """fill=300 on uint8 raised numpy's OverflowError from build; a reflect pad longer than the image torch's
    RuntimeError (and onnxruntime's at run time with check_parity=False)."""
    import onegraph.media as m
    from onegraph.errors import ConfigError

    x = np.zeros((1, 37, 61, 3), np.uint8)
    with pytest.raises(ConfigError, match=re.escape(said)):
        build(m.ImagePipeline([m.Pad(padding, fill=fill, mode=mode)]), None, x)


def test_onegraph_score_takes_a_media_models_batch_array(digits_model):
    """The user's report: onegraph.score(media model, images) said an array has no column names and advised a
    DataFrame of columns 'a', 'b'; {"image": images} reached onnxruntime with no feed ("Missing Input: image").
    Both score the batch, as the folder path does; a table or a wrong dtype is refused naming the input."""
    import onegraph
    from onegraph.errors import DataError

    path = digits_model[2]
    images, _ = pipelines.digit_photos()
    batch = images[1790:1797]
    label, proba = Session(path).run_feeds({"image": batch})
    for data in (batch, {"image": batch}):
        scores = onegraph.score(path, data)
        assert scores["label"].tolist() == label.tolist()
        np.testing.assert_array_equal(scores.filter(like="probabilities_").to_numpy(), proba)
    with pytest.raises(DataError, match=r"a media model takes a uint8 array NHWC .*input 'image'.*not a DataFrame"):
        onegraph.score(path, pd.DataFrame({"a": [1]}))
    with pytest.raises(DataError, match=r"the array is float32 of shape"):
        onegraph.score(path, batch.astype(np.float32))


@pytest.mark.parametrize("subtype", ["PCM_16", "FLOAT"])
def test_a_wav_cut_short_is_refused_naming_it(tmp_path, subtype):
    """A WAV cut to a third of its bytes (its header still declaring every sample) was read as a shorter clip
    and padded by FixLength, scored without a word; a cut PNG / JPEG was refused. So is the WAV now."""
    from onegraph.errors import DataError
    from onegraph.media.score import read_audio

    speech, _ = sf.read(SPEECH / "sentence_16k.wav", dtype="float32")
    sf.write(tmp_path / "full.wav", speech[:16000], 16000, subtype=subtype)
    whole = (tmp_path / "full.wav").read_bytes()
    np.testing.assert_array_equal(read_audio(tmp_path / "full.wav", 16000), sf.read(tmp_path / "full.wav",
                                                                                     dtype="float32")[0])
    (tmp_path / "cut.wav").write_bytes(whole[: len(whole) // 3])
    with pytest.raises(DataError, match=r"cut.wav: cut short: its header declares [\d,]+ bytes of samples"):
        read_audio(tmp_path / "cut.wav", 16000)
    for wav in sorted(SPEECH.rglob("*.wav")):  # the real clips are whole
        assert len(read_audio(wav, sf.info(wav).samplerate)) == sf.info(wav).frames


def test_build_misuse_is_refused_naming_what(tmp_path):
    """The user's reports: classes=[0, 1, 2] for a module of 10 logits ended in an ONNX checker error ("report this
    pipeline to onegraph"), an empty sample in numpy's ValueError, a 0 x 5 image in onnxruntime's Gather error,
    rtol=-1 in a parity table of zero differences that "diverge"."""
    import onegraph.media as m
    from onegraph.errors import ConfigError, DataError

    torch.manual_seed(0)
    pipe = m.ImagePipeline([m.Resize((8, 8)), m.ToFloat(), m.ToCHW()], channels=1)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    x = np.random.default_rng(0).integers(0, 256, (4, 12, 12, 1), dtype=np.uint8)
    with pytest.raises(ExportError, match=r"Sequential gives 10 logits per row but 3 classes were given"):
        build(pipe, net, x, classes=[0, 1, 2])
    with pytest.raises(DataError, match=r"the sample has shape \[0, 12, 12, 1\]: no images"):
        build(pipe, None, x[:0])
    with pytest.raises(DataError, match=r"\[1, 0, 5, 1\]: an axis of length 0"):
        build(pipe, None, np.zeros((1, 0, 5, 1), np.uint8))
    for option in ({"rtol": -1}, {"atol": float("nan")}):
        with pytest.raises(ConfigError, match="is not a tolerance"):
            build(pipe, None, x, **option)


def test_a_16_bit_pgm_reads_as_the_same_pixels_as_a_16_bit_png(tmp_path):
    """A P5 PGM of maxval 65535 (or 4095) opens in Pillow as mode I (scaled to 0..65535): it was refused as a
    32-bit image of unknown range, though .pgm is a listed format and the same pixels as a 16-bit PNG score."""
    from PIL import Image

    from onegraph.media.score import read_image

    g16 = (np.arange(60 * 80, dtype=np.uint32).reshape(60, 80) * 13 % 65536).astype(np.uint16)
    (tmp_path / "p16.pgm").write_bytes(b"P5\n80 60\n65535\n" + g16.astype(">u2").tobytes())
    Image.fromarray(g16).save(tmp_path / "same.png")
    np.testing.assert_array_equal(read_image(tmp_path / "p16.pgm", 1), read_image(tmp_path / "same.png", 1))
    g12 = (g16 % 4096).astype(np.uint16)
    (tmp_path / "p12.pgm").write_bytes(b"P5\n80 60\n4095\n" + g12.astype(">u2").tobytes())
    # the documented rule, round(v / 257), on what Pillow decodes (it widens the 12 bits to 16 itself)
    expected = np.rint(np.asarray(Image.open(tmp_path / "p12.pgm"), dtype=np.float64) / 257.0).astype(np.uint8)
    assert Image.open(tmp_path / "p12.pgm").mode == "I" and expected.max() > 200
    np.testing.assert_array_equal(read_image(tmp_path / "p12.pgm", 1)[..., 0], expected)


def test_score_options_that_do_not_apply_to_media_are_refused(tmp_path, capsys):
    """--keep of a media model was ignored without a word, --spark on a folder of images advised converting it to
    Parquet, scores written into the scored folder were read as an image by the next run, and the success line
    listed every one of 257 feature columns."""
    import onegraph.media as m
    from PIL import Image

    model = tmp_path / "img.onnx"
    m.build(m.ImagePipeline([m.Resize((16, 16)), m.ToFloat()], channels=1), None, np.zeros((1, 8, 8, 1), np.uint8),
            path=model)
    folder = tmp_path / "imgs"
    folder.mkdir()
    for i in range(3):
        Image.fromarray(np.full((8, 8), 40 * i, np.uint8)).save(folder / f"{i}.png")
    out = folder / "scores.csv"
    code, _, err = cli(capsys, "score", str(model), str(folder), "-o", str(out), "--keep", "foo")
    assert code == 1 and "--keep 'foo': a media model scores files" in err and not out.exists()
    code, _, err = cli(capsys, "score", str(model), str(folder), "-o", str(tmp_path / "s.parquet"), "--spark",
                       "local[1]")
    assert code == 1 and "--spark scores tables" in err and "Parquet" not in err.split(".")[-1]
    for _ in range(2):  # the second run does not read the first run's scores as an image
        code, stdout, err = cli(capsys, "score", str(model), str(folder), "-o", str(out))
        assert code == 0, err
        assert "columns file, features_0, features_1, features_2, ..., features_255 (257 columns)" in stdout
    assert pd.read_csv(out)["file"].tolist() == ["0.png", "1.png", "2.png"]


@pytest.mark.parametrize("name, said", [(5, "input=5 is not a usable graph input name"),
                                        ("features", "input='features' is the name of one of the graph's outputs")])
def test_an_input_name_the_graph_cannot_have_is_refused(name, said):
    """input=5 raised a TypeError; input="features" built a graph whose input and output shared a name and was
    refused as a model file, with advice to edit its metadata."""
    import onegraph.media as m
    from onegraph.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(said)):
        m.ImagePipeline([m.ToFloat()], input=name)


def test_images_are_scored_a_batch_their_size_bounds_at_a_time(digits_model, tmp_path, capsys, monkeypatch):
    """A media graph computes on values of its input's size, which only the call knows (images of any size):
    Session and `onegraph score MODEL FOLDER` run batches whose input, counted in double, stays near
    BATCH_BYTES (300 photos of 512 x 512 had gone in one call of 2.2 GB), as its widest value of a static shape
    (row_width: the CNN's feature maps) does. Here the budget is cut so that the digits go 40 at a time; the
    answers are those of one call."""
    from PIL import Image

    from onegraph.runtime import session as session_module

    path = digits_model[2]
    images, _ = pipelines.digit_photos()
    batch = images[1700:1797]
    label, proba = Session(path).run_feeds({"image": batch})
    import onnx

    width = int({p.key: p.value for p in onnx.load(path).metadata_props}["org.onegraph.row_width"])
    assert width > 8 * 8  # the feature maps after the steps, inside the composed functions
    monkeypatch.setattr(session_module, "BATCH_BYTES", 40 * 8 * width)
    session = Session(path)
    assert session.batch_size == 40 and session.rows_per_batch(8 * 8) == 40
    assert Session(path).rows_per_batch(100 * width) == 1 < 40  # a large image bounds it further
    seen = []
    run = session.run_feeds
    session.run_feeds = lambda feeds, names=None: (seen.append(len(feeds["image"])), run(feeds, names))[1]
    call = session._call
    session._call = lambda feeds, first_row=0: (seen.append(len(feeds["image"])), call(feeds, first_row))[1]
    scores = session.score(batch)
    assert seen == [40, 40, 17]
    assert scores["label"].tolist() == label.tolist()
    np.testing.assert_array_equal(scores.filter(like="probabilities_").to_numpy(), proba)
    folder = tmp_path / "digits"
    folder.mkdir()
    for i in range(1700, 1797):
        Image.fromarray(images[i, ..., 0]).save(folder / f"d{i}.png")
    seen.clear()
    from onegraph.media.score import score_folder

    table = score_folder(path, folder, session=session)
    assert sorted(seen) == [17, 40, 40]
    assert table.sort_values("file")["label"].tolist() == label.tolist()

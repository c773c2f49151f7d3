"""Scoring a folder of images or WAV files with a media model (``onegraph score MODEL FOLDER``).

Files are decoded in Python (images with Pillow: ``Image.open(...).convert("RGB" / "L")``, the mode the model's
channels say: alpha dropped, not composited; an animated image's first frame; 16-bit grayscale as 8-bit
``round(v / 257)``; EXIF orientation ignored as Pillow and torchvision's ``decode_image`` ignore it by default;
audio with soundfile: float32, several channels averaged as ``librosa.to_mono`` does), grouped by size (a graph
batch holds images of one size) and fed to onnxruntime. DATA is a folder (its subfolders too: files are named by
their path under it) or one file. The table has one row per file, in file-name order: ``file``, then the
model's outputs as
:func:`onegraph.score` names them (``label``, ``probabilities_<class>``, ``prediction``; features flattened to
``features_<i>``).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from onegraph.errors import ConfigError, DataError, RuntimeFailure

__all__ = ["IMAGE_SUFFIXES", "AUDIO_SUFFIXES", "media_input", "read_image", "read_audio", "read_folder",
           "score_folder"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm")
AUDIO_SUFFIXES = (".wav", ".flac", ".ogg")


def media_input(model: Any, *, trusted: bool = False) -> dict | None:
    """The model's ``org.onegraph.media`` entry (see :class:`onegraph.contract.metadata.MediaSchema`), or None."""
    from onegraph.check.loader import load_model
    from onegraph.contract import metadata as meta

    proto = load_model(model, trusted=trusted)
    fields, _ = meta.decode({p.key: p.value for p in proto.metadata_props})
    return fields.get("media")


def _files(folder: Path, suffixes: tuple[str, ...]) -> list[tuple[str, Path]]:
    """``(name, path)`` of each file to score: ``folder`` itself when it is one file, else every file under it,
    subfolders included (one folder per class is a common layout), by relative path; hidden ones left out."""
    if folder.is_file():
        return [(folder.name, folder)]
    if not folder.is_dir():
        raise DataError(f"{folder} is not a folder or a file", hint="give a folder of images / audio files (or one "
                        "file) for a media model")
    under = ((p.relative_to(folder), p) for p in folder.rglob("*") if p.is_file())
    files = sorted((name.as_posix(), p) for name, p in under if not any(part.startswith(".") for part in name.parts))
    if not files:
        raise DataError(f"{folder} holds no files", hint=f"put {'/'.join(suffixes)} files in it")
    return files


def read_image(path: Path, channels: int) -> np.ndarray:
    """uint8 ``[H, W, channels]``. Raises :class:`DataError` naming the file when Pillow cannot decode it, or
    for a 32-bit integer / float image (no known 8-bit range)."""
    from PIL import Image, UnidentifiedImageError

    if channels not in (1, 3):
        raise ConfigError(f"the model takes {channels}-channel images; files decode to 1 (L) or 3 (RGB) channels")
    import warnings

    try:
        with warnings.catch_warnings():  # an image of 89-179 million pixels: decoded, Pillow's warning unsaid
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as img:
                arr = np.asarray(_eight_bit(path, img).convert("RGB" if channels == 3 else "L"))
    except Image.DecompressionBombError as exc:  # a header claiming billions of pixels: never decoded
        raise DataError(f"{path}: {str(exc).splitlines()[0][:160].rstrip('.')}",
                        hint="remove it from the folder; an image that large is no model input") from None
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise DataError(f"{path}: not an image Pillow can read ({str(exc).splitlines()[0][:120]})",
                        hint="remove it from the folder, or convert it to PNG / JPEG") from None
    return arr if arr.ndim == 3 else arr[..., None]


def _eight_bit(path: Path, img: Any) -> Any:
    """A 16-bit grayscale image as 8-bit, ``round(v / 257)`` (65535 -> 255, what ImageMagick's ``-depth 8``
    does); Pillow's ``convert("L")`` clips it at 255 instead, so nearly every pixel would read as white.
    32-bit integer and float images (modes I, F) have no range to map: refused, naming the file."""
    from PIL import Image

    # a PGM / PPM of more than 8 bits opens as mode I, widened by Pillow to 16 bits whatever its maxval
    if img.mode.startswith("I;16") or (img.mode == "I" and img.format == "PPM"):
        return Image.fromarray(np.rint(np.asarray(img, dtype=np.float64) / 257.0).astype(np.uint8), mode="L")
    if img.mode in ("I", "F"):
        raise DataError(f"{path}: a {'32-bit integer' if img.mode == 'I' else 'floating-point'} image (Pillow mode "
                        f"{img.mode}); the model takes 8-bit pixels and its range is not known",
                        hint="scale it to 0..255 and save it as an 8-bit PNG")
    return img


def read_audio(path: Path, sample_rate: int) -> np.ndarray:
    """float32 ``[T]`` at ``sample_rate``. Raises :class:`DataError` naming the file when soundfile cannot
    decode it, it holds no samples, a sample is NaN or infinite, or its sample rate differs."""
    import soundfile as sf

    try:
        y, sr = sf.read(path, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        raise DataError(f"{path}: not an audio file soundfile can read ({str(exc).splitlines()[0][:120]})",
                        hint="remove it from the folder, or convert it to WAV") from None
    if len(y) == 0:
        raise DataError(f"{path}: holds no samples (an empty or cut-off file)", hint="remove it from the folder")
    cut = _wav_cut_short(path)
    if cut is not None:  # libsndfile reads what is there: a shorter clip, padded by FixLength without a word
        raise DataError(f"{path}: cut short: its header declares {cut[0]:,} bytes of samples, the file holds "
                        f"{cut[1]:,}", hint="download or copy it again, or remove it from the folder")
    finite = np.isfinite(y)
    if not finite.all():
        sample = int(np.flatnonzero(~finite.all(axis=1))[0])
        raise DataError(f"{path}: sample {sample} is {y[sample][~finite[sample]][0]} (the model takes finite "
                        "samples)", hint="repair the file or remove it from the folder")
    if sr != sample_rate:
        raise DataError(f"{path}: sampled at {sr} Hz; the model takes {sample_rate} Hz",
                        hint=f"resample it to {sample_rate} Hz first")
    return y.mean(axis=1, dtype=np.float32) if y.shape[1] > 1 else y[:, 0]


def _wav_cut_short(path: Path) -> tuple[int, int] | None:
    """``(declared, present)`` bytes of a RIFF WAV's ``data`` chunk when the file ends before it does, else None
    (not a WAV, a streamed size of 0 or 0xFFFFFFFF, a complete file). Read from the chunk headers (RIFF: id,
    little-endian 32-bit size), PCM and float alike."""
    import struct

    try:
        with open(path, "rb") as f:
            riff, _, wave = f.read(4), f.read(4), f.read(4)  # "RIFF", the file's size, "WAVE"
            if riff != b"RIFF" or wave != b"WAVE":
                return None
            size = os.fstat(f.fileno()).st_size
            while True:
                header = f.read(8)
                if len(header) < 8:
                    return None
                kind, length = header[:4], struct.unpack("<I", header[4:])[0]
                if kind == b"data":
                    present = size - f.tell()
                    return (length, present) if 0 < length < 0xFFFFFFFF and present < length else None
                f.seek(length + (length & 1), os.SEEK_CUR)  # chunks are padded to even sizes
    except OSError:
        return None


def _without(files: list[tuple[str, Path]], skip: str | os.PathLike | None) -> list[tuple[str, Path]]:
    """``files`` but ``skip`` (the scores being written into the folder: a second run read them as an image)."""
    if skip is None or not Path(skip).exists():
        return files
    return [(name, p) for name, p in files if not os.path.samefile(p, skip)]


def read_folder(folder: str | os.PathLike, media: dict, *, skip: str | os.PathLike | None = None
                ) -> tuple[list[str], list[np.ndarray]]:
    """File names (paths under ``folder``) and decoded arrays of every file in ``folder`` (name order; or of
    ``folder`` itself when it is a file) for the model's ``media`` entry."""
    if media["kind"] == "image":
        if media["dtype"] != "uint8" or media["layout"] != "NHWC":
            raise ConfigError(f"the model takes {media['dtype']} {media['layout']} images; scoring folders needs a "
                              "uint8 NHWC input (files decode to it)", hint="rebuild it with dtype='uint8'")
        files = _without(_files(Path(folder), IMAGE_SUFFIXES), skip)
        return [name for name, _ in files], [read_image(f, media["channels"]) for _, f in files]
    files = _without(_files(Path(folder), AUDIO_SUFFIXES), skip)
    return [name for name, _ in files], [read_audio(f, media["sample_rate"]) for _, f in files]


def _refuse_non_finite(names: list[str], outputs: list[np.ndarray], output_names: list[str]) -> None:
    """A file whose outputs hold NaN or ±inf raises :class:`DataError` naming it: its samples are finite (read
    checks them), so a step computed beyond float32's range (a sample of 1e30 squared in a spectrogram); the
    libraries give the same non-finite features, which would otherwise be written as numbers, exit 0."""
    for out, name in zip(outputs, output_names):
        if out.dtype.kind != "f" or np.isfinite(out).all():
            continue
        row = int(np.flatnonzero(~np.isfinite(out.reshape(len(out), -1)).all(axis=1))[0])
        raise DataError(f"{names[row]}: the model's {name!r} is not finite (NaN or infinite) though its samples "
                        "are: a step computed beyond float32's range (samples far outside -1..1?)",
                        hint="scale the audio to -1..1 (or the images to 0..255) before scoring it")


def _refuse_ragged(names: list[str], results: list[list[np.ndarray]], output_names: list[str]) -> None:
    """:class:`DataError` naming two files whose outputs differ in shape: files of different sizes give features
    of different sizes when no step brings them to one, and one table holds one width."""
    for k, name in enumerate(output_names):
        first = np.shape(results[0][k])  # a label is one str
        other = next((i for i, r in enumerate(results) if np.shape(r[k]) != first), None)
        if other is not None:
            raise DataError(f"{names[0]} and {names[other]}: the model's {name!r} has shape {list(first)} for one "
                            f"and {list(np.shape(results[other][k]))} for the other (the files differ in size and no "
                            "step of the model brings them to one)",
                            hint="add a FixLength (audio) or Resize / CenterCrop (images) step, or score files of one "
                                 "size together")


def score_folder(model: Any, folder: str | os.PathLike, *, trusted: bool = False,
                 session: Any = None, skip: str | os.PathLike | None = None) -> pd.DataFrame:
    """One row per file of ``folder``: ``file`` and the model's outputs (see the module docstring).

    Raises
    ------
    ConfigError
        when the model declares no media input (it takes DataFrame columns: score a table instead).
    DataError
        naming the first file that cannot be decoded or does not fit the model.
    """
    from onegraph.runtime import cached_session

    media = media_input(model, trusted=trusted)
    if media is None:
        raise ConfigError(f"{model} takes table columns, not a folder of images or audio files",
                          hint="score a CSV or Parquet file (or a folder of Parquet part files) with it")
    session = session or cached_session(model, trusted=trusted)
    names, arrays = read_folder(folder, media, skip=skip)  # skip: the output, when written into the folder
    groups: dict[tuple, list[int]] = {}
    for i, arr in enumerate(arrays):
        groups.setdefault(arr.shape, []).append(i)
    results: list[list[np.ndarray] | None] = [None] * len(arrays)
    for shape, members in groups.items():
        step = session.rows_per_batch(math.prod(shape))  # files of one size, a batch at a time
        for start in range(0, len(members), step):
            part = members[start:start + step]
            try:
                outs = session.run_feeds({media["input"]: np.stack([arrays[i] for i in part])})
            except RuntimeFailure as exc:  # a step the file is too small for (a reflect pad longer than the clip)
                others = f" and {len(members) - 1} more file(s) of its size" if len(members) > 1 else ""
                raise DataError(f"{names[members[0]]}{others} ({'x'.join(map(str, shape))}): {exc}",
                                hint="remove the file, or add a step that brings every file to one size first "
                                     "(FixLength for audio, Resize / CenterCrop for images)") from None
            for j, i in enumerate(part):
                results[i] = [o[j] for o in outs]
    _refuse_ragged(names, results, [o["name"] for o in session.outputs])
    # the table path's frame: the same column names and missing labels (None, never the internal marker)
    outputs = [np.stack([r[k] for r in results]) for k in range(len(session.outputs))]
    _refuse_non_finite(names, outputs, [o["name"] for o in session.outputs])
    table = session.frame([o.reshape(len(o), -1) if o.ndim > 2 else o for o in outputs])
    table.insert(0, "file", names)
    return table

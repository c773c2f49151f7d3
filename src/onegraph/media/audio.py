"""Audio transformers: fixed length, spectrogram, mel scale, decibels, MFCC, Whisper's log-mel features.

Waveforms are ``float32 [N, T]`` at the pipeline's sample rate (any ``T``); spectrograms ``float32
[N, F, frames]``, librosa's and Whisper's layout. Each class emits its nodes and computes the same thing
with the library it names (librosa 0.11, ``torch.stft`` of torch 2.13, Whisper's feature extractor as
``transformers.WhisperFeatureExtractor._np_extract_fbank_features``), side by side.

The short-time Fourier transform is a ``Gather`` of the frames (after the library's centre padding) and one
``MatMul`` with the window folded into the DFT matrix (:mod:`onegraph.media.filters`); mel bands and the
DCT are ``MatMul`` with constant matrices. Bounds (tests/test_media_audio.py, real speech):

* power / magnitude spectrogram, mel spectrogram: within 1e-5 of the largest value of the clip (a
  float32 matrix product: rounding ~ ``sqrt(n_fft) * eps`` of the frame's energy, not of each bin, so bins far
  below the peak are compared absolutely);
* dB, Whisper log-mel, MFCC: within 1e-4 absolute (``Log`` and the ``10 / ln 10`` factor in float32 add a
  few float32 ulps of values up to ~100 dB).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onegraph.emit import DOUBLE, FLOAT, INT64, GraphBuilder
from onegraph.errors import ConfigError
from onegraph.media import filters
from onegraph.media.tensor import Step, Tensor, choice, ints

__all__ = ["AudioStep", "FixLength", "Spectrogram", "MelSpectrogram", "PowerToDB", "MFCC", "WhisperLogMel"]

_LN10 = float(np.log(10.0))



def _positive(name: str, value: Any, what: str) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{what}: {name}={value!r} is not a positive integer")
    return int(value)


class AudioStep(Step):
    takes = ("NT",)

    def _float(self, t: Tensor) -> None:
        if t.dtype != FLOAT:
            raise ConfigError(f"{type(self).__name__} takes float32 audio", hint="declare the input as float32")


class FixLength(AudioStep):
    """Each clip cut or zero-padded at its end to ``size`` samples (``librosa.util.fix_length(y, size=size)``).

    Raises :class:`~onegraph.errors.ConfigError` for a size that is not a positive integer."""

    match = "librosa"

    def __init__(self, size: int) -> None:
        self.size = _positive("size", size, "FixLength")

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        length = g.op("Shape", t.value, start=1, end=2, dtype=INT64)
        short = g.op("Max", g.op("Sub", ints(g, [self.size]), length, dtype=INT64), ints(g, [0]), dtype=INT64)
        pads = g.op("Concat", ints(g, [0, 0, 0]), short, axis=0, dtype=INT64)
        x = g.op("Pad", t.value, pads, mode="constant", dtype=t.dtype)
        x = g.op("Slice", x, ints(g, [0]), ints(g, [self.size]), ints(g, [1]), dtype=t.dtype)
        return t.with_value(x)

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        import librosa

        return librosa.util.fix_length(x, size=self.size, axis=-1)


class Spectrogram(AudioStep):
    """``|STFT|**power`` ``[N, n_fft // 2 + 1, frames]`` of float32 waveforms ``[N, T]``.

    Parameters
    ----------
    n_fft: frame length, samples. hop_length: default ``n_fft // 4``. win_length: default ``n_fft`` (a shorter
    window is zero-padded to ``n_fft``, centered). window: ``"hann"``, ``"hamming"`` (periodic) or ``"ones"``.
    center: pad ``n_fft // 2`` samples on both sides first (frame ``t`` is centered at ``t * hop_length``).
    pad_mode: ``"constant"`` (zeros; librosa's default) or ``"reflect"`` (torch.stft's and Whisper's).
    power: 2.0 (power) or 1.0 (magnitude).
    match: ``"librosa"`` (``np.abs(librosa.stft(y, ...)) ** power``) or ``"torch"``
        (``torch.stft(..., return_complex=True).abs() ** power``, what torchaudio's Spectrogram calls);
        sets the default ``pad_mode``.

    Frames: ``1 + (T + 2 * (n_fft // 2) - n_fft) // hop_length`` with ``center``, else
    ``1 + (T - n_fft) // hop_length``; a clip shorter than ``n_fft`` (or, reflecting, than ``n_fft // 2 + 1``)
    fails in onnxruntime as it fails in the library.

    Raises :class:`~onegraph.errors.ConfigError` for non-positive sizes, a window longer than ``n_fft``, an
    unknown window / pad mode / power / match.
    """

    def __init__(self, n_fft: int = 2048, hop_length: int | None = None, win_length: int | None = None, *,
                 window: str = "hann", center: bool = True, pad_mode: str | None = None, power: float = 2.0,
                 match: str = "librosa") -> None:
        self.match = choice("match", match, ("librosa", "torch"), "Spectrogram")
        self.n_fft = _positive("n_fft", n_fft, "Spectrogram")
        if hop_length is None and self.n_fft < 4:
            raise ConfigError(f"Spectrogram: n_fft={n_fft} gives the default hop_length n_fft // 4 = 0",
                              hint="give n_fft >= 4, or a hop_length")
        self.hop_length = _positive("hop_length", hop_length if hop_length is not None else n_fft // 4,
                                    "Spectrogram")
        self.win_length = _positive("win_length", win_length if win_length is not None else n_fft, "Spectrogram")
        self.window = choice("window", window, filters.WINDOWS, "Spectrogram")
        filters.window(window, self.win_length, self.n_fft)  # checks the length
        self.center = bool(center)
        self.pad_mode = choice("pad_mode", pad_mode or ("constant" if match == "librosa" else "reflect"),
                               ("constant", "reflect"), "Spectrogram")
        self.power = choice("power", float(power), (1.0, 2.0), "Spectrogram")

    @property
    def bins(self) -> int:
        return self.n_fft // 2 + 1

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        self._float(t)
        x = t.value
        if self.center:
            half = self.n_fft // 2
            x = g.op("Pad", x, ints(g, [0, half, 0, half]), mode=self.pad_mode, dtype=FLOAT)
        length = g.op("Shape", x, start=1, end=2, dtype=INT64)
        frames = g.op("Add", g.op("Div", g.op("Sub", length, ints(g, [self.n_fft]), dtype=INT64),
                                  ints(g, [self.hop_length]), dtype=INT64), ints(g, [1]), dtype=INT64)
        starts = g.op("Range", g.const(np.int64(0), "zero"),
                      g.op("Mul", g.op("Squeeze", frames, dtype=INT64), g.const(np.int64(self.hop_length), "hop"),
                           dtype=INT64), g.const(np.int64(self.hop_length), "hop"), dtype=INT64)
        index = g.op("Add", g.op("Unsqueeze", starts, ints(g, [1]), dtype=INT64),
                     g.const(np.arange(self.n_fft, dtype=np.int64)[None, :], "offsets"), dtype=INT64)
        framed = g.op("Gather", x, index, axis=1, dtype=FLOAT)  # [N, frames, n_fft]
        power = self.power_frames(g, framed)
        out = g.op("Cast", g.op("Transpose", power, perm=[0, 2, 1], dtype=DOUBLE), to=FLOAT, dtype=FLOAT)
        return t.with_value(out, layout="NFT", rows=self.bins)

    def power_frames(self, g: GraphBuilder, framed: Any) -> Any:
        """double ``[N, frames, F]``: ``|DFT(window * frame)| ** power`` of float32 frames ``[N, frames, n_fft]``.

        In double, as librosa (NumPy's FFT of float64 frames, rounded to complex64 once) and Whisper's
        reference do: a float32 product would carry errors of ~1e-7 of each frame's energy into every bin,
        which is 1e-3 relative (4e-3 dB) for bins 40 dB below their frame's peak."""
        basis = filters.dft(self.n_fft, filters.window(self.window, self.win_length, self.n_fft), np.float64)
        frames64 = g.op("Cast", framed, to=DOUBLE, dtype=DOUBLE)
        spec = g.op("MatMul", frames64, g.const(basis, "dft"), dtype=DOUBLE)  # [N, frames, 2F]
        re, im = g.op("Split", spec, ints(g, [self.bins, self.bins]), axis=2, outputs=2)
        power = g.op("Add", g.op("Mul", re, re, dtype=DOUBLE), g.op("Mul", im, im, dtype=DOUBLE), dtype=DOUBLE)
        return g.op("Sqrt", power, dtype=DOUBLE) if self.power == 1.0 else power

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        if self.match == "librosa":
            import librosa

            stft = librosa.stft(x, n_fft=self.n_fft, hop_length=self.hop_length, win_length=self.win_length,
                                window=self.window if self.window != "ones" else "boxcar", center=self.center,
                                pad_mode=self.pad_mode)
            return (np.abs(stft) ** self.power).astype(np.float32)
        import torch

        make = {"hann": torch.hann_window, "hamming": torch.hamming_window, "ones": torch.ones}[self.window]
        win = make(self.win_length) if self.window == "ones" else make(self.win_length, periodic=True)
        stft = torch.stft(torch.from_numpy(x), self.n_fft, hop_length=self.hop_length, win_length=self.win_length,
                          window=win, center=self.center, pad_mode=self.pad_mode, return_complex=True)
        return (stft.abs() ** self.power).numpy()


class MelSpectrogram(AudioStep):
    """Mel spectrogram ``[N, n_mels, frames]`` of float32 waveforms: ``librosa.feature.melspectrogram(y=y,
    sr=sample_rate, n_fft=..., hop_length=..., n_mels=..., fmin=..., fmax=..., htk=..., norm=..., power=...,
    center=..., pad_mode=..., window=...)``: a :class:`Spectrogram` times ``librosa.filters.mel``
    (:func:`onegraph.media.filters.mel`). ``sample_rate`` (Hz) must be the pipeline's.

    Raises :class:`~onegraph.errors.ConfigError` as :class:`Spectrogram` and :func:`~onegraph.media.filters.mel`,
    and for a sample rate other than the pipeline's.
    """

    match = "librosa"

    def __init__(self, sample_rate: int, n_fft: int = 2048, hop_length: int | None = 512, *, n_mels: int = 128,
                 fmin: float = 0.0,
                 fmax: float | None = None, htk: bool = False, norm: str | None = "slaney", power: float = 2.0,
                 center: bool = True, pad_mode: str = "constant", window: str = "hann",
                 win_length: int | None = None) -> None:
        self._spec = Spectrogram(n_fft, hop_length, win_length, window=window, center=center, pad_mode=pad_mode,
                                       power=power)
        self.sample_rate = _positive("sample_rate", sample_rate, "MelSpectrogram")
        self.n_mels = _positive("n_mels", n_mels, "MelSpectrogram")
        self.fmin, self.fmax, self.htk, self.norm = float(fmin), fmax, bool(htk), norm
        self._bank = filters.mel(self.sample_rate, self._spec.n_fft, self.n_mels, self.fmin, fmax, self.htk, norm)

    def describe(self) -> dict:
        spec = {k: v for k, v in self._spec.describe().items() if k not in ("step", "match")}
        return {**super().describe(), **spec}

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        _same_rate(self, t)
        spec = self._spec.emit(g, t)
        mel = g.op("MatMul", g.const(self._bank, "mel"), spec.value, dtype=FLOAT)
        return spec.with_value(mel, rows=self.n_mels)

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        import librosa

        s = self._spec
        return librosa.feature.melspectrogram(
            y=x, sr=self.sample_rate, n_fft=s.n_fft, hop_length=s.hop_length, win_length=s.win_length, window=s.window,
            center=s.center, pad_mode=s.pad_mode, power=s.power, n_mels=self.n_mels, fmin=self.fmin, fmax=self.fmax,
            htk=self.htk, norm=self.norm)


def _same_rate(step: Step, t: Tensor) -> None:
    if t.sample_rate != step.sample_rate:
        raise ConfigError(f"{type(step).__name__}(sample_rate={step.sample_rate}) takes audio at {step.sample_rate} "
                          f"Hz, the pipeline declares {t.sample_rate} Hz",
                          hint="resample the audio first, or declare the rate the audio has")


def _per_clip_max(g: GraphBuilder, x: Any) -> Any:
    return g.op("ReduceMax", x, ints(g, [1, 2]), keepdims=1, dtype=FLOAT)


class PowerToDB(Step):
    """Decibels of a power spectrogram ``[N, F, frames]``: ``librosa.power_to_db(S, ref=ref, amin=amin,
    top_db=top_db)`` per clip: ``10 log10(max(amin, S)) - 10 log10(max(amin, ref))``, then floored at the
    clip's maximum minus ``top_db``. ``ref``: a number, or ``"max"`` (librosa's ``ref=np.max``, per clip).

    Raises :class:`~onegraph.errors.ConfigError` for a non-positive amin, a negative top_db, another ref."""

    takes = ("NFT",)
    match = "librosa"

    def __init__(self, *, ref: float | str = 1.0, amin: float = 1e-10, top_db: float | None = 80.0) -> None:
        if not (ref == "max" or (isinstance(ref, (int, float)) and not isinstance(ref, bool))):
            raise ConfigError(f"PowerToDB: ref={ref!r} is not a number or 'max'")
        if not (np.isfinite(amin) and amin > 0) or (top_db is not None and not (np.isfinite(top_db) and top_db >= 0)) \
                or (ref != "max" and not np.isfinite(ref)):
            raise ConfigError(f"PowerToDB: amin={amin!r} must be > 0 and top_db={top_db!r} >= 0 (or None)")
        self.ref, self.amin, self.top_db = ref, float(amin), top_db

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        amin = g.const(np.float32(self.amin), "amin")
        db = g.op("Mul", g.op("Log", g.op("Max", t.value, amin, dtype=FLOAT), dtype=FLOAT),
                  g.const(np.float32(10.0 / _LN10), "db"), dtype=FLOAT)
        if self.ref == "max":
            ref = g.op("Max", _per_clip_max(g, t.value), amin, dtype=FLOAT)
            db = g.op("Sub", db, g.op("Mul", g.op("Log", ref, dtype=FLOAT), g.const(np.float32(10.0 / _LN10), "db"),
                                      dtype=FLOAT), dtype=FLOAT)
        elif self.ref != 1.0:
            offset = 10.0 * np.log10(max(self.amin, abs(float(self.ref))))
            db = g.op("Sub", db, g.const(np.float32(offset), "ref_db"), dtype=FLOAT)
        if self.top_db is not None:
            floor = g.op("Sub", _per_clip_max(g, db), g.const(np.float32(self.top_db), "top_db"), dtype=FLOAT)
            db = g.op("Max", db, floor, dtype=FLOAT)
        return t.with_value(db)

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        import librosa

        ref = np.max if self.ref == "max" else self.ref
        return np.stack([librosa.power_to_db(s, ref=ref, amin=self.amin, top_db=self.top_db) for s in x])


class MFCC(Step):
    """Mel-frequency cepstral coefficients ``[N, n_mfcc, frames]`` of a dB mel spectrogram ``[N, n_mels,
    frames]`` (after :class:`MelSpectrogram` and :class:`PowerToDB`): ``librosa.feature.mfcc(S=S, n_mfcc=n_mfcc,
    dct_type=2, norm="ortho", lifter=0)``, the orthonormal DCT-II along the mel axis.

    Raises :class:`~onegraph.errors.ConfigError` for n_mfcc not in 1..n_mels."""

    takes = ("NFT",)
    match = "librosa"

    def __init__(self, n_mfcc: int = 20) -> None:
        self.n_mfcc = _positive("n_mfcc", n_mfcc, "MFCC")

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        if self.n_mfcc > t.rows:
            raise ConfigError(f"MFCC: n_mfcc={self.n_mfcc} is more than the {t.rows} mel bands it takes",
                              hint=f"use n_mfcc <= {t.rows}")
        basis = filters.dct_ortho(t.rows, self.n_mfcc).T.copy()
        return t.with_value(g.op("MatMul", g.const(basis, "dct"), t.value, dtype=FLOAT), rows=self.n_mfcc)

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        import librosa

        return librosa.feature.mfcc(S=x, n_mfcc=self.n_mfcc, dct_type=2, norm="ortho", lifter=0)


class WhisperLogMel(AudioStep):
    """Whisper's log-mel input features ``[N, n_mels, chunk_length * sample_rate / hop_length]`` of 16 kHz
    float32 waveforms, as ``transformers.WhisperFeatureExtractor(feature_size=n_mels, sampling_rate=16000,
    hop_length=160, chunk_length=30, n_fft=400)`` computes them (its NumPy reference
    ``_np_extract_fbank_features``, and openai-whisper's ``log_mel_spectrogram``): each clip cut / zero-padded
    to ``chunk_length`` seconds, power STFT (periodic Hann, centered, reflect padding), Slaney mel filters
    0-8000 Hz, last frame dropped, ``log10(max(mel, 1e-10))``, floored at the clip's maximum minus 8, then
    ``(x + 4) / 4``.

    Raises :class:`~onegraph.errors.ConfigError` for non-positive sizes or a sample rate other than the
    pipeline's."""

    match = "whisper"

    def __init__(self, n_mels: int = 80, *, sample_rate: int = 16000, n_fft: int = 400, hop_length: int = 160,
                 chunk_length: int = 30) -> None:
        self.n_mels = _positive("n_mels", n_mels, "WhisperLogMel")
        self.sample_rate = _positive("sample_rate", sample_rate, "WhisperLogMel")
        self.chunk_length = _positive("chunk_length", chunk_length, "WhisperLogMel")
        self._spec = Spectrogram(n_fft, hop_length, window="hann", center=True, pad_mode="reflect", power=2.0,
                                 match="torch")
        self.n_fft, self.hop_length = self._spec.n_fft, self._spec.hop_length

    @property
    def frames(self) -> int:
        return self.chunk_length * self.sample_rate // self.hop_length

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        _same_rate(self, t)
        t = FixLength(self.chunk_length * self.sample_rate).emit(g, t)
        spec = self._spec.emit(g, t)
        bank = filters.mel(self.sample_rate, self.n_fft, self.n_mels, 0.0, 8000.0, False, "slaney")
        mel = g.op("MatMul", g.const(bank, "mel"), spec.value, dtype=FLOAT)
        mel = g.op("Slice", mel, ints(g, [0]), ints(g, [self.frames]), ints(g, [2]), dtype=FLOAT)
        log = g.op("Mul", g.op("Log", g.op("Max", mel, g.const(np.float32(1e-10), "floor"), dtype=FLOAT), dtype=FLOAT),
                   g.const(np.float32(1.0 / _LN10), "log10"), dtype=FLOAT)
        log = g.op("Max", log, g.op("Sub", _per_clip_max(g, log), g.const(np.float32(8.0), "range"), dtype=FLOAT),
                   dtype=FLOAT)
        out = g.op("Div", g.op("Add", log, g.const(np.float32(4.0), "four"), dtype=FLOAT),
                   g.const(np.float32(4.0), "four"), dtype=FLOAT)
        return spec.with_value(out, rows=self.n_mels)

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        from transformers import WhisperFeatureExtractor

        fe = WhisperFeatureExtractor(feature_size=self.n_mels, sampling_rate=self.sample_rate,
                                     hop_length=self.hop_length, chunk_length=self.chunk_length, n_fft=self.n_fft)
        clips = FixLength(self.chunk_length * self.sample_rate).reference(x, layout)
        return fe._np_extract_fbank_features(clips, "cpu").astype(np.float32)

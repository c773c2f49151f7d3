"""Constant matrices of the audio steps, computed in NumPy as the libraries compute them.

Windows (``scipy.signal.get_window`` / ``torch.hann_window`` / NumPy's ``hanning``), the real DFT as two
matrices (cos, -sin) with the window folded in, the mel filter bank (librosa 0.11 ``librosa.filters.mel``,
which the Whisper feature extractors use too) and the orthonormal DCT-II (``scipy.fft.dct(norm="ortho")``,
librosa's MFCC). They become initializers: a graph multiplies by them (``MatMul``), which is exact to
float32 rounding and runs in any ONNX runtime (ONNX's ``DFT`` / ``MelWeightMatrix`` operators are not used:
their CPU kernels compute other conventions and would need checking against each library per version).
"""

from __future__ import annotations

import numpy as np

from onegraph.errors import ConfigError

__all__ = ["WINDOWS", "window", "dft", "hz_to_mel", "mel_to_hz", "mel", "dct_ortho"]

WINDOWS = ("hann", "hamming", "ones")


def window(name: str, length: int, n_fft: int) -> np.ndarray:
    """float64 ``[n_fft]``: the periodic window (``fftbins=True``) of ``length`` samples, zero-padded on both
    sides to ``n_fft`` (``librosa.util.pad_center``; ``torch.stft`` centers a shorter window the same way).

    hann: ``0.5 - 0.5 cos(2 pi k / length)``; hamming: ``0.54 - 0.46 cos(2 pi k / length)``; ones: rectangular.
    """
    if name not in WINDOWS:
        raise ConfigError(f"window={name!r} is not supported", hint=f"use one of {', '.join(WINDOWS)}")
    if not 0 < length <= n_fft:
        raise ConfigError(f"win_length={length} must be between 1 and n_fft={n_fft}")
    k = np.arange(length, dtype=np.float64)
    if name == "ones":
        w = np.ones(length)
    else:
        a = 0.5 if name == "hann" else 0.54
        w = a - (1.0 - a) * np.cos(2.0 * np.pi * k / length)
    left = (n_fft - length) // 2
    return np.pad(w, (left, n_fft - length - left))


def dft(n_fft: int, win: np.ndarray, dtype: type = np.float32) -> np.ndarray:
    """``dtype`` ``[n_fft, 2 * (n_fft // 2 + 1)]``: frames ``@`` it give ``[re..., im...]`` of
    ``numpy.fft.rfft(win * frame)`` (``re_k = sum_n win_n x_n cos(2 pi n k / n_fft)``, ``im_k = -sum ... sin``).
    The angles are reduced modulo ``n_fft`` in integers first, so large ``n k`` products lose nothing."""
    n = np.arange(n_fft)
    k = np.arange(n_fft // 2 + 1)
    angle = 2.0 * np.pi * ((np.outer(n, k) % n_fft) / n_fft)
    return np.concatenate([win[:, None] * np.cos(angle), -win[:, None] * np.sin(angle)], axis=1).astype(dtype)


# -- mel scale: librosa.core.convert.hz_to_mel / mel_to_hz / mel_frequencies (librosa 0.11) ------------
_F_SP = 200.0 / 3
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = np.log(6.4) / 27.0


def hz_to_mel(f: np.ndarray, htk: bool) -> np.ndarray:
    f = np.asarray(f, dtype=np.float64)
    if htk:
        return 2595.0 * np.log10(1.0 + f / 700.0)
    mels = f / _F_SP
    log = f >= _MIN_LOG_HZ
    return np.where(log, _MIN_LOG_MEL + np.log(np.maximum(f, _MIN_LOG_HZ) / _MIN_LOG_HZ) / _LOGSTEP, mels)


def mel_to_hz(m: np.ndarray, htk: bool) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    if htk:
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    freqs = _F_SP * m
    return np.where(m >= _MIN_LOG_MEL, _MIN_LOG_HZ * np.exp(_LOGSTEP * (m - _MIN_LOG_MEL)), freqs)


def mel(sample_rate: int, n_fft: int, n_mels: int, fmin: float = 0.0, fmax: float | None = None,
        htk: bool = False, norm: str | None = "slaney") -> np.ndarray:
    """float32 ``[n_mels, n_fft // 2 + 1]``: ``librosa.filters.mel(sr=sample_rate, n_fft=n_fft, n_mels=n_mels,
    fmin=fmin, fmax=fmax, htk=htk, norm=norm)`` (triangles between ``n_mels + 2`` points equally spaced on the
    mel scale; ``norm="slaney"`` divides each by its width in Hz / 2, None keeps peaks at 1).

    Raises :class:`~onegraph.errors.ConfigError` for fmax above the Nyquist frequency, fmin >= fmax, or
    another norm.
    """
    fmax = sample_rate / 2.0 if fmax is None else float(fmax)
    if not 0 <= fmin < fmax <= sample_rate / 2.0:
        raise ConfigError(f"mel filters: fmin={fmin}, fmax={fmax} must satisfy 0 <= fmin < fmax <= "
                          f"sample_rate / 2 = {sample_rate / 2}")
    if norm not in ("slaney", None):
        raise ConfigError(f"mel filters: norm={norm!r} is not supported", hint="use norm='slaney' or None")
    weights = np.zeros((n_mels, n_fft // 2 + 1), dtype=np.float32)
    fftfreqs = np.fft.rfftfreq(n=n_fft, d=1.0 / sample_rate)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(fmin, htk), hz_to_mel(fmax, htk), n_mels + 2), htk)
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    if norm == "slaney":
        enorm = 2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels])
        weights *= enorm[:, np.newaxis]
    return weights


def dct_ortho(n_in: int, n_out: int) -> np.ndarray:
    """float32 ``[n_in, n_out]``: ``x @ it`` is ``scipy.fft.dct(x, type=2, norm="ortho")[..., :n_out]``
    (``y_k = s_k sum_n x_n cos(pi k (2n + 1) / (2 n_in))``, ``s_0 = sqrt(1 / n_in)``, else ``sqrt(2 / n_in)``)."""
    n = np.arange(n_in)[:, None]
    k = np.arange(n_out)[None, :]
    basis = np.cos(np.pi * k * (2 * n + 1) / (2.0 * n_in))
    scale = np.where(k == 0, np.sqrt(1.0 / n_in), np.sqrt(2.0 / n_in))
    return (basis * scale).astype(np.float32)

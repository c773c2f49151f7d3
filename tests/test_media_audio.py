"""Audio steps: the graph in onnxruntime against librosa, torch.stft and Whisper's feature extractor, on
speech synthesized by espeak-ng (tests/data/speech; a clip and the same clip reversed form a batch of two).

Bounds, and why:
* spectrograms (power / magnitude / mel) within 1e-5 of the clip's largest value: the graph computes the
  DFT in double, like librosa and Whisper's reference, then rounds to float32; what remains is float32
  rounding of the stored values and of the mel product (positive terms), ~1e-7 of the peak. Bins far
  below the peak are not compared relatively: any float32 DFT is exact only to the frame's energy.
* decibels, Whisper's log-mel: within 1e-4 absolute. ONNX has no log10: ``Log`` times ``10 / ln 10`` in
  float32 differs from NumPy's log10 by a few ulps of values up to ~100 (dB), ~2e-5.
* MFCC: within 1e-5 of the clip's largest coefficient (a float32 DCT of 128 dB values of up to ~100:
  rounding ~ 128 x 2^-24 x 100 x ... per coefficient, ~5e-4 absolute on coefficients of ~500).
"""

from __future__ import annotations

import numpy as np
import pytest

from media_helpers import assert_close_to_max, run, speech
from onegraph.errors import ConfigError
from onegraph.media import audio as au
from onegraph import media
from onegraph.media.pipeline import AudioPipeline

SPECTRA = [
    au.Spectrogram(2048, 512),
    au.Spectrogram(1024, 256, 800, window="hamming"),
    au.Spectrogram(512, 128, center=False),
    au.Spectrogram(400, 160, match="torch"),
    au.Spectrogram(512, 128, power=1.0, match="torch"),
    au.Spectrogram(256, 64, window="ones", pad_mode="reflect"),
]


@pytest.mark.parametrize("step", SPECTRA, ids=repr)
def test_spectrogram(step):
    x = speech()
    assert_close_to_max(run(AudioPipeline([step], sample_rate=22050), x), step.reference(x, "NT"), 1e-5)


@pytest.mark.parametrize("kwargs", [{}, {"n_mels": 64, "fmin": 50.0, "fmax": 8000.0, "htk": True, "norm": None},
                                    {"n_fft": 1024, "hop_length": 256, "power": 1.0}])
def test_mel_db_mfcc(kwargs):
    x = speech()
    mel = au.MelSpectrogram(22050, **kwargs)
    got = run(AudioPipeline([mel], sample_rate=22050), x)
    expected = mel.reference(x, "NT")
    assert_close_to_max(got, expected, 1e-5)
    for db in (au.PowerToDB(), au.PowerToDB(ref="max", top_db=60.0), au.PowerToDB(ref=10.0, top_db=None)):
        np.testing.assert_allclose(run(AudioPipeline([mel, db], sample_rate=22050), x), db.reference(expected, "NFT"),
                                   rtol=0, atol=1e-4)


def test_mfcc_equals_librosa_feature_mfcc():
    import librosa

    x = speech()
    pipe = AudioPipeline([au.MelSpectrogram(22050), au.PowerToDB(), au.MFCC(20)], sample_rate=22050)
    expected = np.stack([librosa.feature.mfcc(y=clip, sr=22050, n_mfcc=20) for clip in x])  # one clip per call
    assert_close_to_max(run(pipe, x), expected, 1e-5)
    np.testing.assert_allclose(run(pipe, x), pipe.reference(x), rtol=0, atol=2e-3)


def test_fix_length():
    x = speech()
    for size in (1000, x.shape[1], x.shape[1] + 777):
        step = au.FixLength(size)
        np.testing.assert_array_equal(run(AudioPipeline([step], sample_rate=22050), x), step.reference(x, "NT"))


def test_whisper_log_mel():
    from transformers import WhisperFeatureExtractor

    y = speech(16000)[0]
    short = np.pad(y[:20000], (0, len(y) - 20000))  # 1.25 s then silence: the clamp at max - 8 matters
    x = np.stack([y, short])
    step = au.WhisperLogMel()
    got = run(AudioPipeline([step], sample_rate=16000), x)
    assert got.shape == (2, 80, 3000)
    np.testing.assert_allclose(got, step.reference(x, "NT"), rtol=0, atol=1e-4)
    public = WhisperFeatureExtractor(feature_size=80, sampling_rate=16000, hop_length=160, chunk_length=30, n_fft=400)
    features = public(list(x), sampling_rate=16000, return_tensors="np")["input_features"]  # its torch.stft path
    np.testing.assert_allclose(got, features, rtol=0, atol=1e-4)


@pytest.mark.parametrize("make,words", [
    (lambda: au.Spectrogram(0), "n_fft=0"),
    (lambda: au.Spectrogram(512, window="kaiser"), "window='kaiser'"),
    (lambda: au.Spectrogram(512, win_length=600), "win_length=600"),
    (lambda: au.Spectrogram(512, pad_mode="wrap"), "pad_mode='wrap'"),
    (lambda: au.Spectrogram(512, power=3), "power=3.0"),
    (lambda: au.MelSpectrogram(16000, fmax=9000), "sample_rate / 2"),
    (lambda: au.MelSpectrogram(16000, norm="l2"), "norm='l2'"),
    (lambda: au.PowerToDB(ref="min"), "ref='min'"),
    (lambda: au.PowerToDB(amin=0), "amin=0"),
])
def test_bad_parameters_name_them(make, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)").replace("/", "/")):
        make()


def test_steps_that_do_not_fit():
    with pytest.raises(ConfigError, match="takes audio at 16000 Hz, the pipeline declares 22050"):
        AudioPipeline([au.MelSpectrogram(16000)], sample_rate=22050).to_onnx()
    with pytest.raises(ConfigError, match="takes NFT"):
        AudioPipeline([au.PowerToDB()], sample_rate=16000).to_onnx()
    with pytest.raises(ConfigError, match="n_mfcc=30 is more than the 20"):
        AudioPipeline([au.MelSpectrogram(16000, n_mels=20), au.MFCC(30)], sample_rate=16000).to_onnx()
    with pytest.raises(ConfigError, match="sample_rate"):
        AudioPipeline([au.FixLength(10)], sample_rate=0)


def test_non_finite_samples_and_features_are_refused_naming_them(cli, tmp_path):
    """New users' cases: a NaN sample given to build raised librosa's own ParameterError ("Audio buffer is not
    finite everywhere"); a float WAV with one sample of 1e30 (finite) scored as all-NaN features, written with
    exit 0. The sample is refused naming where; the file is refused naming it."""
    import soundfile as sf

    from onegraph.errors import DataError

    pipe = media.AudioPipeline([media.FixLength(4000), media.MelSpectrogram(8000, 256, 64, n_mels=16),
                                media.PowerToDB(ref="max")], sample_rate=8000)
    rng = np.random.default_rng(0)
    clips = (0.3 * rng.standard_normal((2, 4000))).astype(np.float32)
    bad = clips.copy()
    bad[1, 10] = np.nan
    with pytest.raises(DataError, match=r"the sample holds nan at \[1, 10\]"):
        media.build(pipe, None, bad)
    model = tmp_path / "mel.onnx"
    media.build(pipe, None, clips, path=model)
    folder = tmp_path / "clips"
    folder.mkdir()
    huge = clips[0].copy()
    huge[10] = 1e30
    sf.write(folder / "a.wav", clips[1], 8000, subtype="FLOAT")
    sf.write(folder / "b.wav", huge, 8000, subtype="FLOAT")
    done = cli("score", str(model), str(folder), "-o", str(tmp_path / "s.csv"))
    assert done.returncode == 1 and "b.wav: the model's 'features' is not finite" in done.stderr, done.stderr
    assert not (tmp_path / "s.csv").exists()

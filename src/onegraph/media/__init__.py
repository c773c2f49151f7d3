"""Image and audio preprocessing in the graph, equal to the libraries people use (issue 17).

``Resize`` / ``CenterCrop`` / ``Pad`` / ``Normalize`` / ``ToFloat`` / ``ToUInt8`` / ``ToCHW`` / ``ToHWC`` /
``ColorConvert`` (:mod:`.image`), ``BoxPostprocess`` (:mod:`.boxes`), ``FixLength`` / ``Spectrogram`` /
``MelSpectrogram`` / ``PowerToDB`` / ``MFCC`` / ``WhisperLogMel`` (:mod:`.audio`), chained in an
``ImagePipeline`` / ``AudioPipeline`` and built with a model into one ONNX file by :func:`build`
(:mod:`.pipeline`); ``onegraph score MODEL FOLDER`` decodes files for it (:mod:`.score`). Each step names the
library it equals and carries that library's computation beside its graph (``reference``).
"""

from onegraph.media.audio import (
                                  MFCC,
                                  FixLength,
                                  MelSpectrogram,
                                  PowerToDB,
                                  Spectrogram,
                                  WhisperLogMel,
)
from onegraph.media.boxes import BoxPostprocess
from onegraph.media.image import (
                                  CenterCrop,
                                  ColorConvert,
                                  Normalize,
                                  Pad,
                                  Resize,
                                  ToCHW,
                                  ToFloat,
                                  ToHWC,
                                  ToUInt8,
)
from onegraph.media.pipeline import AudioPipeline, ImagePipeline, MediaPipeline, build

__all__ = ["Resize", "CenterCrop", "Pad", "Normalize", "ToFloat", "ToUInt8", "ToCHW", "ToHWC", "ColorConvert",
           "BoxPostprocess", "FixLength", "Spectrogram", "MelSpectrogram", "PowerToDB", "MFCC", "WhisperLogMel",
           "MediaPipeline", "ImagePipeline", "AudioPipeline", "build"]

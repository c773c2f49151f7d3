"""The ``onegraph.stats`` JSON document of one tensor (schema version 1), as pydantic models.

One document per tensor, under the key ``onegraph.stats`` of its ``ValueInfoProto.metadata_props``
(:mod:`onegraph.stats.annotate` writes and reads it). Keys are absent or ``null`` when unknown; floats are
finite JSON numbers (a bound that is infinite is ``null``). The fields, with their meaning, are the attributes
of :class:`StatsDocument`; a reader refuses a newer version. Values are read leniently (``"3"`` is the count
3), as documents other tools wrote may spell numbers as text.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SCHEMA_VERSION", "HistogramDocument", "OutlierDocument", "ChannelsDocument", "QuantizationDocument",
           "StatsDocument"]

SCHEMA_VERSION = 1


class _Part(BaseModel):
    # keys a newer writer adds are kept
    model_config = ConfigDict(extra="allow")


class HistogramDocument(_Part):
    """``counts[i]`` finite values in ``[(first_bin + i) * 2**width_log2, (first_bin + i + 1) * 2**width_log2)``."""

    width_log2: int
    first_bin: int
    counts: list[int]


class OutlierDocument(_Part):
    """Values < ``low`` or > ``high``; ``count_min <= exact count <= count_max``, ``count`` an interpolated
    estimate. Tukey: low/high = Q1 -/+ k IQR (sketch quartiles); ``std_<k>``: mean -/+ k std."""

    low: float | None
    high: float | None
    count: float | None
    count_min: int
    count_max: int


class ChannelsDocument(_Part):
    """Per index along ``axis``."""

    axis: int
    count: list[int]
    min: list[float | None]
    max: list[float | None]
    mean: list[float | None]
    std: list[float | None]


class QuantizationDocument(_Part):
    """How the ``SCALE_TENSOR`` / ``ZERO_POINT_TENSOR`` initializers were derived."""

    type: str
    axis: int | None = None
    symmetric: bool = False
    reduce_range: bool = False
    method: str = Field(description="minmax, percentile, entropy, mse, float8_std, float8_absmax or recovered")


class StatsDocument(_Part):
    """Statistics of one tensor over the data it was calibrated on (or the range a quantized model
    represents, ``source="recovered"``).

    The fields mirror :class:`onegraph.stats.accumulators.TensorStats` one for one (that dataclass is the
    in-memory value the accumulators merge; this is its stored form, with its JSON spellings).
    """

    version: int = Field(description="SCHEMA_VERSION of the writer; a reader refuses a newer one")
    source: Literal["calibration", "recovered"] | str = Field(
        "calibration", description="onegraph.stats.calibrate, or read back from Q/DQ or QLinear* parameters "
        "(only min / max, the float range the quantization represents)")
    samples: int = Field(0, description="samples (first-axis entries) seen")
    dtype: str | None = Field(None, description="numpy name of the tensor's element type as observed")
    shape: list[int | None] | None = Field(None, description="observed shape, null for dimensions that varied")
    size: int = Field(0, description="values seen, finite or not")
    count: int = Field(0, description="finite values; every statistic below is over these only")
    nan: int = 0
    posinf: int = 0
    neginf: int = 0
    min: float | None = None
    max: float | None = None
    absmax: float | None = None
    mean: float | None = None
    std: float | None = Field(None, description="population standard deviation (ddof = 0)")
    zero_fraction: float | None = Field(None, description="share of finite values equal to 0")
    quantiles: dict[str, float | None] | None = Field(
        None, description='{"0.5": value, ...} for probabilities 0.0001 .. 0.9999 (KLL sketch)')
    quantile_rank_error: float | None = Field(
        None, description="bound on the rank error of those quantiles (99% confidence; 98% with sampling)")
    histogram: HistogramDocument | None = None
    outliers: dict[str, OutlierDocument] | None = Field(None, description='"tukey_1.5", "tukey_3", "std_<k>"')
    channels: ChannelsDocument | None = None
    quantization: QuantizationDocument | None = None

"""onegraph's DataFrame transformers, grouped by the kind of column they work on."""

from onegraph.frame.transformers.aggregate import GroupAggregate
from onegraph.frame.transformers.base import FrameTransformer
from onegraph.frame.transformers.binning import Bucketize, RangeMap
from onegraph.frame.transformers.categorical import (
    FrequencyEncoder,
    OneHotEncoder,
    OrdinalEncoder,
    RareCategoryGrouper,
    TargetEncoder,
)
from onegraph.frame.transformers.datetime import DateDiff, DateParts
from onegraph.frame.transformers.expression import Expression
from onegraph.frame.transformers.numeric import (
    Clip,
    LogTransformer,
    MaxAbsScaler,
    MinMaxScaler,
    PowerTransformer,
    RobustScaler,
    SimpleImputer,
    StandardScaler,
)
from onegraph.frame.transformers.select import ColumnSelector
from onegraph.frame.transformers.text import (
    RegexMatch,
    StringConcat,
    StringSplit,
    ValueMap,
)
from onegraph.frame.transformers.textmap import HashEncoder, StringCase, StringStrip

__all__ = [
    "FrameTransformer",
    "SimpleImputer",
    "StandardScaler",
    "MinMaxScaler",
    "RobustScaler",
    "MaxAbsScaler",
    "PowerTransformer",
    "Clip",
    "LogTransformer",
    "OneHotEncoder",
    "OrdinalEncoder",
    "ColumnSelector",
    "DateParts",
    "DateDiff",
    "StringConcat",
    "StringSplit",
    "ValueMap",
    "RegexMatch",
    "StringCase",
    "StringStrip",
    "HashEncoder",
    "FrequencyEncoder",
    "TargetEncoder",
    "RareCategoryGrouper",
    "GroupAggregate",
    "Bucketize",
    "RangeMap",
    "Expression",
]

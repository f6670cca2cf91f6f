"""Offline data: experience written to and read from files and datasets (``output`` and
``input``), the readers and writers behind them, and off-policy estimation."""

from runtime.offline.estimators import (
    ImportanceSampling,
    OffPolicyEstimator,
    WeightedImportanceSampling,
)
from runtime.offline.input_reader import InputReader
from runtime.offline.io_context import IOContext
from runtime.offline.json_reader import JsonReader
from runtime.offline.json_writer import JsonWriter, OutputWriter
from runtime.offline.mixed_input import MixedInput
from runtime.offline.sample_batch_builder import SampleBatchBuilder
from runtime.offline.shuffled_input import ShuffledInput

__all__ = [
    "IOContext",
    "ImportanceSampling",
    "InputReader",
    "JsonReader",
    "JsonWriter",
    "MixedInput",
    "OffPolicyEstimator",
    "OutputWriter",
    "SampleBatchBuilder",
    "ShuffledInput",
    "WeightedImportanceSampling",
]

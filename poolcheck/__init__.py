"""poolcheck: spec-conformance and differential fuzzing for pooling operators."""

from poolcheck.api import avg_pool, max_pool, onnx_average_pool, onnx_max_pool, output_shape, run_spec
from poolcheck.errors import (
    AttributeValueError,
    CaseFileError,
    EngineUnavailableError,
    PoolcheckError,
)
from poolcheck.spec.policy import Policy

__version__ = "0.1.0"

__all__ = [
    "AttributeValueError",
    "CaseFileError",
    "EngineUnavailableError",
    "Policy",
    "PoolcheckError",
    "avg_pool",
    "max_pool",
    "onnx_average_pool",
    "onnx_max_pool",
    "output_shape",
    "run_spec",
]

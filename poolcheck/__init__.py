"""poolcheck: spec-conformance and differential fuzzing for pooling operators."""

from poolcheck.api import avg_pool, max_pool, onnx_average_pool, onnx_max_pool, output_shape, run_spec
from poolcheck.api_family import (
    adaptive_avg_pool,
    adaptive_max_pool,
    onnx_global_average_pool,
    onnx_global_lp_pool,
    onnx_global_max_pool,
    onnx_lp_pool,
    onnx_max_unpool,
    run_family,
)
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
    "adaptive_avg_pool",
    "adaptive_max_pool",
    "avg_pool",
    "max_pool",
    "onnx_average_pool",
    "onnx_global_average_pool",
    "onnx_global_lp_pool",
    "onnx_global_max_pool",
    "onnx_lp_pool",
    "onnx_max_pool",
    "onnx_max_unpool",
    "output_shape",
    "run_family",
    "run_spec",
]

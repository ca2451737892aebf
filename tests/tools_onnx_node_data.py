"""Write ONNX's own node tests for an operator as backend test directories (model.onnx,
test_data_set_N/input_K.pb, output_K.pb), from the installed onnx package's generators
(onnx/backend/test/case/node/*.py): the held-out corpus for operators whose .pb data the onnx
repository no longer ships.

    python tests/tools_onnx_node_data.py OUT_DIR LpPool GlobalAveragePool ...

Each operator runs in its own process: onnx's ``collect_testcases(op_type)`` caches the first
operator's cases for the life of the process.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path


def write_op(out: Path, op_type: str) -> list[str]:
    import importlib

    import onnx
    from onnx import numpy_helper
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:  # only the operator's own generator module (collect_testcases runs every operator's: 20x the CPU)
            node._TargetOpType = op_type  # what collect_testcases sets: expect() keeps only this operator's cases
            importlib.import_module(f"{node.__name__}.{op_type.lower()}")
            found = node._NodeTestCases
        except ModuleNotFoundError:
            found = node.collect_testcases(op_type)
        cases = [c for c in found if c.model.graph.node[0].op_type == op_type]
    names = []
    for case in cases:
        folder = out / case.name
        folder.mkdir(parents=True, exist_ok=True)
        onnx.save(case.model, str(folder / "model.onnx"))
        graph = case.model.graph
        for n, (inputs, outputs) in enumerate(case.data_sets):
            ds = folder / f"test_data_set_{n}"
            ds.mkdir(exist_ok=True)
            for k, arr in enumerate(inputs):
                (ds / f"input_{k}.pb").write_bytes(numpy_helper.from_array(arr, graph.input[k].name).SerializeToString())
            for k, arr in enumerate(outputs):
                (ds / f"output_{k}.pb").write_bytes(numpy_helper.from_array(arr, graph.output[k].name).SerializeToString())
        names.append(case.name)
    return names


def write(out: Path, op_types: list[str]) -> None:
    for op_type in op_types:
        subprocess.run([sys.executable, __file__, "--one", str(out), op_type], check=True, capture_output=True)


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        print("\n".join(write_op(Path(sys.argv[2]), sys.argv[3])))
    else:
        write(Path(sys.argv[1]), sys.argv[2:])

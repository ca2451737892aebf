"""Case files: the YAML schema (docs/case-format.md), loading with file:line errors, dumping."""

from poolcheck.cases.dump import dump_cases, write_cases
from poolcheck.cases.load import build_spec, iter_case_files, load_file, load_paths
from poolcheck.cases.model import Case

__all__ = ["Case", "build_spec", "dump_cases", "iter_case_files", "load_file", "load_paths",
           "write_cases"]

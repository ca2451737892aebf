"""The typer application. Commands only parse options and delegate; errors map to exit codes
in one place (:func:`poolcheck.cli.common.fail`)."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="poolcheck",
    help="Spec-conformance and differential fuzzing for pooling operators (MaxPool, AvgPool).",
    rich_markup_mode="rich",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: One module per command group under poolcheck/cli/; each defines ``register(app)``.
COMMAND_MODULES = ["run", "shape", "report", "doctor", "fuzz", "bench"]

for _name in COMMAND_MODULES:
    importlib.import_module(f"poolcheck.cli.{_name}").register(app)


def main() -> None:
    app()

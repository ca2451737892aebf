"""The typer application. Commands only parse options and delegate; errors map to exit codes
in one place (:func:`poolcheck.cli.common.fail`)."""

from __future__ import annotations

import importlib
from typing import Annotated, Any

import typer
import typer.core
import typer.rich_utils

import poolcheck
from poolcheck.cli.common import fail

app = typer.Typer(
    name="poolcheck",
    help="Spec-conformance and differential fuzzing for pooling operators (MaxPool, AvgPool).",
    rich_markup_mode="rich",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

def _readable_type(param: Any, ctx: Any) -> str | None:
    """The type column of ``--help``: nothing for flags and named arguments, the metavar when
    given, else a plain word (``INT``, ``PATH``, ``TEXT``) instead of typer's ``<list[Path]>``."""
    if getattr(param, "is_flag", False):
        return None
    if param.metavar is not None:
        return None if isinstance(param, typer.core.TyperArgument) else param.metavar
    label = typer.core.TyperArgument.display_type(param, ctx).strip("<>")
    label = {"str": "TEXT", "list[str]": "TEXT", "list[Path]": "PATH", "Path": "PATH", "float": "NUMBER"}.get(label, label)
    return label.upper() + ("..." if param.nargs != 1 else "")


typer.core.TyperOption.display_type_rich = _readable_type  # type: ignore[method-assign,assignment]
typer.core.TyperArgument.display_type_rich = _readable_type  # type: ignore[method-assign,assignment]

def _one_line_usage_error(self: Any) -> None:
    """A usage error the parser finds (an unknown option or command, a value that is not a number,
    a missing argument) as one line like poolcheck's own, instead of typer's five-line box."""
    if self.__class__.__name__ == "NoArgsIsHelpError":  # `poolcheck` alone prints the help
        return
    ctx = getattr(self, "ctx", None)
    hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
    fail(" ".join(self.format_message().split()) + hint)  # prints the line; typer exits with 2


typer.rich_utils.rich_format_error = _one_line_usage_error

#: One module per command group under poolcheck/cli/; each defines ``register(app)``.
COMMAND_MODULES = ["run", "shape", "report", "doctor", "fuzz", "bench", "audit", "export", "repro"]

for _name in COMMAND_MODULES:
    importlib.import_module(f"poolcheck.cli.{_name}").register(app)


def _version(value: bool) -> None:
    if value:

        typer.echo(f"poolcheck {poolcheck.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print poolcheck's version and exit.")] = False,
) -> None:
    """Spec-conformance and differential fuzzing for pooling operators (MaxPool, AvgPool)."""


def main() -> None:
    app()

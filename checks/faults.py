"""Exit statuses, and what happens when flightcheck itself breaks.

Every command follows one convention, so that a script can tell a broken design from a broken input
from a broken tool:

- :data:`EXIT_OK` (0): the check passed;
- :data:`EXIT_FAILED` (1): the thing checked is wrong (a property violated, an engine departing
  from the spec, a log that is not a run of the spec);
- :data:`EXIT_INPUT` (2): the input or the arguments are wrong (a malformed file, a bad option, a
  missing or corrupt model file);
- :data:`EXIT_FAULT` (3): flightcheck itself failed: an exception no command expected. That is a
  bug in flightcheck, never a verdict on what it checked: the user sees one line naming the
  exception and the file its traceback was written to, and no traceback.

:class:`FaultHandlingGroup` is the command group of the ``flightcheck`` app: whatever a command lets
escape is classified there (an :class:`~flightcheck.checks.inputs.InputError` or a
:class:`~flightcheck.impl.model_file.ModelFileError` that a command did not catch is still bad input,
exit 2; anything else is exit 3), so the rule holds for commands written tomorrow too.

:func:`culprit` tells, from a traceback, whose code raised: the engine under test (``impl``), the
design (``spec``) or flightcheck's checkers. ``check`` uses it to show a crashed stage as a failed
check when the thing checked raised, and as an error otherwise.

For example::

    >>> try:
    ...     {}["x"]
    ... except KeyError as error:
    ...     culprit(error)
    'flightcheck'
"""

from __future__ import annotations

import datetime
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup
from typer.exceptions import TyperException

if TYPE_CHECKING:
    import click

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_FAULT = 0, 1, 2, 3
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a program whose reader left

_ROOT = Path(__file__).resolve().parents[1]  # the folder that holds spec/, impl/ and checks/
_CHECKED = {"impl": "engine", "spec": "spec"}  # the code under check, by top-level folder


def culprit(error: BaseException) -> str:
    """Whose code raised ``error``: "engine" (``impl/``), "spec" (``spec/``) or "flightcheck" (the
    checkers, or a library they called), by the innermost frame of its traceback that lies in this
    project (a frame in numpy or the standard library is charged to the project code that called it)."""
    owner = "flightcheck"
    for frame, _line in traceback.walk_tb(error.__traceback__):
        try:
            rel = Path(frame.f_code.co_filename).resolve().relative_to(_ROOT)
        except ValueError:
            continue
        owner = _CHECKED.get(rel.parts[0], "flightcheck") if rel.parts else "flightcheck"
    return owner


def crash_dir() -> Path:
    """Where tracebacks of flightcheck's own faults are written: ``$FLIGHTCHECK_CRASH_DIR``, or the
    system's temporary folder."""
    return Path(os.environ.get("FLIGHTCHECK_CRASH_DIR") or tempfile.gettempdir())


def write_traceback(error: BaseException, argv: list[str] | None = None) -> Path | None:
    """Write ``error``'s traceback (and the command line) to a new file in :func:`crash_dir`; its path,
    or None when it could not be written."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        folder = crash_dir()
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"flightcheck-crash-{stamp}-", suffix=".txt", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as out:
            out.write("command: flightcheck " + " ".join(argv if argv is not None else sys.argv[1:]) + "\n\n")
            out.write("".join(traceback.format_exception(error)))
        return Path(name)
    except OSError:
        return None


def fault_message(error: BaseException, where: Path | None) -> str:
    """The one line a user reads for a fault of flightcheck (its type, a short message and where its
    traceback is)."""
    text = " ".join(str(error).split())
    if len(text) > 200:
        text = text[:200] + f"... ({len(text)} characters)"
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    kind = type(error).__name__
    tail = f"the traceback is in {where}" if where else "the traceback could not be written to " + str(crash_dir())
    return (f"flightcheck failed: this is a bug in flightcheck, not a verdict on what it checked "
            f"({kind}{': ' + text if text else ''}); {tail}")


def report_fault(error: BaseException) -> typer.Exit:
    """Write ``error``'s traceback to a file, print the one line, and return the exit (status 3) to raise."""
    import click

    where = write_traceback(error)
    click.echo("error: " + fault_message(error, where), err=True)
    return typer.Exit(EXIT_FAULT)


def _click_exits() -> tuple[type[BaseException], ...]:
    """click's own exit, usage and abort exceptions, when click is loaded (none can be raised before): typer
    has its own copy of click, so importing click for this alone would cost every command 10 ms."""
    click = sys.modules.get("click")
    if click is None or not hasattr(click, "ClickException"):
        return ()
    return (click.exceptions.Exit, click.ClickException, click.exceptions.Abort)


def _model_file_errors() -> tuple[type[BaseException], ...]:
    """The engine's ModelFileError when a command loaded its module (it cannot be raised otherwise):
    importing flightcheck.impl loads OpenBLAS, which explore, validate and check do not need."""
    module = sys.modules.get("flightcheck.impl.model_file")
    return (module.ModelFileError,) if module is not None and hasattr(module, "ModelFileError") else ()


class FaultHandlingGroup(TyperGroup):
    """The ``flightcheck`` command group: an exception a command lets escape is bad input (exit 2) when
    it is an input or model-file error, and a fault of flightcheck (exit 3) otherwise; never exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        from flightcheck.checks.errors import usage_error
        from flightcheck.checks.inputs import InputError

        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, TyperException, *_click_exits(), KeyboardInterrupt):
            raise  # typer's own usage errors (its vendored click's BadParameter...) and exits: typer prints them
        except (InputError, *_model_file_errors()) as error:
            raise usage_error(str(error)) from None
        except BrokenPipeError:  # `flightcheck ... | head`: the reader left; not a fault and not a verdict
            try:  # as Python's docs advise: point stdout at nothing so that the exit's flush cannot fail again
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError):
                pass
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        except Exception as error:  # noqa: BLE001 - the point: nothing unexpected reads as a verdict
            raise report_fault(error) from None

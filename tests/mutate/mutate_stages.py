"""Stages for the mutate tests: cheap stand-ins with the stage signature ``stage(ctx) -> list[Row]``.

The worker imports them by path like any stage (the tests put this folder on PYTHONPATH).
"""

from flightcheck.checks.suite.job import Row


def passing_stage(ctx):
    """Always passes: every mutant survives it."""
    return [Row("fake", "passes", True, f"quick={ctx.quick}")]


def failing_stage(ctx):
    """Always fails, with the evidence a conformance failure carries."""
    return [Row("fake", "fails", False, "broken on purpose",
                evidence={"failure": {"rules": ["engine(...)", "arrive(t0) -> r0", "step()"],
                                      "diagnosis": {"kind": "state", "summary": "differs",
                                                    "properties": ["refcounts_exact"]}}})]


def coordinations_stage(ctx):
    """Reports what the engine's coordinator module holds, and where it was loaded from."""
    from flightcheck.impl import coordinator

    return [Row("fake", "coordinations", True, repr(coordinator.COORDINATIONS),
                evidence={"file": coordinator.__file__, "loader": type(coordinator.__spec__.loader).__name__})]


def hidden_failure_stage(ctx):
    """Passes, yet carries a failure in its evidence (as a failure dropped while draining does)."""
    return [Row("fake", "hides", True, "ok", evidence={"failure": {"rules": ["step()"], "diagnosis": {
        "kind": "error", "summary": "the engine raised NameError during step", "properties": []}}})]


def server_package_stage(ctx):
    """Imports the server package (whose __init__ imports app and loop) and reports who loaded each
    module and whether a mutant's marker (``MUTANT_MARK``) is in it."""
    import sys

    import flightcheck.impl.server  # noqa: F401

    names = ("flightcheck.impl.server", "flightcheck.impl.server.app", "flightcheck.impl.server.loop")
    return [Row("fake", name, True, type(sys.modules[name].__spec__.loader).__name__,
                evidence={"marked": hasattr(sys.modules[name], "MUTANT_MARK"),
                          "same_app": getattr(sys.modules["flightcheck.impl.server"], "OpenAIApp", None)
                          is sys.modules["flightcheck.impl.server.app"].OpenAIApp})
            for name in names]


def first_schedule_stage(ctx):
    """The server stage's first controlled schedule alone, unshrunk (a short version of the stage)."""
    from flightcheck.checks.server.interleave import interleave_rows

    return interleave_rows(quick=True, seeds=[0], first_failure=True)

"""The main job, ``flightcheck check``: its stages, its recorded figures and how a run is judged.

- ``job``: runs the stages (:func:`~flightcheck.checks.suite.job.stage_table`, by import path), prints
  the summary, writes the report, turns the rows into a verdict (ok, failed or error) and records figures;
- ``stage_*``: one module per stage, each declaring its name, rows function ``stage(ctx) -> list[Row]``,
  dependencies, report section and recorded sections in one ``STAGE``;
- ``registry``: the stages in order and every table derived from their declarations;
- ``context``: what every stage runs with (``Context``) and the helpers they share (``parallel``...);
- ``expect``: the recorded figures (``expectations.json``), their schema, comparison and merging;
- ``defaults``: the scenario and depth each pair of designs is compared on (``check`` and ``equiv``);
- ``claims``: what each row establishes (proved for all sizes, for its scenario, or only bounded), the
  summary's count of them, and ``--require-proof``.

The command line (:mod:`flightcheck.checks.cli`) only parses ``check``'s options and calls
:func:`~flightcheck.checks.suite.job.run_suite`; a room that needs a row (the server campaign, the
mutation worker, the report) imports it from here, never from the CLI.
"""

"""Mutation testing of the engine: how many plausible engine bugs the checks of ``flightcheck check`` catch.

- ``operators``: the mutation operators (mutmut 3's node mutators, and the statement-level ones it lacks);
- ``skips``: the classes of mutants skipped up front as unable to change behaviour;
- ``generate``: one module's mutants, each with a stable ID and a diff;
- ``equivalent``: the committed file of survivors shown equivalent, with reasons;
- ``plan``: which files, which mutants, a sample;
- ``hook`` and ``worker``: one process per mutant, the mutated module served by an import hook;
- ``runner``: the baseline, the processes, timeouts, and each mutant's outcome;
- ``results`` and ``report``: outcomes, the score, and the report in JSON, Markdown and on the terminal.

This room imports ``impl`` only inside worker processes (through the stages it runs), never ``cli``.
"""

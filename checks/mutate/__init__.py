"""Mutation testing of the engine: how many plausible engine bugs the checks of ``flightcheck check`` catch.

- ``operators``: the mutation operators (mutmut 3's node mutators, and the statement-level ones it lacks);
- ``skips``: the classes of mutants skipped up front as unable to change behaviour;
- ``generate``: one module's mutants, each with a stable ID and a diff;
- ``equivalent``: the committed file of survivors shown equivalent, with reasons;
- ``config``: a run's options, checked and planned before anything runs;
- ``plan``: which files, which mutants, a sample; ``listing``: the plan printed (``--list``);
- ``hook`` and ``worker``: one process per mutant, the mutated module served by an import hook;
- ``runner``: the baseline, the processes, timeouts, and each mutant's outcome;
- ``campaign``: one run from its plan to its record: the baseline, the mutants, the files written;
- ``results`` and ``report``: outcomes, the score, and the report in JSON, Markdown and on the terminal;
- ``threshold``: the score against ``--min-score``.

This room imports ``impl`` only inside worker processes (through the stages it runs), never ``cli``.
"""

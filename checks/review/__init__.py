"""Review a change the way it happens: what behaviour moved between two commits, and what to re-check.

``flightcheck check --baseline REF`` compares the working tree (the candidate, uncommitted changes
included, and said so) with the commit ``REF`` names: REF is checked out into a temporary ``git
worktree`` (removed afterwards, also on error), and each side is explored by *its own* code, in its
own process whose ``flightcheck.*`` imports resolve to its own tree (:mod:`.bootstrap`; nothing of the
candidate leaks into the baseline, and each side's summary names where it imported from). Both sides
explore every default scenario under every policy of its grid (with symmetry, as the ``explore``
stage does) and every design variant, and write a JSON summary (:mod:`.summary`). The comparison
(:mod:`.graphdiff`, a pure function of the two summaries) reports per scenario and policy the states
and edges added and removed, matched by the spec's own ``describe()`` of each state (so renumbered
states, reordered slots or another symmetry representative are no change), the shortest path to the
first added or removed edge, each verdict that moved and each counterexample that appeared, went away
or changed length; per variant the same, and whether it is still caught. A verdict that got worse is a
regression (exit 1); other changes are shown and fail only under ``--strict``
(:mod:`.present`). ``--json`` prints the whole review; the report folder keeps ``review.txt`` and
``review.json``.

``flightcheck check --since REF`` runs only the stages a change since ``REF`` can affect
(:mod:`.since`: by ``git diff --name-only REF`` and the untracked files, against what each stage declares
it depends on; a Python file whose code is unchanged, only its comments or layout, selects none), and says
which and why.

``flightcheck diff --base REF`` makes the same comparison for one scenario under one policy and draws the
two graphs as one, added states and edges green, removed red (:mod:`.base_diff`, :mod:`.drawing`).

Modules: :mod:`.gitrepo` (the git facts), :mod:`.baseline` (the worktree and the two processes),
:mod:`.bootstrap` and :mod:`.summary` (run inside each side's process), :mod:`.graphdiff`,
:mod:`.present`, :mod:`.since`, :mod:`.command` (what the two options do), :mod:`.base_diff` and
:mod:`.drawing` (``diff --base``), :mod:`.errors`.

Not compared (yet): the conformance corpus's event sequences when ``impl/`` changed, and the proofs.
"""

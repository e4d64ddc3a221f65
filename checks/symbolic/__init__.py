"""The engine's own guard/command pairs against the spec, at every engine state within a bound.

``check_engine(Bound(3, 6))`` builds every engine state reachable from an empty engine by the engine's
own public commands (``add_request``, ``can_admit``/``admit``, ``can_prefill``/``prefill``, ...,
``abort``, ``expire``, ``fail``) within the bound (N requests drawn from a prompt tree of templates, M
pages), and at each state checks, action by action, that the engine's guard agrees with the spec's guard
on the state's abstraction and that the command's events and resulting state agree with the spec's update
(:mod:`~flightcheck.checks.symbolic.obligations`). Two strategies cover the bound: exhaustive enumeration
of the reachable states, one per class of states the engine cannot tell apart
(:mod:`~flightcheck.checks.symbolic.exhaustive`, the default; the classes and why they are sound:
:mod:`~flightcheck.checks.symbolic.statekey`) and CrossHair's
symbolic execution of the same harness over symbolic command codes
(:mod:`~flightcheck.checks.symbolic.crosshair_run`). CrossHair runs the engine's code unmodified but
costs about 3-4 s a path here and merges no states (bound N=1, M=3: every 2-command path, 19 paths, in
70 s; 3 commands unfinished after 250 s, where the enumeration covers all 37 states of that bound in
0.2 s), so the enumeration is the default and CrossHair a second reading for short paths. A failure comes back as a concrete engine path and
action, and as a conformance program ``flightcheck conform --replay`` runs
(:mod:`~flightcheck.checks.symbolic.counterexample`).
"""

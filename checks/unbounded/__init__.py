"""Proofs for any number of requests: a relational reading of the design, proved with z3 for all sizes.

The finite spec (:mod:`flightcheck.spec`) fixes a scenario: so many requests, classes and pages. This
room reads the same design over *unbounded* sorts and proves its safety properties by induction for
every size at once:

- :mod:`.signature`: the sorts (requests, which also name flights; prompt classes; pages) and the static
  prompt structure, read over finite domains or over z3 uninterpreted sorts;
- :mod:`.state`: a state's components (per request, per flight, per class, per page) as functions and
  relations; :mod:`.config`: the policy and environment a proof is about;
- :mod:`.model`: every action as a guard and an update parameterised by its argument, transcribed from
  ``spec/model.py`` and ``spec/endings.py``; :mod:`.variants`: the design-history variants as overrides;
- :mod:`.invariants`: the safety properties in relational form and the quantified lemmas;
- :mod:`.abstraction` and :mod:`.drift`: the abstraction function from a finite state and the drift
  check (the model at a scenario's size agrees with the explorer's graph, edge for edge);
- :mod:`.checker`: initiation and consecution of every candidate over every action (Houdini: the largest
  inductive subset), one z3 query each with a timeout; :mod:`.result`: verdicts and counterexamples to
  induction; :mod:`.render`: text and JSON.

What "for all sizes" covers, and what it does not, is in docs/proofs.md ("Proofs for all sizes").
"""

"""Checkers over the spec and the engine, one room per concern.

- ``explore``: the explicit-state explorer, its results and counterexamples, pictures of the graph;
- ``proofs``: the spec read symbolically by z3: bounded model checking, k-induction, equivalence;
- ``conform``: the bridge to the real engine: abstraction, trace validation, the online monitor,
  lockstep campaigns, replay, coverage, the probe and the deliberately broken engines;
- ``workload``: how much a real request trace would gain from single-flight at all;
- ``cli``: the ``flightcheck`` command line and the ``check`` suite;
- ``inputs`` (a module, not a room): the strict reading rules every room's file formats share
  (UTF-8, blank lines, JSON lines, typed fields), failing with an ``InputError`` naming file, line and field.

Each room may import ``spec`` and ``inputs``; ``conform`` (and ``cli``) also import ``impl``; ``cli`` imports every room;
no room imports ``cli``. docs/architecture.md draws the whole map.
"""

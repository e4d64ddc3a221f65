"""Checkers over the spec and the engine, one room per concern.

- ``explore``: the explicit-state explorer, its results and counterexamples, pictures of the graph;
- ``proofs``: the spec read symbolically by z3: bounded model checking, k-induction, equivalence;
- ``conform``: the bridge to the real engine: abstraction, trace validation, the online monitor,
  lockstep campaigns, replay, coverage, the probe and the deliberately broken engines;
- ``workload``: how much a real request trace would gain from single-flight at all;
- ``unbounded``: the relational model, proofs for any number of requests, pages and flights;
- ``server``, ``outside``, ``bench``, ``promela``, ``mutate``, ``review``, ``report``: the server under
  raw HTTP clients, the probe of a server by URL, the seed's experiments, the SPIN export, mutation
  testing, what a refactor changed, and the report;
- ``suite``: the main job, ``flightcheck check``: its stages, recorded figures and verdict;
- ``cli``: the ``flightcheck`` commands, each parsing options and calling a room;
- ``inputs``, ``errors``, ``faults`` (modules, not rooms): the strict reading rules every file format
  shares (an ``InputError`` naming file, line and field), how a command reports bad arguments (exit 2),
  and the exit statuses with what happens when flightcheck itself breaks (exit 3).

docs/architecture.md holds the table of what each room may import (tests/test_architecture.py enforces
it: no room imports ``cli``) and the path of one request from the server to the monitor.
"""

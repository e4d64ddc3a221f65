"""The server under the checks: seeded HTTP client programs against the real server, and their oracle.

``impl/server/`` (the OpenAI-compatible server: Starlette handlers on uvicorn's event loop, the engine on
its own thread) is where clients disconnect at any moment, streams go unread and aborts race with
steps. This room runs that server in-process over the tiny model and drives it with raw HTTP clients:

- :mod:`.program`: a program (an engine config and a script of clients) drawn from a seed, saved as JSON;
- :mod:`.client`: a raw HTTP/1.1 client that can misbehave on purpose (disconnect, half-close, stall);
- :mod:`.harness`: one program run against a fresh server, and the oracle (prompt aborts, streams that
  end, outputs equal to the engine's, nothing left live, pages back, the event log a run of the spec,
  no 5xx, malformed bodies refused);
- :mod:`.campaign`: the ``server`` stage of ``flightcheck check``, shrinking and replay;
- :mod:`.mutants`: server bugs planted by monkeypatching, which the stage must catch.
"""

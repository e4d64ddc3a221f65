"""The ``server`` stage of ``flightcheck check``, declared here and run by the server campaign.

Its rows come from :func:`flightcheck.checks.server.campaign.server_stage` (seeded schedules under the
controlled scheduler, seeded programs of HTTP clients against the real server, a row per ``serve``
option that changes what the server does). The suite may not import ``checks/server`` (which imports the
suite), so the stage names its rows function by import path: a server whose dependencies are missing is
an error row, not a broken job. It runs the whole engine behind the server, so every engine file is one of
its dependencies; ``flightcheck mutate`` runs it on the server's modules and on the two engine files
whose mutants the engine stages leave alive (the client API and the forward pass).
"""

from __future__ import annotations

from flightcheck.checks.suite.registry import Stage

STAGE = Stage(
    "server", "flightcheck.checks.server.campaign:server_stage",
    depends=("spec/**", "impl/**", "checks/server/**", "checks/conform/**", "checks/explore/**"),
    kills=("impl/server/**", "impl/engine.py", "impl/runner.py"), kill_rank=2,
)

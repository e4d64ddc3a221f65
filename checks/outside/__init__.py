"""The outside probe (``flightcheck probe --url``): how much prefill a live OpenAI-compatible server
repeats when identical or prefix-sharing requests reach it together at a cold cache.

:mod:`.client` speaks HTTP to the server (bounded, every stream closed on exit), :mod:`.probe` runs the
shapes, :mod:`.verdict` turns the server's own reports into computations per shared page and a verdict
per shape, :mod:`.report` prints them as text, JSON or a static HTML page with plots.
"""

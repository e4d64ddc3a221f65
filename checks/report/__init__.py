"""The report of ``flightcheck check --report`` and the generated walkthrough (``flightcheck docs``).

A model of what is shown, built from the suite's rows and a few cheap recomputations
(:mod:`~flightcheck.checks.report.build`), apart from how it is written: the sequence diagrams as SVG
(:mod:`~flightcheck.checks.report.svg_sequence`), the report as one static HTML page with its state-graph
pages beside it (:mod:`~flightcheck.checks.report.html_page`), the walkthrough as Markdown with its pictures
(:mod:`~flightcheck.checks.report.walkthrough`, :mod:`~flightcheck.checks.report.markdown`).
"""

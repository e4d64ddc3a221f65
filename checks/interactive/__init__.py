"""The interactive explorer: step through the design in a browser (``flightcheck explorer``).

A local web app that computes successors on demand from the spec, so it works on scopes far too large
to draw. Every page is one URL: the design (scenario, policy, variant, or a loaded engine log), the path
of actions taken and the step shown, so a link to a state survives a reload.

- :mod:`.design`: what is explored, read from a URL's query (every bad value a clear error), and every
  knob of a design as a control (derived from the spec's ``Policy``);
- :mod:`.view`: one state of a path as the page shows it (slots changed, enabled and disabled actions
  with the spec's reasons and the false conjuncts of their guards, grouped by reason, properties, the
  sequence diagram so far) and the legend of its words;
- :mod:`.loading`: paths from elsewhere (any property's shortest counterexample, every property a design
  violates, a replay file, an engine event log) and the comparison of a path under another value of a knob;
- :mod:`.app`: the Starlette app serving the page (``page.html``, ``page.js``) and its JSON API.
"""

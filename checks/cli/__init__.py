"""The ``flightcheck`` command line (one module per command family) and the ``check`` suite."""

"""Data shipped with flightcheck: the two Mooncake request traces (``traces/``, Apache-2.0, see NOTICE.md).

A package only so that the files install with flightcheck (``flightcheck.data``); it has no code.
"""

"""Switches every test module reads: one definition each.

``SLOW``: FLIGHTCHECK_SLOW=1 runs the long versions of the tests marked ``slow``; by default each runs
a short version, so the whole suite stays within its time on a 2-core machine.
"""

import os

SLOW = os.environ.get("FLIGHTCHECK_SLOW", "") not in ("", "0")

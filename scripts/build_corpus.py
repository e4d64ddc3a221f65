"""Build the conformance regression corpus (checks/conform/corpus.json): python scripts/build_corpus.py [SECONDS]."""

import sys
import time

from flightcheck.checks.conform import corpus

if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    t0 = time.perf_counter()
    entries = corpus.build_all(seconds=seconds, progress=lambda e: print(
        f"{e.key:55s} {e.num_covered:5d}/{e.num_edges:<5d} edges, {len(e.programs):3d} programs; missed {e.missed}",
        flush=True))
    corpus.save(entries)
    print(f"{len(entries)} entries, {sum(len(e.programs) for e in entries)} programs, "
          f"{time.perf_counter() - t0:.0f} s -> {corpus.CORPUS_PATH}")

"""The counters of the workload opportunity model for one phase: :class:`PhaseCounts`.

A result type only: :mod:`flightcheck.checks.workload.opportunity` fills it (its docstring defines every counter),
and summing two (``+``) merges their counts and fan-in histograms, so instances and phases add up exactly.

For example::

    >>> a = PhaseCounts(2, 1, 3, 2, ((1, 1), (2, 1)), 1)
    >>> b = PhaseCounts(1, 0, 3, 1, ((3, 1),), 0)
    >>> s = a + b
    >>> (s.num_removable_attempts, s.num_exact_input_removable, s.num_partial_prefix_removable, s.fan_in_max)
    (3, 1, 2, 3)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PhaseCounts:
    """The counters of one phase (of one instance, or summed over instances); fan-in as a histogram."""

    num_requests: int
    num_hits: int
    num_cold_attempts: int
    num_cohorts: int
    fan_in_histogram: tuple[tuple[int, int], ...]  # sorted (fan_in, number of cohorts)
    num_exact_input_removable: int  # followers whose request has the same hash_ids as the cohort's opener

    @property
    def num_block_lookups(self) -> int:
        """Hits plus cold attempts."""
        return self.num_hits + self.num_cold_attempts

    @property
    def num_duplicate_cohorts(self) -> int:
        """Cohorts with fan-in of 2 or more."""
        return sum(n for f, n in self.fan_in_histogram if f >= 2)

    @property
    def num_removable_attempts(self) -> int:
        """Cold attempts single-flight would remove: cold attempts minus cohorts."""
        return self.num_cold_attempts - self.num_cohorts

    @property
    def redundancy_ratio(self) -> float | None:
        """Removable over cold attempts (None when there were no cold attempts)."""
        return self.num_removable_attempts / self.num_cold_attempts if self.num_cold_attempts else None

    @property
    def num_partial_prefix_removable(self) -> int:
        """Removable attempts whose request's input differs from its cohort opener's: removable - exact-input."""
        return self.num_removable_attempts - self.num_exact_input_removable

    @property
    def exact_input_ratio(self) -> float | None:
        """Exact-input removable attempts over cold attempts (None when there were no cold attempts)."""
        return self.num_exact_input_removable / self.num_cold_attempts if self.num_cold_attempts else None

    @property
    def partial_prefix_ratio(self) -> float | None:
        """Partial-prefix removable attempts over cold attempts (None when there were no cold attempts)."""
        return self.num_partial_prefix_removable / self.num_cold_attempts if self.num_cold_attempts else None

    def fan_in_percentile(self, p: float) -> int | None:
        """Nearest-rank percentile of the cohorts' fan-in: the smallest f with at least ceil(p% of cohorts) <= f."""
        if not self.num_cohorts:
            return None
        rank = max(1, -(-p * self.num_cohorts // 100))
        seen = 0
        for f, n in self.fan_in_histogram:
            seen += n
            if seen >= rank:
                return f
        raise AssertionError("histogram total differs from num_cohorts")

    @property
    def fan_in_median(self) -> int | None:
        """Nearest-rank median fan-in (the lower median)."""
        return self.fan_in_percentile(50)

    @property
    def fan_in_p99(self) -> int | None:
        """Nearest-rank 99th-percentile fan-in."""
        return self.fan_in_percentile(99)

    @property
    def fan_in_max(self) -> int | None:
        """The largest fan-in."""
        return self.fan_in_histogram[-1][0] if self.fan_in_histogram else None

    def __add__(self, other: PhaseCounts) -> PhaseCounts:
        merged = Counter(dict(self.fan_in_histogram))
        merged.update(dict(other.fan_in_histogram))
        return PhaseCounts(self.num_requests + other.num_requests, self.num_hits + other.num_hits,
                           self.num_cold_attempts + other.num_cold_attempts, self.num_cohorts + other.num_cohorts,
                           tuple(sorted(merged.items())),
                           self.num_exact_input_removable + other.num_exact_input_removable)


EMPTY = PhaseCounts(0, 0, 0, 0, (), 0)


def counts_of(num_requests: int, num_hits: int, fans: list[int], num_exact: int) -> PhaseCounts:
    """The counts of a phase from its requests, hits, each cohort's fan-in and the exact-input followers."""
    return PhaseCounts(num_requests, num_hits, sum(fans), len(fans), tuple(sorted(Counter(fans).items())), num_exact)

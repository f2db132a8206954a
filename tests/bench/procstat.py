"""What the TUI benchmarks read about their own process (imported by the bench scripts, not collected)."""

from __future__ import annotations


def rss_mb() -> float:
    """This process's resident set size (VmRSS) in MiB; 0.0 where /proc does not say."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0

"""Latency distributions (empirical CDFs, log time axis): one panel per section and concurrency level.

Sample keys are ``group|series|concurrency`` (see relay_bench); baselines are dotted. In the stores panels only
the first store's baseline is drawn (each store has its own, and they differ only by noise).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels: dict[tuple[str, int], list[tuple[str, list[float]]]] = defaultdict(list)
    for key, values in results.get("samples_ms", {}).items():
        group, series, c = key.split("|")
        if values:
            panels[(group, int(c))].append((series, sorted(values)))
    if not panels:
        raise ValueError("no latency samples to plot: run the roundtrip or stores section")
    keys = sorted(panels, key=lambda k: (k[0] != "round trips", k[0], k[1]))
    cols = min(3, len(keys))
    rows = (len(keys) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.8 * cols, 4.4 * rows), squeeze=False)
    for ax, (group, c) in zip(axes.flat, keys, strict=False):
        baseline_drawn = False
        for series, values in panels[(group, c)]:
            is_base = series.endswith("baseline")
            if is_base and group == "stores":
                if baseline_drawn:
                    continue
                series = "baseline"
            baseline_drawn = baseline_drawn or is_base
            n = len(values)
            ax.step(
                values,
                [(i + 1) / n for i in range(n)],
                where="post",
                linestyle=":" if is_base else "-",
                color="black" if is_base else None,
                label=f"{series} (n={n})",
            )
        ax.set_xscale("log")
        ax.set_title(f"{group}: {c} concurrent session pair{'s' if c != 1 else ''}")
        ax.set_xlabel("latency (ms, log scale)")
        ax.set_ylabel("fraction of calls at or below")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    for ax in list(axes.flat)[len(keys) :]:
        ax.set_visible(False)
    m = results["machine"]
    fig.suptitle(f"codap-relay latency vs baseline: {m['date']}, {m['cpus']} CPUs, Python {m['python']}")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)

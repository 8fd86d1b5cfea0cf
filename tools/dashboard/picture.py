"""One dashboard panel's query results drawn as a PNG (Debian's python3-matplotlib, from
tools/install-deps --tools), for the documentation: what the panel shows, from a real run.

- legend(format, metric): Grafana's {{label}} legend format filled in from a series' labels
- draw(path, title, unit, series): series is [(legend, [(epoch seconds, value), ...])];
  the x axis is seconds from the first sample
"""

import math
import re


def legend(legend_format, metric):
    text = re.sub(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}", lambda m: metric.get(m.group(1), ""), legend_format or "")
    return text.strip() or "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(metric.items())) + "}"


def draw(path, title, unit, series, subtitle=None):
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    start = min(t for _, points in series for t, _ in points)
    figure, axes = pyplot.subplots(figsize=(9, 4.2), dpi=100)
    axes.set_prop_cycle(color=pyplot.cm.tab20.colors)
    for name, points in sorted(series, key=lambda s: -max((v for _, v in s[1] if math.isfinite(v)), default=0)):
        axes.plot([t - start for t, _ in points], [v for _, v in points], linewidth=1.6, label=name)
    axes.set_title(title, loc="left", fontsize=12)
    if subtitle:
        figure.text(0.01, 0.01, subtitle, fontsize=8, color="#555555")
    axes.set_xlabel("seconds")
    axes.set_ylabel(unit)
    axes.set_ylim(bottom=0)
    axes.grid(True, color="#dddddd", linewidth=0.6)
    axes.spines[["top", "right"]].set_visible(False)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    figure.tight_layout(rect=(0, 0.04, 1, 1))
    figure.savefig(path)
    pyplot.close(figure)

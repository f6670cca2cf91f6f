"""The matplotlib figure of ``rlconf plot``: one subplot per metric over env steps, a line per
run and a mean line with a min-max band per seed group.

matplotlib is an optional extra (``pip install 'rlconf[plot]'``): only ``rlconf plot`` imports
this module, and it falls back to sparklines when the import fails. The figure is drawn with
the Agg canvas directly, not through pyplot: no display is needed, and no backend or global
figure state of the calling program is touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rlconf.results_folders import STEPS_KEY, TIME_KEY
from rlconf.seed_groups import Band, Panel

#: Inches of one subplot (width, height).
_PANEL_SIZE = (9.0, 3.6)
#: Opacity of a seed group's min-max band.
_BAND_ALPHA = 0.25


def build_figure(panels: Sequence[Panel]) -> Figure:
    """The figure of ``panels``, top to bottom. A run or group keeps its colour in every
    subplot (colours are given by label, in order of first appearance)."""
    width, height = _PANEL_SIZE
    figure = Figure(figsize=(width, height * len(panels)), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    colours: dict[str, str] = {}
    for ax, panel in zip(axes, panels, strict=True):
        for line in panel.lines:
            colour = colours.setdefault(line.label, f"C{len(colours) % 10}")
            if isinstance(line, Band):
                ax.fill_between(
                    line.steps, line.low, line.high, color=colour, alpha=_BAND_ALPHA, linewidth=0
                )
                ax.plot(line.steps, line.mean, color=colour, label=line.label)
            else:
                # A marker shows the points of a sparse curve (evaluation every N iterations).
                marker = "o" if len(line.steps) < 30 else None
                ax.plot(
                    line.steps,
                    line.values,
                    color=colour,
                    marker=marker,
                    markersize=3,
                    label=line.label,
                )
        ax.set_title(panel.metric)
        ax.grid(alpha=0.3)
        if panel.lines:
            ax.legend(fontsize="small")
        else:
            ax.text(0.5, 0.5, "no values yet", ha="center", va="center", transform=ax.transAxes)
    over_time = bool(panels) and panels[0].x == "time"
    axes[-1].set_xlabel(f"wall time, s ({TIME_KEY})" if over_time else f"env steps ({STEPS_KEY})")
    return figure


def write_figure(figure: Figure, path: Path) -> None:
    """Write ``figure`` in the format of ``path``'s suffix (png, svg, pdf...)."""
    figure.savefig(path, dpi=100)

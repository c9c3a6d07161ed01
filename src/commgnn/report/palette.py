"""One colour per system in every figure, from Paul Tol's colour-blind-safe "muted"
palette: each system declares its own (``System.colour``, in its module); a named variant
of a system (``dgl-global``, ``greendygnn-heuristic``) takes its base's colour with a hatch
(bars) or line style (lines) of its own. The comparison figure styles its bars itself;
every other figure is styled on saving (:func:`style_by_system`, from the labels its series
carry: system names or the papers' method names, each system's ``figure_labels``)."""

from __future__ import annotations

import re

#: Paul Tol's muted palette (https://personal.sron.nl/~pault/), in his order, and its grey.
MUTED = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677",
         "#882255", "#AA4499")
GREY = "#DDDDDD"
HATCHES = ("", "//", "..", "xx", "\\\\", "oo", "--", "++")


#: The systems' declarations (:func:`use_declarations`; none until given).
_given: dict[str, dict] = {}


def use_declarations(declared: dict[str, dict]) -> None:
    """Take ``{system: {"colour": …, "figure_labels": …}}`` as the systems' declarations
    (``commgnn figure`` takes them from ``--systems``, which the workflow passes so that
    figure jobs need not import every system, and torch with it, or else from
    :func:`commgnn.catalog.system_declarations`)."""
    global _given
    _given = {name: dict(d) for name, d in declared.items()}


def declarations() -> dict[str, dict]:
    """``{system: {"colour", "figure_labels"}}`` as given (:func:`use_declarations`)."""
    return _given


def system_colour(base_system: str) -> str:
    """The colour ``base_system`` declares (one that declares none, or an unknown name: a
    palette colour by its name)."""
    declared = declarations().get(base_system, {}).get("colour")
    return declared or MUTED[sum(map(ord, base_system)) % len(MUTED)]


def system_styles(entries: list[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """``{entry: (colour, hatch)}`` for ``(entry, base system)`` pairs: the base's colour,
    and a hatch per entry of the same base (in sorted order: the base system itself, when
    present, plain)."""
    styles: dict[str, tuple[str, str]] = {}
    by_base: dict[str, list[str]] = {}
    for entry, base in entries:
        by_base.setdefault(base, []).append(entry)
    for base, names in by_base.items():
        ordered = sorted(set(names), key=lambda n: (n != base, n))
        for i, name in enumerate(ordered):
            styles[name] = (system_colour(base), HATCHES[i % len(HATCHES)])
    return styles


#: Line styles that tell apart two series of one system in a figure (as hatches do bars).
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1)), (0, (1, 3)))
def label_system(label: str) -> str | None:
    """The system a figure's series label names (None: not a system's, e.g. "paper"): a
    system's name, ``<name>-<variant>``, or a match of its ``figure_labels``."""
    systems = declarations()
    head = label.split("-")[0].split(" ")[0]
    for name in (label, head):
        if name in systems:
            return name
    for name, declared in systems.items():
        if declared.get("figure_labels") and re.match(declared["figure_labels"], label):
            return name
    return None


class _FigureStyles:
    """Each label's (colour, variant number) in one figure: the system's colour, and the
    labels of one system numbered in order of first appearance (0 drawn plain)."""

    def __init__(self) -> None:
        self.styles: dict[str, tuple[str, int]] = {}
        self._count: dict[str, int] = {}

    def of(self, label: str) -> tuple[str, int] | None:
        if label not in self.styles:
            system = label_system(label)
            if system is None:
                return None
            n = self._count.get(system, 0)
            self._count[system] = n + 1
            self.styles[label] = (system_colour(system), n)
        return self.styles[label]


def _style_patch(patch, style: tuple[str, int]) -> None:
    colour, n = style
    patch.set_facecolor(colour)
    patch.set_hatch(HATCHES[n % len(HATCHES)] or None)


def _style_line(line, style: tuple[str, int]) -> None:
    colour, n = style
    line.set_color(colour)
    line.set_linestyle(LINESTYLES[n % len(LINESTYLES)])


def _tick_labels(ax, container) -> list[str]:
    horizontal = getattr(container, "orientation", "vertical") == "horizontal"
    return [t.get_text() for t in (ax.get_yticklabels() if horizontal
                                   else ax.get_xticklabels())]


def style_by_system(fig) -> None:
    """Give every series of ``fig`` that a system ran its system's colour (bars, lines,
    error bars, by their labels; a single bar series by its tick labels), a hatch or line
    style per further series of the same system, and the legends the same."""
    from matplotlib.container import BarContainer, ErrorbarContainer  # deferred: imports matplotlib
    from matplotlib.lines import Line2D  # deferred: imports matplotlib
    from matplotlib.patches import Patch  # deferred: imports matplotlib

    styles = _FigureStyles()
    for ax in fig.axes:
        for container in ax.containers:
            style = styles.of(str(container.get_label()))
            if isinstance(container, BarContainer):
                if style is not None:
                    for patch in container.patches:
                        _style_patch(patch, style)
                    continue
                ticks = _tick_labels(ax, container)
                if len(ticks) == len(container.patches):
                    for patch, tick in zip(container.patches, ticks, strict=True):
                        if (tick_style := styles.of(tick)) is not None:
                            _style_patch(patch, tick_style)
            elif isinstance(container, ErrorbarContainer) and style is not None:
                data_line, _caps, bars = container.lines
                if data_line is not None:
                    _style_line(data_line, style)
                for collection in bars:
                    collection.set_color(style[0])
        for line in ax.get_lines():
            label = str(line.get_label())
            if not label.startswith("_") and (style := styles.of(label)) is not None:
                _style_line(line, style)
    for legend in [*(ax.get_legend() for ax in fig.axes), *fig.legends]:
        if legend is None:
            continue
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=False):
            if (style := styles.styles.get(text.get_text())) is None:
                continue
            if isinstance(handle, Patch):
                _style_patch(handle, style)
            elif isinstance(handle, Line2D):
                _style_line(handle, style)

"""One colour per system in every comparison figure: Paul Tol's colour-blind-safe "muted"
palette, fixed per base system (the oracle, the compute-only limit, in grey); a named
variant of a system (``dgl-global``, ``greendygnn-heuristic``) takes its base's colour
with a hatch of its own."""

from __future__ import annotations

#: Paul Tol's muted palette (https://personal.sron.nl/~pault/), in his order.
MUTED = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677",
         "#882255", "#AA4499")
GREY = "#DDDDDD"
SYSTEM_COLOURS = {
    "default": "#332288", "hopgnn": "#88CCEE", "greendygnn": "#44AA99",
    "rapidgnn": "#117733", "bgl": "#999933", "clustergcn": "#DDCC77", "grappa": "#CC6677",
    "p3": "#882255", "distdgl": "#AA4499", "oracle": GREY,
}
HATCHES = ("", "//", "..", "xx", "\\\\", "oo", "--", "++")


def system_colour(base_system: str) -> str:
    """The colour of ``base_system`` (an unknown one: a palette colour by its name)."""
    if base_system in SYSTEM_COLOURS:
        return SYSTEM_COLOURS[base_system]
    return MUTED[sum(map(ord, base_system)) % len(MUTED)]


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

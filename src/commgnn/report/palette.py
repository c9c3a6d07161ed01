"""One colour per system in every comparison figure, from Paul Tol's colour-blind-safe
"muted" palette: each system declares its own (``System.colour``, in its module); a named
variant of a system (``dgl-global``, ``greendygnn-heuristic``) takes its base's colour with
a hatch of its own."""

from __future__ import annotations

from commgnn.systems.registry import discover

#: Paul Tol's muted palette (https://personal.sron.nl/~pault/), in his order, and its grey.
MUTED = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677",
         "#882255", "#AA4499")
GREY = "#DDDDDD"
HATCHES = ("", "//", "..", "xx", "\\\\", "oo", "--", "++")


def system_colour(base_system: str) -> str:
    """The colour ``base_system`` declares (one that declares none, or an unknown name: a
    palette colour by its name)."""
    declared = getattr(discover().get(base_system), "colour", None)
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

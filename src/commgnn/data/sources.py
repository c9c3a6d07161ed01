"""Dispatch from a validated dataset spec (``config.yaml: datasets.<name>``) to its source."""

from __future__ import annotations

from pathlib import Path

from commgnn.data import reddit
from commgnn.data.rmat import generate_rmat
from commgnn.data.store import GraphDataset
from commgnn.data.synthetic import generate_synthetic


def build_dataset(name: str, spec: dict, raw_dir: Path | None = None) -> GraphDataset:
    """Generate, or convert (downloading into ``raw_dir`` if needed), the dataset ``spec``.

    ``raw_dir`` is where :func:`download` put a network source's files; without it the
    spec's ``root`` (or ``data/<source>``) is used.
    """
    source = spec["source"]
    if source == "synthetic":

        return generate_synthetic(spec, name=name)
    if source == "rmat":

        return generate_rmat(spec, name=name)
    if source == "planetoid":
        from commgnn.data.planetoid import load_planetoid  # deferred: imports scipy

        return load_planetoid(spec["name"], Path(spec["path"]))
    if source == "ogb":
        from commgnn.data.ogb_source import load_ogb  # deferred: imports pandas

        return load_ogb(spec["name"], raw_dir or Path(spec.get("root", "data/ogb")))
    if source == "reddit":

        kwargs = {k: spec[k] for k in ("url", "sha256") if k in spec}
        return reddit.load_reddit(raw_dir or Path(spec.get("root", "data/reddit")), **kwargs)
    raise ValueError(f"unknown dataset source {source!r}")


def needs_network(spec: dict) -> bool:
    """True for sources that download (their Snakemake rules run locally, not on a cluster)."""
    return spec["source"] in ("ogb", "reddit")


def download(spec: dict, raw_dir: Path) -> Path:
    """Fetch a network source's raw files into ``raw_dir`` (verified, then converted later)."""
    if spec["source"] == "ogb":
        from commgnn.data.ogb_source import download_ogb  # deferred: imports pandas

        return download_ogb(spec["name"], raw_dir)
    if spec["source"] == "reddit":

        kwargs = {k: spec[k] for k in ("url", "sha256") if k in spec}
        return reddit.download_reddit(raw_dir, **kwargs)
    raise ValueError(f"dataset source {spec['source']!r} has nothing to download")

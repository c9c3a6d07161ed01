"""The built wheel is complete: installed into a fresh environment, it validates a config.

The fresh venv gets commgnn only from the wheel; its dependencies come from the test
environment's site-packages through a ``.pth`` line (whose own ``.pth`` files — among
them the editable install's — are not processed), so nothing is downloaded.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)


def test_wheel_installs_and_validates_the_default_config(repo_root, tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    shutil.copytree(repo_root / "src", source / "src",
                    ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(repo_root / name, source / name)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(wheels), str(source)], check=True)
    (wheel,) = wheels.glob("commgnn-*.whl")

    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=False)
    python = fresh / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                    "--quiet", "--no-deps", str(wheel)], check=True)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                           "'purelib'))"], capture_output=True, text=True, check=True)
    Path(site.stdout.strip(), "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")

    where = subprocess.run([str(python), "-c", "import commgnn; print(commgnn.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path)
    assert where.stdout.startswith(str(fresh))  # the wheel's copy, not the checkout
    proc = subprocess.run([str(fresh / "bin" / "commgnn"), "validate",
                           str(repo_root / "config.yaml")],
                          capture_output=True, text=True, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "valid" in proc.stdout

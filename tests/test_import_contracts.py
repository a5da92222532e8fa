"""The layers hold (``lint-imports`` passes on the tree), and the contracts are not hollow: the
same check fails on a copy of the tree with a forbidden import added."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PACKAGES = [
    "config",
    "core",
    "metrics",
    "projects",
    "webhooks",
    "annotation",
    "crowd",
    "llm_judges",
    "agreement",
    "studies",
    "task_types",
]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_tree_keeps_its_import_contracts():
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 4 kept, 0 broken." in result.stdout


def test_a_forbidden_import_breaks_the_contracts(tmp_path):
    for name in PACKAGES:
        if name in ("metrics", "projects"):
            shutil.copytree(
                REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            (tmp_path / name).symlink_to(REPO / name)
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "metrics" / "leak.py").write_text("import django  # noqa\n")
    (tmp_path / "projects" / "leak.py").write_text("from studies import demos  # noqa\n")

    result = lint_imports(tmp_path)

    assert result.returncode != 0
    said = " ".join(result.stdout.split())  # long lines are wrapped
    assert "The metrics core imports neither Django nor any Concord app BROKEN" in result.stdout
    assert "Apps in layers: a lower app never imports a higher one BROKEN" in result.stdout
    assert "projects.leak -> studies.demos" in said

"""The fast loop's test database: kept between runs (pytest-django's ``--reuse-db``) under a
name keyed by the migrations, so a run after a change to any migration builds a fresh one.

``make test-task`` and ``make test-file`` pass ``--reuse-db``; ``make test`` does not and
creates the test database from the migrations every time, as CI does. The first reusing run
migrates a database (``.test-db/sqlite-<key>.sqlite3`` on SQLite, ``test_<name>_<key>`` on
PostgreSQL) and leaves it; a later run only checks that no migration is unapplied. A SQLite file
of another key is removed when a new one is made; PostgreSQL databases of old keys are left
(``dropdb`` them, or run once with ``--create-db``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDER = REPO / ".test-db"


def migration_files(repo: Path = REPO) -> list[Path]:
    """Every migration module of the project's apps (task-type packages included)."""
    return sorted(
        path
        for pattern in ("*/migrations/*.py", "*/*/migrations/*.py")
        for path in repo.glob(pattern)
        if ".venv" not in path.relative_to(repo).parts
    )


def migrations_key(repo: Path = REPO) -> str:
    """12 hex digits of the sha256 of every migration's path and text."""
    digest = hashlib.sha256()
    for path in migration_files(repo):
        digest.update(path.relative_to(repo).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def key_the_test_database(database: dict, *, repo: Path = REPO, folder: Path = FOLDER) -> str:
    """Name ``database``'s test database after the migrations' key (changes ``database``);
    returns the name."""
    key = migrations_key(repo)
    test = database.setdefault("TEST", {})
    if database["ENGINE"].endswith("sqlite3"):
        folder.mkdir(exist_ok=True)
        name = folder / f"sqlite-{key}.sqlite3"
        for stale in folder.glob("sqlite-*"):
            if not stale.name.startswith(name.name):
                stale.unlink()
        test["NAME"] = str(name)
    else:
        test["NAME"] = f"test_{database['NAME']}_{key}"
    return test["NAME"]

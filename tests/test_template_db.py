"""The fast loop's kept test database is named after the migrations (tests/template_db.py): an
edited, added or removed migration gives another name, so a stale schema is never reused."""

from tests.template_db import key_the_test_database, migration_files, migrations_key


def _repo(tmp_path):
    (tmp_path / "annotation" / "migrations").mkdir(parents=True)
    (tmp_path / "annotation" / "migrations" / "0001_initial.py").write_text("operations = []\n")
    (tmp_path / "task_types" / "stance" / "migrations").mkdir(parents=True)
    (tmp_path / "annotation" / "models.py").write_text("# not a migration\n")
    return tmp_path


def test_the_key_covers_every_migration_and_nothing_else(tmp_path):
    repo = _repo(tmp_path)
    first = migrations_key(repo)
    assert [p.name for p in migration_files(repo)] == ["0001_initial.py"]
    (repo / "annotation" / "models.py").write_text("# edited\n")
    assert migrations_key(repo) == first
    (repo / "annotation" / "migrations" / "0001_initial.py").write_text("operations = [1]\n")
    edited = migrations_key(repo)
    assert edited != first
    (repo / "task_types" / "stance" / "migrations" / "0001_initial.py").write_text("")
    added = migrations_key(repo)
    assert added not in (first, edited)
    (repo / "task_types" / "stance" / "migrations" / "0001_initial.py").rename(
        repo / "task_types" / "stance" / "migrations" / "0002_renamed.py"
    )
    assert migrations_key(repo) not in (first, edited, added)


def test_sqlite_gets_a_file_of_its_key_and_the_stale_ones_go(tmp_path):
    repo, folder = _repo(tmp_path / "repo"), tmp_path / "cache"
    database = {"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}
    name = key_the_test_database(database, repo=repo, folder=folder)
    assert name == str(folder / f"sqlite-{migrations_key(repo)}.sqlite3")
    assert database["TEST"]["NAME"] == name
    (folder / f"sqlite-{migrations_key(repo)}.sqlite3").write_text("kept")
    (folder / f"sqlite-{migrations_key(repo)}.sqlite3-wal").write_text("kept")
    (repo / "annotation" / "migrations" / "0002_more.py").write_text("operations = []\n")
    newer = key_the_test_database(dict(database), repo=repo, folder=folder)
    assert newer != name
    assert sorted(p.name for p in folder.iterdir()) == []  # the old key's files are gone


def test_postgresql_gets_a_database_name_of_its_key(tmp_path):
    repo = _repo(tmp_path)
    database = {"ENGINE": "django.db.backends.postgresql", "NAME": "concord"}
    assert key_the_test_database(database, repo=repo) == f"test_concord_{migrations_key(repo)}"

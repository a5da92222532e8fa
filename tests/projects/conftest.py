import pytest


@pytest.fixture(autouse=True)
def _imports_run_in_process(celery_eager):
    """Import jobs finish inside the request in these tests (job runs themselves are tested apart)."""

import pytest

from tests.conftest import REQUIRE_SERVICES

try:
    import concord_client  # noqa: F401  (make install: pip install -e clients/python)
except ImportError:  # a developer machine without it; CI installs it with the dev environment
    if REQUIRE_SERVICES:
        raise
    pytest.skip(
        "needs concord-client (make install, or pip install -e clients/python)",
        allow_module_level=True,
    )

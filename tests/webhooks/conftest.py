import pytest

from tests.webhooks.receiver import Receiver


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.stop()


@pytest.fixture
def local_receivers_allowed(settings):
    """Staff's setting: the test receiver on 127.0.0.1 may be reached (it is refused otherwise)."""
    settings.CONCORD_WEBHOOK_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.CONCORD_WEBHOOK_RETRY_SECONDS = 0
    settings.CONCORD_WEBHOOK_TIMEOUT = 5

class ConfigError(Exception):
    """The judge cannot run as configured (missing API key, model directory, labels…); no item
    can succeed, so the run fails with this message instead of retrying."""

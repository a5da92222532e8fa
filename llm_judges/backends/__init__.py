"""Judge backends: an OpenAI-compatible LLM endpoint, a local NLI model, MiniLM embeddings.

Heavy libraries (torch, transformers, sentence-transformers) are imported only when a backend is
first used, so the web process and the Celery parent process never load them; each worker child
loads a model once and keeps it.
"""

from __future__ import annotations

import json
import threading

from .errors import ConfigError

_llm_clients: dict[str, object] = {}
_lock = threading.Lock()


def llm_backend(*, model: str, parameters: dict):
    """A shared ``LLMBackend`` per (model, parameters) in this process: the HTTP connection pool
    is reused across tasks. ``parameters`` carry the staff-approved endpoint's ``base_url``,
    ``api_key_env`` and ``allow_private_network`` (``ModelEndpoint.connection()``) beside the
    judge's sampling settings."""
    from .llm import LLMBackend

    key = json.dumps([model, parameters], sort_keys=True)
    with _lock:
        backend = _llm_clients.get(key)
        if backend is None:
            backend = _llm_clients[key] = LLMBackend(
                model=model,
                base_url=parameters["base_url"],
                api_key_env=parameters.get("api_key_env", ""),
                temperature=parameters.get("temperature", 0.0),
                max_tokens=parameters.get("max_tokens", 256),
                timeout=parameters.get("timeout", 60.0),
                structured_output=parameters.get("structured_output", "json_schema"),
                seed=parameters.get("seed"),
                top_p=parameters.get("top_p"),
                top_logprobs=parameters.get("top_logprobs", 0),
                allow_private_network=parameters.get("allow_private_network", False),
            )
        return backend


__all__ = ["ConfigError", "llm_backend"]

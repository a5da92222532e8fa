"""concord-client: a thin, typed Python client for Concord's REST API.

from concord_client import Concord
concord = Concord.login("http://127.0.0.1:8000", "researcher", "…")
rows = list(concord.export_annotations("my-study"))
"""

from concord_client.client import ENDPOINTS, AnnotationExport, Concord
from concord_client.errors import (
    ConcordError,
    Conflict,
    ExportFormatError,
    Forbidden,
    ImportFailedError,
    IncompleteExportError,
    InvalidRequest,
    NotAuthenticated,
    NotFound,
    RateLimited,
    Unavailable,
)

__version__ = "0.1.0"  # the API version it speaks (the server's OpenAPI info.version)

__all__ = [
    "ENDPOINTS",
    "AnnotationExport",
    "Concord",
    "ConcordError",
    "Conflict",
    "ExportFormatError",
    "IncompleteExportError",
    "Forbidden",
    "ImportFailedError",
    "InvalidRequest",
    "NotAuthenticated",
    "NotFound",
    "RateLimited",
    "Unavailable",
    "__version__",
]

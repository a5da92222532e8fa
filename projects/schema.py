"""The OpenAPI description of Concord's token authentication (drf-spectacular extension), and
the schema view that serves it, cached per process."""

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpResponse
from django.utils import translation
from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView


class TokenScheme(KnoxTokenScheme):
    """``Authorization: Token <key>``, as knox's own scheme (projects.tokens)."""

    target_class = "projects.tokens.TokenAuthentication"
    name = "tokenAuth"


class CachedSchemaView(SpectacularAPIView):
    """``/api/schema/`` (what ``/api/docs/`` loads), generated and rendered once per process for
    each API version, language and format instead of on every request (generating walks every
    view and serializer, and rendering YAML takes as long again: over a second, issue 31). The
    schema is public (``SERVE_PUBLIC``): it does not depend on who asks. A changed setting (as in
    tests) empties the cache."""

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        if not self.serve_public:  # then it depends on who asks: never cached
            return super().get(request, *args, **kwargs)
        key = (
            self.api_version or request.version or self._get_version_parameter(request),
            request.GET.get("lang") or translation.get_language(),
            request.accepted_media_type,
        )
        cached = _SCHEMAS.get(key)
        if cached is None:
            response = super().get(request, *args, **kwargs)
            response.accepted_renderer = request.accepted_renderer
            response.accepted_media_type = request.accepted_media_type
            response.renderer_context = self.get_renderer_context()
            response.render()
            cached = _SCHEMAS[key] = (
                response.content,
                response["Content-Type"],
                response["Content-Disposition"],
            )
        content, content_type, disposition = cached
        return HttpResponse(
            content, content_type=content_type, headers={"Content-Disposition": disposition}
        )


_SCHEMAS: dict[tuple, tuple[bytes, str, str]] = {}


@receiver(setting_changed)
def _schemas_forget(**_kwargs) -> None:
    _SCHEMAS.clear()

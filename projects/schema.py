"""The OpenAPI description of Concord's token authentication (drf-spectacular extension)."""

from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme


class TokenScheme(KnoxTokenScheme):
    """``Authorization: Token <key>``, as knox's own scheme (projects.tokens)."""

    target_class = "projects.tokens.TokenAuthentication"
    name = "tokenAuth"

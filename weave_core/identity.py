"""Re-exports :mod:`weave_core.access.identity` at its stable public path.

``weave_sdk.testing`` creates its namespace and token with it. Kept when the kernel was
grouped into folders (#16); code inside the kernel imports :mod:`weave_core.access.identity`
itself.
"""

from weave_core.access.identity import (
    CLI_ACTOR,
    MAX_DESCRIPTION_LENGTH,
    TOKEN_CACHE_SECONDS,
    TOKEN_CACHE_SIZE,
    TOKEN_PREFIX,
    Permission,
    Principal,
    TokenCache,
    authenticate,
    authenticate_cached,
    authorize,
    create_namespace,
    create_token,
    parse_permissions,
    revoke_token,
    validate_namespace_name,
)

__all__ = [
    "CLI_ACTOR",
    "MAX_DESCRIPTION_LENGTH",
    "TOKEN_CACHE_SECONDS",
    "TOKEN_CACHE_SIZE",
    "TOKEN_PREFIX",
    "Permission",
    "Principal",
    "TokenCache",
    "authenticate",
    "authenticate_cached",
    "authorize",
    "create_namespace",
    "create_token",
    "parse_permissions",
    "revoke_token",
    "validate_namespace_name",
]

"""Re-exports :mod:`weave_core.storage.migrate` at its stable public path.

``weave_sdk.testing`` prepares its database with it. Kept when the kernel was grouped into
folders (#16); code inside the kernel imports :mod:`weave_core.storage.migrate` itself.
"""

from weave_core.storage.migrate import (
    MIGRATE_LOCK_NAME,
    MIGRATE_LOCK_TIMEOUT_S,
    alembic_config,
    current_revision,
    downgrade,
    ensure_current,
    head_revision,
    pending_revisions,
    prepare_database,
    script_directory,
    script_location,
    upgrade,
)

__all__ = [
    "MIGRATE_LOCK_NAME",
    "MIGRATE_LOCK_TIMEOUT_S",
    "alembic_config",
    "current_revision",
    "downgrade",
    "ensure_current",
    "head_revision",
    "pending_revisions",
    "prepare_database",
    "script_directory",
    "script_location",
    "upgrade",
]

"""Alembic migration scripts; ``weave migrate`` applies them."""

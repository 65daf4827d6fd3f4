"""Migration scripts, one per revision; each freezes its own table definitions."""

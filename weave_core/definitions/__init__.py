"""Workflow definitions: the format, its validation, references and conditions, and the
store of immutable published versions."""

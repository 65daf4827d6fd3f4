"""The SDK's version (kept equal to ``version`` in this folder's ``pyproject.toml``)."""

__version__ = "0.1.0"

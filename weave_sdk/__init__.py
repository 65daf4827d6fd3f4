"""Weave SDK: typed workflow definitions, HTTP clients and the worker runtime.

This distribution (``weave-sdk``) depends only on httpx and pydantic and imports nothing
from the engine packages.
"""

__version__ = "0.1.0"

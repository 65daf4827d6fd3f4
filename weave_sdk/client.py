"""HTTP clients of the Weave API: ``Client`` (blocking) and ``AsyncClient`` (asyncio).

Both speak to the same routes (DESIGN.md §10) and share everything but the sending: each
method describes its call once (``weave_sdk._calls``: a ``_Call``, or a plan of several)
and reads the answer once (``weave_sdk._answers``); the two classes are thin transports.
Bodies go out as exact JSON (``Decimal`` never becomes a float) and come back parsed
exactly (``int``/``Decimal``; NaN and duplicate keys refused). Error answers
(``application/problem+json``) raise ``WeaveAPIError`` subclasses.
"""

from __future__ import annotations

from weave_sdk._answers import _expect as _expect
from weave_sdk._answers import _items as _items
from weave_sdk._answers import _model as _model
from weave_sdk._answers import api_error
from weave_sdk._async_client import AsyncClient
from weave_sdk._calls import DEFAULT_TIMEOUT
from weave_sdk._calls import ENV_NAMESPACE as ENV_NAMESPACE
from weave_sdk._calls import ENV_TOKEN as ENV_TOKEN
from weave_sdk._calls import ENV_URL as ENV_URL
from weave_sdk._calls import _Call as _Call
from weave_sdk._calls import _segment as _segment
from weave_sdk._calls import _Settings as _Settings
from weave_sdk._sync_client import Client

__all__ = ["DEFAULT_TIMEOUT", "AsyncClient", "Client", "api_error"]

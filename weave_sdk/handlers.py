"""Handlers as objects: what a worker runs and what a definition names.

``@handler("ship", version="1")`` turns a function into a :class:`HandlerDef`. It is a
:class:`~weave_sdk.definition.Handler` (name, version, idempotency), so a definition takes
it directly (``wf.task("ship", handler=ship)``) and the name is typed once; it keeps the
function's pydantic input and output models, from which the step's ``output_schema`` is
derived; and it stays callable, so a unit test calls ``ship(order)`` as a plain function.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, get_type_hints

import pydantic

from weave_sdk.definition import Handler
from weave_sdk.errors import WeaveSDKError

# --- what handlers raise ---------------------------------------------------------------


class HandlerError(WeaveSDKError):
    """Base of the errors a handler raises on purpose.

    :param message: shown to operators, stored with the task.
    :param type: a stable error type (default: the class name).
    :param details: JSON details stored with the error.
    """

    retryable: bool = True

    def __init__(self, message: str, *, type: str | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.type = type or self.__class__.__name__
        self.details = details


class RetryableError(HandlerError):
    """This attempt failed; the server retries the task within its attempt budget."""

    retryable = True


class NonRetryableError(HandlerError):
    """The task failed for good: retrying cannot help (bad input, business refusal)."""

    retryable = False


# --- the context -------------------------------------------------------------------------


@dataclass
class TaskContext:
    """What a handler may know about the attempt it runs under."""

    task_id: str
    attempt_id: str
    attempt_no: int
    handler: str
    handler_version: str
    deadline_at: str | None
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def cancel_requested(self) -> bool:
        """True once the server asked to cancel this task (seen on a heartbeat)."""
        return self._cancel.is_set()


# --- handlers ----------------------------------------------------------------------------


def _model(value: Any) -> type[pydantic.BaseModel] | None:
    is_model = isinstance(value, type) and issubclass(value, pydantic.BaseModel)
    return value if is_model else None


@dataclass(frozen=True, eq=False)
class HandlerDef(Handler):
    """A handler function with its identity: a ``Handler`` a definition can name.

    ``idempotent`` is sent in the definition (``True`` unless declared otherwise), so the
    worker and the definition cannot disagree about it.
    """

    fn: Callable[..., Any] = field(default=lambda value: value, repr=False, kw_only=True)
    input_model: type[pydantic.BaseModel] | None = field(default=None, kw_only=True)
    output_model: type[pydantic.BaseModel] | None = field(default=None, kw_only=True)
    wants_context: bool = field(default=False, kw_only=True)
    is_async: bool = field(default=False, kw_only=True)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function itself (a unit test calls the handler like any function)."""
        return self.fn(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Handler) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash((self.name, self.version))

    @classmethod
    def build(cls, fn: Callable[..., Any], name: str, version: str,
              idempotent: bool) -> HandlerDef:
        params = list(inspect.signature(fn).parameters.values())
        if not 1 <= len(params) <= 2:
            raise TypeError(f"handler {name!r} must take (input) or (input, ctx)")
        try:
            hints = get_type_hints(fn)
        except Exception:  # unresolved forward references: run untyped
            hints = {}
        return cls(name, version, bool(idempotent), fn=fn,
                   input_model=_model(hints.get(params[0].name)),
                   output_model=_model(hints.get("return")),
                   wants_context=len(params) == 2,
                   is_async=inspect.iscoroutinefunction(fn))

    def output_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of the return model (``None`` without one); see ``schemas``."""
        from weave_sdk.schemas import model_schema

        return None if self.output_model is None else model_schema(self.output_model)


def handler(
    name: str, *, version: str = "1", idempotent: bool = True
) -> Callable[[Callable[..., Any]], HandlerDef]:
    """Declare a handler: for ``Worker(handlers=[...])`` and for ``wf.task(handler=...)``.

    ``idempotent`` is what the definition declares for this handler; the server decides
    retries from the task, which carries the flag from the definition.
    """

    def register(fn: Callable[..., Any]) -> HandlerDef:
        return HandlerDef.build(fn, name, version, idempotent)

    return register


def exact(value: Any) -> Any:
    """Output as exact JSON: floats become the Decimal of their shortest repr."""
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, Mapping):
        return {str(k): exact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [exact(v) for v in value]
    return value


__all__ = [
    "HandlerDef",
    "HandlerError",
    "NonRetryableError",
    "RetryableError",
    "TaskContext",
    "exact",
    "handler",
]

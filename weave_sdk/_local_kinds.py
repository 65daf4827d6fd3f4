"""Local validation of the built-in kinds' fields and of conditions.

The same rules the node plugins apply on the server (``weave_nodes``), for the six
built-in kinds; a third-party kind's fields are the server's to check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from weave_sdk._local_fields import _Fields
from weave_sdk._local_refs import (
    Need,
    _is_number,
    _is_status,
    _RefUse,
    _StepInfo,
    _template_refs,
    key_path,
    parse_ref,
)
from weave_sdk._local_rules import (
    DEFAULT_BACKOFF_SECONDS,
    DEFAULT_MAX_BACKOFF_SECONDS,
    MAX_CONDITION_DEPTH,
)
from weave_sdk.exactjson import JSON
from weave_sdk.expressions import (
    COMPARISON_OPERATORS,
    OPERATORS,
    ORDERING_OPERATORS,
    REF_KEY,
)

_DEADLINE = "max_deadline_seconds"


class _Kinds(_Fields):
    def handler(self, step: Mapping[str, Any], path: str) -> None:
        value = self.required(step, "handler", path)
        if "handler" not in step:
            return
        here = f"{path}.handler"
        handler = self.obj(value, here, "'handler'")
        if handler is None:
            return
        self.unknown_fields(handler, {"name", "version", "idempotent"}, here)
        self.text(handler, "name", here, required=True)
        self.text(handler, "version", here, required=True)
        if "idempotent" in handler and not isinstance(handler["idempotent"], bool):
            self.problem(f"{here}.idempotent", "invalid_field", "'idempotent' must be a boolean")

    def template(self, value: JSON, path: str, owner: _StepInfo, need: Need = "value") -> None:
        for here, ref_obj in _template_refs(value, path):
            self.ref(ref_obj, here, owner, need)

    def ref(self, ref_obj: Mapping[str, Any], path: str, owner: _StepInfo, need: Need) -> None:
        if len(ref_obj) != 1:
            self.problem(path, "ref_invalid", "an object with '$ref' must have no other keys")
            return
        error, step_id = parse_ref(ref_obj[REF_KEY])
        if error is not None:
            self.problem(path, "ref_invalid", error)
        elif step_id is not None:
            self.uses.append(_RefUse(path, step_id, owner, need))

    def kind_task(self, step: Mapping[str, Any], path: str, owner: _StepInfo) -> None:
        self.text(step, "queue", path, required=True)
        self.handler(step, path)
        if "input" in step:
            self.template(step["input"], f"{path}.input", owner)
        if "output_schema" in step:
            self.obj(step["output_schema"], f"{path}.output_schema", "'output_schema'")
        if "retry" in step:
            here = f"{path}.retry"
            retry = self.obj(step["retry"], here, "'retry'")
            if retry is not None:
                names = {"max_attempts", "backoff_seconds", "backoff_multiplier"}
                self.unknown_fields(retry, names | {"max_backoff_seconds"}, here)
                attempts = self.limit("max_task_attempts")
                self.count(retry, "max_attempts", here, required=False, limit=attempts)
                self.number(retry, "backoff_seconds", here, 0)
                self.number(retry, "backoff_multiplier", here, 1)
                self.number(retry, "max_backoff_seconds", here, 0)
                backoff = retry.get("backoff_seconds", DEFAULT_BACKOFF_SECONDS)
                cap = retry.get("max_backoff_seconds", DEFAULT_MAX_BACKOFF_SECONDS)
                if _is_number(backoff) and _is_number(cap) and cap < backoff:
                    self.problem(
                        f"{here}.max_backoff_seconds",
                        "invalid_field",
                        "max_backoff_seconds must not be below backoff_seconds",
                    )
        if "timeouts" in step:
            here = f"{path}.timeouts"
            timeouts = self.obj(step["timeouts"], here, "'timeouts'")
            if timeouts is not None:
                names = {"schedule_to_start", "start_to_close", "heartbeat"}
                self.unknown_fields(timeouts, names, here)
                for name in sorted(names):
                    self.count(timeouts, name, here, required=False, limit=self.limit(_DEADLINE))

    def signal_fields(self, obj: Mapping[str, Any], path: str, owner: _StepInfo) -> None:
        self.text(obj, "name", path, required=True)
        if "correlation_key" in obj:
            key = obj["correlation_key"]
            here = f"{path}.correlation_key"
            if isinstance(key, Mapping) and REF_KEY in key:
                self.template(key, here, owner)
            elif not isinstance(key, str) or not key:
                self.problem(
                    here,
                    "invalid_field",
                    "correlation_key must be a non-empty string or a {'$ref': ...}",
                )
        else:
            self.required(obj, "correlation_key", path)
        self.text(obj, "param_version", path, required=False)

    def kind_signal(self, step: Mapping[str, Any], path: str, owner: _StepInfo) -> None:
        self.signal_fields(step, path, owner)
        self.count(step, "timeout_seconds", path, required=False, limit=self.limit(_DEADLINE))

    def kind_timer(self, step: Mapping[str, Any], path: str, owner: _StepInfo) -> None:
        self.count(step, "seconds", path, required=True, limit=self.limit(_DEADLINE))

    def kind_poll(self, step: Mapping[str, Any], path: str, owner: _StepInfo) -> None:
        self.text(step, "queue", path, required=True)
        self.handler(step, path)
        if "input" in step:
            self.template(step["input"], f"{path}.input", owner)
        rounds = self.count(step, "max_rounds", path, required=True)
        interval = self.count(step, "interval_seconds", path, required=True)
        deadline = self.count(
            step, "deadline_seconds", path, required=True, limit=self.limit(_DEADLINE)
        )
        attempts = self.count(
            step,
            "attempts_per_round",
            path,
            required=False,
            limit=self.limit("max_task_attempts"),
        )
        max_rounds = self.limits["max_poll_rounds"]
        max_total = self.limits["max_poll_attempts_total"]
        if rounds is not None and rounds > max_rounds:
            self.problem(
                f"{path}.max_rounds",
                "poll_budget_too_large",
                f"max_rounds is {rounds}; the limit max_poll_rounds is {max_rounds}",
            )
        if rounds is not None and rounds * (attempts or 1) > max_total:
            self.problem(
                path,
                "poll_budget_too_large",
                f"max_rounds x attempts_per_round is {rounds * (attempts or 1)}; the limit "
                f"max_poll_attempts_total is {max_total}",
            )
        if interval is not None and deadline is not None and interval > deadline:
            self.problem(
                f"{path}.interval_seconds",
                "invalid_field",
                "interval_seconds is longer than deadline_seconds: no second round could run",
            )
        if "classify" in step:
            self.classify(step["classify"], f"{path}.classify")
        else:
            self.required(step, "classify", path)
        if "receipt" in step:
            here = f"{path}.receipt"
            receipt = self.obj(step["receipt"], here, "'receipt'")
            if receipt is not None:
                self.unknown_fields(receipt, {"name", "correlation_key", "param_version"}, here)
                self.signal_fields(receipt, here, owner)

    def classify(self, value: Any, path: str) -> None:
        classify = self.obj(value, path, "'classify'")
        if classify is None:
            return
        names = ("pending", "succeeded", "failed", "needs_review")
        self.unknown_fields(classify, {"field", *names}, path)
        self.text(classify, "field", path, required=True)
        seen: dict[tuple[type, Any], str] = {}
        for name in names:  # only 'succeeded' is required (the engine's poll kind)
            values = self.required(classify, name, path) if name == "succeeded" else None
            if name not in classify:
                continue
            values = classify[name]
            if not isinstance(values, list):
                self.problem(f"{path}.{name}", "invalid_field", f"'{name}' must be a list")
                continue
            bad = [i for i, v in enumerate(values) if not _is_status(v)]
            for index in bad:
                self.problem(
                    f"{path}.{name}[{index}]",
                    "invalid_field",
                    "a classify value is a string or an integer",
                )
            if bad:
                continue
            if name == "succeeded" and not values:
                self.problem(f"{path}.{name}", "invalid_field", "'succeeded' must not be empty")
            for index, item in enumerate(values):
                key = (type(item), item)
                if key in seen and seen[key] != name:
                    self.problem(
                        f"{path}.{name}[{index}]",
                        "invalid_field",
                        f"{item!r} is already classified as {seen[key]}",
                    )
                seen.setdefault(key, name)


    # --- conditions ------------------------------------------------------------------

    def condition(self, cond: JSON, path: str, owner: _StepInfo, depth: int = 0) -> None:
        def bad(where: str, message: str) -> None:
            self.problem(where, "condition_invalid", message)

        if depth > MAX_CONDITION_DEPTH:
            bad(path, f"conditions nest deeper than {MAX_CONDITION_DEPTH} levels")
            return
        if isinstance(cond, bool):
            return
        if not isinstance(cond, Mapping) or len(cond) != 1:
            bad(path, f"a condition is an object with exactly one operator of {list(OPERATORS)}")
            return
        ((op, arg),) = cond.items()
        here = key_path(path, op)
        if op in COMPARISON_OPERATORS:
            if not isinstance(arg, list) or len(arg) != 2:
                bad(here, f"'{op}' takes a list of two operands")
                return
            for index, operand in enumerate(arg):
                where = f"{here}[{index}]"
                is_ref = isinstance(operand, Mapping) and REF_KEY in operand
                if op in ORDERING_OPERATORS and not (
                    is_ref or _is_number(operand) or isinstance(operand, str)
                ):
                    bad(where, f"'{op}' compares numbers or strings only")
                    continue
                self.template(operand, where, owner)
        elif op == "in":
            if not isinstance(arg, list) or len(arg) != 2 or not isinstance(arg[1], list):
                bad(here, "'in' takes [operand, [value, ...]]")
                return
            self.template(arg[0], f"{here}[0]", owner)
            for index, item in enumerate(arg[1]):
                if isinstance(item, Mapping) and REF_KEY in item:
                    bad(f"{here}[1][{index}]", "the values of 'in' are literals")
        elif op == "exists":
            if not (isinstance(arg, Mapping) and REF_KEY in arg and len(arg) == 1):
                bad(here, "'exists' takes one reference")
                return
            self.ref(arg, here, owner, "exists")
        elif op in ("and", "or"):
            if not isinstance(arg, list) or not arg:
                bad(here, f"'{op}' takes a non-empty list of conditions")
                return
            for index, item in enumerate(arg):
                self.condition(item, f"{here}[{index}]", owner, depth + 1)
        elif op == "not":
            self.condition(arg, here, owner, depth + 1)
        else:
            bad(path, f"unknown operator {op!r}; conditions use {list(OPERATORS)}")


"""T11: schemathesis sweeps every operation of the served OpenAPI document.

For each operation it generates requests from the document itself — ones that follow it
(positive) and ones that break it on purpose (negative) — and sends them to the app in the
tenant's namespace with an admin token, so that they reach validation and the kernel
instead of stopping at a 404 or 401. No answer may be a 5xx or an exception, and every
error must be ``application/problem+json``. Derandomized: CI runs the same examples every
time, and a failure names the request that caused it.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.http.conftest import new_tenant
from weave_core.engine import Engine
from weave_http.app import create_app

EXAMPLES_PER_OPERATION = 40


def _sweep(engine: Engine, mode: GenerationMode) -> tuple[int, list[str]]:
    tenant = new_tenant(engine.db)
    auth = {"Authorization": f"Bearer {tenant.token('admin')}"}
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(engine))
    problems: list[str] = []
    swept = 0
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True,
                  database=None, phases=[Phase.explicit, Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy(generation_mode=mode))
        def check(case: Any) -> None:
            if case.path_parameters and "ns" in case.path_parameters:
                case.path_parameters["ns"] = tenant.namespace
            where = f"{case.method} {case.formatted_path} query={case.query} body={case.body!r}"
            try:
                response = case.call(headers=auth)
            except Exception as exc:  # an exception escaping the app is a 500 in production
                problems.append(f"{where}: raised {exc!r}")
                return
            content_type = ",".join(response.headers.get("content-type", []))
            if response.status_code >= 500:
                problems.append(f"{where}: {response.status_code} {response.text[:200]}")
            elif response.status_code >= 400 and "application/problem+json" not in content_type:
                problems.append(f"{where}: {response.status_code} as {content_type!r}")

        try:
            check()
        except Unsatisfiable:  # nothing to break: an operation without parameters or body
            assert mode is GenerationMode.NEGATIVE, operation.path
            continue
        swept += 1
    return swept, problems


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
                         ids=["positive", "negative"])
def test_no_generated_request_gets_a_server_error(any_engine: Engine,
                                                  mode: GenerationMode) -> None:
    swept, problems = _sweep(any_engine, mode)
    assert swept >= 24  # every operation of the document (health has nothing to break)
    assert problems == [], "\n".join(problems[:20])

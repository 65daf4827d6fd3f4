# ruff: noqa: E501  # the JSON text is copied verbatim from DESIGN.md, long lines included
"""The full example of DESIGN.md §2, as literal JSON text and as built with the SDK.

Both are shared by the builder tests, the validation tests and the docs tests; the text is
copied verbatim from the specification so that the comparison is literal.
"""

from __future__ import annotations

from datetime import timedelta

from weave_sdk import (
    Case,
    Classify,
    Default,
    FailurePolicy,
    Handler,
    Receipt,
    SignalStep,
    TaskStep,
    Workflow,
    gt,
    ref,
)

DESIGN_EXAMPLE_JSON = """
{
  "schema_version": 1,
  "definition_id": "external-job",
  "version": "1",
  "input_schema": {"type": "object", "required": ["job_id", "amount"],
                   "properties": {"job_id": {"type": "string"}, "amount": {"type": "number"}}},
  "deadline_seconds": 86400,
  "failure_policy": "REVIEW",
  "steps": [
    {"id": "validate", "kind": "task", "queue": "jobs",
     "handler": {"name": "validate", "version": "1"},
     "input": {"job_id": {"$ref": "input.job_id"}, "amount": {"$ref": "input.amount"}},
     "output_schema": {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}},
    {"id": "route", "kind": "branch", "cases": [
      {"when": {"gt": [{"$ref": "input.amount"}, 1000]},
       "steps": [{"id": "approval", "kind": "signal", "name": "approval",
                  "correlation_key": {"$ref": "input.job_id"}, "timeout_seconds": 3600}]},
      {"default": true, "steps": []}]},
    {"id": "prepare", "kind": "parallel", "branches": {
      "docs": [{"id": "fetch_docs", "kind": "task", "queue": "jobs", "handler": {"name": "fetch_docs", "version": "1"}, "input": {}}],
      "quote": [{"id": "quote", "kind": "task", "queue": "jobs", "handler": {"name": "quote", "version": "2"}, "input": {}}]}},
    {"id": "submit", "kind": "task", "queue": "jobs", "handler": {"name": "submit", "version": "1", "idempotent": false},
     "input": {"job_id": {"$ref": "input.job_id"}, "quote": {"$ref": "steps.quote.output"}}},
    {"id": "outcome", "kind": "poll", "queue": "jobs", "handler": {"name": "job_status", "version": "1"},
     "input": {"job_id": {"$ref": "input.job_id"}},
     "max_rounds": 20, "interval_seconds": 30, "deadline_seconds": 3600, "attempts_per_round": 3,
     "classify": {"field": "status", "pending": ["QUEUED", "RUNNING"], "succeeded": ["DONE"], "failed": ["REJECTED"]},
     "receipt": {"name": "receipt", "correlation_key": {"$ref": "input.job_id"}}}
  ]
}
"""


def build_external_job() -> Workflow:
    """The same definition, built with the typed API."""
    job_id = ref.input("job_id")
    wf = Workflow(
        "external-job",
        version="1",
        input_schema={
            "type": "object",
            "required": ["job_id", "amount"],
            "properties": {"job_id": {"type": "string"}, "amount": {"type": "number"}},
        },
        deadline=timedelta(days=1),
        failure_policy=FailurePolicy.REVIEW,
    )
    wf.task(
        "validate",
        queue="jobs",
        handler=Handler("validate", "1"),
        input={"job_id": job_id, "amount": ref.input("amount")},
        output_schema={
            "type": "object",
            "required": ["ok"],
            "properties": {"ok": {"type": "boolean"}},
        },
    )
    wf.branch(
        "route",
        [
            Case(
                gt(ref.input("amount"), 1000),
                [
                    SignalStep(
                        "approval",
                        name="approval",
                        correlation_key=job_id,
                        timeout=timedelta(hours=1),
                    )
                ],
            ),
            Default([]),
        ],
    )
    quote = TaskStep("quote", queue="jobs", handler=Handler("quote", "2"), input={})
    wf.parallel(
        "prepare",
        {
            "docs": [
                TaskStep("fetch_docs", queue="jobs", handler=Handler("fetch_docs", "1"), input={})
            ],
            "quote": [quote],
        },
    )
    wf.task(
        "submit",
        queue="jobs",
        handler=Handler("submit", "1", idempotent=False),
        input={"job_id": job_id, "quote": quote.output()},
    )
    wf.poll(
        "outcome",
        queue="jobs",
        handler=Handler("job_status", "1"),
        input={"job_id": job_id},
        max_rounds=20,
        interval=timedelta(seconds=30),
        deadline=timedelta(hours=1),
        attempts_per_round=3,
        classify=Classify(
            "status", pending=["QUEUED", "RUNNING"], succeeded=["DONE"], failed=["REJECTED"]
        ),
        receipt=Receipt("receipt", correlation_key=job_id),
    )
    return wf

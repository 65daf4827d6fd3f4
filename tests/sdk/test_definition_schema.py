"""The published JSON Schema of a definition: one file, valid, and true of the examples."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from jsonschema import Draft202012Validator

from weave_sdk import docformat, loads
from weave_sdk.exactschema import ExactValidator

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_docs_publish_the_packaged_schema() -> None:
    packaged = resources.files("weave_sdk").joinpath("definition.schema.json").read_bytes()
    assert (DOCS / "definition.schema.json").read_bytes() == packaged


def test_the_schema_is_a_draft_2020_12_schema() -> None:
    Draft202012Validator.check_schema(docformat.SCHEMA)


def test_the_documented_examples_hold() -> None:
    validator = ExactValidator(docformat.SCHEMA)
    for example in sorted((DOCS / "examples").glob("*.json")):
        document = loads(example.read_bytes())
        if isinstance(document, dict) and "schema_version" in document:
            assert list(validator.iter_errors(document)) == [], example.name


def test_a_bad_document_breaks_the_schema_where_validate_says() -> None:
    bad = {"schema_version": 1, "definition_id": "-x", "version": "1", "steps": [], "odd": 1}
    paths = {tuple(e.absolute_path) for e in ExactValidator(docformat.SCHEMA).iter_errors(bad)}
    assert paths == {(), ("definition_id",), ("steps",)}
    found = {(p.path, p.code) for p in docformat.top_level_problems(bad, _defaults())[0]}
    assert found == {
        ("$.definition_id", "invalid_id"),
        ("$.odd", "unknown_field"),
        ("$.steps", "invalid_field"),
    }


def _defaults() -> dict[str, int]:
    from weave_sdk.validate import DEFAULT_LIMITS

    return dict(DEFAULT_LIMITS)

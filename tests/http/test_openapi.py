"""The OpenAPI document is true to the app: every real route is documented and vice versa."""

from __future__ import annotations

from typing import Any

from starlette.routing import Route

from tests.http.conftest import client_for
from weave_core.engine import Engine
from weave_core.foundation.exactjson import loads
from weave_http.app import create_app
from weave_http.routes import all_api_routes

HTTP_METHODS = {"get", "post", "put", "patch", "delete"}


def _document(engine: Engine) -> dict[str, Any]:
    response = client_for(engine).get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    document = loads(response.content)
    assert isinstance(document, dict)
    return document


def test_openapi_matches_the_real_routes(mysql_engine: Engine) -> None:
    document = _document(mysql_engine)
    assert document["openapi"].startswith("3.1")
    documented = {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }
    app = create_app(mysql_engine)
    served = {
        (method, route.path)
        for route in app.routes
        if isinstance(route, Route) and route.path != "/ui"  # the console's root redirect
        for method in (route.methods or ())
        if method != "HEAD"  # Starlette adds HEAD to every GET route
    }
    assert served == documented
    # One served route per declared route (health and the document itself included).
    from weave_http.routes import all_api_routes

    assert len(served) == len(all_api_routes())


def test_every_operation_is_complete(mysql_engine: Engine) -> None:
    document = _document(mysql_engine)
    schemas = document["components"]["schemas"]
    operation_ids = set()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            operation_ids.add(operation["operationId"])
            params = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            assert params == {seg[1:-1] for seg in path.split("/") if seg.startswith("{")}
            for query in (p for p in operation.get("parameters", []) if p["in"] == "query"):
                assert query["required"] is False and query["schema"] and query["description"]
            for response in operation["responses"].values():
                for media in response.get("content", {}).values():
                    ref = media["schema"]["$ref"]
                    assert ref.removeprefix("#/components/schemas/") in schemas, ref
            if "requestBody" in operation:
                ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                assert ref.removeprefix("#/components/schemas/") in schemas
            if operation["security"]:
                assert {"401", "403", "404"} <= set(operation["responses"]), (method, path)
    assert len(operation_ids) == len(all_api_routes())


def test_documented_permissions(mysql_engine: Engine) -> None:
    paths = _document(mysql_engine)["paths"]
    defs = "/v1/namespaces/{ns}/definitions"
    assert paths[defs]["post"]["x-weave-permission"] == "publish"
    assert paths[defs]["get"]["x-weave-permission"] == "read"
    assert paths["/v1/health"]["get"]["security"] == []
    assert paths["/openapi.json"]["get"]["security"] == []
    assert set(paths[defs]["post"]["responses"]) >= {"200", "201", "409", "413", "415", "422"}


def test_the_result_long_poll_documents_its_wait(mysql_engine: Engine) -> None:
    operation = _document(mysql_engine)["paths"][
        "/v1/namespaces/{ns}/workflows/{workflow_id}/result"]["get"]
    [wait] = [p for p in operation["parameters"] if p["in"] == "query"]
    assert wait["name"] == "wait_seconds"
    assert wait["schema"] == {"type": "number", "minimum": 0, "maximum": 60, "default": 0}

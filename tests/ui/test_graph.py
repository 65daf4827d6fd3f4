"""The SVG graph: sequence, branch cases with the chosen one marked, parallel branches
side by side, poll and signal shapes, phases as classes, every text escaped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from weave_http.ui.graph import StepState, render_graph

SVG = "{http://www.w3.org/2000/svg}"


def _task(step_id: str) -> dict[str, Any]:
    return {"id": step_id, "kind": "task", "queue": "q",
            "handler": {"name": step_id, "version": "1"}}


DOC = {"steps": [
    _task("first"),
    {"id": "pick", "kind": "branch", "cases": [
        {"when": {"eq": [{"$ref": "input.big"}, True]}, "steps": [_task("big")]},
        {"default": True, "steps": [_task("small")]}]},
    {"id": "fan", "kind": "parallel", "branches": {
        "a": [{"id": "ask", "kind": "signal", "name": "approval", "correlation_key": "k"}],
        "b": [{"id": "check", "kind": "poll", "queue": "q", "max_rounds": 5,
               "handler": {"name": "status", "version": "1"}}]}},
]}


def _nodes(svg: str) -> dict[str, tuple[ET.Element, tuple[float, float]]]:
    root = ET.fromstring(svg)
    found = {}
    for node in root.iter():
        step = node.get("data-step")
        if step is None:
            continue
        shape = next(node.iter(SVG + "rect"), None)
        if shape is None:
            shape = next(node.iter(SVG + "polygon"))
        if shape.tag == SVG + "rect":
            at = (float(shape.get("x", 0)), float(shape.get("y", 0)))
        else:
            first = shape.get("points", "").split()[0].split(",")
            at = (float(first[0]), float(first[1]))
        found[step] = (node, at)
    return found


def test_layout_phases_and_the_chosen_case() -> None:
    states = {"first": StepState("SUCCEEDED"),
              "pick": StepState("SUCCEEDED", {"blocks": ["case1"], "value": {"case": 1}}),
              "big": StepState("SKIPPED"), "small": StepState("SUCCEEDED"),
              "fan": StepState("ACTIVE"), "ask": StepState("ACTIVE"),
              "check": StepState("NEEDS_REVIEW")}
    svg = str(render_graph(DOC, states, href=lambda s: f"/x?step={s}", selected="check"))
    nodes = _nodes(svg)
    assert set(nodes) == {"first", "pick", "big", "small", "fan", "ask", "check"}
    (first, p0), (_, p1), (_, p2) = nodes["first"], nodes["pick"], nodes["fan"]
    assert p0[1] < p1[1] < p2[1]  # a sequence goes down
    assert nodes["big"][1][1] == nodes["small"][1][1]  # cases side by side
    assert nodes["big"][1][0] < nodes["small"][1][0]
    assert nodes["ask"][1][1] == nodes["check"][1][1]  # parallel branches side by side
    assert "ph-succeeded" in first.get("class", "") and "ph-skipped" in nodes["big"][0].get(
        "class", "")
    assert "ph-needs_review" in nodes["check"][0].get("class", "")
    assert "selected" in nodes["check"][0].get("class", "")
    assert nodes["ask"][0].find(SVG + "polygon") is not None  # the signal's flag
    assert len(list(nodes["check"][0].iter(SVG + "rect"))) == 2  # the poll's double frame
    assert first.tag == SVG + "a" and first.get("href") == "/x?step=first"
    assert first.get("aria-label") == "Step first: task · first@1, succeeded"
    chosen = re.findall(r'class="column chosen"', svg)
    assert len(chosen) == 1 and "case 1: default ✓ chosen" in svg
    assert "not started" not in svg


def test_text_is_escaped_and_an_unvisited_definition_is_drawn_plain() -> None:
    doc = {"steps": [dict(_task("x"), id="<script>alert(1)</script>")]}
    svg = str(render_graph(doc, {}))
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    ET.fromstring(svg)  # well-formed
    (node,) = [n for n in ET.fromstring(svg).iter() if n.get("data-step")]
    assert node.tag == SVG + "g" and "ph-not_started" in node.get("class", "")
    assert "(no steps)" in str(render_graph({"steps": []}, {}))
    assert "(no steps)" in str(render_graph("not a document", {}))

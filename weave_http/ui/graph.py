"""A definition drawn as SVG on the server: sequences top to bottom, branch cases and
parallel branches side by side, each step coloured by its phase.

Pure layout from the pinned document and the step records (no database): a box per step,
laid out recursively, every text escaped. A step is a link (keyboard focusable) to its
details; a branch's chosen case (its saved decision ``{"case": i}``) is framed and marked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from markupsafe import Markup, escape

from weave_core.foundation import exactjson

NODE_W: Final = 220
NODE_H: Final = 62
GAP_Y: Final = 30
GAP_X: Final = 26
LABEL_H: Final = 22
PAD: Final = 12
MAX_LABEL: Final = 26

Draw = Callable[[float, float, list[str]], None]
Href = Callable[[str], str] | None


@dataclass(frozen=True)
class StepState:
    """What the graph needs of a step record."""

    phase: str
    decision: Any = None


@dataclass(frozen=True)
class Box:
    width: float
    height: float
    draw: Draw


def _clip(text: str, size: int = MAX_LABEL) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


class _Graph:
    def __init__(self, states: Mapping[str, StepState], href: Href, selected: str | None):
        self.states = states
        self.href = href
        self.selected = selected

    # --- nodes -------------------------------------------------------------------------

    def _subtitle(self, step: Mapping[str, Any]) -> str:
        kind = str(step.get("kind", "?"))
        handler = step.get("handler")
        if kind in ("task", "poll") and isinstance(handler, Mapping):
            name = f"{handler.get('name')}@{handler.get('version')}"
            if kind == "poll":
                return f"poll ≤{step.get('max_rounds')} rounds · {name}"
            return f"task · {name}"
        if kind == "signal":
            return f"signal “{step.get('name')}”"
        if kind == "timer":
            return f"timer {step.get('seconds')} s"
        return kind

    def _shape(self, kind: str, x: float, y: float, w: float, h: float) -> str:
        if kind == "signal":  # a flag: the notch says "arrives from outside"
            n = 14
            pts = f"{x},{y} {x + w},{y} {x + w - n},{y + h / 2} {x + w},{y + h} {x},{y + h}"
            return f'<polygon class="shape" points="{pts}"/>'
        if kind == "timer":
            return f'<rect class="shape" x="{x}" y="{y}" width="{w}" height="{h}" rx="{h / 2}"/>'
        if kind == "poll":
            return (f'<rect class="shape" x="{x}" y="{y}" width="{w}" height="{h}" rx="10"/>'
                    f'<rect class="inner" x="{x + 4}" y="{y + 4}" width="{w - 8}" '
                    f'height="{h - 8}" rx="7"/>')
        if kind in ("branch", "parallel"):
            n = 12
            pts = (f"{x + n},{y} {x + w - n},{y} {x + w},{y + h / 2} {x + w - n},{y + h} "
                   f"{x + n},{y + h} {x},{y + h / 2}")
            return f'<polygon class="shape" points="{pts}"/>'
        return f'<rect class="shape" x="{x}" y="{y}" width="{w}" height="{h}" rx="4"/>'

    def node(self, step: Mapping[str, Any]) -> Box:
        step_id = str(step.get("id", "?"))
        kind = str(step.get("kind", "?"))
        state = self.states.get(step_id)
        phase = state.phase if state is not None else "NOT_STARTED"
        subtitle = self._subtitle(step)

        def draw(x: float, y: float, out: list[str]) -> None:
            classes = f"node kind-{escape(kind)} ph-{escape(phase.lower())}"
            if step_id == self.selected:
                classes += " selected"
            label = f"Step {step_id}: {subtitle}, {phase.replace('_', ' ').lower()}"
            body = (
                f"<title>{escape(label)}</title>"
                + self._shape(kind, x, y, NODE_W, NODE_H)
                + f'<text class="id" x="{x + NODE_W / 2}" y="{y + 19}">'
                f"{escape(_clip(step_id))}</text>"
                f'<text class="sub" x="{x + NODE_W / 2}" y="{y + 35}">'
                f"{escape(_clip(subtitle, 34))}</text>"
                f'<text class="phase" x="{x + NODE_W / 2}" y="{y + 51}">'
                f"{escape(phase.replace('_', ' ').lower())}</text>"
            )
            if self.href is None:
                out.append(f'<g class="{classes}" data-step="{escape(step_id)}">{body}</g>')
            else:
                out.append(
                    f'<a class="{classes}" href="{escape(self.href(step_id))}" '
                    f'data-step="{escape(step_id)}" aria-label="{escape(label)}">{body}</a>')

        return Box(NODE_W, NODE_H, draw)

    # --- structure ---------------------------------------------------------------------

    def sequence(self, steps: Sequence[Any]) -> Box:
        boxes = [self.step(s) for s in steps if isinstance(s, Mapping)]
        if not boxes:
            def empty(x: float, y: float, out: list[str]) -> None:
                out.append(f'<text class="empty" x="{x + 40}" y="{y + 16}">(no steps)</text>')
            return Box(80, 24, empty)
        width = max(b.width for b in boxes)
        height = sum(b.height for b in boxes) + GAP_Y * (len(boxes) - 1)

        def draw(x: float, y: float, out: list[str]) -> None:
            cy = y
            mid = x + width / 2
            for index, b in enumerate(boxes):
                if index:
                    out.append(f'<line class="edge" x1="{mid}" y1="{cy - GAP_Y}" '
                               f'x2="{mid}" y2="{cy - 3}" marker-end="url(#arrow)"/>')
                b.draw(x + (width - b.width) / 2, cy, out)
                cy += b.height + GAP_Y

        return Box(width, height, draw)

    def columns(self, step: Mapping[str, Any],
                columns: list[tuple[str, bool, Sequence[Any]]]) -> Box:
        head = self.node(step)
        inner = [(label, chosen, self.sequence(steps)) for label, chosen, steps in columns]
        widths = [max(b.width, 7.2 * len(label)) + 2 * PAD for label, _, b in inner]
        heights = [LABEL_H + b.height + 2 * PAD for _, _, b in inner]
        row_w = sum(widths) + GAP_X * (len(inner) - 1)
        width = max(NODE_W, row_w)
        row_h = max(heights) if heights else 0
        height = NODE_H + GAP_Y + row_h + GAP_Y / 2

        def draw(x: float, y: float, out: list[str]) -> None:
            head.draw(x + (width - NODE_W) / 2, y, out)
            top = y + NODE_H + GAP_Y
            cx = x + (width - row_w) / 2
            mid = x + width / 2
            bottom = top + row_h + GAP_Y / 2
            for (label, chosen, b), w, h in zip(inner, widths, heights, strict=True):
                col_mid = cx + w / 2
                out.append(f'<path class="edge" d="M{mid},{y + NODE_H} V{top - GAP_Y / 2} '
                           f'H{col_mid} V{top - 3}" marker-end="url(#arrow)"/>')
                cls = "column chosen" if chosen else "column"
                out.append(f'<rect class="{cls}" x="{cx}" y="{top}" width="{w}" '
                           f'height="{h}" rx="6"/>')
                mark = " ✓ chosen" if chosen else ""
                out.append(f'<text class="case" x="{cx + PAD}" y="{top + 16}">'
                           f"{escape(label)}{mark}</text>")
                b.draw(cx + (w - b.width) / 2, top + LABEL_H + PAD, out)
                out.append(f'<path class="edge join" d="M{col_mid},{top + h} '
                           f'V{bottom} H{mid}"/>')
                cx += w + GAP_X

        return Box(width, height, draw)

    def step(self, step: Mapping[str, Any]) -> Box:
        kind = step.get("kind")
        if kind == "branch" and isinstance(step.get("cases"), Sequence):
            state = self.states.get(str(step.get("id")))
            decision = state.decision if state is not None else None
            chosen = _chosen_case(decision)
            cols = []
            for index, case in enumerate(step["cases"]):
                if not isinstance(case, Mapping):
                    continue
                if case.get("default"):
                    label = f"case {index}: default"
                else:
                    label = f"case {index}: " + _clip(exactjson.dumps(case.get("when")), 30)
                cols.append((label, chosen == index, case.get("steps") or []))
            return self.columns(step, cols)
        if kind == "parallel" and isinstance(step.get("branches"), Mapping):
            branches = step["branches"]
            return self.columns(step, [(f"branch {name}", False, branches[name] or [])
                                       for name in sorted(branches)])
        return self.node(step)


def _chosen_case(decision: Any) -> int | None:
    """The case a saved branch decision entered: ``{"blocks": ["case1"], "value":
    {"case": 1}}`` as the kernel saves it (or the kind's bare ``{"case": 1}``)."""
    if not isinstance(decision, Mapping):
        return None
    blocks = decision.get("blocks")
    if isinstance(blocks, Sequence) and not isinstance(blocks, str):
        for name in blocks:
            if isinstance(name, str) and name.startswith("case") and name[4:].isdigit():
                return int(name[4:])
    value = decision.get("value", decision)
    case = value.get("case") if isinstance(value, Mapping) else None
    return case if isinstance(case, int) and not isinstance(case, bool) else None


def render_graph(document: Any, states: Mapping[str, StepState], *, href: Href = None,
                 selected: str | None = None, title: str = "definition graph") -> Markup:
    """The SVG of ``document``'s steps; ``href(step_id)`` makes every step a link."""
    steps = document.get("steps") if isinstance(document, Mapping) else None
    graph = _Graph(states, href, selected)
    box = graph.sequence(steps if isinstance(steps, Sequence) else [])
    margin = 16
    width, height = box.width + 2 * margin, box.height + 2 * margin
    out: list[str] = []
    box.draw(margin, margin, out)
    return Markup(
        f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" role="group" '
        f'aria-label="{escape(title)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/>'
        "</marker></defs>" + "".join(out) + "</svg>"
    )


def states_of(steps: Sequence[Mapping[str, Any]]) -> dict[str, StepState]:
    """Graph states from the instance view's ``steps``."""
    return {str(s["step_id"]): StepState(str(s["phase"]), s.get("decision")) for s in steps}


__all__ = ["StepState", "render_graph", "states_of"]

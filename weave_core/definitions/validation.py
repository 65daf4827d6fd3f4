"""The step tree of a definition and its checks: configs, scopes, references, output types.

``definitions.validate_definition`` checks the top-level fields and hands the step list to
:class:`TreeValidator`, which:

1. walks the tree in document order, validating each step's config with its kind's pydantic
   model (errors mapped to JSON paths and codes) and collecting child blocks;
2. computes every step's output schema bottom-up (a composite sees the output schema of the
   last step of each of its blocks);
3. runs each kind's ``check`` with a :class:`StepContext`, which resolves references against
   the scope of visible steps, computed generically from the kinds' block policies.

Scope rule: a step sees the instance input, the earlier steps of its own step list, and,
through each enclosing block, the steps before the enclosing composite. Looking into an
earlier composite, the children of an ``all`` composite (``parallel``) are guaranteed to have
succeeded; those of a ``one`` composite (``branch``) are not, so they may only be tested with
``exists``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from weave_core.definitions.expressions import (
    REF_KEY,
    ExpressionError,
    Ref,
    RefUse,
    condition_refs,
    is_ref,
    parse_ref,
    template_refs,
)
from weave_core.definitions.problems import loc_path, pydantic_problems
from weave_core.definitions.schema_paths import NEEDED_TYPES, descend, schema_types
from weave_core.foundation.errors import Problem
from weave_core.foundation.exactjson import JSON, size_of
from weave_core.plugins.nodespec import JsonSchema, NodeKind
from weave_sdk import docformat
from weave_sdk.errors import Problem as SdkProblem

# The step id rule and the path spelling are the format's, shared with the SDK's validation.
STEP_ID = docformat.STEP_ID
key_path = docformat.key_path


# --- the parsed tree -------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StepNode:
    """One step of a validated definition, with its parsed config and child blocks."""

    id: str
    kind: str
    path: str
    """JSON path of the step, e.g. ``$.steps[1].cases[0].steps[0]``."""
    config: BaseModel
    blocks: tuple[Block, ...] = ()
    output_schema: JsonSchema | None = None

    def walk(self) -> list[StepNode]:
        """This step and every step below it, in document order."""
        found = [self]
        for block in self.blocks:
            for child in block.steps:
                found.extend(child.walk())
        return found


@dataclass(frozen=True, eq=False)
class Block:
    """A composite's named child step list (``case0`` of a branch, a parallel branch name)."""

    name: str
    path: str
    steps: tuple[StepNode, ...]


@dataclass(eq=False)
class _Node:
    """A step while it is being validated (possibly broken: no kind, no config)."""

    id: str | None
    path: str
    kind: NodeKind | None
    config: BaseModel | None
    chain: tuple[tuple[str, int], ...]
    """(step list key, index) from the top level down: the step's position in the tree."""
    ancestors: tuple[_Node, ...]
    blocks: list[tuple[str, str, list[_Node]]] = field(default_factory=list)
    output: JsonSchema | None = None


# --- the context a kind checks against -----------------------------------------------


class StepContext:
    """The :class:`~weave_core.nodespec.CheckContext` of one step."""

    def __init__(self, tree: TreeValidator, node: _Node) -> None:
        self._tree = tree
        self._node = node

    @property
    def path(self) -> str:
        return self._node.path

    def problem(self, path: str, code: str, message: str) -> None:
        self._tree.problems.append(Problem(self._node.path + path, code, message))

    def limit(self, name: str) -> int:
        return self._tree.limit(name)

    def check_template(self, template: JSON, path: str) -> None:
        maximum = self.limit("max_value_bytes")
        size = size_of(template)
        if size > maximum:
            self.problem(
                path,
                "value_too_large",
                f"the template is {size} bytes; the limit max_value_bytes is {maximum}",
            )
        problems, uses = template_refs(template, self._node.path + path)
        self._report(problems, uses)

    def check_condition(self, condition: JSON, path: str) -> None:
        problems, uses = condition_refs(condition, self._node.path + path)
        self._report(problems, uses)

    def schema_of(self, template: JSON) -> JsonSchema | None:
        """Declared schema of a bare reference visible here (``None``: any or not resolvable)."""
        if not is_ref(template):
            return None
        try:
            ref = parse_ref(template[REF_KEY])
        except ExpressionError:
            return None
        problem, schema = self._tree.resolve(self._node, RefUse("", ref, "any"))
        return None if problem else schema

    def _report(self, problems: list[Problem], uses: list[RefUse]) -> None:
        self._tree.problems.extend(problems)
        for use in uses:
            problem, _ = self._tree.resolve(self._node, use)
            if problem is not None:
                self._tree.problems.append(problem)


# --- the walker -----------------------------------------------------------------------


class TreeValidator:
    """Validates a step list; ``problems`` collects everything found."""

    def __init__(
        self,
        kinds: Mapping[str, NodeKind],
        limits: Mapping[str, int],
        input_schema: JsonSchema | None,
    ) -> None:
        self._kinds = kinds
        self._limits = limits
        self._input_schema = input_schema
        self.problems: list[Problem] = []
        self._nodes: list[_Node] = []
        self._by_id: dict[str, _Node] = {}
        self._too_deep = False

    def limit(self, name: str) -> int:
        return self._limits[name]

    def run(self, steps: Sequence[JSON], path: str) -> tuple[StepNode, ...] | None:
        """Validate ``steps``; return the parsed tree, or ``None`` when a problem was found."""
        top = self._walk_list(steps, path, "", ())
        maximum = self.limit("max_steps")
        if len(self._nodes) > maximum:
            self.problems.append(
                Problem(
                    path,
                    "too_many_steps",
                    f"{len(self._nodes)} steps; the limit max_steps is {maximum}",
                )
            )
        for node in reversed(self._nodes):  # children come after parents: compute bottom-up
            self._guarded(node, "output_schema", partial(self._compute_output, node))
        for node in self._nodes:
            if node.kind is not None and node.config is not None:
                check = partial(node.kind.check, node.config, StepContext(self, node))
                self._guarded(node, "check", check)
        if self.problems:
            return None
        return tuple(self._freeze(node) for node in top)

    # walking

    def _walk_list(
        self, steps: Sequence[JSON], path: str, key: str, parents: tuple[_Node, ...]
    ) -> list[_Node]:
        nodes: list[_Node] = []
        depth = len(parents) + 1
        for index, raw in enumerate(steps):
            here = f"{path}[{index}]"
            if depth > self.limit("max_nesting"):
                if not self._too_deep:
                    self.problems.append(
                        Problem(
                            here,
                            "nesting_too_deep",
                            f"steps nest {depth} deep; the limit max_nesting is "
                            f"{self.limit('max_nesting')}",
                        )
                    )
                self._too_deep = True
                return nodes
            chain = (*(parents[-1].chain if parents else ()), (key, index))
            node = self._walk_step(raw, here, chain, parents)
            if node is not None:
                nodes.append(node)
        return nodes

    def _walk_step(
        self, raw: JSON, path: str, chain: tuple[tuple[str, int], ...], parents: tuple[_Node, ...]
    ) -> _Node | None:
        envelope = docformat.step_envelope(raw, path)  # the format's rules for every step
        if envelope.problem is not None or not isinstance(raw, Mapping):
            self.problems.extend(_engine(p) for p in (envelope.problem,) if p is not None)
            return None
        step_id = self._step_id(envelope, path)
        kind = self._step_kind(raw, envelope, path)
        node = _Node(step_id, path, kind, None, chain, parents)
        self._nodes.append(node)
        if step_id is not None:
            self._by_id.setdefault(step_id, node)
        if kind is None:
            return node
        fields = {k: v for k, v in raw.items() if k not in ("id", "kind")}
        try:
            node.config = kind.config_model.model_validate(fields)
        except PydanticValidationError as exc:
            self.problems.extend(pydantic_problems(exc, path, fields))
            return node
        for name, steps in kind.blocks(node.config).items():
            block_path = path + kind.block_path(node.config, name)
            children = self._walk_list(steps, block_path, f"{path}|{name}", (*parents, node))
            node.blocks.append((name, block_path, children))
        return node

    def _step_id(self, envelope: docformat.Envelope, path: str) -> str | None:
        if envelope.id_problem is not None:
            self.problems.append(_engine(envelope.id_problem))
            return None
        step_id = envelope.step_id
        assert step_id is not None
        first = self._by_id.get(step_id)
        if first is not None:
            self.problems.append(
                Problem(
                    f"{path}.id",
                    "duplicate_step_id",
                    f"step id {step_id!r} is already used at {first.path}; ids are unique "
                    "across the whole definition",
                )
            )
        return step_id

    def _step_kind(
        self, raw: Mapping[str, JSON], envelope: docformat.Envelope, path: str
    ) -> NodeKind | None:
        if envelope.kind_problem is not None:
            self.problems.append(_engine(envelope.kind_problem))
            return None
        name = raw["kind"]
        kind = self._kinds.get(name) if isinstance(name, str) else None
        if kind is None:
            self.problems.append(
                Problem(
                    f"{path}.kind",
                    "unknown_kind",
                    f"no installed node plugin serves kind {name!r}; known kinds: "
                    f"{', '.join(sorted(self._kinds))}",
                )
            )
        return kind

    def _guarded(self, node: _Node, method: str, call: Callable[[], None]) -> None:
        """Run a kind's method; a plugin that raises becomes a problem, never a 500."""
        try:
            call()
        except Exception as exc:  # a third-party kind's bug must not fail the request
            kind_name = node.kind.kind if node.kind is not None else "?"
            self.problems.append(
                Problem(
                    node.path,
                    "plugin_failed",
                    f"node kind {kind_name!r} raised {type(exc).__name__} in {method}(): {exc}",
                )
            )

    def _compute_output(self, node: _Node) -> None:
        if node.kind is None or node.config is None:
            return
        outputs = {
            name: (children[-1].output if children else None) for name, _, children in node.blocks
        }
        node.output = node.kind.output_schema(node.config, outputs)

    def _freeze(self, node: _Node) -> StepNode:
        assert node.id is not None and node.kind is not None and node.config is not None
        blocks = tuple(
            Block(name, path, tuple(self._freeze(child) for child in children))
            for name, path, children in node.blocks
        )
        return StepNode(node.id, node.kind.kind, node.path, node.config, blocks, node.output)

    # references

    def resolve(self, consumer: _Node, use: RefUse) -> tuple[Problem | None, JsonSchema | None]:
        """Check one reference use from ``consumer``: (problem or None, declared schema)."""
        ref = use.ref

        def fail(code: str, message: str) -> tuple[Problem, None]:
            return Problem(use.path, code, f"{ref.text}: {message}"), None

        if ref.root == "input":
            source = self._input_schema
        else:
            target = self._by_id.get(ref.step_id or "")
            if target is None:
                return fail("ref_unknown_step", f"no step has the id {ref.step_id!r}")
            relation = self._relation(target, consumer)
            if relation == "ref_not_guaranteed" and use.need == "exists":
                relation = None
            if relation is not None:
                return fail(relation, _RELATION_MESSAGES[relation])
            source = target.output
        schema, error = descend(source, ref.path)
        if error:
            return fail("ref_unknown_field", error)
        return self._need_problem(ref, use, schema), schema

    def _relation(self, target: _Node, consumer: _Node) -> str | None:
        t, c = target.chain, consumer.chain
        k = 0
        while k < len(t) and k < len(c) and t[k] == c[k]:
            k += 1
        if k == len(t) or k == len(c):
            return "ref_forward"  # itself, its own child, or its enclosing composite
        if t[k][0] != c[k][0]:
            return "ref_cross_branch"
        if t[k][1] > c[k][1]:
            return "ref_forward"
        for composite in target.ancestors[k:]:
            if composite.kind is None or composite.kind.block_policy != "all":
                return "ref_not_guaranteed"
        return None

    @staticmethod
    def _need_problem(ref: Ref, use: RefUse, schema: JsonSchema | None) -> Problem | None:
        if use.need not in NEEDED_TYPES or schema is None:
            return None
        types = schema_types(schema)
        allowed, label = NEEDED_TYPES[use.need]
        if types is None or types & allowed:
            return None
        return Problem(
            use.path,
            "ref_type_mismatch",
            f"{ref.text}: this use needs {label}, but the value is declared "
            f"{'/'.join(sorted(types))}",
        )


def _engine(problem: SdkProblem) -> Problem:
    return Problem(problem.path, problem.code, problem.message)


_RELATION_MESSAGES = {
    "ref_forward": "reads itself, a step inside itself, its enclosing step or a later step; "
    "a step may only read steps that finish before it starts",
    "ref_cross_branch": "reads a step of another branch of the same composite, which is "
    "never joined before this step runs",
    "ref_not_guaranteed": "reads a step inside a branch case that may not have run; test it "
    "with {'exists': ...} or read it inside the case",
}


__all__ = [
    "STEP_ID",
    "Block",
    "StepContext",
    "StepNode",
    "TreeValidator",
    "descend",
    "key_path",
    "loc_path",
    "pydantic_problems",
]

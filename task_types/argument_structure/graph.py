"""Argument structures (CheckWhy): steps, the compact text form and the well-formedness check.
Pure Python (no Django), shared by the answer serializer, the importer, the judges and exports;
the metrics against a reference structure are :mod:`metrics.argument_structure` (re-exported
here). ``static/argument_structure/graph.js`` mirrors the check and the parser for live feedback
in the browser and is kept equal to this module by a parity test.

A structure is a list of steps ``{"premises": [ids], "conclusion": id or "claim"}``: the premises
jointly support the conclusion. Nodes are evidence ids and the claim. Link types: one-to-one (a
step with one premise), many-to-one (a step with several premises) and one-to-many (one statement
used as a premise of several steps).

Compact text form: chains separated by ``;``; in a chain, ``A -> B -> C`` is the steps A→B and
B→C; a group ``(E1, E2)`` on the left of an arrow is a step's premises, on the right it gives one
step per member (``E1 -> (E2, E3)`` is E1→E2 and E1→E3). ``claim`` is the claim (any case).
Example: ``(E1, E2) -> E3 -> E6; (E5, E6) -> claim``. :func:`to_compact` writes the steps in their
order and :func:`parse_compact` reads them back unchanged (a parity and round-trip test holds it).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from metrics.argument_structure import (  # noqa: F401  (re-exported: the graph module is the task type's one place for structures)
    CLAIM,
    edges,
    leaves,
    node_id,
    normalise_steps,
    step_keys,
    structure_metrics,
)

ID_PATTERN = r"[A-Za-z0-9_]+(?:[.\-][A-Za-z0-9_]+)*"
_ID_RE = re.compile(rf"^{ID_PATTERN}$")
_TOKEN_RE = re.compile(rf"\s*(?:(?P<arrow>->)|(?P<id>{ID_PATTERN})|(?P<punct>[(),;])|(?P<bad>\S))")


# --- steps ---------------------------------------------------------------------------------------


def is_valid_id(value: str) -> bool:
    """Whether ``value`` can name an evidence statement (letters, digits, ``_``, inner ``.``/``-``;
    not ``claim``, which names the claim)."""
    return bool(_ID_RE.match(value)) and value.lower() != CLAIM


# --- compact text form ---------------------------------------------------------------------------


class StructureSyntaxError(ValueError):
    """Compact text that cannot be read; ``column`` is 1-based."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(f"{message} (column {column})")
        self.message = message
        self.column = column


def _tokens(text: str) -> list[tuple[str, str, int]]:
    tokens = []
    position = 0
    while position < len(text):
        match = _TOKEN_RE.match(text, position)
        if match is None:  # only trailing whitespace is left
            break
        kind = match.lastgroup
        value = match.group(kind)
        column = match.start(kind) + 1
        if kind == "bad":
            raise StructureSyntaxError(f"unexpected character {value!r}", column)
        tokens.append((kind, value, column))
        position = match.end()
    return tokens


def parse_compact(text: str) -> list[dict]:
    """Steps from the compact text form; raises :class:`StructureSyntaxError` with the column."""
    return _CompactParser(text).steps()


class _CompactParser:
    """A recursive-descent reading of ``chain (';' chain)*`` where ``chain = group ('->'
    group)+`` and ``group = id | '(' id (',' id)* ')'``."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.end_column = len(text.rstrip()) + 1
        self.index = 0

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def _found(self, token: tuple[str, str, int] | None) -> tuple[str, int]:
        """How a problem names ``token``, and its column (the end for no token)."""
        return ("the end", self.end_column) if token is None else (repr(token[1]), token[2])

    def steps(self) -> list[dict]:
        steps: list[dict] = []
        while self.index < len(self.tokens):
            steps += self.chain()
            token = self.peek()
            if token is None:
                break
            self.index += 1  # the ';' (chain checked it)
        return steps

    def chain(self) -> list[dict]:
        chain_column = self.tokens[self.index][2]
        steps = []
        left = self.group()
        while (token := self.peek()) is not None and token[0] == "arrow":
            self.index += 1
            right = self.group()
            steps += [
                {"premises": list(dict.fromkeys(left)), "conclusion": conclusion}
                for conclusion in right
            ]
            left = right
        token = self.peek()
        if token is not None and token[1] != ";":
            raise StructureSyntaxError(f"expected '->' or ';' but found {token[1]!r}", token[2])
        if not steps:
            raise StructureSyntaxError(
                "a part without '->' (write premises -> conclusion)", chain_column
            )
        return steps

    def group(self) -> list[str]:
        token = self.peek()
        if token is None:
            raise StructureSyntaxError("expected an evidence id, 'claim' or '('", self.end_column)
        kind, value, column = token
        self.index += 1
        if kind == "id":
            return [node_id(value)]
        if value != "(":
            raise StructureSyntaxError(
                f"expected an evidence id, 'claim' or '(' but found {value!r}", column
            )
        return self.members()

    def members(self) -> list[str]:
        members = []
        while True:
            token = self.peek()
            if token is None or token[0] != "id":
                found, column = self._found(token)
                raise StructureSyntaxError(
                    f"expected an evidence id inside '(' but found {found}", column
                )
            members.append(node_id(token[1]))
            self.index += 1
            token = self.peek()
            if token is not None and token[1] in (",", ")"):
                self.index += 1
                if token[1] == ")":
                    return members
                continue
            found, column = self._found(token)
            raise StructureSyntaxError(f"expected ',' or ')' but found {found}", column)


def _group_text(nodes: Sequence[str]) -> str:
    return nodes[0] if len(nodes) == 1 else "(" + ", ".join(nodes) + ")"


def to_compact(steps: Sequence[Mapping]) -> str:
    """The compact text of ``steps``, in their order: a step continues the previous chain when
    its only premise is the previous step's conclusion. Reading it back gives the same steps."""
    chains: list[str] = []
    previous: Mapping | None = None
    for step in steps:
        premises = list(step["premises"])
        if previous is not None and premises == [previous["conclusion"]]:
            chains[-1] += f" -> {step['conclusion']}"
        else:
            chains.append(f"{_group_text(premises)} -> {step['conclusion']}")
        previous = step
    return "; ".join(chains)


# --- the well-formedness check -------------------------------------------------------------------


def gettext_noop(message: str) -> str:
    """Marks ``message`` for the package's catalogue (``make messages`` extracts it) without
    importing Django: the Django layer translates it (:meth:`Problem.render`)."""
    return message


Param = int | str | tuple[str, ...]


def _english(message: str) -> str:
    return message


@dataclass(frozen=True)
class Problem:
    """One reason a structure cannot be submitted; ``step`` is 0-based when the problem is in a
    step, ``nodes`` the statements it concerns.

    ``template`` is the message in English with ``%(name)s`` placeholders (a message id of the
    package's catalogue) and ``params`` their values: a number, a text, or a tuple of statements
    (written as a list, the claim by name). :attr:`message` is the English text; the serializer
    renders it in the annotator's language with ``render(gettext)``."""

    code: str
    template: str
    step: int | None = None
    nodes: tuple[str, ...] = ()
    params: tuple[tuple[str, Param], ...] = ()

    @property
    def message(self) -> str:
        return self.render()

    def render(self, translate: Callable[[str], str] = _english) -> str:
        """The message with ``translate`` (e.g. Django's ``gettext``) applied to the template
        and to the claim's name."""
        values = {name: _param_text(value, translate) for name, value in self.params}
        return translate(self.template) % values

    def as_dict(self) -> dict:
        return {
            "code": self.code,
            "message": self.message,
            "step": self.step,
            "nodes": list(self.nodes),
        }


def _param_text(value: Param, translate: Callable[[str], str]) -> int | str:
    if isinstance(value, tuple):
        return ", ".join(translate(gettext_noop("the claim")) if n == CLAIM else n for n in value)
    return value


def check_structure(
    evidence_ids: Sequence[str], steps: Sequence[Mapping], *, require_all_evidence: bool = True
) -> list[Problem]:
    """Every problem that keeps ``steps`` from being a well-formed argument for the claim, in a
    fixed order (the browser shows the same list, from the mirrored JS check):

    1. per step: no premises, the claim used as a premise, an unknown id, a missing conclusion,
       a step that repeats an earlier one;
    2. no steps at all, or no step concluding the claim;
    3. cycles (a statement supporting itself, directly or through other steps);
    4. parts not connected to the claim, evidence used in no step (when ``require_all_evidence``),
       and statements connected to the claim that do not lead to it.
    """
    steps = normalise_steps(steps)
    known = list(dict.fromkeys(evidence_ids))
    problems = _step_problems(steps, set(known))
    if not steps:
        problems.append(
            Problem(
                "empty",
                gettext_noop("The structure has no steps yet: link the evidence to the claim."),
            )
        )
        return problems
    if not any(s["conclusion"] == CLAIM for s in steps):
        problems.append(
            Problem(
                "no_claim_step",
                gettext_noop(
                    "No step concludes the claim yet: link the final statements to the claim."
                ),
            )
        )
    order, ordered = _support_graph(steps, known)
    for cycle in _cycles(order, ordered):
        problems.append(
            Problem(
                "cycle",
                gettext_noop(
                    "Cycle: %(cycle)s. A statement cannot support itself, even through other steps."
                ),
                None,
                tuple(cycle[:-1]),
                (("cycle", " → ".join(cycle)),),
            )
        )
    problems.extend(_connection_problems(steps, known, ordered, require_all_evidence))
    return problems


def _step_problems(steps: Sequence[Mapping], known: set[str]) -> list[Problem]:
    """Problems of single steps: no premises, the claim as a premise, unknown ids, no
    conclusion, a step repeating an earlier one."""
    problems: list[Problem] = []
    seen_steps: dict[tuple[frozenset[str], str], int] = {}
    for i, step in enumerate(steps):
        number = i + 1
        premises, conclusion = step["premises"], step["conclusion"]
        if not premises:
            problems.append(
                Problem(
                    "no_premises",
                    gettext_noop(
                        "Step %(n)s has no premises: choose at least one statement that supports "
                        "its conclusion."
                    ),
                    i,
                    params=(("n", number),),
                )
            )
        problems.extend(_premise_problems(premises, known, i))
        if not conclusion:
            problems.append(
                Problem(
                    "no_conclusion",
                    gettext_noop("Step %(n)s has no conclusion."),
                    i,
                    params=(("n", number),),
                )
            )
        elif conclusion != CLAIM and conclusion not in known:
            problems.append(
                Problem(
                    "unknown_id",
                    gettext_noop("Step %(n)s concludes %(id)s, which is not an evidence id."),
                    i,
                    (conclusion,),
                    (("n", number), ("id", conclusion)),
                )
            )
        key = (frozenset(premises), conclusion)
        if premises and conclusion and key in seen_steps:
            problems.append(
                Problem(
                    "duplicate_step",
                    gettext_noop("Step %(n)s repeats step %(earlier)s."),
                    i,
                    params=(("n", number), ("earlier", seen_steps[key] + 1)),
                )
            )
        else:
            seen_steps.setdefault(key, i)
    return problems


def _premise_problems(premises: Sequence[str], known: set[str], i: int) -> list[Problem]:
    problems = []
    for premise in premises:
        if premise == CLAIM:
            problems.append(
                Problem(
                    "claim_as_premise",
                    gettext_noop(
                        "Step %(n)s uses the claim as a premise; the claim can only be a "
                        "conclusion."
                    ),
                    i,
                    (CLAIM,),
                    (("n", i + 1),),
                )
            )
        elif premise not in known:
            problems.append(
                Problem(
                    "unknown_id",
                    gettext_noop("Step %(n)s uses %(id)s, which is not an evidence id."),
                    i,
                    (premise,),
                    (("n", i + 1), ("id", premise)),
                )
            )
    return problems


def _support_graph(
    steps: Sequence[Mapping], known: list[str]
) -> tuple[list[str], dict[str, list[str]]]:
    """The nodes in a fixed order (evidence, unknown ids, the claim) and each node's successors
    (the conclusions it supports), sorted in that order.

    Unknown ids (reported by the step check) stay in the graph as nodes, so that a typo in one
    step does not also make the statements around it look disconnected; edges out of the claim
    are left out, as the claim-as-premise problem already names them."""
    known_set = set(known)
    unknown = [
        node
        for step in steps
        for node in [*step["premises"], step["conclusion"]]
        if node and node != CLAIM and node not in known_set
    ]
    order = [*known, *dict.fromkeys(unknown), CLAIM]
    rank = {node: n for n, node in enumerate(order)}
    successors: dict[str, set[str]] = {node: set() for node in order}
    for step in steps:
        conclusion = step["conclusion"]
        if conclusion not in rank:
            continue
        for premise in step["premises"]:
            if premise in rank and premise != CLAIM:
                successors[premise].add(conclusion)
    return order, {node: sorted(successors[node], key=rank.__getitem__) for node in order}


def _connection_problems(
    steps: Sequence[Mapping],
    known: list[str],
    ordered: Mapping[str, Sequence[str]],
    require_all_evidence: bool,
) -> list[Problem]:
    """Parts not connected to the claim, unused evidence, and statements connected to the claim
    that do not lead to it."""
    problems: list[Problem] = []
    used = {p for s in steps for p in s["premises"]} | {s["conclusion"] for s in steps}
    nodes = [n for n in known if require_all_evidence or n in used]
    component = _components([*nodes, CLAIM], ordered)
    claim_part = component[CLAIM]
    reported: set[int] = set()
    for node in nodes:
        part = component[node]
        if part == claim_part or part in reported:
            continue
        reported.add(part)
        members = [n for n in nodes if component[n] == part]
        if len(members) == 1 and node not in used:
            problems.append(
                Problem(
                    "unused",
                    gettext_noop(
                        "%(id)s is not used in any step: link it to the structure or delete it "
                        "in stage 1."
                    ),
                    None,
                    (node,),
                    (("id", node),),
                )
            )
        else:
            problems.append(_disconnected(members))
    reaches = _reaching(CLAIM, ordered)
    for node in nodes:
        if component[node] == claim_part and node not in reaches:
            problems.append(
                Problem(
                    "not_reaching_claim",
                    gettext_noop(
                        "%(id)s does not lead to the claim: use it as a premise of a step "
                        "towards the claim."
                    ),
                    None,
                    (node,),
                    (("id", node),),
                )
            )
    return problems


def _disconnected(members: Sequence[str]) -> Problem:
    """A part (one statement or several) with no connection to the claim."""
    if len(members) > 1:
        return Problem(
            "disconnected",
            gettext_noop("%(ids)s form a part that is not connected to the claim."),
            None,
            tuple(members),
            (("ids", tuple(members)),),
        )
    return Problem(
        "disconnected",
        gettext_noop("%(id)s is not connected to the claim."),
        None,
        tuple(members),
        (("id", members[0]),),
    )


def _cycles(order: Sequence[str], successors: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """One shortest cycle per strongly connected component that has one, as a closed path
    starting and ending at the component's first node in ``order``."""
    cycles = []
    done: set[str] = set()
    for start in order:
        if start in done:
            continue
        # Nodes on a cycle through `start` are those both reachable from it and reaching it.
        forward = _reachable(start, successors)
        if start not in forward:
            continue
        predecessors: dict[str, list[str]] = {n: [] for n in order}
        for node in order:
            for nxt in successors[node]:
                predecessors[nxt].append(node)
        backward = _reachable(start, predecessors)
        members = forward & backward
        done |= members
        # Breadth-first from start back to start, inside the component, successors in order.
        parent: dict[str, str] = {}
        queue = deque([start])
        found = None
        while queue and found is None:
            node = queue.popleft()
            for nxt in successors[node]:
                if nxt not in members:
                    continue
                if nxt == start:
                    found = node
                    break
                if nxt not in parent:
                    parent[nxt] = node
                    queue.append(nxt)
        path = [start]
        node = found
        while node != start:
            path.append(node)
            node = parent[node]
        path.append(start)
        cycles.append([path[0], *reversed(path[1:-1]), start])
    return cycles


def _reachable(start: str, successors: Mapping[str, Sequence[str]]) -> set[str]:
    """Nodes reachable from ``start`` by one or more edges."""
    seen: set[str] = set()
    stack = list(successors[start])
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(successors[node])
    return seen


def _reaching(target: str, successors: Mapping[str, Sequence[str]]) -> set[str]:
    """Nodes with a path to ``target``."""
    predecessors: dict[str, list[str]] = {n: [] for n in successors}
    for node, nexts in successors.items():
        for nxt in nexts:
            predecessors[nxt].append(node)
    return _reachable(target, predecessors)


def _components(nodes: Sequence[str], successors: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Weakly connected component number of each node (numbered in ``nodes`` order)."""
    neighbours: dict[str, set[str]] = {n: set() for n in successors}
    for node, nexts in successors.items():
        for nxt in nexts:
            neighbours[node].add(nxt)
            neighbours[nxt].add(node)
    component: dict[str, int] = {}
    for number, node in enumerate(nodes):
        if node in component:
            continue
        stack = [node]
        while stack:
            current = stack.pop()
            if current in component:
                continue
            component[current] = number
            stack.extend(neighbours[current])
    return component


def unknown_ids(evidence_ids: Iterable[str], steps: Iterable[Mapping]) -> list[tuple[int, str]]:
    """``(0-based step, id)`` for every id a step names that is neither evidence nor the claim."""
    known = set(evidence_ids) | {CLAIM}
    found = []
    for i, step in enumerate(steps):
        for node in [*step["premises"], step["conclusion"]]:
            if node and node not in known:
                found.append((i, node))
    return found

"""The browser's structure check and parser (task_types/argument_structure/static/argument_structure/graph.js, run under Node) give
exactly the server's results (task_types/argument_structure/graph.py)."""

import json
import random
import shutil
import subprocess

import pytest

from task_types.argument_structure.graph import (
    CLAIM,
    StructureSyntaxError,
    check_structure,
    parse_compact,
    to_compact,
)
from tests.conftest import REPO, require

SCRIPT = REPO / "task_types" / "argument_structure" / "static" / "argument_structure" / "graph.js"
RUNNER = """
const G = require(process.argv[1]);
const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = {
  checks: cases.checks.map(([ids, steps]) => G.checkStructure(ids, steps)),
  parses: cases.parses.map((text) => {
    try { const steps = G.parseCompact(text); return { steps, text: G.toCompact(steps) }; }
    catch (e) { return { error: e.detail, column: e.column }; }
  }),
};
process.stdout.write(JSON.stringify(out));
"""

FIXED_CHECKS = [
    (["E1", "E2", "E3", "E4"], parse_compact("(E1, E2) -> E3; (E3, E4) -> claim")),
    (["E1", "E2", "E3", "E4"], parse_compact("(E1, E2) -> E3 -> E1; (E3, E4) -> claim")),
    (["E1", "E2", "E3", "E4", "E5", "E6"], parse_compact("(E1, E2) -> E3; E5 -> E6; E3 -> claim")),
    (["E1", "E2", "E3"], parse_compact("E1 -> E9 -> claim; claim -> E2; E2 -> E2")),
    (["E1", "E2"], []),
    (["E1", "E2"], [{"premises": [], "conclusion": "E1"}, {"premises": ["E1"], "conclusion": ""}]),
    (["E1", "E2", "E3"], parse_compact("E1 -> E2; (E2, E1) -> claim; (E1, E2) -> claim; E1 -> E3")),
]
PARSES = [
    "(E1, E2) -> E3 -> E6; (E5, E6) -> claim",
    "E1 -> (E2, E3) -> E4 -> Claim;",
    "  ",
    "E1 E2 -> claim",
    "(E1, E2 -> claim",
    "E1 -> ",
    "E1; E2 -> claim",
    "E1 -> E2 & claim",
    "() -> claim",
    "a.b-c -> x_1 -> claim",
]


def random_checks(count: int) -> list:
    rng = random.Random(7)
    cases = []
    for _ in range(count):
        ids = [f"E{i}" for i in range(1, rng.randint(2, 7))]
        pool = [*ids, CLAIM, "E99"]
        steps = [
            {
                "premises": rng.sample(pool, rng.randint(0, min(3, len(pool)))),
                "conclusion": rng.choice([*pool, ""]),
            }
            for _ in range(rng.randint(0, 6))
        ]
        cases.append((ids, steps))
    return cases


def python_parse(text: str) -> dict:
    try:
        steps = parse_compact(text)
    except StructureSyntaxError as exc:
        return {"error": exc.message, "column": exc.column}
    return {"steps": steps, "text": to_compact(steps)}


@pytest.fixture(scope="module")
def node():
    path = shutil.which("node")
    require(path is not None, "needs Node.js to run the browser's check")
    return path


def test_the_javascript_check_and_parser_match_the_python_ones(node):
    checks = FIXED_CHECKS + random_checks(300)
    cases = {"checks": checks, "parses": PARSES}
    result = subprocess.run(
        [node, "-e", RUNNER, str(SCRIPT)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    out = json.loads(result.stdout)
    for (ids, steps), got in zip(checks, out["checks"], strict=True):
        expected = [p.as_dict() for p in check_structure(ids, steps)]
        assert got == expected, (ids, steps)
    for text, got in zip(PARSES, out["parses"], strict=True):
        assert got == python_parse(text), text

"""The house's rules that no linter checks: nothing about a task type lives outside its package,
and no function grows past what a reader can hold."""

from __future__ import annotations

import ast
import re

from annotation import task_types
from tests.conftest import REPO

CORE = [
    "config",
    "core",
    "metrics",
    "projects",
    "annotation",
    "crowd",
    "llm_judges",
    "agreement",
    "studies",
    "templates",
    "static",
]
MAX_FUNCTION_LINES = 80


def _files(*suffixes: str):
    for folder in CORE:
        for path in (REPO / folder).rglob("*"):
            if (
                path.suffix in suffixes
                and "migrations" not in path.parts
                and "vendor" not in path.parts
            ):
                yield path


def test_no_generic_code_names_a_task_type():
    slugs = [t.slug for t in task_types.all_task_types()]
    assert len(slugs) >= 5
    alternatives = "|".join(map(re.escape, slugs))
    quoted = re.compile(r"""["'](""" + alternatives + r""")["']""")
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in _files(".py", ".html", ".js", ".css")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if quoted.search(line)
    ]
    assert found == []


def test_templates_and_static_files_hold_nothing_of_one_task_type():
    slugs = {t.slug for t in task_types.all_task_types()}
    named = [
        str(path.relative_to(REPO))
        for folder in ("templates", "static")
        for path in (REPO / folder).rglob("*")
        if any(slug in path.name for slug in slugs)
    ]
    assert named == []


def test_no_function_is_longer_than_a_reader_can_hold():
    roots = [*CORE[:-2], "task_types"]
    long = []
    for folder in roots:
        for path in (REPO / folder).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({lines})")
    assert long == []


def test_higher_apps_register_their_hooks_at_start_up():
    """``annotation`` calls up only through hooks that higher apps fill in ``ready()``."""
    from agreement.reports.sections import report_registry
    from annotation.hooks import assignment_scopes
    from crowd.selectors import in_current_session
    from llm_judges.prompts import prompt_registry
    from studies.demos import demos

    assert in_current_session in assignment_scopes
    slugs = {t.slug for t in task_types.all_task_types()}
    assert set(report_registry.keys()) >= slugs
    assert set(prompt_registry.keys()) >= slugs
    assert {demo.task_type for demo in demos()} >= slugs


# llm_judges joins when its services package lands
CHECKED_APPS = [
    "core",
    "metrics",
    "projects",
    "webhooks",
    "annotation",
    "crowd",
    "llm_judges",
    "agreement",
    "studies",
]
# Public services and selectors allowed positional parameters, and why. Only that rule is waived:
# their parameters and return still need types.
POSITIONAL_ALLOWED = {
    "crowd/selectors.py:in_current_session": (
        "an assignment scope registered in annotation.hooks, called as scope(assignments, user=user)"
    ),
}


def _service_and_selector_files():
    for folder in CHECKED_APPS:
        for path in (REPO / folder).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            if path.name in ("services.py", "selectors.py") or "services" in path.parts:
                yield path


def test_services_and_selectors_take_typed_keyword_only_arguments():
    """HackSoft's rule: ``def project_progress(*, project: Project) -> dict:``."""
    bad = []
    for path in _service_and_selector_files():
        name = path.relative_to(REPO).as_posix()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name.startswith(
                "_"
            ):
                continue
            args = node.args
            problems = [] if node.returns else ["no return type"]
            problems += [
                f"{arg.arg} untyped"
                for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]
                if arg.annotation is None
            ]
            positional = [arg.arg for arg in [*args.posonlyargs, *args.args]]
            if positional and f"{name}:{node.name}" not in POSITIONAL_ALLOWED:
                problems.append("positional: " + ", ".join(positional))
            if problems:
                bad.append(f"{name}:{node.lineno} {node.name}: {'; '.join(problems)}")
    assert bad == []


# --- one error contract (issue 25) ---------------------------------------------------------------

RESPONSE_CLASSES = {"Response", "HttpResponse", "JsonResponse", "StreamingHttpResponse"}
# Django's error response classes: each is a status by hand.
ERROR_RESPONSE_CLASSES = {
    "HttpResponseBadRequest",
    "HttpResponseForbidden",
    "HttpResponseNotFound",
    "HttpResponseNotAllowed",
    "HttpResponseGone",
    "HttpResponseServerError",
}
# The one place that maps refusals and Django's own errors to HTTP.
ERROR_MAPPERS = ("core/errors.py", "core/error_views.py", "core/middleware.py")


def _error_status(node: ast.expr) -> int | None:
    """The status a ``status=`` argument names when it is an error: ``400``, ``status=409``,
    ``status.HTTP_404_NOT_FOUND``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value if node.value >= 400 else None
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    match = re.match(r"HTTP_(\d{3})_", name or "")
    if match and int(match[1]) >= 400:
        return int(match[1])
    return None


def _names_detail(node: ast.expr) -> bool:
    return isinstance(node, ast.Dict) and any(
        isinstance(key, ast.Constant) and key.value == "detail" for key in node.keys
    )


def hand_built_errors(source: str, name: str) -> list[str]:
    """Error responses built by hand in ``source``: a response class called with an error
    status, Django's error response classes, and ``Response({"detail": …})`` with an error
    status (a refusal is raised instead, and mapped in one place)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called in ERROR_RESPONSE_CLASSES:
            found.append(f"{name}:{node.lineno} {called}(…)")
            continue
        if called not in RESPONSE_CLASSES:
            continue
        statuses = [_error_status(k.value) for k in node.keywords if k.arg == "status"]
        statuses += [_error_status(arg) for arg in node.args[1:2] if called == "Response"]
        status = next((s for s in statuses if s), None)
        if status is not None:
            detail = " with a detail" if node.args and _names_detail(node.args[0]) else ""
            found.append(f"{name}:{node.lineno} {called}(…, status={status}){detail}")
    return found


def test_no_view_builds_an_error_response_by_hand():
    """Every refusal goes through ``core.errors.Refusal`` (issue 25): DRF's views through
    ``core.errors.exception_handler``, pages through ``core.middleware.RefusalMiddleware``."""
    found = []
    for folder in [*CHECKED_APPS, "config", "task_types"]:
        for path in (REPO / folder).rglob("*.py"):
            name = path.relative_to(REPO).as_posix()
            if "migrations" in path.parts or name in ERROR_MAPPERS:
                continue
            found += hand_built_errors(path.read_text(encoding="utf-8"), name)
    assert found == []


PLANTED = """
from django.http import HttpResponse, HttpResponseNotFound
from rest_framework import status
from rest_framework.response import Response


def view(request):
    if request.GET.get("a"):
        return Response({"detail": "No such run."}, status=status.HTTP_404_NOT_FOUND)
    if request.GET.get("b"):
        return Response({"detail": "Unknown format."}, 400)
    if request.GET.get("c"):
        return HttpResponse("Still computing.", status=409, content_type="text/plain")
    if request.GET.get("d"):
        return HttpResponseNotFound("No table.")
    return Response({"ok": True}, status=status.HTTP_201_CREATED)
"""


def test_the_check_finds_planted_hand_built_errors():
    assert hand_built_errors(PLANTED, "planted.py") == [
        "planted.py:9 Response(…, status=404) with a detail",
        "planted.py:11 Response(…, status=400) with a detail",
        "planted.py:13 HttpResponse(…, status=409)",
        "planted.py:15 HttpResponseNotFound(…)",
    ]


# --- sleeps in tests ----------------------------------------------------------------------------

SLEEPS = {"sleep", "wait_for_timeout"}  # time.sleep / asyncio.sleep, Playwright's page pause
SLEEP_OK = re.compile(r"#\s*sleep-ok:\s*\S")


def sleeps_without_a_reason(source: str) -> list[int]:
    """The lines of ``source`` that sleep (``time.sleep``, ``sleep``, ``wait_for_timeout``)
    with no ``# sleep-ok: <why>`` comment on the call's lines or the line above it."""
    lines = source.splitlines()
    bare = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
        if name not in SLEEPS:
            continue
        around = lines[max(node.lineno - 2, 0) : node.end_lineno]
        if not any(SLEEP_OK.search(line) for line in around):
            bare.append(node.lineno)
    return sorted(bare)


def test_every_sleep_in_the_tests_says_why_it_is_no_ordering():
    """A test orders threads and processes with events, joins and waits for a condition, never
    by sleeping (on a busy machine a sleep is too short, and the test fails or passes by
    chance). What remains sleeps for a reason the marker names: waiting for another process
    whose readiness can only be polled, or time the code under test measures."""
    assert sleeps_without_a_reason("import time\ntime.sleep(1)\n") == [2]
    assert sleeps_without_a_reason("page.wait_for_timeout(300)\nsleep(0.1)\n") == [1, 2]
    assert sleeps_without_a_reason("time.sleep(1)  # sleep-ok: the timeout under test\n") == []
    assert sleeps_without_a_reason("# sleep-ok: polls a process\ntime.sleep(0.1)\n") == []
    assert sleeps_without_a_reason("# sleep-ok:\ntime.sleep(0.1)\n") == [2]  # no reason given
    found = {}
    for path in sorted((REPO / "tests").rglob("*.py")):
        if "vendor" in path.parts:
            continue
        bare = sleeps_without_a_reason(path.read_text())
        if bare:
            found[str(path.relative_to(REPO))] = bare
    assert found == {}, "sleeps without '# sleep-ok: <why>' (use an event or a condition)"


# --- no data carried on model instances (issue 25) ----------------------------------------------

# Where judges' prompts are built and run: an item's presentation (ranking: "reversed") and any
# other per-call datum travel as parameters and returned values, never on the Item.
ITEM_CARRIERS = ("llm_judges", "task_types")
# An attribute read from an item that no model defines: the old way to carry the presentation.
CARRIED = {"judge_presentation"}


def _item_field_names() -> set[str]:
    from annotation.models import Item

    return {f.name for f in Item._meta.get_fields()} | {
        f.attname for f in Item._meta.concrete_fields
    }


def _is_an_item(node: ast.expr) -> bool:
    """``item``, ``first_item``…: a name the code gives an Item instance."""
    return isinstance(node, ast.Name) and (node.id == "item" or node.id.endswith("_item"))


def attributes_set_on_items(source: str, name: str, fields: set[str]) -> list[str]:
    """What ``source`` sets on an item that is not one of the Item model's fields
    (``item.x = …``, ``item.x += …``, ``setattr(item, …)``), and every use of an attribute in
    ``CARRIED`` (``getattr(item, "judge_presentation", "")``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and _is_an_item(node.value)
            and node.attr not in fields
        ):
            found.append((node.lineno, f"sets item.{node.attr}"))
        elif isinstance(node, ast.Attribute) and node.attr in CARRIED:
            found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.Call) and (called := getattr(node.func, "id", "")) in (
            "setattr",
            "getattr",
            "hasattr",
            "delattr",
        ):
            attribute = node.args[1] if len(node.args) > 1 else None
            carried = isinstance(attribute, ast.Constant) and attribute.value in CARRIED
            if carried or (called == "setattr" and node.args and _is_an_item(node.args[0])):
                found.append((node.lineno, f"{called}(…)"))
    return [f"{name}:{line} {what}" for line, what in sorted(found)]


PLANTED_ON_ITEM = """
def items_to_judge(run, items, first_item):
    for item in items:
        item.project = run.project
        item.sampling_weight = 0.5
        item.judge_presentation = run.presentation
        setattr(item, "note", "x")
    first_item.extra += 1
    return getattr(first_item, "judge_presentation", "")
"""


def test_the_check_finds_data_planted_on_items():
    assert attributes_set_on_items(PLANTED_ON_ITEM, "planted.py", _item_field_names()) == [
        "planted.py:6 sets item.judge_presentation",
        "planted.py:7 setattr(…)",
        "planted.py:8 sets item.extra",
        "planted.py:9 getattr(…)",
    ]


def test_no_judge_code_carries_data_on_an_item():
    """Issue 25: a presentation (or any per-call datum) is a parameter, not an attribute set on
    the Item (``JudgePrompt.item_fields(item, presentation=…)``)."""
    fields = _item_field_names()
    found = []
    for folder in ITEM_CARRIERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            name = path.relative_to(REPO).as_posix()
            found += attributes_set_on_items(path.read_text(encoding="utf-8"), name, fields)
    assert found == []


# A new project is created in one place: projects.services.project_create (its first settings
# version, the "project created" audit entry, its creator's membership). Tests and bench/ build
# projects directly; app code never does.
PROJECT_CREATED_BY_HAND = re.compile(
    r"\bProject\.objects\.(create|get_or_create|update_or_create|bulk_create)\(|"
    r"\bProject\([^)]*\)\.save\("
)


def _projects_created_by_hand(roots: list) -> list[str]:
    found = []
    for root in roots:
        for path in root.rglob("*.py"):
            if "migrations" in path.parts or path.as_posix().endswith("projects/services.py"):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if PROJECT_CREATED_BY_HAND.search(line):
                    found.append(f"{path.relative_to(root.parent).as_posix()}:{number}")
    return found


def test_every_new_project_goes_through_project_create():
    roots = [REPO / folder for folder in [*CORE[:-2], "task_types"]]
    assert _projects_created_by_hand(roots) == []


def test_the_check_finds_a_project_created_by_hand(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "demo.py").write_text(
        "project, _ = Project.objects.get_or_create(slug='x')\nProject(slug='y').save()\n",
        encoding="utf-8",
    )
    assert _projects_created_by_hand([tmp_path / "app"]) == ["app/demo.py:1", "app/demo.py:2"]


def _bare_value_error_raises(source: str) -> list[int]:
    """Lines of ``pytest.raises(ValueError)`` without ``match=``: any ValueError passes them, the
    wrong one too (issue 25, item 10)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) == "pytest.raises"
            and node.args
            and ast.unparse(node.args[0]) == "ValueError"
            and not any(keyword.arg == "match" for keyword in node.keywords)
        ):
            lines.append(node.lineno)
    return lines


def test_every_expected_value_error_names_its_message():
    found = {
        str(path.relative_to(REPO)): lines
        for path in sorted((REPO / "tests").rglob("*.py"))
        if (lines := _bare_value_error_raises(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_check_finds_a_bare_value_error():
    source = (
        "with pytest.raises(ValueError):\n    f()\n"
        "with pytest.raises(ValueError, match='no trial'):\n    f()\n"
    )
    assert _bare_value_error_raises(source) == [1]

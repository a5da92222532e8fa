"""Study replays: each source study run on Concord from set-up to its paper's tables.

A task-type package's ``replay.py`` calls :func:`register` with a ``run(*, scale, seed)`` that
sets the study up as its paper describes, imports its items (the real files in ``data/`` where
we have them), has simulated annotators work **through the public annotation API** (the same
requests the browser sends, with a logged-in session) and returns a :class:`ReplayResult`: the
project and the paper's tables, taken from the project's report (the dashboard's own figures).
``StudiesConfig.ready()`` imports every installed app's ``replay`` module; ``manage.py
replay_study NAME`` runs one and writes its tables as CSV.

A replay recreates its project on every run (same slug), so it is repeatable; the simulated
annotators are ordinary accounts without a usable password (they cannot log in).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from agreement.reports import AnnotatorFilter, ReportOptions, build_report
from agreement.reports.gather import gather
from agreement.reports.tables import to_csv
from core.registry import Registry
from projects.models import Membership, Project
from projects.services import project_create


class ReplayError(RuntimeError):
    """The platform refused a simulated annotator's request (with the server's own message)."""


@dataclass
class ReplayResult:
    project: Project
    report: dict
    tables: dict[str, dict]  # the paper's tables: name -> report table
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Replay:
    name: str
    title: str
    task_type: str
    slug: str  # of the project the replay (re)creates
    run: Callable[..., ReplayResult]


replay_registry: Registry[Replay] = Registry("study replay")


def register(
    *, name: str, title: str, task_type: str, slug: str, run: Callable[..., ReplayResult]
) -> None:
    replay_registry.register(
        name, Replay(name=name, title=title, task_type=task_type, slug=slug, run=run)
    )


def replays() -> list[Replay]:
    return list(replay_registry)


# --- set-up ----------------------------------------------------------------------------------------


def fresh_project(
    *, slug: str, researcher_name: str = "replay-researcher", **fields: Any
) -> Project:
    """The replay's project, recreated from scratch (``projects.services.project_create``), with
    a researcher account as its creator and member."""
    Project.objects.filter(slug=slug).delete()
    researcher = _account(researcher_name)
    return project_create(project=Project(slug=slug, **fields), by=researcher, via="replay")


def simulated_annotators(project: Project, *, count: int, prefix: str) -> list:
    """``count`` annotator accounts (``<prefix>1``…), members of the project."""
    users = [_account(f"{prefix}{n}") for n in range(1, count + 1)]
    for user in users:
        Membership.objects.get_or_create(
            project=project, user=user, defaults={"role": Membership.Role.ANNOTATOR}
        )
    return users


def _account(username: str):
    user, created = get_user_model().objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


# --- the public annotation API ---------------------------------------------------------------------


class ApiAnnotator:
    """One simulated annotator, logged in, asking for items and submitting answers through the
    annotation API exactly as the annotation page does."""

    def __init__(self, *, project: Project, user) -> None:
        self.project = project
        self.user = user
        host = next((h for h in settings.ALLOWED_HOSTS if h not in ("*", "")), "localhost")
        self.client = Client(HTTP_HOST=host.lstrip("."))
        self.client.force_login(user)

    def next(self) -> dict | None:
        response = self.client.post(
            f"/api/projects/{self.project.slug}/next/", content_type="application/json"
        )
        if response.status_code == 204:
            return None
        data = self._json(response, "next item")
        return None if "stop" in data else data

    def submit(self, assignment: dict, answer: dict, *, seconds: float) -> None:
        response = self.client.post(
            f"/api/assignments/{assignment['id']}/submit/",
            {"answer": answer, "time_spent_ms": int(seconds * 1000)},
            content_type="application/json",
        )
        self._json(response, "submit", ok=(200, 201))

    def work(self, decide: Callable[[dict], tuple[dict, float]]) -> int:
        """Answer every item the API gives; ``decide(assignment) -> (answer, seconds)``."""
        done = 0
        while (assignment := self.next()) is not None:
            answer, seconds = decide(assignment)
            self.submit(assignment, answer, seconds=seconds)
            done += 1
        return done

    def _json(self, response, what: str, ok: tuple[int, ...] = (200,)) -> dict:
        if response.status_code not in ok:
            raise ReplayError(
                f"{self.user.username}: {what} refused with HTTP {response.status_code}: "
                f"{response.content[:500].decode(errors='replace')}"
            )
        return response.json()


def work_in_turns(annotators: list[ApiAnnotator], decide: Callable[..., tuple[dict, float]]) -> int:
    """All annotators work until nothing is left, taking turns item by item (as a team does,
    so no one takes every item first). ``decide(annotator_index, assignment)``."""
    active = list(range(len(annotators)))
    done = 0
    while active:
        for index in list(active):
            assignment = annotators[index].next()
            if assignment is None:
                active.remove(index)
                continue
            answer, seconds = decide(index, assignment)
            annotators[index].submit(assignment, answer, seconds=seconds)
            done += 1
    return done


# --- results ---------------------------------------------------------------------------------------


def project_report(
    project: Project,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    annotator_filter: AnnotatorFilter | None = None,
) -> dict:
    """The project's report with every human counted (the dashboard's default choice), or the
    coders ``annotator_filter`` chooses (e.g. only the external coders of the original study)."""
    annotator_filter = annotator_filter or AnnotatorFilter()
    return build_report(
        gather(
            project=project, annotator_filter=annotator_filter, options=ReportOptions(n_boot=n_boot)
        ),
        annotator_filter,
    )


def judge_tables(
    project: Project, judge: str, names: list[str], *, n_boot: int = 1000, subset: str = "all"
) -> dict[str, dict]:
    """The report's ``names`` tables with ``judge`` selected under "who counts" (the judge's
    rows beside the humans'), and ``judge_validation``: the judge against the merged humans on
    ``subset`` (:data:`agreement.reports.validation` subsets: "all", "agreed"…), as on the
    judge validation page."""
    from agreement.selectors import judge_validation

    annotator_filter = AnnotatorFilter(judges=(judge,))
    report = build_report(
        gather(
            project=project, annotator_filter=annotator_filter, options=ReportOptions(n_boot=n_boot)
        ),
        annotator_filter,
    )
    tables = {name: report["tables"][name] for name in names}
    validation = judge_validation(project=project, n_boot=n_boot, judges=(judge,), subset=subset)
    tables["judge_validation"] = validation["tables"]["judges"]
    return tables


def human_sample(keys: list[str], *, share: float, seed: int) -> set[str]:
    """A uniform random sample of ``share`` of ``keys`` (seeded): the items whose human labels a
    replay keeps for its prediction-powered estimates."""
    ordered = sorted(keys)
    return set(random.Random(f"ppi:{seed}").sample(ordered, max(2, round(share * len(ordered)))))


def prediction_powered_tables(
    project: Project, judge: str, *, share: float = 0.4, seed: int = 87
) -> tuple[dict, set[str]]:
    """The report's human-only, judge-only and prediction-powered estimates
    (:mod:`agreement.reports.estimates`) as a study that had humans label only a uniform random
    ``share`` of the items would see them: the judge on every item, the humans' answers kept on
    :func:`human_sample` of the items (returned too). The replays' humans label every item, so
    the human-only figure over all items is what the estimates estimate."""
    from agreement.reports.estimates import estimates_table
    from agreement.reports.inputs import HUMAN

    inp = gather(project=project, annotator_filter=AnnotatorFilter(judges=(judge,)))
    sample = human_sample(list(inp.items), share=share, seed=seed)
    for coder in inp.coder_ids(HUMAN):
        inp.answers[coder] = {u: a for u, a in inp.answers[coder].items() if u in sample}
    return estimates_table(inp), sample


def write_tables(result: ReplayResult, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in result.tables.items():
        path = out_dir / f"{result.project.slug}-{name}.csv"
        path.write_text(to_csv(table), encoding="utf-8")
        written.append(path)
    return written


def rng_for(name: str, seed: int) -> random.Random:
    return random.Random(f"{name}:{seed}")


def chunks(values: list, size: int) -> Iterator[list]:
    for start in range(0, len(values), size):
        yield values[start : start + size]

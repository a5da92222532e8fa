"""Exports built from plain values (issue 16) write the rows the model-instance export wrote.

``reference_rows`` below is the export as it was before: model instances with ``select_related``,
each annotation handed to the task type with its real ``Item``, verdicts added per item group,
``json.dumps`` for JSONL and ``csv.DictWriter`` for CSV. The new export must give the same rows
(JSONL: the same values, written compactly; CSV: the same text, byte for byte) on projects that
mix humans and judges, several task types, control items, adjudications, a disqualified and a
removed annotator, a resubmitted answer, a pre-selection shown and formula-like text.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import queue
import threading
from itertools import groupby
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import services, task_types
from annotation.models import Adjudication, Annotation, Item
from annotation.review import item_majority
from core.spreadsheet import spreadsheet_safe
from llm_judges.models import Judge, JudgeResult, JudgeRun, PreselectionShown
from llm_judges.selectors import _setting, judge_results_for_export
from projects.models import Membership
from studies.services import exports
from studies.services.exports import export_chunks, export_csv, export_jsonl, export_stream
from studies.services.imports import import_items
from tests import factories

# --- the export as it was built before issue 16 (the oracle) -------------------------------------


def reference_rows(project, coders: str, *, raw: bool) -> list[dict]:
    task_type = task_types.get(project.task_type)
    rows: list[dict] = []
    if coders in ("humans", "all"):
        rows += _reference_human_rows(project, task_type, with_judges=coders == "all", raw=raw)
    if coders in ("judges", "all"):
        rows += _reference_judge_rows(project, task_type, raw=raw)
    return rows


def _judge_columns(raw):
    return {**dict.fromkeys(exports.JUDGE_COLUMNS), **({"judge_raw_reply": None} if raw else {})}


def _reference_human_rows(project, task_type, *, with_judges, raw):
    members = {m.user_id: m for m in Membership.objects.filter(project=project)}
    excluded = {
        u for u, m in members.items() if m.qualification == Membership.Qualification.DISQUALIFIED
    }
    shown = {
        (s.assignment.item_id, s.assignment.annotator_id): s.judge.name
        for s in PreselectionShown.objects.select_related("assignment", "judge")
    }
    annotations = (
        Annotation.objects.filter(item__project=project, is_current=True)
        .select_related("item", "assignment")
        .order_by("item__position", "item_id", "assignment__sequence", "id")
    )
    rows = []
    for _, group in groupby(annotations, key=lambda a: a.item_id):
        group = list(group)
        majority = item_majority(task_type, group, excluded)
        final = Adjudication.objects.filter(item_id=group[0].item_id, is_current=True).first()
        for annotation in group:
            item, member = annotation.item, members.get(annotation.annotator_id)
            pseudonym = member.pseudonym if member else f"ann-removed-{annotation.annotator_id}"
            row = {
                "project": project.slug,
                "task_type": project.task_type,
                "item_id": item.external_id,
                "item_kind": item.kind,
                "group": item.group,
                **(
                    {"coder_kind": "human", "coder": pseudonym, "coder_source": "concord"}
                    if with_judges
                    else {}
                ),
                "annotator": pseudonym,
                "version": annotation.version,
                "time_spent_s": round(annotation.time_spent_ms / 1000, 1),
                "reported_time_s": round(annotation.reported_time_ms / 1000, 1),
                "reserved_at": annotation.assignment.reserved_at.isoformat(),
                "submitted_at": annotation.created_at.isoformat(),
                "annotator_qualification": member.qualification if member else "",
                "excluded": annotation.annotator_id in excluded,
                "majority": majority,
                "adjudicated": final.answer if final else None,
                "preselection_shown": shown.get((item.id, annotation.annotator_id), ""),
                "settings_version": annotation.settings_version,
                "item_revision": annotation.item_revision,
                "sequence": annotation.assignment.sequence,
                "presentation": annotation.presentation or None,
                **(_judge_columns(raw) if with_judges else {}),
            }
            for part in task_type.export_rows(item, annotation):
                rows.append({**row, **part})
    return rows


def _reference_judge_rows(project, task_type, *, raw):
    rows, blank = [], None
    for result in judge_results_for_export(project=project, with_raw=raw):
        item, judge, run = result.item, result.judge, result.run
        row = {
            "project": project.slug,
            "task_type": project.task_type,
            "item_id": item.external_id,
            "item_kind": item.kind,
            "group": item.group,
            "coder_kind": "judge",
            "coder": judge.name,
            "coder_source": "concord",
            **dict.fromkeys(exports.HUMAN_ONLY),
            "judge": judge.name,
            "judge_kind": judge.kind,
            "judge_model": judge.model,
            # embedding and NLI judges use no prompt: their settings instead (issue 27)
            "judge_prompt_name": (run.prompt.name if run and run.prompt else project.task_type)
            if judge.kind == "llm"
            else None,
            "judge_prompt_version": result.prompt_version,
            "judge_prompt_fingerprint": run.prompt_fingerprint
            if run and judge.kind == "llm"
            else None,
            "judge_settings": (run.judge_settings or None) if run else None,
            "judge_settings_fingerprint": (run.settings_fingerprint or None) if run else None,
            "judge_setting": result.setting,
            "judge_presentation": result.presentation,
            "judge_run_id": result.produced_by_id or (run.pk if run else None),
            "judge_outcome": result.status,
            "judge_message": result.error,
            "judge_error_class": result.error_class,
            "judge_attempts": result.attempts,
            "judge_latency_ms": result.latency_ms,
            "judge_input_tokens": result.prompt_tokens,
            "judge_output_tokens": result.completion_tokens,
            "judge_finish_reason": result.finish_reason,
            "judge_seed": result.seed,
            "judge_schema_valid": result.schema_valid,
            "judge_removed_nul": sum(
                n
                for key, n in (result.detail or {}).get("raw_cleaned", {}).items()
                if key in ("nul", "answer_nul")
            ),
            **({"judge_raw_reply": result.raw} if raw else {}),
        }
        parts = []
        if result.status == "ok" and result.answer is not None:
            parts = task_type.export_rows(item, SimpleNamespace(answer=result.answer))
        if not parts:
            if blank is None:
                first = (
                    Annotation.objects.filter(item__project=project, is_current=True)
                    .select_related("item")
                    .order_by("id")
                    .first()
                )
                blank = dict.fromkeys(task_type.export_rows(first.item, first)[0]) if first else {}
            parts = [blank]
        rows += [{**row, **part} for part in parts]
    return rows


def reference_csv(rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = None
    for row in rows:
        flat = {
            k: json.dumps(v) if isinstance(v, list | dict) else spreadsheet_safe(v)
            for k, v in row.items()
        }
        if writer is None:
            writer = csv.DictWriter(buffer, fieldnames=list(flat))
            writer.writeheader()
        writer.writerow(flat)
    return buffer.getvalue()


def assert_same_as_reference(project) -> None:
    for coders in ("humans", "judges", "all"):
        expected = reference_rows(project, coders, raw=True)
        lines = list(export_jsonl(project=project, coders=coders))
        assert [json.loads(line) for line in lines] == json.loads(json.dumps(expected)), coders
        compact = [
            json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in expected
        ]
        assert lines == compact, coders  # the same text but for the spaces json.dumps put
        assert "".join(export_chunks(project=project, fmt="jsonl", coders=coders, rows=3)) == (
            "".join(compact)
        )
        expected_csv = reference_csv(reference_rows(project, coders, raw=False))
        assert "".join(export_csv(project=project, coders=coders)) == expected_csv, coders
        for rows in (1, 2, 500):
            chunks = list(export_chunks(project=project, fmt="csv", coders=coders, rows=rows))
            assert "".join(chunks) == expected_csv
    assert expected, "the project must have rows to compare"


# --- projects --------------------------------------------------------------------------------------


def member(project, **fields):
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user, **fields)
    return user


def answer_all(project, user, answer_for) -> None:
    while (assignment := services.assignment_next(project=project, annotator=user)) is not None:
        services.annotation_submit(
            assignment=assignment, answer=answer_for(assignment.item), time_spent_ms=4321
        )


@pytest.fixture
def citation_project(db):
    """Citation recovery: 4 regular items (one group formula-like), a control item, three
    annotators (one disqualified, one later removed), a resubmission, an adjudication, a
    pre-selection shown, and judges with ok / unparseable / failed results, with and without a
    run."""
    project = factories.ProjectFactory(annotators_per_item=3)
    items = factories.make_items(project, 4)
    factories.make_items(project, 1, kind="control", start=4)
    Item.objects.filter(pk=items[1].pk).update(group='=HYPERLINK("http://evil.example","x")')
    alice, bob, carol = member(project), member(project), member(project)
    answer_all(project, alice, lambda item: {"sentences": [0, 1], "helpfulness": 64})
    answer_all(project, bob, lambda item: {"sentences": [], "none": True, "helpfulness": 3})
    answer_all(project, carol, lambda item: {"sentences": [1], "helpfulness": 50})
    resubmitted = Annotation.objects.filter(annotator=alice, is_current=True).order_by("id")[1]
    services.annotation_submit(
        assignment=resubmitted.assignment, answer={"sentences": [2], "helpfulness": 10}
    )
    Membership.objects.filter(project=project, user=bob).update(qualification="disqualified")
    Membership.objects.filter(project=project, user=carol).delete()
    Adjudication.objects.create(item=items[0], answer={"sentences": [1], "none": False})
    judge = Judge.objects.create(project=project, name="the-judge", kind="llm", model="m-1")
    PreselectionShown.objects.create(
        assignment=Annotation.objects.filter(annotator=alice).first().assignment,
        judge=judge,
        answer={"sentences": [1]},
    )
    run = JudgeRun.objects.create(judge=judge, project=project, prompt_version="v1")
    statuses = ["ok", "unparseable", "failed", "ok", "ok"]
    for n, item in enumerate(Item.objects.filter(project=project).order_by("position")):
        JudgeResult.objects.create(
            item=item,
            judge=judge,
            run=run if n % 2 else None,
            prompt_version="v1",
            setting=_setting(project),
            status=statuses[n],
            error="" if statuses[n] == "ok" else "+cmd|' /C calc'!A0",
            answer={"sentences": [n % 3], "none": False} if statuses[n] == "ok" else None,
            raw='{"sentences": [1]}',
            attempts=n + 1,
            prompt_tokens=10 * n,
            latency_ms=100 + n,
        )
    nli = Judge.objects.create(project=project, name="a-nli", kind="nli", model="/models/nli")
    JudgeResult.objects.create(
        item=items[3], judge=nli, prompt_version="v1", status="ok", answer={"sentences": []}
    )
    return project


def test_citation_recovery_rows_equal_the_model_instance_export(citation_project):
    assert_same_as_reference(citation_project)
    rows = [json.loads(line) for line in export_jsonl(project=citation_project, coders="all")]
    assert {r["item_kind"] for r in rows} == {"regular", "control"}
    assert any(r["annotator"].startswith("ann-removed-") for r in rows if r["annotator"])
    assert any(r["excluded"] for r in rows) and any(r["version"] == 2 for r in rows)
    assert any(r["adjudicated"] for r in rows) and any(r["preselection_shown"] for r in rows)
    assert {r["judge_outcome"] for r in rows} == {None, "ok", "unparseable", "failed"}


def test_csv_cells_that_a_spreadsheet_would_run_are_still_neutralised(citation_project):
    text = "".join(export_chunks(project=citation_project, fmt="csv", coders="all"))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {r["group"] for r in rows} >= {'\'=HYPERLINK("http://evil.example","x")'}
    assert "'+cmd|' /C calc'!A0" in {r["judge_message"] for r in rows}
    assert not any(v.startswith(("=", "+", "-", "@")) for r in rows for v in r.values())
    jsonl = "".join(export_chunks(project=citation_project, fmt="jsonl", coders="all"))
    assert '"group":"=HYPERLINK(' in jsonl and '"judge_message":"+cmd|' in jsonl  # exact text


def test_ranking_rows_several_per_answer_equal_the_model_instance_export(db, researcher):
    from tests.task_types.ranking.test_ranking import CRITERIA, RECORDS, SYSTEMS, ranks_for

    project = factories.ProjectFactory(
        task_type="ranking",
        config={"criteria": CRITERIA, "systems": SYSTEMS, "seed": 5},
        annotators_per_item=2,
    )
    import_items(
        project=project,
        stream=io.BytesIO("".join(json.dumps(r) + "\n" for r in RECORDS[:3]).encode()),
        fmt="jsonl",
    )
    tied = {c["name"]: {"gpt4": 1, "gpt35": 1, "llama2-70b": 3} for c in CRITERIA}
    for ranks in (tied, {c["name"]: {"gpt4": 2, "gpt35": 1, "llama2-70b": 3} for c in CRITERIA}):
        answer_all(project, member(project), lambda item, ranks=ranks: ranks_for(item, ranks))
    assert_same_as_reference(project)


def test_questionnaire_rows_read_no_item_json_and_equal_the_model_instance_export(db):
    from tests.task_types.questionnaire.test_questionnaire import CONFIG, GOOD, RECORDS

    project = factories.ProjectFactory(task_type="questionnaire", config=CONFIG)
    import_items(
        project=project,
        stream=io.BytesIO("".join(json.dumps(r) + "\n" for r in RECORDS[:2]).encode()),
        fmt="jsonl",
    )
    answer_all(project, member(project), lambda item: GOOD)
    answer_all(project, member(project), lambda item: {**GOOD, "why": "=1+1"})
    assert task_types.get("questionnaire").export_item_fields == frozenset()
    assert_same_as_reference(project)


def test_a_task_type_reading_an_item_field_it_did_not_name_fails_loudly(citation_project):
    citation = task_types.get("citation_recovery")
    item = exports.ExportItem(citation_project, ("gold",), [{"sentences": [1]}])
    with pytest.raises(AttributeError):
        citation.export_rows(item, SimpleNamespace(answer={"sentences": [1]}))


# --- queries ---------------------------------------------------------------------------------------


def _queries(function) -> int:
    with CaptureQueriesContext(connection) as captured:
        function()
    return len(captured.captured_queries)


def test_an_export_takes_the_same_few_queries_however_many_rows(db, monkeypatch):
    """Queries: the members, the answers, the answered items' JSON, the judge results and the
    empty answer columns once; each cursor is read in chunks (here of 2 rows) that are no
    statements of their own."""
    monkeypatch.setattr(exports, "CHUNK", 2)
    project = factories.ProjectFactory(annotators_per_item=2)
    judge = Judge.objects.create(project=project, name="counted", kind="embedding", model="minilm")

    def grow(items: int, start: int) -> None:
        made = factories.make_items(project, items, start=start)
        for _ in range(2):
            answer_all(project, member(project), lambda item: {"sentences": [1], "helpfulness": 5})
        for n, item in enumerate(made):
            JudgeResult.objects.create(
                item=item,
                judge=judge,
                prompt_version="v1",
                status="failed" if n == 0 else "ok",
                answer=None if n == 0 else {"sentences": [0]},
            )
            if n % 2:
                Adjudication.objects.create(item=item, answer={"sentences": [1]})

    def export_all() -> list[str]:
        return [
            *export_stream(project=project, fmt="jsonl", coders="all"),
            *export_chunks(project=project, fmt="csv", coders="all"),
        ]

    grow(2, 0)
    few_rows, few = len(export_all()), _queries(export_all)
    grow(9, 2)
    many_rows, many = len(export_all()), _queries(export_all)
    # JSONL one chunk per row (answers, then judge results), CSV one chunk
    assert (few_rows, many_rows) == (2 * 2 + 2 + 1, 11 * 2 + 11 + 1)
    assert few == many <= 12  # per format: members, answers, items, external coders, judges…


# --- reading ahead ---------------------------------------------------------------------------------


class Schedule:
    """An injected order of events between the export's reader and its reading thread, so that a
    test fixes who arrives first instead of leaving it to the machine's timing. ``rows`` is the
    cursor: it produces ``produced`` rows, then waits for ``fail_when`` (when given) and fails.
    ``handoff`` is the one-slot queue between the two threads; it records each hand-over."""

    def __init__(self, produced: int, *, fail_when: threading.Event | None = None) -> None:
        self.produced = produced
        self.fail_when = fail_when
        self.failed = threading.Event()
        self.handoff = _WatchedQueue()

    def rows(self):
        yield from range(self.produced)
        if self.fail_when is not None:
            assert self.fail_when.wait(60), "the schedule never released the failure"
        self.failed.set()
        raise RuntimeError("connection lost")


class _WatchedQueue(queue.Queue):
    def __init__(self) -> None:
        super().__init__(maxsize=1)
        self.asked = threading.Event()  # the reader is waiting for (or taking) a chunk
        self.handed: list[tuple] = []
        self.handed_over = threading.Condition()

    def get(self, *args, **kwargs):
        self.asked.set()
        return super().get(*args, **kwargs)

    def put(self, item, *args, **kwargs):
        super().put(item, *args, **kwargs)
        with self.handed_over:
            self.handed.append(item)
            self.handed_over.notify_all()

    def wait_for_failure_handed_over(self) -> None:
        with self.handed_over:
            assert self.handed_over.wait_for(
                lambda: any(isinstance(i, tuple) and i[1] is not None for i in self.handed), 60
            ), "the reading thread never handed the failure over"


def _read_until_the_error(rows) -> list:
    read = []
    with pytest.raises(RuntimeError, match="connection lost"):
        for row in rows:
            read.append(row)
    return read


@pytest.mark.parametrize("on_thread", [False, True], ids=["inline", "on-a-thread"])
def test_reading_ahead_hands_out_every_row_in_order(on_thread):
    for total in (0, 2, 3, 9, 10):
        rows = exports._read_ahead(iter(range(total)), 3, on_thread=on_thread)
        assert list(rows) == list(range(total))


@pytest.mark.parametrize("on_thread", [False, True], ids=["inline", "on-a-thread"])
@pytest.mark.parametrize("produced", [0, 1, 2, 3, 4, 5, 6, 7])
def test_a_cursor_failing_mid_way_gives_every_row_before_the_failure_then_its_error(
    on_thread, produced
):
    """The promise, whatever chunk the failure falls in (the first, read by the caller, or one
    the thread reads; at a chunk's start, middle or end): the rows before it, then the error."""
    schedule = Schedule(produced)
    rows = exports._read_ahead(schedule.rows(), 3, on_thread=on_thread, handoff=schedule.handoff)
    assert _read_until_the_error(rows) == list(range(produced))
    assert not _reading_threads()


def test_the_failure_handed_over_before_the_reader_asks_for_it_keeps_the_rows_before_it():
    """Schedule: the reader writes chunk [0, 1, 2] while the thread reads [3, 4, 5] and the cursor
    fails on row 6; the failure is handed over before the reader asks for more."""
    release = threading.Event()
    schedule = Schedule(7, fail_when=release)
    rows = exports._read_ahead(schedule.rows(), 3, on_thread=True, handoff=schedule.handoff)
    assert [next(rows) for _ in range(6)] == [0, 1, 2, 3, 4, 5]  # the thread handed [3, 4, 5]
    release.set()
    schedule.handoff.wait_for_failure_handed_over()
    assert _read_until_the_error(rows) == [6]


def test_the_failure_coming_while_the_reader_waits_for_it_keeps_the_rows_before_it():
    """Schedule: the reader has written every row and waits for the next chunk before the
    cursor fails (the other order of the test above): the same rows, the same error."""
    waiting = threading.Event()
    schedule = Schedule(7, fail_when=waiting)
    handoff = schedule.handoff
    rows = exports._read_ahead(schedule.rows(), 3, on_thread=True, handoff=handoff)
    read = [next(rows) for _ in range(6)]
    handoff.asked.clear()

    def release_when_the_reader_asks():
        assert handoff.asked.wait(60)
        waiting.set()

    releaser = threading.Thread(target=release_when_the_reader_asks)
    releaser.start()
    read += _read_until_the_error(rows)
    releaser.join()
    assert read == [0, 1, 2, 3, 4, 5, 6] and schedule.failed.is_set()


def test_reading_ahead_is_what_postgresql_exports_use_and_sqlite_reads_inline(db):
    schedule = Schedule(4)
    rows = exports._read_ahead(schedule.rows(), 2, handoff=schedule.handoff)
    assert _read_until_the_error(rows) == [0, 1, 2, 3]
    used_the_thread = bool(schedule.handoff.handed)
    assert used_the_thread == (connection.vendor == "postgresql")


def _reading_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "export-read-ahead"]


def test_a_download_stopped_early_ends_its_reading_thread():
    """Stopped while the thread waits to hand over a full chunk (the slot is taken): closing
    the export returns only once the thread has ended."""
    rows = exports._read_ahead(itertools.count(), 3, on_thread=True)
    assert [next(rows) for _ in range(4)] == [0, 1, 2, 3]
    assert _reading_threads()
    rows.close()
    assert not _reading_threads()


def test_a_download_stopped_before_the_thread_handed_anything_ends_it_too():
    release = threading.Event()

    def slow_cursor():
        yield from range(3)
        assert release.wait(60)
        yield from range(3, 10)

    schedule_queue = _WatchedQueue()
    rows = exports._read_ahead(slow_cursor(), 3, on_thread=True, handoff=schedule_queue)
    assert next(rows) == 0
    closer = threading.Thread(target=rows.close)
    closer.start()
    release.set()  # the thread's fetch ends; the export waits for it, then the thread ends
    closer.join()
    assert not _reading_threads()


# --- per-item work done once per item, not once per row (issue 34) -----------------------------


def stance_items(project, count: int) -> None:
    """Stance items made directly (no embedding model): every other one with a gold label."""
    for n in range(count):
        Item.objects.create(
            project=project,
            external_id=f"stance-{n}",
            position=n,
            payload={
                "id": f"stance-{n}",
                "claim": f"Claim {n}.",
                "claim_id": f"c{n % 2}",
                "veracity": "false" if n % 2 else "",
                "level": n,
                "query": f"What about claim {n}?",
                "response": "One. Two. Three.",
            },
            prepared={
                "sentences": ["One.", "Two.", "=Three."],
                "targets": [
                    {"index": 2, "similarity": 0.75, "rank": 1},
                    {"index": 0, "similarity": 0.5 + n / 100, "rank": 2},
                ],
            },
            gold={"label": "agree"} if n % 2 else None,
        )


def test_stance_rows_equal_the_model_instance_export(db):
    project = factories.ProjectFactory(task_type="stance", config={"k": 2}, annotators_per_item=2)
    stance_items(project, 4)
    for label, sure in (("agree", False), ("disagree", True)):
        answer_all(
            project,
            member(project),
            lambda item, label=label, sure=sure: {
                "label": label,
                "not_sure": sure,
                "sentences": [
                    {"index": 0, "label": "neutral", "not_sure": sure},
                    {"index": 2, "label": label},
                ],
            },
        )
    assert_same_as_reference(project)


def test_stance_reads_each_item_once_per_export(db, monkeypatch):
    import task_types.stance.task as stance_task

    project = factories.ProjectFactory(task_type="stance", config={"k": 2}, annotators_per_item=3)
    stance_items(project, 3)
    for _ in range(3):
        answer_all(
            project,
            member(project),
            lambda item: {
                "label": "agree",
                "sentences": [{"index": 0, "label": "agree"}, {"index": 2, "label": "agree"}],
            },
        )
    made = []
    columns = stance_task._ItemColumns
    monkeypatch.setattr(
        stance_task, "_ItemColumns", lambda item: made.append(item) or columns(item)
    )
    assert len(list(export_jsonl(project=project))) == 9
    assert len(made) == 3  # once per item, not once per row


def test_argument_structure_rows_equal_the_model_instance_export(db, monkeypatch):
    from tests.task_types.argument_structure import test_export_batches as batches

    monkeypatch.setitem(
        batches.scoring.SCORERS,
        batches.scoring.MINILM,
        lambda: batches.scoring.EmbeddingEdgeScorer(
            name="counting", embed=batches.CountingEmbedder()
        ),
    )
    monkeypatch.setattr(batches.scoring, "_made", {})
    project = batches.answered_project(4)
    assert_same_as_reference(project)


@pytest.mark.parametrize(
    "value",
    [
        [],
        {},
        [1, 2.5, -0.0, True, None, 10**30],
        [0, 3, -7, 10**30],  # plain integers: written directly
        [1, True, False],  # a bool is not written as an integer
        [[1, 2], 3],
        {"é": "naïve “quoted” \\ \n\t", "b": [{"c": float("nan")}, float("inf")]},
        [{"index": 0, "text": "=cmd", "similarity": 0.1 + 0.2}],
    ],
)
def test_a_csv_json_cell_is_the_text_json_dumps_writes(value):
    assert exports._json_cell(value) == json.dumps(value)

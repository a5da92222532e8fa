"""The MiniLM judge's cost (issue 32, item 7): batched over items with one vector cache per task,
it stores what the per-item computation gives; each distinct text is encoded once per task; a
run's tasks are dealt evenly over the worker's processes; each pool process gets
cores // processes torch threads and loads the model once, at start. Real all-MiniLM-L6-v2 and
real Transparent-FCExp explanations (data/transparent-fcexp), as the demo imports them."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from annotation.models import Item
from annotation.text import embeddings
from llm_judges import prompts, services
from llm_judges.backends.embedding import pair_similarities
from llm_judges.models import JudgeResult, JudgeRun
from studies.services.imports import import_items
from tests import factories
from tests.llm_judges.conftest import start
from tests.llm_judges.test_worker import broker  # noqa: F401 - a fixture

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "transparent-fcexp" / "gpt4_full_data.json"
DEMO_CONFIG = {"masking": "sample", "seed": 13, "keep_other_markers": True}


def citation_project(project, records: int, copies: int = 1) -> list[Item]:
    """``records`` real GPT-4 explanations, imported ``copies`` times under other ids (a text
    then comes back in a later item, as passages and sentences do across a real project)."""
    project.task_type = "citation_recovery"
    project.config = DEMO_CONFIG
    project.save()
    data = json.loads(DATA.read_text())
    chosen = dict(list(data.items())[:records])
    for copy in range(copies):
        renamed = {f"{key}~{copy}": value for key, value in chosen.items()}
        import_items(
            project=project, stream=io.StringIO(json.dumps(renamed)), fmt="transparent-fcexp"
        )
    return list(Item.objects.filter(project=project).order_by("position", "id"))


def minilm_judge(project, **parameters):
    return services.judge_create(
        project=project,
        name="minilm",
        kind="embedding",
        model="all-MiniLM-L6-v2",
        parameters={"threshold": 0.6, **parameters},
    )


def per_item(item: Item, threshold: float) -> tuple[dict, list[float]]:
    """The computation before batching: one item's pairs encoded on their own."""
    prompt = prompts.get("citation_recovery")
    scores = pair_similarities(prompt.pairs(item, "v1"))
    return prompt.from_similarity(item, scores, threshold), [round(s, 4) for s in scores]


def test_the_batched_judge_stores_what_the_per_item_computation_gives(
    project, django_capture_on_commit_callbacks
):
    items = citation_project(project, records=10, copies=2)
    # batch_size 4: groups of 16 pairs, so a task spans several groups and the copies of an
    # item are served from the task's cache, not encoded with their own group.
    run = start(minilm_judge(project, batch_size=4), project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    stored = {r.item_id: r for r in JudgeResult.objects.filter(run=run)}
    assert len(stored) == len(items) == 20
    for item in items:
        answer, similarities = per_item(item, 0.6)
        result = stored[item.pk]
        assert result.status == "ok"
        assert result.answer == answer, item.external_id
        assert result.detail["similarities"] == pytest.approx(similarities, abs=1e-4 + 1e-9)
    assert any(r.answer["sentences"] for r in stored.values())  # not all "none"


def test_each_distinct_text_is_encoded_once_per_task(
    project, django_capture_on_commit_callbacks, monkeypatch, settings
):
    settings.CONCORD_JUDGE_WORKER_PROCESSES = 1  # the whole run in one task
    items = citation_project(project, records=6, copies=2)
    prompt = prompts.get("citation_recovery")
    distinct = {text for item in items for pair in prompt.pairs(item, "v1") for text in pair}
    encoded: list[str] = []
    real_embed = embeddings.embed

    def counting_embed(texts, **kwargs):
        encoded.extend(texts)
        return real_embed(texts, **kwargs)

    monkeypatch.setattr(embeddings, "embed", counting_embed)
    judge = minilm_judge(project, batch_size=2, items_per_task=len(items))
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    assert JudgeResult.objects.filter(run=run, status="ok").count() == 12
    assert sorted(encoded) == sorted(distinct)


def test_a_run_is_dealt_into_equal_tasks_a_multiple_of_the_worker_processes(
    project, django_capture_on_commit_callbacks, monkeypatch, settings
):
    from llm_judges.celery_tasks import judge_batch

    settings.CONCORD_JUDGE_WORKER_PROCESSES = 2
    items = citation_project(project, records=5)
    sent: list[list[int]] = []
    monkeypatch.setattr(judge_batch, "apply_async", lambda args, **kw: sent.append(args[1]))
    start(minilm_judge(project, items_per_task=4), project, django_capture_on_commit_callbacks)

    # 4 + 1 left the second process idle while the first judged four items; 3 + 2 share them.
    assert sent == [[i.pk for i in items[:3]], [i.pk for i in items[3:]]]


@pytest.mark.parametrize(
    ("count", "size", "processes", "sizes"),
    [
        (486, 200, 2, [122, 122, 121, 121]),  # was 200 + 200 + 86: a 66 s tail
        (486, 50, 2, [49] * 6 + [48] * 4),
        (3, 200, 2, [2, 1]),
        (1, 200, 2, [1]),
        (0, 200, 2, []),
        (10, 4, 1, [4, 3, 3]),
    ],
)
def test_dealt_batches_are_consecutive_equal_and_never_above_the_size(
    count, size, processes, sizes
):
    ids = list(range(100, 100 + count))
    chunks = services.dealt_batches(item_ids=ids, size=size, processes=processes)
    assert [len(c) for c in chunks] == sizes
    assert [i for c in chunks for i in c] == ids


@pytest.mark.parametrize(
    ("configured", "cores", "processes", "threads"),
    [(0, 2, 2, 1), (0, 2, 1, 2), (0, 2, 4, 1), (0, 16, 4, 4), (3, 2, 2, 3)],
)
def test_a_pool_process_gets_cores_over_processes_torch_threads(
    configured, cores, processes, threads
):
    from config.celery import torch_threads_for

    assert torch_threads_for(configured=configured, cores=cores, processes=processes) == threads


def test_a_starting_pool_process_sets_its_threads_and_loads_the_model_once():
    # In a process of its own: torch's thread count is process-wide.
    code = (
        "import django, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); "
        "django.setup(); import config.celery as c; from annotation.text import embeddings as e; "
        "c._pool_processes = 2 * len(os.sched_getaffinity(0)); c.prepare_local_models(); "
        "import torch; info = e.load_info(); model = e.get_model(); e.embed(['a']); "
        "print(torch.get_num_threads(), info is not None, e.load_info() is info, "
        "e.get_model() is model)"
    )
    result = _in_a_pool_process(code, CONCORD_EMBEDDING_PRELOAD="1")
    assert result.stdout.split()[-4:] == ["1", "True", "True", "True"]


def _in_a_pool_process(code: str, **env: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Python (as a starting pool process), with ``env`` set."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **env},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def test_without_preloading_a_starting_pool_process_imports_nothing_heavy():
    # annotation.text brings spaCy and torch (seconds per process): an LLM-only worker does not
    # pay for them; torch, when a batch first imports it, takes the threads from OMP_NUM_THREADS.
    code = (
        "import django, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); "
        "django.setup(); import config.celery as c; "
        "c._pool_processes = 2 * len(os.sched_getaffinity(0)); c.prepare_local_models(); "
        "heavy = [m for m in ('torch', 'spacy', 'annotation.text') if m in sys.modules]; "
        "import torch; print(heavy, torch.get_num_threads())"
    )
    result = _in_a_pool_process(code, CONCORD_EMBEDDING_PRELOAD="0", OMP_NUM_THREADS="")
    assert result.stdout.split("\n")[-2] == "[] 1"


def test_a_real_worker_loads_the_model_per_pool_process_at_start_and_deals_the_run(
    broker,  # noqa: F811 - the fixture imported above
    transactional_db,
):
    """Two pool processes on the machine's cores: each loads MiniLM once as it starts, with
    cores // 2 torch threads, and the run's two equal tasks go one to each."""
    from django.db import connection

    from tests.llm_judges.worker import CeleryWorker, database_url, wait_for

    project = factories.ProjectFactory()
    items = citation_project(project, records=8)
    judge = minilm_judge(project, items_per_task=200)
    worker = CeleryWorker(
        queue=broker,
        database_url=database_url(connection.settings_dict),
        redis_url=django_settings.REDIS_URL,
        concurrency=2,
        env={"CONCORD_EMBEDDING_PRELOAD": "1", "DJANGO_LOG_LEVEL": "INFO"},
    )
    try:
        worker.wait_ready()
        wait_for(
            lambda: worker.log().count("embedding model loaded") == 2,
            timeout=120,
            what="both pool processes to load the model",
            worker=worker,
        )
        run = services.judge_run_start(judge=judge, project=project)  # autocommit: enqueued now
        wait_for(
            lambda: JudgeRun.objects.get(pk=run.pk).status == "done",
            timeout=120,
            what="the run to finish",
            worker=worker,
        )
    finally:
        worker.stop()
    threads = max(1, len(os.sched_getaffinity(0)) // 2)
    loaded = [line for line in worker.lines if "embedding model loaded" in line]
    assert len(loaded) == 2 and all(f"({threads} torch threads)" in line for line in loaded)
    assert worker.log().count("embedding model loaded") == 2  # not again for the run
    tasks = [line for line in worker.lines if "judge_batch" in line and "succeeded" in line]
    assert len(tasks) == 2 and all("'stored': 4" in line for line in tasks)
    assert JudgeResult.objects.filter(run=run, status="ok").count() == len(items)

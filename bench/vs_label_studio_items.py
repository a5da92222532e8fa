"""The item browser against Label Studio's data manager, through HTTP (issue 26).

    .venv/bin/python bench/vs_label_studio_items.py [--items 100000] [--samples 30]
        [--page-size 50] [--label-studio-url http://127.0.0.1:8081 --label-studio-token TOKEN]
        [--database concord_vsls_items_bench] [--keep]

Both systems get the same ``--items`` synthetic citation-recovery records
(``bench/import_speed.py``'s ``write_file``) on the same machine and PostgreSQL server. Concord:
gunicorn (3 sync workers, production settings, static files collected first) on a scratch
database (dropped at the end unless ``--keep``), the records imported through
``POST /api/projects/<slug>/import/``; the researcher's browser session is made with Django's
``force_login`` before anything is timed. Label Studio: an already running server reached with
an API token; the records are imported into a new project through ``POST /api/projects/<id>/import``
in chunks of ``--chunk`` tasks (deleted at the end unless ``--keep``). Imports are not timed here
(``bench/vs_label_studio.py`` times them).

Timed, client-side, one request at a time, samples interleaved (the order of the two systems
alternates sample by sample), equal page size (``--page-size``, default 50, Concord's default):

- first page: Concord's item browser ``GET /p/<slug>/items/?page_size=N`` (the whole HTML page:
  permission, the figures' freshness check, the rows, the template) against the data manager's
  ``GET /api/tasks?project=<id>&page=1&page_size=N`` (JSON);
- data-field filter: the records' ``generator`` (one of three values, a third of the items):
  Concord's group filter (``?group=<group>``; the import makes the generator the item group)
  against a data manager filter ``filter:tasks:data.generator equal <value>``;
- annotation-count filter: items nobody has answered (all of them here: nothing is annotated):
  Concord ``?status=open`` against ``filter:tasks:total_annotations equal 0``.

Prints, per page, p50 and p95 of both and the p95 ratio Concord / Label Studio (below 1 means
Concord is faster), with the 1-minute load average (the machine is shared). Without a Label Studio
it prints Concord's figures only and says that no ratio is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
import import_speed  # noqa: E402  (the synthetic records)
import scale_data  # noqa: E402  (scratch database)
from concord_http import Concord, load, p50, p95  # noqa: E402
from vs_label_studio import LS_RESULT, LabelStudio  # noqa: E402

DATABASE = "concord_vsls_items_bench"
GENERATOR = "llama2-70b"  # one of import_speed.record()'s three generators


def concord_session(concord: Concord):
    """A requests session carrying the researcher's browser session cookie (made with
    ``force_login`` in the checkout's environment; the cookie is secure-only under production
    settings, so it goes in the header, not the cookie jar)."""
    code = (
        "import django; django.setup()\n"
        "from django.contrib.auth.models import User\n"
        "from django.test import Client\n"
        f"c = Client(); c.force_login(User.objects.get(username={concord.researcher!r}))\n"
        "print(c.cookies['sessionid'].value)\n"
    )
    cookie = concord.python(code).strip().splitlines()[-1]
    session = concord.requests.Session()
    session.headers["Cookie"] = f"sessionid={cookie}"
    return session


def concord_group(concord: Concord, slug: str) -> str:
    """The item group of the records whose generator is ``GENERATOR``."""
    code = (
        "import django; django.setup()\n"
        "import json\n"
        "from annotation.models import Item\n"
        f"items = Item.objects.filter(project__slug={slug!r}, payload__generator={GENERATOR!r})\n"
        "print(json.dumps(sorted(set(items.values_list('group', flat=True)[:1000]))))\n"
    )
    groups = json.loads(concord.python(code).strip().splitlines()[-1])
    if len(groups) != 1:
        raise RuntimeError(f"expected one group for generator {GENERATOR}, found {groups}")
    return groups[0]


def label_studio_import(
    label_studio: LabelStudio, project: int, path: Path, chunk: int, filled: int
) -> int:
    """The JSONL records in chunks of ``chunk`` tasks (each a JSON list of ``{"data": …}``);
    the first ``filled`` tasks carry one annotation each (``LS_RESULT``, Concord's answer)."""
    created = 0
    tasks: list[dict] = []
    session = label_studio.session(0)
    with path.open() as stream:
        for n, line in enumerate(stream):
            task: dict = {"data": json.loads(line)}
            if n < filled:
                task["annotations"] = [{"result": LS_RESULT, "lead_time": 5.0}]
            tasks.append(task)
            if len(tasks) == chunk:
                created += _import_chunk(label_studio, session, project, tasks)
                tasks = []
    if tasks:
        created += _import_chunk(label_studio, session, project, tasks)
    return created


def _import_chunk(label_studio: LabelStudio, session, project: int, tasks: list[dict]) -> int:
    response = session.post(f"{label_studio.url}/api/projects/{project}/import", json=tasks)
    if response.status_code not in (200, 201):
        raise RuntimeError(f"Label Studio import answered {response.status_code}: {response.text}")
    body = response.json()
    if body.get("task_count") is not None:
        return body["task_count"]
    job = body["import"]  # an asynchronous import: poll it
    while True:
        status = session.get(f"{label_studio.url}/api/projects/{project}/imports/{job}").json()
        if status.get("status") == "completed":
            return status["task_count"]
        if status.get("status") == "failed":
            raise RuntimeError(f"Label Studio import failed: {status}")
        time.sleep(0.5)  # sleep-ok: polling Label Studio's import job


def concord_fill(concord: Concord, slug: str, filled: int) -> None:
    """One submitted answer (``scale_data.ANSWER``) on each of the first ``filled`` items, in
    SQL (``scale_data.fill_to``, 30 filler annotators), before anything is timed."""
    bench = Path(__file__).resolve().parent
    concord.python(
        "import sys, django; django.setup()\n"
        f"sys.path.insert(0, {str(bench)!r})\n"
        "import scale_data\n"
        "from projects.models import Project\n"
        f"project = Project.objects.get(slug={slug!r})\n"
        "project._fillers = scale_data.annotators('filler', scale_data.FILLERS, project)\n"
        f"print(scale_data.fill_to(project, {filled}))\n"
    )


def ls_query(item: dict) -> str:
    return quote(json.dumps({"filters": {"conjunction": "and", "items": [item]}}))


def pages(concord_base: str, slug: str, group: str, ls_base: str | None, project, size: int):
    """``{page name: (Concord URL, Label Studio URL or None)}``."""
    browser = f"{concord_base}/p/{slug}/items/?page_size={size}"
    tasks = f"{ls_base}/api/tasks?project={project}&page=1&page_size={size}" if ls_base else None
    data_filter = {
        "filter": "filter:tasks:data.generator",
        "operator": "equal",
        "type": "String",
        "value": GENERATOR,
    }
    count_filter = {
        "filter": "filter:tasks:total_annotations",
        "operator": "equal",
        "type": "Number",
        "value": 0,
    }
    return {
        "first page": (browser, tasks),
        f"data field: generator = {GENERATOR}": (
            f"{browser}&group={quote(group)}",
            f"{tasks}&query={ls_query(data_filter)}" if tasks else None,
        ),
        "answered (one answer)": (
            f"{browser}&status=complete",
            f"{tasks}&query={ls_query({**count_filter, 'value': 1})}" if tasks else None,
        ),
        "not answered yet": (
            f"{browser}&status=open",
            f"{tasks}&query={ls_query(count_filter)}" if tasks else None,
        ),
    }


def check_concord(response, size: int) -> None:
    if response.status_code != 200:
        raise RuntimeError(f"Concord answered {response.status_code}: {response.text[:300]}")
    if "/login/" in response.url:
        raise RuntimeError("Concord sent the researcher to the login page")
    rows = response.text.count('<td data-label="Item">')
    if rows != size:
        raise RuntimeError(f"Concord's page has {rows} rows, not {size}")


def check_label_studio(response, size: int, name: str) -> None:
    if response.status_code != 200:
        raise RuntimeError(f"Label Studio answered {response.status_code}: {response.text[:300]}")
    tasks = response.json()["tasks"]
    if len(tasks) != size:
        raise RuntimeError(f"Label Studio gave {len(tasks)} tasks on {name!r}, not {size}")
    if "generator" in name and any(t["data"]["generator"] != GENERATOR for t in tasks):
        raise RuntimeError("Label Studio's data filter let other generators through")


def measure(concord_http, ls_http, urls: dict, samples: int, size: int) -> dict:
    """Interleaved samples per page: ``{page: {"Concord": [ms], "Label Studio": [ms]}}``."""
    times: dict[str, dict[str, list[float]]] = {}
    for name, (ours, theirs) in urls.items():
        times[name] = {"Concord": [], "Label Studio": []}
        for _warm in range(3):  # untimed: each gunicorn worker's first request of this page
            check_concord(concord_http.get(ours), size)
            if theirs:
                check_label_studio(ls_http.get(theirs), size, name)
        for n in range(samples):
            order = [("Concord", concord_http, ours), ("Label Studio", ls_http, theirs)]
            if n % 2:
                order.reverse()
            for system, http, url in order:
                if url is None:
                    continue
                began = time.perf_counter()
                response = http.get(url)
                times[name][system].append((time.perf_counter() - began) * 1000)
                if system == "Concord":
                    check_concord(response, size)
                else:
                    check_label_studio(response, size, name)
        report_page(name, times[name], load())
    return times


def report_page(name: str, times: dict[str, list[float]], load_now: float) -> None:
    ours = times["Concord"]
    line = f"{name:36} Concord p50 {p50(ours):7.1f} ms p95 {p95(ours):7.1f} ms"
    theirs = times["Label Studio"]
    if theirs:
        line += (
            f"  Label Studio p50 {p50(theirs):7.1f} ms p95 {p95(theirs):7.1f} ms"
            f"  ratio p50 {p50(ours) / p50(theirs):.2f} p95 {p95(ours) / p95(theirs):.2f}"
        )
    print(line + f"  (load {load_now:.2f})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--page-size", type=int, default=50)
    parser.add_argument(
        "--fill", type=float, default=0.6, help="share of items with one answer (both systems)"
    )
    parser.add_argument("--chunk", type=int, default=10_000, help="Label Studio import chunk")
    parser.add_argument("--label-studio-url")
    parser.add_argument("--label-studio-token")
    parser.add_argument("--database", default=DATABASE)
    parser.add_argument("--keep", action="store_true", help="keep the database and LS project")
    args = parser.parse_args()
    label_studio = None
    if args.label_studio_url:
        if not args.label_studio_token:
            raise SystemExit("--label-studio-url needs --label-studio-token")
        label_studio = LabelStudio(args.label_studio_url, [args.label_studio_token], None)
    database_url = scale_data.scratch_database(args.database)
    concord = Concord(database_url, annotators=1, prefix="vsitems")
    concord.manage("collectstatic", "--noinput", "--verbosity", "0")
    ls_project = None
    try:
        concord.start(workers=3)
        print(
            f"Concord: {concord.kind} (3 workers), database {args.database}; "
            f"{os.cpu_count()} cores; {args.items} items, page size {args.page_size}",
            flush=True,
        )
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "items.jsonl"
            import_speed.write_file(path, args.items)
            slug = concord.create_project()
            began = time.monotonic()
            created = concord.import_file(slug, path)
            print(f"Concord imported {created} items in {time.monotonic() - began:.0f} s")
            filled = int(args.items * args.fill)
            concord_fill(concord, slug, filled)
            print(f"Concord: {filled} items answered once (SQL)", flush=True)
            if label_studio is not None:
                ls_project = label_studio.create_project()
                began = time.monotonic()
                created = label_studio_import(label_studio, ls_project, path, args.chunk, filled)
                print(
                    f"Label Studio imported {created} tasks in {time.monotonic() - began:.0f} s "
                    f"(project {ls_project}, chunks of {args.chunk}, the first {filled} "
                    "with one annotation)",
                    flush=True,
                )
        group = concord_group(concord, slug)
        print(f"Concord group of generator {GENERATOR}: {group!r}")
        urls = pages(
            concord.url,
            slug,
            group,
            label_studio.url if label_studio else None,
            ls_project,
            args.page_size,
        )
        if not filled:
            del urls["answered (one answer)"]  # nothing to find
        print(f"\n{args.samples} samples per page, interleaved (ratio: Concord / Label Studio)")
        measure(
            concord_session(concord),
            label_studio.session(0) if label_studio else None,
            urls,
            args.samples,
            args.page_size,
        )
    finally:
        concord.stop()
        if not args.keep:
            scale_data.drop_database(args.database)
            if label_studio is not None and ls_project is not None:
                label_studio.session(0).delete(f"{label_studio.url}/api/projects/{ls_project}/")
    if label_studio is None:
        print("No Label Studio was given, so no ratio is printed (see --label-studio-url).")


if __name__ == "__main__":
    main()

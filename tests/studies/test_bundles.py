"""Replication bundles: written as JSON Lines and Parquet with a card and a manifest, loadable
with Hugging Face ``datasets``, and loaded into an instance without the project they give the
same dashboard figures."""

import io
import json
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Annotation, ExternalAnnotation
from llm_judges.models import Judge, JudgeResult
from projects.models import Project
from studies.bundles import project_report
from studies.replays import replay_registry
from studies.services.external_annotations import import_annotations


def comparable(report):
    """The report without what legitimately differs between two instances."""
    report = json.loads(json.dumps(report, default=str))
    report.pop("generated_at", None)
    report.pop("data_version", None)
    return report


def same(a, b) -> bool:
    """Equal, numbers to 1e-9 (sums over rows read back in another order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-12)
    return a == b


def anonymous(rows):
    rows = [{k: v for k, v in row.items() if k != "coder"} for row in rows]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.fixture
def study(db):
    project = replay_registry.get("citation-recovery").run(scale=1, seed=3).project
    judge = Judge.objects.create(project=project, name="gpt-x", kind="llm", model="gpt-x")
    items = list(project.items.order_by("position"))
    JudgeResult.objects.create(
        item=items[0],
        judge=judge,
        prompt_version="v1",
        setting="sample",
        status="ok",
        answer={"sentences": [1], "none": False, "helpfulness": 50},
    )
    JudgeResult.objects.create(
        item=items[1],
        judge=judge,
        prompt_version="v1",
        setting="sample",
        status="failed",
        error="HTTP 400: Server is pinned to another model",
    )
    # Helpfulness ratings collected elsewhere: the dashboard counts them beside the annotators.
    ratings = "".join(
        json.dumps(
            {
                "item": item.external_id,
                "coder": f"w{n}",
                "answer": {"helpfulness": (17 * n + 31 * i) % 101},
                **({"annotated_at": "2024-05-01T12:00:00+00:00"} if n == 0 else {}),
            }
        )
        + "\n"
        for i, item in enumerate(items[:6])
        for n in range(3)
    )
    import_annotations(
        project=project, stream=io.StringIO(ratings), fmt="jsonl", source="mturk batch"
    )
    return project


def test_a_bundle_loads_into_an_instance_without_the_project_with_equal_figures(study, tmp_path):
    before = comparable(project_report(study))
    out = tmp_path / "bundle"
    call_command("bundle", study.slug, str(out))
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        ["study.json", "agreement.json", "README.md", "manifest.json"]
        + [
            f"{t}.{ext}"
            for t in (
                "items",
                "annotations",
                "annotators",
                "judge_results",
                "prompts",
                "external_annotations",
                "settings_versions",
                "item_notes",
                "audit",
            )
            for ext in ("jsonl", "parquet")
        ]
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert (
        manifest["files"]["annotations.jsonl"]["rows"]
        == Annotation.objects.filter(item__project=study).count()
    )
    report_text = (out / "agreement.json").read_text()
    assert "cr-annotator" not in report_text  # account names never leave: pseudonyms only
    card = (out / "README.md").read_text()
    assert "60 current human annotations" in card and "Licences" in card
    judged = [json.loads(line) for line in (out / "judge_results.jsonl").read_text().splitlines()]
    assert {r["outcome"] for r in judged} == {"ok", "failed"}
    assert next(r for r in judged if r["outcome"] == "failed")["answer"] is None

    # The replay's own simulated judge plus the two results made above.
    judged_before = JudgeResult.objects.filter(item__project=study).count()
    assert len(judged) == judged_before > 2

    # A fresh instance: the project, its people and its judges are gone.
    slug = study.slug
    Project.objects.filter(slug=slug).delete()
    JudgeResult.objects.all().delete()
    Judge.objects.all().delete()
    call_command("bundle_load", str(out))
    loaded = Project.objects.get(slug=slug)
    after = comparable(project_report(loaded))
    assert set(after["tables"]) == set(before["tables"])
    for name, table in before["tables"].items():
        # Accounts are new (named after the pseudonyms), so per-coder rows are compared without
        # the account's name.
        assert same(anonymous(after["tables"][name]["rows"]), anonymous(table["rows"])), name
    assert JudgeResult.objects.filter(item__project=loaded).count() == judged_before
    external = ExternalAnnotation.objects.filter(item__project=loaded)
    assert external.count() == 18 and {a.source for a in external} == {"mturk batch"}
    assert {a.coder.source for a in external} == {"mturk batch"}
    assert external.filter(annotated_at__isnull=False).count() == 6
    assert "18 answers of\n  3 external coders" in card
    with pytest.raises(CommandError) as again:
        call_command("bundle_load", str(out))
    assert "exists" in str(again.value)


def test_the_parquet_tables_load_with_hugging_face_datasets(study, tmp_path):
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "bundle"
    call_command("bundle", study.slug, str(out))
    loaded = datasets.load_dataset(
        "parquet", data_files=str(out / "annotations.parquet"), cache_dir=str(tmp_path / "cache")
    )["train"]
    assert loaded.num_rows == 60  # 12 items × 5 annotators, as the paper
    first = loaded[0]
    assert set(json.loads(first["answer"])) == {"sentences", "none", "helpfulness"}


def test_the_folder_loads_as_a_hugging_face_dataset_by_its_card(study, tmp_path):
    """The dataset card's header (issue 29): licence, task categories, size and one config per
    non-empty table, so that the folder loads (and is pushed) as it is."""
    datasets = pytest.importorskip("datasets")
    from huggingface_hub import DatasetCard

    out = tmp_path / "bundle"
    call_command("bundle", study.slug, str(out), "--licence", "cc-by-4.0")
    card = DatasetCard.load(out / "README.md")
    assert card.data.license == "cc-by-4.0" and card.data.pretty_name == study.name
    assert card.data.task_categories == ["text-classification"]
    assert card.data.size_categories == ["n<1K"]
    manifest = json.loads((out / "manifest.json").read_text())
    configs = {c["config_name"]: c for c in card.data.configs}
    assert configs["annotations"].get("default") is True
    for name, config in configs.items():
        assert manifest["files"][config["data_files"]]["rows"] > 0, name
    assert "# " + study.name in card.text  # the card's own text follows the header
    cache = str(tmp_path / "cache")
    default = datasets.load_dataset(str(out), cache_dir=cache)["train"]
    assert default.num_rows == manifest["files"]["annotations.parquet"]["rows"]
    items = datasets.load_dataset(str(out), name="items", cache_dir=cache)["train"]
    assert items.num_rows == manifest["files"]["items.parquet"]["rows"]
    with pytest.raises(CommandError, match="not a licence identifier"):
        call_command("bundle", study.slug, str(tmp_path / "other"), "--licence", "CC BY 4.0!")


def test_researchers_download_the_bundle_as_a_zip_and_others_get_404(study):
    from projects.models import Membership

    researcher = Membership.objects.get(project=study, role="researcher").user
    client = Client()
    client.force_login(researcher)
    response = client.get(f"/p/{study.slug}/bundle.zip")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(response.content)).namelist()
    assert f"{study.slug}/annotations.parquet" in names
    annotator = Membership.objects.filter(project=study, role="annotator").first().user
    other = Client()
    other.force_login(annotator)
    assert other.get(f"/p/{study.slug}/bundle.zip").status_code == 404

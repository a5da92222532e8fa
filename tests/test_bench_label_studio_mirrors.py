"""bench/export_task_types.py's Label Studio mirrors (issue 34): every result a mirrored answer
becomes names a control of the mirror's labeling config, with a value that control offers; and
the Ranker Buckets made unique per Ranker, the results' bucket keys with them."""

import importlib.util
import sys
from pathlib import Path
from xml.etree.ElementTree import fromstring

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(
            "export_task_types", BENCH / "export_task_types.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def controls(config: str) -> dict[str, tuple[str, set[str]]]:
    """name -> (toName, the Choice values it offers) of each control in ``config``."""
    found = {}
    for element in fromstring(config).iter():
        if element.get("toName"):
            values = {c.get("value") for c in element.iter("Choice")}
            found[element.get("name")] = (element.get("toName"), values)
    return found


def check(config: str, data: dict, results: list[dict]) -> None:
    names = controls(config)
    texts = {e.get("name"): e.get("value") for e in fromstring(config).iter("Text")}
    for text, value in texts.items():
        assert value.removeprefix("$") in data, text
    for result in results:
        to_name, values = names[result["from_name"]]
        assert result["to_name"] == to_name in texts
        if result["type"] == "choices":
            assert set(result["value"]["choices"]) <= values


def test_citation_recovery_mirror_results_name_its_controls():
    module = bench()
    prepared = {"sentences": ["One [1].", "Two [2].", "Three."]}
    payload = {"claim": "A claim.", "explanation": "One [1]. Two [2]. Three."}
    config, data = module._ls_config_and_task("citation_recovery", payload, prepared)
    results = module._ls_results(
        "citation_recovery", {"sentences": [0, 2], "none": False, "helpfulness": 70}
    )
    check(config, data, results)
    assert results[0]["value"]["choices"] == ["sentence 1", "sentence 3"]
    assert results[1]["value"] == {"number": 70}


def test_stance_mirror_has_one_choices_per_target_sentence():
    module = bench()
    prepared = {
        "sentences": ["S0.", "S1.", "S2."],
        "targets": [{"index": 0}, {"index": 2}],
    }
    payload = {"claim": "C.", "response": "S0. S1. S2."}
    config, data = module._ls_config_and_task("stance", payload, prepared)
    answer = {
        "label": "disagree",
        "not_sure": False,
        "sentences": [{"index": 0, "label": "agree"}, {"index": 2, "label": "neutral"}],
    }
    results = module._ls_results("stance", answer)
    check(config, data, results)
    assert [r["from_name"] for r in results] == ["stance", "label_0", "label_2"]
    assert data["sentence_2"] == "S2." and "sentence_1" not in data

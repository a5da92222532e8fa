"""Rebuild the ranking demo files from the Transparent-FCExp release (run from the repository root):

    python data/explanation-ranking/derive.py ../shared/datasets/transparent-fcexp

Writes ``explanations.jsonl`` (the first 40 claims of the human-evaluation sample, each with the
GPT-4, GPT-3.5 and Llama-2-70B explanations as ranking outputs) and a ReproHum-shaped sheet of the
first 10 of them (``reprohum_sheet.csv``, justifications in an order shuffled per row with seed 87)
with its per-row mapping file (``reprohum_mapping.csv``). Citation markers such as ``[18]`` are
removed: they point to evidence passages that the ranking task does not show.
"""

import csv
import json
import random
import re
import sys
from pathlib import Path

SYSTEMS = ["gpt4", "gpt35", "llama2-70b"]
HERE = Path(__file__).resolve().parent
MARKER = re.compile(r"\s*(?:\[\d+\])+")


def main(source: Path) -> None:
    data = {s: json.loads((source / f"{s}_full_data.json").read_text()) for s in SYSTEMS}
    keys = json.loads((source / "hit_sample_keys.json").read_text())[:40]
    records = []
    for key in keys:
        first = data[SYSTEMS[0]][key]
        outputs = [
            {
                "system": s,
                "text": " ".join(MARKER.sub("", x).strip() for x in data[s][key]["explanation"][s]),
            }
            for s in SYSTEMS
        ]
        records.append(
            {"id": key, "claim": first["claim"], "label": first["label"], "outputs": outputs}
        )
    with open(HERE / "explanations.jsonl", "w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    rng = random.Random(87)
    with (
        open(HERE / "reprohum_sheet.csv", "w", encoding="utf-8", newline="") as sheet,
        open(HERE / "reprohum_mapping.csv", "w", encoding="utf-8", newline="") as mapping,
    ):
        sheet_writer = csv.writer(sheet)
        mapping_writer = csv.writer(mapping)
        sheet_writer.writerow(
            ["id", "claim", "label", "justification 1", "justification 2", "justification 3"]
        )
        mapping_writer.writerow(["id", "column", "system"])
        for record in records[:10]:
            outputs = list(record["outputs"])
            rng.shuffle(outputs)
            sheet_writer.writerow(
                [record["id"], record["claim"], record["label"], *(o["text"] for o in outputs)]
            )
            for n, output in enumerate(outputs, start=1):
                mapping_writer.writerow([record["id"], f"justification {n}", output["system"]])


if __name__ == "__main__":
    main(Path(sys.argv[1]))

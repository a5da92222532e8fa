"""Local NLI (sequence-classification) models, loaded once per worker process, run in batches.

The model directory is loaded with ``AutoModelForSequenceClassification.from_pretrained`` and
``local_files_only`` (nothing is ever downloaded). Labels come from the model's ``id2label``,
never from a position: MNLI models disagree on the order (roberta-large-mnli puts entailment at
2, the cross-encoder NLI models at 1), so reading "index 2" would silently judge the wrong label.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from llm_judges.backends.errors import ConfigError

_models: dict[tuple[str, str], NLIModel] = {}
_lock = threading.Lock()


def load_nli_model(path: str, *, entailment_label: str = "entailment") -> NLIModel:
    """The model at ``path``, loaded on first use and kept for the life of the process."""
    key = (str(Path(path).expanduser().resolve()), entailment_label.lower())
    with _lock:
        model = _models.get(key)
        if model is None:
            model = _models[key] = NLIModel(key[0], entailment_label=entailment_label)
        return model


class NLIModel:
    def __init__(self, path: str, *, entailment_label: str = "entailment") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        if not Path(path).is_dir():
            raise ConfigError(f"The NLI model directory {path} does not exist on the worker.")
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.model = AutoModelForSequenceClassification.from_pretrained(
                path, local_files_only=True
            )
        except (OSError, ValueError) as exc:
            raise ConfigError(f"Cannot load the NLI model in {path}: {exc}") from exc
        self.model.eval()
        id2label = self.model.config.id2label
        wanted = entailment_label.lower()
        # Canonical names: the configured entailment label becomes "entailment"; others keep
        # their own (lower-cased) names.
        self.labels = [
            "entailment" if str(id2label[i]).lower() == wanted else str(id2label[i]).lower()
            for i in range(self.model.config.num_labels)
        ]
        if "entailment" not in self.labels:
            names = ", ".join(f"{i}: {id2label[i]}" for i in range(self.model.config.num_labels))
            raise ConfigError(
                f"The NLI model has no {entailment_label!r} label (id2label is {names}); set the "
                "judge's entailment_label to the model's name for it."
            )
        self.path = path

    def classify(
        self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 16, max_length: int = 512
    ) -> list[dict[str, float]]:
        """Label probabilities for each (premise, hypothesis) pair, in order."""
        import torch

        limit = min(
            max_length, getattr(self.tokenizer, "model_max_length", max_length) or max_length
        )
        # Batch pairs of similar length together: a batch is padded to its longest pair, so
        # mixing a long evidence passage with short ones wastes most of the forward pass.
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        results: list[dict[str, float] | None] = [None] * len(pairs)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                indices = order[start : start + batch_size]
                chunk = [pairs[i] for i in indices]
                encoded = self.tokenizer(
                    [premise for premise, _ in chunk],
                    [hypothesis for _, hypothesis in chunk],
                    padding=True,
                    truncation=True,
                    max_length=limit,
                    return_tensors="pt",
                )
                logits = self.model(**encoded).logits
                for index, row in zip(indices, torch.softmax(logits, dim=-1).tolist(), strict=True):
                    results[index] = dict(zip(self.labels, row, strict=True))
        return results  # type: ignore[return-value]


def top_label(probabilities: dict[str, float]) -> str:
    return max(probabilities, key=probabilities.__getitem__)

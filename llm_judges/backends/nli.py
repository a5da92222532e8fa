"""Local NLI models, loaded once per worker process, run in batches.

Two kinds of model directory, loaded with ``local_files_only`` (nothing is ever downloaded):

- A sequence classifier (``AutoModelForSequenceClassification``). Labels come from the model's
  ``id2label``, never from a position: MNLI models disagree on the order (roberta-large-mnli puts
  entailment at 2, the cross-encoder NLI models at 1), so reading "index 2" would silently judge
  the wrong label.
- A seq2seq model (``AutoModelForSeq2SeqLM``) whose answer is text: a T5 that answers "1"/"0",
  T5-MNLI answering "entailment"/"neutral"/"contradiction". Each pair is written into the judge's
  ``input_template`` and the model generates greedily (``max_new_tokens``); the judge's
  ``label_mapping`` turns the generated text (trimmed, lower-cased) into an NLI label. Text the
  mapping does not know gives no label (``None``): the item is unparseable, the text kept.

``model_type="auto"`` reads the model's config: an encoder-decoder (``is_encoder_decoder``) is a
seq2seq model unless its architecture is a ``…ForSequenceClassification`` (bart-large-mnli is an
encoder-decoder classifier).

Direction (:func:`judge_pairs`): "forward" judges the task type's (premise, hypothesis) pairs as
they come (response → claim, evidence → claim), "reverse" swaps them, "both" judges each pair both
ways and combines the two labels by :func:`combine_directions`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from llm_judges.backends.errors import ConfigError

log = logging.getLogger(__name__)

_models: dict[tuple[str, str, str], NLIModel | Seq2SeqNLIModel] = {}
_lock = threading.Lock()


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def detect_model_type(path: str) -> str:
    """ "seq2seq" or "classifier", from the model directory's config."""
    _offline()
    if not Path(path).is_dir():
        raise ConfigError(f"The NLI model directory {path} does not exist on the worker.")
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise _unreadable(path, "config", exc) from exc
    architectures = getattr(config, "architectures", None) or []
    if any(name.endswith("ForSequenceClassification") for name in architectures):
        return "classifier"
    return "seq2seq" if getattr(config, "is_encoder_decoder", False) else "classifier"


def load_nli_model(
    path: str, *, entailment_label: str = "entailment", model_type: str = "auto"
) -> NLIModel | Seq2SeqNLIModel:
    """The model at ``path``, loaded on first use and kept for the life of the process."""
    resolved = str(Path(path).expanduser().resolve())
    if model_type == "auto":
        model_type = detect_model_type(resolved)
    key = (resolved, entailment_label.lower(), model_type)
    with _lock:
        model = _models.get(key)
        if model is None:
            if model_type == "seq2seq":
                model = Seq2SeqNLIModel(resolved)
            else:
                model = NLIModel(resolved, entailment_label=entailment_label)
            _models[key] = model
        return model


def _unreadable(path: str, what: str, exc: Exception) -> ConfigError:
    """The researcher reads that the directory holds no loadable model; the loader's own
    message (file names, permissions of the worker's file system) goes to the worker's log
    only (found by the outside probe: it was shown on the judges page)."""
    log.warning("NLI model %s in %s could not be loaded: %r", what, path, exc)
    return ConfigError(
        f"The NLI model directory {path} holds no {what} that loads: it must be a Hugging Face "
        "model saved with save_pretrained (config, weights and tokenizer); the worker's log "
        "has the loader's message."
    )


class NLIModel:
    model_type = "classifier"

    def __init__(self, path: str, *, entailment_label: str = "entailment") -> None:
        _offline()
        if not Path(path).is_dir():
            raise ConfigError(f"The NLI model directory {path} does not exist on the worker.")
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.model = AutoModelForSequenceClassification.from_pretrained(
                path, local_files_only=True
            )
        except (OSError, ValueError) as exc:
            raise _unreadable(path, "classifier", exc) from exc
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


class Seq2SeqNLIModel:
    """A text-to-text model (T5) that answers a rendered NLI prompt with a label word."""

    model_type = "seq2seq"

    def __init__(self, path: str) -> None:
        _offline()
        if not Path(path).is_dir():
            raise ConfigError(f"The NLI model directory {path} does not exist on the worker.")
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.model = AutoModelForSeq2SeqLM.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise _unreadable(path, "seq2seq model", exc) from exc
        self.model.eval()
        self.path = path

    def generate(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 16,
        max_length: int = 512,
        max_new_tokens: int = 5,
    ) -> list[str]:
        """The generated text (special tokens and NUL removed, trimmed) for each input, in order;
        greedy decoding, inputs of similar length batched together."""
        import torch

        limit = min(
            max_length, getattr(self.tokenizer, "model_max_length", max_length) or max_length
        )
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        results: list[str | None] = [None] * len(texts)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                indices = order[start : start + batch_size]
                encoded = self.tokenizer(
                    [texts[i] for i in indices],
                    padding=True,
                    truncation=True,
                    max_length=limit,
                    return_tensors="pt",
                )
                encoded.pop("token_type_ids", None)
                generated = self.model.generate(
                    input_ids=encoded["input_ids"],
                    attention_mask=encoded["attention_mask"],
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    num_beams=1,
                )
                decoded = self.tokenizer.batch_decode(generated, skip_special_tokens=True)
                for index, text in zip(indices, decoded, strict=True):
                    # PostgreSQL's jsonb cannot hold NUL; a vocabulary may (byte-level ones).
                    results[index] = text.replace("\x00", "").strip()
        return results  # type: ignore[return-value]


def read_label(generated: str, label_mapping: Mapping[str, str]) -> str | None:
    """The NLI label ``generated`` maps to (trimmed, ignoring case), or ``None``."""
    return label_mapping.get(generated.strip().lower())


def combine_directions(forward: str | None, reverse: str | None) -> str | None:
    """The label of a pair judged both ways: entailment only when both directions entail
    (mutual entailment), contradiction when either direction contradicts, neutral otherwise;
    ``None`` (unparseable) when either direction is."""
    if forward is None or reverse is None:
        return None
    if forward == reverse:
        return forward
    if "contradiction" in (forward, reverse):
        return "contradiction"
    return "neutral"


def _judge_one_way(
    model: NLIModel | Seq2SeqNLIModel, pairs: Sequence[tuple[str, str]], parameters: Mapping
) -> list[dict[str, Any]]:
    if isinstance(model, Seq2SeqNLIModel):
        template = parameters["input_template"]
        texts = [template.format(premise=p, hypothesis=h) for p, h in pairs]
        generated = model.generate(
            texts,
            batch_size=parameters["batch_size"],
            max_length=parameters["max_length"],
            max_new_tokens=parameters["max_new_tokens"],
        )
        mapping = parameters["label_mapping"]
        return [{"label": read_label(text, mapping), "generated": text} for text in generated]
    return [
        {"label": top_label(p), "probabilities": {k: round(v, 4) for k, v in p.items()}}
        for p in model.classify(
            pairs, batch_size=parameters["batch_size"], max_length=parameters["max_length"]
        )
    ]


def judge_pairs(
    model: NLIModel | Seq2SeqNLIModel, pairs: Sequence[tuple[str, str]], parameters: Mapping
) -> list[dict[str, Any]]:
    """One record per (premise, hypothesis) pair, in order: ``label`` (an NLI label, ``None``
    when a seq2seq model's text is not in the mapping) with ``probabilities`` (classifier) or
    ``generated`` (seq2seq); with direction "both", ``forward`` and ``reverse`` records and the
    combined ``label``. Both directions go through the model in the same batches."""
    if isinstance(model, Seq2SeqNLIModel) and not parameters.get("label_mapping"):
        raise ConfigError(
            f"The NLI model in {model.path} is a seq2seq model: set the judge's label_mapping "
            '(generated text → NLI label, e.g. {"entailment": "entailment", "neutral": '
            '"neutral", "contradiction": "contradiction"}).'
        )
    direction = parameters.get("direction", "forward")
    swapped = [(hypothesis, premise) for premise, hypothesis in pairs]
    if direction == "forward":
        return _judge_one_way(model, pairs, parameters)
    if direction == "reverse":
        return _judge_one_way(model, swapped, parameters)
    judged = _judge_one_way(model, [*pairs, *swapped], parameters)
    forward, reverse = judged[: len(pairs)], judged[len(pairs) :]
    return [
        {"label": combine_directions(f["label"], r["label"]), "forward": f, "reverse": r}
        for f, r in zip(forward, reverse, strict=True)
    ]


def generated_texts(judged: Sequence[Mapping[str, Any]]) -> str:
    """The generated texts of judged pairs as JSON (the raw reply of a seq2seq judge)."""

    def texts(record: Mapping[str, Any]) -> Any:
        if "forward" in record:
            return {"forward": texts(record["forward"]), "reverse": texts(record["reverse"])}
        return record.get("generated")

    return json.dumps([texts(record) for record in judged], ensure_ascii=False)


def uncertainty(detail: Mapping[str, Any]) -> float | None:
    """How unsure the classifier was of an item (active sampling): one minus the top label's
    probability, averaged over the item's pairs and directions; None where the result holds no
    probabilities (a seq2seq model's generated text)."""
    tops = []
    for record in detail.get("pairs") or []:
        if not isinstance(record, Mapping):
            continue
        for one in (record.get("forward"), record.get("reverse"), record):
            probabilities = one.get("probabilities") if isinstance(one, Mapping) else None
            if isinstance(probabilities, Mapping) and probabilities:
                tops.append(1.0 - max(float(p) for p in probabilities.values()))
    return sum(tops) / len(tops) if tops else None

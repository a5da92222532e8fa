"""Build a tiny, randomly initialised T5 (``T5ForConditionalGeneration``) with a word-level
tokenizer made offline, and save both like a real seq2seq NLI model directory (T5-MNLI), so the
NLI judge loads it through ``from_pretrained`` exactly as it would load a downloaded one.

A random model generates arbitrary tokens. Its saved generation config suppresses every token but
the ``answers`` words (``suppress_tokens``, which ``generate`` applies by default), so with
``max_new_tokens=1`` it always answers exactly one of them; which one depends on the input and
the random weights, and tests read it from the model itself.
"""

from __future__ import annotations

import re
from pathlib import Path

ANSWERS = ("entailment", "neutral", "contradiction")
SPECIAL = ("<pad>", "</s>", "<unk>")
CORPUS = [
    "mnli hypothesis: premise: nli",
    "Claim number 1 is accurate.",
    "Evidence passage 2 of claim 0.",
    "Sentence 1 of explanation 0.",
    "The city doubled its bike lanes in 2023.",
    "The 2023 report lists 40 km of new lanes.",
    "0 1 2 3 4 5 6 7 8 9",
]


def words(text: str) -> list[str]:
    """The tokenizer's pre-tokenization (``tokenizers`` Whitespace: words and punctuation)."""
    return re.findall(r"\w+|[^\w\s]+", text.lower())


def build_tiny_t5(
    directory: Path,
    *,
    answers: tuple[str, ...] = ANSWERS,
    seed: int = 0,
    d_model: int = 16,
    initializer_factor: float = 1.0,
) -> Path:
    import torch
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel
    from transformers import (
        GenerationConfig,
        PreTrainedTokenizerFast,
        T5Config,
        T5ForConditionalGeneration,
    )

    directory.mkdir(parents=True, exist_ok=True)
    vocab: dict[str, int] = {}
    for token in [*SPECIAL, *answers, *(w for line in CORPUS for w in words(line))]:
        vocab.setdefault(token, len(vocab))
    backend = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", vocab["</s>"])]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        model_max_length=128,
    )
    tokenizer.save_pretrained(str(directory))

    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=len(vocab),
        d_model=d_model,
        d_kv=8,
        d_ff=32,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        relative_attention_num_buckets=8,
        initializer_factor=float(initializer_factor),
        pad_token_id=vocab["<pad>"],
        eos_token_id=vocab["</s>"],
        decoder_start_token_id=vocab["<pad>"],
    )
    model = T5ForConditionalGeneration(config)
    model.generation_config = GenerationConfig(
        pad_token_id=vocab["<pad>"],
        eos_token_id=vocab["</s>"],
        decoder_start_token_id=vocab["<pad>"],
        suppress_tokens=[i for token, i in vocab.items() if token not in answers],
    )
    model.save_pretrained(str(directory))
    return directory


def generate_each(directory: Path, texts: list[str], *, max_new_tokens: int = 1) -> list[str]:
    """What the saved model answers to each text alone (no batch, no padding): the reference the
    judge's batched generation is compared with."""
    import torch
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    model = T5ForConditionalGeneration.from_pretrained(str(directory), local_files_only=True)
    model.eval()
    answers = []
    for text in texts:
        encoded = tokenizer([text], return_tensors="pt")
        with torch.inference_mode():
            output = model.generate(
                input_ids=encoded["input_ids"],
                attention_mask=encoded["attention_mask"],
                max_new_tokens=max_new_tokens,
                do_sample=False,
            )
        answers.append(tokenizer.decode(output[0], skip_special_tokens=True).strip())
    return answers

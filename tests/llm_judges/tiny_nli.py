"""Build a tiny, randomly initialised 3-label BERT sequence classifier with its own word-piece
vocabulary (trained offline with ``tokenizers`` on a few sentences) and save it like a real NLI
model directory, so the NLI judge loads it through ``from_pretrained`` exactly as it would load
roberta-large-mnli.

``bias`` sets the classifier's bias; with ``zero_weights`` the classifier ignores the text, so the
decision is known in advance: the label with the largest bias.
"""

from __future__ import annotations

from pathlib import Path

# Entailment first: the real models put it elsewhere (roberta-large-mnli at 2, the
# cross-encoder NLI models at 1), so code that reads a label by position fails on this model.
LABELS = {0: "ENTAILMENT", 1: "CONTRADICTION", 2: "NEUTRAL"}

CORPUS = [
    "Claim number 1 is accurate.",
    "Evidence passage 2 of claim 0.",
    "Sentence 1 of explanation 0.",
    "The city doubled its bike lanes in 2023.",
    "The 2023 report lists 40 km of new lanes.",
    "The network was 80 km long at the end of 2022.",
    "Most new lanes are painted, not protected.",
]


def build_tiny_nli(
    directory: Path,
    *,
    labels: dict[int, str] = LABELS,
    bias: tuple[float, float, float] = (4.0, 0.0, 0.0),
    zero_weights: bool = True,
    seed: int = 0,
) -> Path:
    import torch
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(
        CORPUS * 3,
        vocab_size=300,
        min_frequency=1,
        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
    )
    wordpiece.save_model(str(directory))
    tokenizer = BertTokenizerFast(vocab_file=str(directory / "vocab.txt"), model_max_length=128)
    tokenizer.save_pretrained(str(directory))

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=len(labels),
        id2label=dict(labels),
        label2id={name: index for index, name in labels.items()},
    )
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        if zero_weights:
            model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor(bias))
    model.save_pretrained(str(directory))
    return directory

"""Build a tiny, randomly initialised causal LM (Llama architecture) with a word-level tokenizer
and a chat template made offline, saved like a downloaded model directory, for running the LLM
judge against a real ``transformers serve``.

Its vocabulary is the pieces of a citation-recovery answer (``{ "sentences" : [ 2 ] }`` and
words), so a random model's replies mix valid answers, JSON of the wrong shape and garbage, as
the tiny random models the judge was tried with did.
"""

from __future__ import annotations

from pathlib import Path

SPECIAL = ("<pad>", "<s>", "</s>", "<unk>")
PIECES = ("{", "}", '"sentences"', ":", "[", "]", ",", "-1", "1", "2", "3", "4", "the", "claim")
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def build_tiny_causal_lm(directory: Path, *, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import WordLevel
    from transformers import (
        GenerationConfig,
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
    )

    directory.mkdir(parents=True, exist_ok=True)
    vocab = {token: i for i, token in enumerate([*SPECIAL, *PIECES])}
    backend = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=4096,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(str(directory))

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        bos_token_id=vocab["<s>"],
        eos_token_id=vocab["</s>"],
        pad_token_id=vocab["<pad>"],
    )
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=vocab["<s>"],
        eos_token_id=vocab["</s>"],
        pad_token_id=vocab["<pad>"],
        # Never the tokens a decoded reply drops (it would come back empty); "</s>" may end it.
        suppress_tokens=[vocab["<pad>"], vocab["<s>"], vocab["<unk>"]],
    )
    model.save_pretrained(str(directory))
    return directory

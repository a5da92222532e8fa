"""all-MiniLM-L6-v2 embeddings, loaded offline with the weights' SHA-256 verified (real model)."""

import os
import subprocess
import sys

import numpy as np
import pytest

from annotation.text import embeddings
from tests.conftest import REPO

# Each case: a claim and response sentences; the one that restates the claim (index `restates`)
# shares fewer exact words with it than some distractors do, so only meaning puts it first.
CASES = [
    (
        "Drinking green tea helps people lose weight.",
        [
            "Green tea is one of the most popular drinks in Japan.",
            "Many people try to lose weight after the holidays.",
            "Regularly consuming green tea can lead to weight loss.",
            "Black tea and green tea come from the same plant.",
            "Drinking water before meals is often recommended.",
        ],
        2,
    ),
    (
        "Vaccines cause autism in children.",
        [
            "Children receive several vaccines in their first two years.",
            "Autism is usually diagnosed in early childhood.",
            "Some parents believe that immunisation shots trigger autism spectrum disorder in kids.",
            "Vaccines are tested in large clinical trials.",
        ],
        2,
    ),
    (
        "Eating carrots improves your night vision.",
        [
            "Carrots are orange because of beta-carotene.",
            "Night shifts can disrupt your sleep.",
            "Eating more vegetables is good for your health.",
            "Carrot consumption lets you see better in the dark.",
        ],
        3,
    ),
]


@pytest.mark.parametrize(
    ("claim", "sentences", "restates"), CASES, ids=["green-tea", "vaccines", "carrots"]
)
def test_the_sentence_that_restates_the_claim_ranks_first(claim, sentences, restates):
    ranked = embeddings.most_similar(claim, sentences, k=len(sentences))
    print(claim, [(i, round(s, 3)) for i, s in ranked])
    assert ranked[0][0] == restates
    assert ranked[0][1] > 0.6
    assert ranked[0][1] - ranked[1][1] > 0.1  # a clear margin, not a near tie


def test_embeddings_are_unit_length_and_dot_products_are_cosines():
    vectors = embeddings.embed(["A cat sat on the mat.", "A dog slept on the rug.", ""])
    assert vectors.shape == (3, embeddings.DIMENSION) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    a, b = vectors[0].astype(np.float64), vectors[1].astype(np.float64)
    cosine = float(a @ b)
    assert cosine == pytest.approx(
        embeddings.most_similar("A cat sat on the mat.", ["A dog slept on the rug."], 1)[0][1],
        abs=1e-5,
    )


def test_most_similar_returns_at_most_k_and_handles_no_candidates():
    assert embeddings.most_similar("claim", [], 5) == []
    assert len(embeddings.most_similar("claim", ["a", "b", "c"], 2)) == 2
    assert embeddings.embed([]).shape == (0, embeddings.DIMENSION)


def test_the_bundled_weights_have_the_pinned_digest():
    directory = embeddings.model_dir()
    assert embeddings.sha256_of(directory / "model.safetensors") == embeddings.WEIGHTS_SHA256
    embeddings.verify_model_files(directory)  # every pinned file


def test_a_model_whose_files_differ_is_refused_naming_the_file(tmp_path, monkeypatch):
    source = embeddings.model_dir()
    for name in embeddings.FILE_SHA256:
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(source / name)
    (tmp_path / "config.json").unlink()
    (tmp_path / "config.json").write_text(
        (source / "config.json").read_text().replace("384", "385")
    )
    monkeypatch.setenv(embeddings.MODEL_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(embeddings, "_model", None)
    with pytest.raises(embeddings.ModelIntegrityError, match=r"config\.json .* expected 953f9c0d"):
        embeddings.get_model()
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(embeddings.ModelIntegrityError, match="model.safetensors is missing"):
        embeddings.verify_model_files(tmp_path)


def test_the_model_loads_offline_without_network_access():
    # A fresh process with every proxy pointing nowhere: any download attempt would fail.
    code = (
        "from annotation.text import embeddings as e; "
        "v = e.embed(['offline']); info = e.load_info(); "
        "print(v.shape, round(info.load_seconds, 2), round(info.verify_seconds, 3))"
    )
    env = {
        **os.environ,
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HF_HUB_OFFLINE": "0",
        "HF_HOME": "/nonexistent-hf-home",
    }
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("(1, 384)")


def test_django_startup_does_not_import_torch_and_the_model_loads_only_when_used():
    # (spaCy's thinc imports torch whenever it is installed, so importing annotation.text may
    # load torch; the model and sentence-transformers still wait for the first embed().)
    code = (
        "import django, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); "
        "django.setup(); from annotation import task_types; task_types.get('stance'); "
        "assert 'torch' not in sys.modules; "
        "import annotation.text.embeddings as e; "
        "assert 'sentence_transformers' not in sys.modules and e.load_info() is None"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=120)

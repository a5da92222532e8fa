"""Stance (UPHILL, Kaur et al. 2024): does an LLM's response agree with a health claim?

The annotator labels the whole response Agree / Disagree / Neutral (+ "Not sure"), then each of
the k response sentences most similar to the claim, each "independently of the paragraph". The
sentences are chosen once, at import, with all-MiniLM-L6-v2 embeddings and cosine similarity
(:mod:`annotation.text.embeddings`), and stored in ``prepared`` with their similarities.

Labels are stored in lower case (``agree`` / ``disagree`` / ``neutral``) so that export rows feed
:mod:`metrics.stance` (factual accuracy per presupposition level, consistency) directly: each
row carries ``claim_id``, ``veracity``, ``level`` and ``label``. Sentence indices are 0-based in
storage and exports; the UI shows them 1-based.

What the annotator sees is blind: the claim and the response only, never the claim's veracity,
the presupposition level, the query, the model or the similarity scores.
"""

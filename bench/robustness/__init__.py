"""The robustness corpus: realistic agent edits with known right outcomes (see corpus.py)."""

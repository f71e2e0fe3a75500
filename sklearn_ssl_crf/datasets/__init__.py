"""Sequence-labelling data: readers for column-formatted corpora, loaders of the corpora
this project is measured on, and a synthetic generator.

The text readers return plain Python lists: ``sequences`` (one list of tokens per sentence)
and ``labels`` (one list of str tags per sentence). The handwriting reader `read_ocr_letters`
returns one (letters x pixels) array per word instead, ready for `WindowRows`. The synthetic
generator `make_sequences` draws from a hidden Markov model whose words are ambiguous on their
own, so that a model of label transitions (a CRF) beats any per-token classifier.
"""

from ._corpora import load_bc2gm, load_conll2000, load_ud_english_ewt
from ._ocr import load_ocr, read_ocr_letters
from ._synthetic import make_sequences
from ._text import iter_text, read_column_fields, read_columns, read_conllu, read_text

__all__ = [
    "load_bc2gm",
    "load_conll2000",
    "load_ocr",
    "load_ud_english_ewt",
    "make_sequences",
    "read_column_fields",
    "read_columns",
    "read_conllu",
    "read_ocr_letters",
    "read_text",
    "iter_text",
]

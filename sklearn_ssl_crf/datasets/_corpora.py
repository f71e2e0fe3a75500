"""Loaders of the corpora in their distributed layout: CoNLL-2000, BC2GM and UD
English-EWT, each as a dict of splits.
"""

from pathlib import Path

from ._text import read_columns, read_conllu


def _load_splits(data_dir, filenames, reader, **kwargs):
    """``{split: reader(file)}`` for those of ``filenames`` present in ``data_dir``."""
    data_dir = Path(data_dir)
    splits = {
        split: reader(data_dir / filename, **kwargs)
        for split, filename in filenames.items()
        if (data_dir / filename).is_file()
    }
    if not splits:
        raise FileNotFoundError(f"none of {sorted(filenames.values())} found in {data_dir}")
    return splits


def load_conll2000(data_dir):
    """Load the CoNLL-2000 chunking corpus from a folder holding ``train.txt``/``test.txt``.

    Each file is read with `read_columns`: one token per line (``word POS chunk``), a blank
    line between sentences. A split whose file is missing is left out.

    Parameters
    ----------
    data_dir : str or path-like
        Folder of the corpus (files ``word POS chunk`` per line).

    Returns
    -------
    splits : dict
        ``{"train": (sequences, labels), "test": (sequences, labels)}`` for the files
        present; tokens are ``(word, POS)`` tuples, labels are chunk tags such as ``"B-NP"``.

    See Also
    --------
    read_columns : Reads one file of the corpus.
    load_bc2gm : Loads the BC2GM gene-mention corpus.

    Examples
    --------
    >>> from sklearn_ssl_crf.datasets import load_conll2000
    >>> splits = load_conll2000("path/to/conll2000")  # doctest: +SKIP
    >>> X_train, y_train = splits["train"]  # doctest: +SKIP
    """
    return _load_splits(data_dir, {"train": "train.txt", "test": "test.txt"}, read_columns)


def load_bc2gm(data_dir):
    """Load the BioCreative II gene-mention corpus (IOB form) from a folder of ``.tsv`` files.

    Each file is read with `read_columns`, its fields separated by tabs: one
    ``token<TAB>tag`` per line, a blank line between sentences. A split whose file is
    missing is left out.

    Parameters
    ----------
    data_dir : str or path-like
        Folder holding ``train.tsv``, ``devel.tsv`` and ``test.tsv`` (``token<TAB>tag``).

    Returns
    -------
    splits : dict
        ``{"train": ..., "devel": ..., "test": ...}`` of ``(sequences, labels)`` for the files
        present; tokens are str, labels are ``"B-GENE"``, ``"I-GENE"`` or ``"O"``.

    See Also
    --------
    read_columns : Reads one file of the corpus.
    load_conll2000 : Loads the CoNLL-2000 chunking corpus.

    Examples
    --------
    >>> from sklearn_ssl_crf.datasets import load_bc2gm
    >>> X_train, y_train = load_bc2gm("path/to/bc2gm")["train"]  # doctest: +SKIP
    """
    filenames = {"train": "train.tsv", "devel": "devel.tsv", "test": "test.tsv"}
    return _load_splits(data_dir, filenames, read_columns, sep="\t")


def load_ud_english_ewt(data_dir, column="upos"):
    """Load Universal Dependencies English-EWT words and part-of-speech tags.

    Each file is read with `read_conllu`, keeping the word forms and the tags of
    ``column``. A split whose file is missing is left out.

    Parameters
    ----------
    data_dir : str or path-like
        Folder holding ``en_ewt-ud-{train,dev,test}.conllu``.
    column : {"upos", "xpos"}, default="upos"
        Universal or Penn Treebank tags.

    Returns
    -------
    splits : dict
        ``{"train": ..., "dev": ..., "test": ...}`` of ``(sequences, labels)`` for the files
        present; tokens are the word forms.

    See Also
    --------
    read_conllu : Reads one CoNLL-U file.

    Examples
    --------
    >>> from sklearn_ssl_crf.datasets import load_ud_english_ewt
    >>> X_dev, y_dev = load_ud_english_ewt("path/to/ud_english_ewt")["dev"]  # doctest: +SKIP
    """
    filenames = {split: f"en_ewt-ud-{split}.conllu" for split in ("train", "dev", "test")}
    return _load_splits(data_dir, filenames, read_conllu, column=column)

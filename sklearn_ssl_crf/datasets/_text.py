"""Readers of sequence-labelling text: column files (CoNLL-2000, BC2GM), CoNLL-U and raw
text, one sentence a line. They return plain Python lists: ``sequences`` (one list of
tokens per sentence) and ``labels`` (one list of str tags per sentence).
"""

import codecs
import gzip
import numbers
import sys
from operator import itemgetter

MAX_LINE_CHARS = 2**24
"""The longest line the readers accept, in characters (16 Mi): ten times a 200,000-token
sentence of raw text, and a bound on what a file without line ends (``/dev/zero``, a
gzip bomb) makes them read."""

MAX_TOKEN_CHARS = 2**16
"""The longest word (run of non-whitespace characters) the readers accept (64 Ki
characters): thirty times the longest URLs in use."""

# Bytes (characters of a text file) read at a time: large enough to read at the speed of
# reading in one go, small beside MAX_LINE_CHARS.
_BLOCK = 2**20

_DOCSTART = "-DOCSTART-"
_CONLLU_FIELDS = 10
_CONLLU_FORM = 1
_CONLLU_TAG_COLUMN = {"upos": 3, "xpos": 4}


def _read_lines(source, encoding):
    """Name and lines of a path (gzip-compressed when it ends in ``.gz``) or open text file,
    read a block at a time with the limits of `_line_blocks`."""
    name, blocks = _line_blocks(source, encoding)
    lines = []
    for block in blocks:
        lines += block
    return name, lines


def _line_blocks(source, encoding):
    """Name of a path or open text file, and a generator of its lines in blocks.

    The file is read ``_BLOCK`` bytes (characters for a text file) at a time, decoded
    incrementally, so a line or a word beyond `MAX_LINE_CHARS` or `MAX_TOKEN_CHARS` stops
    the reading within a block of the limit, whatever the file holds (a gzip bomb,
    ``/dev/zero``). Each block is a list of lines without their line ends (CRLF and CR end
    a line as LF does); the last line of the file comes last, empty when the file ends
    with a line end. A byte-order mark at the start is dropped.
    """
    if hasattr(source, "read"):
        name = str(getattr(source, "name", "<file>"))
        return name, _split_lines(name, iter(lambda: source.read(_BLOCK), ""), None)
    return str(source), _split_lines(str(source), _decoded_blocks(source, encoding), encoding)


def _decoded_blocks(path, encoding):
    """The text of a file in blocks, decoded incrementally (an empty block may come before
    the end)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        f = opener(path, "rb")
    except IsADirectoryError:
        raise IsADirectoryError(f"{path}: is a directory, not a file") from None
    with f:
        decoder = _incremental_decoder(encoding, data := f.read(_BLOCK))
        while data:
            yield decoder.decode(data)
            data = f.read(_BLOCK)
        yield decoder.decode(b"", final=True)


_BYTE_ORDER_MARKS = {"utf-16": (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE),
                     "utf-32": (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)}


def _incremental_decoder(encoding, start):
    """A decoder of ``encoding`` for a text starting with the bytes ``start``: UTF-16 and
    -32 without a byte-order mark in the machine's order, as ``bytes.decode`` reads them."""
    name = codecs.lookup(encoding).name
    if name in _BYTE_ORDER_MARKS and not start.startswith(_BYTE_ORDER_MARKS[name]):
        name += "-le" if sys.byteorder == "little" else "-be"
    return codecs.getincrementaldecoder(name)()


def _split_lines(name, blocks, encoding):
    """Lists of the complete lines of the text ``blocks`` (see `_line_blocks`), their lengths
    checked; ``encoding`` (None for a text file) names the decoding in error messages."""
    lineno, carry, first = 0, "", True
    while True:
        error = None
        try:
            text = next(blocks, None)
        except UnicodeDecodeError as caught:
            if encoding is None:
                raise
            # The lines before the bad byte come first, as a lazy reader reaches them.
            error, text = caught, caught.object[:caught.start].decode(encoding, "replace")
        end = text is None
        if first and text:
            text, first = text.removeprefix("\ufeff"), False
        text = carry + (text or "")
        # A CR at the end may be the first half of a CRLF: it ends its line in the next block.
        held = "\r" if text.endswith("\r") and not end else ""
        # As universal newlines would: CRLF and CR become LF. Splitting on "\n" only (not
        # str.splitlines) keeps tokens that contain exotic line separators such as U+2028.
        text = text[:len(text) - len(held)].replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        carry = "" if end else lines.pop() + held
        if len(carry) > MAX_LINE_CHARS:
            raise _too_long(name, lineno + len(lines) + 1, MAX_LINE_CHARS, "the line")
        if lines:
            _check_lengths(name, lineno, text, lines)
            lineno += len(lines)
            yield lines
        if error is not None:
            # The bad byte is on the unfinished line, or after its CR.
            raise _decoding_error(name, lineno + 1 + len(held), error,
                                  encoding) from None
        if end:
            return


def _check_lengths(name, lineno, text, lines):
    """Check that no line of ``lines``, the lines of ``text`` (the first is line ``lineno +
    1``), exceeds the limits."""
    # A line of at least MAX_TOKEN_CHARS characters fills one of the aligned windows of
    # half that length: when each holds a line end, no line can hold a word beyond the
    # limit. A few str.find per block, where measuring every line cost 10 % of read_text.
    step = MAX_TOKEN_CHARS // 2
    if all(text.find("\n", start, start + step) >= 0
           for start in range(0, len(text) - step + 1, step)):
        return
    for number, line in enumerate(lines, lineno + 1):
        if len(line) > MAX_LINE_CHARS:
            raise _too_long(name, number, MAX_LINE_CHARS, "the line")
        if len(line) > MAX_TOKEN_CHARS and max(map(len, line.split())) > MAX_TOKEN_CHARS:
            raise _too_long(name, number, MAX_TOKEN_CHARS, "a word")


def _too_long(name, lineno, limit, what):
    return ValueError(f"{name}, line {lineno}: {what} is longer than {limit:,} characters, "
                      f"the readers' limit; is it a text file of sentences?")


def _decoding_error(name, lineno, error, encoding):
    byte = error.object[error.start:error.start + 1]
    return ValueError(f"{name}, line {lineno}: byte {byte!r} is not valid {encoding} "
                      f"({error.reason}); give the file's encoding")


def _column_indices(columns, label_column, n_fields, name, lineno):
    """Normalise ``columns`` and ``label_column`` to non-negative indices for rows of
    ``n_fields`` fields."""
    def normalise(index, what):
        if (
            not isinstance(index, numbers.Integral)
            or isinstance(index, bool)
            or not -n_fields <= index < n_fields
        ):
            raise ValueError(
                f"{name}, line {lineno}: {what} {index!r} does not exist in a line of "
                f"{n_fields} columns"
            )
        return int(index) % n_fields

    label = normalise(label_column, "label_column")
    if columns is None:
        if n_fields < 2:
            raise ValueError(
                f"{name}, line {lineno}: a labelled token line needs a token and a label, "
                f"found 1 column"
            )
        return [i for i in range(n_fields) if i != label], label
    if isinstance(columns, numbers.Integral):
        columns = [columns]
    keep = [normalise(i, "column") for i in columns]
    if not keep:
        raise ValueError("columns must name at least one column")
    if label in keep:
        raise ValueError(f"columns {list(columns)} include the label column {label_column}")
    return keep, label


def read_columns(path, columns=None, label_column=-1, sep=None, encoding="utf-8"):
    """Read a column-formatted sequence-labelling file (CoNLL-2000 style, or ``token<TAB>tag``).

    One token per line, its fields separated by ``sep``; a blank line ends a sentence. Lines
    starting with ``-DOCSTART-`` are document markers and are skipped (they also end a
    sentence). Repeated blank lines, trailing whitespace, CRLF line ends and a missing final
    blank line are tolerated.

    Parameters
    ----------
    path : str, path-like or text file object
        The file to read (gzip-compressed when its name ends in ``.gz``), a block of about
        a megabyte at a time; a byte-order mark at its start is dropped. An open file is
        read from its current position.
    columns : int, sequence of int or None, default=None
        Columns making up a token (negative indices count from the end). ``None`` keeps every
        column except the label column.
    label_column : int, default=-1
        Column holding the tag.
    sep : str or None, default=None
        Field separator; ``None`` splits on runs of whitespace. Use ``"\\t"`` when tokens may
        contain spaces.
    encoding : str, default="utf-8"
        Encoding used when ``path`` is a path.

    Returns
    -------
    sequences : list of list
        One list of tokens per sentence. A token is the str field when one column is kept,
        else a tuple of the kept fields in the order of ``columns`` (for example
        ``(word, POS)`` for CoNLL-2000).
    labels : list of list of str
        The tags, aligned with ``sequences``.

    Raises
    ------
    ValueError
        If a line has a different number of fields than the first token line of the file,
        or a byte is not valid in ``encoding`` (the message names the file and the line
        number), or if a requested column does not exist.
        A line longer than 2**24 characters (16 Mi), or a word (a run of non-whitespace
        characters) longer than 2**16 (64 Ki), stops the reading within a megabyte of the
        limit, whatever the file (a gzip bomb, a device such as ``/dev/zero``).
    IsADirectoryError
        If ``path`` is a directory.

    See Also
    --------
    read_column_fields : The fields of every token, no label split.
    read_conllu : Reads CoNLL-U files.
    load_conll2000 : Reads the CoNLL-2000 corpus with this function.

    Examples
    --------
    >>> import io
    >>> from sklearn_ssl_crf.datasets import read_columns
    >>> text = "He PRP B-NP\\nreckons VBZ B-VP\\n\\nThe DT B-NP\\n"
    >>> sequences, labels = read_columns(io.StringIO(text))
    >>> sequences
    [[('He', 'PRP'), ('reckons', 'VBZ')], [('The', 'DT')]]
    >>> labels
    [['B-NP', 'B-VP'], ['B-NP']]
    >>> read_columns(io.StringIO(text), columns=0)[0]
    [['He', 'reckons'], ['The']]
    """
    name, lines = _read_lines(path, encoding)
    rows, first_line = _column_rows(name, lines, sep)
    if not rows:
        return [], []
    keep, label = _column_indices(columns, label_column, len(rows[0][0]), name, first_line)
    # itemgetter returns the bare field for one index and a tuple for several, exactly the
    # token type documented above.
    get_token = itemgetter(*keep)
    sequences = [[get_token(fields) for fields in sentence] for sentence in rows]
    labels = [[fields[label] for fields in sentence] for sentence in rows]
    return sequences, labels


def read_column_fields(path, sep=None, encoding="utf-8"):
    """Read a column-formatted file as it is: the fields of every token, no label split.

    The layout is `read_columns`'s (one token per line, a blank line or ``-DOCSTART-`` ends
    a sentence), with or without a label column: use it for unlabelled column files, or
    to keep every field of a file.

    Parameters
    ----------
    path : str, path-like or text file object
        The file to read (gzip-compressed when its name ends in ``.gz``), a block of about
        a megabyte at a time; a byte-order mark at its start is dropped. An open file is
        read from its current position.
    sep : str or None, default=None
        Field separator; ``None`` splits on runs of whitespace.
    encoding : str, default="utf-8"
        Encoding used when ``path`` is a path.

    Returns
    -------
    sentences : list of list of list of str
        The fields of each token of each sentence.

    Raises
    ------
    ValueError
        If a line has a different number of fields than the first token line, or a byte is
        not valid in ``encoding`` (the message names the file and the line number).
        A line longer than 2**24 characters (16 Mi), or a word (a run of non-whitespace
        characters) longer than 2**16 (64 Ki), stops the reading within a megabyte of the
        limit, whatever the file (a gzip bomb, a device such as ``/dev/zero``).
    IsADirectoryError
        If ``path`` is a directory.

    See Also
    --------
    read_columns : Splits the fields into tokens and labels.

    Examples
    --------
    >>> import io
    >>> from sklearn_ssl_crf.datasets import read_column_fields
    >>> read_column_fields(io.StringIO("He PRP\\nran VBD\\n\\nGo VB\\n"))
    [[['He', 'PRP'], ['ran', 'VBD']], [['Go', 'VB']]]
    """
    name, lines = _read_lines(path, encoding)
    return _column_rows(name, lines, sep)[0]


def _column_rows(name, lines, sep):
    """The fields of each token of each sentence, and the line number of the first token;
    checks that every token line has as many fields as the first."""
    sentences, sentence = [], []
    n_fields = first_line = None
    for lineno, line in enumerate(lines, start=1):
        line = line.rstrip()
        fields = line.split(sep) if line else None
        if fields is None or fields[0] == _DOCSTART:
            if sentence:
                sentences.append(sentence)
                sentence = []
            continue
        if n_fields is None:
            n_fields, first_line = len(fields), lineno
        elif len(fields) != n_fields:
            raise ValueError(
                f"{name}, line {lineno}: expected {n_fields} columns (as on the first token "
                f"line), found {len(fields)}"
            )
        sentence.append(fields)
    if sentence:
        sentences.append(sentence)
    return sentences, first_line


def read_conllu(path, column="upos", encoding="utf-8"):
    """Read the words and part-of-speech tags of a CoNLL-U file (Universal Dependencies).

    Comment lines (``#``), multi-word token ranges (IDs such as ``3-4``) and empty nodes
    (IDs such as ``5.1``) are skipped, so the result holds the syntactic words of each
    sentence.

    Parameters
    ----------
    path : str, path-like or text file object
        The file to read (gzip-compressed when its name ends in ``.gz``), a block of about
        a megabyte at a time; a byte-order mark at its start is dropped. An open file is
        read from its current position.
    column : {"upos", "xpos"}, default="upos"
        Which tag to return: universal (column 4) or language-specific (column 5).
    encoding : str, default="utf-8"
        Encoding used when ``path`` is a path.

    Returns
    -------
    sequences : list of list of str
        The FORM of each word, one list per sentence.
    labels : list of list of str
        The tags, aligned with ``sequences``.

    Raises
    ------
    ValueError
        If a non-blank, non-comment line does not have 10 tab-separated fields, or a word's
        tag is ``_`` (no tag; the message names the file and the line number), or if
        ``column`` is unknown.
        A line longer than 2**24 characters (16 Mi), or a word (a run of non-whitespace
        characters) longer than 2**16 (64 Ki), stops the reading within a megabyte of the
        limit, whatever the file (a gzip bomb, a device such as ``/dev/zero``).
    IsADirectoryError
        If ``path`` is a directory.

    See Also
    --------
    read_columns : Reads column-formatted files.
    load_ud_english_ewt : Reads UD English-EWT with this function.

    Examples
    --------
    >>> import io
    >>> from sklearn_ssl_crf.datasets import read_conllu
    >>> text = ("# text = Don't\\n"
    ...         "1-2\\tDon't\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\n"
    ...         "1\\tDo\\tdo\\tAUX\\tVBP\\t_\\t2\\taux\\t_\\t_\\n"
    ...         "2\\tn't\\tnot\\tPART\\tRB\\t_\\t0\\troot\\t_\\t_\\n\\n")
    >>> read_conllu(io.StringIO(text))
    ([['Do', "n't"]], [['AUX', 'PART']])
    """
    if column not in _CONLLU_TAG_COLUMN:
        raise ValueError(f"column must be one of {sorted(_CONLLU_TAG_COLUMN)}, got {column!r}")
    tag_index = _CONLLU_TAG_COLUMN[column]
    name, lines = _read_lines(path, encoding)
    sequences, labels = [], []
    words, tags = [], []
    for lineno, line in enumerate(lines, start=1):
        # Strip only the line end: in CoNLL-U, spaces may belong to a field.
        line = line.rstrip("\r\n")
        if not line.strip():
            if words:
                sequences.append(words)
                labels.append(tags)
                words, tags = [], []
            continue
        if line.startswith("#"):
            continue
        fields = _tab_fields(line, _CONLLU_FIELDS, name, lineno)
        if "-" in fields[0] or "." in fields[0]:
            continue
        if fields[tag_index] == "_":
            raise ValueError(f"{name}, line {lineno}: the word has no {column} tag ('_')")
        words.append(fields[_CONLLU_FORM])
        tags.append(fields[tag_index])
    if words:
        sequences.append(words)
        labels.append(tags)
    return sequences, labels


def read_text(path, encoding="utf-8", keep_blank_lines=False):
    """Read raw text for unlabelled training or tagging: one sentence per line.

    Tokens are separated by runs of whitespace; blank lines are skipped, or kept as empty
    sentences.

    Parameters
    ----------
    path : str, path-like or text file object
        The file to read (gzip-compressed when its name ends in ``.gz``), a block of about
        a megabyte at a time; a byte-order mark at its start is dropped. An open file is
        read from its current position.
    encoding : str, default="utf-8"
        Encoding used when ``path`` is a path.
    keep_blank_lines : bool, default=False
        True: a blank line is an empty sentence, so that sentence ``i`` is line ``i + 1``
        (for output that must line up with the input, as ``tag``'s does).

    Returns
    -------
    sequences : list of list of str
        The tokens of each line (each non-blank line unless ``keep_blank_lines``).

    Raises
    ------
    ValueError
        If a byte of the file is not valid in ``encoding`` (the message names the file and
        the line number).
        A line longer than 2**24 characters (16 Mi), or a word (a run of non-whitespace
        characters) longer than 2**16 (64 Ki), stops the reading within a megabyte of the
        limit, whatever the file (a gzip bomb, a device such as ``/dev/zero``).
    IsADirectoryError
        If ``path`` is a directory.

    See Also
    --------
    iter_text : The same, lazily, one sentence at a time.

    Examples
    --------
    >>> import io
    >>> from sklearn_ssl_crf.datasets import read_text
    >>> read_text(io.StringIO("The cat sat .\\n\\nIt ran .\\n"))
    [['The', 'cat', 'sat', '.'], ['It', 'ran', '.']]
    >>> read_text(io.StringIO("The cat sat .\\n\\nIt ran .\\n"), keep_blank_lines=True)
    [['The', 'cat', 'sat', '.'], [], ['It', 'ran', '.']]
    """
    _, lines = _read_lines(path, encoding)
    if not keep_blank_lines:
        return [tokens for tokens in map(str.split, lines) if tokens]
    if lines and not lines[-1]:
        lines.pop()  # what follows the last line end is no line
    return [line.split() for line in lines]


def iter_text(path, encoding="utf-8"):
    """Read raw text lazily, one sentence per line: `read_text` as a generator.

    Only a block of lines (about a megabyte of the file) is in memory at a time, so millions
    of unlabelled sentences can be featurised and packed as they are read (``X_unlabeled``
    of the estimators takes any iterable). Each pass over the file needs a new generator.

    Parameters
    ----------
    path : str, path-like or text file object
        The file to read (gzip-compressed when its name ends in ``.gz``), a block of about
        a megabyte at a time; a byte-order mark at its start is dropped. An open file is
        read from its current position.
    encoding : str, default="utf-8"
        Encoding used when ``path`` is a path.

    Yields
    ------
    tokens : list of str
        The tokens of each non-blank line.

    Raises
    ------
    ValueError
        When the lines being read hold a byte that is not valid in ``encoding`` (the
        message names the file and the line number).
        A line longer than 2**24 characters (16 Mi), or a word (a run of non-whitespace
        characters) longer than 2**16 (64 Ki), stops the reading within a megabyte of the
        limit, whatever the file (a gzip bomb, a device such as ``/dev/zero``).
    IsADirectoryError
        If ``path`` is a directory.

    See Also
    --------
    read_text : The same as a list.

    Examples
    --------
    >>> import io
    >>> from sklearn_ssl_crf.datasets import iter_text
    >>> sentences = iter_text(io.StringIO("The cat sat .\\n\\nIt ran .\\n"))
    >>> next(sentences)
    ['The', 'cat', 'sat', '.']
    >>> list(sentences)
    [['It', 'ran', '.']]
    """
    for block in _line_blocks(path, encoding)[1]:
        for tokens in map(str.split, block):
            if tokens:
                yield tokens


def _tab_fields(line, n_fields, name, lineno, layout=""):
    """The tab-separated fields of line ``lineno`` of file ``name``; there must be
    ``n_fields`` (``layout`` says what they are, for the error message)."""
    fields = line.split("\t")
    if len(fields) != n_fields:
        raise ValueError(f"{name}, line {lineno}: expected {n_fields} tab-separated "
                         f"fields{layout}, found {len(fields)}")
    return fields

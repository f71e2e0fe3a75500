"""The trigram graph of 10^5-10^6 sentences: time, memory and recall at scale (issue #30).

The data folder holds about 35,000 English sentences (CoNLL-2000 train + test, UD
English-EWT dev + test, BC2GM train + devel + test), too few for 10^6, and repeated
sentences add no trigram types. So the text is synthetic, made to grow its trigram types as
the real text does:

``curves``
    The real sentences, shuffled (seed 0), and their distinct trigram types (counted as
    `trigram_graph` counts them, through its ``_trigram_occurrences``) at growing prefixes;
    Heaps' law ``types = K tokens^beta`` fitted to them (and to their distinct words). The
    synthetic text is a word-level Markov chain estimated on the real sentences: each next
    word continues the last two words (order 2), with probability ``--order1`` the last
    word only (order 1); but first, with a probability p0 that a controller sets batch by
    batch, it is drawn from the unigram distribution (order 0), so that the running count of trigram
    types follows the real text's Heaps fit beyond the real text's size (where the chain,
    which can only recombine the corpus's n-grams, saturates). A word the corpus has once
    (a letter word) is renamed to a new word at the rate of new words that the real
    vocabulary's Heaps fit gives, so that the vocabulary keeps growing too. This part prints
    the real and synthetic curves side by side (the synthetic ones counted again by
    ``_trigram_occurrences``), the Heaps fits, and the overlap fit of ``--order1`` with
    p0 = 0 (the value that matches the real curve where they overlap is the default).
``graphs``
    For each run of ``--runs`` (``SENTENCES:ALGORITHM[:CANDIDATES_PER_NEIGHBOUR[:EF_SEARCH]]``),
    a fresh process generates that many synthetic sentences (str tokens), then times
    `trigram_graph` (k = 60) and reports its peak resident memory during the call (the
    kernel's VmHWM, restarted when the text is ready; the text's own memory included and
    reported apart). The process is stopped when its resident
    memory passes ``--max-rss-mb`` or it runs longer than ``--max-seconds``, and the table
    says which stage it was in. The recall is measured on ``--sample`` vertices against the
    exact graph, given for them by brute force: each sampled type's PMI row against every
    row, its top k (positive similarities, ties to the lower vertex), then the same for each
    of those candidates for the mutual criterion; the recall is the share of the sampled
    vertices' exact edges that the graph has. Where the run is exact, the oracle's edges
    must be the graph's (column "oracle agrees"). With ``--stream`` the text is written
    to a file (one sentence a line) and freed before the graph, which reads it from
    there (`datasets.iter_text`, a block at a time): the memory of a user whose text is
    in a file ("text RSS" is then the process's before the graph, without the text).

On the 2-core machine shared with other jobs (load average 2-4), at 7e28a83: ``curves``
took 4 minutes (5.4 GB: the type count of 10^6 sentences); 100,000 sentences (1.5 million
types) took 20 minutes exact (5.4 GB); the default 'hnsw' ran out of memory in its SVD
from 8,000 sentences up (past 6 GB there, 30 GB asked at 100,000); 10^6 sentences passed
6 GB in the PMI features, before either search.

Usage (from ``benchmarks/``)::

    OPENBLAS_NUM_THREADS=1 python bench_trigram_scale.py --parts curves
    OPENBLAS_NUM_THREADS=1 python bench_trigram_scale.py --parts graphs \\
        --runs 100000:exact 100000:hnsw 1000000:hnsw
"""

import argparse
import hashlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from bench_trigram_search import share_or_count
from conll_features import DEFAULT_DATA

from sklearn_ssl_crf.datasets import iter_text, load_bc2gm, load_conll2000, load_ud_english_ewt
from sklearn_ssl_crf.graph import _approximate, _trigram, trigram_graph
from sklearn_ssl_crf.graph._trigram import _ALPHANUMERIC, _NUMBER, _trigram_occurrences

K = 60
REAL_PREFIXES = (1000, 2000, 5000, 10000, 20000)
SYNTHETIC_SIZES = (100_000, 300_000, 1_000_000)
# Sentences generated at a time (at least; an eighth of those so far beyond), the controller
# of the order-0 share acting between batches. A text of n sentences is the first n of the
# batches, so smaller texts are prefixes of larger ones.
BATCH = 8192
MAX_LENGTH = 250


# --- text ---------------------------------------------------------------------------------

def english_sentences(data_dir):
    """The English sentences of the data folder as lists of str, shuffled (seed 0)."""
    conll = load_conll2000(data_dir / "conll2000")
    ewt = load_ud_english_ewt(data_dir / "ud_english_ewt")
    bc2gm = load_bc2gm(data_dir / "bc2gm")
    text = [[word for word, _ in sentence] for split in ("train", "test")
            for sentence in conll[split][0]]
    text += [list(sentence) for split in ("dev", "test") for sentence in ewt[split][0]]
    text += [list(sentence) for split in ("train", "devel", "test")
             for sentence in bc2gm[split][0]]
    order = np.random.default_rng(0).permutation(len(text))
    return [text[i] for i in order]


def is_word(lowered):
    """A word with a letter or digit that `trigram_graph` does not make ``<num>``."""
    return _ALPHANUMERIC.search(lowered) is not None and not _NUMBER.fullmatch(lowered)


def type_curve(sentences, sizes):
    """(sentences, tokens, trigram types) of each prefix, counted by `trigram_graph`'s own
    occurrence function (types are numbered in order of first appearance)."""
    token_vertices = _trigram_occurrences(sentences, "word.lower")[2]
    ends = np.cumsum([len(sentence) for sentence in sentences])
    points = []
    for size in sizes:
        first = token_vertices[:ends[size - 1]]
        points.append((size, int(ends[size - 1]), int(first.max()) + 1))
    return points


def word_curve(sentences, sizes):
    """(sentences, tokens, distinct lower-cased words) of each prefix (numbers and
    punctuation left out)."""
    seen, points, tokens, wanted = set(), [], 0, iter(sizes)
    size = next(wanted)
    for i, sentence in enumerate(sentences, 1):
        seen.update(word for word in map(str.lower, sentence) if is_word(word))
        tokens += len(sentence)
        if i == size:
            points.append((i, tokens, len(seen)))
            size = next(wanted, None)
            if size is None:
                break
    return points


def heaps_fit(points):
    """K, beta of ``count = K tokens^beta``, least squares in logs."""
    beta, log_k = np.polyfit(np.log([p[1] for p in points]), np.log([p[2] for p in points]), 1)
    return float(np.exp(log_k)), float(beta)


class SyntheticText:
    """A word-level Markov chain of orders 2, 1 and 0 estimated on real sentences, whose
    order-0 share follows the real text's Heaps law of trigram types (see the module
    docstring)."""

    def __init__(self, sentences, order1):
        self.order1 = order1
        index = {}
        codes = [[index.setdefault(word, len(index)) for word in sentence]
                 for sentence in sentences]
        self.words = np.array(list(index), dtype=object)
        n_words = len(index)
        self.bos, self.eos, self.n_codes = n_words, n_words + 1, n_words + 2
        lengths = np.array([len(sentence) for sentence in codes])
        n_tokens = int(lengths.sum())
        # Each sentence as BOS BOS w1 ... wn EOS; every position after the BOSes is a
        # transition from the two codes before it.
        starts = np.concatenate([[0], np.cumsum(lengths + 3)[:-1]])
        padded = np.full(n_tokens + 3 * len(codes), self.bos, dtype=np.int64)
        inside = np.repeat(starts + 2 - np.concatenate([[0], np.cumsum(lengths)[:-1]]),
                           lengths) + np.arange(n_tokens)
        padded[inside] = np.fromiter((c for sentence in codes for c in sentence),
                                     dtype=np.int64, count=n_tokens)
        padded[starts + 2 + lengths] = self.eos
        targets = np.flatnonzero(padded != self.bos)
        following = padded[targets]
        self.tables = []
        for key in (padded[targets - 2] * self.n_codes + padded[targets - 1],
                    padded[targets - 1]):
            order = np.argsort(key, kind="stable")
            self.tables.append((key[order], following[order]))
        self.unigram = np.sort(following)
        # Normalised word ids (lower-cased, numbers as one) for the running type count.
        lowered = [word.lower() for word in index]
        forms = {}
        self.form = np.array([forms.setdefault("<num>" if _NUMBER.fullmatch(w) else w,
                                               len(forms)) for w in lowered]
                             + [-1, -1], dtype=np.int64)
        form_words = list(forms)
        self.form_bos, self.form_eos = len(forms), len(forms) + 1
        self.n_forms = len(forms) + 2
        self.form_has_vertex = np.array([_ALPHANUMERIC.search(w) is not None
                                         for w in form_words], dtype=bool)
        counts = Counter(w for sentence in sentences for w in map(str.lower, sentence))
        self.rare = np.array([is_word(w) and counts[w] == 1 for w in lowered] + [False, False])
        # The chain's rate of once-seen words is the Good-Turing estimate of new words per
        # token at the corpus's size; renaming them at the vocabulary's Heaps rate instead
        # keeps the vocabulary growing as the real one does.
        self.rare_rate = float(np.count_nonzero(self.rare[padded[inside]])) / n_tokens
        prefixes = [size for size in REAL_PREFIXES if size < len(sentences)] + [len(sentences)]
        self.real_types = type_curve(sentences, prefixes)
        self.real_words = word_curve(sentences, prefixes)
        self.types_heaps = heaps_fit(self.real_types)
        self.words_heaps = heaps_fit(self.real_words)

    def _next(self, order, keys, uniform):
        table, following = self.tables[order]
        low = np.searchsorted(table, keys, "left")
        high = np.searchsorted(table, keys, "right")
        return following[low + (uniform * (high - low)).astype(np.int64)]

    def _batch(self, n_sentences, order0, rng):
        """Codes (flat) and lengths of n_sentences sentences of the chain."""
        previous = np.full(n_sentences, self.bos)
        last = np.full(n_sentences, self.bos)
        alive = np.arange(n_sentences)
        columns, lengths = [], np.full(n_sentences, MAX_LENGTH)
        for step in range(MAX_LENGTH):
            uniform, kind = rng.random(alive.size), rng.random(alive.size)
            # The first word continues the sentence start (no empty sentences).
            kind[:] = kind if step else 1.0
            zero = kind < order0
            one = ~zero & (kind < order0 + (1.0 - order0) * self.order1)
            two = ~(zero | one)
            code = np.empty(alive.size, dtype=np.int64)
            code[two] = self._next(0, previous[two] * self.n_codes + last[two], uniform[two])
            code[one] = self._next(1, last[one], uniform[one])
            code[zero] = self.unigram[(uniform[zero] * self.unigram.size).astype(np.int64)]
            column = np.full(n_sentences, -1)
            column[alive] = code
            columns.append(column)
            ended = code == self.eos
            lengths[alive[ended]] = step
            previous, last, alive = last[~ended], code[~ended], alive[~ended]
            if not alive.size:
                break
        grid = np.stack(columns, axis=1)
        return grid[np.arange(grid.shape[1]) < lengths[:, None]], lengths

    def generate(self, n_sentences, seed=0, control=True):
        """n_sentences synthetic sentences (lists of shared str objects), and a log of the
        batches: (sentences, tokens, trigram types, order-0 share). Without ``control``
        the order-0 share stays 0."""
        rng = np.random.default_rng(seed)
        k_types, beta_types = self.types_heaps
        k_words, beta_words = self.words_heaps
        sentences, log, seen = [], [], np.empty(0, dtype=np.int64)
        n_tokens, n_renamed, order0 = 0, 0, 0.0
        max_forms = 2**21  # three form ids in one int64 key
        while len(sentences) < n_sentences:
            used = order0
            codes, lengths = self._batch(max(BATCH, len(sentences) // 8), used, rng)
            words = self.words[codes]
            forms = self.form[codes]
            position = n_tokens + 1 + np.arange(codes.size)
            rate = np.minimum(1.0, k_words * beta_words * position ** (beta_words - 1.0)
                              / self.rare_rate)
            renamed = np.flatnonzero(self.rare[codes] & (rng.random(codes.size) < rate))
            for j in renamed.tolist():
                words[j] = f"{words[j]}~{n_renamed}"
                n_renamed += 1
            forms[renamed] = self.n_forms + n_renamed - renamed.size + np.arange(renamed.size)
            if self.n_forms + n_renamed >= max_forms:
                raise ValueError("too many renamed words for the type keys")
            ends = np.cumsum(lengths)
            sentences += [words[end - length:end].tolist() for end, length in zip(ends, lengths)]
            n_tokens += codes.size
            if control:
                # The batch's trigram types, keyed as trigram_graph keys them (renamed words
                # are letter words, so their tokens have vertices).
                has_vertex = np.ones(codes.size, dtype=bool)
                known = forms < self.n_forms
                has_vertex[known] = self.form_has_vertex[forms[known]]
                first = np.zeros(codes.size, dtype=bool)
                first[ends - lengths] = True
                final = np.zeros(codes.size, dtype=bool)
                final[ends - 1] = True
                before = np.where(first, self.form_bos, np.roll(forms, 1))
                after = np.where(final, self.form_eos, np.roll(forms, -1))
                seen = np.union1d(seen, ((before * max_forms + forms) * max_forms
                                         + after)[has_vertex])
                # Integral control of the order-0 share towards the real text's Heaps fit.
                target = k_types * n_tokens ** beta_types
                order0 = float(np.clip(order0 + np.log(target / seen.size), 0.0, 0.9))
            log.append((len(sentences), n_tokens, seen.size, used))
        del sentences[n_sentences:]
        return sentences, log


# --- part "curves" ------------------------------------------------------------------------

def curves(args):
    real = english_sentences(args.data_dir)
    print(f"{len(real):,} real English sentences, {sum(map(len, real)):,} tokens\n")
    model = SyntheticText(real, args.order1)
    k_types, beta_types = model.types_heaps
    k_words, beta_words = model.words_heaps
    print(f"Heaps fit of the real text: trigram types = {k_types:.3f} tokens^{beta_types:.4f}, "
          f"words = {k_words:.3f} tokens^{beta_words:.4f}\n")
    sizes = [p[0] for p in model.real_types]
    slopes = [np.log(b[2] / a[2]) / np.log(b[1] / a[1])
              for a, b in zip(model.real_types, model.real_types[1:])]
    print("Local slopes of the real type curve (log types / log tokens between prefixes): "
          + ", ".join(f"{s:.3f}" for s in slopes) + "\n")
    print("Order-1 share with p0 = 0 (no controller): synthetic / real types at the real "
          "prefixes, and the RMS of the log ratios:\n")
    print("| order-1 share | " + " | ".join(f"{s:,}" for s in sizes) + " | RMS log |")
    print("|---:|" + "---:|" * (len(sizes) + 1))
    chosen = model.order1
    for order1 in args.order1_grid:
        model.order1 = order1
        text, _ = model.generate(sizes[-1], seed=args.seed, control=False)
        ratios = [s[2] / r[2] for s, r in zip(type_curve(text, sizes), model.real_types)]
        print(f"| {order1} | " + " | ".join(f"{r:.3f}" for r in ratios)
              + f" | {np.sqrt(np.mean(np.log(ratios) ** 2)):.3f} |", flush=True)
    model.order1 = chosen
    largest = max(args.curve_sizes)
    started = time.perf_counter()
    text, log = model.generate(largest, seed=args.seed)
    seconds = time.perf_counter() - started
    all_sizes = sorted(set(sizes) | set(args.curve_sizes))
    synthetic_types = type_curve(text, all_sizes)
    synthetic_words = word_curve(text, all_sizes)
    print(f"\nSynthetic text (order-1 share {chosen}, seed {args.seed}): {largest:,} sentences "
          f"in {seconds:.0f} s, {synthetic_types[-1][1] / largest:.1f} tokens a sentence "
          f"(real {model.real_types[-1][1] / model.real_types[-1][0]:.1f})\n")
    real_types = {p[0]: p for p in model.real_types}
    real_words = {p[0]: p[2] for p in model.real_words}
    print("| sentences | real tokens | real types | synthetic tokens | synthetic types | "
          "real Heaps fit at the synthetic tokens | synthetic / real | synthetic / fit | "
          "real words | synthetic words | order-0 share p0 |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (n, tokens, types), (_, _, words) in zip(synthetic_types, synthetic_words):
        fit = k_types * tokens ** beta_types
        real_n, real_tokens, real_count = real_types.get(n, ("", "", ""))
        versus_real = f"{types / real_count:.3f}" if real_count else ""
        share = next(entry[3] for entry in log if entry[0] >= n)
        print(f"| {n:,} | {real_tokens:,} | {real_count:,} | " if real_count else
              f"| {n:,} | | | ", end="")
        print(f"{tokens:,} | {types:,} | {fit:,.0f} | {versus_real} | {types / fit:.3f} | "
              f"{real_words[n]:,} | " if real_count else
              f"{tokens:,} | {types:,} | {fit:,.0f} | | {types / fit:.3f} | | ", end="")
        print(f"{words:,} | {share:.3f} |")
    overlap = [p for p in synthetic_types if p[0] in real_types]
    k_syn, beta_syn = heaps_fit(overlap)
    k_all, beta_all = heaps_fit(synthetic_types)
    print(f"\nHeaps fit of the synthetic text: {k_syn:.3f} tokens^{beta_syn:.4f} at the real "
          f"prefixes' sizes, {k_all:.3f} tokens^{beta_all:.4f} at all sizes")
    counted = {n: types for n, _, types in type_curve(text, [entry[0] for entry in log
                                                             if entry[0] <= largest])}
    print("The generator's running type count against _trigram_occurrences' at its last "
          "batches: " + ", ".join(f"{n:,}: {types:,} / {counted[n]:,}"
                                  for n, _, types, _ in log[-4:] if n in counted))


# --- part "graphs" ------------------------------------------------------------------------

def memory_mb():
    """Current and peak resident memory of this process (MB)."""
    fields = dict(line.split()[:2] for line in Path("/proc/self/status").read_text().split("\n")
                  if line.startswith(("VmRSS:", "VmHWM:")))
    return int(fields["VmRSS:"]) / 1024, int(fields["VmHWM:"]) / 1024


def stage(name, started):
    rss, peak = memory_mb()
    print(json.dumps({"stage": name, "seconds": round(time.perf_counter() - started, 1),
                      "rss_mb": round(rss), "peak_mb": round(peak)}), file=sys.stderr,
          flush=True)


def traced(module, name, label, started, keep=None):
    """Wrap ``module.name`` so that its start and end are logged (and its result kept)."""
    function = getattr(module, name)

    def wrapper(*args, **kwargs):
        stage(f"{label} started", started)
        result = function(*args, **kwargs)
        stage(f"{label} done", started)
        if keep is not None:
            keep[label] = result
        return result

    setattr(module, name, wrapper)


def exact_top(features, columns, vertices, k):
    """Each vertex's k most similar other vertices (positive similarities, ties to the lower
    vertex), compared with every vertex: the exact search's candidates, by brute force."""
    top = {}
    for start in range(0, len(vertices), 64):
        block = np.asarray(vertices[start:start + 64])
        similarities = (features[block] @ columns).tocsr()
        for i, u in enumerate(block.tolist()):
            span = slice(similarities.indptr[i], similarities.indptr[i + 1])
            targets, values = similarities.indices[span], similarities.data[span]
            keep = (values > 0) & (targets != u)
            targets, values = targets[keep], values[keep]
            if values.size > k:
                kth = np.partition(values, values.size - k)[values.size - k]
                targets, values = targets[values >= kth], values[values >= kth]
            top[u] = set(targets[np.lexsort((targets, -values))][:k].tolist())
    return top


def graph_digest(weights):
    """The graph's fingerprint (its CSR arrays, read in place): the same on one machine and on
    a cluster, or before and after a change that promises the same graph."""
    digest = hashlib.sha256()
    for array in (weights.indptr, weights.indices, weights.data):
        digest.update(array.dtype.str.encode())
        digest.update(np.ascontiguousarray(array))
    return digest.hexdigest()[:16]


def sampled_recall(features, weights, n_sample, seed=1):
    """Share of the sampled vertices' exact mutual edges that ``weights`` has, their number,
    and whether the graph's edges of the sampled vertices are exactly the oracle's."""
    columns = features.T.tocsr()
    sample = np.random.default_rng(seed).choice(features.shape[0], n_sample, replace=False)
    top = exact_top(features, columns, sample.tolist(), K)
    others = sorted(set().union(*top.values()) - set(top))
    top.update(exact_top(features, columns, others, K))
    found = expected = 0
    agrees = True
    for u in sample.tolist():
        exact = {v for v in top[u] if u in top[v]}
        graph = set(weights.indices[weights.indptr[u]:weights.indptr[u + 1]].tolist())
        expected += len(exact)
        found += len(exact & graph)
        agrees &= exact == graph
    return found / expected, expected, agrees


def child(args):
    started = time.perf_counter()
    real = english_sentences(args.data_dir)
    model = SyntheticText(real, args.order1)
    del real
    text, _ = model.generate(args.child, seed=args.seed)
    del model
    generated = time.perf_counter() - started
    tokens = sum(map(len, text))
    if args.stream:
        folder = tempfile.TemporaryDirectory()
        path = Path(folder.name) / "text.txt"
        with open(path, "w", encoding="utf-8") as file:
            file.writelines(" ".join(sentence) + "\n" for sentence in text)
        del text
        text = iter_text(path)
    text_rss, text_peak = memory_mb()
    stage("text ready", started)
    try:  # restart the kernel's peak of resident memory (VmHWM) at the graph's start
        Path("/proc/self/clear_refs").write_text("5")
        graph_peak_from_start = True
    except OSError:
        graph_peak_from_start = False
    if args.candidates is not None:
        _approximate._CANDIDATES_PER_NEIGHBOUR = args.candidates
    if args.ef_search is not None:
        _approximate._EXPANSION_SEARCH = args.ef_search
    # The oracle's features are made again after the graph, so that the graph's peak memory
    # is that of a user's call (holding them would add a copy to the search's).
    occurrences, pmi_features = _trigram._trigram_occurrences, _trigram._pmi_features
    traced(_trigram, "_trigram_occurrences", "occurrences", started)
    traced(_trigram, "_pmi_features", "PMI features", started)
    traced(_trigram, "_mutual_pairs", "search", started)
    traced(_trigram, "_assembled", "assembly", started)
    traced(_trigram, "approximate_knn_weights", "approximate search", started)

    class LoggedSVD(_approximate.TruncatedSVD):
        def fit_transform(self, X, y=None):
            stage("SVD started", started)
            result = super().fit_transform(X, y)
            stage("SVD done", started)
            return result

    _approximate.TruncatedSVD = LoggedSVD
    blocks, calls = _approximate._vector_blocks, iter(("index add", "index search"))

    def logged_blocks(*a, **kw):
        stage(f"{next(calls, 'vector blocks')} started", started)
        return blocks(*a, **kw)

    _approximate._vector_blocks = logged_blocks
    graph_started = time.perf_counter()
    share = {} if args.max_df is None else {"max_df": args.max_df}
    graph = trigram_graph(text, n_neighbors=K, algorithm=args.algorithm, n_jobs=args.n_jobs,
                          **share)
    seconds = time.perf_counter() - graph_started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    graph_peak = memory_mb()[1] if graph_peak_from_start else peak
    stage("graph done", started)
    weights = sp.csr_matrix(graph.weights)
    n_types = graph.n_vertices
    digest = graph_digest(weights)
    del graph
    if args.stream:
        text = iter_text(path)
    window, vertex_of_occurrence, _, words, name_codes = occurrences(text, "word.lower")
    del text
    features, _ = pmi_features(window, vertex_of_occurrence, name_codes.shape[1], words,
                               _trigram._frequent_endings(words[:-2]))
    del window, vertex_of_occurrence, name_codes
    recall_started = time.perf_counter()
    recall, n_edges, agrees = sampled_recall(features, weights, args.sample)
    stage("recall done", started)
    print(json.dumps({
        "sentences": args.child, "tokens": tokens, "types": n_types,
        "algorithm": args.algorithm, "max_df": args.max_df, "candidates": args.candidates,
        "ef_search": args.ef_search, "seconds": seconds, "peak_rss_mb": graph_peak,
        "process_peak_rss_mb": peak, "text_rss_mb": text_rss, "text_peak_mb": text_peak,
        "generation_seconds": generated,
        "edges": int(weights.nnz // 2), "graph_sha256": digest,
        "recall": recall, "sampled_edges": n_edges,
        "oracle_agrees": bool(agrees), "recall_seconds": time.perf_counter() - recall_started,
        "features": list(features.shape), "nnz": int(features.nnz)}))


def run_child(args, size, algorithm, candidates, ef_search):
    """Run one measurement in a fresh process, stopping it past the memory or time limit:
    its result, or where it stood."""
    command = [sys.executable, __file__, "--child", str(size), "--algorithm", algorithm,
               "--data-dir", str(args.data_dir), "--sample", str(args.sample),
               "--order1", str(args.order1), "--seed", str(args.seed),
               "--n-jobs", str(args.n_jobs), *(["--stream"] if args.stream else [])]
    if args.max_df is not None:
        command += ["--max-df", str(args.max_df)]
    if candidates is not None:
        command += ["--candidates", str(candidates)]
    if ef_search is not None:
        command += ["--ef-search", str(ef_search)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        started, peak, stopped = time.perf_counter(), 0.0, None
        while process.poll() is None:
            try:
                rss = int(next(line for line in open(f"/proc/{process.pid}/status")
                               if line.startswith("VmRSS")).split()[1]) / 1024
            except (OSError, StopIteration):
                rss = 0.0
            peak = max(peak, rss)
            elapsed = time.perf_counter() - started
            if rss > args.max_rss_mb or elapsed > args.max_seconds:
                stopped = (f"stopped at {elapsed:.0f} s, resident {rss:,.0f} MB"
                           f" (limits {args.max_rss_mb:,} MB, {args.max_seconds:,} s)")
                process.kill()
                process.wait()
                break
            time.sleep(0.5)
        out.seek(0)
        err.seek(0)
        output, log = out.read(), err.read()
    stages = [json.loads(line) for line in log.splitlines() if line.startswith('{"stage"')]
    if stopped or process.returncode != 0:
        return {"stopped": stopped or f"exit code {process.returncode}: {log[-2000:]}",
                "stages": stages, "watched_peak_mb": peak}
    result = json.loads(output.strip().splitlines()[-1])
    result.update(stages=stages, watched_peak_mb=peak)
    return result


def graphs(args):
    print(f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores; trigram_graph(k={K}), "
          f"synthetic text (order-1 share {args.order1}, seed {args.seed}); "
          f"limits {args.max_rss_mb:,} MB, {args.max_seconds:,} s\n")
    print("| sentences | tokens | types | algorithm | seconds | peak RSS (MB) | text RSS (MB) | "
          "edges | recall on the sample (edges) | oracle agrees |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---|")
    results = []
    for run in args.runs:
        size, algorithm, *knobs = run.split(":")
        candidates = int(knobs[0]) if knobs and knobs[0] else None
        ef_search = int(knobs[1]) if len(knobs) > 1 else None
        name = algorithm + ("" if not knobs else
                            f" ({candidates or 2}k+1 candidates"
                            + (f", efSearch {ef_search})" if ef_search else ")"))
        if args.max_df is not None and algorithm in ("auto", "pruned"):
            name += f" (max_df {args.max_df:g})"
        load = os.getloadavg()[0]
        result = run_child(args, int(size), algorithm, candidates, ef_search)
        result.update(run=run, load_before=load, load_after=os.getloadavg()[0])
        results.append(result)
        if "stopped" in result:
            last = result["stages"][-1] if result["stages"] else {}
            print(f"| {int(size):,} | | | {name} | {result['stopped']}; last stage "
                  f"\"{last.get('stage')}\" at {last.get('seconds')} s | "
                  f"{result['watched_peak_mb']:,.0f} (watched) | | | | |", flush=True)
            continue
        print(f"| {int(size):,} | {result['tokens']:,} | {result['types']:,} | {name} | "
              f"{result['seconds']:.0f} | {result['peak_rss_mb']:,.0f} | "
              f"{result['text_rss_mb']:,.0f} | {result['edges']:,} | {result['recall']:.3f} "
              f"({result['sampled_edges']:,}) | "
              f"{'yes' if result['oracle_agrees'] else 'no'} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--parts", default="curves,graphs")
    parser.add_argument("--order1", type=float, default=0.8,
                        help="share of order-1 continuations among the chain's (the rest order 2)")
    parser.add_argument("--order1-grid", type=float, nargs="+",
                        default=[0.2, 0.4, 0.6, 0.8, 1.0])
    parser.add_argument("--curve-sizes", type=int, nargs="+", default=list(SYNTHETIC_SIZES))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", nargs="+", default=["100000:exact", "100000:hnsw",
                                                     "1000000:hnsw"])
    parser.add_argument("--sample", type=int, default=200,
                        help="vertices whose exact edges give the recall")
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="trigram_graph's n_jobs (threads of its search)")
    parser.add_argument("--max-df", type=share_or_count,
                        help="trigram_graph's max_df for 'pruned' and 'auto', a share (0.01) "
                             "or a number of types (1000) (default: its own)")
    parser.add_argument("--max-rss-mb", type=int, default=6000)
    parser.add_argument("--max-seconds", type=int, default=1800)
    parser.add_argument("--json", help="write the runs' results (stages included) here")
    parser.add_argument("--stream", action="store_true",
                        help="the graph reads the text from a file, a block at a time")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--algorithm", default="hnsw", help=argparse.SUPPRESS)
    parser.add_argument("--candidates", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--ef-search", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)
    parts = args.parts.split(",")
    if "curves" in parts:
        curves(args)
    if "graphs" in parts:
        graphs(args)


if __name__ == "__main__":
    main()

"""Chunk results summed pairwise along a binary tree over the chunks that depends only on
the data, so that sums are the same for any ``n_jobs`` and any number of workers. Terms
whose additions are exact (``exact``: integers, the same in any order) are added into one
total as they come instead of along the tree, which would hold partial sums at each of
its levels.
"""


def _ranges_results(ranges, leaf, reduce):
    """For each (first, stop) of ``ranges``, the sum of ``leaf(k)`` for its chunks along the
    tree if ``reduce`` (`_range_sum`), else their list. The exact terms of all the ranges
    are added into one total, given with the first range's sum (the others hold None in
    its place)."""
    if not reduce:
        return [[leaf(k) for k in range(first, stop)] for first, stop in ranges]
    totals = {}
    sums = [_tree_sum(first, stop, leaf, (), None, totals) for first, stop in ranges]
    for k, total in totals.items():
        sums[0][k] = total
    return sums


def _range_sum(first, stop, leaf, remote=(), remote_sums=None):
    """Sum of ``leaf(k)`` for chunks ``first <= k < stop`` along the fixed tree, its exact
    terms added into one total each. The sums of the ranges in ``remote`` are computed
    elsewhere and come from ``remote_sums`` in left-to-right order, taken only when the
    tree reaches them."""
    totals = {}
    total = _tree_sum(first, stop, leaf, remote, remote_sums, totals)
    for k, exact in totals.items():
        total[k] = exact
    return total


def _tree_sum(first, stop, leaf, remote, remote_sums, totals):
    """`_range_sum`'s tree, the exact terms moved into ``totals`` (position -> total) and
    None left in their place."""
    if (first, stop) in remote:
        return _set_aside(next(remote_sums), totals)
    if stop - first == 1:
        return _set_aside(list(leaf(first)), totals)
    middle = _middle(first, stop)
    total = _tree_sum(first, middle, leaf, remote, remote_sums, totals)
    for k, term in enumerate(_tree_sum(middle, stop, leaf, remote, remote_sums, totals)):
        if term is not None:
            total[k] += term
    return total


def _set_aside(terms, totals):
    """``terms`` with each exact one added into ``totals`` at its position (a total made at
    the first) and None in its place."""
    for k, term in enumerate(terms):
        if getattr(term, "exact", False):
            if k not in totals:
                totals[k] = term.zero_total()
            totals[k].add(term)
            terms[k] = None
    return terms


def _tree_ranges(n_chunks, count):
    """The (first, stop) ranges of the tree's first depth with at least ``count`` of them (or
    all chunks), left to right; a single chunk stays as it is at deeper levels."""
    ranges = [(0, n_chunks)]
    while len(ranges) < min(count, n_chunks):
        ranges = [half for first, stop in ranges for half in (
            [(first, stop)] if stop - first == 1 else
            [(first, _middle(first, stop)), (_middle(first, stop), stop)])]
    return ranges


def _middle(first, stop):
    """Where the tree splits a range: the left half is the larger one."""
    return (first + stop + 1) // 2

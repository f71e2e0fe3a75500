"""Chunk results summed pairwise along a binary tree over the chunks that depends only on
the data, so that sums are the same for any ``n_jobs`` and any number of workers.
"""




def _range_results(first, stop, leaf, reduce):
    """The sum of ``leaf(k)`` for chunks ``first <= k < stop`` along the tree if ``reduce``,
    else their list."""
    if reduce:
        return _range_sum(first, stop, leaf)
    return [leaf(k) for k in range(first, stop)]


def _range_sum(first, stop, leaf, remote=(), remote_sums=None):
    """Sum of ``leaf(k)`` for chunks ``first <= k < stop`` along the fixed tree. The sums of
    the ranges in ``remote`` are computed elsewhere and come from ``remote_sums`` in
    left-to-right order, taken only when the tree reaches them."""
    if (first, stop) in remote:
        return next(remote_sums)
    if stop - first == 1:
        return list(leaf(first))
    middle = _middle(first, stop)
    total = _range_sum(first, middle, leaf, remote, remote_sums)
    for k, term in enumerate(_range_sum(middle, stop, leaf, remote, remote_sums)):
        total[k] += term
    return total


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

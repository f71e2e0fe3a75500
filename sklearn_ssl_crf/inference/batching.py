"""The packed layout of many chains: position-major, sequences sorted by decreasing length.

At position ``t`` the chains still running are the first ``batch_sizes[t]`` of the sorted
order, so the rows of position ``t`` form one contiguous block whose prefix continues into
position ``t + 1``. The batched kernels thus loop once over positions (up to the longest
length) for a whole corpus, with no padding and no masks.
"""

import numpy as np

__all__ = ["ChainLayout"]


class ChainLayout:
    """Where each (sequence, position) lives in a packed array of rows.

    The rows are position-major, the sequences sorted by decreasing length: at position
    ``t`` the chains still running are the first ``batch_sizes[t]`` of the sorted order, so
    the rows of position ``t`` form one contiguous block. The batched kernels loop once over
    the positions for a whole corpus, with no padding and no masks.

    Parameters
    ----------
    lengths : array-like of int of shape (n_sequences,)
        Empty sequences are allowed; they own no rows.

    Attributes
    ----------
    n_sequences, n_rows : int
    sequence_order : ndarray of int64 of shape (n_sequences,)
        Batch slot ``b`` holds sequence ``sequence_order[b]`` (decreasing length; ties keep
        input order, so results are reproducible).
    batch_sizes : ndarray of int64 of shape (max_length,)
        Number of chains at each position.
    block_starts : ndarray of int64 of shape (max_length + 1,)
        Rows ``block_starts[t]:block_starts[t] + batch_sizes[t]`` are position ``t``.
    order : ndarray of int64 of shape (n_rows,)
        Packed row ``r`` is token ``order[r]`` of the sequences laid end to end.
    row_slots : ndarray of int64 of shape (n_rows,)
        Batch slot of every row.
    later_rows : slice
        The rows of positions ``t >= 1`` (all rows after the first block).
    previous_rows : ndarray of int64 of shape (n_rows - batch_sizes[0],)
        For each of the ``later_rows``, the row of the same chain at ``t - 1``.
    last_rows : ndarray of int64 of shape (batch_sizes[0],)
        The row of each non-empty chain's last position, by batch slot.

    See Also
    --------
    chain_lattice : Forward-backward over the chains of a layout.
    viterbi_batch : Viterbi decoding of the chains of a layout.

    Examples
    --------
    >>> from sklearn_ssl_crf.inference import ChainLayout
    >>> layout = ChainLayout([2, 0, 3])
    >>> layout.sequence_order.tolist(), layout.batch_sizes.tolist()
    ([2, 0, 1], [2, 2, 1])
    >>> layout.order.tolist()
    [2, 0, 3, 1, 4]
    >>> layout.order[layout.block(1)].tolist()
    [3, 1]
    """

    def __init__(self, lengths):
        lengths = np.asarray(lengths, dtype=np.int64)
        self.lengths = lengths
        self.n_sequences = lengths.size
        self.sequence_order = np.argsort(-lengths, kind="stable")
        sorted_lengths = lengths[self.sequence_order]
        max_length = int(sorted_lengths[0]) if lengths.size else 0
        # batch_sizes[t] = number of sequences longer than t.
        self.batch_sizes = np.searchsorted(-sorted_lengths, -np.arange(max_length), side="left")
        self.block_starts = np.concatenate([[0], np.cumsum(self.batch_sizes)])
        self.n_rows = int(self.block_starts[-1])
        positions = np.repeat(np.arange(max_length), self.batch_sizes)
        self.row_slots = np.arange(self.n_rows) - self.block_starts[positions]
        # Row r at position t >= 1 follows row r - batch_sizes[t - 1].
        self.later_rows = slice(self.batch_sizes[0] if max_length else 0, self.n_rows)
        later = np.arange(self.later_rows.start, self.n_rows)
        self.previous_rows = later - self.batch_sizes[positions[later] - 1]
        non_empty = sorted_lengths[sorted_lengths > 0]
        self.last_rows = self.block_starts[non_empty - 1] + np.arange(non_empty.size)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self.order = offsets[self.sequence_order][self.row_slots] + positions

    @property
    def max_length(self):
        return self.batch_sizes.size

    def block(self, t, size=None):
        """Get the slice of the rows of position ``t``.

        Parameters
        ----------
        t : int
            A position, in ``0 .. max_length - 1``.
        size : int, default=None
            Only the rows of the first ``size`` chains (in batch-slot order); None: all the
            chains running at ``t``.

        Returns
        -------
        rows : slice
            The packed rows of position ``t``.
        """
        start = self.block_starts[t]
        return slice(start, start + (self.batch_sizes[t] if size is None else size))

    def by_sequence(self, slot_values):
        """Put values given by batch slot in input sequence order.

        Parameters
        ----------
        slot_values : ndarray of shape (n_slots,)
            One value per non-empty chain, by batch slot (``n_slots`` at most
            ``n_sequences``).

        Returns
        -------
        values : ndarray of shape (n_sequences,)
            The values in input sequence order; 0 for the sequences without a value (the
            empty ones).
        """
        values = np.zeros(self.n_sequences)
        values[self.sequence_order[:slot_values.size]] = slot_values
        return values

    def per_sequence_sum(self, row_values):
        """Sum per-row values over each sequence.

        Parameters
        ----------
        row_values : ndarray of shape (n_rows,)
            One value per packed row.

        Returns
        -------
        sums : ndarray of shape (n_sequences,)
            The sum over the rows of each sequence, in input sequence order (0 for an empty
            sequence).
        """
        sums = np.zeros(self.n_sequences)
        sums[self.sequence_order] = np.bincount(self.row_slots, weights=row_values,
                                                minlength=self.n_sequences)
        return sums


"""A stream of sentences that tells how many of the sentences it gave are still held."""


class TrackedSentence(list):
    """A sentence that counts itself out when it is freed."""

    freed = 0

    def __del__(self):
        type(self).freed += 1


def tracked_stream(sentences, held):
    """Yield a copy of each of ``sentences`` (tokens: dicts), appending to ``held``, at
    every draw, how many of the copies drawn so far are still alive."""
    TrackedSentence.freed = 0
    for drawn, sentence in enumerate(sentences, start=1):
        held.append(drawn - TrackedSentence.freed)
        yield TrackedSentence(dict(token) for token in sentence)

"""The one keeper of a run's best iterate."""

from .specs import Either, Integer, ListOf, Number

__all__ = ["BestIterate"]


class BestIterate:
    """The best of the iterates offered, by a score: higher is better, and of equal scores
    the first offered is kept.

    It keeps every score offered (``scores``) and, of the best iterate, its ``iteration``,
    ``score``, ``weights`` and ``state`` (None before any offer).
    """

    def __init__(self):
        self.scores = []
        self.iteration = self.score = self.weights = self.state = None

    def offer(self, iteration, score, weights, state=None):
        """Keep ``weights`` (and ``state``, what goes with them) if ``score`` beats the
        best so far; they are kept as given, not copied: the caller does not change them
        afterwards. Returns whether they were kept."""
        self.scores.append(score)
        if self.iteration is not None and not score > self.score:
            return False
        self.iteration, self.score, self.weights, self.state = iteration, score, weights, state
        return True

    def checkpoint_state(self):
        """The scores and the best iterate's weights (not its ``state``: the runs that
        checkpoint offer none)."""
        return {"scores": list(self.scores), "iteration": self.iteration,
                "score": self.score, "weights": self.weights}

    def restore_checkpoint_state(self, state):
        self.scores, self.iteration = list(state["scores"]), state["iteration"]
        self.score, self.weights, self.state = state["score"], state["weights"], None

    def checkpoint_spec(self, weights):
        """What a checkpoint of it holds; ``weights``: the spec of an iterate's weights."""
        return {"scores": ListOf(Number()), "iteration": Either(None, Integer(0)),
                "score": Either(None, Number()), "weights": Either(None, weights)}

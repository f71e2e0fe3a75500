"""The optimisers' one run loop (`optim.run_iterations`): its stopping rule, callback and
checkpoints, driven by a step whose losses the test chooses; and the one best-iterate
keeper (`optim.BestIterate`) with the held-out patience rule built on it (`Iterates`)."""

import numpy as np
import pytest

from sklearn_ssl_crf.optim import (
    BestIterate,
    StopTraining,
    improvement_stalled,
    minimize_lbfgs,
    run_iterations,
)
from sklearn_ssl_crf.optim.sgd import SGDTrainer, minimize_sgd
from sklearn_ssl_crf.optim.specs import Array, Integer
from sklearn_ssl_crf.training import Iterates, RunCheckpoints


class ScriptedStep:
    """A step whose iterations have the losses given (its weights: the iteration count),
    and that raises KeyboardInterrupt at the iteration ``interrupt`` (1-based)."""

    def __init__(self, losses, interrupt=None):
        self.losses, self.interrupt, self.done = list(losses), interrupt, 0
        self.start, self.holders, self.weights_spec = None, (), Array((1,))

    @property
    def iterate(self):
        return np.array([float(self.done)])

    def __call__(self):
        if self.done == len(self.losses):
            raise StopTraining("exhausted", "no more losses", {})
        if self.done + 1 == self.interrupt:
            raise KeyboardInterrupt
        self.done += 1
        return {"loss": self.losses[self.done - 1]}

    def stop(self, entry):
        return None

    def result(self):
        return self.iterate, self.losses[self.done - 1]

    def checkpoint_state(self):
        return {"done": self.done}

    def restore_checkpoint_state(self, state):
        self.done = state["done"]

    def checkpoint_spec(self):
        return {"done": Integer(0)}


def run(losses, period=2, delta=0.1, **kwargs):
    return run_iterations(ScriptedStep(losses), np.inf, period=period, delta=delta,
                          settings={}, **kwargs)


def test_the_rule_stops_when_the_loss_improved_too_little_over_the_period():
    # Over 2 iterations: (10 - 8) / 8 = 0.25, (9 - 7) / 7 = 0.29, (8 - 7.5) / 7.5 = 0.067.
    result = run([10.0, 9.0, 8.0, 7.0, 7.5, 1.0])
    assert result.n_iter == 5 and result.termination_condition == "converged"
    assert result.message == "improvement over 2 iterations below delta"
    assert [entry["num"] for entry in result.log] == [1, 2, 3, 4, 5]
    assert result.fun == 7.5


def test_the_rule_is_relative_to_the_size_of_a_negative_loss():
    """Losses falling by a third of their size: CRFsuite's ``/ loss`` would call a
    negative loss's improvement negative and stop at once."""
    losses = [-(1.5 ** k) for k in range(8)]
    result = run(losses, delta=0.5)
    assert result.termination_condition == "exhausted" and result.n_iter == 8
    assert improvement_stalled([{"loss": -2.0}, {"loss": -2.1}], 1, 0.1)
    assert not improvement_stalled([{"loss": 0.0}, {"loss": 0.0}], 1, -1.0)


def test_both_optimisers_stop_by_the_one_rule():
    """The SGD epochs' losses are scripted; L-BFGS's are a quadratic's. Each stops at the
    first iteration where `improvement_stalled` holds, and not before."""
    losses = iter([8.0, 6.0, 5.0, 4.9, 4.85, 4.84, 4.8])

    def gradient(trainer, batch):
        return next(losses), np.array([0]), np.zeros((1, 2)), np.zeros((2, 2))

    trainer = SGDTrainer(1, 2, "sgd", 1.0, lam=0.0, eta0=0.1)
    sgd = minimize_sgd(trainer, gradient, lambda: [np.array([0])], 7, period=2, delta=0.03)
    target = np.linspace(1.0, 3.0, 5)
    lbfgs = minimize_lbfgs(lambda x: (np.cosh(x - target).sum(), np.sinh(x - target)),
                           np.zeros(5), epsilon=0.0, period=1, delta=0.01)
    for result, period, delta in ((sgd, 2, 0.03), (lbfgs, 1, 0.01)):
        assert result.termination_condition == "converged", result.message
        assert "below delta" in result.message
        assert improvement_stalled(result.log, period, delta)
        assert not any(improvement_stalled(result.log[:n], period, delta)
                       for n in range(1, result.n_iter))
    assert sgd.n_iter == 6 and lbfgs.n_iter > 2


def test_callback_entries_and_its_stop_end_the_run_with_its_reason():
    def callback(iteration, weights):
        if iteration == 3:
            raise StopTraining("enough", "the callback ended it", {"score": 0.5})
        return {"score": float(weights[0])}

    result = run([5.0, 4.0, 3.0, 2.0, 1.0], period=0, callback=callback)
    assert (result.termination_condition, result.message) == ("enough",
                                                              "the callback ended it")
    assert [entry["score"] for entry in result.log] == [1.0, 2.0, 0.5]


def test_the_cap_and_the_verbose_line(capsys):
    result = run_iterations(ScriptedStep([3.0, 2.0, 1.0]), 2, period=0, delta=0.0,
                            settings={}, verbose=True, unit="epoch")
    assert result.termination_condition == "max_iter" and result.n_iter == 2
    assert result.message == "stopped at its cap of 2 epochs"
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("iter    1  loss=3  time=") and "at most" in lines[0]


def test_an_interrupted_run_resumes_to_the_result_of_one_never_interrupted(tmp_path):
    losses = [10.0 - k for k in range(9)]
    reference = run(losses, period=0)
    with pytest.raises(KeyboardInterrupt):
        run_iterations(ScriptedStep(losses, interrupt=6), np.inf, period=0, delta=0.0,
                       settings={}, checkpoint=RunCheckpoints(tmp_path, every=2))
    step = ScriptedStep(losses)
    resumed = run_iterations(step, np.inf, period=0, delta=0.0, settings={},
                             checkpoint=RunCheckpoints(tmp_path, every=2))
    assert [e["loss"] for e in resumed.log] == [e["loss"] for e in reference.log]
    assert resumed.n_iter == reference.n_iter and resumed.fun == reference.fun
    assert resumed.log[3]["time"] <= resumed.log[4]["time"]  # counted over both parts
    read = run_iterations(ScriptedStep(losses), np.inf, period=0, delta=0.0, settings={},
                          checkpoint=RunCheckpoints(tmp_path, every=2))
    assert read.log == resumed.log and read.termination_condition == "exhausted"


# -- the one best-iterate keeper -------------------------------------------------------------


def test_the_keeper_keeps_the_first_of_the_best_scores():
    kept = BestIterate()
    offers = [(0, 0.5, "a"), (1, 0.7, "b"), (2, 0.7, "c"), (3, float("nan"), "d"),
              (4, 0.6, "e")]
    assert [kept.offer(*offer) for offer in offers] == [True, True, False, False, False]
    assert (kept.iteration, kept.score, kept.weights) == (1, 0.7, "b")
    assert kept.scores[:3] == [0.5, 0.7, 0.7]


def test_the_keeper_is_restored_from_its_checkpoint_state():
    kept, again = BestIterate(), BestIterate()
    kept.offer(0, 0.2, np.zeros(2))
    kept.offer(1, 0.4, np.ones(2))
    again.restore_checkpoint_state(kept.checkpoint_state())
    assert not again.offer(2, 0.4, np.full(2, 2.0))
    assert again.iteration == 1 and again.offer(3, 0.5, np.full(2, 3.0))
    assert again.scores == [0.2, 0.4, 0.4, 0.5]


def test_iterates_stop_after_patience_iterations_without_a_better_score():
    scores = iter([0.5, 0.7, 0.7, 0.6, 0.69, 0.9])
    iterates = Iterates(lambda theta, state: next(scores), patience=3)
    stops = [iterates.record(k, np.array([float(k)]))[1] for k in range(5)]
    assert stops[:4] == [None] * 4 and stops[4][0] == "no_improvement"
    assert iterates.best_iteration == 1 and iterates.best_theta[0] == 1.0
    assert iterates.scores == [0.5, 0.7, 0.7, 0.6, 0.69]


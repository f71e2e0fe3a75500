"""Checkpoints (``checkpoint=directory``): a fit interrupted at a fixed point and run again
with the same directory ends with the model of a fit never interrupted, having read the
runs that had finished instead of running them again; records of other fits are never
taken, and a damaged or foreign record is refused without running anything."""

import json
import pickle
import time

import numpy as np
import pytest

from sklearn_ssl_crf import (
    CRF,
    CRFCV,
    EntropyRegularizedCRF,
    GraphPRCRF,
    NaturalGradientCRF,
    SelfTrainingCRF,
)
from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.estimators import _crf
from sklearn_ssl_crf.optim import CurvatureHistory, minimize_lbfgs
from sklearn_ssl_crf.parallel import ChunkedSequences
from sklearn_ssl_crf.training import _checkpoints
from sklearn_ssl_crf.training._checkpoints import RunCheckpoints
from sklearn_ssl_crf.training._stochastic import StochasticSamples

# Each selects its settings (folds, candidates, refit): many runs, some finished and one
# unfinished at the interruption.
MAKERS = {
    "CRF": lambda **kw: CRF(c2=0.1, **kw),
    "CRFCV": lambda **kw: CRFCV(cv=2, random_state=0, **kw),
    "EntropyRegularizedCRF": lambda **kw: EntropyRegularizedCRF(
        cv=2, c1=[0.0], semi_supervised_iterations=15, random_state=0, **kw),
    "SelfTrainingCRF": lambda **kw: SelfTrainingCRF(cv=2, c1=[0.0], max_rounds=2,
                                                    random_state=0, **kw),
    "GraphPRCRF": lambda **kw: GraphPRCRF(graph="knn", n_neighbors=3, cv=2, c1=[0.0],
                                          em_iterations=3, random_state=0, **kw),
}


def corpus(seed=0):
    X, y = make_sequences(60, features="dict", random_state=seed)
    return X, y[:24] + [None] * 36


class Evaluations:
    """Counts objective evaluations (sums over chunks, or a stochastic step's gradient), of
    which the ``stop``-th raises KeyboardInterrupt, and the L-BFGS runs and their
    evaluations."""

    def __init__(self, monkeypatch, stop=None):
        self.stop = stop
        self.reset()
        for owner, name in [(ChunkedSequences, "sum"), (StochasticSamples, "gradient")]:
            original = getattr(owner, name)

            def counted(data, *args, original=original, **kwargs):
                self.n += 1
                if self.n == self.stop:
                    raise KeyboardInterrupt
                return original(data, *args, **kwargs)

            monkeypatch.setattr(owner, name, counted)
        original_minimize = _crf.minimize_lbfgs

        def minimize(fun, *args, **kwargs):
            self.runs += 1

            def counted_fun(x):
                self.lbfgs += 1
                return fun(x)

            counted_fun.__dict__.update(fun.__dict__)  # lbfgs_history
            return original_minimize(counted_fun, *args, **kwargs)

        monkeypatch.setattr(_crf, "minimize_lbfgs", minimize)

    def reset(self):
        self.n = self.runs = self.lbfgs = 0


def assert_same_model(a, b):
    np.testing.assert_array_equal(a.state_weights_, b.state_weights_)
    np.testing.assert_array_equal(a.transition_weights_, b.transition_weights_)
    assert a.n_iter_ == b.n_iter_
    for key in ("loss", "validation_score", "objective"):
        assert ([e.get(key) for e in a.training_log_]
                == [e.get(key) for e in b.training_log_])
    # What selection saw: the held-out scores of every iteration of every run.
    for name in ("best_params_", "best_iteration_", "validation_scores_"):
        assert getattr(a, name, None) == getattr(b, name, None)
    results = getattr(a, "cv_results_", None) or {}
    for key, value in results.items():
        assert str(value) == str(b.cv_results_[key]), key


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("at", [0.3, 0.8])
def test_an_interrupted_fit_resumes_to_the_model_of_an_uninterrupted_one(
        name, at, tmp_path, monkeypatch):
    # Checkpoints every 3 iterations, however fast they are to write (see the next test).
    monkeypatch.setattr(_checkpoints, "_TIME_PER_WRITE", 0)
    X, y = corpus()
    counter = Evaluations(monkeypatch)
    reference = MAKERS[name]().fit(X, y)
    # The evaluations of a fit with checkpoints, which reads a run it repeats (the fit
    # that ranked the chosen priors starts the semi-supervised runs) instead of running it.
    counter.reset()
    assert_same_model(MAKERS[name](checkpoint=tmp_path / "uninterrupted").fit(X, y),
                      reference)
    total, lbfgs_total = counter.n, counter.lbfgs
    directory = tmp_path / "checkpoint"
    counter.reset()
    counter.stop = int(at * total)
    interrupted = MAKERS[name](checkpoint=directory, checkpoint_every=3)
    with pytest.raises(KeyboardInterrupt):
        interrupted.fit(X, y)
    assert not hasattr(interrupted, "state_weights_")  # unfitted; the directory holds it
    lbfgs_done = counter.lbfgs
    counter.reset()
    counter.stop = None
    resumed = MAKERS[name](checkpoint=directory, checkpoint_every=3).fit(X, y)
    assert_same_model(resumed, reference)
    # The finished runs were read, not run again: the resumed fit's L-BFGS evaluations
    # are the rest, plus one per run (which names its record), plus those of the
    # iterations after the last checkpoint (2 at most, of a few evaluations each).
    assert counter.lbfgs <= lbfgs_total - lbfgs_done + counter.runs + 2 * 5
    # Run once more, the fit reads every run: one evaluation each, no iteration.
    counter.reset()
    again = MAKERS[name](checkpoint=directory).fit(X, y)
    assert_same_model(again, reference)
    assert counter.lbfgs == counter.runs > 0


def test_a_checkpoint_of_other_data_or_settings_is_not_taken(tmp_path):
    X, y = corpus(0)
    X_other, y_other = corpus(1)
    directory = tmp_path / "checkpoint"
    MAKERS["EntropyRegularizedCRF"](checkpoint=directory).fit(X, y)
    n_records = len(list(directory.glob("run-*.npz")))
    for maker_kwargs, data in [({}, (X_other, y_other)),
                               ({"semi_supervised_iterations": 5}, (X, y))]:
        fresh = EntropyRegularizedCRF(cv=2, c1=[0.0], random_state=0,
                                      **{"semi_supervised_iterations": 15, **maker_kwargs})
        checked = EntropyRegularizedCRF(cv=2, c1=[0.0], random_state=0,
                                        checkpoint=directory,
                                        **{"semi_supervised_iterations": 15, **maker_kwargs})
        assert_same_model(checked.fit(*data), fresh.fit(*data))
    assert len(list(directory.glob("run-*.npz"))) > n_records


def objective(stop=None):
    """A smooth non-quadratic objective of 30 parameters; raises KeyboardInterrupt at its
    ``stop``-th evaluation."""
    rng = np.random.default_rng(0)
    A, b = rng.normal(size=(40, 30)), rng.normal(size=40)
    calls = {"n": 0}

    def fun(x):
        calls["n"] += 1
        if calls["n"] == stop:
            raise KeyboardInterrupt
        r = A @ x - b
        return 0.5 * r @ r + 0.1 * np.sum(x ** 4), A.T @ r + 0.4 * x ** 3

    fun.calls = calls
    return fun


@pytest.mark.parametrize("c1", [0.0, 0.5])
@pytest.mark.parametrize("stop", [2, 9, 30])
@pytest.mark.parametrize("every", [1, 4])
def test_lbfgs_resumes_to_the_same_iterates(c1, stop, every, tmp_path):
    reference = minimize_lbfgs(objective(), np.zeros(30), c1=c1)
    with pytest.raises(KeyboardInterrupt):
        minimize_lbfgs(objective(stop), np.zeros(30), c1=c1,
                       checkpoint=RunCheckpoints(tmp_path, every))
    resumed = minimize_lbfgs(objective(), np.zeros(30), c1=c1,
                             checkpoint=RunCheckpoints(tmp_path, every))
    np.testing.assert_array_equal(resumed.x, reference.x)
    assert [e["loss"] for e in resumed.log] == [e["loss"] for e in reference.log]
    assert ([e["n_evaluations"] for e in resumed.log]
            == [e["n_evaluations"] for e in reference.log])
    assert resumed.termination_condition == reference.termination_condition


def chain(checkpoint=None, stop=None):
    """Three runs sharing one quasi-Newton memory (as an EM's M-steps), each from where the
    last ended, on objectives differing by a linear term."""
    history = CurvatureHistory(6, 30)
    x, results = np.zeros(30), []
    base = objective(stop)
    for k in range(3):
        shift = np.full(30, 0.3 * k)

        def fun(x, shift=shift):
            value, gradient = base(x)
            return value - shift @ x, gradient - shift

        fun.lbfgs_history = history
        result = minimize_lbfgs(fun, x, max_iterations=8, checkpoint=checkpoint)
        x = result.x
        results.append(result)
    return results, base.calls


@pytest.mark.parametrize("stop", [5, 14, 21])
def test_runs_sharing_a_memory_resume_to_the_same_iterates(stop, tmp_path):
    reference, _ = chain()
    with pytest.raises(KeyboardInterrupt):
        chain(RunCheckpoints(tmp_path, 2), stop)
    resumed, calls = chain(RunCheckpoints(tmp_path, 2))
    for a, b in zip(resumed, reference):
        np.testing.assert_array_equal(a.x, b.x)
        assert [e["loss"] for e in a.log] == [e["loss"] for e in b.log]
    # Only the newest finished run keeps the shared memory (its carried state).
    assert len(list(tmp_path.glob("run-*.npz"))) == 3 + 1
    assert len(list(tmp_path.glob("run-*-carried.npz"))) == 1


def test_records_are_written_atomically_and_read_without_pickle(tmp_path):
    checkpoints = RunCheckpoints(tmp_path / "c")
    minimize_lbfgs(objective(), np.zeros(30), checkpoint=checkpoints)
    (path,) = (tmp_path / "c").glob("run-*.npz")
    # No temporary file is left beside the records.
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [
        path.name, "sklearn_ssl_crf-checkpoint.json"]

    # A record replaced by one holding a pickle whose loading would run code: refused,
    # nothing run.
    class Payload:
        def __reduce__(self):
            return (exec, ("raise SystemExit('the checkpoint ran code')",))

    meta = json.dumps({"finished": True, "result": {"x": {"__array__": "a0"}}})
    with open(path, "wb") as file:
        np.savez(file, __meta__=np.array(meta), a0=np.array([Payload()], dtype=object))
    with pytest.raises(ValueError, match=f"{path.name}: not a readable checkpoint record"):
        minimize_lbfgs(objective(), np.zeros(30), checkpoint=checkpoints)
    # Arrays it names missing, or no run state: the same.
    for meta in [{"finished": True, "result": {"x": {"__array__": "a9"}}}, ["finished"]]:
        with open(path, "wb") as file:
            np.savez(file, __meta__=np.array(json.dumps(meta)))
        with pytest.raises(ValueError, match="not a readable checkpoint record"):
            minimize_lbfgs(objective(), np.zeros(30), checkpoint=checkpoints)
    # Truncated: the same.
    path.write_bytes(pickle.dumps(0)[:3])
    with pytest.raises(ValueError, match="not a readable checkpoint record"):
        minimize_lbfgs(objective(), np.zeros(30), checkpoint=checkpoints)


def test_records_written_by_worker_processes_are_read(tmp_path, monkeypatch):
    """With n_jobs=2 the folds are fitted in worker processes, which open the new
    directory at once and write their runs' records; a fit in one process then reads them
    all."""
    X, y = corpus()
    directory = tmp_path / "checkpoint"
    reference = MAKERS["EntropyRegularizedCRF"]().fit(X, y)
    parallel = MAKERS["EntropyRegularizedCRF"](checkpoint=directory, n_jobs=2).fit(X, y)
    assert_same_model(parallel, reference)
    counter = Evaluations(monkeypatch)
    again = MAKERS["EntropyRegularizedCRF"](checkpoint=directory).fit(X, y)
    assert_same_model(again, reference)
    assert counter.lbfgs == counter.runs > 2 * 4  # the folds' runs too


def test_a_checkpoint_being_opened_by_another_process_is_not_foreign(tmp_path):
    # Another process's marker is half-written (its temporary file) and a record is there.
    (tmp_path / ".sklearn_ssl_crf-checkpoint.json.x8f2.tmp").write_text("{")
    (tmp_path / f"run-{'0' * 32}.npz").write_bytes(b"")
    minimize_lbfgs(objective(), np.zeros(30), checkpoint=RunCheckpoints(tmp_path))
    assert len(list(tmp_path.glob("run-*.npz"))) == 2
    # A marker of another format is not ours.
    (tmp_path / "sklearn_ssl_crf-checkpoint.json").write_text('{"version": 0}')
    with pytest.raises(ValueError, match="neither empty nor a checkpoint"):
        minimize_lbfgs(objective(), np.zeros(30), checkpoint=RunCheckpoints(tmp_path))


def test_a_directory_that_is_not_a_checkpoint_is_refused(tmp_path):
    X, y = corpus()
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="neither empty nor a checkpoint"):
        CRF(checkpoint=tmp_path).fit(X, y)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    with pytest.raises(ValueError, match="is a file"):
        CRF(checkpoint=tmp_path / "notes.txt").fit(X, y)
    with pytest.raises(ValueError, match="checkpoint_every"):
        CRF(checkpoint=tmp_path / "new", checkpoint_every=0).fit(X, y)


@pytest.mark.parametrize("batch_size", [1, 4])
@pytest.mark.parametrize("at", [0.3, 0.8])
def test_natural_gradient_fit_resumes_to_the_same_model(batch_size, at, tmp_path,
                                                        monkeypatch):
    """Both phases (supervised, then with the unlabelled terms), shuffled epochs and the
    dev set's best epoch: the interrupted fit resumes from its last checkpointed epoch."""
    monkeypatch.setattr(_checkpoints, "_TIME_PER_WRITE", 0)  # every 2 epochs, however fast
    X, y = make_sequences(80, features="dict", random_state=0)
    X_dev, y_dev = X[60:], y[60:]
    X, y = X[:60], y[:20] + [None] * 40

    def make(**kwargs):
        return NaturalGradientCRF(batch_size=batch_size, gamma=0.1, proportion_weight=1.0,
                                  max_iterations=12, random_state=0, **kwargs)

    counter = Evaluations(monkeypatch)
    reference = make().fit(X, y, X_dev=X_dev, y_dev=y_dev)
    total = counter.n
    counter.reset()
    counter.stop = int(at * total)
    with pytest.raises(KeyboardInterrupt):
        make(checkpoint=tmp_path, checkpoint_every=2).fit(X, y, X_dev=X_dev, y_dev=y_dev)
    counter.reset()
    counter.stop = None
    resumed = make(checkpoint=tmp_path, checkpoint_every=2).fit(X, y, X_dev=X_dev,
                                                                y_dev=y_dev)
    assert_same_model(resumed, reference)
    assert counter.n < total
    # Read again: no epoch runs, only the learning-rate calibration (its trials and the
    # initial loss, each over the batches of the 20 labelled sequences).
    counter.reset()
    assert_same_model(make(checkpoint=tmp_path).fit(X, y, X_dev=X_dev, y_dev=y_dev),
                      reference)
    assert counter.n == (len(reference.calibration_log_) + 1) * -(-20 // batch_size)


def test_a_slow_checkpoint_is_written_less_often(tmp_path, monkeypatch):
    """Every ``every`` iterations, once 40 times what the last write took has passed
    (checkpoints cost at most about 2.5 % of the time)."""
    checkpoints = RunCheckpoints(tmp_path, every=2)
    assert [checkpoints.due(k) for k in (1, 2, 3, 4)] == [False, True, False, True]
    # Another run's checkpoints in the same directory (a fit's next run) know the timing.
    later = RunCheckpoints(tmp_path, every=2)
    original = np.savez

    def slow(*args, **kwargs):
        time.sleep(0.1)
        return original(*args, **kwargs)

    monkeypatch.setattr(np, "savez", slow)
    checkpoints.write("0" * 32, {"finished": False, "x": np.zeros(3)})
    assert not checkpoints.due(2) and not later.due(2)
    written_at, write_seconds = checkpoints._timing
    checkpoints._timing[0] = written_at - 40 * write_seconds  # as if that had passed
    assert checkpoints.due(2) and not checkpoints.due(3)

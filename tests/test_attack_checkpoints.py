"""Attack suite (issue #40): checkpoint records damaged or crafted as an attacker would, from
a real record of a short fit. Fitting again with the same ``checkpoint`` directory (the
user's path) must refuse each with a ValueError naming the record and what is wrong with
it, never take it for a good one, never allocate past what the file holds (the memory cases
run in a child whose address space is capped, `memory_cap.run_capped`), and never block on
a file that is not a regular one."""

import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from memory_cap import run_capped

import sklearn_ssl_crf
from sklearn_ssl_crf import CRF, GraphPRCRF, NaturalGradientCRF
from sklearn_ssl_crf.datasets import make_sequences
from sklearn_ssl_crf.optim.sgd import SGDTrainer, minimize_sgd
from sklearn_ssl_crf.parallel import ChunkedSequences
from sklearn_ssl_crf.training import _checkpoints
from sklearn_ssl_crf.training._checkpoints import RunCheckpoints
from sklearn_ssl_crf.training._stochastic import StochasticSamples

#: The package the tests import: the capped children import it too.
ROOT = Path(sklearn_ssl_crf.__file__).resolve().parents[1]
#: A short fit with the checkpoint directory ``DIRECTORY``, here and in the capped children.
FIT = """
from sklearn_ssl_crf import CRF
from sklearn_ssl_crf.datasets import make_sequences
X, y = make_sequences(40, features="dict", random_state=0)
model = CRF(max_iterations=8, checkpoint=DIRECTORY).fit(X, y)
"""


def fit(directory):
    namespace = {"DIRECTORY": str(directory)}
    exec(FIT, namespace)
    return namespace["model"]


def record_of_a_fit(directory):
    """The path of the one record a short fit writes (its run, finished)."""
    fit(directory)
    (path,) = directory.glob("run-*.npz")
    return path


def loaded(path):
    with np.load(path, allow_pickle=False) as stored:
        arrays = {name: stored[name] for name in stored.files}
    return json.loads(str(arrays.pop("__meta__"))), arrays


def saved(path, meta, arrays, **kwargs):
    with open(path, "wb") as file:
        np.savez(file, __meta__=np.array(json.dumps(meta)), **arrays, **kwargs)


def refused(path, what, fit_again=fit):
    """Fitting again raises a ValueError naming the record at ``path`` and ``what`` is
    wrong, and saying to delete it."""
    with pytest.raises(ValueError) as raised:
        fit_again(path.parent)
    message = str(raised.value)
    assert str(path) in message and what in message and "delete it" in message, message


def weights_name(meta):
    return meta["result"]["x"]["__array__"]


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_are_refused(value, tmp_path):
    path = record_of_a_fit(tmp_path)
    meta, arrays = loaded(path)
    arrays[weights_name(meta)][3] = value
    saved(path, meta, arrays)
    refused(path, "result.x: not finite")


def test_extra_weights_are_refused(tmp_path):
    path = record_of_a_fit(tmp_path)
    meta, arrays = loaded(path)
    n = arrays[weights_name(meta)].size
    arrays[weights_name(meta)] = np.concatenate([arrays[weights_name(meta)], np.ones(1000)])
    saved(path, meta, arrays)
    refused(path, f"result.x: shape ({n + 1000},) where this run's is ({n},)")


@pytest.mark.parametrize("shape", ["column", "float32"])
def test_weights_of_another_shape_or_dtype_are_refused(shape, tmp_path):
    path = record_of_a_fit(tmp_path)
    meta, arrays = loaded(path)
    x = arrays[weights_name(meta)]
    arrays[weights_name(meta)] = x[:, None] if shape == "column" else x.astype(np.float32)
    saved(path, meta, arrays)
    refused(path, "shape (" if shape == "column" else "dtype float32 where float64")


@pytest.mark.parametrize("damage, what", [
    (lambda meta: meta.pop("holders"), "no 'holders'"),
    (lambda meta: meta["result"].pop("n_iter"), "result: no 'n_iter'"),
    (lambda meta: meta.update(result=[1, 2]), "result: a list of 2 where a dict"),
    (lambda meta: meta["result"].update(n_iter="8"), "result.n_iter: str '8'"),
    (lambda meta: meta["result"]["log"][0].pop("time"), "result.log[0]: no 'time'"),
    (lambda meta: meta["result"].update(x={"__array__": "a99"}),
     "names an array 'a99' it does not hold"),
])
def test_a_meta_of_another_form_is_refused(damage, what, tmp_path):
    path = record_of_a_fit(tmp_path)
    meta, arrays = loaded(path)
    damage(meta)
    saved(path, meta, arrays)
    refused(path, what)


def test_a_meta_that_is_not_a_dict_is_refused(tmp_path):
    path = record_of_a_fit(tmp_path)
    _, arrays = loaded(path)
    saved(path, ["finished", True], arrays)
    refused(path, "__meta__: a list of 2 where a run's state is expected")


def test_an_object_array_is_refused_unread(tmp_path):
    path = record_of_a_fit(tmp_path)
    meta, arrays = loaded(path)
    arrays[weights_name(meta)] = np.array([{"weights": 1.0}], dtype=object)
    saved(path, meta, arrays, allow_pickle=True)
    refused(path, "dtype object")


@pytest.mark.parametrize("content", ["empty", "truncated"])
def test_an_empty_or_truncated_record_is_refused(content, tmp_path):
    path = record_of_a_fit(tmp_path)
    data = path.read_bytes()
    path.write_bytes(b"" if content == "empty" else data[:len(data) // 2])
    refused(path, "not a zip file")


# -- files that would take the memory or block: run in a capped child ---------------------


def refused_in_a_capped_child(path):
    """Fitting again in a child with 1 GiB of address space past its imports (and a time
    limit: a fit that blocks fails) raises a ValueError naming the record and what is
    wrong."""
    code = f"DIRECTORY = {str(path.parent)!r}\n{FIT}"
    return run_capped(code, extra_bytes=2**30, timeout=120, cwd=ROOT)


def npy_header(shape):
    """The magic and header of an npy file of float64 values of ``shape``."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def replaced_member(path, name, write):
    """Rewrite the record at ``path`` with its member ``name`` (an array's) written by
    ``write(archive, name)`` instead."""
    with zipfile.ZipFile(path) as archive:
        members = {member: archive.read(member) for member in archive.namelist()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for member, data in members.items():
            if member == f"{name}.npy":
                write(archive, member)
            else:
                archive.writestr(member, data)


def test_a_compressed_record_that_inflates_past_its_size_is_refused_unread(tmp_path):
    """1.5 GB of zero weights deflated into about 1.5 MB: read as they are declared, they
    would take more memory than the child has."""
    path = record_of_a_fit(tmp_path)
    meta, _ = loaded(path)
    n_values = 1_500_000_000 // 8

    def deflated(archive, member):
        info = zipfile.ZipInfo(member)
        info.compress_type = zipfile.ZIP_DEFLATED
        info._compresslevel = 1  # the fastest: zeros shrink as much
        with archive.open(info, "w", force_zip64=True) as stored:
            stored.write(npy_header((n_values,)))
            zeros = bytes(2**24)
            for start in range(0, 8 * n_values, len(zeros)):
                stored.write(zeros[:8 * n_values - start])

    replaced_member(path, weights_name(meta), deflated)
    assert path.stat().st_size < 8 * 2**20
    outcome = refused_in_a_capped_child(path)
    assert outcome["error"] == "ValueError", outcome
    assert str(path) in outcome["message"] and "compressed" in outcome["message"]


def test_an_npy_header_declaring_more_than_the_file_holds_is_refused_unread(tmp_path):
    path = record_of_a_fit(tmp_path)
    meta, _ = loaded(path)
    replaced_member(path, weights_name(meta), lambda archive, member: archive.writestr(
        member, npy_header((10**11,)) + bytes(800)))
    outcome = refused_in_a_capped_child(path)
    assert outcome["error"] == "ValueError", outcome
    assert str(path) in outcome["message"]
    assert "declares 100000000000 items of 8 bytes" in outcome["message"]


@pytest.mark.parametrize("kind", ["fifo", "symlink to /dev/zero", "directory"])
def test_a_record_that_is_not_a_regular_file_is_refused_unopened(kind, tmp_path):
    path = record_of_a_fit(tmp_path)
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        os.symlink("/dev/zero", path)
    # In a child with a time limit: a fit that opens the FIFO for reading blocks.
    outcome = refused_in_a_capped_child(path)
    assert outcome["error"] == "ValueError", outcome
    assert str(path) in outcome["message"] and "not a regular file" in outcome["message"]


# -- running records: L-BFGS's memory, the stochastic phases' state ------------------------


def interrupted(monkeypatch, directory, fit_again, owner, stop):
    """The running record left by ``fit_again(directory)`` interrupted at the ``stop``-th
    evaluation of its objective (``owner``'s: `ChunkedSequences` sums, or a `StochasticSamples`
    stochastic gradient), with checkpoints at every iteration or epoch."""
    monkeypatch.setattr(_checkpoints, "_TIME_PER_WRITE", 0)
    name = "sum" if owner is ChunkedSequences else "gradient"
    original, calls = getattr(owner, name), []

    def counted(*args, **kwargs):
        calls.append(None)
        if len(calls) == stop:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    with pytest.raises(KeyboardInterrupt):
        fit_again(directory)
    monkeypatch.setattr(owner, name, original)
    (path,) = directory.glob("run-*.npz")
    meta, arrays = loaded(path)
    assert meta["finished"] is False
    return path, meta, arrays


def history(meta):
    """The L-BFGS memory a running record holds."""
    return meta["step"]["history"]


def crf_every_iteration(directory):
    X, y = make_sequences(40, features="dict", random_state=0)
    return CRF(max_iterations=8, checkpoint=directory, checkpoint_every=1).fit(X, y)


@pytest.mark.parametrize("damage, what", [
    (lambda meta, arrays: arrays[history(meta)["s"]["__array__"]].__setitem__(0, np.nan),
     "step.history.s: not finite"),
    (lambda meta, arrays: arrays.update({history(meta)["y"]["__array__"]: np.zeros((6, 3))}),
     "step.history.y: shape (6, 3)"),
    (lambda meta, arrays: history(meta).update(size=7), "step.history.size: 7 outside [0, 6]"),
    (lambda meta, arrays: arrays[meta["step"]["gradient"]["__array__"]].__setitem__(0, np.inf),
     "step.gradient: not finite"),
    (lambda meta, arrays: meta["step"].update(loss=float("nan")),
     "step.loss: nan where a finite number"),
    (lambda meta, arrays: meta.update(log=[]), "log: a list of 0 where a list of at least 1"),
])
def test_a_running_lbfgs_record_of_another_form_is_refused(damage, what, tmp_path,
                                                           monkeypatch):
    path, meta, arrays = interrupted(monkeypatch, tmp_path, crf_every_iteration,
                                     ChunkedSequences, stop=6)
    damage(meta, arrays)
    saved(path, meta, arrays)
    refused(path, what, crf_every_iteration)


def natural_gradient(directory):
    X, y = make_sequences(40, features="dict", random_state=0)
    return NaturalGradientCRF(batch_size=4, gamma=0.1, max_iterations=6, random_state=0,
                              checkpoint=directory, checkpoint_every=1).fit(
        X, y[:15] + [None] * 25)


def batch(meta, arrays):
    """The first batch of sequence indices the data's state holds."""
    return arrays[meta["holders"][2]["batches"][0]["__array__"]]


@pytest.mark.parametrize("damage, what", [
    # The random generator's state: not a dict, or of another generator.
    (lambda meta, arrays: meta["holders"].__setitem__(1, [1, 2]),
     "holders[1]: a list of 2 where a dict"),
    (lambda meta, arrays: meta["holders"][1].update(bit_generator="MT19937"),
     "'PCG64' is expected"),
    # The trainer's schedule, and the batches drawn (indices past the sequences).
    (lambda meta, arrays: meta["holders"][0].update(scale=float("inf")),
     "holders[0].scale: inf"),
    (lambda meta, arrays: batch(meta, arrays).__iadd__(1000), "outside range(0, 15)"),
])
def test_a_running_natural_gradient_record_of_another_form_is_refused(damage, what,
                                                                      tmp_path, monkeypatch):
    path, meta, arrays = interrupted(monkeypatch, tmp_path, natural_gradient, StochasticSamples,
                                     stop=76)
    damage(meta, arrays)
    saved(path, meta, arrays)
    refused(path, what, natural_gradient)


def test_a_record_written_today_is_read_to_the_same_model(tmp_path):
    """The checks refuse none of the records the package writes: read again, the fit is
    the one that wrote them."""
    first = fit(tmp_path)
    (path,) = tmp_path.glob("run-*.npz")
    again = fit(tmp_path)
    np.testing.assert_array_equal(again.state_weights_, first.state_weights_)
    np.testing.assert_array_equal(again.transition_weights_, first.transition_weights_)
    assert again.training_log_ == first.training_log_


def test_a_stochastic_run_that_ends_on_a_non_finite_loss_is_read_again(tmp_path):
    """Its last weights are not finite: its record holds the best ones (its result's),
    which the reader takes."""

    def gradient(trainer, batch):
        # From the third epoch (4 sequences seen), steps that overflow the weights.
        step = np.inf if trainer.t >= 4 else 1.0
        return (trainer.squared_norm() + 1.0, np.array([0]), np.full((1, 2), step),
                np.zeros((2, 2)))

    def run():
        trainer = SGDTrainer(3, 2, "sgd", 1e-8, lam=0.0, eta0=0.1)
        with np.errstate(invalid="ignore"):  # the diverging epochs' arithmetic
            result = minimize_sgd(trainer, gradient, lambda: [np.array([0]), np.array([1])],
                                  10, checkpoint=RunCheckpoints(tmp_path))
        return result, trainer

    first, _ = run()
    assert first.termination_condition == "not_finite"
    again, trainer = run()
    np.testing.assert_array_equal(again.x, first.x)
    np.testing.assert_array_equal(trainer.vector(), first.x)
    assert np.isfinite(trainer.state).all()


def graph_pr(directory):
    X, y = make_sequences(40, features="dict", random_state=0)
    return GraphPRCRF(graph="knn", n_neighbors=3, cv=2, c1=[0.0], em_iterations=2,
                      random_state=0, checkpoint=directory).fit(X, y[:15] + [None] * 25)


@pytest.mark.parametrize("damage, what", [
    (lambda meta, arrays: arrays[meta["carried"]["rho"]["__array__"]].__setitem__(0, np.nan),
     "carried.rho: not finite"),
    (lambda meta, arrays: meta["carried"].update(newest=-2), "carried.newest: -2 outside"),
    (lambda meta, arrays: meta.update(finished=False), "a running run's record where none"),
])
def test_a_damaged_memory_of_an_em_is_refused(damage, what, tmp_path):
    """Graph-PR's M-steps share one L-BFGS memory, kept beside the newest M-step's record
    (of each fold's and candidate's EM: a fit again reads them all)."""
    graph_pr(tmp_path)
    path = sorted(tmp_path.glob("run-*-carried.npz"))[0]
    meta, arrays = loaded(path)
    damage(meta, arrays)
    saved(path, meta, arrays)
    refused(path, what, graph_pr)

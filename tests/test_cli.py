"""The command line: train -> model file -> tag / evaluate against the Python API, the
errors a user meets with bad files, and the demo."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from sklearn_ssl_crf import CRF, CRFCV, EntropyRegularizedCRF, WindowFeatures, load
from sklearn_ssl_crf.cli import main
from sklearn_ssl_crf.cli import tag as tag_command
from sklearn_ssl_crf.datasets import make_sequences, read_columns, read_text
from sklearn_ssl_crf.metrics import flat_accuracy_score, span_f1_score
from sklearn_ssl_crf.training._selection import describe_settings


def _write_columns(path, X, y):
    # word, a coarse "tag" column (its first two letters) and the label
    path.write_text("".join(
        "".join(f"{w} {w[:2]} {t}\n" for w, t in zip(words, labels)) + "\n"
        for words, labels in zip(X, y)))
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    X, y = make_sequences(260, random_state=0)
    paths = {
        "train": _write_columns(folder / "train.txt", X[:60], y[:60]),
        "dev": _write_columns(folder / "dev.txt", X[60:100], y[60:100]),
        "test": _write_columns(folder / "test.txt", X[100:160], y[100:160]),
        "unlabeled": folder / "unlabelled.txt",
    }
    paths["unlabeled"].write_text("".join(" ".join(s) + "\n" for s in X[160:]))
    return folder, paths


TRAIN_SETTINGS = ["--method", "entropy", "--gamma", "0.1", "--proportion-weight", "10",
                  "--c2", "0.1", "--max-iterations", "25", "--window", "1", "--suffixes"]


def _python_api_model(paths):
    """The model `train` should build for TRAIN_SETTINGS, through the Python API."""
    X, y = read_columns(paths["train"], columns=[0, 1])
    X_unlabeled = [[(w, w[:2]) for w in s] for s in read_text(paths["unlabeled"])]
    features = WindowFeatures(window=1, suffixes=()).fit(X + X_unlabeled)
    estimator = EntropyRegularizedCRF(gamma=0.1, proportion_weight=10, c2=0.1,
                                      max_iterations=25, random_state=0)
    estimator.fit(features.transform(X), y,
                  X_unlabeled=features.transform(X_unlabeled))
    return Pipeline([("features", features), ("model", estimator)])


@pytest.fixture(scope="module")
def trained(corpus):
    """train through the real entry point (a new Python process), as a user runs it."""
    folder, paths = corpus
    unlabeled_columns = folder / "unlabelled_columns.txt"
    unlabeled_columns.write_text("".join(
        "".join(f"{w} {w[:2]}\n" for w in s) + "\n" for s in read_text(paths["unlabeled"])))
    model = folder / "model.model"
    result = subprocess.run(
        [sys.executable, "-m", "sklearn_ssl_crf", "train", str(paths["train"]),
         "--unlabelled", str(unlabeled_columns), "--unlabelled-format", "columns",
         "--model", str(model), *TRAIN_SETTINGS],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return model, result


def test_train_tag_evaluate_round_trip_matches_the_python_api(corpus, trained, capsys):
    folder, paths = corpus
    model_path, train_run = trained
    assert "iter    1" in train_run.stderr and "at most" in train_run.stderr  # progress
    assert "EntropyRegularizedCRF" in train_run.stdout  # the summary
    # The unlabelled file was streamed into the fit, and counted as it went.
    assert f"{len(read_text(paths['unlabeled'])):,} unlabelled" in train_run.stdout

    expected = _python_api_model(paths)
    loaded = load(model_path)
    np.testing.assert_array_equal(loaded[-1].state_weights_, expected[-1].state_weights_)

    X_test, y_test = read_columns(paths["test"], columns=[0, 1])
    predicted = expected.predict(X_test)
    tagged = folder / "tagged.txt"
    assert main(["tag", str(model_path), str(paths["test"]), "--format", "columns",
                 "--output", str(tagged)]) == 0
    sentences = [block.split("\n") for block in tagged.read_text().strip().split("\n\n")]
    # Every input field is echoed, then the predicted label.
    assert [[line.split("\t")[:3] for line in s] for s in sentences] == [
        [[w, w[:2], t] for (w, _), t in zip(xs, ys)] for xs, ys in zip(X_test, y_test)]
    assert [[line.split("\t")[3] for line in s] for s in sentences] == predicted

    capsys.readouterr()
    assert main(["evaluate", str(model_path), str(paths["test"])]) == 0
    report = capsys.readouterr().out
    f1 = float(next(line for line in report.splitlines() if line.startswith("span F1"))
               .split()[-1])
    accuracy = float(next(line for line in report.splitlines()
                          if line.startswith("token accuracy")).split()[-1])
    assert f1 == pytest.approx(span_f1_score(y_test, predicted), abs=5e-5)
    assert accuracy == pytest.approx(flat_accuracy_score(y_test, predicted), abs=5e-5)
    assert "overall" in report


def test_tag_marginals_and_entropy_are_the_models(corpus, trained, capsys):
    folder, paths = corpus
    model_path, _ = trained
    model = load(model_path)
    X_test, _ = read_columns(paths["test"], columns=[0, 1])
    features = model[0].transform(X_test)
    capsys.readouterr()
    assert main(["tag", str(model_path), str(paths["test"]), "--format", "columns",
                 "--marginals", "--entropy"]) == 0
    lines = capsys.readouterr().out.splitlines()
    classes = lines[0].removeprefix("# marginal columns: ").split()
    assert classes == list(model[-1].classes_)
    entropies = [float(line.split("=")[1]) for line in lines if line.startswith("# entropy")]
    np.testing.assert_allclose(entropies, model[-1].predict_entropy(features), atol=5e-5)
    rows = [line.split("\t") for line in lines[1:] if line and not line.startswith("#")]
    marginals = [m for sentence in model[-1].predict_marginals(features) for m in sentence]
    assert len(rows) == len(marginals)
    got = np.array([[float(v) for v in row[4:]] for row in rows])
    np.testing.assert_allclose(got, [[m[c] for c in classes] for m in marginals], atol=5e-5)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=5e-4)


def test_tag_explain_writes_the_models_contributions(corpus, trained, tmp_path, capsys):
    _, paths = corpus
    model_path, _ = trained
    model = load(model_path)
    X_test, _ = read_columns(paths["test"], columns=[0, 1])
    expected = model[-1].predict_contributions(model[0].transform(X_test), top=3)
    capsys.readouterr()
    assert main(["tag", str(model_path), str(paths["test"]), "--format", "columns"]) == 0
    plain = capsys.readouterr().out
    assert main(["tag", str(model_path), str(paths["test"]), "--format", "columns",
                 "--explain", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # Without the '# contributions' lines, the output is the plain one.
    assert [line for line in lines if not line.startswith("#")] == plain.splitlines()
    tokens = [token for sentence in expected for token in sentence]
    explained = [line for line in lines if line.startswith("# contributions\t")]
    assert len(explained) == len(tokens)
    for i, line in enumerate(lines):
        if line.startswith("#"):
            assert lines[i - 1] and not lines[i - 1].startswith("#")  # after its token
    for line, token in zip(explained, tokens):
        fields = [field.rpartition("=") for field in line.split("\t")[1:]]
        assert [name for name, _, _ in fields[:2]] == ["state", "transition"]
        assert [name for name, _, _ in fields[2:]] == [a for a, _ in token["attributes"]]
        np.testing.assert_allclose(
            [float(value) for _, _, value in fields],
            [token["state"], token["transition"], *(c for _, c in token["attributes"])],
            atol=5e-5)
    assert max(len(token["attributes"]) for token in tokens) == 3

    # K defaults to 5; it must be a positive integer
    assert main(["tag", str(model_path), str(paths["test"]), "--format", "columns",
                 "--explain"]) == 0
    widths = [line.count("\t") - 2 for line in capsys.readouterr().out.splitlines()
              if line.startswith("# contributions")]
    assert max(widths) == 5
    with pytest.raises(SystemExit):
        main(["tag", str(model_path), str(paths["test"]), "--explain", "0"])
    assert "K must be a positive integer, got '0'" in capsys.readouterr().err


def test_failed_tag_run_leaves_the_old_output(corpus, trained, tmp_path, monkeypatch,
                                              capsys):
    _, paths = corpus
    model_path, _ = trained
    output = tmp_path / "tags.txt"
    arguments = ["tag", str(model_path), str(paths["test"]), "--format", "columns",
                 "--output", str(output)]
    assert main(arguments) == 0
    before = output.read_text()

    def fail_half_way(out, *args):
        out.write("half a sentence\t")
        raise OSError("disk full")

    monkeypatch.setattr(tag_command, "_write_tags", fail_half_way)
    assert main(arguments) != 0
    assert "disk full" in capsys.readouterr().err
    assert output.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tags.txt"]


def test_dev_file_chooses_among_several_values(corpus, capsys):
    _, paths = corpus
    assert main(["train", str(paths["train"]), "--dev", str(paths["dev"]), "--c2", "0.01",
                 "100", "--token-columns", "0", "--max-iterations", "30", "--quiet"]) == 0
    summary = capsys.readouterr().out
    # c2=100 flattens every weight towards zero: the dev file must reject it.
    assert "c2=0.01" in summary and "dev span F1" in summary


def test_a_dev_file_with_a_label_the_training_file_lacks_is_scored(corpus, tmp_path,
                                                                   capsys):
    _, paths = corpus
    X, y = make_sequences(260, random_state=0)
    y_dev = [["B-NEW" if t == 0 else label for t, label in enumerate(labels)]
             for labels in y[60:100]]
    dev = _write_columns(tmp_path / "dev.txt", X[60:100], y_dev)
    capsys.readouterr()
    assert main(["train", str(paths["train"]), "--dev", str(dev), "--c2", "0.01", "100",
                 "--token-columns", "0", "--max-iterations", "30", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "c2=0.01" in out
    # One clean line, once, however many fits warned.
    assert [line for line in err.splitlines() if "y_dev" in line] == [
        line for line in err.splitlines() if line.startswith(
            "sklearn-ssl-crf train: warning: y_dev has 1 label(s) not in the training data "
            "(B-NEW) on 40 of its")]
    assert err.count("y_dev has 1 label") == 1 and "warnings.warn" not in err


def test_a_model_trained_with_progress_loads_quiet(corpus, tmp_path, capsys):
    _, paths = corpus
    path = tmp_path / "crf.model"
    assert main(["train", str(paths["train"]), "--c2", "0.1", "--token-columns", "0",
                 "--max-iterations", "5", "--model", str(path)]) == 0
    assert "training CRF" in capsys.readouterr().err  # progress was shown
    assert load(path).named_steps["model"].verbose is False


def test_c2_transitions_is_kept_or_chosen(corpus, tmp_path, capsys):
    _, paths = corpus
    common = ["train", str(paths["train"]), "--order", "2", "--c1", "0", "--c2", "0.1",
              "--token-columns", "0", "--max-iterations", "20", "--quiet"]
    fixed, chosen = tmp_path / "fixed.model", tmp_path / "chosen.skops"
    assert main([*common, "--c2-transitions", "0.001", "--model", str(fixed)]) == 0
    estimator = load(fixed).named_steps["model"]
    assert type(estimator) is CRF and estimator.c2_transitions == 0.001
    capsys.readouterr()
    # Several values make `crf` a CRFCV choosing among them, as for --c1 and --c2.
    assert main([*common, "--c2-transitions", "0.001", "1000", "--model",
                 str(chosen)]) == 0
    estimator = load(chosen).named_steps["model"]
    assert type(estimator) is CRFCV and estimator.c2_transitions == [0.001, 1000.0]
    value = estimator.best_params_["c2_transitions"]
    assert f"c2_transitions={value:g}" in capsys.readouterr().out
    # The chosen prior may be None (c2's), which the summary must print too.
    assert describe_settings({"c2": 0.1, "c2_transitions": None}) == (
        "c2=0.1, c2_transitions=None")


def test_word_only_model_tags_raw_text(corpus, tmp_path, capsys):
    _, paths = corpus
    model = tmp_path / "words.model"
    assert main(["train", str(paths["train"]), "--token-columns", "0", "--clusters",
                 "--unlabelled", str(paths["unlabeled"]), "--method", "crf",
                 "--max-iterations", "20", "--model", str(model), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["tag", str(model), str(paths["unlabeled"])]) == 0
    out = capsys.readouterr().out
    sentences = read_text(paths["unlabeled"])
    predicted = load(model).predict(sentences)
    assert [[line.split("\t") for line in block.split("\n")]
            for block in out.strip().split("\n\n")] == [
        [[w, t] for w, t in zip(words, labels)] for words, labels in zip(sentences, predicted)]


def _run_error(capsys, argv):
    capsys.readouterr()
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2
    assert "Traceback" not in err and err.count("\n") == 1
    return err


@pytest.mark.parametrize("content, message", [
    (b"w1 A B-X\nw2 A\n\n", "bad.txt, line 2: expected 3 columns"),
    (b"w1 A B-X\n\nw2\n", "bad.txt, line 3: expected 3 columns"),
    (b"w1\nw2\n", "bad.txt, line 1: a labelled token line needs a token and a label"),
    (b"", "bad.txt: no sentences (the file is empty)"),
    (b"\n\n", "bad.txt: no sentences (the file is empty)"),
    (b"w1 A B-X\nw\xe9 A O\n", "bad.txt, line 2: byte b'\\xe9' is not valid utf-8"),
])
def test_bad_training_files(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    assert message in _run_error(capsys, ["train", str(bad), "--quiet"])


def test_bad_files_in_every_command(corpus, trained, tmp_path, capsys):
    _, paths = corpus
    model, _ = trained
    undecodable = tmp_path / "latin1.txt"
    undecodable.write_bytes(b"one sentence\ncaf\xe9 au lait\n")
    assert "latin1.txt, line 2: byte" in _run_error(
        capsys, ["tag", str(model), str(undecodable), "--format", "columns"])
    # Unlabelled text is streamed into the fit: the bad line is met while training.
    for method in ("entropy", "graph-pr"):
        assert "latin1.txt, line 2: byte" in _run_error(
            capsys, ["train", str(paths["train"]), "--method", method, "--token-columns",
                     "0", "--unlabelled", str(paths["unlabeled"]), str(undecodable),
                     "--quiet"])
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    assert "empty.txt: no sentences" in _run_error(
        capsys, ["train", str(paths["train"]), "--method", "self-training", "--token-columns",
                 "0", "--unlabelled", str(paths["unlabeled"]), str(empty), "--quiet"])
    # The model was trained on (word, tag) tokens: raw words alone cannot be tagged.
    assert "trained on tokens of 2 columns" in _run_error(
        capsys, ["tag", str(model), str(paths["unlabeled"])])
    # Raw text holds words only; the labelled tokens have two columns.
    assert "the labelled tokens have 2 columns (every column but the label), the unlabelled "\
        "ones (" in _run_error(
        capsys, ["train", str(paths["train"]), "--method", "entropy",
                 "--unlabelled", str(paths["unlabeled"])])
    assert "not a sklearn_ssl_crf model file" in _run_error(
        capsys, ["tag", str(paths["train"]), str(paths["test"])])
    assert "missing.txt: no such file" in _run_error(
        capsys, ["evaluate", str(model), str(tmp_path / "missing.txt")])
    assert "needs --unlabelled" in _run_error(
        capsys, ["train", str(paths["train"]), "--method", "graph-pr"])
    assert "does not choose its settings: give one value of --c2" in _run_error(
        capsys, ["train", str(paths["train"]), "--method", "ngd", "--c2", "0.1", "1"])
    short = tmp_path / "short.txt"
    short.write_text("w1 B-X\n\n")
    # The model reads columns 0 and 1 as the token and the last as the label.
    assert "include the label column" in _run_error(
        capsys, ["evaluate", str(model), str(short)])


def test_sep_reads_tab_separated_tokens_with_spaces(tmp_path, capsys):
    # Every third token holds a space: only a tab separates its fields.
    X, y = make_sequences(40, random_state=1)
    X = [[f"{w} {w[:1]}" if i % 3 == 0 else w for i, w in enumerate(s)] for s in X]
    data = tmp_path / "tabs.txt"
    data.write_text("".join("".join(f"{w}\t{t}\n" for w, t in zip(words, labels)) + "\n"
                            for words, labels in zip(X, y)))
    model = tmp_path / "tabs.skops"
    assert main(["train", str(data), "--sep", "tab", "--c1", "0", "--c2", "0.1",
                 "--max-iterations", "10", "--model", str(model), "--quiet"]) == 0
    assert read_columns(data, sep="\t") == (X, y)
    predicted = load(model).predict(X)
    # evaluate and tag read the file as train did, unless told otherwise.
    for sep in ([], ["--sep", "\\t"]):
        capsys.readouterr()
        assert main(["evaluate", str(model), str(data), *sep]) == 0
        accuracy = flat_accuracy_score(y, predicted)
        assert f"token accuracy    {accuracy:.4f}" in capsys.readouterr().out
    assert main(["tag", str(model), str(data), "--format", "columns"]) == 0
    assert capsys.readouterr().out == "".join(
        "".join(f"{w}\t{t}\t{p}\n" for w, t, p in zip(*sentence)) + "\n"
        for sentence in zip(X, y, predicted))
    assert "tabs.txt, line 2: expected 3 columns (as on the first token line), found 2" in \
        _run_error(capsys, ["evaluate", str(model), str(data), "--sep", "whitespace"])
    assert "--sep needs column input (--format columns)" in _run_error(
        capsys, ["tag", str(model), str(data), "--sep", "tab"])
    conllu = tmp_path / "x.conllu"
    conllu.write_text("1\tHe\the\tPRON\tPRP\t_\t0\troot\t_\t_\n\n")
    assert "--sep applies to column files, not CoNLL-U" in _run_error(
        capsys, ["train", str(conllu), "--sep", "tab"])
    with pytest.raises(SystemExit):
        main(["train", str(data), "--sep", ""])
    assert "the separator must not be empty" in capsys.readouterr().err


def test_console_script_is_installed():
    script = shutil.which("sklearn-ssl-crf")
    if script is None:
        pytest.skip("the sklearn-ssl-crf script is not on PATH (package not pip-installed)")
    result = subprocess.run([script, "train", "--help"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "--method" in result.stdout


def test_demo_shows_the_unlabeled_gain(capsys):
    assert main([]) == 0  # the default command
    lines = capsys.readouterr().out.splitlines()
    rows = {line[:52].strip(): line[52:].split() for line in lines
            if line.startswith(("CRF", "Entropy", "SelfTraining"))}
    assert float(rows["CRF (labelled sentences only)"][2]) == 0.0
    # Clusters learned from the unlabelled sentences: a clear gain on this data.
    assert float(rows["CRF + WordClusters from the unlabelled sentences"][2]) > 3.0
    assert float(rows["EntropyRegularizedCRF + WordClusters"][2]) > 3.0


def test_tag_keeps_the_known_labels_of_a_column(corpus, trained, tmp_path, capsys):
    _, paths = corpus
    model_path, _ = trained
    model = load(model_path)
    assert model[-1].constraints_.scheme == "bio"  # the default, from the BIO labels
    X_test, y_test = read_columns(paths["test"], columns=[0, 1])
    rng = np.random.default_rng(0)
    known = [[label if rng.random() < 0.3 else None for label in labels]
             for labels in y_test]
    # The test file's columns, then the known labels ('_' where unknown).
    with_known = tmp_path / "known.txt"
    with_known.write_text("".join(
        "".join(f"{w} {w[:2]} {k or '_'}\n" for (w, _), k in zip(xs, ks)) + "\n"
        for xs, ks in zip(X_test, known)))
    capsys.readouterr()
    assert main(["tag", str(model_path), str(with_known), "--format", "columns",
                 "--known-column", "2"]) == 0
    sentences = [block.split("\n") for block in
                 capsys.readouterr().out.strip().split("\n\n")]
    tagged = [[line.split("\t")[3] for line in s] for s in sentences]
    assert tagged == model.predict(X_test, known_labels=known)
    assert all(t == k for ts, ks in zip(tagged, known) for t, k in zip(ts, ks) if k)

    bad = tmp_path / "bad_known.txt"
    bad.write_text("w1 w1 _\nw2 w2 B-ZZZ\n\n")
    assert main(["tag", str(model_path), str(bad), "--format", "columns",
                 "--known-column", "2"]) != 0
    assert "sentence 1, token 2: known label 'B-ZZZ'" in capsys.readouterr().err
    assert main(["tag", str(model_path), str(bad), "--known-column", "2"]) != 0
    assert "--known-column needs column input" in capsys.readouterr().err


def test_train_constraints_option(corpus, tmp_path, capsys):
    _, paths = corpus
    model_path = tmp_path / "free.model"
    assert main(["train", str(paths["train"]), "--c1", "0", "--c2", "0.1",
                 "--max-iterations", "10", "--constraints", "none", "--quiet",
                 "--model", str(model_path)]) == 0
    assert load(model_path)[-1].constraints_ is None


def test_pickle_models_are_loaded_only_when_trusted(corpus, tmp_path, capsys):
    _, paths = corpus
    pickled = tmp_path / "tagger.joblib"
    assert main(["train", str(paths["train"]), "--c1", "0", "--c2", "0.1",
                 "--max-iterations", "5", "--quiet", "--model", str(pickled)]) == 0
    assert "is a pickle: tag and evaluate load it only with --trusted" in \
        capsys.readouterr().err
    for command in ("tag", "evaluate"):
        assert main([command, str(pickled), str(paths["test"])]) != 0
        assert "is a pickle (joblib) file: loading it runs any code" in capsys.readouterr().err
    assert main(["tag", str(pickled), str(paths["test"]), "--format", "columns",
                 "--trusted"]) == 0
    assert main(["evaluate", str(pickled), str(paths["test"]), "--trusted"]) == 0


def test_train_resumes_from_its_checkpoint(corpus, tmp_path, capsys, monkeypatch):
    """Interrupted (Ctrl-C) mid-fit, ``train --checkpoint`` says where the checkpoints are
    and exits with 130; the same command then finishes with the model of a run never
    interrupted."""
    from sklearn_ssl_crf.parallel import ChunkedSequences

    folder, paths = corpus
    command = ["train", str(paths["train"]), "--unlabelled", str(paths["unlabeled"]),
               "--token-columns", "0", "--method", "entropy", "--cv", "2", "--c1", "0",
               "--max-iterations", "25", "--quiet"]
    assert main([*command, "--model", str(tmp_path / "reference.model")]) == 0
    reference = load(tmp_path / "reference.model")
    capsys.readouterr()

    calls = {"n": 0}
    original = ChunkedSequences.sum

    def interrupted(chunks, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 150:
            raise KeyboardInterrupt
        return original(chunks, *args, **kwargs)

    monkeypatch.setattr(ChunkedSequences, "sum", interrupted)
    checkpoint = tmp_path / "checkpoint"
    resumable = [*command, "--model", str(tmp_path / "model.model"),
                 "--checkpoint", str(checkpoint), "--checkpoint-every", "5"]
    assert main(resumable) == 130
    err = capsys.readouterr().err
    assert f"checkpoints in {checkpoint}" in err
    assert f"interrupted; the same command resumes from the checkpoints in {checkpoint}" in err
    assert not (tmp_path / "model.model").exists()
    assert len(list(checkpoint.glob("run-*.npz"))) > 1  # runs done before the interruption
    monkeypatch.undo()
    assert main(resumable) == 0
    model = load(tmp_path / "model.model")
    for name in ("state_weights_", "transition_weights_"):
        np.testing.assert_array_equal(getattr(model[-1], name), getattr(reference[-1], name))
    assert model[-1].best_params_ == reference[-1].best_params_


@pytest.mark.parametrize("options, message", [
    (["--method", "ngd", "--unlabelled", "{unlabeled}", "--token-columns", "0"],
     "--method ngd reads --unlabelled files through --gamma or --proportion-weight"),
    (["--method", "ngd", "--gamma", "0.1"],
     "--gamma and --proportion-weight weigh terms of --unlabelled files, and none were"),
    (["--method", "ngd", "--c1", "0.1"],
     "--c1 does nothing with --method ngd; it is for --method crf, entropy, jiao, "
     "self-training and graph-pr"),
    (["--method", "graph-pr", "--gamma", "0.1", "--unlabelled", "{unlabeled}",
      "--token-columns", "0"],
     "--gamma does nothing with --method graph-pr; it is for --method entropy, jiao and ngd"),
    (["--method", "crf", "--unlabelled", "{unlabeled}", "--token-columns", "0"],
     "--method crf is supervised: it reads --unlabelled files only to learn --clusters"),
    (["--max-rounds", "3"], "--max-rounds does nothing with --method crf"),
    (["--method", "entropy", "--batch-size", "8", "--unlabelled", "{unlabeled}",
      "--token-columns", "0"], "--batch-size does nothing with --method entropy"),
    (["--c1", "0", "--c2", "1", "--cv", "3"], "--cv does nothing here: this method chooses"),
    (["--dev", "{dev}", "--cv", "3"], "--cv does nothing here: the settings are chosen on"),
    (["--c1", "0", "--c2", "1", "--random-state", "3"], "--random-state does nothing here"),
    (["--unlabelled-format", "columns"], "--unlabelled-format does nothing without"),
    (["--checkpoint-every", "5"], "--checkpoint-every does nothing without --checkpoint"),
    (["--method", "ngd", "--n-jobs", "2"], "--n-jobs does nothing with --method ngd"),
    (["--selection-unlabelled", "50"], "--selection-unlabelled does nothing with --method "
     "crf; it is for --method entropy, jiao, self-training and graph-pr"),
    (["--method", "entropy", "--unlabelled", "{unlabeled}", "--token-columns", "0", "--dev",
      "{dev}", "--selection-unlabelled", "50"], "--selection-unlabelled does nothing with "
     "--dev"),
])
def test_train_refuses_options_the_method_would_ignore(corpus, tmp_path, capsys, options,
                                                        message):
    _, paths = corpus
    model = tmp_path / "never.model"
    argv = ["train", str(paths["train"]), "--model", str(model), "--quiet",
            *(option.format(**{k: str(v) for k, v in paths.items()}) for option in options)]
    assert message in _run_error(capsys, argv)
    assert not model.exists()


@pytest.mark.parametrize("method, value, expected", [
    ("self-training", "40", 40), ("self-training", "all", None),
    ("self-training", None, 10_000), ("graph-pr", None, 10_000), ("graph-pr", "all", None)])
def test_selection_unlabelled_reaches_the_estimator(corpus, tmp_path, method, value,
                                                     expected):
    _, paths = corpus
    model = tmp_path / "model.model"
    option = [] if value is None else ["--selection-unlabelled", value]
    own = (["--max-rounds", "1"] if method == "self-training"
           else ["--lam", "1", "--em-iterations", "1"])
    assert main(["train", str(paths["train"]), "--method", method, "--unlabelled",
                 str(paths["unlabeled"]), "--token-columns", "0", "--c1", "0", "--c2", "1",
                 *own, "--model", str(model), "--quiet", *option]) == 0
    assert load(model)[-1].selection_unlabeled == expected


@pytest.mark.parametrize("value", ["0", "-3", "some", "1.5"])
def test_a_bad_selection_unlabelled_is_a_usage_error(corpus, capsys, value):
    _, paths = corpus
    with pytest.raises(SystemExit) as stop:
        main(["train", str(paths["train"]), "--method", "entropy", "--unlabelled",
              str(paths["unlabeled"]), "--selection-unlabelled", value])
    assert stop.value.code == 2
    assert ("argument --selection-unlabelled: expected a positive number of sentences or "
            f"'all', got {value!r}") in capsys.readouterr().err


def test_ngd_with_a_weight_reads_the_unlabelled_files(corpus, capsys):
    _, paths = corpus
    assert main(["train", str(paths["train"]), "--method", "ngd", "--gamma", "0.1",
                 "--unlabelled", str(paths["unlabeled"]), "--token-columns", "0",
                 "--max-iterations", "2", "--quiet"]) == 0
    assert "60 labelled, 100 unlabelled" in capsys.readouterr().out


def test_unlabelled_columns_holding_the_label_get_the_option_that_fits(corpus, tmp_path,
                                                                        capsys):
    _, paths = corpus
    # The unlabelled file still has its label column: 3 columns against the tokens' 2.
    message = _run_error(capsys, ["train", str(paths["train"]), "--method", "entropy",
                                  "--unlabelled", str(paths["dev"]), "--unlabelled-format",
                                  "columns", "--quiet"])
    assert "if they still hold the label column, name the token columns of both files: " \
        "--token-columns 0 1" in message
    assert main(["train", str(paths["train"]), "--method", "entropy", "--unlabelled",
                 str(paths["dev"]), "--unlabelled-format", "columns", "--token-columns", "0",
                 "1", "--gamma", "0.1", "--proportion-weight", "0", "--c1", "0", "--c2",
                 "0.1", "--max-iterations", "5", "--quiet"]) == 0


def test_warnings_are_one_line_and_evaluate_names_the_labels_it_scores_zero(tmp_path,
                                                                            capsys):
    train = tmp_path / "pos.txt"
    train.write_text("a N\nb V\n\nb V\na N\n\n" * 10)
    test = tmp_path / "test.txt"
    test.write_text("a N\nb RARE\n\n")
    model = tmp_path / "pos.model"
    capsys.readouterr()
    assert main(["train", str(train), "--c1", "0", "--c2", "0.1", "--max-iterations", "2",
                 "--quiet", "--model", str(model)]) == 0
    assert capsys.readouterr().err == (
        "sklearn-ssl-crf train: warning: CRF stopped at its cap of 2 iterations before "
        "converging; raise max_iterations to let it run longer\n")
    assert main(["evaluate", str(model), str(test)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "labels never predicted (precision 0): RARE; predicted but absent from the file " \
        "(recall 0): V" in out


def test_tag_keeps_blank_lines_of_raw_text_as_empty_sentences(corpus, tmp_path, capsys):
    _, paths = corpus
    model = tmp_path / "words.model"
    assert main(["train", str(paths["train"]), "--token-columns", "0", "--c1", "0", "--c2",
                 "0.1", "--max-iterations", "20", "--model", str(model), "--quiet"]) == 0
    lines = ["w1 w2", "", "w3", "   ", "w4 w5"]
    raw = tmp_path / "raw.txt"
    raw.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["tag", str(model), str(raw), "--entropy"]) == 0
    blocks = capsys.readouterr().out.split("\n\n")
    assert blocks[-1] == "" and len(blocks) - 1 == len(lines)
    words = [[line.split("\t")[0] for line in block.splitlines()[1:]] for block in blocks[:-1]]
    assert words == [line.split() for line in lines]


def test_known_labels_the_constraints_forbid_name_the_file_and_sentence(corpus, trained,
                                                                        tmp_path, capsys):
    _, paths = corpus
    model, _ = trained
    known = tmp_path / "known.txt"
    known.write_text("w1 w1 _\nw2 w2 _\n\nw1 w1 O\nw2 w2 I-A\n\n")
    message = _run_error(capsys, ["tag", str(model), str(known), "--format", "columns",
                                  "--known-column", "2"])
    assert f"{known}: sentence 2: its known labels (column 2) leave no labelling that the " \
        "model allows under its BIO constraints" in message


def test_the_demo_is_described_as_it_runs():
    from sklearn_ssl_crf.cli import demo

    page = (Path(__file__).resolve().parents[1] / "docs" / "command_line.rst").read_text()
    described = page[page.index("The demo\n"):page.index("Training\n")]
    assert f"{demo.N_LABELLED} labelled, {demo.N_UNLABELLED:,} unlabelled, " \
        f"{demo.N_TEST:,} test" in described
    assert "no dev set" in described and "5-fold" in described
    assert "dev sentences" not in described

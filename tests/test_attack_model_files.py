"""Attacks on `load` (issue #40): crafted model files, in the package's format and in the
skops format of earlier releases, must be refused with a ValueError naming the file, run no
code, and stay within a memory cap (a regression fails in a child, not on the machine)."""

import json
import os
import struct
import zipfile
import zlib

import numpy as np
import pytest
from memory_cap import run_capped
from sklearn.pipeline import Pipeline

from sklearn_ssl_crf import CRF, WindowFeatures, load, save
from sklearn_ssl_crf.datasets import make_sequences

_FIXED = struct.Struct("<8sQQ")


@pytest.fixture(scope="module")
def genuine(tmp_path_factory):
    """A real model file (a pipeline of features and CRF) and its parts."""
    X, y = make_sequences(30, random_state=0)
    model = Pipeline([("features", WindowFeatures(window=1)),
                      ("crf", CRF(max_iterations=5))]).fit(X, y)
    path = tmp_path_factory.mktemp("genuine") / "genuine.model"
    save(model, path, info={"train": "train.txt"})
    return path, model, X


def parts(path):
    """The JSON document and the bytes after it of a model file."""
    data = path.read_bytes()
    _, length, _ = _FIXED.unpack_from(data)
    return json.loads(data[_FIXED.size:_FIXED.size + length]), data[_FIXED.size + length:]


def write_crafted(path, document, rest=b""):
    """A model file of ``document`` and ``rest``, with a correct checksum: what an
    attacker writes, as opposed to a damaged file."""
    text = json.dumps(document).encode()
    pad = b"\0" * (-(_FIXED.size + len(text)) % 64)
    body = text + pad + rest.lstrip(b"\0") if rest else text + pad
    path.write_bytes(_FIXED.pack(b"\x89sslcrf\n", len(text), zlib.crc32(body)) + body)
    return path


def craft(genuine, tmp_path, change, name="crafted.model"):
    """The genuine file with ``change(document)`` applied to its JSON."""
    document, rest = parts(genuine[0])
    change(document)
    return write_crafted(tmp_path / name, document, rest)


def crf_state(document):
    """The fitted CRF's state in a document of the genuine pipeline."""
    return document["model"]["state"]["steps"][1]["v"][1]["state"]


def test_crafted_files_keep_a_correct_checksum(genuine, tmp_path):
    # The oracle for the tests below: an unchanged crafted copy loads as the genuine file.
    path = craft(genuine, tmp_path, lambda document: None)
    assert load(path).predict(genuine[2]) == genuine[1].predict(genuine[2])


@pytest.mark.parametrize("class_name", ["os.system", "Path", "Tagger", "BaseCRF",
                                        "sklearn_ssl_crf.estimators._crf.CRF",
                                        "FunctionTransformer"])
def test_only_the_exact_table_of_classes_is_created(genuine, tmp_path, class_name):
    def change(document):
        crf_state(document)["vectorizer_"]["class"] = class_name
    with pytest.raises(ValueError, match=r"crafted.model is a damaged model file: .*"
                       r"class the format does not hold"):
        load(craft(genuine, tmp_path, change))


@pytest.mark.parametrize("node", [
    {"$": "function", "name": "system"},
    {"$": "function", "name": "make_sequence_scorer"},  # a function, but not a metric
    {"$": "pickle", "v": "cos\nsystem\n."},
    {"$": "object", "class": "CRF", "id": 0, "state": {}},  # an id taken
    {"$": "ref", "id": 99},
    {"$": "generator", "bit_generator": "RandomState", "state": {}},
    {"$": "sparse", "format": "coo", "shape": [2, 2]},
    {"$": "pairs", "k": [[1]], "v": [1]},  # an unhashable key
    {"$": "set", "v": [{"$": "dict", "v": {}}]},
])
def test_nodes_outside_the_format_are_refused(genuine, tmp_path, node):
    def change(document):
        crf_state(document)["training_log_"] = [node]
    with pytest.raises(ValueError, match="crafted.model is a damaged model file"):
        load(craft(genuine, tmp_path, change))


def test_a_crafted_file_runs_no_code(genuine, tmp_path):
    # Every name an attacker might use to reach os.system or a file write, in the model
    # and in info: none is looked up.
    marker = tmp_path / "code-ran"
    for class_name in ("sklearn_ssl_crf.utils._files.os",
                       "sklearn_ssl_crf.training._checkpoints.Path"):
        def change(document):
            document["info"] = {"$": "pairs", "k": [f"touch {marker}"],
                                "v": [{"$": "object", "class": class_name, "id": 7,
                                       "state": {}}]}
        with pytest.raises(ValueError, match="crafted.model is a damaged model file"):
            load(craft(genuine, tmp_path, change))
        assert not marker.exists()


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("version"), "no version"),
    (lambda d: d.update(version=7), "no version"),
    (lambda d: d.update(format="another format"), "not a sklearn_ssl_crf model file"),
    (lambda d: d.pop("model"), "damaged"),
    (lambda d: d.pop("arrays"), "no list of arrays"),
    (lambda d: d.update(info=[1, 2]), "info is not a dict"),
    (lambda d: d["arrays"][0].update(dtype="|O"), "no dtype of the format"),
    (lambda d: d["arrays"][0].update(dtype="<U8"), "no dtype of the format"),
    (lambda d: d["arrays"][0].update(shape=[-1]), "no valid shape"),
    (lambda d: d["arrays"][0].update(offset=8), "lies at bytes"),
])
def test_a_header_that_save_never_writes_is_refused(genuine, tmp_path, change, message):
    with pytest.raises(ValueError, match=f"crafted.model .*{message}"):
        load(craft(genuine, tmp_path, change))


@pytest.mark.parametrize("change, message", [
    (lambda s: s.update(classes_=s["classes_"] + ["EXTRA"]), "state_weights_ is not"),
    (lambda s: s.update(num_attributes_=10**12), "state_weights_ is not"),
    (lambda s: s.update(state_weights_=s["transition_weights_"]), "state_weights_ is not"),
    (lambda s: s.update(trigram_weights_=s["transition_weights_"]), "trigram_weights_"),
    (lambda s: s.update(classes_=[]), "has no classes"),
    (lambda s: s["vectorizer_"]["state"]["vocabulary_"]["v"].update(bias=10**9),
     "vocabulary does not number"),
    (lambda s: s.update(constraints_={"$": "object", "class": "LabelConstraints", "id": 50,
                                      "state": {"transitions": None, "starts": None,
                                                "ends": None}}), "constraints_"),
])
def test_weights_that_do_not_fit_the_model_are_refused(genuine, tmp_path, change, message):
    with pytest.raises(ValueError, match=f"crafted.model is a damaged model file: "
                       f"model.steps.1. .*{message}"):
        load(craft(genuine, tmp_path, lambda document: change(crf_state(document))))


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_are_refused(genuine, tmp_path, value):
    model = genuine[1]
    model[-1].transition_weights_[0, 1] += value
    try:
        save(model, tmp_path / "nan.model")
    finally:
        model[-1].transition_weights_[0, 1] = 0.0  # the fixture's model, restored
    with pytest.raises(ValueError, match="nan.model is a damaged model file: "
                       ".*transition_weights_ has non-finite weights"):
        load(tmp_path / "nan.model")


def test_a_declared_size_beyond_the_file_is_refused_within_a_memory_cap(genuine, tmp_path):
    # 16 GiB declared in a file of a few kB: refused before anything is allocated.
    def change(document):
        document["arrays"][0].update(shape=[2**31], dtype="<f8", nbytes=2**34)
    path = craft(genuine, tmp_path, change)
    outcome = run_capped(f"from sklearn_ssl_crf import load\nload({str(path)!r})\n",
                         extra_bytes=2**30)
    assert outcome["error"] == "ValueError", outcome
    assert "crafted.model" in outcome["message"] and "lies at bytes" in outcome["message"]


def test_one_array_referenced_many_times_is_one_array(tmp_path):
    # The skops bomb of the issue (one array read 32 times) cannot happen here: the file's
    # arrays are views of its bytes, however often the tree refers to them.
    X, y = make_sequences(10, features="dict", random_state=0)
    crf = CRF(max_iterations=2).fit(X, y)
    crf.training_log_ = [{"big": np.zeros(2**24)}]  # 128 MiB
    save(crf, tmp_path / "big.model")
    document, rest = parts(tmp_path / "big.model")
    big = document["model"]["state"]["training_log_"][0]["v"]["big"]
    document["model"]["state"]["training_log_"] = [big] * 32  # 4 GiB if copied
    path = write_crafted(tmp_path / "many.model", document, rest)
    outcome = run_capped(f"""
        from sklearn_ssl_crf import load
        model = load({str(path)!r})
        assert len({{id(entry) for entry in model.training_log_}}) == 1
        """, extra_bytes=2**29 + 2**28)
    assert outcome["error"] is None, outcome


def test_deeply_nested_json_is_refused(genuine, tmp_path):
    document, _ = parts(genuine[0])
    text = json.dumps(document, separators=(",", ":")).replace(
        '"info":{"$":"dict","v":{"train":"train.txt"}}',
        '"info":' + "[" * 100_000 + "]" * 100_000)
    assert "[[[[" in text
    path = tmp_path / "nested.model"
    body = text.encode() + b"\0" * (-(_FIXED.size + len(text)) % 64)
    path.write_bytes(_FIXED.pack(b"\x89sslcrf\n", len(text), zlib.crc32(body)) + body)
    with pytest.raises(ValueError, match="nested.model is a damaged model file"):
        load(path)


def test_a_json_length_beyond_the_file_is_refused(genuine, tmp_path):
    data = bytearray(genuine[0].read_bytes())
    struct.pack_into("<Q", data, 8, 2**62)
    path = tmp_path / "long.model"
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="long.model is a damaged model file"):
        load(path)


def test_what_is_not_a_regular_file_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo.model"
    os.mkfifo(fifo)
    # Opening a FIFO for reading would block forever with no writer: a capped child
    # with a timeout fails the test instead of hanging the suite.
    outcome = run_capped(f"""
        from sklearn_ssl_crf import load
        for path in ({str(fifo)!r}, "/dev/zero"):
            try:
                load(path)
            except ValueError as error:
                assert "is not a regular file" in str(error), error
            else:
                raise AssertionError(path)
        """, timeout=60)
    assert outcome["error"] is None, outcome
    with pytest.raises(IsADirectoryError, match="is a directory"):
        load(tmp_path)
    with pytest.raises(FileNotFoundError, match="missing.model: no such file"):
        load(tmp_path / "missing.model")


# -- the skops files of earlier releases ---------------------------------------------------


@pytest.fixture(scope="module")
def skops_file(genuine, tmp_path_factory):
    pytest.importorskip("skops", reason="the skops format needs the skops package")
    path = tmp_path_factory.mktemp("skops") / "genuine.skops"
    save(genuine[1][-1], path, info={"train": "train.txt"})
    return path


def rewrite_skops(source, target, change_schema=None, members=None):
    """A copy of the skops archive ``source`` with its schema changed and members replaced
    (``members``: name -> (bytes, compression))."""
    with zipfile.ZipFile(source) as archive:
        schema = json.loads(archive.read("schema.json"))
        contents = {name: archive.read(name) for name in archive.namelist()}
    if change_schema:
        change_schema(schema)
    contents["schema.json"] = json.dumps(schema).encode()
    with zipfile.ZipFile(target, "w") as archive:
        for name, data in contents.items():
            data, compression = (members or {}).get(name, (data, zipfile.ZIP_STORED))
            archive.writestr(name, data, compress_type=compression)
    return target


def os_system_key(command):
    """A skops node that resolves ``sklearn_ssl_crf.utils._files.os`` (the ``os`` module, by an
    attribute of a package module) and takes its ``system``: as a dict's key type, skops
    calls it on the key."""
    return {"__class__": "os", "__module__": "sklearn_ssl_crf.utils._files",
            "__loader__": "MethodNode", "__id__": 11,
            "content": {"func": "system", "obj": {
                "__class__": "os", "__module__": "sklearn_ssl_crf.utils._files",
                "__loader__": "TypeNode", "__id__": 12}}}


@pytest.mark.parametrize("where", ["info", "model"])
def test_a_crafted_skops_file_runs_no_command(skops_file, tmp_path, where):
    # The attack, hidden in the info or in the model of a genuine file: on
    # today's loader the shell command ran and load returned a working CRF.
    marker = tmp_path / "command-ran"

    def change(schema):
        content = schema["content"]
        target = (content["info"] if where == "info" else
                  content["model"]["content"]["content"]["training_log_"]["content"][0])
        key = f"touch {marker}"
        target["content"] = {key: next(iter(target["content"].values()))}
        target["key_types"]["content"][0] = os_system_key(key)
    path = rewrite_skops(skops_file, tmp_path / "evil.skops", change)
    with pytest.raises(ValueError, match=r"evil.skops needs types .*"
                       r"sklearn_ssl_crf.utils._files.os.system; refusing to load it"):
        load(path)
    assert not marker.exists()


def test_a_skops_header_without_version_is_refused_before_skops_reads_it(skops_file,
                                                                         tmp_path):
    path = rewrite_skops(skops_file, tmp_path / "bare.skops",
                         lambda schema: schema["content"].pop("version"))
    with pytest.raises(ValueError, match="bare.skops is not a sklearn_ssl_crf model file "
                       r"\(no version in its header\)"):
        load(path)


def test_a_skops_bomb_is_refused_within_a_memory_cap(skops_file, tmp_path):
    # One deflated array of 128 MiB of zeros (about 128 kB in the file) referred to by 32
    # nodes: skops would read it 32 times (4 GiB) before any check of its own.
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.zeros(2**24))
    with zipfile.ZipFile(skops_file) as archive:
        member = next(name for name in archive.namelist() if name.endswith(".npy"))

    def change(schema):
        log = schema["content"]["model"]["content"]["content"]["training_log_"]
        log["content"] = [{"__class__": "ndarray", "__module__": "numpy",
                           "__loader__": "NdArrayNode", "type": "numpy", "file": member,
                           "__id__": 1000 + i} for i in range(32)]
    path = rewrite_skops(skops_file, tmp_path / "bomb.skops", change,
                         {member: (buffer.getvalue(), zipfile.ZIP_DEFLATED)})
    assert path.stat().st_size < 2**20
    outcome = run_capped(f"from sklearn_ssl_crf import load\nload({str(path)!r})\n")
    assert outcome["error"] == "ValueError", outcome
    assert "bomb.skops" in outcome["message"] and "compressed" in outcome["message"]
    # Stored, not compressed, it is still read by 32 nodes: refused as well.
    path = rewrite_skops(skops_file, tmp_path / "shared.skops", change)
    with pytest.raises(ValueError, match="shared.skops .* read by more than one node"):
        load(path)


def test_a_skops_array_declaring_more_than_it_holds_is_refused(skops_file, tmp_path):
    with zipfile.ZipFile(skops_file) as archive:
        member = next(name for name in archive.namelist() if name.endswith(".npy"))
        data = archive.read(member)
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1))
    header["shape"] = (10**11,)
    import io

    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    path = rewrite_skops(skops_file, tmp_path / "huge.skops",
                         members={member: (buffer.getvalue() + data[-8:],
                                           zipfile.ZIP_STORED)})
    outcome = run_capped(f"from sklearn_ssl_crf import load\nload({str(path)!r})\n")
    assert outcome["error"] == "ValueError", outcome
    assert "huge.skops" in outcome["message"] and "declares an array" in outcome["message"]


def test_a_skops_model_with_nan_weights_is_refused(genuine, tmp_path):
    pytest.importorskip("skops", reason="the skops format needs the skops package")
    crf = genuine[1][-1]
    crf.state_weights_[3, 0] += np.nan
    try:
        save(crf, tmp_path / "nan.skops")
    finally:
        crf.state_weights_[3, 0] = 0.0
    with pytest.raises(ValueError, match="nan.skops is a damaged model file: "
                       ".*state_weights_ has non-finite weights"):
        load(tmp_path / "nan.skops")


# -- what save refuses ---------------------------------------------------------------------


class _UserFeaturizer:
    """A featurizer of the user's own (the usual sklearn-crfsuite pattern)."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return [[{"word": token} for token in sentence] for sentence in X]


@pytest.mark.parametrize("info", [{"train": __import__("pathlib").Path("train.txt")},
                                  {"scorer": lambda y: y}, {"weights": np.zeros(3)}])
def test_info_that_load_would_refuse_is_refused_before_the_file_is_touched(genuine,
                                                                          tmp_path, info):
    path = tmp_path / "kept.model"
    save(genuine[1], path)
    before = path.read_bytes()
    with pytest.raises(TypeError, match=r"info\['(train|scorer|weights)'\] is a .*: info "
                       "holds plain values"):
        save(genuine[1], path, info=info)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.model"]


def test_a_pipeline_with_user_code_is_refused_at_save_time_saying_how(genuine, tmp_path):
    X, y = make_sequences(10, random_state=0)
    pipeline = Pipeline([("features", _UserFeaturizer()),
                         ("crf", CRF(max_iterations=2))]).fit(X, y)
    with pytest.raises(TypeError, match=r"model.steps\[0\]\[1\] is a "
                       r"test_attack_model_files._UserFeaturizer, which a model file "
                       r"cannot hold: .*save\(pipeline\[-1\], path\).*\*.joblib"):
        save(pipeline, tmp_path / "pipeline.model")
    assert not list(tmp_path.iterdir())
    # The way the message gives: the estimator alone, and the pipeline rebuilt.
    save(pipeline[-1], tmp_path / "crf.model")
    rebuilt = Pipeline([("features", _UserFeaturizer()),
                        ("crf", load(tmp_path / "crf.model"))])
    assert rebuilt.predict(X) == pipeline.predict(X)


def test_skops_files_written_before_the_modules_moved_keep_loading(tmp_path):
    # A file of an earlier release names the classes by their modules then (issue #41
    # moved them): the same schema with those names loads to the same model.
    pytest.importorskip("skops", reason="the skops format needs the skops package")
    from sklearn_ssl_crf import CRFCV
    from sklearn_ssl_crf.model_files._skops import _MOVED

    X, y = make_sequences(12, random_state=0)
    model = Pipeline([("features", WindowFeatures(window=0, suffixes=(), word_shape=False)),
                      ("crf", CRFCV(c1=[0.0], c2=[0.1, 1.0], cv=2, max_iterations=10,
                                    constraints="bio"))]).fit(X, y)
    save(model, tmp_path / "now.skops")
    current = {}
    for old, name in _MOVED.items():
        cls = __import__("sklearn_ssl_crf").model_files._archive.CLASSES[name]
        current[(cls.__module__, cls.__qualname__)] = old.rsplit(".", 1)

    def back_in_time(schema):
        stack, renamed = [schema], 0
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                old = current.get((node.get("__module__"), node.get("__class__")))
                if old:
                    node["__module__"], node["__class__"] = old
                    renamed += 1
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
        assert renamed >= 3  # CRFCV, its constraints and its scorer
    old = rewrite_skops(tmp_path / "now.skops", tmp_path / "old.skops", back_in_time)
    assert b"sklearn_ssl_crf._crf_cv" in zipfile.ZipFile(old).read("schema.json")
    assert load(old).predict(X) == model.predict(X)


def test_an_estimator_holding_itself_loads_without_endless_recursion(genuine, tmp_path):
    """Filling a parameter the file lacks walks the estimators a file holds: a CRF whose
    parameter refers to itself (a ``ref`` to its own object) is walked once, and the
    missing parameter gets its default."""
    def change(document):
        state = crf_state(document)
        del state["linesearch"]
        state["class_weight"] = {"$": "ref", "id": document["model"]["state"]["steps"][1][
            "v"][1]["id"]}

    path = craft(genuine, tmp_path, change)
    loaded = load(path)
    assert loaded[-1].class_weight is loaded[-1]
    assert loaded[-1].linesearch is None


def test_a_long_chain_of_estimators_loads_without_recursion(genuine, tmp_path):
    """Estimators that hold each other as parameters, 5,000 deep through references: the
    walk that fills missing parameters takes them one after another, not by recursion."""
    def change(document):
        state = crf_state(document)
        chain = [{"$": "object", "class": "CRF", "id": 10_000, "state": {}}]
        chain += [{"$": "object", "class": "CRF", "id": 10_000 + k,
                   "state": {"class_weight": {"$": "ref", "id": 10_000 + k - 1}}}
                  for k in range(1, 5_000)]
        rest = dict(state)
        state.clear()
        state["chain_"] = chain  # decoded first: the references below point back to it
        state.update(rest, class_weight={"$": "ref", "id": 10_000 + 4_999})

    loaded = load(craft(genuine, tmp_path, change))
    link = loaded[-1].class_weight
    for _ in range(4_999):
        assert link.linesearch is None
        link = link.class_weight
    assert link.get_params()["class_weight"] is None

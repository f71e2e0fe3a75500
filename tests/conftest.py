"""Shared fixtures: where the real corpora live, and a skip when they are absent."""

import importlib.util
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data():
    """Path of ``../shared/data``; skips the test where the corpora are not installed."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real corpora not found at {SHARED_DATA} (only CI and developers have them)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def tutorial_features():
    """sklearn-crfsuite's tutorial features, ``sentence -> list of dicts`` for a sentence of
    CoNLL-2000 (word, POS) tuples (benchmarks/conll_features.py)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "conll_features.py"
    spec = importlib.util.spec_from_file_location("conll_features", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.sentence_features

"""Shared fixtures: where the real corpora live, and a skip when they are absent."""

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data():
    """Path of ``../shared/data``; skips the test where the corpora are not installed."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real corpora not found at {SHARED_DATA} (only CI and developers have them)")
    return SHARED_DATA

"""The documentation site builds without a single warning.

The build runs in fast mode (``-D plot_gallery=0``: the gallery's examples are rendered but
not executed) on a copy of ``docs/`` and ``examples/`` in pytest's temporary folder, because
autosummary and sphinx-gallery write generated pages into the source folder: nothing is
written into the repository. Needs the ``docs`` extra: ``pip install ".[docs]"``.
"""

import doctest
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# module -> distribution to install
DOCS_REQUIREMENTS = {
    "sphinx": "sphinx",
    "numpydoc": "numpydoc",
    "sphinx_gallery": "sphinx-gallery",
    "myst_parser": "myst-parser",
    "matplotlib": "matplotlib",
}

# Pages and files that the build generates in the source folder.
GENERATED = ("_build", "generated", "auto_examples", "sg_execution_times.rst", "__pycache__")


def _missing_requirements():
    return [dist for module, dist in DOCS_REQUIREMENTS.items()
            if importlib.util.find_spec(module) is None]


def test_docs_build_without_warnings(tmp_path):
    missing = _missing_requirements()
    if missing:
        pytest.skip(f"the documentation build needs {', '.join(missing)} "
                    f"(pip install \".[docs]\")")

    source = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", source, ignore=shutil.ignore_patterns(*GENERATED))
    # conf.py finds the gallery at ../examples
    shutil.copytree(ROOT / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("__pycache__"))

    # Document this source tree's package even where another copy is installed.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [
        sys.executable, "-m", "sphinx",
        "-W", "--keep-going",          # every warning is an error; report them all
        "-b", "html",
        "-D", "plot_gallery=0",
        "-d", str(tmp_path / "doctrees"),
        str(source), str(tmp_path / "html"),
    ]
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"the documentation build failed:\n{output[-6000:]}"
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line or
                "ERROR" in line]
    assert not warnings, "the documentation build warned:\n" + "\n".join(warnings)

    html = tmp_path / "html"
    for page in ("index.html", "api.html", "benchmarks.html", "auto_examples/index.html",
                 "user_guide/index.html", "generated/sklearn_ssl_crf.CRF.html"):
        assert (html / page).is_file(), f"{page} was not built"
    # the benchmark page's figures are copied with it
    assert (html / "_images" / "ngd_convergence.png").is_file()


USER_GUIDE = ROOT / "docs" / "user_guide"


@pytest.mark.parametrize("page", sorted(page.name for page in USER_GUIDE.glob("*.rst")
                                        if ">>>" in page.read_text(encoding="utf-8")))
def test_user_guide_examples_run(page):
    """The user guide's ``>>>`` examples give the output they show."""
    result = doctest.testfile(str(USER_GUIDE / page), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} example(s) of {page} failed (see above)"

"""Sphinx configuration of the sklearn_ssl_crf documentation.

Build the site (examples executed)::

    python -m sphinx -W -b html docs docs/_build/html

and without running the examples (seconds instead of minutes)::

    python -m sphinx -W -b html -D plot_gallery=0 docs docs/_build/html
"""

import sys
from pathlib import Path

# Document the package of this source tree, not another installed copy of it.
ROOT = Path(__file__).resolve().parents[1]
if (ROOT / "sklearn_ssl_crf" / "__init__.py").is_file():
    sys.path.insert(0, str(ROOT))

import sklearn_ssl_crf  # noqa: E402

project = "sklearn_ssl_crf"
author = "the sklearn_ssl_crf developers"
copyright = "the sklearn_ssl_crf developers"
release = sklearn_ssl_crf.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
# `name` in docstrings: a cross-reference where the name resolves, code otherwise.
default_role = "py:obj"

# -- API reference -----------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
# Module pages list what the module's __all__ lists, nothing else.
autosummary_ignore_module_all = False
autodoc_default_options = {"inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- Markdown (docs/benchmarks.md) -------------------------------------------------------------
# Anchors for headings down to ####, so the page's own "#section-title" links resolve.
myst_heading_anchors = 4

# -- Example gallery ---------------------------------------------------------------------------
# Scripts named plot_*.py are executed (unless -D plot_gallery=0); the others are shown only.
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"[\\/]plot_",
    "within_subsection_order": "FileNameSortKey",
    # "Examples using X" on the API pages (the minigallery directive of the class template)
    "doc_module": ("sklearn_ssl_crf",),
    "backreferences_dir": "generated/backreferences",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
}

# -- HTML --------------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"sklearn_ssl_crf {release}"
html_static_path = []
html_theme_options = {
    "description": "Semi-supervised linear-chain CRFs with a scikit-learn API",
    "fixed_sidebar": False,
    "page_width": "1100px",
    "sidebar_width": "230px",
}
html_show_sourcelink = False

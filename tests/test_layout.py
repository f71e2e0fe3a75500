"""The package's layout: each layer imports only the layers below it (features and data,
kernels, packed sequences, objective terms, optimisers, then the training path and the
estimators), so that the kernels know nothing of estimators; and no module much over 500
lines."""

import ast
from pathlib import Path

import sklearn_ssl_crf

PACKAGE = Path(sklearn_ssl_crf.__file__).parent

# What each subpackage may import from the rest of the package (top-level names: a
# subpackage or a top-level module).
ALLOWED = {
    "inference": set(),
    "optim": set(),
    "datasets": set(),
    "metrics": set(),
    "parallel": {"inference", "_memory", "_threads"},
    "objective": {"inference", "parallel"},
    "graph": {"_sequences", "_validation"},
    "features": {"datasets", "_sequences", "_tags", "_validation"},
}


def package_imports(source, parts):
    """The top-level names of the package that a module imports, given its ``source`` and
    the folders ``parts`` it sits in below the package."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = list(parts[:len(parts) - node.level + 1])
            target = base + (node.module.split(".") if node.module else [])
            names.update([target[0]] if target else [alias.name for alias in node.names])
        elif (node.module or "").startswith("sklearn_ssl_crf."):
            names.add(node.module.split(".")[1])
    return names


def test_each_layer_imports_only_the_layers_below_it():
    for subpackage, allowed in ALLOWED.items():
        for path in (PACKAGE / subpackage).rglob("*.py"):
            parts = path.relative_to(PACKAGE).parent.parts
            outside = package_imports(path.read_text(), parts) - {subpackage}
            assert outside <= allowed, (
                f"{path.relative_to(PACKAGE)} imports {sorted(outside - allowed)}")


def test_the_rule_reads_every_kind_of_import():
    # The oracle itself: what a kernel module would import, read correctly.
    source = ("from .._crf import CRF\nfrom . import chain\nfrom ..objective._weights import x"
              "\nfrom sklearn_ssl_crf.graph import knn_graph\nimport numpy\n")
    assert package_imports(source, ("inference",)) == {"_crf", "inference", "objective",
                                                       "graph"}


def test_no_module_is_much_over_500_lines():
    sizes = {path.relative_to(PACKAGE): len(path.read_text().splitlines())
             for path in PACKAGE.rglob("*.py")}
    assert {path: n for path, n in sizes.items() if n > 530} == {}

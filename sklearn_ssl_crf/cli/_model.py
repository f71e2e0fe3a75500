"""Model files as the command line writes them: features and estimator in a pipeline, with
the input layout they were trained on."""

from dataclasses import dataclass

from sklearn.pipeline import Pipeline

from ..model_files import load
from ._inputs import check_readable


@dataclass
class Tagger:
    features: object
    estimator: object
    token_columns: list
    info: dict


def load_tagger(path, trusted=False):
    """The parts of a model file written by ``train``, or a clear error for any other
    (``trusted``: a pickle file may be loaded)."""
    check_readable(path)
    model, info = load(path, return_info=True, trusted=trusted)
    if not (isinstance(model, Pipeline) and len(model.steps) == 2
            and "token_columns" in info):
        raise ValueError(f"{path} holds a {type(model).__name__}, not a tagger written by "
                         f"'sklearn-ssl-crf train'")
    return Tagger(model.steps[0][1], model.steps[1][1], list(info["token_columns"]), info)

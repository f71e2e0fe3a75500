"""`fixed`: an estimator with the settings it would choose for itself fixed, for tests of
its mechanics (objectives, EM, streaming, parallelism) rather than of selection."""

#: The values tests of mechanics use for the settings whose default is 'auto'.
FIXED = {"c1": 0.0, "c2": 1.0, "gamma": 0.1, "proportion_weight": 0.0, "lam": 1.0}


def fixed(estimator):
    """``estimator`` with each 'auto' setting at its `FIXED` value and no early stopping,
    so that ``fit`` is one training run, with no held-out data."""
    params = estimator.get_params(deep=False)
    changes = {name: value for name, value in FIXED.items() if params.get(name) == "auto"}
    if "early_stopping" in params:
        changes["early_stopping"] = False
    return estimator.set_params(**changes)

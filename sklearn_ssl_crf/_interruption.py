"""What a fit leaves behind when it fails or is interrupted (Ctrl-C): nothing."""

import functools

__all__ = ["unfitted_on_failure"]


def unfitted_on_failure(fit):
    """Decorate a ``fit`` (outside scikit-learn's ``_fit_context``) so that, when it raises
    (``KeyboardInterrupt`` included), the estimator is left unfitted: its fitted
    attributes (``name_``) and the private state its fits keep (the class's ``_fit_state``
    names) are removed, so that it is never half-written (a new vocabulary beside an
    earlier fit's weights), nor silently left with an earlier fit. Other private attributes
    (scikit-learn's callback contexts) are not the fit's: they stay."""

    @functools.wraps(fit)
    def guarded(estimator, *args, **kwargs):
        try:
            return fit(estimator, *args, **kwargs)
        except BaseException:
            state = getattr(type(estimator), "_fit_state", ())
            for name in [name for name in vars(estimator)
                         if (name.endswith("_") and not name.startswith("__"))
                         or name in state]:
                delattr(estimator, name)
            raise

    return guarded

"""The random generator of a fit."""

from sklearn.utils import check_random_state

__all__ = ["fit_random_state"]

#: The seed of ``random_state=None``.
DEFAULT_SEED = 0


def fit_random_state(random_state):
    """`sklearn.utils.check_random_state`, except that None is a fixed seed.

    A fit's random choices (the folds of selection, the order of stochastic steps) then
    give the same model at every call with the defaults, as CRFsuite's training does,
    whatever the state of NumPy's global generator: with it, two default fits could choose
    different settings (issue #42).

    Parameters
    ----------
    random_state : int, RandomState instance or None
        None: the seed `DEFAULT_SEED`; otherwise as `check_random_state`.

    Returns
    -------
    numpy.random.RandomState

    Examples
    --------
    >>> from sklearn_ssl_crf.utils import fit_random_state
    >>> fit_random_state(None).permutation(5).tolist() == fit_random_state(0).permutation(
    ...     5).tolist()
    True
    """
    return check_random_state(DEFAULT_SEED if random_state is None else random_state)

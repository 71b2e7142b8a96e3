"""The core count for op calls that do not give ``cores=`` (``torch.ops`` calls among them)."""
import threading

_lock = threading.Lock()
_cores = None  # None: each library's default (8 for a multicore library, else 1)


def _checked(n):
    if n is not None and not (isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 8):
        raise ValueError(f"set_cores({n!r}): 1 to 8, or None for each library's default")
    return n


def current():
    """The core count set by :func:`set_cores` (None: each library's default)."""
    return _cores


class set_cores:  # noqa: N801 - a function to its callers, a class to be a context manager
    """Sets the core count (1 to 8; None: each library's default) of every op call that
    does not give ``cores=``, ``torch.ops.NS.OP`` calls included, for the whole process.
    Used as a context manager, the previous count comes back at the end of the block::

        gpsimd_open.set_cores(4)            # from now on
        with gpsimd_open.set_cores(8):      # in this block
            y = torch.ops.my_ops.relu_forward(x)

    The setting is the process's, not a thread's: threads that set different counts at
    once see each other's.
    """

    def __init__(self, n):
        global _cores
        with _lock:
            self._previous = _cores
            _cores = _checked(n)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global _cores
        with _lock:
            _cores = self._previous
        return False

    def __repr__(self):
        return f"set_cores({_cores!r})"

"""Checking mode (``check=``): calls run again under other conditions to find what the
device would hide (output elements no core writes, elements two cores write, results that
depend on memory the kernel never wrote or on the core count). See the README's checks."""
import warnings

from . import _native

VARIABLE = "GPSIMD_OPEN_CHECK"


class CheckError(RuntimeError):
    """A checked call found something. ``findings`` lists them (dicts: check, kernel,
    cores, tensor, what, ranges, range_count, elements, message); ``result`` is the call's
    output all the same (None when it went to ``out=``); ``notes`` says what the checks
    could not see or make (texts); ``note_records`` the same as dicts (check, kind:
    "limit", "unseen" or "not-checked", text)."""

    def __init__(self, findings, notes, result):
        lines = [f["message"] for f in findings]
        super().__init__(f"the checks found {len(findings)} problem(s):\n  " + "\n  ".join(lines))
        self.findings = findings
        self.notes = [n["text"] for n in notes]
        self.note_records = notes
        self.result = result


class CheckWarning(UserWarning):
    """A finding of a call checked with ``check="warn"``."""


def resolve(check):
    """(check list for the engine, or None; warn instead of raising) for a ``check=``
    value: None (the ``GPSIMD_OPEN_CHECK`` environment variable, else no checks), True/False,
    "warn", a list such as "init,race" or "all", or "warn:LIST"."""
    if check is None:
        env = _native.environment()
        return env["check"], env["warn"]
    if check is True:
        return "default", False
    if check is False:
        return None, False
    if not isinstance(check, str):
        raise TypeError(f"check={check!r}: True, False, 'warn', a list such as 'init,race', or 'all'")
    warn = check == "warn" or check.startswith("warn:")
    if warn:
        check = check[5:] or "default"
    if check.strip() in ("0", "none", "off", "false"):
        return None, False
    return check, warn


_SAID = set()


def report(findings, notes, result, warn, as_result=None):
    """Raises (or warns about) what a checked call found; returns the call's result
    (``as_result(result)`` is the :class:`CheckError`'s, where given). A
    check asked for that could not run (``parity`` without the other build beside the
    library), and a race check on host cores, which cannot see reads (the Xtensa check
    does), are each a :class:`CheckWarning`, never passed over in silence."""
    for note in notes:
        text = note["text"]
        if note["kind"] == "unseen":
            # Said once a process: every checked call on these cores would repeat it.
            if text not in _SAID:
                _SAID.add(text)
                warnings.warn(text, CheckWarning, stacklevel=4)
        elif note["kind"] == "not-checked" and note["check"] == "parity":
            warnings.warn(text, CheckWarning, stacklevel=4)
    if not findings:
        return result
    if warn:
        for f in findings:
            warnings.warn(f["message"], CheckWarning, stacklevel=4)
        return result
    raise CheckError(findings, notes, as_result(result) if as_result else result)

"""The one place every protocol's readings pass (a judge's run, ``reparse`` and ``judge --check`` alike, through
``domain/modes.py``): what a protocol read is checked before anything stores it, and a plug-in's reading is
abandoned when it does not return.

A plug-in protocol (an entry point, or one registered in-process) is code tui-rater did not write. Its ``parse``
once returned 1e308 on a 1-10 question: the run said "6 of 6 readings usable", stored it, and ``report`` then failed
as "a bug in tui-rater"; a NaN was stored as NULL and counted usable. A value off the question's scale or not a
finite number is now the typed failure ``invalid_value``, naming the protocol; a plug-in's reading that has not
returned after ``PLUGIN_DEADLINE_S`` fails its job with a reason (``ProtocolFault``) and the judge stops.
"""

from __future__ import annotations

import numbers
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TypeVar

from tui_rater.domain.errors import UserError
from tui_rater.domain.protocols.base import DistributionReading, EvaluationProtocol, Reading
from tui_rater.domain.questions import Attribute

T = TypeVar("T")

# a reply is read in milliseconds (the built-in parsers: under 1 ms for a 64 KB reply); a reading still running
# after this long is one that will not end, whatever the machine's load
PLUGIN_DEADLINE_S = 10.0

_hung: dict[str, str] = {}  # protocol name -> why: a plug-in that hung once is not waited for again in this process
_hung_lock = threading.Lock()


class ProtocolFault(UserError):
    """A plug-in protocol's reading did not return in time: one sentence naming it (exit 2, as a plug-in that
    fails to load); in a judge's run its job fails with this reason and the judge stops."""


def is_plugin(protocol: EvaluationProtocol) -> bool:
    """Not one of tui-rater's own protocols (an entry point's, or one a script registered)."""
    return not type(protocol).__module__.startswith("tui_rater.")


def who(protocol: EvaluationProtocol) -> str:
    where = f" (a plug-in, {type(protocol).__module__}.{type(protocol).__qualname__})" if is_plugin(protocol) else ""
    return f"protocol {protocol.name!r}{where}"


def within_deadline(protocol: EvaluationProtocol, what: str, call: Callable[[], T]) -> T:
    """``call()``, for a plug-in in a thread that is abandoned (never joined again) after ``PLUGIN_DEADLINE_S``.
    tui-rater's own protocols are called directly: they are tested here, and a thread per reading costs."""
    if not is_plugin(protocol):
        return call()
    with _hung_lock:
        known = _hung.get(protocol.name)
    if known is not None:
        raise ProtocolFault(known)
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # handed to the caller, as if called directly
            box["error"] = exc

    thread = threading.Thread(target=run, name=f"tui-rater protocol {protocol.name}", daemon=True)
    thread.start()
    thread.join(PLUGIN_DEADLINE_S)
    if thread.is_alive():
        why = (
            f"{who(protocol)} did not return from {what} within {PLUGIN_DEADLINE_S:g} s (a reply is read in "
            "milliseconds); fix the plug-in or remove it, then run the same command again"
        )
        with _hung_lock:
            _hung[protocol.name] = why
        raise ProtocolFault(why)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]  # (an exception object, stored by ``run``)
    return box["result"]  # type: ignore[return-value]  # (what ``call`` returned)


def checked(protocol: EvaluationProtocol, attribute: Attribute, reading: Reading) -> Reading:
    """A reading whose value is off the question's scale, or not a finite number, is the typed failure
    ``invalid_value`` naming the protocol; the value is kept in ``details`` as text, never as a rating."""
    value = reading.value
    if value is None:
        return reading
    scale = protocol.value_scale(attribute)
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and scale.contains(float(value)):
        return reading
    said = f"{who(protocol)} read {repr(value)[:80]}, not a value on the question's scale ({scale.describe()})"
    return Reading(None, "invalid_value", {**reading.details, "invalid_value": said, "protocol": protocol.name})


def checked_distribution(
    protocol: EvaluationProtocol, attribute: Attribute, reading: DistributionReading
) -> DistributionReading:
    return replace(reading, samples=[checked(protocol, attribute, sample) for sample in reading.samples])


def counted(status: str, details: Mapping[str, object] | None) -> str:
    """How a run counts a reading in its summary: an ``invalid_value`` names its protocol there too
    ("6 invalid_value from protocol 'bracket-rating'"), so the line says whose bug it is."""
    if status == "invalid_value" and details and isinstance(details.get("protocol"), str):
        return f"invalid_value from protocol {details['protocol']!r}"
    return status

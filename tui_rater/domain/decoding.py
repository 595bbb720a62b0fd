"""How a judge samples: one value, defined once here with its defaults and what each setting means.

It travels whole: the config file's ``[judge]`` keys and the ``judge`` command's flags are derived from its fields
(``KNOBS``), a protocol's paper defaults replace some of them (``EvaluationProtocol.decoding``), the worker gives each
request a copy with that attempt's seed, the backends read it (the API body's sampling fields, ``Decoding.sent``;
the engine's sampler) and the stored provenance writes its fields flat, as before it was one object (a judge's
identity must not change with the code's shape). llama.cpp's server carries ``task_params.sampling`` the same way,
Inspect its ``GenerateConfig``. A new sampler setting is one field here plus the code that uses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from typing import Any

# seeds are handed to llama.cpp and to servers as unsigned 32-bit integers
MAX_SEED = 2**32 - 1


def knob(
    default: Any,
    doc: str,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    sent: bool = True,
    extension: bool = False,
) -> Any:
    """A decoding setting: its default, what it means (the flag's help), its range (the flag's and the config
    file's check), and whether each request to a model carries it (``sent``; ``samples`` is the worker's).

    ``extension``: a sampler setting OpenAI's own API does not take but llama.cpp's server, vLLM and SGLang do. It
    is sent with sampled requests only, left out for a server that refuses it (the rating says so), and written
    in a judge's stored record only when it is not its default: a judge recorded before the setting existed
    sampled with the default, and keeps its identity."""
    metadata = {"doc": doc, "low": low, "high": high, "low_open": low_open, "sent": sent, "extension": extension}
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class Decoding:
    """How a judge samples, unless the user says otherwise (the order is the positional one protocols use)."""

    # samples at most 100 and temperature at most 5: the limits a judge has always been held to (the flags and the
    # config file said 1000 and 100 while the judge refused more than these, naming a flag the user had not given)
    samples: int = knob(3, "samples per question (Chiang & Lee §3.2: three, as three annotators)", 1, 100, sent=False)
    temperature: float = knob(1.0, "sampling temperature; 0 is greedy", 0, 5)
    top_p: float = knob(0.9, "nucleus sampling p", 0, 1, low_open=True)
    max_tokens: int = knob(128, "reply length limit in tokens", 1, 1_000_000)
    seed: int = knob(
        0,
        "the judge's seed: each request's seed is derived from it, the judge's other settings and the request "
        "(item, question, presentation, sample, attempt), so a rerun draws the same replies in any order of jobs",
        0,
        MAX_SEED,
    )
    # the papers sample from the nucleus of the whole vocabulary; llama.cpp's server cuts to top-k 40 and min-p
    # 0.05 first unless told otherwise. Sampler order, as llama.cpp's: top-k, top-p, min-p, temperature.
    top_k: int = knob(
        0,
        "keep the k most probable tokens before top-p; 0 keeps the whole vocabulary, as the papers sample "
        "(llama.cpp's server would use 40)",
        0,
        1_000_000,
        extension=True,
    )
    min_p: float = knob(
        0.0,
        "after top-p, drop the tokens less probable than min-p times the most probable one; 0 drops none, as the "
        "papers sample (llama.cpp's server would use 0.05)",
        0,
        1,
        extension=True,
    )

    def given(self, settings: Mapping[str, Any]) -> Decoding:
        """These settings with the ones given replaced (None: not given)."""
        unknown = set(settings) - {knob.name for knob in fields(self)}
        if unknown:
            raise ValueError(f"not a decoding setting: {sorted(unknown)}")
        return replace(self, **{name: value for name, value in settings.items() if value is not None})

    def sent(self) -> dict[str, Any]:
        """The settings each request to a model carries, by field name (an OpenAI-compatible body's names)."""
        return {
            knob.name: getattr(self, knob.name)
            for knob in fields(self)
            if knob.metadata["sent"] and not knob.metadata["extension"]
        }

    def extensions(self) -> dict[str, Any]:
        """The sampler settings a sampled request carries to servers that take them (llama.cpp, vLLM, SGLang)."""
        return {knob.name: getattr(self, knob.name) for knob in fields(self) if knob.metadata["extension"]}

    def record(self) -> dict[str, Any]:
        """The fields as the stored provenance writes them (flat, by name); an extension at its default is left
        out, so that a judge's identity is what it was before that setting existed."""
        return {
            knob.name: getattr(self, knob.name)
            for knob in fields(self)
            if not (knob.metadata["extension"] and getattr(self, knob.name) == default_of(knob))
        }

    @classmethod
    def of_record(cls, config: Mapping[str, Any]) -> Decoding:
        """The settings a stored provenance holds; one written before a setting existed has its default."""
        return cls().given({knob.name: config.get(knob.name) for knob in fields(cls)})


# the settings, in order; code that derives flags, keys or checks from them takes the class (a test extends it)
KNOBS: tuple[Field[Any], ...] = tuple(fields(Decoding))


def flag_name(knob: Field[Any]) -> str:
    """``top_p`` -> ``--top-p``: the flag of a setting whose config key is its field name."""
    return "--" + knob.name.replace("_", "-")


def default_of(knob: Field[Any]) -> Any:
    assert knob.default is not MISSING
    return knob.default

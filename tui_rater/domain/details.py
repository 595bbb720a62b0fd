"""The keys of what a judge's rating stores in ``details`` (JSON), named once: the modes and protocols that write
them, reparse, the store's statements and the export that read them."""

from __future__ import annotations


class Details:
    """Keys of a judge rating's stored ``details`` (JSON) read by more than one module."""

    FINISH_REASON = "finish_reason"  # "length": the reply was cut by --max-tokens
    STRUCTURED = "structured"  # the reply is {"score": ...} JSON from a constrained request
    SEED = "seed"  # the request's (or the distribution pass's) seed
    MASS = "mass"  # next-token probability on the options (a distribution pass; constrained: before the grammar)
    RAW = "raw"  # a distribution pass: each option's probability as the model gave it
    DISTRIBUTION = "distribution"  # the same, renormalised over the options
    UNSCORED = "unscored"  # options the server gave no probability for
    UNSCORED_MASS_AT_MOST = "unscored_mass_at_most"
    TOP = "top5"  # the implicit score's top tokens (token, probability)
    P_YES = "p_yes"  # the implicit score: the probability of yes, and of no, among those top tokens
    P_NO = "p_no"
    EXPECTED = "expected"  # a distribution pass: the expected score (probability-weighted, in the item's terms)

"""Rater labels (``store/labels.py``): short, readable, and never the same for two raters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tui_rater.store.labels import assign_all
from tui_rater.store.study import Study

RUN = {"backend": "openai-compatible", "api_model": "m", "mode": "text"}


def test_the_same_judge_name_on_two_configurations_gives_two_labels(tmp_path):
    study = Study.open(tmp_path / "l.db")
    a = study.judge("a", {**RUN, "judge_name": "fast", "temperature": 0.0})
    b = study.judge("b", {**RUN, "judge_name": "fast", "temperature": 1.0})
    assert (a.label, b.label) == ("J1 fast", "J2 fast")
    assert study.judge("a", {**RUN, "judge_name": "fast", "temperature": 0.0}).label == "J1 fast"  # found again
    person = study.human("J3 m text")  # a person takes the next judge's label first ...
    assert person.label == "J3 m text"
    assert study.judge("c", {**RUN, "mode": "text", "seed": 3}).label == "J3 m text (2)"  # ... and keeps it
    assert len({r.label for r in study.raters()}) == len(study.raters()) == 4
    study.close()


names = st.text(alphabet="J1 2mtex(", min_size=1, max_size=12)
configs = st.one_of(
    st.none(),
    st.just({"imported_from": "x"}),
    st.builds(lambda m, n: {**RUN, "api_model": m, **({"judge_name": n} if n else {})}, names, st.none() | names),
)


@given(st.lists(st.tuples(names, st.sampled_from(["human", "llm"]), configs), max_size=12, unique_by=lambda r: r[0]))
def test_labels_are_unique_whatever_the_names(raters):
    found = assign_all([(i, name, kind, config) for i, (name, kind, config) in enumerate(raters)])
    assert len(set(found.values())) == len(raters)
    for i, (name, kind, config) in enumerate(raters):
        if kind == "human" or not config or "backend" not in config:
            assert found[i] == name  # a person, an imported judge: its own name
        else:
            assert found[i].startswith("J")

"""The HTML report's plots, drawn and measured (issue 22, item 11): no title, label or tick label leaves the
figure (a title was clipped, an axis label cut to "mans"), the suptitle overlaps no other text (a y-label
ran into it), and a convergence curve of a single point is not drawn (it sat alone on a 9.6-10.4 axis)."""

from __future__ import annotations

import numpy as np
import pytest

from tui_rater.stats import plots
from tui_rater.stats.figures import Confusion, Curve, Distribution, Paired, QuestionFigures

LONG = "a-judge-with-a-rather-long-label-name-x"  # 39 characters: within NAME_WIDTH, so shown whole
QUESTION = "how much did the story surprise you, all things considered"


def _check(figure) -> None:
    """Each panel's drawn texts (title, axis labels, tick labels, legend: its tight box) inside the figure, and
    the suptitle clear of every panel, measured on the drawn figure (Agg: the SVG's own layout)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    assert figure is not None
    FigureCanvasAgg(figure).draw()
    renderer = figure.canvas.get_renderer()
    frame = figure.bbox
    panels = [ax.get_tightbbox(renderer) for ax in figure.axes if ax.get_visible()]
    assert panels
    for box in panels:
        inside = box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1 and box.y1 <= frame.y1 + 1
        assert inside, f"a panel's text leaves the figure: {box} outside {frame.bounds}"
    for k, box in enumerate(panels):  # panels clear of each other (the figures laid out by hand too)
        assert not any(box.overlaps(other) for other in panels[k + 1 :]), "two panels' texts overlap"
    title = figure._suptitle
    if title is not None and title.get_text():
        top = title.get_window_extent(renderer)
        assert top.x0 >= frame.x0 - 1 and top.x1 <= frame.x1 + 1 and top.y1 <= frame.y1 + 1, "the suptitle is cut"
        assert not any(top.overlaps(box) for box in panels), "the suptitle runs into a panel's text"


POINTS = ["1", "2", "3", "4", "5"]
CHOICES = ["A: the first story is better", "B: the second one", "C: a tie", "D", "E: neither of them, really"]


def _question(judges: int, points: list[str] = POINTS) -> QuestionFigures:
    rng = np.random.default_rng(0)
    names = [f"{LONG[:-1]}{k}" for k in range(judges)]
    q = QuestionFigures(QUESTION, "ordinal", 1, 5, points)
    q.distributions = [Distribution(n, [int(c) for c in rng.integers(0, 9, 5)]) for n in ["humans", *names]]
    human = rng.integers(1, 6, 40).astype(float)
    q.scatters = [Paired(n, human, rng.integers(1, 6, 40).astype(float)) for n in names]
    q.confusions = [Confusion(n, rng.integers(0, 9, (5, 5))) for n in names]
    q.calibrations = [Paired(n, human, rng.uniform(1, 5, 40)) for n in names]
    return q


@pytest.mark.parametrize("judges", [1, 2, 4])
@pytest.mark.parametrize("points", [POINTS, CHOICES], ids=["numbers", "long names"])
def test_no_text_leaves_a_figure_or_runs_into_its_title(judges, points):
    q = _question(judges, points)
    for build in (plots.distributions_figure, plots.scatter_figure, plots.confusion_figure, plots.calibration_figure):
        _check(build(q))


def _curve(judge: str, system: str, ns: list[int]) -> Curve:
    curve = Curve(QUESTION, judge, system)
    for k, n in enumerate(ns):
        value = 0.5 + 0.1 * np.sin(k)
        curve.points[n] = {
            "winning_rate": value,
            "advantage_probability": value,
            "ppi_mean": 3 + value,
            "ppi_ci_low": 2.5 + value,
            "ppi_ci_high": 3.5 + value,
            "classical_mean": 3 + value,
            "classical_ci_low": 2.4 + value,
            "classical_ci_high": 3.6 + value,
        }
    return curve


def test_convergence_curves_fit_and_a_single_point_is_not_drawn():
    ns = [10, 20, 30, 40]
    _check(plots.verdict_curves_figure(QUESTION, [_curve(LONG, "all", ns)]))
    for systems in (1, 2, 5):  # one panel: its suptitle was as wide as three
        _check(plots.ppi_curves_figure(QUESTION, LONG, [_curve(LONG, f"system {s}", ns) for s in range(systems)]))
    assert plots.verdict_curves_figure(QUESTION, [_curve(LONG, "all", [10])]) is None
    assert plots.ppi_curves_figure(QUESTION, LONG, [_curve(LONG, "s", [10]), _curve(LONG, "t", [10])]) is None
    # a system with one point is left out of a figure that has others to draw
    figure = plots.ppi_curves_figure(QUESTION, LONG, [_curve(LONG, "s", [10]), _curve(LONG, "t", ns)])
    assert figure is not None and len([ax for ax in figure.axes if ax.get_visible()]) == 1
    low, high = figure.axes[0].get_xlim()
    assert low < 10 and high > 40


def test_fitted_wraps_to_the_width_and_keeps_an_escaped_dollar_whole():
    text = plots.label("dist $x$ " * 6)
    lines = plots.fitted(text, 2.0).split("\n")
    width = int(2.0 * 72 / (10 * plots.CHAR_WIDTH))
    assert len(lines) > 1 and all(len(line.replace(r"\$", "$")) <= width for line in lines)
    assert all(line.count("$") == line.count(r"\$") for line in lines)

"""``report --format html --out FILE`` through the real CLI: one self-contained file that parses, holds the
expected sections and plots (SVG images inlined as data), reaches for nothing on a network, and shows a
hostile rater name as text."""

from __future__ import annotations

import base64
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from tests.stats.ratings import insert
from tests.stats.simulated import likert_study
from tests.support import ROOT, run_cli_process

HOSTILE = '<script>alert("x")</script>'
# mathtext that would not parse, and markup: a plot shows the name literally
HOSTILE_JUDGE = "dist $\\undefined{x}$ <b>x</b>"


class Page(HTMLParser):
    """Every tag with its attributes, the text, the headings and the figure captions, as the browser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.headings: list[str] = []
        self.captions: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in ("meta", "img", "br", "link"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, f"</{tag}> closes <{self.open[-1] if self.open else None}>"
        self.open.pop()

    def handle_data(self, data):
        self.text.append(data)
        if self.open and self.open[-1] in ("h1", "h2", "h3"):
            self.headings.append(data)
        if self.open and self.open[-1] == "figcaption":
            self.captions.append(data)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("html")
    sim = likert_study(tmp / "html.db", attributes=("likability",), human_names=["h0", HOSTILE, "h2", "h3"])
    study = sim.open()
    key = {item.id: item.key for item in study.items("story")}
    # a distribution-mode judge: its expected score is stored with each pass
    rater = study.judge(HOSTILE_JUDGE, {"api_model": "dist", "mode": "distribution"})
    for i, item in enumerate(sim.ids):
        value = sim.judges["likability"]["close"][item]
        insert(
            study,
            key[item],
            "likability",
            rater.id,
            value,
            details={"mass": 0.9, "expected": value - 0.3 + i % 3 * 0.2},
        )
    study.close()
    out_file = tmp / "report.html"
    out = run_cli_process("report", "--db", sim.path, "--format", "html", "--out", out_file, timeout=300)
    assert out.returncode == 0, out.stderr
    text = out_file.read_text(encoding="utf-8")
    parsed = Page()
    parsed.feed(text)
    parsed.close()
    return text, parsed


def test_the_file_parses_and_closes_every_element(page):
    _, parsed = page
    assert parsed.open == []
    assert parsed.tags[0][0] == "html" and ("style", {}) in parsed.tags


def test_sections_and_plots(page):
    _, parsed = page
    for heading in ("Can the judge stand in for the raters?", "System scores, bias-corrected", "likability"):
        assert heading in parsed.headings
    captions = " ".join(parsed.captions)
    for expected in (
        "likability: the alt-test's ω and ρ",
        "likability · close: each system's prediction-powered mean",
        f"likability · {HOSTILE_JUDGE}: each system's",
        "likability: rating distributions per evaluator",
        "with the diagonal of agreement",
        "likability: confusion counts",
        "likability: calibration: the judge's expected score",
        "The alt-test's ω and ρ with their 95% item-bootstrap intervals",
        "Bias cards: each figure with its 95% item-bootstrap interval",
        "Agreement: each figure with its 95% item-bootstrap interval",
    ):
        assert expected in captions
    text = " ".join(parsed.text)
    assert "Can the judge replace the humans? Alternative annotator test" in text
    assert "Bias-corrected system means" in text and "Table 1" in text
    images = [attrs for tag, attrs in parsed.tags if tag == "img"]
    # 1 verdict curve, 4 PPI curves (one per judge), 4 per question, the error bars of ω / ρ and of the bias cards
    assert len(images) == len(parsed.captions) >= 11
    alts = [attrs["alt"] for attrs in images]
    assert len(set(alts)) == len(alts)  # each figure described, none "figure N"
    for alt in alts:
        assert alt.startswith(
            ("Two line charts", "Line charts", "Bar chart", "Scatter plot", "Heat map", "Calibration", "Dot plots")
        )
        assert "likability" in alt and len(alt) > 80
    assert any(HOSTILE_JUDGE in alt for alt in alts)  # a name from the data, as text (escaped in the file)
    # the agreement figures drawn with their intervals: the people's α and each judge's τ and weighted κ
    agreement = next(alt for alt in alts if "judge vs people: Kendall's τ:" in alt)
    interval = r"-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\]"
    assert re.search(r"the people's α \(ordinal\): likability · humans " + interval, agreement)
    assert re.search(r"Kendall's τ: likability · close " + interval, agreement)
    for attrs in images:
        prefix = "data:image/svg+xml;base64,"
        assert attrs["src"].startswith(prefix)
        svg = base64.b64decode(attrs["src"][len(prefix) :]).decode("utf-8")
        assert "<svg" in svg and "</svg>" in svg and "<script" not in svg.lower()


def test_offline_no_script_and_data_only_as_text(page):
    text, parsed = page
    assert "http" not in text  # no URL of any kind: no CDN, no font, no namespace
    assert not [tag for tag, _ in parsed.tags if tag in ("script", "link", "iframe", "object", "embed")]
    # the hostile name is text, escaped in the file
    assert any(HOSTILE in chunk for chunk in parsed.text) and any(HOSTILE_JUDGE in chunk for chunk in parsed.text)
    assert "<b>" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text and "<script" not in text
    # and never in an attribute: attributes hold only fixed strings and the images
    values = [value or "" for _, attrs in parsed.tags for value in attrs.values()]
    fixed = {"en", "utf-8", "viewport", "width=device-width, initial-scale=1", "meta", "empty", "caveats", "shaped"}
    alts = {attrs.get("alt") for tag, attrs in parsed.tags if tag == "img"}
    others = [v for v in values if not v.startswith("data:image/svg+xml;base64,") and v not in alts]
    assert set(others) <= fixed


def test_headless_formats_do_not_import_matplotlib(page, tmp_path):
    sim = likert_study(tmp_path / "light.db", humans=3, prompts=15, attributes=("likability",))
    code = (
        "import sys\n"
        "from tui_rater.cli import main\n"
        f"code = main(['report', '--db', {str(sim.path)!r}, '--format', 'json'])\n"
        "print('MATPLOTLIB' if 'matplotlib' in sys.modules else 'LIGHT', code, file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stderr.strip().endswith("LIGHT 0"), out.stderr


def test_html_to_stdout_when_no_file_is_given(tmp_path):
    sim = likert_study(tmp_path / "stdout.db", humans=1, prompts=6, attributes=("likability",))
    out = run_cli_process("report", "--db", sim.path, "--format", "html", timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("<!DOCTYPE html>") and out.stdout.rstrip().endswith("</html>")
    # one human: no verdict, said in the table
    assert "1 human rater rated this question; the alt-test needs at least 3" in out.stdout

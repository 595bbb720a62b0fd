"""Build the bundled sample data from HANNA (MIT) and hand-made titles.

Run from the repository root with the shared data beside it:

    python sample_data/build_samples.py ../shared/data/hanna

Sources (see sample_data/README.md):
- stories.csv: WritingPrompts prompts with the human-written story and Platypus2-70b's story
  from HANNA's ``hanna_llm_stories.csv`` (Chhun et al. 2022, MIT), truncated below 150 words
  at a sentence end as in Chiang & Lee App. B.3;
- hanna_items.csv / hanna_human_ratings.csv / hanna_llm_ratings.csv: the 96 human-written
  stories HANNA rated, with its three human raters' ratings on six criteria and Mistral-7B's
  (prompt 1) ratings, from ``hanna_metric_scores_llm.csv``;
- titles.csv: illustrative headlines written for this repository, with synonym substitutions
  in the styles of TextFooler, PWWS and BAE (made by hand, not by running the attacks).
"""

from __future__ import annotations

import ast
import csv
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
N_STORY_PROMPTS = 30
MAX_WORDS = 150
CRITERIA = {
    "RE": "relevance",
    "CH": "coherence",
    "EM": "empathy",
    "SU": "surprise",
    "EG": "engagement",
    "CX": "complexity",
}
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)]*\s+")


def truncate(text: str, max_words: int = MAX_WORDS) -> str:
    """Keep whole sentences while the fragment stays below ``max_words`` words."""
    text = re.sub(r"[ \t]+", " ", text.replace("\r", "")).strip()
    sentences, kept, words = [], [], 0
    pos = 0
    for match in _SENTENCE_END.finditer(text):
        sentences.append(text[pos : match.end()].strip())
        pos = match.end()
    if pos < len(text):
        sentences.append(text[pos:].strip())
    for sentence in sentences:
        n = len(sentence.split())
        if words + n >= max_words:
            break
        kept.append(sentence)
        words += n
    fragment = " ".join(kept).strip()
    return fragment if fragment and fragment[-1] in ".!?\"'”’)" else ""


def detokenize(text: str) -> str:
    """Undo WritingPrompts' tokenization ("you 're", "again !"), as Chiang & Lee App. B.3 did by hand."""
    text = text.replace("<newline>", " ")
    text = re.sub(r" (n't|'re|'s|'m|'ll|'ve|'d|’re|’s|’m|’ll|’ve|’d)\b", r"\1", text)
    text = re.sub(r" ([!?.,;:])", r"\1", text)
    return text


def clean_llm_story(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    # chat residue: a "Title:" line or a leading acknowledgement ("Sure! Here is a story ...")
    while lines and (
        lines[0].lower().startswith("title:") or re.match(r"^(sure|great|okay|of course)\b", lines[0], re.I)
    ):
        lines.pop(0)
    return " ".join(lines)


def build_stories(hanna: Path) -> list[dict]:
    rows = list(csv.DictReader(open(hanna / "hanna_llm_stories.csv", encoding="utf-8")))
    llm = [r for r in rows if r["Model"] == "Platypus2-70b"]
    out = []
    for _index, row in enumerate(llm):
        human = truncate(detokenize(row["Human"]))
        model = truncate(clean_llm_story(row["Story"]))
        if len(human.split()) < 40 or len(model.split()) < 40 or "Human:" in model:
            continue
        prompt = re.sub(r"^\[\s*WP\s*\]\s*", "", row["Prompt"].strip())
        n = len(out) // 2
        out.append({"id": f"s{n:02d}-human", "system": "human", "prompt": prompt, "story": human})
        out.append({"id": f"s{n:02d}-llm", "system": "Platypus2-70b", "prompt": prompt, "story": model})
        if len(out) >= 2 * N_STORY_PROMPTS:
            break
    return out


def build_hanna(hanna: Path) -> tuple[list[dict], list[dict], list[dict]]:
    stories = [r for r in csv.DictReader(open(hanna / "hanna_llm_stories.csv", encoding="utf-8"))][:96]
    scores = {r["Model"]: r for r in csv.DictReader(open(hanna / "hanna_metric_scores_llm.csv", encoding="utf-8"))}
    human = scores["Human"]
    items = [
        {"id": f"h{i:02d}", "system": "human", "prompt": s["Prompt"].strip(), "story": s["Human"].strip()}
        for i, s in enumerate(stories)
    ]
    human_ratings, llm_ratings = [], []
    for rater in (1, 2, 3):
        for code, name in CRITERIA.items():
            values = ast.literal_eval(human[f"Human {rater} {code}"])
            for i, value in enumerate(values):
                human_ratings.append(
                    {
                        "item": f"h{i:02d}",
                        "rater": f"hanna-human-{rater}",
                        "attribute": name,
                        "value": value,
                        "kind": "human",
                    }
                )
    for code, name in CRITERIA.items():
        for i, value in enumerate(ast.literal_eval(human[f"Mistral-7B {code} 1"])):
            # values outside 1-5 mark replies HANNA could not parse: left out
            if 1 <= value <= 5:
                llm_ratings.append(
                    {
                        "item": f"h{i:02d}",
                        "rater": "hanna-mistral-7b-p1",
                        "attribute": name,
                        "value": round(value, 6),
                        "kind": "llm",
                    }
                )
    return items, human_ratings, llm_ratings


# Illustrative AG-News-style headlines and hand-made substitutions in each attack's style:
# TextFooler (counter-fitted embedding neighbours, often odd), PWWS (WordNet synonyms),
# BAE (a masked LM's contextual replacements).
TITLES = [
    (
        "Oil prices climb as storms threaten Gulf output",
        {"climb": "scaling", "threaten": "menacing"},
        {"climb": "rise", "output": "production"},
        {"climb": "jump", "storms": "hurricanes"},
    ),
    (
        "Stocks fall after weak retail sales report",
        {"fall": "dip", "weak": "frail"},
        {"weak": "feeble", "report": "account"},
        {"fall": "slide", "retail": "holiday"},
    ),
    (
        "Tech giant unveils faster chip for laptops",
        {"unveils": "dissects", "faster": "speedier"},
        {"unveils": "reveals", "chip": "microchip"},
        {"unveils": "launches", "laptops": "phones"},
    ),
    (
        "Rebels seize town in eastern Congo",
        {"seize": "grabbing", "town": "burg"},
        {"seize": "capture", "town": "township"},
        {"seize": "attack", "eastern": "northern"},
    ),
    (
        "Champions League: United beat Lyon 2-1",
        {"beat": "thrashing", "Champions": "Winners"},
        {"beat": "defeat"},
        {"beat": "edge"},
    ),
    (
        "Airline cuts jobs to reduce costs",
        {"cuts": "slits", "reduce": "decreases"},
        {"cuts": "slashes", "costs": "expenses"},
        {"cuts": "adds", "jobs": "flights"},
    ),
    (
        "Scientists find water ice on distant moon",
        {"find": "unearth", "distant": "aloof"},
        {"find": "discover", "distant": "remote"},
        {"find": "detect", "distant": "icy"},
    ),
    (
        "Central bank holds interest rates steady",
        {"holds": "detains", "steady": "firmly"},
        {"holds": "keeps", "steady": "stable"},
        {"holds": "leaves", "steady": "unchanged"},
    ),
    (
        "Storm leaves thousands without power",
        {"leaves": "foliage", "thousands": "millions"},
        {"leaves": "departs", "power": "electricity"},
        {"leaves": "keeps", "Storm": "Blackout"},
    ),
    (
        "Software maker posts record quarterly profit",
        {"posts": "poles", "record": "disc"},
        {"posts": "reports", "profit": "net income"},
        {"posts": "misses", "record": "strong"},
    ),
    (
        "Election officials begin recount in Ohio",
        {"begin": "commencing", "recount": "narrate"},
        {"begin": "start", "officials": "functionaries"},
        {"begin": "halt", "Ohio": "Florida"},
    ),
    (
        "Injured striker to miss World Cup qualifier",
        {"Injured": "Harmed", "miss": "lady"},
        {"Injured": "Hurt", "miss": "skip"},
        {"Injured": "Veteran", "miss": "play"},
    ),
    (
        "Drug maker recalls painkiller over heart risk",
        {"recalls": "remembers", "risk": "jeopardy"},
        {"recalls": "withdraws", "risk": "danger"},
        {"recalls": "tests", "heart": "liver"},
    ),
    (
        "Peace talks resume between rival factions",
        {"resume": "curriculum", "rival": "competing"},
        {"resume": "restart", "rival": "opposing"},
        {"resume": "stall", "rival": "armed"},
    ),
    (
        "Search engine adds new email features",
        {"adds": "summing", "features": "traits"},
        {"adds": "introduces", "features": "functions"},
        {"adds": "drops", "email": "video"},
    ),
    (
        "Coach fired after losing season",
        {"fired": "burned", "losing": "misplacing"},
        {"fired": "dismissed", "losing": "failing"},
        {"fired": "hired", "losing": "winning"},
    ),
    (
        "Astronauts return safely from space station",
        {"return": "revenue", "safely": "securely"},
        {"return": "come back", "safely": "unharmed"},
        {"return": "launch", "safely": "early"},
    ),
    (
        "Factory orders rise more than expected",
        {"rise": "ascension", "expected": "awaited"},
        {"rise": "increase", "expected": "anticipated"},
        {"rise": "drop", "Factory": "Durable"},
    ),
    (
        "Wildfire forces evacuations in California",
        {"forces": "troops", "Wildfire": "Rampant"},
        {"forces": "compels", "evacuations": "exoduses"},
        {"forces": "prompts", "California": "Oregon"},
    ),
    (
        "Chip shortage slows car production",
        {"shortage": "scarcity", "slows": "lingers"},
        {"slows": "retards", "production": "output"},
        {"slows": "halts", "car": "phone"},
    ),
    (
        "President signs trade deal with Chile",
        {"signs": "indications", "deal": "hand"},
        {"signs": "inks", "deal": "agreement"},
        {"signs": "rejects", "Chile": "Peru"},
    ),
    (
        "Hackers steal data from credit card firm",
        {"steal": "swipe", "firm": "stiff"},
        {"steal": "pilfer", "firm": "company"},
        {"steal": "leak", "credit": "phone"},
    ),
    (
        "Tennis star withdraws from Open with injury",
        {"withdraws": "retreats", "star": "asterisk"},
        {"withdraws": "pulls out", "injury": "wound"},
        {"withdraws": "returns", "Tennis": "Golf"},
    ),
    (
        "Telecom merger wins regulatory approval",
        {"wins": "gains", "approval": "endorsement"},
        {"wins": "secures", "approval": "blessing"},
        {"wins": "awaits", "merger": "deal"},
    ),
    (
        "Researchers map genome of rice plant",
        {"map": "chart", "plant": "factory"},
        {"map": "sequence", "plant": "crop"},
        {"map": "decode", "rice": "wheat"},
    ),
    (
        "Flood waters recede in Bangladesh",
        {"recede": "ebb", "waters": "aqua"},
        {"recede": "retreat"},
        {"recede": "rise", "Bangladesh": "India"},
    ),
    (
        "Carmaker to build new plant in Mexico",
        {"build": "construct", "plant": "flora"},
        {"build": "erect", "plant": "factory"},
        {"build": "close", "Mexico": "Texas"},
    ),
    (
        "Phone maker sues rival over patents",
        {"sues": "prosecutes", "rival": "contender"},
        {"sues": "litigates", "rival": "competitor"},
        {"sues": "joins", "patents": "designs"},
    ),
    (
        "Rain delays final round of golf tournament",
        {"delays": "delayed", "final": "definitive"},
        {"delays": "postpones", "round": "circuit"},
        {"delays": "ends", "golf": "tennis"},
    ),
    (
        "Unemployment rate drops to four-year low",
        {"drops": "drips", "low": "shallow"},
        {"drops": "falls", "low": "minimum"},
        {"drops": "climbs", "Unemployment": "Inflation"},
    ),
    (
        "Space probe sends first images of comet",
        {"sends": "dispatching", "images": "portrayal"},
        {"sends": "transmits", "images": "pictures"},
        {"sends": "captures", "comet": "asteroid"},
    ),
    (
        "Protesters march against war in London",
        {"march": "mars", "against": "versus"},
        {"march": "parade", "war": "warfare"},
        {"march": "rally", "London": "Paris"},
    ),
    (
        "Retailer expects strong holiday sales",
        {"expects": "awaits", "strong": "vigorous"},
        {"expects": "anticipates", "strong": "robust"},
        {"expects": "reports", "holiday": "online"},
    ),
    (
        "Bird flu spreads to new region",
        {"spreads": "expanse", "region": "realm"},
        {"spreads": "propagates", "region": "area"},
        {"spreads": "returns", "Bird": "Swine"},
    ),
    (
        "Goalkeeper saves penalty to seal victory",
        {"saves": "economizes", "seal": "walrus"},
        {"saves": "stops", "victory": "win"},
        {"saves": "concedes", "seal": "secure"},
    ),
    (
        "Court blocks controversial mining project",
        {"blocks": "chunks", "controversial": "disputable"},
        {"blocks": "halts", "project": "undertaking"},
        {"blocks": "approves", "mining": "dam"},
    ),
    (
        "Web browser gains market share",
        {"gains": "earnings", "share": "portion"},
        {"gains": "wins", "share": "portion"},
        {"gains": "loses", "Web": "Mobile"},
    ),
    (
        "Hostages freed after tense standoff",
        {"freed": "liberated", "tense": "strained"},
        {"freed": "released", "standoff": "deadlock"},
        {"freed": "killed", "tense": "long"},
    ),
    (
        "Insurer raises premiums for drivers",
        {"raises": "elevates", "drivers": "motorists"},
        {"raises": "increases", "premiums": "fees"},
        {"raises": "cuts", "drivers": "homeowners"},
    ),
    (
        "Museum returns stolen painting to owner",
        {"returns": "yields", "stolen": "robbed"},
        {"returns": "restores", "painting": "picture"},
        {"returns": "buys", "owner": "family"},
    ),
    (
        "Swimmer breaks world record in relay",
        {"breaks": "smashes", "record": "recording"},
        {"breaks": "shatters"},
        {"breaks": "sets", "relay": "final"},
    ),
    (
        "Bank agrees to pay fine over fraud charges",
        {"agrees": "concurs", "fine": "nice"},
        {"agrees": "consents", "fine": "penalty"},
        {"agrees": "refuses", "fraud": "bribery"},
    ),
]


def substitute(title: str, swaps: dict[str, str]) -> str:
    words = title.split(" ")
    return " ".join(swaps.get(word, word) for word in words)


def build_titles() -> list[dict]:
    rows = []
    for n, (title, textfooler, pwws, bae) in enumerate(TITLES):
        rows.append({"id": f"t{n:02d}-benign", "system": "benign", "original": title, "attacked": title})
        for system, swaps in (("textfooler", textfooler), ("pwws", pwws), ("bae", bae)):
            attacked = substitute(title, swaps)
            assert attacked != title, (title, system)
            rows.append({"id": f"t{n:02d}-{system}", "system": system, "original": title, "attacked": attacked})
    return rows


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{path.name}: {len(rows)} rows")


def main(hanna: Path) -> None:
    write_csv(HERE / "stories.csv", build_stories(hanna))
    items, human_ratings, llm_ratings = build_hanna(hanna)
    write_csv(HERE / "hanna_items.csv", items)
    write_csv(HERE / "hanna_human_ratings.csv", human_ratings)
    write_csv(HERE / "hanna_llm_ratings.csv", llm_ratings)
    write_csv(HERE / "titles.csv", build_titles())


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/hanna"))

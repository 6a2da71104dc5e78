"""Writes a multi-document QA file in the Lost-in-the-Middle format (mdqa-capitals-<n>_docs.jsonl.gz, n from the
command line, 20 by default; 20 documents are ~900 tokens, 45 ~2K): made-up
countries, each record asking one country's capital over n short documents, every document giving some
country's capital among filler sentences, so the answer is found only by matching the country's name.
Deterministic (seed 0); 400 records, so the mdqa task's odd lines give 100 test and 100 validation records."""

import gzip
import json
import random
import sys

rng = random.Random(0)
SYLLABLES = ["ka", "lo", "mir", "ven", "dra", "su", "tel", "or", "bai", "nes", "qua", "rim", "zo", "pel", "an",
             "ul", "sha", "tor", "vi", "mek", "dun", "ry", "los", "fen"]
FILLER = ["Its rivers freeze for part of the year.", "Travellers arrive mostly by rail.",
          "The region is known for its woven textiles.", "Winters are long and summers are short.",
          "Its main exports are timber and salt.", "The old town keeps a stone bridge from an earlier age.",
          "Local markets open at dawn.", "The coast is lined with small fishing harbours."]


def name(parts: int) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(parts)).capitalize()


def document(country: str, capital: str) -> dict:
    sentences = rng.sample(FILLER, 3)
    sentences.insert(rng.randrange(4), f"The capital of {country} is {capital}.")
    return {"title": f"{country}", "text": " ".join(sentences)}


DOCUMENTS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
with gzip.open(f"mdqa-capitals-{DOCUMENTS}_docs.jsonl.gz", "wt") as fh:
    for _ in range(400):
        pairs = {}
        while len(pairs) < DOCUMENTS:
            pairs.setdefault(name(3), name(2))
        countries = list(pairs)
        asked = countries[0]
        ctxs = [document(c, pairs[c]) | {"isgold": c == asked} for c in countries]
        rng.shuffle(ctxs)
        fh.write(json.dumps({"question": f"What is the capital of {asked}?", "answers": [pairs[asked]],
                             "ctxs": ctxs}) + "\n")

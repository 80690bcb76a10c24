"""Benchmark: offline language detectors on labelled samples (analyzer.synthetic), by accuracy and speed.
Prints figures; asserts nothing.

    python -m bench.language_detectors                 # 40 samples per language (360), each detector
    python -m bench.language_detectors --per-language 100 --repeat 3

Candidates: py3langid, lingua-language-detector (high- and low-accuracy mode), langdetect; only the
winner is in requirements.txt, so the others are skipped when not installed
(`pip install lingua-language-detector langdetect` to compare). The last row is the analyzer's own
wrapper (analyzer.language), which is what `manage.py analyze` runs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable

from analyzer.synthetic import LANGUAGES, LENGTHS, Sample, language_samples

Detect = Callable[[str], str]


def _py3langid() -> Detect:
    import py3langid as langid

    langid.classify("warm up")  # loads the model

    def detect(text: str) -> str:
        return langid.classify(text)[0]

    return detect


def _lingua(low_accuracy: bool) -> Callable[[], Detect]:
    def build() -> Detect:
        from lingua import LanguageDetectorBuilder

        builder = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models()
        if low_accuracy:
            builder = builder.with_low_accuracy_mode()
        detector = builder.build()

        def detect(text: str) -> str:
            lang = detector.detect_language_of(text)
            return lang.iso_code_639_1.name.lower() if lang is not None else ""

        return detect

    return build


def _langdetect() -> Detect:
    from langdetect import DetectorFactory, LangDetectException
    from langdetect import detect as ld_detect

    DetectorFactory.seed = 0  # langdetect is random unless seeded

    def detect(text: str) -> str:
        try:
            return ld_detect(text).split("-")[0]  # zh-cn / zh-tw -> zh
        except LangDetectException:
            return ""

    return detect


def _ours() -> Detect:
    from analyzer.language import detect_language

    detect_language("warm up")  # loads the model
    return detect_language


CANDIDATES: dict[str, Callable[[], Detect]] = {
    "py3langid": _py3langid,
    "lingua (high accuracy)": _lingua(False),
    "lingua (low accuracy)": _lingua(True),
    "langdetect": _langdetect,
    "analyzer.language (chosen)": _ours,
}


def measure(name: str, build: Callable[[], Detect], samples: list[Sample], repeat: int) -> dict | None:
    try:
        t0 = time.perf_counter()
        detect = build()
        load_s = time.perf_counter() - t0
    except ImportError as exc:
        print(f"{name:<28} not installed ({exc.name})")
        return None
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        guesses = [detect(s.text) for s in samples]
        runs.append(time.perf_counter() - t0)
    right: Counter[str] = Counter()
    by_length: Counter[str] = Counter()
    confusions: dict[str, Counter[str]] = defaultdict(Counter)
    for sample, guess in zip(samples, guesses, strict=True):
        if guess == sample.language:
            right[sample.language] += 1
            by_length[sample.length] += 1
        else:
            confusions[sample.language][guess or "?"] += 1
    seconds = statistics.median(runs)
    chars = sum(len(s.text) for s in samples)
    return {
        "name": name,
        "load_s": load_s,
        "accuracy": sum(right.values()) / len(samples),
        "per_language": {lang: right[lang] / sum(s.language == lang for s in samples) for lang in LANGUAGES},
        "per_length": {k: by_length[k] / sum(s.length == k for s in samples) for k in LENGTHS},
        "samples_per_s": len(samples) / seconds,
        "chars_per_s": chars / seconds,
        "confusions": {lang: dict(c.most_common(3)) for lang, c in confusions.items()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-language", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3, help="Timed runs per detector (median reported)")
    args = parser.parse_args(argv)
    samples = language_samples(args.per_language)
    lengths = ", ".join(f"{k} {statistics.median(len(s.text) for s in samples if s.length == k):.0f}" for k in LENGTHS)
    print(
        f"{len(samples)} samples, {args.per_language} per language ({', '.join(LANGUAGES)}); "
        f"median characters by length: {lengths}\n"
    )
    by_length = " ".join(f"{k:>6}" for k in LENGTHS)
    header = f"{'detector':<28} {'accuracy':>8} {by_length} {'samples/s':>10} {'load s':>7}"
    print(header + "  " + " ".join(f"{lang:>4}" for lang in LANGUAGES))
    results = []
    for name, build in CANDIDATES.items():
        r = measure(name, build, samples, args.repeat)
        if r is None:
            continue
        results.append(r)
        per_len = " ".join(f"{r['per_length'][k]:6.1%}" for k in LENGTHS)
        per_lang = " ".join(f"{r['per_language'][lang]:4.0%}" for lang in LANGUAGES)
        print(f"{name:<28} {r['accuracy']:8.1%} {per_len} {r['samples_per_s']:10,.0f} {r['load_s']:7.2f}  {per_lang}")
    print("\nmistakes (true language: guesses):")
    for r in results:
        wrong = "; ".join(f"{lang}: {c}" for lang, c in r["confusions"].items()) or "none"
        print(f"  {r['name']:<28} {wrong}")


if __name__ == "__main__":
    main()

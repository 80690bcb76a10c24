"""The language of a page: visible text out of HTML, then py3langid (pure; no Django).

py3langid was chosen by measurement (bench/language_detectors.py): on the labelled samples of
analyzer.synthetic it is as accurate as lingua's high-accuracy mode on sentences and longer text,
a little worse on two- or three-word snippets, about seven times faster, and loads in a second
instead of fifteen with a fraction of lingua's memory. langdetect was both slower and less accurate.

Codes are ISO 639-1 where one exists ("ko", "en", "ja", "zh"); "" means no language could be told
(no text, or too little of it).
"""

from __future__ import annotations

import html
import re
import threading

__all__ = ["detect_language", "language_name", "visible_text"]

# The detector sees at most this much text: a page's language shows in its first few thousand
# characters, and the cost of detection grows with the length.
MAX_TEXT = 3000
# Fewer letters than this is no evidence of any language ("", "2024", "| · |").
MIN_LETTERS = 3

# Varieties the model keeps apart that a report groups under one language (their macrolanguage).
_MACRO = {"wuu": "zh", "yue": "zh", "arz": "ar", "ary": "ar", "uzs": "uz", "nn": "no"}
_NO_LANGUAGE = {"zxx", "und"}

# Blocks whose text a reader never sees, then tags, then runs of white space.
_INVISIBLE_RE = re.compile(
    r"<!--.*?-->|<(script|style|noscript|template|svg|math)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL
)
_TAG_RE = re.compile(r"<[^>]*>")
_SPACE_RE = re.compile(r"\s+")
_LETTER_RE = re.compile(r"[^\W\d_]")
_HANGUL_RE = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")

# English names of the languages a crawl mostly holds; other codes are shown as they are.
LANGUAGE_NAMES = {
    "": "unknown", "ko": "Korean", "en": "English", "ja": "Japanese", "zh": "Chinese", "de": "German",
    "fr": "French", "es": "Spanish", "pt": "Portuguese", "ru": "Russian", "it": "Italian", "nl": "Dutch",
    "vi": "Vietnamese", "th": "Thai", "id": "Indonesian", "ms": "Malay", "ar": "Arabic", "hi": "Hindi",
    "tr": "Turkish", "pl": "Polish", "uk": "Ukrainian", "sv": "Swedish", "mn": "Mongolian", "la": "Latin",
}

_lock = threading.Lock()
_identifier = None


def visible_text(markup: str, *, limit: int = MAX_TEXT) -> str:
    """The text a reader sees, roughly: comments, scripts and styles dropped, tags removed, entities
    decoded, white space collapsed; cut to `limit` characters. Never raises on broken markup."""
    text = _INVISIBLE_RE.sub(" ", markup)
    text = _TAG_RE.sub(" ", text)
    # Collapse before unescaping, so "&lt;b&gt;" shown on a page stays text, and cut with room to spare.
    text = _SPACE_RE.sub(" ", text)[: limit * 2]
    return _SPACE_RE.sub(" ", html.unescape(text)).strip()[:limit]


def _model():
    global _identifier
    if _identifier is None:
        with _lock:  # the dashboard's threads and a worker's may ask at once; load the model once
            if _identifier is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                _identifier = LanguageIdentifier.from_model_file(MODEL_FILE)
    return _identifier


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


def detect_language(text: str) -> str:
    """ISO 639-1 code of the language of `text`, or "" when there is too little text to tell."""
    text = text[:MAX_TEXT]
    letters = len(_LETTER_RE.findall(text))
    if letters < MIN_LETTERS:
        return ""
    # Hangul is written for Korean alone: text mostly in Hangul needs no statistics. Korean crawls are
    # mostly Korean, so this saves most of the detector's time there.
    if len(_HANGUL_RE.findall(text)) * 2 >= letters:
        return "ko"
    code, _ = _model().classify(text)
    if code in _NO_LANGUAGE:
        return ""
    return _MACRO.get(code, code)

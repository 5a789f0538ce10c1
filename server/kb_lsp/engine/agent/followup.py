"""Whether a question in a conversation follows up the one before it.

A question is searched on its own: people ask unrelated things one after another in one
chat ("What is the cut-off for Mexico payments?", then "When are deploys frozen?"), and a
search of both questions together finds the first topic's passages again. Only a question
that refers back is joined to the topic before it:

* it opens as a continuation: "and for Brazil?", "what about Peru?", "how about it",
  "also …", "same for …", "tell me more";
* it has a pronoun or a pointing word ("it", "that", "those", "they", "this one") and few
  content words of its own: "is it the same on weekends?", "who approves that?" — a
  question with its own subject ("what happens to my payment if it is late?") is not;
* it is short and none of its content words is in the notes' vocabulary: "why?",
  "really?", "explain more simply".

A follow-up is searched together with the topic of the conversation (the question that
started it, `Topic`), and its quotes are chosen for both together. Each decision is said
as a step, so the user sees which question was searched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kb_lsp.engine.agent import grounding
from kb_lsp.engine.terms import STOPWORDS, WORD

_OPENER = re.compile(
    r"^\s*(?:and|also|or|but|plus|what about|how about|same (?:for|with|in)|"
    r"what else|anything else|tell me more|more (?:on|about)|in that case|if so|otherwise|"
    r"instead)\b",
    re.I,
)
# Pronouns that point back at something said before, wherever they stand.
_PRONOUNS = frozenset(
    ["it", "its", "itself", "they", "them", "their", "theirs", "he", "she", "him", "her",
     "former", "latter"]
)  # fmt: skip
# Words that point back only when nothing of their own follows: "is that so?", "who
# approves that?" — not "a command that lists files", "this function".
_DEMONSTRATIVES = frozenset(["this", "that", "these", "those"])
# A pointing question with more content words than this has a subject of its own ("is it
# safe to deploy on a Friday?").
POINTING_CONTENT_TERMS = 2
# A question of at most this many words, none of them in the notes, is about the answer
# before ("why?", "explain more simply").
SHORT_WORDS = 4


class Vocabulary(Protocol):
    """The notes' full-text vocabulary (`KnowledgeBase.term_counts`, `store.reader.TextReader`)."""

    def term_counts(self, terms: Sequence[str]) -> dict[str, int]: ...


@dataclass(frozen=True)
class Decision:
    follow_up: bool
    why: str  # what made it one ("it opens with “and”"), or "" when it is not


def _pointing(words: Sequence[str]) -> list[str]:
    """The words of a question that point back (see `_PRONOUNS`, `_DEMONSTRATIVES`)."""
    found: list[str] = []
    for i, word in enumerate(words):
        after = words[i + 1] if i + 1 < len(words) else ""
        if word in _PRONOUNS or (word in _DEMONSTRATIVES and (not after or after in STOPWORDS)):
            found.append(word)
    return found


def _known(terms: Sequence[str], vocabularies: Sequence[Vocabulary]) -> bool:
    wanted = sorted(set(terms))
    return any(
        docs > 0 for vocabulary in vocabularies for docs in vocabulary.term_counts(wanted).values()
    )


def decide(question: str, vocabularies: Sequence[Vocabulary] = ()) -> Decision:
    """Whether `question`, asked after another one, follows it up (see the module
    docstring); `vocabularies` are the notes' (none: the short rule is not used)."""
    opener = _OPENER.match(question)
    if opener:
        return Decision(True, f"it opens with “{opener.group(0).strip()}”")
    words = [w.lower() for w in WORD.findall(question)]
    content = grounding.terms(question)  # stemmed as the index stems, no stopwords
    pointing = _pointing(words)
    if pointing and len(content) <= POINTING_CONTENT_TERMS:
        return Decision(True, f"“{pointing[0]}” points back and it names little else")
    if len(words) <= SHORT_WORDS and vocabularies and not _known(content, vocabularies):
        return Decision(True, "it is short and names nothing in the notes")
    if not content:
        return Decision(True, "it names nothing of its own")
    return Decision(False, "")


@dataclass(frozen=True)
class Topic:
    """What a turn was searched for: its own question, or — for a follow-up — the
    question that started the topic, then the follow-up."""

    root: str  # the question that started the topic
    searched: str  # what was searched: `root`, or `root` and the follow-up

    @classmethod
    def own(cls, question: str) -> Topic:
        return cls(question, question)

    @property
    def joined(self) -> bool:
        """Whether this is a follow-up's topic (searched with the question before it)."""
        return self.searched != self.root

    def followed(self, question: str) -> Topic:
        """The topic of a follow-up to this one: the same root, joined with it."""
        return Topic(self.root, f"{self.root}\n{question}")

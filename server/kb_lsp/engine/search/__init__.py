"""Hybrid retrieval: vector neighbours + FTS5 BM25 + file-name/title match, per file.

How a query becomes the numbered list:

1. Candidates: the nearest chunks by cosine similarity (Chroma) and the best chunks by
   BM25 (FTS5 over path, title, heading and text), from every root.
2. Every candidate chunk gets absolute signals — its exact cosine similarity to the query
   (from the stored vector, so a keyword-only candidate has one too), the share of the
   query's words it contains (with its heading, title and file name), and its ranks in
   both lists — fused into one score in [0, 1] (`Fusion`). Absolute signals, unlike rank
   fusion alone, let a threshold say "nothing here is relevant": a query about something
   the notes do not contain returns few or no files instead of the nearest junk.
3. Files are scored by their best chunk plus how well the query names the file
   (file name and title); files below the threshold are dropped; the rest are numbered.

The label says what a reader takes it to mean: `filename match` when the query's words
(all of them, or at least two and half) are in the file's path — its file or folder
names — else `context match`; a title or heading holding the query ranks the file high
but is a context match. Snippets are plain text from `snippets.py`, starting at the
sentence with the most query words; `marks` are the words in them worth highlighting.
The weights and the default threshold were chosen with `python -m bench quality` on the
FastAPI docs query set (see docs/search.md).

The package: `weights` (the fusion), `candidates` (sources, candidates, batched reads),
`names` (how a query names a file), `scoring`, `snippet`, `hits`, `searcher`.
"""

from kb_lsp.engine.search import weights
from kb_lsp.engine.search.candidates import SearchSource, TermStats
from kb_lsp.engine.search.searcher import Searcher
from kb_lsp.engine.search.snippet import make_snippet, snippet_marks
from kb_lsp.engine.search.weights import DEFAULT_FUSION, FILENAME_MATCH, Fusion
from kb_lsp.engine.terms import FILE_WORDS, STOPWORDS, fts_query, query_terms, query_words

__all__ = [
    "DEFAULT_FUSION",
    "FILENAME_MATCH",
    "FILE_WORDS",
    "STOPWORDS",
    "Fusion",
    "SearchSource",
    "Searcher",
    "TermStats",
    "fts_query",
    "make_snippet",
    "query_terms",
    "query_words",
    "snippet_marks",
    "weights",
]

"""How the `kb` command line speaks to a terminal (`cli/` is the commands).

* `progress.py` — a sync's progress on stderr: a bar redrawn in place on a terminal, a
  plain line every few seconds elsewhere (CI logs, pipes), with the recent rate and the
  time left;
* `words.py` — messages in a terminal user's words: each setting named with the
  environment variable or flag that sets it from the command line;
* `text.py` — text made safe for a terminal: every control character shown as an escape,
  `out` and `err` the command line's only writers, `--json` with C1 escaped too;
* `logs.py` — what of the engine's log reaches stderr: the notices meant for the person
  waiting (the embedding model's int8 copy being made), everything with `--verbose`.

Nothing here loads pydantic or the engine at import: `kb status` answers without them.
"""

"""The attribute list a heading may end with: `## Title { #anchor .class key=value }`,
`{: #id }` (Pandoc, kramdown and MkDocs' attr_list).

It names the heading's anchor and is not part of its words (`document.py`), nor are its
`#id`s tags (`metadata/inline.py`). Every item is an id, a class or a key=value, so
`{ not an attr }` stays text. A module of its own so that tag handling, which a one-shot
keyword search loads, does not load the Markdown parser.
"""

from __future__ import annotations

import re

_ATTR_ITEM = r"""(?:[#.][\w:.\-]+|[\w\-]+=(?:"[^"\n]*"|'[^'\n]*'|[^\s{}"']+))"""
ATTR_LIST = re.compile(r"\{:?[ \t]*" + _ATTR_ITEM + r"(?:[ \t]+" + _ATTR_ITEM + r")*[ \t]*\}")

"""Private copies of the shared corpora, so nothing a benchmark does touches /work/shared.

`fastapi-docs` is copied whole (workspace-relative paths start with `docs/`, as in the
query set). tldr-pages is cut into nested sizes: `tldr_subset(n)` takes the first `n`
pages of a fixed, folder-interleaved order, so a smaller size is always a subset of a
bigger one and every size mixes `common`, `linux`, `osx`, … like the whole corpus does.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("KB_BENCH_CORPORA", REPO.parent / "shared" / "corpora"))
FASTAPI = SHARED / "fastapi-docs"
TLDR_PAGES = SHARED / "tldr-pages" / "pages"


def require(path: Path) -> Path:
    if not path.is_dir():
        raise SystemExit(
            f"corpus {path} is missing: set KB_BENCH_CORPORA to the folder holding "
            "fastapi-docs/ and tldr-pages/"
        )
    return path


def copy_fastapi(target: Path) -> Path:
    """A copy of fastapi-docs at `target` (the workspace root); returns `target`."""
    shutil.copytree(require(FASTAPI), target, ignore=shutil.ignore_patterns(".git"))
    return target


def tldr_order() -> list[Path]:
    """Every tldr page (relative to `pages/`) in a stable round-robin over its folders."""
    root = require(TLDR_PAGES)
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    lists = [sorted(f.rglob("*.md")) for f in folders]
    order: list[Path] = []
    for i in range(max((len(x) for x in lists), default=0)):
        order += [x[i].relative_to(root) for x in lists if i < len(x)]
    return order


def tldr_size_all() -> int:
    return len(tldr_order())


def copy_tldr(target: Path, count: int | None = None) -> list[Path]:
    """The first `count` pages (all when None) copied under `target/pages/`; returns the
    workspace-relative paths copied."""
    order = tldr_order()
    chosen = order if count is None else order[:count]
    for rel in chosen:
        dest = target / "pages" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TLDR_PAGES / rel, dest)
    return [Path("pages") / rel for rel in chosen]


def copy_tldr_scaled(target: Path, copies: int, seed: int = 26) -> int:
    """tldr-pages `copies` times over under `target/` (`pages/` whole, then `mirror-2/` …),
    for scale: each mirror page keeps a real page's title and description and mixes its
    own examples, shuffled, with two borrowed from other seeded pages — every text is
    new (no two chunks share a vector) while the vocabulary and its frequencies stay
    those of real pages. Returns the number of files written."""
    import random

    order = tldr_order()
    copy_tldr(target)
    texts = [(TLDR_PAGES / rel).read_text(encoding="utf-8") for rel in order]
    examples = [_examples(text) for text in texts]
    for copy in range(2, copies + 1):
        rng = random.Random(seed * 1000 + copy)
        for rel, text, own in zip(order, texts, examples, strict=True):
            head = [ln for ln in text.splitlines() if ln.startswith(("#", ">"))]
            mixed = own[:]
            rng.shuffle(mixed)
            for _ in range(2):
                other = examples[rng.randrange(len(examples))]
                if other:
                    mixed.append(other[rng.randrange(len(other))])
            lines = [head[0], "", *head[1:], ""] if head else []
            for caption, command in mixed:
                lines += [caption, "", command, ""]
            dest = target / f"mirror-{copy}" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text("\n".join(lines), encoding="utf-8")
    return len(order) * copies


def _examples(text: str) -> list[tuple[str, str]]:
    """(caption line, command line) pairs of a tldr page."""
    lines = text.splitlines()
    pairs = []
    for i, line in enumerate(lines):
        if line.startswith("- "):
            command = next((ln for ln in lines[i + 1 :] if ln.startswith("`")), "")
            pairs.append((line, command))
    return pairs

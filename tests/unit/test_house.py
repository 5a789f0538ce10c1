"""The house rules of docs/design.md, checked on the source: sizes, layers, cycles, names.

The size rule's exceptions are the table "Named exceptions to the size rules" of
docs/design.md (read here, so the page and the check cannot disagree). The layers are
`LAYERS` below, in the order design.md draws them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from tests.helpers.typescript_source import functions, hand_written

REPO = Path(__file__).resolve().parents[2]
SERVER = REPO / "server"
DESIGN = REPO / "docs" / "design.md"

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_CLASS_METHODS = 25

# Top to bottom: a module may import its own layer and the layers below it. Each entry is
# a module or a package (everything under it); every module is in exactly one layer.
LAYERS: dict[str, tuple[str, ...]] = {
    "front ends": (
        "kb_lsp.__main__",
        "kb_lsp.cli",
        "kb_lsp.listener",
        "kb_lsp.listing",
        "kb_lsp.lsp",
        "kb_lsp.mcp",
        "kb_lsp.terminal",
        "kb_lsp.codegen",
        "kb_lsp.devtools",
    ),
    "runtime": ("kb_lsp.runtime",),
    "engine": ("kb_lsp.engine",),
    "base": (
        "kb_lsp",
        "kb_lsp.contract",
        "kb_lsp.errors",
        "kb_lsp.globs",
        "kb_lsp.json_bounds",
        "kb_lsp.protocol",
        "kb_lsp.config",
        "kb_lsp.setting_values",
    ),
}

# Third-party packages only one package may import.
OWNERS = {"pygls": "kb_lsp.lsp", "lsprotocol": "kb_lsp.lsp", "mcp": "kb_lsp.mcp"}

# Cycles that remain, each named with the move that removes it (issue 23): the list
# only shrinks, and a cycle not named here fails.
KNOWN_CYCLES: dict[frozenset[str], str] = {}


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module

    @property
    def where(self) -> str:
        return self.path.relative_to(SERVER).as_posix()

    @property
    def generated(self) -> bool:
        doc = ast.get_docstring(self.tree) or ""
        return doc.startswith("Generated ")


@cache
def modules() -> dict[str, Module]:
    found = {}
    for path in sorted((SERVER / "kb_lsp").rglob("*.py")):
        parts = list(path.relative_to(SERVER).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        found[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8")))
    return found


def _imports(module: Module) -> Iterator[str]:
    """Every module `module` imports, at any depth (`TYPE_CHECKING` and lazy imports
    included: a cycle through them is still a cycle of the design)."""
    package = module.name if module.path.name == "__init__.py" else module.name.rsplit(".", 1)[0]
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield full if full in modules() else base


@cache
def graph() -> dict[str, frozenset[str]]:
    known = modules()
    return {
        name: frozenset(t for t in _imports(m) if t in known and t != name)
        for name, m in known.items()
    }


def _cycles(edges: dict[str, frozenset[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def layer_of(name: str) -> str:
    best, best_len = "", -1
    for layer, prefixes in LAYERS.items():
        for prefix in prefixes:
            # The most specific entry wins: `kb_lsp` is base, `kb_lsp.cli` a front end.
            exact_root = prefix == "kb_lsp" and name != "kb_lsp"
            if not exact_root and _within(name, prefix) and len(prefix) > best_len:
                best, best_len = layer, len(prefix)
    return best


def package_of(name: str) -> str:
    """`kb_lsp.lsp.server` -> `kb_lsp.lsp`, `kb_lsp.engine.store.db` ->
    `kb_lsp.engine.store` (the engine's packages are its layers); a module directly in
    `kb_lsp` or `kb_lsp.engine` is its own package."""
    parts = name.split(".")
    depth = 3 if name.startswith("kb_lsp.engine.") else 2
    if len(parts) > depth or modules()[name].path.name == "__init__.py":
        return ".".join(parts[:depth])
    return name


# --- sizes -------------------------------------------------------------------------------


def named_exceptions() -> set[str]:
    text = DESIGN.read_text(encoding="utf-8")
    section = text.split("## Named exceptions to the size rules", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE))


def oversized() -> dict[str, int]:
    """`kb_lsp/x.py` (module) or `kb_lsp/x.py::Class.function` -> its lines, and
    `kb_lsp/x.py::Class` -> its methods, over the limits."""
    found: dict[str, int] = {}
    for module in modules().values():
        lines = len(module.path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            found[module.where] = lines

        def walk(node: ast.AST, prefix: str, where: str = module.where) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    size = (child.end_lineno or child.lineno) - child.lineno + 1
                    if size > MAX_FUNCTION_LINES:
                        found[f"{where}::{prefix}{child.name}"] = size
                    walk(child, f"{prefix}{child.name}.")
                elif isinstance(child, ast.ClassDef):
                    methods = sum(
                        isinstance(c, ast.FunctionDef | ast.AsyncFunctionDef) for c in child.body
                    )
                    if methods > MAX_CLASS_METHODS:
                        found[f"{where}::{prefix}{child.name}"] = methods
                    walk(child, f"{prefix}{child.name}.")

        walk(module.tree, "")
    return found


def test_no_module_or_function_over_the_limits_but_the_named_ones() -> None:
    measured = oversized()
    named = named_exceptions()
    unnamed = {where: size for where, size in measured.items() if where not in named}
    assert not unnamed, (
        f"over {MAX_MODULE_LINES} lines (module), {MAX_FUNCTION_LINES} (function) or "
        f"{MAX_CLASS_METHODS} methods (class), and "
        f"not named in docs/design.md: {unnamed}"
    )
    stale = sorted(named - set(measured))
    assert not stale, f"named in docs/design.md but within the limits now (remove): {stale}"


# --- TypeScript sizes --------------------------------------------------------------------

EXTENSION_SRC = REPO / "vscode-extension" / "src"


def typescript_oversized() -> dict[str, int]:
    """`src/x.ts` (module) or `src/x.ts:LINE name` (function) -> its lines, over the limits,
    for every hand-written module of the extension (generated ones are codegen's output)."""
    found: dict[str, int] = {}
    for path in hand_written(EXTENSION_SRC):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(EXTENSION_SRC.parent).as_posix()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found[where] = len(text.splitlines())
        for line, size, name in functions(text):
            if size > MAX_FUNCTION_LINES:
                found[f"{where}:{line} {name}"] = size
    return found


def test_no_typescript_module_or_function_over_the_limits() -> None:
    """The size rule reaches the extension, with no exceptions: a TypeScript module that
    needs one has not been split yet (functions found as `typescript_source` says)."""
    assert len(hand_written(EXTENSION_SRC)) > 20
    assert not typescript_oversized(), (
        f"over {MAX_MODULE_LINES} lines (module) or {MAX_FUNCTION_LINES} (function) in "
        f"vscode-extension/src: {typescript_oversized()}"
    )


def test_the_generated_protocol_is_not_measured_and_the_rest_is() -> None:
    measured = {p.name for p in hand_written(EXTENSION_SRC)}
    assert "protocol.ts" not in measured
    assert {"client.ts", "panel.ts", "main.ts", "onMessage.ts"} <= measured


TS_SAMPLE = """\
const open = '{';  // a brace in a string: { is not code
const close = /[}]+/g;
export function first(a: string,
  b: number): { text: string } {
  const t = `${a} { ${b > 1 ? `}` : '{'} `;
  return { text: t.replace(/\\{/g, '}') };
}
class Box {
  private async fill(x: number): Promise<void> {
    if (x) {
      await Promise.resolve();
    }
  }
}
items.forEach((item) => {
  use(item);
});
const short = (x: number): number => x + 1;
"""


def test_the_typescript_scan_finds_functions_past_strings_templates_and_regexes() -> None:
    # (first line, lines, name): the declaration over two lines with a braced return
    # type, the method, the arrow with a block; not the arrow with an expression body.
    assert functions(TS_SAMPLE) == [(3, 5, "first"), (9, 5, "fill"), (15, 3, "forEach")]


# --- imports -----------------------------------------------------------------------------


def test_no_import_cycles_between_files() -> None:
    cycles = _cycles(dict(graph()))
    unknown = [sorted(c) for c in cycles if c not in KNOWN_CYCLES]
    assert not unknown, f"import cycles: {unknown}"
    gone = [why for cycle, why in KNOWN_CYCLES.items() if cycle not in cycles]
    assert not gone, f"cycles named in KNOWN_CYCLES that are gone (remove them): {gone}"


def test_no_import_cycles_between_packages() -> None:
    edges: dict[str, set[str]] = {}
    for name, targets in graph().items():
        for target in targets:
            a, b = package_of(name), package_of(target)
            if a != b:
                edges.setdefault(a, set()).add(b)
            edges.setdefault(b, set())
    known = {frozenset(package_of(m) for m in cycle) for cycle in KNOWN_CYCLES}
    cycles = _cycles({k: frozenset(v) for k, v in edges.items()})
    assert not [sorted(c) for c in cycles if c not in known], f"package cycles: {cycles}"


def test_layers_import_only_downwards() -> None:
    order = list(LAYERS)
    wrong = [
        f"{name} ({layer_of(name)}) imports {target} ({layer_of(target)})"
        for name, targets in graph().items()
        for target in sorted(targets)
        if order.index(layer_of(target)) < order.index(layer_of(name))
    ]
    assert not wrong, "imports against the layers of docs/design.md:\n" + "\n".join(wrong)


def test_every_module_is_in_a_layer() -> None:
    homeless = sorted(name for name in modules() if not layer_of(name))
    assert not homeless, f"modules in no layer of LAYERS: {homeless}"


def test_each_layer_is_named_in_the_design() -> None:
    text = DESIGN.read_text(encoding="utf-8")
    assert " → ".join(LAYERS) in text  # "front ends → runtime → engine → base"


@pytest.mark.parametrize("library", sorted(OWNERS))
def test_only_its_front_end_imports_a_transport_library(library: str) -> None:
    owner = OWNERS[library]
    outside = sorted(
        m.name
        for m in modules().values()
        if not _within(m.name, owner) and any(_within(t, library) for t in _imports(m))
    )
    assert not outside, f"{library} is for {owner} only; imported by {outside}"


def test_the_layer_table_covers_real_modules() -> None:
    """A layer entry that names nothing (a package moved or renamed) is a stale check."""
    names = set(modules())
    missing = [p for prefixes in LAYERS.values() for p in prefixes if p not in names]
    assert not missing, f"LAYERS names modules that do not exist: {missing}"


# --- the contract ------------------------------------------------------------------------


def method_names() -> set[str]:
    from kb_lsp.contract.operations import NOTIFICATIONS, OPERATIONS

    return {op.method for op in OPERATIONS} | {n.method for n in NOTIFICATIONS}


@pytest.mark.parametrize("method", sorted(method_names()))
def test_each_method_name_is_written_in_one_module(method: str) -> None:
    holders = sorted(
        m.where
        for m in modules().values()
        if not m.generated
        and any(
            isinstance(node, ast.Constant) and node.value == method for node in ast.walk(m.tree)
        )
    )
    assert len(holders) == 1, f"{method!r} is written in {holders or 'no module'}"


def test_json_rpc_error_codes_are_defined_in_one_place() -> None:
    """Every JSON-RPC error code (-32768 to -32000) is written in `errors.py`;
    everything else names it from there."""
    writers = sorted(
        f"{m.where}:{node.lineno}"
        for m in modules().values()
        if m.name != "kb_lsp.errors"
        for node in ast.walk(m.tree)
        if isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int)
        and 32000 <= node.operand.value <= 32768
    )
    assert not writers, f"JSON-RPC codes written outside errors.py: {writers}"


# --- the design page ---------------------------------------------------------------------


def test_the_design_page_is_in_the_repository_and_the_readme_links_it() -> None:
    assert DESIGN.is_file()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(docs/design.md)" in readme
    assert "shared project notes" not in readme


# --- the store ---------------------------------------------------------------------------

MAX_FACADE_LINES = 150


def test_the_store_facade_stays_small() -> None:
    """`Store` puts the store's parts together and does only what spans them."""
    facade = modules()["kb_lsp.engine.store.store"]
    lines = len(facade.path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_FACADE_LINES, f"{facade.where}: {lines} lines"


# A store's parts: only `engine/store/` itself reaches them (`store.catalog.…`).
STORE_PARTS = {"catalog", "chunks", "fts", "notes", "extractions", "cache", "db", "vectors", "team"}


def reaches_into_a_store(module: Module) -> list[str]:
    """`store.<part>` or `reader.<part>` in `module`, whatever holds the store or reader."""
    found = []
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Attribute) or node.attr not in STORE_PARTS:
            continue
        owner = node.value
        held = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        if held in {"store", "reader"}:
            found.append(f"{module.where}:{node.lineno}: {held}.{node.attr}")
    return found


def test_the_engine_reads_and_writes_a_store_through_its_reader_and_writer() -> None:
    """Outside `engine/store/` nothing reaches into a store's parts: search, related notes,
    the schema and the status read through `Store.reader` (or the one-shot path's
    `TextReader`), the indexer writes through `Store.writer` (issue 38)."""
    found = [
        hit
        for name, module in modules().items()
        if not name.startswith("kb_lsp.engine.store")
        for hit in reaches_into_a_store(module)
    ]
    assert not found, "reaches into a store's parts:\n" + "\n".join(found)


def test_vector_indexes_implement_the_port() -> None:
    """Every method of the `VectorIndex` port, on each implementation (mypy checks the
    signatures where the store assigns them)."""
    from kb_lsp.engine.store.chroma import ChromaIndex
    from kb_lsp.engine.store.exact import ExactIndex
    from kb_lsp.engine.store.team import TeamIndex

    port = {
        node.name
        for node in ast.walk(modules()["kb_lsp.engine.store.vectors"].tree)
        if isinstance(node, ast.FunctionDef)
    }
    assert port >= {"nearest", "upsert", "delete", "rebuild"}
    for implementation in (ChromaIndex, ExactIndex, TeamIndex):
        missing = sorted(name for name in port if not callable(getattr(implementation, name, None)))
        assert not missing, f"{implementation.__name__} lacks {missing}"
        assert isinstance(implementation.filters_cheaply, bool)


# Names that existed only for tests (issue 38): tests now watch through public seams (the
# status, search results, the store's files with their own clients and the logs, in
# `tests/helpers`) and build their runtime from a `ProcessKind`. None comes back.
TEST_ONLY_NAMES = [
    ("kb_lsp.engine.knowledge", "KnowledgeBase", "indexes"),
    ("kb_lsp.engine.index.indexer", "Indexer", "sync"),
    ("kb_lsp.engine.workspace.watcher", "Watcher", "watch_count"),
    ("kb_lsp.engine.workspace.watcher", "Watcher", "watched_folders"),
    ("kb_lsp.engine.store.chroma", "ChromaIndex", "collection"),
    ("kb_lsp.engine.store.db", "Database", "trace"),
]


def _class(module: str, name: str) -> ast.ClassDef:
    found = [
        node
        for node in ast.walk(modules()[module].tree)
        if isinstance(node, ast.ClassDef) and node.name == name
    ]
    assert len(found) == 1, f"{module}.{name} moved: update TEST_ONLY_NAMES"
    return found[0]


def _members(node: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        item.name: item
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
    }


@pytest.mark.parametrize(("module", "owner", "name"), TEST_ONLY_NAMES)
def test_a_name_made_for_tests_does_not_come_back(module: str, owner: str, name: str) -> None:
    assert name not in _members(_class(module, owner)), f"{owner}.{name} is back in {module}"


def test_tests_build_their_runtime_from_a_process_kind() -> None:
    """`Runtime.editor` takes no overrides: a test that needs another mix replaces the
    fields of `ProcessKind.editor()` (`tests/helpers/runtime.py`)."""
    editor = _members(_class("kb_lsp.runtime.runtime", "Runtime"))["editor"]
    assert editor.args.kwarg is None, "Runtime.editor(**overrides) is back"


# --- one link grammar --------------------------------------------------------------------

LINK_SYNTAX = (r"\[\[", r"\]\(")  # a wiki link's opening, a Markdown link's `](`


def test_the_link_grammar_is_written_once() -> None:
    """Only `engine/metadata/links.py` writes a pattern for links; the rest asks it."""
    writers = sorted(
        m.where
        for m in modules().values()
        if any(
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and any(syntax in node.value for syntax in LINK_SYNTAX)
            for node in ast.walk(m.tree)
        )
    )
    assert writers == ["kb_lsp/engine/metadata/links.py"], writers


# --- camelCase on the wire ---------------------------------------------------------------


def test_camel_case_names_come_from_the_alias_generator() -> None:
    """pydantic's `alias_generator=to_camel` names every wire and settings field; a
    hand-written `alias=` is one more name to keep in step (the generated TypeScript
    and the contract tests show the wire did not change)."""
    written = sorted(
        f"{m.where}:{node.lineno}"
        for m in modules().values()
        for node in ast.walk(m.tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "Field"
        and any(k.arg == "alias" for k in node.keywords)
    )
    assert not written, f"hand-written aliases: {written}"


# --- tests -------------------------------------------------------------------------------


def test_test_modules_do_not_import_each_other() -> None:
    """Shared helpers live in tests/helpers (or conftest), not in another test module."""
    found = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            found += [
                f"{path.relative_to(REPO)} imports {name}"
                for name in names
                if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")
            ]
    assert not found, found


# Private attributes a test file may read on something other than itself, by file and the
# expression they are read on: none of them is kb_lsp's. The list only shrinks.
FOREIGN_PRIVATES: dict[tuple[str, str], str] = {
    ("tests/e2e/conftest.py", "self.lsp"): "pygls' client: the server process it started",
    ("tests/e2e/conftest.py", "kb.lsp"): "pygls' client: the server process it started",
    ("tests/e2e/conftest.py", "self.lsp.protocol"): (
        "pygls' client protocol: a raw request, unchecked by the client, is the test"
    ),
    ("tests/fakes/ollama_server.py", "owner"): "the fake's request handler reading the fake",
    ("tests/fakes/openai_server.py", "owner"): "the fake's request handler reading the fake",
    ("tests/unit/test_cli_json.py", "parser"): "argparse: no public list of subcommands",
    ("tests/unit/test_cli_json.py", "argparse"): "argparse: no public list of subcommands",
    ("tests/unit/test_cli_json.py", "commands[name]"): "argparse: no public list of options",
}

PRIVATE = re.compile(r"_(?!_)\w*")  # `_name`, not a dunder
BY_NAME = {"setattr", "getattr", "delattr", "hasattr"}


def private_reads(path: Path) -> Iterator[tuple[str, int, str]]:
    """(the expression read from, line, the private name) for every single-underscore
    attribute `path` reads on something other than `self` or `cls` (its own), by name
    too: `getattr(x, "_y")`, `monkeypatch.setattr(x, "_y", ...)`."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and PRIVATE.fullmatch(node.attr):
            base = node.value
            if not (isinstance(base, ast.Name) and base.id in ("self", "cls")):
                yield ast.unparse(base), node.lineno, node.attr
        elif isinstance(node, ast.Call) and len(node.args) >= 2:
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            attr = node.args[1]
            if (
                name in BY_NAME
                and isinstance(attr, ast.Constant)
                and isinstance(attr.value, str)
                and PRIVATE.fullmatch(attr.value)
            ):
                yield ast.unparse(node.args[0]), node.lineno, attr.value


def test_tests_read_no_private_attribute_of_kb_lsp() -> None:
    """Tests go through public seams (docs/design.md): a private name they read would
    hold the code's insides in place. What is read on another library's object or by a
    fake on itself is named in `FOREIGN_PRIVATES`."""
    seen: set[tuple[str, str]] = set()
    found = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        where = path.relative_to(REPO).as_posix()
        for base, line, attr in private_reads(path):
            if (where, base) in FOREIGN_PRIVATES:
                seen.add((where, base))
            else:
                found.append(f"{where}:{line}: {base}.{attr}")
    assert not found, "tests reading private names (give the code a public seam):\n" + "\n".join(
        found
    )
    stale = sorted(set(FOREIGN_PRIVATES) - seen)
    assert not stale, f"named in FOREIGN_PRIVATES but no longer read (remove): {stale}"


# --- the error taxonomy ------------------------------------------------------------------

# Exceptions the engine defines that never leave it: each is caught inside the engine
# (the check below finds the `except` or `isinstance` that names it there) and turned
# into a result or a `KbError` kind. Anything else the engine defines is a `KbError`.
ENGINE_INTERNAL_ERRORS = {
    "kb_lsp.engine.agent.request.Stop": "ends a request with its outcome (agent/ask.py)",
    "kb_lsp.engine.agent.tools.ToolError": "a tool's refusal, given to the model as output",
    "kb_lsp.engine.llm.openai_chat.HttpStatusError": "read as the `LlmError` of its status",
    "kb_lsp.engine.llm.stream.LineTooLong": "a stream's refusal, read as an `LlmError`",
    "kb_lsp.engine.metadata.frontmatter._TooComplex": "front matter kept out as malformed",
}


def _exception_bases(node: ast.ClassDef) -> set[str]:
    return {ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases}


def engine_exception_classes() -> dict[str, ast.ClassDef]:
    """`module.Class` -> its node, for every class in `kb_lsp.engine` whose bases (by
    name, followed through the engine's own classes) reach an exception."""
    classes = {
        f"{m.name}.{node.name}": node
        for m in modules().values()
        if m.name.startswith("kb_lsp.engine")
        for node in ast.walk(m.tree)
        if isinstance(node, ast.ClassDef)
    }
    names = {"Exception", "BaseException", "KbError", "InvalidInput", "Unavailable"}
    names |= {"Cancelled", "Failed", "ValueError", "RuntimeError", "LookupError"}
    names |= {"YAMLError", "OSError"}
    found: dict[str, ast.ClassDef] = {}
    while True:
        more = {
            where: node
            for where, node in classes.items()
            if where not in found and _exception_bases(node) & names
        }
        if not more:
            return found
        found.update(more)
        names |= {node.name for node in more.values()}


def _caught_in_engine(name: str) -> bool:
    """Whether an `except` clause or an `isinstance` test in the engine names `name`."""
    for m in modules().values():
        if not m.name.startswith("kb_lsp.engine"):
            continue
        for node in ast.walk(m.tree):
            tested: ast.AST | None = None
            if isinstance(node, ast.ExceptHandler):
                tested = node.type
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
            ):
                tested = node.args[1]
            if tested is not None and any(
                isinstance(part, ast.Name) and part.id == name for part in ast.walk(tested)
            ):
                return True
    return False


def test_every_exception_that_can_leave_the_engine_is_a_kb_error() -> None:
    """How: every exception class the engine defines is found by its bases (AST), then
    imported and checked to be a `KbError` kind — or it is named in
    `ENGINE_INTERNAL_ERRORS` and an `except` or `isinstance` in the engine catches it.
    Third-party failures are wrapped where the engine calls the library: the embedders
    (`EmbedderError`, an `Unavailable`; the test below reads their `raise`s), Chroma
    (`store/chroma.py`) and SQLite (`store/outage.py`, around every read of the runtime)."""
    import importlib

    from kb_lsp.errors import KbError

    loose = []
    for where, node in sorted(engine_exception_classes().items()):
        module_name = where.rsplit(".", 1)[0]
        cls = getattr(importlib.import_module(module_name), node.name)
        if issubclass(cls, KbError):
            assert where not in ENGINE_INTERNAL_ERRORS, f"{where} is a KbError: unlist it"
        elif where not in ENGINE_INTERNAL_ERRORS:
            loose.append(where)
        else:
            assert _caught_in_engine(node.name), f"{where}: no `except` in the engine"
    assert not loose, f"exceptions the engine defines that are no KbError kind: {loose}"
    assert set(ENGINE_INTERNAL_ERRORS) <= set(engine_exception_classes())


def test_the_embedders_raise_only_the_embedder_error() -> None:
    """What an embedder raises reaches a search: the contract's `Unavailable`. (A
    constructor's refusal of its own arguments is a bug of the caller, not a failure.)"""
    raised = {
        f"{m.where}:{node.lineno}: {ast.unparse(node.exc)}"
        for m in modules().values()
        if m.name.startswith("kb_lsp.engine.embed")
        for function in ast.walk(m.tree)
        if isinstance(function, ast.FunctionDef) and function.name != "__init__"
        for node in ast.walk(function)
        if isinstance(node, ast.Raise) and node.exc is not None
        if not ast.unparse(node.exc).startswith("EmbedderError(")
    }
    assert not raised, f"embedder failures that are not EmbedderError: {sorted(raised)}"


def test_one_name_per_error_kind() -> None:
    """The kinds are defined in `errors.py` alone: no alias class elsewhere."""
    kinds = {"KbError", "InvalidInput", "Unavailable", "Cancelled", "Failed", "InvalidRequest"}
    aliases = sorted(
        f"{m.where}: {node.name}"
        for m in modules().values()
        if m.name != "kb_lsp.errors"
        for node in ast.walk(m.tree)
        if isinstance(node, ast.ClassDef) and node.name in kinds
    )
    assert not aliases, f"error kinds defined again: {aliases}"

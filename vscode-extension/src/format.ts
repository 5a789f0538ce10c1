/** How results and index state read in the quick pick, the status bar and messages. Pure. */
import type { IndexStatus, Range, SearchHit } from './protocol';

export interface HitItem {
  label: string;
  description: string;
  detail: string;
}

/** One line, whitespace collapsed, cut at `max` characters. */
export function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Lines of a range as a person counts them: `L12` or `L12–18` (1-based, end inclusive). */
export function lineSpan(range: Range): string {
  const first = range.start.line + 1;
  // An end at character 0 of a line means "up to the end of the line before".
  let last = range.end.character === 0 && range.end.line > range.start.line ? range.end.line : range.end.line + 1;
  if (last < first) {
    last = first;
  }
  return first === last ? `L${first}` : `L${first}–${last}`;
}

export function formatScore(score: number): string {
  return score.toFixed(2);
}

/** `2 · notes/setup.md`, `context match · L12–18 · 0.82`, `Setup › Install — snippet…` */
export function hitItem(hit: SearchHit): HitItem {
  const heading = hit.heading || hit.title;
  const snippet = oneLine(stripMarks(hit.snippet), 200);
  return {
    label: `${hit.n} · ${hit.path}`,
    description: `${hit.label} · ${lineSpan(hit.range)} · ${formatScore(hit.score)}`,
    detail: heading ? `${oneLine(heading, 80)} — ${snippet}` : snippet,
  };
}

/** The server may mark matches in snippets (`**word**` or `[word]`); plain text drops them. */
export function stripMarks(snippet: string): string {
  return snippet.replace(/\*\*(.+?)\*\*/g, '$1').replace(/\u00ab(.+?)\u00bb/g, '$1');
}

export interface StatusView {
  text: string;
  tooltip: string;
  kind: 'indexing' | 'ready' | 'error' | 'readOnly' | 'stopped';
}

/** A short state for the status bar and the panel header. */
export function statusView(status: IndexStatus | undefined): StatusView {
  if (!status) {
    return { text: '$(book) KB: starting…', tooltip: 'kb-lsp: the server is starting', kind: 'stopped' };
  }
  const lines = [
    `Files: ${status.files}, chunks: ${status.chunks}${status.pending ? `, pending: ${status.pending}` : ''}`,
    `Embedder: ${status.embedder}`,
    `Store: ${status.store}`,
    `LLM: ${status.llm.model} at ${status.llm.host}${llmNote(status)}`,
  ];
  if (status.readOnly) {
    lines.push('Read-only: another window is writing this index.');
  }
  if (status.skipped && status.skipped.length > 0) {
    lines.push(`Skipped: ${status.skipped.length} file(s)`);
  }
  if (status.message) {
    lines.push(status.message);
  }
  const tooltip = lines.join('\n');
  const flags = `${status.readOnly ? ' · read-only' : ''}${status.llm.reachable === false ? ' · no model' : ''}`;
  if (status.state === 'indexing') {
    return { text: `$(sync~spin) KB: indexing ${indexProgress(status)}${flags}`, tooltip, kind: 'indexing' };
  }
  if (status.state === 'error') {
    return { text: `$(error) KB: error${flags}`, tooltip, kind: 'error' };
  }
  return {
    text: `$(book) KB: ready · ${status.files} files${flags}`,
    tooltip,
    kind: status.readOnly ? 'readOnly' : 'ready',
  };
}

/** `x/y`: files indexed of files known (indexed + pending). */
export function indexProgress(status: IndexStatus): string {
  const pending = status.pending ?? 0;
  return `${status.files}/${status.files + pending}`;
}

function llmNote(status: IndexStatus): string {
  if (status.llm.reachable === false) {
    return ' (not reachable: questions get retrieved passages only)';
  }
  if (status.llm.reachable === true) {
    return ' (reachable)';
  }
  return '';
}

/** Workspace-relative path of `fsPath` under one of `roots`, with `/`; undefined if outside. */
export function relativeTo(roots: readonly string[], fsPath: string): string | undefined {
  const norm = (p: string): string => p.replace(/\\/g, '/').replace(/\/+$/, '');
  const file = norm(fsPath);
  for (const root of roots.map(norm)) {
    if (file.startsWith(`${root}/`)) {
      return file.slice(root.length + 1);
    }
  }
  return undefined;
}

/** Parse the N of "open result N"; an error text for the input box otherwise. */
export function parseResultNumber(value: string, max?: number): { n: number } | { error: string } {
  const text = value.trim().replace(/^#/, '');
  if (!/^\d+$/.test(text) || Number(text) < 1) {
    return { error: 'Type the number of a result: 1, 2, 3…' };
  }
  const n = Number(text);
  if (max !== undefined && max > 0 && n > max) {
    return { error: `The last search listed ${max} result${max === 1 ? '' : 's'}.` };
  }
  return { n };
}

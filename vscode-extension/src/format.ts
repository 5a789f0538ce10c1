/** How results and index state read in the quick pick, the status bar and messages. Pure. */
import type { IndexStatus, Range, SearchHit, SearchResponse } from './protocol';

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
  const tags = (hit.meta?.tags ?? []).map((tag) => ` · #${tag}`).join('');
  return {
    label: `${hit.n} · ${hit.path}`,
    description: `${hit.label} · ${lineSpan(hit.range)} · ${formatScore(hit.score)}${tags}`,
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

/** A short state for the status bar and the panel header. `secondsLeft`: the estimate of
 * the running sync's time left (`estimate.ts`), when there is one. */
export function statusView(status: IndexStatus | undefined, secondsLeft?: number): StatusView {
  if (!status) {
    return { text: '$(book) KB: starting…', tooltip: 'kb-lsp: the server is starting', kind: 'stopped' };
  }
  const lines = [
    `Files: ${count(status.files)}, passages: ${count(status.chunks)}${status.pending ? `, pending: ${count(status.pending)}` : ''}`,
    `Embedder: ${status.embedder}`,
    `Store: ${status.store}`,
    `LLM: ${status.llm.model} at ${status.llm.host}${llmNote(status)}`,
  ];
  if (status.readOnly) {
    lines.push('Read-only: another window is writing this index.');
  }
  if (status.skipped && status.skipped.length > 0) {
    lines.push(`Skipped: ${count(status.skipped.length)} file(s)`);
  }
  if (status.message) {
    lines.push(status.message);
  }
  const tooltip = lines.join('\n');
  const flags = stateFlags(status);
  const pausedFlag = status.paused && status.state !== 'indexing' ? ' · indexing paused' : '';
  if (status.state === 'indexing') {
    // The status bar is shared: the phase and its count only; the whole label (and the
    // time left, the flags) is the tooltip's, the notification's and the panel's.
    const icon = status.paused ? '$(debug-pause)' : '$(sync~spin)';
    const label = indexLabel(status, secondsLeft);
    return {
      text: `${icon} KB: ${shortIndexLabel(status)}`,
      tooltip: `Indexing: ${label}${flags.replace(/ · /g, '\n')}\n${tooltip}`,
      kind: 'indexing',
    };
  }
  if (status.state === 'error') {
    return { text: `$(error) KB: error${flags}`, tooltip, kind: 'error' };
  }
  return {
    text: `$(book) KB: ready · ${count(status.files)} files${pausedFlag}${flags}`,
    tooltip,
    kind: status.readOnly ? 'readOnly' : 'ready',
  };
}

/** ` · read-only · no model`: what the state line says after the state. */
export function stateFlags(status: IndexStatus): string {
  return `${status.readOnly ? ' · read-only' : ''}${status.llm.reachable === false ? ' · no model' : ''}`;
}

/** Thousands with a separator: `3,038`. */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** How long is left, as a person says it: `about 12 min left`. */
export function timeLeft(seconds: number): string {
  if (seconds < 45) {
    return 'less than a minute left';
  }
  if (seconds < 90 * 60) {
    return `about ${Math.max(1, Math.round(seconds / 60))} min left`;
  }
  return `about ${(seconds / 3600).toFixed(1)} h left`;
}

/**
 * The one label of a running sync, one per phase, that every surface prints (status bar,
 * notification, panel header): `Scanning files…`, `Reading 38/155 files`, then
 * `Keyword search ready · embedding 256/3,038 passages · about 12 min left`. Each phase
 * counts its own unit from 0 and says which, so a new phase never reads as a counter that
 * went back. A server that sends no `progress` falls back to indexed/known files.
 */
export function indexLabel(status: IndexStatus, secondsLeft?: number): string {
  const p = status.progress;
  let label: string;
  if (!p) {
    const total = status.files + (status.pending ?? 0);
    label = total === 0 ? 'Opening the index…' : `Indexing ${count(status.files)}/${count(total)} files`;
  } else if (p.phase === 'scanning' || p.filesTotal === 0) {
    // Still counting the work: no total to show yet (a "0/0" would be a total that changes).
    label = 'Scanning files…';
  } else if (p.phase === 'keyword') {
    label = `Reading ${count(p.filesDone)}/${count(p.filesTotal)} files`;
  } else if (p.phase === 'metadata') {
    label = `Search ready · metadata ${count(p.filesDone)}/${count(p.filesTotal)} notes`;
  } else {
    const embedding = p.chunksTotal
      ? `embedding ${count(p.chunksDone ?? 0)}/${count(p.chunksTotal)} passages${p.chunksReused ? ` (${count(p.chunksReused)} reused)` : ''}`
      : `embedding ${count(p.filesDone)}/${count(p.filesTotal)} files`;
    label = `Keyword search ready · ${embedding}`;
  }
  if (status.paused) {
    return `${label} · paused`;
  }
  return secondsLeft !== undefined && p && p.phase !== 'scanning' ? `${label} · ${timeLeft(secondsLeft)}` : label;
}

/** `indexLabel` in the few words a status bar has room for: the phase and its count,
 * as the label says them (`embedding 256/3,038 passages`, `Reading 38/155 files`). */
export function shortIndexLabel(status: IndexStatus): string {
  const label = indexLabel({ ...status, paused: false });
  const short = label.replace(/^(Keyword )?[Ss]earch ready · /, '');
  return status.paused ? `${short} · paused` : short;
}

/**
 * The share of the whole sync done (0..1) for a bar that only moves forward: reading
 * (`keyword`, seconds) is the first tenth, embedding (`vectors`) the rest.
 */
export function overallFraction(status: IndexStatus): number | undefined {
  const p = status.progress;
  if (!p) {
    const total = status.files + (status.pending ?? 0);
    return total > 0 ? status.files / total : undefined;
  }
  const clamp = (x: number): number => Math.max(0, Math.min(1, x));
  switch (p.phase) {
    case 'scanning':
      return 0;
    case 'keyword':
      return p.filesTotal > 0 ? 0.1 * clamp(p.filesDone / p.filesTotal) : 0;
    case 'vectors': {
      const inside = p.chunksTotal ? (p.chunksDone ?? 0) / p.chunksTotal : p.filesTotal > 0 ? p.filesDone / p.filesTotal : 0;
      return 0.1 + 0.9 * clamp(inside);
    }
    default:
      return undefined;
  }
}

/**
 * The query the server suggests when a word of `response.query` is not in the index
 * (`didYouMean`, from the index's own vocabulary; a server that does not suggest sends
 * none). Undefined when there is none, or it is the query itself.
 */
export function suggestedQuery(response: SearchResponse | null | undefined): string | undefined {
  const value = (response as { didYouMean?: unknown } | null | undefined)?.didYouMean;
  return typeof value === 'string' && value.trim() && value.trim() !== response?.query.trim() ? value.trim() : undefined;
}

/** A related note is listed while its score is at least this share of the closest one's. */
export const RELATED_RATIO = 0.75;

/**
 * The related notes worth listing: those within `ratio` of the closest one. Scores differ
 * from one file to the next (a long note scores lower against everything), so a fixed
 * cut lists ten notes for one file and none for another; a cut relative to the closest
 * keeps the near ones and drops the tail. Numbers stay 1..k: the cut is the list's end.
 */
export function relatedShown<T extends { score: number }>(hits: readonly T[], ratio = RELATED_RATIO): T[] {
  const top = Math.max(0, ...hits.map((hit) => hit.score));
  return hits.filter((hit) => hit.score >= top * ratio);
}

/** Whether results that came with this status may miss files (a sync is running). */
export function resultsIncomplete(status: IndexStatus | null | undefined): boolean {
  if (!status) {
    return false;
  }
  return status.state === 'indexing' || status.keywordComplete === false || (status.vectorsReady ?? 1) < 1;
}

/** "Reading 38/155 files — results may be incomplete" above a list made during a sync. */
export function incompleteNotice(status: IndexStatus): string {
  const label = status.state === 'indexing' ? indexLabel({ ...status, paused: false }) : 'Indexing not finished';
  return `${label} — results may be incomplete`;
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

/**
 * The lines of `range` in `text` (a file's contents), for a hover: at most `maxLines`
 * lines and `maxChars` characters, cut with `…`. An end at character 0 of a line means
 * up to the line before it (`lineSpan`).
 */
export function passageText(text: string, range: Range, maxLines = 40, maxChars = 4000): string {
  const lines = text.split(/\r?\n/);
  const first = Math.max(0, range.start.line);
  const last = range.end.character === 0 && range.end.line > first ? range.end.line - 1 : range.end.line;
  const wanted = lines.slice(first, Math.max(first, last) + 1);
  let out = wanted.slice(0, maxLines).join('\n').replace(/\s+$/, '');
  const cut = wanted.length > maxLines || out.length > maxChars;
  if (out.length > maxChars) {
    out = out.slice(0, maxChars);
  }
  return cut ? `${out}…` : out;
}

/**
 * A passage as Markdown a hover card renders: without the attribute lists that documentation
 * generators put after headings and blocks (`## Add types { #add-types }`, `{: .note }`),
 * which are no Markdown and showed as text.
 */
export function readablePassage(text: string): string {
  return text
    .split('\n')
    .filter((line) => !/^\s*\{:[^}]*\}\s*$/.test(line))
    .map((line) => line.replace(/\s*\{:?\s*(?:[#.][\w-]+|[\w-]+=(?:"[^"]*"|\S+))(?:\s+(?:[#.][\w-]+|[\w-]+=(?:"[^"]*"|\S+)))*\s*\}\s*$/, ''))
    .join('\n');
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

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
  const pausedFlag = status.paused && status.state !== 'indexing' ? ' · indexing paused' : '';
  if (status.state === 'indexing') {
    const paused = status.paused ? ' (paused)' : '';
    const icon = status.paused ? '$(debug-pause)' : '$(sync~spin)';
    return {
      text: `${icon} KB: indexing ${indexProgress(status)}${paused}${flags}`,
      tooltip: `Indexing: ${progressDetail(status)}\n${tooltip}`,
      kind: 'indexing',
    };
  }
  if (status.state === 'error') {
    return { text: `$(error) KB: error${flags}`, tooltip, kind: 'error' };
  }
  return {
    text: `$(book) KB: ready · ${status.files} files${pausedFlag}${flags}`,
    tooltip,
    kind: status.readOnly ? 'readOnly' : 'ready',
  };
}

/** Thousands with a thin separator: `3,036`. */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

const PHASES: Record<string, string> = { scanning: 'scanning', keyword: 'reading', vectors: 'embedding' };

/**
 * The one progress every surface shows (status bar, notification, panel): files done of
 * files to do, fixed when the sync started, and the chunks inside them, from
 * `IndexStatus.progress`. A server that sends no `progress` falls back to indexed/known.
 */
export interface ProgressNumbers {
  /** `38/155` */
  files: string;
  /** `1,204/3,036`, when the sync counts chunks */
  chunks?: string;
  /** `reading`, `embedding`, … */
  phase?: string;
  /** 0..1, when known */
  fraction?: number;
}

export function progressNumbers(status: IndexStatus): ProgressNumbers {
  const p = status.progress;
  if (p && (p.phase === 'scanning' || p.filesTotal === 0)) {
    // Still counting the work: no total to show yet (a "0/0" would be a total that changes).
    return { files: '', phase: PHASES.scanning };
  }
  if (!p) {
    const pending = status.pending ?? 0;
    const total = status.files + pending;
    if (total === 0) {
      return { files: '' }; // opening the index: nothing counted yet
    }
    return { files: `${status.files}/${total}`, fraction: status.files / total };
  }
  const chunks = p.chunksTotal ? `${count(p.chunksDone ?? 0)}/${count(p.chunksTotal)}` : undefined;
  // Chunks move inside big files, so they measure the work better than files do.
  const fraction = p.chunksTotal
    ? (p.chunksDone ?? 0) / p.chunksTotal
    : p.filesTotal > 0
      ? p.filesDone / p.filesTotal
      : undefined;
  return {
    files: `${p.filesDone}/${p.filesTotal}`,
    chunks,
    phase: PHASES[p.phase] ?? p.phase,
    fraction: fraction === undefined ? undefined : Math.max(0, Math.min(1, fraction)),
  };
}

/**
 * The share of the whole sync done (0..1) for a bar that only moves forward: the text
 * pass (`keyword`, seconds) is the first tenth, embedding (`vectors`) the rest.
 */
export function overallFraction(status: IndexStatus): number | undefined {
  const numbers = progressNumbers(status);
  if (numbers.fraction === undefined) {
    return undefined;
  }
  switch (status.progress?.phase) {
    case 'scanning':
      return 0;
    case 'keyword':
      return 0.1 * numbers.fraction;
    case 'vectors':
      return 0.1 + 0.9 * numbers.fraction;
    default:
      return numbers.fraction;
  }
}

/** `38/155` (status bar), or `…` while the sync is still counting its files */
export function indexProgress(status: IndexStatus): string {
  return progressNumbers(status).files || '…';
}

/** `38/155 files · 1,204/3,036 chunks · embedding` (notification and panel) */
export function progressDetail(status: IndexStatus): string {
  const numbers = progressNumbers(status);
  const phase = status.paused ? 'paused' : numbers.phase;
  if (!numbers.files) {
    return `${phase ?? 'scanning'} files…`;
  }
  return (
    `${numbers.files} files${numbers.chunks ? ` · ${numbers.chunks} chunks` : ''}` + (phase ? ` · ${phase}` : '')
  );
}

/** Whether results that came with this status may miss files (a sync is running). */
export function resultsIncomplete(status: IndexStatus | null | undefined): boolean {
  if (!status) {
    return false;
  }
  return status.state === 'indexing' || status.keywordComplete === false || (status.vectorsReady ?? 1) < 1;
}

/** "Indexing 38/155 — results may be incomplete" above a list made during a sync. */
export function incompleteNotice(status: IndexStatus): string {
  const files = progressNumbers(status).files;
  return `Indexing${files ? ` ${files}` : ''} — results may be incomplete`;
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

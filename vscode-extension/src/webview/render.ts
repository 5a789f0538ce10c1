/**
 * The panel's rendering as pure functions: data in, HTML text out, everything escaped.
 * Markdown answers go through markdown-it with raw HTML disabled, so nothing the model
 * writes can inject markup or script. `main.ts` wires these to the DOM.
 */
import MarkdownIt from 'markdown-it';
import type { AskEvent, AskResponse, IndexStatus, SearchHit, Source } from '../protocol';
import { formatScore, indexProgress, lineSpan } from '../format';

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** The words of a query worth marking in a snippet (2+ letters or digits, no duplicates). */
export function queryTerms(query: string): string[] {
  const words = query.toLowerCase().match(/[\p{L}\p{N}_]{2,}/gu) ?? [];
  return [...new Set(words)].sort((a, b) => b.length - a.length);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A snippet as HTML with the query's words in `<mark>`: words starting with a term are
 * marked (so "index" marks "indexing"). Server-side marks (`**word**`) become `<mark>` too.
 */
export function highlight(snippet: string, terms: readonly string[]): string {
  const parts = snippet.split(/\*\*(.+?)\*\*/s);
  const pattern =
    terms.length > 0 ? new RegExp(`(?<![\\p{L}\\p{N}_])(${terms.map(escapeRegExp).join('|')})`, 'giu') : undefined;
  return parts
    .map((part, i) => {
      if (i % 2 === 1) {
        return `<mark>${escapeHtml(part)}</mark>`;
      }
      if (!pattern) {
        return escapeHtml(part);
      }
      let out = '';
      let last = 0;
      for (const match of part.matchAll(pattern)) {
        const start = match.index ?? 0;
        let end = start + match[0].length;
        while (end < part.length && /[\p{L}\p{N}_]/u.test(part[end] ?? '')) {
          end++;
        }
        out += escapeHtml(part.slice(last, start)) + `<mark>${escapeHtml(part.slice(start, end))}</mark>`;
        last = end;
        pattern.lastIndex = Math.max(pattern.lastIndex, end);
      }
      return out + escapeHtml(part.slice(last));
    })
    .join('');
}

export function labelClass(label: string): string {
  return label === 'filename match' ? 'badge filename' : 'badge context';
}

export function hitId(n: number): string {
  return `hit-${n}`;
}

/** One result row: number, file, label badge, heading, marked snippet, score. */
export function renderHit(hit: SearchHit, terms: readonly string[], selected: boolean): string {
  const heading = hit.heading || hit.title;
  return (
    `<li id="${hitId(hit.n)}" class="hit${selected ? ' selected' : ''}" role="option" aria-selected="${selected}" data-n="${hit.n}">` +
    `<div class="hit-top"><span class="hit-n">${hit.n}</span>` +
    `<span class="hit-path" title="${escapeHtml(hit.path)}">${escapeHtml(hit.path)}</span>` +
    `<span class="${labelClass(hit.label)}">${escapeHtml(hit.label)}</span></div>` +
    (heading ? `<div class="hit-heading">${escapeHtml(heading)}</div>` : '') +
    `<div class="hit-snippet">${highlight(hit.snippet, terms)}</div>` +
    `<div class="hit-meta"><span class="hit-lines">${lineSpan(hit.range)}</span>` +
    `<span class="hit-score" title="relevance">${formatScore(hit.score)}</span></div>` +
    `</li>`
  );
}

export function renderResults(hits: readonly SearchHit[], query: string, selected: number): string {
  const terms = queryTerms(query);
  return hits.map((hit, i) => renderHit(hit, terms, i === selected)).join('');
}

export function resultsInfo(count: number, query: string): string {
  if (!query.trim()) {
    return '';
  }
  if (count === 0) {
    return `No matches for “${query}”.`;
  }
  return `${count} file${count === 1 ? '' : 's'} — Enter or click opens; 1–9 opens that result.`;
}

/** The hover card: the passage, and the file's summary when one is known. */
export function renderHover(hit: SearchHit, summary: string | undefined): string {
  return (
    `<div class="hover-title">${escapeHtml(hit.path)} <span class="hit-lines">${lineSpan(hit.range)}</span></div>` +
    (hit.heading ? `<div class="hover-heading">${escapeHtml(hit.heading)}</div>` : '') +
    `<pre class="hover-passage">${escapeHtml(hit.snippet.replace(/\*\*(.+?)\*\*/gs, '$1'))}</pre>` +
    (summary ? `<div class="hover-summary"><strong>Summary</strong> ${escapeHtml(summary)}</div>` : '')
  );
}

export type ServerState = 'starting' | 'running' | 'stopped' | 'failed';

/** The header line: indexing x/y, ready, read-only, no model, error. */
export function statusLine(status: IndexStatus | null, server: ServerState, message?: string): { text: string; cls: string } {
  if (server === 'failed') {
    return { text: message ?? 'The server could not start — see the log.', cls: 'error' };
  }
  if (!status) {
    return { text: server === 'stopped' ? 'The server is stopped.' : 'Starting the server…', cls: 'starting' };
  }
  const flags: string[] = [];
  if (status.readOnly) {
    flags.push('read-only');
  }
  if (status.llm.reachable === false) {
    flags.push('no model');
  }
  const suffix = flags.length > 0 ? ` · ${flags.join(' · ')}` : '';
  if (status.state === 'indexing') {
    return { text: `Indexing ${indexProgress(status)}${suffix}`, cls: 'indexing' };
  }
  if (status.state === 'error') {
    return { text: `Index error${status.message ? `: ${status.message}` : ''}${suffix}`, cls: 'error' };
  }
  return { text: `Ready · ${status.files} files · ${status.chunks} chunks${suffix}`, cls: status.readOnly ? 'read-only' : 'ready' };
}

// --- the Ask transcript -------------------------------------------------------------------

export type TranscriptEntry =
  | { kind: 'question'; text: string; file?: string | null }
  | { kind: 'step'; event: Pick<AskEvent, 'kind' | 'text' | 'tool' | 'args'> }
  | { kind: 'answer'; response: AskResponse }
  | { kind: 'error'; text: string }
  | { kind: 'summary'; path: string; summary: string; cached: boolean };

const markdown = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: false });

/** Markdown → HTML with raw HTML disabled (it shows as text) and unsafe links refused. */
export function renderMarkdown(text: string): string {
  return markdown.render(text);
}

function compactArgs(args: Record<string, unknown> | null | undefined): string {
  if (!args || Object.keys(args).length === 0) {
    return '';
  }
  const json = JSON.stringify(args);
  return json.length > 200 ? `${json.slice(0, 199)}…` : json;
}

/** One streamed step as a line: "Thinking: …", "Calling `tool` with {…}", "Result: …". */
export function renderStep(event: Pick<AskEvent, 'kind' | 'text' | 'tool' | 'args'>): string {
  switch (event.kind) {
    case 'thinking':
      return `<div class="step thinking"><span class="step-kind">Thinking:</span> ${escapeHtml(event.text)}</div>`;
    case 'tool_call': {
      const args = compactArgs(event.args);
      const text = event.text && !event.tool ? ` ${escapeHtml(event.text)}` : '';
      return (
        `<div class="step tool-call"><span class="step-kind">Calling</span> <code>${escapeHtml(event.tool ?? '?')}</code>` +
        (args ? ` with <code>${escapeHtml(args)}</code>` : '') +
        `${text}</div>`
      );
    }
    case 'tool_result': {
      const text = event.text.length > 300 ? `${event.text.slice(0, 299)}…` : event.text;
      return `<div class="step tool-result"><span class="step-kind">Result${event.tool ? ` of <code>${escapeHtml(event.tool)}</code>` : ''}:</span> ${escapeHtml(text)}</div>`;
    }
    case 'error':
      return `<div class="step step-error"><span class="step-kind">Error:</span> ${escapeHtml(event.text)}</div>`;
    default:
      return '';
  }
}

/**
 * A clarification's choices: the numbered list items of the question ("1. `path` — title").
 * Choosing one replies "file N", which the server resolves against that list.
 */
export function clarifyChoices(answer: string): { question: string; choices: { n: number; label: string }[] } {
  const choices: { n: number; label: string }[] = [];
  const rest: string[] = [];
  for (const line of answer.split('\n')) {
    const item = /^\s*(\d+)[.)]\s+(.+?)\s*$/.exec(line);
    if (item?.[1] && item[2]) {
      choices.push({ n: Number(item[1]), label: item[2].replace(/`/g, '') });
    } else {
      rest.push(line);
    }
  }
  return { question: rest.join('\n').trim(), choices };
}

export function sourceText(source: Source): string {
  return `${source.n ? `[${source.n}] ` : ''}${source.path} ${lineSpan(source.range)}`;
}

const STOP_NOTES: Record<string, string> = {
  step_limit: 'Stopped at the step limit — the answer may be incomplete.',
  error: 'The question could not be answered completely.',
  cancelled: 'Cancelled.',
};

/** The final answer: markdown, clickable sources, choices for a clarification. */
export function renderAnswer(response: AskResponse, entryIndex: number): string {
  let body: string;
  if (response.stop === 'clarify') {
    const { question, choices } = clarifyChoices(response.answer);
    body =
      `<div class="markdown">${renderMarkdown(question || 'Which one do you mean?')}</div>` +
      (choices.length > 0
        ? `<ol class="choices">${choices
            .map(
              (choice) =>
                `<li><button type="button" class="choice" data-entry="${entryIndex}" data-choice="${choice.n}">` +
                `<span class="choice-n">${choice.n}</span> ${escapeHtml(choice.label)}</button></li>`,
            )
            .join('')}</ol>`
        : '');
  } else {
    body = `<div class="markdown">${renderMarkdown(response.answer)}</div>`;
  }
  const note = STOP_NOTES[response.stop];
  const sources =
    response.sources.length > 0
      ? `<div class="sources"><span class="sources-title">Sources</span><ol>${response.sources
          .map(
            (source, i) =>
              `<li><a href="#" class="source" data-entry="${entryIndex}" data-source="${i}" title="${escapeHtml(source.uri)}">${escapeHtml(sourceText(source))}</a></li>`,
          )
          .join('')}</ol></div>`
      : '';
  return `<div class="answer stop-${escapeHtml(response.stop)}">${body}${note ? `<div class="stop-note">${note}</div>` : ''}${sources}</div>`;
}

export function renderEntry(entry: TranscriptEntry, index: number): string {
  switch (entry.kind) {
    case 'question':
      return `<div class="question"><span class="q-mark">Q</span> ${escapeHtml(entry.text)}${entry.file ? ` <span class="q-file">(about <code>${escapeHtml(entry.file)}</code>)</span>` : ''}</div>`;
    case 'step':
      return renderStep(entry.event);
    case 'answer':
      return renderAnswer(entry.response, index);
    case 'error':
      return `<div class="error-line">${escapeHtml(entry.text)}</div>`;
    case 'summary':
      return `<div class="summary"><div class="summary-title">Summary of <code>${escapeHtml(entry.path)}</code>${entry.cached ? ' <span class="badge">cached</span>' : ''}</div><div class="markdown">${renderMarkdown(entry.summary)}</div></div>`;
  }
}

export function renderTranscript(entries: readonly TranscriptEntry[]): string {
  return entries.map((entry, i) => renderEntry(entry, i)).join('');
}

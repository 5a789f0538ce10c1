/** The numbered lists (search results, related notes) and the search tab's texts, as HTML. */
import { count, formatScore, incompleteNotice, lineSpan, resultsIncomplete } from '../format';
import type { ListOrigin } from '../messages';
import type { IndexStatus, SearchHit } from '../protocol';
import { escapeHtml, highlight, highlightHtml } from './html';
import { renderMarkdown } from './markdown';

export function labelClass(label: string): string {
  return label === 'filename match' ? 'badge filename' : label === 'related' ? 'badge related' : 'badge context';
}

export function hitId(n: number, list = 'hit'): string {
  return `${list}-${n}`;
}

/**
 * A path that never breaks inside a word: the folder part shrinks first (ellipsis), the
 * file name stays whole as long as it fits; the full path is the tooltip.
 */
export function renderPath(path: string): string {
  const slash = path.lastIndexOf('/');
  const dir = slash >= 0 ? path.slice(0, slash + 1) : '';
  const file = slash >= 0 ? path.slice(slash + 1) : path;
  return (
    `<span class="hit-path" title="${escapeHtml(path)}">` +
    (dir ? `<span class="hit-dir">${escapeHtml(dir)}</span>` : '') +
    `<span class="hit-file">${escapeHtml(file)}</span></span>`
  );
}

/** The file's tags as chips (clicking one searches `tag:NAME`). */
export function renderChips(tags: readonly string[] | undefined): string {
  if (!tags || tags.length === 0) {
    return '';
  }
  return (
    `<span class="chips">` +
    tags
      .map((tag) => `<button type="button" class="chip" data-tag="${escapeHtml(tag)}" title="Search tag:${escapeHtml(tag)}">#${escapeHtml(tag)}</button>`)
      .join('') +
    `</span>`
  );
}

/** One result row: number, path, heading, marked snippet; label, lines, score, tags. */
export function renderHit(hit: SearchHit, selected: boolean, list = 'hit'): string {
  const heading = hit.heading || hit.title;
  return (
    `<li id="${hitId(hit.n, list)}" class="hit${selected ? ' selected' : ''}" role="option" aria-selected="${selected}" data-n="${hit.n}">` +
    // Open Result N opens the last search's N, never a related note's: those are not numbered.
    `<div class="hit-top">${list === 'related' ? '' : `<span class="hit-n">${hit.n}</span>`}${renderPath(hit.path)}</div>` +
    (heading ? `<div class="hit-heading" title="${escapeHtml(heading)}">${escapeHtml(heading)}</div>` : '') +
    (hit.snippet ? `<div class="hit-snippet">${highlight(hit.snippet, hit.marks ?? [])}</div>` : '') +
    // In the Related tab every row is "related": the badge would say nothing.
    `<div class="hit-meta">${list === 'related' ? '' : `<span class="${labelClass(hit.label)}">${escapeHtml(hit.label)}</span>`}` +
    renderChips(hit.meta?.tags) +
    `<span class="hit-lines">${lineSpan(hit.range)}</span>` +
    `<span class="hit-score" title="relevance">${formatScore(hit.score)}</span></div>` +
    `</li>`
  );
}

export function renderResults(hits: readonly SearchHit[], selected: number, list = 'hit'): string {
  return hits.map((hit, i) => renderHit(hit, i === selected, list)).join('');
}

const ORIGIN_WORDS: Record<ListOrigin, string> = {
  panel: '',
  quickPick: 'from KB: Search',
  agent: 'from the last question',
  cli: 'from kb search',
  mcp: 'from an MCP client',
};

/** The line above a list: the query its numbers belong to, and where it was made. */
export function resultsInfo(found: number, query: string, origin: ListOrigin = 'panel'): string {
  if (!query.trim()) {
    return '';
  }
  if (found === 0) {
    return `No matches for “${query}”.`;
  }
  const from = ORIGIN_WORDS[origin] ? ` (${ORIGIN_WORDS[origin]})` : '';
  return `${count(found)} file${found === 1 ? '' : 's'} for “${query}”${from}`;
}

/** "Did you mean mexico payments?", the suggestion a button that searches it. */
export function renderDidYouMean(suggestion: string): string {
  return `Did you mean <button type="button" class="link-button suggestion" data-query="${escapeHtml(suggestion)}">${escapeHtml(suggestion)}</button>?`;
}

/** What the keys do, as the list's tooltip. */
export const LIST_KEYS = 'Enter or click opens; 1–9 opens that result; ↑ from the first result goes back to the query.';

/**
 * A search error as the panel shows it. The server names the character a bad filter
 * fails at — "query, character 19: '2026-13-01' is not a date: … (in 'payments
 * modified>2026-13-01')" — so the text it was in is shown with that character marked.
 */
export function renderSearchError(message: string): string {
  const match = /^(?:kb: )?(query|filter), character (\d+): ([\s\S]*?)(?: \(in '([\s\S]*)'\))?$/.exec(message.trim());
  if (!match) {
    return `<div class="search-error-text">${escapeHtml(message)}</div>`;
  }
  const [, where, at, what, text] = match;
  const position = Number(at) - 1; // the server counts characters from 1
  const said = `${where === 'query' ? 'The query' : 'The filter'} has a problem at character ${at}: ${what}`;
  let shown = '';
  if (text !== undefined && position >= 0 && position <= text.length) {
    const marked = text.slice(position, position + 1) || ' ';
    shown =
      `<code class="search-error-where">${escapeHtml(text.slice(0, position))}` +
      `<mark class="search-error-at">${escapeHtml(marked)}</mark>${escapeHtml(text.slice(position + 1))}</code>`;
  }
  return `<div class="search-error-text">${escapeHtml(said.replace(/\.?$/, '.'))}</div>${shown}`;
}

/** The line above a list made while indexing ran, or '' when the list is complete. */
export function searchNotice(index: IndexStatus | null | undefined): string {
  return index && resultsIncomplete(index) ? incompleteNotice(index) : '';
}

/** The key of a hit's passage (file and lines), for the passages the extension reads. */
export function passageKey(hit: Pick<SearchHit, 'uri' | 'range'>): string {
  return `${hit.uri}#${hit.range.start.line}-${hit.range.end.line}:${hit.range.end.character}`;
}

/** The hover card: the passage (the file's lines, once read; the snippet until then),
 * and the file's summary when one is known. */
export function renderHover(hit: SearchHit, summary: string | undefined, passage?: string | null): string {
  // The file's passage is Markdown (headings, code, emphasis): rendered, not shown as its syntax.
  const body = passage ? highlightHtml(renderMarkdown(passage), hit.marks ?? []) : highlight(hit.snippet, hit.marks ?? []);
  return (
    `<div class="hover-title">${escapeHtml(hit.path)} <span class="hit-lines">${lineSpan(hit.range)}</span></div>` +
    (hit.heading ? `<div class="hover-heading">${escapeHtml(hit.heading)}</div>` : '') +
    `<div class="hover-passage${passage ? ' is-passage markdown' : ''}">${body}</div>` +
    (hit.meta?.tags?.length ? `<div class="hover-tags">${hit.meta.tags.map((t) => `#${escapeHtml(t)}`).join(' ')}</div>` : '') +
    extractedLine(hit) +
    (summary ? `<div class="hover-summary"><strong>Summary</strong> ${escapeHtml(summary)}</div>` : '')
  );
}

/** The fields a model read from the note's text, which model (not the author's words), and
 * where each was read: `counterparty: Banorte — from line 12: “… sent to Banorte's H2H …”`. */
function extractedLine(hit: SearchHit): string {
  const fields = Object.entries(hit.meta?.extracted ?? {});
  if (!fields.length) {
    return '';
  }
  const rows = fields.flatMap(([name, values]) =>
    values.map(
      (v) =>
        `<div class="hover-extracted-value">${escapeHtml(name)}: ${escapeHtml(v.value)} — from line ${v.range.start.line + 1}: ` +
        `“${escapeHtml(oneLine(v.evidence, 120))}”</div>`,
    ),
  );
  return `<div class="hover-extracted">extracted by ${escapeHtml(hit.meta?.extractedBy ?? 'a model')}:${rows.join('')}</div>`;
}

/** `text` on one line, cut to `limit` characters with an ellipsis. */
function oneLine(text: string, limit: number): string {
  const flat = text.split(/\s+/).filter(Boolean).join(' ');
  return flat.length <= limit ? flat : `${flat.slice(0, limit - 1)}…`;
}

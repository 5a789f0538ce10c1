/**
 * The panel's rendering as pure functions: data in, HTML text out, everything escaped.
 * Markdown answers go through markdown-it with raw HTML disabled, so nothing the model
 * writes can inject markup or script. `main.ts` wires these to the DOM.
 */
import MarkdownIt from 'markdown-it';
import type { ServerFailure } from '../backend';
import type { ListOrigin } from '../messages';
import type { AskEvent, AskResponse, AskVerdict, IndexStatus, LlmStatus, Range, SchemaResponse, SearchHit, Source } from '../protocol';
import { count, formatScore, incompleteNotice, indexLabel, lineSpan, resultsIncomplete } from '../format';

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A snippet as HTML with `marks` — the words the server found distinctive in it, exactly
 * as written there — in `<mark>`. Whole words only: "in" never marks "index".
 */
function markPattern(marks: readonly string[]): RegExp | undefined {
  const words = [...new Set(marks.filter((m) => m.trim()))].sort((a, b) => b.length - a.length);
  return words.length === 0
    ? undefined
    : new RegExp(`(?<![\\p{L}\\p{N}_])(${words.map(escapeRegExp).join('|')})(?![\\p{L}\\p{N}_])`, 'gu');
}

/** `<mark>` the words in the text of rendered HTML, never inside a tag. */
export function highlightHtml(html: string, marks: readonly string[]): string {
  const pattern = markPattern(marks.map(escapeHtml));
  return pattern ? html.split(/(<[^>]*>)/).map((part, i) => (i % 2 === 1 ? part : part.replace(pattern, '<mark>$1</mark>'))).join('') : html;
}

export function highlight(snippet: string, marks: readonly string[]): string {
  const pattern = markPattern(marks);
  if (!pattern) {
    return escapeHtml(snippet);
  }
  let out = '';
  let last = 0;
  for (const match of snippet.matchAll(pattern)) {
    const start = match.index ?? 0;
    out += `${escapeHtml(snippet.slice(last, start))}<mark>${escapeHtml(match[0])}</mark>`;
    last = start + match[0].length;
  }
  return out + escapeHtml(snippet.slice(last));
}

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

export type ServerState = 'starting' | 'running' | 'stopped' | 'failed';

/** The header line: the sync's label (as on the status bar), ready, read-only, no model. */
export function statusLine(status: IndexStatus | null, server: ServerState, secondsLeft?: number): { text: string; cls: string } {
  if (server === 'failed') {
    // The empty state below it says why, and what to do.
    return { text: 'The server is not running.', cls: 'error' };
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
    return { text: `${indexLabel(status, secondsLeft)}${suffix}`, cls: status.paused ? 'indexing paused' : 'indexing' };
  }
  if (status.state === 'error') {
    return { text: `Index error${status.message ? `: ${status.message}` : ''}${suffix}`, cls: 'error' };
  }
  const paused = status.paused ? ' · indexing paused' : '';
  return {
    text: `Ready · ${count(status.files)} files · ${count(status.chunks)} passages${paused}${suffix}`,
    cls: status.readOnly ? 'read-only' : 'ready',
  };
}

/**
 * The server could not start: what happened, one fact a line, and the actions that fix
 * it — the setting on the tab where it applies, the log, the install command to copy.
 * Shown until the server runs.
 */
export function renderServerProblem(failure: ServerFailure | undefined, message?: string): string {
  const facts = failure?.facts ?? [message ?? 'The kb-lsp server is not running.'];
  const settingsTitle = failure?.remote
    ? 'kb.server.python, in the Remote settings (a remote window ignores the User value)'
    : 'kb.server.python, in the User settings';
  return (
    `<div class="empty-title">The kb-lsp server could not start</div>` +
    facts.map((fact) => `<p class="empty-fact">${escapeHtml(fact)}</p>`).join('') +
    (failure?.install
      ? `<div class="install"><code class="install-command">${escapeHtml(failure.install)}</code>` +
        `<button type="button" class="secondary" data-action="copyInstall" data-text="${escapeHtml(failure.install)}" title="Copy, to run in a terminal in the kb-lsp repository">Copy</button></div>`
      : '') +
    `<div class="empty-actions">` +
    `<button type="button" data-action="openServerSettings" title="${escapeHtml(settingsTitle)}">Open Settings</button>` +
    `<button type="button" class="secondary" data-action="showLog">Show Log</button>` +
    `<button type="button" class="secondary" data-action="restartServer">Restart Server</button>` +
    `</div>`
  );
}

// --- metadata completion ------------------------------------------------------------------

export interface Completion {
  /** What replaces the word being typed, e.g. `tag:payments `. */
  insert: string;
  label: string;
  detail: string;
}

/** The filter word under the cursor: `tag:pay` at the end of `mexico tag:pay`. */
export function filterWordAt(text: string, cursor: number): { start: number; key: string; value: string } | undefined {
  const before = text.slice(0, cursor);
  const match = /(^|\s)(-?)([A-Za-z_][\w-]*):("?[^\s"]*)$/.exec(before);
  if (!match) {
    return undefined;
  }
  const start = (match.index ?? 0) + (match[1] ?? '').length;
  return { start, key: `${match[2] ?? ''}${match[3] ?? ''}`, value: (match[4] ?? '').replace(/^"/, '') };
}

/**
 * Completions for the filter word being typed, from `kb/schema`: `tag:` offers the tags
 * (the field `tags`, or `tag`), `status:` the statuses, and so on, most used first.
 */
export function filterCompletions(schema: SchemaResponse | null, key: string, value: string, max = 12): Completion[] {
  if (!schema) {
    return [];
  }
  const negated = key.startsWith('-');
  const name = (negated ? key.slice(1) : key).toLowerCase();
  const field = schema.fields.find((f) => f.name.toLowerCase() === name) ?? schema.fields.find((f) => f.name.toLowerCase() === `${name}s`);
  if (!field) {
    return [];
  }
  const prefix = value.toLowerCase();
  const folder = field.name.toLowerCase() === 'folder';
  return (field.top ?? [])
    // A blank value is no filter, except the files at the top, which `folder:/` means.
    .filter((v) => v.value.trim() !== '' || folder)
    .map((v) => (v.value.trim() === '' ? { ...v, value: '/' } : v))
    .filter((v) => v.value.toLowerCase().startsWith(prefix) || (prefix.length > 1 && v.value.toLowerCase().includes(prefix)))
    .slice(0, max)
    .map((v) => {
      const quoted = /[\s"]/.test(v.value) ? `"${v.value.replace(/"/g, '')}"` : v.value;
      const top = folder && v.value === '/';
      return {
        insert: `${negated ? '-' : ''}${name}:${quoted} `,
        label: `${name}:${v.value}`,
        detail: `${top ? 'top level · ' : ''}${count(v.count)} file${v.count === 1 ? '' : 's'}`,
      };
    });
}

export function renderCompletions(items: readonly Completion[], active: number): string {
  return items
    .map(
      (item, i) =>
        `<li id="completion-${i}" class="completion${i === active ? ' active' : ''}" role="option" aria-selected="${i === active}" data-index="${i}">` +
        `<span class="completion-label">${escapeHtml(item.label)}</span><span class="completion-detail">${escapeHtml(item.detail)}</span></li>`,
    )
    .join('');
}

// --- the Ask transcript -------------------------------------------------------------------

export type StepEvent = Pick<AskEvent, 'kind' | 'text' | 'tool' | 'args'>;

export type TranscriptEntry =
  | { kind: 'question'; text: string; file?: string | null; pending?: boolean }
  | { kind: 'step'; event: StepEvent }
  /** `lead`: the answer's first paragraph when the model card already says it. */
  | { kind: 'answer'; response: AskResponse; lead?: string }
  | { kind: 'error'; text: string }
  | { kind: 'summary'; path: string; summary: string; cached: boolean };

/** The answer of the running ask as it streams in (`answer` events). */
export interface Streaming {
  text: string;
  /** Whether the model has been silent since (a "Waiting for the model" came last). */
  waiting?: string;
}

/** Where `[n]` and `[path:lines]` in an answer lead: the answer's sources. */
interface CiteEnv {
  entry: number;
  sources: readonly Source[];
}

const CITATION = /\[(\d{1,3})\]|\[([^[\]\s]+\.(?:md|markdown))(?::(\d+)(?:[-–](\d+))?)?\]/g;

/** The index in `sources` of citation `[n]`: the source numbered n, else the n-th. */
export function citedSource(sources: readonly Source[], n: number): number | undefined {
  const numbered = sources.findIndex((source) => source.n === n);
  if (numbered >= 0) {
    return numbered;
  }
  return sources.every((source) => source.n === undefined || source.n === null) && n >= 1 && n <= sources.length ? n - 1 : undefined;
}

const markdown = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: false });

/**
 * Citations become links, the way chat panels show them: `[2]` opens source 2 at its
 * lines, `[docs/a.md:12-18]` opens that file there. Only in text (never in code or an
 * existing link), and only `[n]` that name a source of this answer.
 */
markdown.core.ruler.push('kb_citations', (state) => {
  const env = (state.env as { cite?: CiteEnv } | undefined)?.cite;
  if (!env) {
    return false;
  }
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) {
      continue;
    }
    const out: typeof block.children = [];
    let inLink = 0;
    for (const token of block.children) {
      inLink += token.type === 'link_open' ? 1 : token.type === 'link_close' ? -1 : 0;
      if (token.type !== 'text' || inLink > 0 || !token.content.includes('[')) {
        out.push(token);
        continue;
      }
      let last = 0;
      for (const match of token.content.matchAll(CITATION)) {
        const at = match.index ?? 0;
        let attrs: [string, string][] | undefined;
        if (match[1]) {
          const index = citedSource(env.sources, Number(match[1]));
          const source = index === undefined ? undefined : env.sources[index];
          if (source && index !== undefined) {
            attrs = [
              ['href', '#'],
              ['class', 'cite'],
              ['data-entry', String(env.entry)],
              ['data-source', String(index)],
              ['title', `${source.path} ${lineSpan(source.range)}`],
            ];
          }
        } else if (match[2]) {
          const lines = match[3] ? `#L${match[3]}${match[4] ? `-L${match[4]}` : ''}` : '';
          attrs = [
            ['href', `${match[2]}${lines}`],
            ['class', 'cite cite-path'],
            ['title', `${match[2]}${match[3] ? ` L${match[3]}${match[4] ? `–${match[4]}` : ''}` : ''}`],
          ];
        }
        if (!attrs) {
          continue;
        }
        if (at > last) {
          const before = new state.Token('text', '', 0);
          before.content = token.content.slice(last, at);
          out.push(before);
        }
        const open = new state.Token('link_open', 'a', 1);
        open.attrs = attrs;
        const text = new state.Token('text', '', 0);
        text.content = match[0];
        out.push(open, text, new state.Token('link_close', 'a', -1));
        last = at + match[0].length;
      }
      if (last === 0) {
        out.push(token);
      } else if (last < token.content.length) {
        const after = new state.Token('text', '', 0);
        after.content = token.content.slice(last);
        out.push(after);
      }
    }
    block.children = out;
  }
  return true;
});

/** Markdown → HTML with raw HTML disabled (it shows as text) and unsafe links refused;
 * with `cite`, the answer's citations become links to its sources. */
export function renderMarkdown(text: string, cite?: CiteEnv): string {
  return markdown.render(text, cite ? { cite } : {});
}

function compactArgs(args: Record<string, unknown> | null | undefined): string {
  if (!args || Object.keys(args).length === 0) {
    return '';
  }
  const json = JSON.stringify(args);
  return json.length > 200 ? `${json.slice(0, 199)}…` : json;
}

/** One streamed step as a line: "Thinking: …", "Calling `tool` with {…}", "Result: …". */
export function renderStep(event: StepEvent): string {
  switch (event.kind) {
    case 'thinking':
      return `<div class="step thinking"><span class="step-kind">Thinking:</span> ${escapeHtml(event.text)}</div>`;
    case 'status':
      return `<div class="step status-step">${escapeHtml(event.text)}</div>`;
    case 'tool_call': {
      const path = event.args?.path;
      if (event.tool === 'summarize_document' && typeof path === 'string') {
        // The server's own summarizer, not a tool a model called (grounded mode calls none):
        // said as what it does, never as a raw call with its JSON (issue 39, defect 8).
        return `<div class="step tool-call"><span class="step-kind">Summarizing</span> <code>${escapeHtml(path)}</code></div>`;
      }
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
 * The answer so far after an `answer` event. A piece (`args.piece`) adds to it, or starts
 * it over with `args.replace` (the model went back to its tools after all); an event
 * without `piece` is the whole answer, as a server that does not stream sends it once at
 * the end — it replaces what came, so a server that sends both never shows it twice.
 */
export function streamedText(sofar: string, event: { text: string; args?: Record<string, unknown> | null }): string {
  if (event.args?.piece !== true) {
    return event.text;
  }
  return (event.args.replace === true ? '' : sofar) + event.text;
}

const WAITING = /^Waiting for the model\b/;

/** A "Waiting for the model…" status: said only while the model is silent. */
export function isWaiting(event: StepEvent): boolean {
  return event.kind === 'status' && WAITING.test(event.text);
}

const SEARCH_TOOLS = new Set(['search_knowledge_base', 'search_in_document']);
const READ_TOOLS = new Set(['read_file', 'summarize_document']);

const GIVEN = /^(\d+) passages? for the model\b/;

/** An ask's steps in one line: "Searched 2×, read 1 file". */
export function stepsSummary(events: readonly StepEvent[]): string {
  const calls = events.filter((e) => e.kind === 'tool_call');
  const searches = calls.filter((e) => SEARCH_TOOLS.has(e.tool ?? '')).length;
  const read = new Set(
    calls
      .filter((e) => READ_TOOLS.has(e.tool ?? ''))
      .map((e, i) => {
        const args = e.args ?? {};
        const file = args.path ?? args.file ?? args.n;
        return typeof file === 'string' || typeof file === 'number' ? String(file) : `#${i}`;
      }),
  ).size;
  const listed = calls.some((e) => e.tool === 'list_files');
  const others = calls.filter((e) => !SEARCH_TOOLS.has(e.tool ?? '') && !READ_TOOLS.has(e.tool ?? '') && e.tool !== 'list_files').length;
  // Grounded mode has no tool calls: the server gave the model numbered passages.
  const given = events.map((e) => (e.kind === 'tool_result' && !e.tool ? GIVEN.exec(e.text) : null)).find((m) => m !== null);
  const parts = [
    ...(given ? [`gave the model ${given[1]} passage${given[1] === '1' ? '' : 's'}`] : []),
    ...(searches ? [`searched ${searches}×`] : []),
    ...(read ? [`read ${read} file${read === 1 ? '' : 's'}`] : []),
    ...(listed ? ['listed the files'] : []),
    ...(others ? [`${others} other step${others === 1 ? '' : 's'}`] : []),
  ];
  const shown = events.filter((e) => !isWaiting(e)).length;
  const text = parts.length > 0 ? parts.join(', ') : `${shown} step${shown === 1 ? '' : 's'}`;
  const errors = events.filter((e) => e.kind === 'error').length;
  const said = errors ? `${text}, ${errors} error${errors === 1 ? '' : 's'}` : text;
  return said.charAt(0).toUpperCase() + said.slice(1);
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

/** The last line of a 0-based range, counted as `lineSpan` does (an end at character 0 is
 * the line before). */
function lastLine(range: Range): number {
  return range.end.character === 0 && range.end.line > range.start.line ? range.end.line - 1 : range.end.line;
}

export interface SourceGroup {
  path: string;
  uri: string;
  /** The file's cited lines, overlapping and adjacent ranges merged, in file order. */
  ranges: { range: Range; numbers: number[] }[];
}

/** The sources once per file, in the order they were first cited, line ranges merged. */
export function groupSources(sources: readonly Source[]): SourceGroup[] {
  const groups = new Map<string, { path: string; uri: string; items: { range: Range; n: number }[] }>();
  sources.forEach((source, i) => {
    const group = groups.get(source.path) ?? { path: source.path, uri: source.uri, items: [] };
    group.items.push({ range: source.range, n: source.n ?? i + 1 });
    groups.set(source.path, group);
  });
  return [...groups.values()].map((group) => {
    const sorted = [...group.items].sort((a, b) => a.range.start.line - b.range.start.line);
    const ranges: SourceGroup['ranges'] = [];
    for (const item of sorted) {
      const current = ranges.at(-1);
      if (current && item.range.start.line <= lastLine(current.range) + 1) {
        if (lastLine(item.range) > lastLine(current.range)) {
          current.range = { start: current.range.start, end: item.range.end };
        }
        current.numbers.push(item.n);
      } else {
        ranges.push({ range: item.range, numbers: [item.n] });
      }
    }
    for (const range of ranges) {
      range.numbers = [...new Set(range.numbers)].sort((a, b) => a - b);
    }
    return { path: group.path, uri: group.uri, ranges };
  });
}

/** `[2] docs/setup.md L4–9`: one numbering style, the answer's own `[n]`. */
export function sourceText(source: Source, index: number): string {
  return `[${source.n ?? index + 1}] ${source.path} ${lineSpan(source.range)}`;
}

/** The answer without the "Sources: …" paragraph at its end: the list below says it, once. */
export function withoutSourcesParagraph(answer: string): string {
  const paragraphs = answer.split(/\n\s*\n/);
  while (paragraphs.length > 1 && /^\s*(\*\*|_)?(Sources|Passages the model was given)\b/i.test(paragraphs.at(-1) ?? '')) {
    paragraphs.pop();
  }
  return paragraphs.join('\n\n');
}

/** The server's `> Cut off: …` paragraph (for the CLI and MCP) out of the answer: the stop
 * note below it says it, once, in the server's words (the limit and the setting). */
export function withoutCutOffNote(answer: string): { text: string; note?: string } {
  const paragraphs = answer.split(/\n\s*\n/);
  const cut = paragraphs.find((p) => /^\s*>\s*Cut off:/.test(p));
  if (cut === undefined) {
    return { text: answer };
  }
  const note = cut.replace(/^\s*>\s*/gm, '').replace(/\s+/g, ' ').trim();
  return { text: paragraphs.filter((p) => p !== cut).join('\n\n'), note };
}

const STOP_NOTES: Record<string, string> = {
  step_limit: 'Stopped at the step limit — the answer may be incomplete.',
  length: 'The model was cut off — the answer is incomplete.',
  degenerate: 'Stopped early — the model’s text had degenerated, and was cut there.',
  empty: 'The model gave no answer.',
  cancelled: 'Stopped.',
};

/** The one verdict badge: whether the notes support the answer (`AskResponse.verdict`). */
const VERDICT_BADGES: Record<AskVerdict, { text: string; title: string }> = {
  supported: { text: 'supported', title: 'The grounding check found what the model says in the passages it cites.' },
  unsupported: { text: 'not supported by the notes', title: 'The grounding check did not find the model’s answer in your notes: it is a claim to check.' },
  no_model: { text: 'no model', title: 'No model answered: these are the best passages for the question.' },
};

/** The mode, as the verdict's small print. */
const MODE_WORDS: Record<string, string> = {
  agent: 'agent mode: the model searched and read the notes with its tools',
  grounded: 'grounded mode: the model answered from the best passages',
  fallback: 'no model answered',
};

/** The verdict of an answer; a server before issue 35 sends `grounded` and `mode` only. */
export function verdictOf(response: AskResponse): AskVerdict | null {
  if (response.verdict !== undefined) {
    return response.verdict;
  }
  if (!['answer', 'length', 'degenerate'].includes(response.stop)) {
    return null;
  }
  return response.mode === 'fallback' ? 'no_model' : response.grounded === false ? 'unsupported' : 'supported';
}

/** The sources of an answer, once per file: `[1, 3] docs/cors.md L1–20 · L40–45`, the file
 * and each range a link to those lines. */
export function renderSources(response: AskResponse, entryIndex: number): string {
  const groups = groupSources(response.sources);
  if (groups.length === 0) {
    return '';
  }
  // One wording with the answer's own: the verdict says whether it cites them.
  const title = response.mode === 'grounded' ? 'Passages the model was given' : response.mode === 'fallback' ? 'Passages' : 'Sources';
  const items = groups.map((group, g) => {
    const numbers = [...new Set(group.ranges.flatMap((r) => r.numbers))].sort((a, b) => a - b);
    const ranges = group.ranges
      .map(
        (r, k) =>
          `<a href="#" class="source-range" data-entry="${entryIndex}" data-group="${g}" data-range="${k}" title="${escapeHtml(`${group.path} ${lineSpan(r.range)}`)}">${lineSpan(r.range)}</a>`,
      )
      .join(' · ');
    return (
      `<li><span class="source-n">[${numbers.join(', ')}]</span> ` +
      `<a href="#" class="source" data-entry="${entryIndex}" data-group="${g}" data-range="0" title="${escapeHtml(group.path)}">${escapeHtml(group.path)}</a> ` +
      `<span class="source-lines">${ranges}</span></li>`
    );
  });
  return `<div class="sources"><span class="sources-title">${escapeHtml(title)}</span><ul>${items.join('')}</ul></div>`;
}

/**
 * The citations the server dropped from an answer because they name no passage the model
 * was given (`AskResponse.dropped`, as the model wrote them: `[7]`, `[docs/x.md:3]`); a
 * server that does not check sends none.
 */
export function droppedCitations(response: AskResponse): string[] {
  const value = (response as { dropped?: unknown }).dropped;
  return Array.isArray(value) ? value.filter((c): c is string => typeof c === 'string' && c.trim() !== '').slice(0, 20) : [];
}

/** The final answer: mode, markdown with linked citations, copy, the sources once per
 * file, choices for a clarification (which lists no sources: its buttons are the choice). */
export function renderAnswer(response: AskResponse, entryIndex: number, hideLead?: string): string {
  let body: string;
  let cutOff: string | undefined;
  const clarify = response.stop === 'clarify';
  if (clarify) {
    const { question, choices } = clarifyChoices(withoutSourcesParagraph(response.answer));
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
    const full = response.sources.length > 0 ? withoutSourcesParagraph(response.answer) : response.answer;
    const { text, note } = withoutCutOffNote(full);
    cutOff = note;
    body = renderAnswerBody(withoutLead(text, hideLead), response, entryIndex);
  }
  const verdict = clarify || response.stop === 'cancelled' ? null : verdictOf(response);
  const badge = verdict ? VERDICT_BADGES[verdict] : undefined;
  const mode = MODE_WORDS[response.mode ?? 'agent'];
  const small = mode && !clarify && response.stop !== 'cancelled' && response.mode !== 'fallback' ? `${mode}${response.modeReason ? ` (${response.modeReason})` : ''}` : '';
  const badges =
    (badge ? `<span class="badge verdict verdict-${escapeHtml(verdict ?? '')}" title="${escapeHtml(badge.title)}">${escapeHtml(badge.text)}</span>` : '') +
    (small ? `<span class="mode-note">${escapeHtml(small)}</span>` : '');
  const tools =
    `<div class="answer-bar">${badges}<span class="spacer"></span>` +
    `<button type="button" class="link-button copy-answer" data-entry="${entryIndex}" title="Copy the answer as Markdown">Copy</button></div>`;
  const note = cutOff ?? STOP_NOTES[response.stop];
  const dropped = clarify ? [] : droppedCitations(response);
  const droppedNote = dropped.length
    ? `<div class="dropped-note">Left out ${dropped.map((c) => `<code>${escapeHtml(c)}</code>`).join(', ')}: the model cited ${dropped.length === 1 ? 'a passage' : 'passages'} it was not given.</div>`
    : '';
  const sources = clarify ? '' : droppedNote + renderSources(response, entryIndex);
  const cls = `answer stop-${escapeHtml(response.stop)}${verdict === 'unsupported' ? ' is-unsupported' : ''}`;
  return `<div class="${cls}">${tools}${body}${note ? `<div class="stop-note">${escapeHtml(note)}</div>` : ''}${sources}</div>`;
}

export const FOLDED_SUMMARY = 'The model’s answer is not supported by your notes — show it';
const UNSUPPORTED_NOTE = /^\s*> Not supported by your notes\b/;

/**
 * An answer's Markdown. When the check found the model's text unsupported
 * (`response.folded`), that text is folded under the quotes: the quotes, the verdict's
 * reasons, then "The model's answer is not supported by your notes — show it".
 */
export function renderAnswerBody(text: string, response: AskResponse, entryIndex: number): string {
  const env = { entry: entryIndex, sources: response.sources };
  const folded = response.folded?.trim();
  const at = folded ? text.indexOf(folded) : -1;
  if (!folded || at < 0) {
    return `<div class="markdown">${renderMarkdown(text, env)}</div>`;
  }
  const before = text.slice(0, at);
  const after = text.slice(at + folded.length).split(/\n\s*\n/);
  const notes = after.filter((p) => UNSUPPORTED_NOTE.test(p));
  const rest = after.filter((p) => p.trim() && !UNSUPPORTED_NOTE.test(p));
  const head = [before.trim(), ...notes].filter((p) => p.trim()).join('\n\n');
  return (
    (head ? `<div class="markdown">${renderMarkdown(head, env)}</div>` : '') +
    `<details class="folded-answer"><summary>${escapeHtml(FOLDED_SUMMARY)}</summary>` +
    `<div class="markdown">${renderMarkdown(folded, env)}</div></details>` +
    (rest.length ? `<div class="markdown">${renderMarkdown(rest.join('\n\n'), env)}</div>` : '')
  );
}

/** The answer without its first paragraph when that paragraph is `lead` (the model card says it). */
export function withoutLead(answer: string, lead: string | undefined): string {
  if (!lead) {
    return answer;
  }
  const [first, ...rest] = answer.split(/\n\s*\n/);
  return first?.trim() === lead.trim() ? rest.join('\n\n') : answer;
}

export function renderEntry(entry: TranscriptEntry, index: number): string {
  switch (entry.kind) {
    case 'question':
      return (
        `<div class="question${entry.pending ? ' pending' : ''}"><span class="q-mark">Q</span><span class="q-text">${escapeHtml(entry.text)}` +
        `${entry.file ? ` <span class="q-file">(about <code>${escapeHtml(entry.file)}</code>)</span>` : ''}</span>` +
        `</div>`
      );
    case 'step':
      return isWaiting(entry.event) ? '' : renderStep(entry.event);
    case 'answer':
      return renderAnswer(entry.response, index, entry.lead);
    case 'error':
      return `<div class="error-line">${escapeHtml(entry.text)}</div>`;
    case 'summary':
      return `<div class="summary"><div class="summary-title">Summary of <code>${escapeHtml(entry.path)}</code>${entry.cached ? ' <span class="badge">cached</span>' : ''}</div><div class="markdown">${renderMarkdown(entry.summary)}</div></div>`;
  }
}

const NO_MODEL = /^No model:\s*/;

/** Why an ask fell back, from its steps: the server's "No model: …" status, else its first error. */
export function fallbackReason(entries: readonly TranscriptEntry[]): string | undefined {
  for (const entry of entries) {
    if (entry.kind === 'step' && entry.event.kind === 'status' && NO_MODEL.test(entry.event.text)) {
      return entry.event.text.replace(NO_MODEL, '');
    }
  }
  const error = entries.find((e) => e.kind === 'step' && e.event.kind === 'error');
  return error?.kind === 'step' ? error.event.text : undefined;
}

function isModelTrouble(entry: TranscriptEntry): boolean {
  return entry.kind === 'step' && (entry.event.kind === 'error' || (entry.event.kind === 'status' && NO_MODEL.test(entry.event.text)));
}

export interface TranscriptView {
  /** The ask still runs: its steps stay open and its answer streams in. */
  pending?: boolean;
  /** The answer streamed so far, for the running ask. */
  streaming?: Streaming | null;
  /** Steps blocks (by the index of their first step) the user opened. */
  openSteps?: ReadonlySet<number>;
}

/**
 * The transcript. An ask's steps stream in one by one; once it has its answer they fold
 * into one line ("Searched 2×, read 1 file") that opens on a click. Model trouble is not
 * repeated line by line: when an ask fell back (no model answered), its "No model: …"
 * status and its errors are left out — the model card says it once. "Waiting for the
 * model" shows only while the model is silent: at the bottom, as the last thing said.
 */
export function renderTranscript(entries: readonly TranscriptEntry[], view: TranscriptView = {}): string {
  const fellBack = new Set<number>();
  let start = 0;
  entries.forEach((entry, i) => {
    if (entry.kind === 'question') {
      start = i;
    } else if (entry.kind === 'answer' && entry.response.mode === 'fallback') {
      for (let k = start; k < i; k++) {
        fellBack.add(k);
      }
    }
  });
  const out: string[] = [];
  for (let i = 0; i < entries.length; ) {
    const entry = entries[i];
    if (entry?.kind !== 'step') {
      out.push(entry ? renderEntry(entry, i) : '');
      i += 1;
      continue;
    }
    let end = i;
    while (entries[end]?.kind === 'step') {
      end += 1;
    }
    const steps = entries.slice(i, end).filter((e): e is Extract<TranscriptEntry, { kind: 'step' }> => e.kind === 'step');
    const shown = entries
      .slice(i, end)
      .map((e, k) => (fellBack.has(i + k) && isModelTrouble(e) ? '' : renderEntry(e, i + k)))
      .join('');
    const live = Boolean(view.pending) && end === entries.length;
    if (live) {
      out.push(`<div class="steps live">${shown}</div>`);
    } else if (shown) {
      const open = view.openSteps?.has(i) ? ' open' : '';
      out.push(
        `<details class="steps" data-first="${i}"${open}><summary>${escapeHtml(stepsSummary(steps.map((s) => s.event)))}</summary>${shown}</details>`,
      );
    }
    i = end;
  }
  if (view.pending && view.streaming?.text) {
    out.push(
      `<div class="answer pending-answer" aria-busy="true"><div class="markdown">${renderMarkdown(view.streaming.text)}</div></div>`,
    );
  }
  const waiting = view.pending ? view.streaming?.waiting : undefined;
  if (waiting) {
    out.push(`<div class="step status-step waiting">${escapeHtml(waiting)}</div>`);
  }
  return out.join('');
}

// --- the model card -------------------------------------------------------------------------

export interface ModelProblem {
  /** What went wrong, as the server said it. */
  message: string;
  /** `unreachable` (start the server), `missing` (pull the model), `timeout`, `other`. */
  kind: 'unreachable' | 'missing' | 'timeout' | 'other';
}

/** Classify a model error message from the server. */
export function modelProblem(message: string): ModelProblem {
  const text = message.toLowerCase();
  const kind: ModelProblem['kind'] = /not (available|found|pulled|served)|pull |no such model|model .*(does not exist|not loaded)/.test(text)
    ? 'missing'
    : /timed? ?out|timeout|did not answer|no answer within/.test(text)
      ? 'timeout'
      : /not reachable|unreachable|connect|refused|not running/.test(text)
        ? 'unreachable'
        : 'other';
  return { message, kind };
}

/** The port of a model server's URL (its scheme's default when none is written). */
export function urlPort(url: string): number | undefined {
  try {
    const parsed = new URL(url);
    return parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
  } catch {
    return undefined;
  }
}

/** The OpenAI-compatible server a port suggests: LM Studio's 1234, vLLM's 8000, Ollama's
 * 11434, else llama.cpp's llama-server (8080 by default). */
export function openAiServerFor(port: number | undefined): 'lmstudio' | 'vllm' | 'ollama' | 'llama-server' {
  return port === 1234 ? 'lmstudio' : port === 8000 ? 'vllm' : port === 11434 ? 'ollama' : 'llama-server';
}

/**
 * The command a user runs to fix it, for the configured provider and port: `ollama serve`
 * (`OLLAMA_HOST=… ollama serve` on another port), `ollama pull MODEL`, `llama-server -m
 * model.gguf --port N`, `lms server start --port N`, `vllm serve MODEL --port N`; none
 * when the fix is choosing another model.
 */
export function fixCommand(problem: ModelProblem, llm: LlmStatus | undefined): string | undefined {
  const port = llm ? urlPort(llm.host) : undefined;
  const model = llm?.model ?? '';
  if (llm?.provider === 'openai') {
    if (problem.kind === 'missing') {
      return undefined;
    }
    const at = port ?? 8080;
    switch (openAiServerFor(port)) {
      case 'lmstudio':
        return `lms server start --port ${at}`;
      case 'vllm':
        return `vllm serve ${model || 'MODEL'} --port ${at}`;
      case 'ollama':
        return 'ollama serve';
      default:
        return `llama-server -m ${/\.gguf$/i.test(model) ? model : 'model.gguf'} --port ${at}`;
    }
  }
  if (problem.kind === 'missing') {
    return `ollama pull ${model}`.trim();
  }
  return port && port !== 11434 && llm ? `OLLAMA_HOST=${new URL(llm.host).host} ollama serve` : 'ollama serve';
}

/** What the model card's "Open Settings" shows: only the model's settings, for its provider. */
export function modelSettingsQuery(llm: LlmStatus | undefined): string {
  const ids =
    llm?.provider === 'openai'
      ? ['kb.llm.provider', 'kb.llm.baseUrl', 'kb.llm.model', 'kb.llm.apiKeyEnv', 'kb.llm.mode', 'kb.llm.timeout']
      : ['kb.llm.provider', 'kb.llm.baseUrl', 'kb.llm.model', 'kb.ollama.host', 'kb.ollama.model', 'kb.llm.mode', 'kb.ollama.timeout'];
  return ids.map((id) => `@id:${id}`).join(' ');
}

/** The one card saying what is wrong with the model, with what to do about it. */
export function renderModelCard(problem: ModelProblem, llm: LlmStatus | undefined): string {
  const command = fixCommand(problem, llm);
  const openai = llm?.provider === 'openai';
  const title =
    problem.kind === 'missing'
      ? openai
        ? 'The server does not serve this model'
        : 'The model is not installed'
      : problem.kind === 'timeout'
        ? 'The model did not answer in time'
        : problem.kind === 'unreachable'
          ? 'No model is reachable'
          : 'The model could not answer';
  const where = llm ? `<div class="model-where"><code>${escapeHtml(llm.model)}</code> at <code>${escapeHtml(llm.host)}</code></div>` : '';
  const works = openai
    ? 'Any OpenAI-compatible server works: llama.cpp’s llama-server, LM Studio, vLLM.'
    : 'Ollama, or any OpenAI-compatible server (llama-server, LM Studio, vLLM): Choose a model.';
  return (
    `<div class="model-title" title="${escapeHtml(problem.message)}">${escapeHtml(title)}</div>` +
    `<div class="model-message">${escapeHtml(problem.message)}</div>${where}` +
    `<div class="model-note">${escapeHtml(works)} Until a model answers, questions get the best matching passages.</div>` +
    `<div class="model-actions">` +
    `<button type="button" data-action="chooseModel">Choose a model…</button>` +
    `<button type="button" class="secondary" data-action="openSettings" data-query="${escapeHtml(modelSettingsQuery(llm))}">Open settings</button>` +
    `<button type="button" class="secondary" data-action="retry">Retry</button>` +
    (command
      ? `<button type="button" class="secondary copy-fix" data-action="copyFix" data-text="${escapeHtml(command)}" title="Copy to run in a terminal">Copy <code>${escapeHtml(command)}</code></button>`
      : '') +
    `</div>`
  );
}

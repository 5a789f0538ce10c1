/**
 * The panel's rendering as pure functions: data in, HTML text out, everything escaped.
 * Markdown answers go through markdown-it with raw HTML disabled, so nothing the model
 * writes can inject markup or script. `main.ts` wires these to the DOM.
 */
import MarkdownIt from 'markdown-it';
import type { AskEvent, AskResponse, IndexStatus, LlmStatus, SchemaResponse, SearchHit, Source } from '../protocol';
import { formatScore, incompleteNotice, lineSpan, progressDetail, resultsIncomplete } from '../format';

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
export function highlight(snippet: string, marks: readonly string[]): string {
  const words = [...new Set(marks.filter((m) => m.trim()))].sort((a, b) => b.length - a.length);
  if (words.length === 0) {
    return escapeHtml(snippet);
  }
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}_])(${words.map(escapeRegExp).join('|')})(?![\\p{L}\\p{N}_])`, 'gu');
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
    `<div class="hit-top"><span class="hit-n">${hit.n}</span>${renderPath(hit.path)}</div>` +
    (heading ? `<div class="hit-heading" title="${escapeHtml(heading)}">${escapeHtml(heading)}</div>` : '') +
    (hit.snippet ? `<div class="hit-snippet">${highlight(hit.snippet, hit.marks ?? [])}</div>` : '') +
    `<div class="hit-meta"><span class="${labelClass(hit.label)}">${escapeHtml(hit.label)}</span>` +
    renderChips(hit.meta?.tags) +
    `<span class="hit-lines">${lineSpan(hit.range)}</span>` +
    `<span class="hit-score" title="relevance">${formatScore(hit.score)}</span></div>` +
    `</li>`
  );
}

export function renderResults(hits: readonly SearchHit[], selected: number, list = 'hit'): string {
  return hits.map((hit, i) => renderHit(hit, i === selected, list)).join('');
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

/** The line above a list made while indexing ran, or '' when the list is complete. */
export function searchNotice(index: IndexStatus | null | undefined): string {
  return index && resultsIncomplete(index) ? incompleteNotice(index) : '';
}

/** The hover card: the passage, and the file's summary when one is known. */
export function renderHover(hit: SearchHit, summary: string | undefined): string {
  return (
    `<div class="hover-title">${escapeHtml(hit.path)} <span class="hit-lines">${lineSpan(hit.range)}</span></div>` +
    (hit.heading ? `<div class="hover-heading">${escapeHtml(hit.heading)}</div>` : '') +
    `<div class="hover-passage">${highlight(hit.snippet, hit.marks ?? [])}</div>` +
    (hit.meta?.tags?.length ? `<div class="hover-tags">${hit.meta.tags.map((t) => `#${escapeHtml(t)}`).join(' ')}</div>` : '') +
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
    return { text: `Indexing ${progressDetail(status)}${suffix}`, cls: status.paused ? 'indexing paused' : 'indexing' };
  }
  if (status.state === 'error') {
    return { text: `Index error${status.message ? `: ${status.message}` : ''}${suffix}`, cls: 'error' };
  }
  const paused = status.paused ? ' · indexing paused' : '';
  return { text: `Ready · ${status.files} files · ${status.chunks} chunks${paused}${suffix}`, cls: status.readOnly ? 'read-only' : 'ready' };
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
  return (field.top ?? [])
    .filter((v) => v.value.toLowerCase().startsWith(prefix) || (prefix.length > 1 && v.value.toLowerCase().includes(prefix)))
    .slice(0, max)
    .map((v) => {
      const quoted = /[\s"]/.test(v.value) ? `"${v.value.replace(/"/g, '')}"` : v.value;
      return { insert: `${negated ? '-' : ''}${name}:${quoted} `, label: `${name}:${v.value}`, detail: `${v.count} file${v.count === 1 ? '' : 's'}` };
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

export type TranscriptEntry =
  | { kind: 'question'; text: string; file?: string | null; pending?: boolean }
  | { kind: 'step'; event: Pick<AskEvent, 'kind' | 'text' | 'tool' | 'args'> }
  /** `lead`: the answer's first paragraph when the model card already says it. */
  | { kind: 'answer'; response: AskResponse; lead?: string }
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
    case 'status':
      return `<div class="step status-step">${escapeHtml(event.text)}</div>`;
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

/** `[2] docs/setup.md L4–9`: one numbering style, the answer's own `[n]`. */
export function sourceText(source: Source, index: number): string {
  return `[${source.n ?? index + 1}] ${source.path} ${lineSpan(source.range)}`;
}

const STOP_NOTES: Record<string, string> = {
  step_limit: 'Stopped at the step limit — the answer may be incomplete.',
  length: 'The model was cut off — the answer is incomplete.',
  empty: 'The model gave no answer.',
  cancelled: 'Stopped.',
};

const MODE_BADGES: Record<string, { text: string; title: string }> = {
  agent: { text: 'agent', title: 'The model searched and read the notes with its tools.' },
  grounded: { text: 'grounded', title: 'The model answered from the best passages, which it cites.' },
  fallback: { text: 'no model', title: 'No model answered: these are the best passages for the question.' },
};

/** The final answer: mode, markdown, copy, clickable sources, choices for a clarification. */
export function renderAnswer(response: AskResponse, entryIndex: number, hideLead?: string): string {
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
    body = `<div class="markdown">${renderMarkdown(withoutLead(response.answer, hideLead))}</div>`;
  }
  const mode = MODE_BADGES[response.mode ?? 'agent'];
  const badges =
    (mode && response.stop !== 'clarify' ? `<span class="badge mode mode-${escapeHtml(response.mode ?? 'agent')}" title="${escapeHtml(mode.title)}">${mode.text}</span>` : '') +
    (response.grounded === false && response.stop !== 'clarify'
      ? `<span class="badge ungrounded" title="This answer cites none of the passages it was given: check it against your notes.">ungrounded</span>`
      : '');
  const tools =
    `<div class="answer-bar">${badges}<span class="spacer"></span>` +
    `<button type="button" class="link-button copy-answer" data-entry="${entryIndex}" title="Copy the answer as Markdown">Copy</button></div>`;
  const note = STOP_NOTES[response.stop];
  const sources =
    response.sources.length > 0
      ? `<div class="sources"><span class="sources-title">Sources</span><ul>${response.sources
          .map(
            (source, i) =>
              `<li><a href="#" class="source" data-entry="${entryIndex}" data-source="${i}" title="${escapeHtml(source.path)}">${escapeHtml(sourceText(source, i))}</a></li>`,
          )
          .join('')}</ul></div>`
      : '';
  const cls = `answer stop-${escapeHtml(response.stop)}${response.grounded === false ? ' is-ungrounded' : ''}`;
  return `<div class="${cls}">${tools}${body}${note ? `<div class="stop-note">${note}</div>` : ''}${sources}</div>`;
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
        (entry.pending ? `<button id="stop-button" type="button" class="secondary stop" title="Stop this question">Stop</button>` : '') +
        `</div>`
      );
    case 'step':
      return renderStep(entry.event);
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

/**
 * The transcript. Model trouble is not repeated line by line: when an ask fell back (no
 * model answered), its "No model: …" status and its errors are left out — the model card
 * says it once.
 */
export function renderTranscript(entries: readonly TranscriptEntry[]): string {
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
  return entries
    .map((entry, i) => (fellBack.has(i) && isModelTrouble(entry) ? '' : renderEntry(entry, i)))
    .join('');
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
  const kind: ModelProblem['kind'] = /not (available|found|pulled)|pull /.test(text)
    ? 'missing'
    : /timed? ?out|timeout|did not answer|no answer within/.test(text)
      ? 'timeout'
      : /not reachable|unreachable|connect|refused|not running/.test(text)
        ? 'unreachable'
        : 'other';
  return { message, kind };
}

/** The command a user runs to fix it: `ollama serve`, or `ollama pull MODEL`. */
export function fixCommand(problem: ModelProblem, llm: LlmStatus | undefined): string {
  if (problem.kind === 'missing') {
    return `ollama pull ${llm?.model ?? ''}`.trim();
  }
  return 'ollama serve';
}

/** The one card saying what is wrong with the model, with what to do about it. */
export function renderModelCard(problem: ModelProblem, llm: LlmStatus | undefined): string {
  const command = fixCommand(problem, llm);
  const title =
    problem.kind === 'missing'
      ? 'The model is not installed'
      : problem.kind === 'timeout'
        ? 'The model did not answer in time'
        : problem.kind === 'unreachable'
          ? 'No model is reachable'
          : 'The model could not answer';
  const where = llm ? `<div class="model-where"><code>${escapeHtml(llm.model)}</code> at <code>${escapeHtml(llm.host)}</code></div>` : '';
  return (
    `<div class="model-title">${escapeHtml(title)}</div>` +
    `<div class="model-message">${escapeHtml(problem.message)}</div>${where}` +
    `<div class="model-note">Questions get the best matching passages until a model answers.</div>` +
    `<div class="model-actions">` +
    `<button type="button" class="secondary" data-action="openSettings">Open settings</button>` +
    `<button type="button" class="secondary" data-action="retry">Retry</button>` +
    `<button type="button" class="secondary" data-action="copyFix" data-text="${escapeHtml(command)}" title="Copy to run in a terminal">Copy <code>${escapeHtml(command)}</code></button>` +
    `</div>`
  );
}

/** One answer as HTML: its body, its sources grouped by file, its verdict and stop notes. */
import { lineSpan } from '../format';
import type { AskResponse, AskVerdict, Range, Source } from '../protocol';
import { escapeHtml } from './html';
import { renderMarkdown } from './markdown';
import { clarifyChoices } from './steps';

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

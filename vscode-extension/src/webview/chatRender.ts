/**
 * The Ask tab's chat conventions as HTML, pure: the history list, the model chip and the
 * attach chip in the box, the banner while a question is edited, the tools of each code
 * block (copy, insert at the cursor) and of each turn (edit, regenerate).
 */
import type { ChatSummary } from '../chatHistory';
import type { EditorContext } from '../editorContext';
import type { ExamplesResponse, LineSpan, LlmStatus } from '../protocol';
import { escapeHtml } from './html';

/** "3 min ago", "yesterday", "12 Nov": when a conversation last changed. */
export function whenText(updated: number, now: number): string {
  const minutes = Math.max(0, Math.round((now - updated) / 60_000));
  if (minutes < 1) {
    return 'just now';
  }
  if (minutes < 60) {
    return `${minutes} min ago`;
  }
  const hours = Math.round(minutes / 60);
  if (hours < 24) {
    return `${hours} h ago`;
  }
  if (hours < 48) {
    return 'yesterday';
  }
  return new Date(updated).toLocaleDateString('en-GB', { day: 'numeric', month: 'short' });
}

/** The conversations kept for this workspace: each reopens on a click, and can go. */
export function renderHistory(chats: readonly ChatSummary[], current: string | null, now: number): string {
  if (chats.length === 0) {
    return '<p class="history-empty">No conversations yet: each one you have is kept here, for this workspace.</p>';
  }
  const items = chats.map((chat) => {
    const questions = `${chat.questions} question${chat.questions === 1 ? '' : 's'}`;
    return (
      `<li class="history-item${chat.id === current ? ' current' : ''}" data-chat="${escapeHtml(chat.id)}">` +
      `<button type="button" class="history-open" data-chat="${escapeHtml(chat.id)}" title="Reopen this conversation">` +
      `<span class="history-title">${escapeHtml(chat.title)}</span>` +
      `<span class="history-meta">${escapeHtml(whenText(chat.updated, now))} · ${questions}</span></button>` +
      `<button type="button" class="icon-button history-delete" data-delete="${escapeHtml(chat.id)}" title="Delete this conversation" aria-label="Delete ${escapeHtml(chat.title)}">&#x2715;</button>` +
      '</li>'
    );
  });
  return `<ul class="history-list" aria-label="Conversations">${items.join('')}</ul>`;
}

/** The model that answers, in the box: a click opens the same picker as Choose a Model…. */
export function renderModelChip(llm: LlmStatus | undefined): string {
  const name = llm?.model?.trim();
  const label = name ? name : 'Choose a model';
  const title = name ? `Questions go to ${name} at ${llm?.host ?? ''}. Click to choose another.` : 'Choose the model that answers';
  return `<button type="button" class="chip model-chip" data-action="chooseModel" title="${escapeHtml(title)}"><span class="chip-icon">&#x2699;</span>${escapeHtml(label)}</button>`;
}

/** "L12–30" (one line: "L12"), as the panel writes line ranges. */
export function spanText(lines: LineSpan): string {
  return lines.start === lines.end ? `L${lines.start}` : `L${lines.start}–${lines.end}`;
}

/** The lines of `context`'s selection, as the server takes them (none: undefined). */
export function selectedLines(context: EditorContext | null): LineSpan | undefined {
  return context?.selection ? { start: context.selection.startLine, end: context.selection.endLine } : undefined;
}

/** What the box asks over, when something is attached: a file, or lines of one. */
export interface Attached {
  path: string;
  lines: LineSpan | null;
}

/** What the box may attach: the last editor's Markdown file, or its selection there (a
 * chip that adds it); what is attached, a chip that says so and removes it. */
export function renderContextChip(context: EditorContext | null, attached: Attached | null): string {
  if (!context?.markdown) {
    return '';
  }
  if (attached) {
    const what = attached.lines ? `the selection (${attached.path}:${spanText(attached.lines)})` : attached.path;
    return `<button type="button" class="chip context-chip attached" data-action="detach" title="Ask about the whole knowledge base again">${escapeHtml(what)} &#x2715;</button>`;
  }
  const lines = selectedLines(context);
  const what = lines ? `the selection (${context.path}:${spanText(lines)})` : context.path;
  const title = lines ? 'Ask about the selected lines only' : 'Ask about this file';
  return `<button type="button" class="chip context-chip" data-action="attach" title="${title}">+ ${escapeHtml(what)}</button>`;
}

/** The banner over the box while a question is edited: sending asks it instead. */
export function renderEditing(n: number): string {
  return `<span>Editing question ${n + 1}: sending asks it again from there.</span> <button type="button" class="link-button" data-action="cancelEdit">Cancel</button>`;
}

/** Each code block of an answer, with Copy and Insert at cursor above it. */
export function withCodeTools(html: string): string {
  let block = 0;
  return html.replace(/<pre>/g, () => {
    const n = block++;
    return (
      `<div class="code-tools" data-block="${n}">` +
      `<button type="button" class="link-button code-copy" data-block="${n}" title="Copy this code">Copy</button>` +
      `<button type="button" class="link-button code-insert" data-block="${n}" title="Insert at the cursor of the last editor">Insert</button>` +
      '</div><pre>'
    );
  });
}

/** The welcome's suggestions, from the open index; none to show: "". */
export function renderExamples(examples: ExamplesResponse | null, kind: 'searches' | 'questions'): string {
  const items = examples?.[kind] ?? [];
  if (items.length === 0) {
    return '';
  }
  const attribute = kind === 'searches' ? 'data-query' : 'data-question';
  const buttons = items.map((text) => `<li><button type="button" class="example link-button" ${attribute}="${escapeHtml(text)}">${escapeHtml(text)}</button></li>`);
  return `<p class="welcome-title">Try, from your notes:</p><ul class="examples">${buttons.join('')}</ul>`;
}

/**
 * A conversation of the Ask tab as chat panels handle one, pure (the page keeps it; the
 * extension keeps it in the workspace's history): its turns as the server takes them
 * (`AskParams.history`), what Regenerate and edit-and-resend keep of it, its title, and
 * ↑/↓ recall of the questions asked.
 */
import type { AskResponse, ChatTurn, LineSpan } from './protocol';

/** The entries of a conversation that matter here (the page's transcript has more). */
export type Entry =
  | { kind: 'question'; text: string; file?: string | null; lines?: LineSpan | null; pending?: boolean }
  | { kind: 'answer'; response: AskResponse; lead?: string }
  | { kind: string };

function isQuestion(entry: Entry): entry is Extract<Entry, { kind: 'question' }> {
  return entry.kind === 'question' && typeof (entry as { text?: unknown }).text === 'string';
}

function isAnswer(entry: Entry): entry is Extract<Entry, { kind: 'answer' }> {
  return entry.kind === 'answer' && typeof (entry as { response?: unknown }).response === 'object';
}

/** The index of each question in `entries`, in order. */
export function questionIndexes(entries: readonly Entry[]): number[] {
  return entries.flatMap((entry, i) => (isQuestion(entry) ? [i] : []));
}

/**
 * The turns before `entries` ends, as the server takes them: each question with the
 * answer that followed it (a question without one — stopped, failed, or answered with
 * passages because no model answered — goes with an empty answer, as the server keeps a
 * question whose answer it does not keep).
 */
export function turnsOf(entries: readonly Entry[]): ChatTurn[] {
  const turns: ChatTurn[] = [];
  for (const entry of entries) {
    if (isQuestion(entry)) {
      turns.push({ question: entry.text, answer: '' });
    } else if (isAnswer(entry) && turns.length > 0 && entry.response.stop !== 'error' && entry.response.mode !== 'fallback') {
      const last = turns[turns.length - 1];
      if (last) {
        last.answer = entry.response.answer;
      }
    }
  }
  return turns;
}

/**
 * What a conversation keeps when question `n` (0-based among its questions) is asked
 * again — Regenerate (the last one, as it was) or edit-and-resend (any, as edited): the
 * entries before it, and the question as it was asked.
 */
export function before(entries: readonly Entry[], n: number): { kept: Entry[]; question: Extract<Entry, { kind: 'question' }> } | undefined {
  const at = questionIndexes(entries)[n];
  const question = at === undefined ? undefined : entries[at];
  if (at === undefined || !question || !isQuestion(question)) {
    return undefined;
  }
  return { kept: entries.slice(0, at), question };
}

/** The conversation's title: its first question, on one line. */
export function titleOf(entries: readonly Entry[]): string {
  const first = entries.find(isQuestion);
  return first ? first.text.replace(/\s+/g, ' ').trim() : '';
}

/**
 * ↑/↓ in an empty box (or one still holding a recalled question), as a shell's history:
 * `at` is the position in `asked` (oldest first) shown now, `asked.length` when none.
 * Returns the new position and the text for the box (empty past the newest).
 */
export function recall(asked: readonly string[], at: number, key: 'ArrowUp' | 'ArrowDown'): { at: number; text: string } {
  const next = key === 'ArrowUp' ? Math.max(0, at - 1) : Math.min(asked.length, at + 1);
  return { at: next, text: asked[next] ?? '' };
}

/** The questions of `entries`, oldest first, without a question repeated right after itself. */
export function askedQuestions(entries: readonly Entry[]): string[] {
  const out: string[] = [];
  for (const entry of entries) {
    if (isQuestion(entry) && entry.text !== out[out.length - 1]) {
      out.push(entry.text);
    }
  }
  return out;
}

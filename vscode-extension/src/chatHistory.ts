/**
 * The Ask tab's conversations, kept per workspace (the extension's `workspaceState`), as
 * chat panels keep them: listed newest first, reopened — after a window reload too — and
 * deleted. The page owns a conversation's transcript and hands it over whole after each
 * answer; this keeps it as given (it only counts its questions), bounded in number and
 * size so the workspace's storage never grows without end.
 */

/** What the history list shows of a conversation. */
export interface ChatSummary {
  id: string;
  /** Its first question, as asked. */
  title: string;
  /** When it last changed (ms since the epoch). */
  updated: number;
  /** How many questions it holds. */
  questions: number;
}

export interface StoredChat extends ChatSummary {
  /** The page's transcript entries, as the page gave them. */
  transcript: unknown[];
  /** The last question's file ("about this file"), to keep asking about it. */
  file?: string | null;
}

/** The part of a `vscode.Memento` the history uses. */
export interface ChatMemento {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

export const HISTORY_KEY = 'kb.chats';
/** Conversations kept; the oldest goes first. */
export const MAX_CHATS = 50;
/** A conversation's transcript as JSON, at most: older entries go first. */
export const MAX_CHAT_CHARS = 300_000;
const MAX_TITLE = 120;

function questions(transcript: readonly unknown[]): number {
  return transcript.filter((entry) => (entry as { kind?: unknown } | null)?.kind === 'question').length;
}

/** `transcript` with its oldest entries left out until it fits `MAX_CHAT_CHARS`. */
export function bounded(transcript: readonly unknown[]): unknown[] {
  let kept = [...transcript];
  while (kept.length > 1 && JSON.stringify(kept).length > MAX_CHAT_CHARS) {
    // Whole turns go: from the first question after the first entry on.
    const next = kept.findIndex((entry, i) => i > 0 && (entry as { kind?: unknown } | null)?.kind === 'question');
    kept = kept.slice(next > 0 ? next : 1);
  }
  return kept;
}

export class ChatHistory {
  constructor(
    private readonly memento: ChatMemento,
    private readonly now: () => number = () => Date.now(),
  ) {}

  private all(): StoredChat[] {
    const stored = this.memento.get<unknown>(HISTORY_KEY);
    return Array.isArray(stored)
      ? stored.filter((chat): chat is StoredChat => typeof (chat as StoredChat | null)?.id === 'string' && Array.isArray((chat as StoredChat).transcript))
      : [];
  }

  /** Every conversation, the most recent first. */
  list(): ChatSummary[] {
    return this.all().map(({ id, title, updated, questions: count }) => ({ id, title, updated, questions: count }));
  }

  get(id: string): StoredChat | undefined {
    return this.all().find((chat) => chat.id === id);
  }

  /** Keep (or replace) a conversation; it becomes the most recent. One without a question
   * is not kept. */
  async save(chat: { id: string; title: string; transcript: readonly unknown[]; file?: string | null }): Promise<void> {
    const transcript = bounded(chat.transcript);
    const rest = this.all().filter((other) => other.id !== chat.id);
    if (questions(transcript) === 0) {
      await this.memento.update(HISTORY_KEY, rest);
      return;
    }
    const title = chat.title.replace(/\s+/g, ' ').trim().slice(0, MAX_TITLE) || 'Untitled';
    const stored: StoredChat = { id: chat.id, title, updated: this.now(), questions: questions(transcript), transcript, file: chat.file ?? null };
    await this.memento.update(HISTORY_KEY, [stored, ...rest].slice(0, MAX_CHATS));
  }

  async delete(id: string): Promise<void> {
    await this.memento.update(
      HISTORY_KEY,
      this.all().filter((chat) => chat.id !== id),
    );
  }
}

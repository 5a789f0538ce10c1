/**
 * The panel's Ask side in the extension host: one question at a time, its steps relayed
 * from `kb/askEvent`, Stop from the page's button or the keybinding (the context key
 * `kb.answering` says when one runs) through `kb/stopAsk`, which keeps what was written
 * and its sources, and the conversations kept per workspace (`chatHistory.ts`), which
 * the page lists, reopens and deletes.
 */
import * as vscode from 'vscode';
import type { KbBackend } from './backend';
import type { ChatHistory } from './chatHistory';
import type { FromWebview, ToWebview } from './messages';
import { optionalRequest, OptionalMethods } from './optional';
import { ErrorCodes, Methods, type AskEvent, type AskResponse, type ChatTurn, type LineSpan } from './protocol';
import { errorCode, errorMessage } from './util';

export const ANSWERING = 'kb.answering';

type ChatMessage = Extract<FromWebview, { type: 'saveChat' | 'listChats' | 'openChat' | 'deleteChat' }>;

export class AskRunner implements vscode.Disposable {
  private ask: { id: number; source: vscode.CancellationTokenSource; askId?: string } | undefined;
  private counter = 0;

  constructor(
    private readonly backend: KbBackend,
    private readonly post: (message: ToWebview) => void,
    private readonly history?: ChatHistory,
  ) {}

  /** Ask; its steps stream in as `kb/askEvent`s. A running answer is stopped first. */
  async run(
    question: string,
    file: string | null,
    conversationId: string | null = null,
    history?: ChatTurn[],
    lines: LineSpan | null = null,
  ): Promise<AskResponse | undefined> {
    this.ask?.source.cancel();
    const id = ++this.counter;
    const source = new vscode.CancellationTokenSource();
    this.ask = { id, source };
    void vscode.commands.executeCommand('setContext', ANSWERING, true);
    // Lines only with their file: the selection of it the question is asked over.
    const span = file && lines ? { lines } : {};
    this.post({ type: 'askStarted', id, question, file, ...span });
    try {
      const response = await this.backend.request(
        Methods.ask,
        { question, ...(file ? { file } : {}), ...span, ...(conversationId ? { conversationId } : {}), ...(history?.length ? { history } : {}) },
        source.token,
      );
      this.backend.noteAnswer?.(response);
      this.post({ type: 'askDone', id, response });
      return response;
    } catch (err) {
      const cancelled = errorCode(err) === ErrorCodes.requestCancelled || source.token.isCancellationRequested;
      this.post({ type: 'askFailed', id, message: cancelled ? 'Stopped.' : errorMessage(err) });
      return undefined;
    } finally {
      if (this.ask?.id === id) {
        this.ask = undefined;
        void vscode.commands.executeCommand('setContext', ANSWERING, false);
      }
      source.dispose();
    }
  }

  /** Stop the running answer (the Stop button, the keybinding); false when none runs. */
  stop(): boolean {
    const ask = this.ask;
    if (!ask) {
      return false;
    }
    // `kb/stopAsk` ends the answer the way the user means it: the request is still
    // answered, with the sources found so far (a cancelled request gets no answer). A
    // server without it, or one that had nothing of ours running yet, gets the cancel.
    const cancel = () => ask.source.cancel();
    optionalRequest(this.backend, OptionalMethods.stopAsk, {}).then((reply) => {
      if (!reply?.stopped) {
        cancel();
      }
    }, cancel);
    return true;
  }

  get running(): boolean {
    return this.ask !== undefined;
  }

  onAskEvent(event: AskEvent): void {
    const ask = this.ask;
    if (!ask) {
      return;
    }
    // One ask at a time from this client: the first askId seen is this ask's.
    ask.askId ??= event.askId;
    if (ask.askId === event.askId) {
      this.post({ type: 'askEvent', id: ask.id, event });
    }
  }

  /** The page's history requests: keep, list, reopen, delete a conversation. */
  async chat(message: ChatMessage): Promise<void> {
    const history = this.history;
    if (!history) {
      this.post({ type: 'chats', chats: [] });
      return;
    }
    switch (message.type) {
      case 'saveChat':
        await history.save(message);
        break;
      case 'openChat':
        this.post({ type: 'chat', chat: history.get(message.id) ?? null });
        return;
      case 'deleteChat':
        await history.delete(message.id);
        break;
      case 'listChats':
        break;
    }
    this.post({ type: 'chats', chats: history.list() });
  }

  dispose(): void {
    this.ask?.source.cancel();
  }
}

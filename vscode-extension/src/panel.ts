/**
 * The "Knowledge Base" webview view: search, numbered results, Ask with streamed steps.
 * The page itself is `panelHtml.ts` + `webview/main.ts`; this side answers its messages.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { KbBackend } from './backend';
import { isFromWebview, type FromWebview, type ToWebview } from './messages';
import { openAt } from './open';
import { panelHtml } from './panelHtml';
import { ErrorCodes, Methods, type AskEvent, type Range } from './protocol';
import { errorCode, errorMessage, LatestOnly, makeNonce } from './util';

export const VIEW_ID = 'kb.panel';
export const CONTAINER_ID = 'kb';

export interface PanelDeps {
  open: (uri: string, range: Range) => Promise<unknown>;
  executeCommand: (command: string, ...args: unknown[]) => Thenable<unknown>;
  openExternal: (uri: vscode.Uri) => Thenable<boolean>;
}

export class KbPanel implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private queue: ToWebview[] = [];
  private readonly searches = new LatestOnly(() => new vscode.CancellationTokenSource());
  private ask: { id: number; source: vscode.CancellationTokenSource; askId?: string } | undefined;
  private askCounter = 0;
  private readonly disposables: vscode.Disposable[] = [];
  /** The last message handling in flight, for tests. */
  handling: Promise<void> | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly backend: KbBackend,
    private readonly deps: PanelDeps = {
      open: (uri, range) => openAt(uri, range),
      executeCommand: (command, ...args) => vscode.commands.executeCommand(command, ...args),
      openExternal: (uri) => vscode.env.openExternal(uri),
    },
  ) {
    this.disposables.push(
      backend.onDidChange(() => this.postStatus()),
      backend.onAskEvent((event) => this.onAskEvent(event)),
    );
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    view.webview.options = { enableScripts: true, localResourceRoots: [dist, media] };
    view.webview.html = panelHtml({
      cspSource: view.webview.cspSource,
      nonce: makeNonce((n) => randomBytes(n)),
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js')).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'panel.css')).toString(),
    });
    this.disposables.push(
      view.webview.onDidReceiveMessage((message: unknown) => {
        if (isFromWebview(message)) {
          this.handling = this.handle(message);
        }
      }),
      view.onDidDispose(() => {
        this.view = undefined;
        this.ready = false;
      }),
    );
  }

  /** Send to the page now, or when it says it is ready. */
  post(message: ToWebview): void {
    if (this.view && this.ready) {
      void this.view.webview.postMessage(message);
    } else {
      this.queue.push(message);
    }
  }

  /** Show the panel (it resolves the view on first show). */
  async reveal(): Promise<void> {
    if (this.view) {
      this.view.show(true);
    } else {
      await this.deps.executeCommand(`${VIEW_ID}.focus`);
    }
  }

  private postStatus(): void {
    this.post({
      type: 'status',
      status: this.backend.state === 'running' ? (this.backend.status ?? null) : null,
      server: this.backend.state,
      message: this.backend.problem,
    });
  }

  async handle(message: FromWebview): Promise<void> {
    switch (message.type) {
      case 'ready': {
        this.ready = true;
        this.postStatus();
        const queued = this.queue.splice(0);
        for (const item of queued) {
          this.post(item);
        }
        return;
      }
      case 'search':
        return this.search(message.query);
      case 'open':
        await this.deps.open(message.uri, message.range);
        return;
      case 'openLink':
        return this.openLink(message.href);
      case 'ask':
        return this.runAsk(message.question, message.file ?? null, message.conversationId ?? null);
      case 'cancelAsk':
        this.ask?.source.cancel();
        return;
      case 'reindex':
        await this.deps.executeCommand('kb.reindex');
        return;
    }
  }

  async search(query: string): Promise<void> {
    try {
      const outcome = await this.searches.run((source) =>
        this.backend.request(Methods.search, { query }, source.token),
      );
      if (outcome) {
        this.backend.updateStatus(outcome.value.index);
        this.post({ type: 'results', response: outcome.value });
      }
    } catch (err) {
      if (errorCode(err) !== ErrorCodes.requestCancelled) {
        this.post({ type: 'searchError', query, message: errorMessage(err) });
      }
    }
  }

  /** Put a query into the panel's search box (and run it). */
  async showQuery(query: string): Promise<void> {
    await this.reveal();
    this.post({ type: 'setQuery', query, run: true });
  }

  async focusAsk(file: string | null): Promise<void> {
    await this.reveal();
    this.post({ type: 'focusAsk', file });
  }

  /** Ask in the panel; its steps stream in as `kb/askEvent`s. */
  async runAsk(question: string, file: string | null, conversationId: string | null = null): Promise<void> {
    this.ask?.source.cancel();
    const id = ++this.askCounter;
    const source = new vscode.CancellationTokenSource();
    this.ask = { id, source };
    this.post({ type: 'askStarted', id, question, file });
    try {
      const response = await this.backend.request(
        Methods.ask,
        { question, ...(file ? { file } : {}), ...(conversationId ? { conversationId } : {}) },
        source.token,
      );
      this.post({ type: 'askDone', id, response });
    } catch (err) {
      const cancelled = errorCode(err) === ErrorCodes.requestCancelled || source.token.isCancellationRequested;
      this.post({ type: 'askFailed', id, message: cancelled ? 'Cancelled.' : errorMessage(err) });
    } finally {
      if (this.ask?.id === id) {
        this.ask = undefined;
      }
      source.dispose();
    }
  }

  private onAskEvent(event: AskEvent): void {
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

  showSummary(path: string, summary: string, cached: boolean): void {
    this.post({ type: 'summary', path, summary, cached });
  }

  private async openLink(href: string): Promise<void> {
    let uri: vscode.Uri;
    try {
      uri = vscode.Uri.parse(href, true);
    } catch {
      uri = vscode.Uri.file(href);
    }
    if (uri.scheme === 'http' || uri.scheme === 'https' || uri.scheme === 'mailto') {
      await this.deps.openExternal(uri);
      return;
    }
    if (uri.scheme === 'file') {
      await this.deps.open(uri.toString(), { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } });
      return;
    }
    // A workspace-relative path in an answer ("docs/setup.md").
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (folder && !/^[a-z][a-z0-9+.-]*:/i.test(href)) {
      const [path, line] = href.split('#L');
      const target = vscode.Uri.joinPath(folder.uri, decodeURIComponent(path ?? href));
      const n = Math.max(0, Number(line ?? '1') - 1) || 0;
      await this.deps.open(target.toString(), { start: { line: n, character: 0 }, end: { line: n, character: 0 } });
    }
  }

  dispose(): void {
    this.searches.cancel();
    this.ask?.source.cancel();
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
  }
}

/**
 * The "Knowledge Base" webview view: search, related notes, Ask. The page itself is
 * `panelHtml.ts` + `webview/main.ts`; this side answers its messages, follows the active
 * editor for the Related tab, and opens what the user clicks (saying so when a result's
 * file is gone, asking first before a link leaves the workspace).
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { KbBackend } from './backend';
import { passageText, relatedShown, relativeTo } from './format';
import { isFromWebview, type FromWebview, type PanelCommand as FromWebviewCommand, type ToWebview } from './messages';
import { defaultLinkDeps, openAt, openLink, openResult, type LinkDeps } from './open';
import { OptionalMethods, optionalRequest } from './optional';
import { panelHtml } from './panelHtml';
import { ErrorCodes, Methods, type AskEvent, type AskResponse, type IndexAction, type Range } from './protocol';
import { onListChanged, rememberList } from './lastList';
import { Debouncer, errorCode, errorMessage, LatestOnly, makeNonce } from './util';

export const VIEW_ID = 'kb.panel';
export const CONTAINER_ID = 'kb';
export const RELATED_LIMIT = 10;

export interface PanelDeps {
  open: (uri: string, range: Range) => Promise<unknown>;
  executeCommand: (command: string, ...args: unknown[]) => Thenable<unknown>;
  openExternal: (uri: vscode.Uri) => Thenable<boolean>;
  confirm?: LinkDeps['confirm'];
  copy?: (text: string) => Thenable<void>;
  readFile?: (uri: string) => Thenable<Uint8Array>;
}

export class KbPanel implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private queue: ToWebview[] = [];
  private readonly searches = new LatestOnly(() => new vscode.CancellationTokenSource());
  private readonly relatedRequests = new LatestOnly(() => new vscode.CancellationTokenSource());
  private ask: { id: number; source: vscode.CancellationTokenSource; askId?: string } | undefined;
  private askCounter = 0;
  private lastQuery: string | undefined;
  private relatedPath: string | null | undefined;
  private wasIndexing = false;
  private readonly relatedSoon = new Debouncer(150, () => void this.refreshRelated());
  private readonly disposables: vscode.Disposable[] = [];
  /** The last message handling in flight, for tests. */
  handling: Promise<void> | undefined;
  /** The last related-notes refresh, for tests. */
  relating: Promise<void> | undefined;

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
      backend.onDidChange(() => this.onBackendChange()),
      backend.onAskEvent((event) => this.onAskEvent(event)),
      // The quick pick's lists show here too: one last list, whichever search made it.
      onListChanged((list) => {
        if (list.origin !== 'panel') {
          this.lastQuery = list.response.query;
          this.post({ type: 'results', response: list.response, origin: list.origin });
        }
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.relatedSoon.trigger()),
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
        if (isFromWebview(message) && this.view === view) {
          this.handling = this.handle(message);
        }
      }),
      view.onDidDispose(() => {
        // A view disposed after its replacement was resolved must not take that one away.
        if (this.view === view) {
          this.view = undefined;
          this.ready = false;
        }
      }),
    );
    if (view.onDidChangeVisibility) {
      this.disposables.push(view.onDidChangeVisibility(() => view.visible && this.relatedSoon.trigger()));
    }
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

  private onBackendChange(): void {
    this.postStatus();
    const status = this.backend.status;
    const indexing = this.backend.state === 'running' && status?.state === 'indexing';
    if (this.wasIndexing && !indexing) {
      // Vectors for the open file may exist now.
      this.relatedPath = undefined;
      this.relatedSoon.trigger();
    }
    this.wasIndexing = indexing;
  }

  private postStatus(): void {
    this.post({
      type: 'status',
      status: this.backend.state === 'running' ? (this.backend.status ?? null) : null,
      server: this.backend.state,
      message: this.backend.problem,
      failure: this.backend.state === 'failed' ? this.backend.failure : undefined,
      secondsLeft: this.backend.secondsLeft,
    });
  }

  /** Show the panel with the keyboard in its search box. */
  async focusSearch(): Promise<void> {
    // The view's focus command moves the keyboard into the webview (`show` keeps it out).
    await this.deps.executeCommand(`${VIEW_ID}.focus`);
    this.post({ type: 'focusSearch' });
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
        this.relatedPath = undefined;
        this.relatedSoon.trigger();
        return;
      }
      case 'search':
        return this.search(message.query);
      case 'open':
        return this.open(message.uri, message.range, message.path);
      case 'openLink':
        return this.openLink(message.href);
      case 'ask':
        await this.runAsk(message.question, message.file ?? null, message.conversationId ?? null);
        return;
      case 'cancelAsk':
        this.ask?.source.cancel();
        return;
      case 'indexControl':
        return this.indexControl(message.action);
      case 'related':
        this.relatedPath = undefined;
        return this.refreshRelated();
      case 'schema':
        return this.schema();
      case 'copy':
        await (this.deps.copy ?? ((text: string) => vscode.env.clipboard.writeText(text)))(message.text);
        vscode.window.setStatusBarMessage('KB: copied', 2000);
        return;
      case 'openSettings':
        await this.deps.executeCommand('workbench.action.openSettings', message.query);
        return;
      case 'passage':
        return this.passage(message.key, message.uri, message.range);
      case 'command':
        return this.command(message.command);
    }
  }

  private async command(command: FromWebviewCommand): Promise<void> {
    switch (command) {
      case 'showLog':
        this.backend.showLog();
        return;
      case 'restartServer':
        await this.backend.restart();
        return;
      case 'openServerSettings':
        await this.deps.executeCommand('kb.openServerSettings');
        return;
      case 'chooseModel':
        await this.deps.executeCommand('kb.chooseModel');
        return;
      case 'probeModel':
        await this.backend.refreshStatus?.();
        return;
    }
  }

  /** A result's passage, read from the file as it is now, for the hover card. */
  private async passage(key: string, uri: string, range: Range): Promise<void> {
    const read = this.deps.readFile ?? ((u: string) => vscode.workspace.fs.readFile(vscode.Uri.parse(u)));
    try {
      const text = new TextDecoder().decode(await read(uri));
      this.post({ type: 'passage', key, text: passageText(text, range) });
    } catch {
      this.post({ type: 'passage', key, text: null });
    }
  }

  async search(query: string): Promise<void> {
    this.lastQuery = query;
    try {
      const outcome = await this.searches.run((source) =>
        this.backend.request(Methods.search, { query }, source.token),
      );
      if (outcome) {
        this.backend.updateStatus(outcome.value.index);
        rememberList(outcome.value, 'panel');
        this.post({ type: 'results', response: outcome.value, origin: 'panel' });
      }
    } catch (err) {
      if (errorCode(err) !== ErrorCodes.requestCancelled) {
        this.post({ type: 'searchError', query, message: errorMessage(err) });
      }
    }
  }

  /** Open a result; a file deleted or moved since the list was made refreshes the list. */
  private async open(uri: string, range: Range, path: string | undefined): Promise<void> {
    try {
      const outcome = await openResult(uri, range, path, this.deps.open);
      if (outcome === 'missing') {
        const shown = path ?? uri;
        this.post({ type: 'stale', path: shown, message: `${shown} was deleted or moved — the list was refreshed.` });
      }
    } catch (err) {
      void vscode.window.showErrorMessage(`KB: could not open ${path ?? uri}: ${errorMessage(err)}`);
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
  async runAsk(question: string, file: string | null, conversationId: string | null = null): Promise<AskResponse | undefined> {
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

  /** A file's summary, for the hover card; `quiet`: it is in the transcript already. */
  showSummary(path: string, summary: string, cached: boolean, quiet = false): void {
    this.post({ type: 'summary', path, summary, cached, ...(quiet ? { quiet } : {}) });
  }

  /** Re-run the panel's last search (after a stale result, or when asked). */
  async refreshSearch(): Promise<void> {
    if (this.lastQuery) {
      await this.search(this.lastQuery);
    }
  }

  private async indexControl(action: IndexAction): Promise<void> {
    try {
      const status = await optionalRequest(this.backend, OptionalMethods.indexControl, { action });
      if (status) {
        this.backend.updateStatus(status);
      } else {
        void vscode.window.showWarningMessage('KB: this server cannot pause or cancel indexing.');
      }
    } catch (err) {
      void vscode.window.showErrorMessage(`KB: ${errorMessage(err)}`);
    }
  }

  private async schema(): Promise<void> {
    try {
      const schema = await optionalRequest(this.backend, OptionalMethods.schema, {});
      this.post({ type: 'schema', schema: schema ?? null });
    } catch {
      this.post({ type: 'schema', schema: null });
    }
  }

  /** The workspace path of the active Markdown editor: a path, null (none), undefined (no editor). */
  private activeMarkdownPath(): string | null | undefined {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      return undefined;
    }
    const document = editor.document;
    if (document.languageId !== 'markdown' || document.uri.scheme !== 'file') {
      return null;
    }
    const roots = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const folders = vscode.workspace.workspaceFolders ?? [];
    const relative = relativeTo(roots, document.uri.fsPath);
    if (relative === undefined) {
      return null;
    }
    // With several folders the server's paths start with the folder's name.
    if (folders.length > 1) {
      const folder = folders.find((f) => relativeTo([f.uri.fsPath], document.uri.fsPath) !== undefined);
      return folder ? `${folder.name}/${relative}` : relative;
    }
    return relative;
  }

  /** The Related tab: the nearest notes of the active Markdown file. */
  refreshRelated(): Promise<void> {
    this.relating = this.doRefreshRelated();
    return this.relating;
  }

  private async doRefreshRelated(): Promise<void> {
    if (!this.view || this.backend.state !== 'running') {
      return;
    }
    const path = this.activeMarkdownPath();
    if (path === undefined || path === this.relatedPath) {
      return; // no editor (focus is in the panel), or the same file as shown
    }
    this.relatedPath = path;
    if (path === null) {
      this.post({ type: 'related', path: null, response: null });
      return;
    }
    try {
      const outcome = await this.relatedRequests.run((source) =>
        optionalRequest(this.backend, OptionalMethods.related, { path, limit: RELATED_LIMIT, numbered: false }, source.token),
      );
      if (!outcome) {
        return;
      }
      const response = outcome.value;
      this.post(
        response
          ? { type: 'related', path, response: { ...response, results: relatedShown(response.results) } }
          : { type: 'related', path, response: null, message: 'This kb-lsp server does not offer related notes.' },
      );
    } catch (err) {
      if (errorCode(err) === ErrorCodes.requestCancelled) {
        return;
      }
      this.relatedPath = undefined; // try again next time
      this.post({ type: 'related', path, response: null, message: errorMessage(err) });
    }
  }

  private async openLink(href: string): Promise<void> {
    await openLink(href, {
      open: this.deps.open,
      openExternal: this.deps.openExternal,
      confirm: this.deps.confirm ?? defaultLinkDeps.confirm,
    });
  }

  dispose(): void {
    this.searches.cancel();
    this.relatedRequests.cancel();
    this.relatedSoon.cancel();
    this.ask?.source.cancel();
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
  }
}

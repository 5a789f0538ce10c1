/**
 * The "Knowledge Base" webview view: search, related notes, Ask. The page itself is
 * `panelHtml.ts` + `webview/main.ts`; this side answers its messages, follows the active
 * editor for the Related tab, and opens what the user clicks (saying so when a result's
 * file is gone, asking first before a link leaves the workspace).
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { KbBackend } from './backend';
import type { ChatHistory } from './chatHistory';
import { EditorTracker } from './editorContext';
import { passageText, readablePassage } from './format';
import { isFromWebview, type FromWebview, type PanelCommand as FromWebviewCommand, type ToWebview } from './messages';
import { defaultLinkDeps, openAt, openLink, openResult, type LinkDeps } from './open';
import { OptionalMethods, optionalRequest } from './optional';
import { AskRunner } from './panelAsk';
import { panelHtml } from './panelHtml';
import { RelatedFeed } from './panelRelated';
import { ErrorCodes, Methods, type AskResponse, type ExamplesResponse, type IndexAction, type Range } from './protocol';
import { onListChanged, rememberList } from './lastList';
import { errorCode, errorMessage, LatestOnly, makeNonce } from './util';

export const VIEW_ID = 'kb.panel';
export const CONTAINER_ID = 'kb';
export { RELATED_LIMIT } from './panelRelated';

export interface PanelDeps {
  open: (uri: string, range: Range) => Promise<unknown>;
  executeCommand: (command: string, ...args: unknown[]) => Thenable<unknown>;
  openExternal: (uri: vscode.Uri) => Thenable<boolean>;
  confirm?: LinkDeps['confirm'];
  copy?: (text: string) => Thenable<void>;
  readFile?: (uri: string) => Thenable<Uint8Array>;
  /** Where conversations are kept (the workspace's state); none: no history. */
  history?: ChatHistory;
}

/** What the panel does in VS Code itself (tests give their own). */
export function defaultPanelDeps(history?: ChatHistory): PanelDeps {
  return {
    open: (uri, range) => openAt(uri, range),
    executeCommand: (command, ...args) => vscode.commands.executeCommand(command, ...args),
    openExternal: (uri) => vscode.env.openExternal(uri),
    history,
  };
}

export class KbPanel implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private queue: ToWebview[] = [];
  private readonly searches = new LatestOnly(() => new vscode.CancellationTokenSource());
  private lastQuery: string | undefined;
  private wasIndexing = false;
  /** The welcome's examples, and the index they were made from (files/passages). */
  private examples: { of: string; value: ExamplesResponse | null } | undefined;
  private readonly related: RelatedFeed;
  private readonly asks: AskRunner;
  private readonly editors: EditorTracker;
  private readonly disposables: vscode.Disposable[] = [];
  /** The last message handling in flight, for tests. */
  handling: Promise<void> | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly backend: KbBackend,
    private readonly deps: PanelDeps = defaultPanelDeps(),
  ) {
    this.related = new RelatedFeed(backend, (message) => this.post(message), () => this.view !== undefined);
    this.asks = new AskRunner(backend, (message) => this.post(message), deps.history);
    this.editors = new EditorTracker((context) => this.post({ type: 'editorContext', context }));
    this.disposables.push(
      this.related,
      this.asks,
      this.editors,
      backend.onDidChange(() => this.onBackendChange()),
      backend.onAskEvent((event) => this.asks.onAskEvent(event)),
      // The quick pick's lists show here too: one last list, whichever search made it.
      onListChanged((list) => {
        if (list.origin !== 'panel') {
          this.lastQuery = list.response.query;
          this.post({ type: 'results', response: list.response, origin: list.origin });
        }
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.related.soon.trigger()),
      vscode.window.onDidChangeVisibleTextEditors(() => this.related.soon.trigger()),
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
      this.disposables.push(view.onDidChangeVisibility(() => view.visible && this.related.soon.trigger()));
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
      this.related.again();
    }
    this.wasIndexing = indexing;
  }

  /** The welcome's examples, made from the open index (`kb/examples`), when the page asks
   * (it does when it shows the welcome, and when the index changed). */
  private async postExamples(): Promise<void> {
    const status = this.backend.state === 'running' ? this.backend.status : undefined;
    const of = status && status.state !== 'indexing' ? `${status.files}/${status.chunks}` : '';
    if (this.examples?.of !== of) {
      const value = of ? await optionalRequest(this.backend, OptionalMethods.examples, {}).catch(() => undefined) : undefined;
      this.examples = { of: value ? of : '', value: value ?? null };
    }
    this.post({ type: 'examples', examples: this.examples.value });
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
        this.related.again();
        this.post({ type: 'editorContext', context: this.editors.current() });
        return;
      }
      case 'search':
        return this.search(message.query);
      case 'open':
        return this.open(message.uri, message.range, message.path);
      case 'openLink':
        return this.openLink(message.href);
      case 'ask':
        await this.asks.run(message.question, message.file ?? null, message.conversationId ?? null, message.history, message.lines ?? null);
        return;
      case 'cancelAsk':
        this.asks.stop();
        return;
      case 'indexControl':
        return this.indexControl(message.action);
      case 'related':
        this.related.again();
        return this.related.refresh();
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
      case 'saveChat':
      case 'listChats':
      case 'openChat':
      case 'deleteChat':
        return this.asks.chat(message);
      case 'insert':
        return this.insert(message.text);
      case 'editorContext':
        this.post({ type: 'editorContext', context: this.editors.current() });
        return;
      case 'examples':
        return this.postExamples();
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
      this.post({ type: 'passage', key, text: readablePassage(passageText(text, range)) });
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
  runAsk(question: string, file: string | null, conversationId: string | null = null): Promise<AskResponse | undefined> {
    return this.asks.run(question, file, conversationId);
  }

  /** Stop the running answer (KB: Stop Answering); false when none runs. */
  stopAsk(): boolean {
    return this.asks.stop();
  }

  /** A code block of an answer at the last editor's cursor. */
  private async insert(text: string): Promise<void> {
    if (!(await this.editors.insert(text))) {
      void vscode.window.showWarningMessage('KB: open an editor to insert the code into (or copy it).');
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

  /** The Related tab: the nearest notes of the active Markdown file. */
  refreshRelated(): Promise<void> {
    return this.related.refresh();
  }

  /** The last related-notes refresh, for tests. */
  get relating(): Promise<void> | undefined {
    return this.related.relating;
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
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
  }
}

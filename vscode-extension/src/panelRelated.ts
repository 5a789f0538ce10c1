/**
 * The panel's Related tab: the notes nearest to the active Markdown file, following the
 * editor. The keyboard in the panel keeps the list of the editor still shown; closing
 * every editor clears it.
 */
import * as vscode from 'vscode';
import type { KbBackend } from './backend';
import { workspacePath } from './editorContext';
import { relatedShown } from './format';
import type { ToWebview } from './messages';
import { OptionalMethods, optionalRequest } from './optional';
import { ErrorCodes } from './protocol';
import { Debouncer, errorCode, errorMessage, LatestOnly } from './util';

export const RELATED_LIMIT = 10;

/** The workspace path of the active Markdown editor: a path, null (none: not Markdown,
 * or every editor closed), undefined (the keyboard is in a view: the editor stays). */
export function activeMarkdownPath(): string | null | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return vscode.window.visibleTextEditors.length === 0 ? null : undefined;
  }
  const document = editor.document;
  if (document.languageId !== 'markdown') {
    return null;
  }
  return workspacePath(document.uri) ?? null;
}

export class RelatedFeed implements vscode.Disposable {
  private path: string | null | undefined;
  private readonly requests = new LatestOnly(() => new vscode.CancellationTokenSource());
  readonly soon = new Debouncer(150, () => void this.refresh());
  /** The last refresh, for tests. */
  relating: Promise<void> | undefined;

  constructor(
    private readonly backend: KbBackend,
    private readonly post: (message: ToWebview) => void,
    private readonly shown: () => boolean,
  ) {}

  /** Ask again even for the file shown (vectors may exist now, the page is new). */
  again(): void {
    this.path = undefined;
    this.soon.trigger();
  }

  refresh(): Promise<void> {
    this.relating = this.doRefresh();
    return this.relating;
  }

  private async doRefresh(): Promise<void> {
    if (!this.shown() || this.backend.state !== 'running') {
      return;
    }
    const path = activeMarkdownPath();
    if (path === undefined || path === this.path) {
      return; // no editor (focus is in the panel), or the same file as shown
    }
    this.path = path;
    if (path === null) {
      this.post({ type: 'related', path: null, response: null });
      return;
    }
    try {
      const outcome = await this.requests.run((source) =>
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
      this.path = undefined; // try again next time
      this.post({ type: 'related', path, response: null, message: errorMessage(err) });
    }
  }

  dispose(): void {
    this.requests.cancel();
    this.soon.cancel();
  }
}

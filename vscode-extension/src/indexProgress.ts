/**
 * The progress notification of a sync: the same label as the status bar and the panel
 * (`format.indexLabel`, from `IndexStatus.progress` and the estimate), a bar that fills
 * with the work done and never goes back, and Cancel. It appears for a sync with at least `MIN_FILES` files to do (a cold
 * index, a reindex, a branch switch), not for a save, and closes when the sync ends.
 */
import * as vscode from 'vscode';
import type { KbBackend } from './backend';
import { indexLabel, overallFraction } from './format';
import { OptionalMethods, optionalRequest } from './optional';
import type { IndexStatus } from './protocol';
import { errorMessage } from './util';

export const MIN_FILES = 20;

export class IndexProgressNotification implements vscode.Disposable {
  private current: { report: (status: IndexStatus) => void; end: () => void } | undefined;
  private readonly subscription: vscode.Disposable;
  /** The message shown last, for tests. */
  message: string | undefined;

  constructor(private readonly backend: KbBackend) {
    this.subscription = backend.onDidChange(() => this.update());
  }

  private update(): void {
    const status = this.backend.state === 'running' ? this.backend.status : undefined;
    const indexing = status?.state === 'indexing' && status.progress && !status.readOnly;
    if (!indexing) {
      this.current?.end();
      this.current = undefined;
      return;
    }
    if (!this.current && (status.progress?.filesTotal ?? 0) >= MIN_FILES) {
      this.start(status);
    }
    this.current?.report(status);
  }

  private start(first: IndexStatus): void {
    let fraction = 0;
    let resolveEnd!: () => void;
    const ended = new Promise<void>((resolve) => (resolveEnd = resolve));
    const handle = {
      report: (_status: IndexStatus) => undefined as void,
      end: () => resolveEnd(),
    };
    this.current = handle;
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'KB: Indexing', cancellable: true },
      (progress, token) => {
        handle.report = (status) => {
          const next = overallFraction(status) ?? fraction;
          const message = indexLabel(status, this.backend.secondsLeft);
          this.message = message;
          // withProgress adds up increments: the bar only moves forward.
          progress.report({ message, increment: next > fraction ? (next - fraction) * 100 : undefined });
          fraction = Math.max(fraction, next);
        };
        handle.report(first);
        token.onCancellationRequested(() => void this.cancel());
        return ended;
      },
    );
  }

  private async cancel(): Promise<void> {
    try {
      const status = await optionalRequest(this.backend, OptionalMethods.indexControl, { action: 'cancel' });
      if (status) {
        this.backend.updateStatus(status);
      }
    } catch (err) {
      void vscode.window.showErrorMessage(`KB: could not cancel indexing: ${errorMessage(err)}`);
    }
  }

  dispose(): void {
    this.current?.end();
    this.current = undefined;
    this.subscription.dispose();
  }
}

/**
 * The notification that the server did not start. VS Code cannot take back an error
 * message once shown, so one that said "not installed" stayed on screen after the fix,
 * beside a status bar saying ready. This one is a notification the extension can close:
 * it goes by itself once the server runs (or the user closes it); its actions are links
 * (Open Settings, Show Log), as the panel's card and the status bar offer them too.
 */
import * as vscode from 'vscode';

export const FAILURE_ACTIONS = '[Open Settings](command:kb.openServerSettings) · [Show Log](command:kb.showLog)';

export class FailureNotice {
  private end: (() => void) | undefined;
  /** What it says now (undefined: not shown), for tests. */
  shown: string | undefined;

  /** Say `message`, in place of what was said before. */
  show(message: string): void {
    this.close();
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    this.end = end;
    this.shown = message;
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `${message} ${FAILURE_ACTIONS}`, cancellable: true },
      (_progress, token) => {
        token.onCancellationRequested(() => this.close());
        return ended;
      },
    );
  }

  /** Take it off the screen (the server runs now, or the user closed it). */
  close(): void {
    this.end?.();
    this.end = undefined;
    this.shown = undefined;
  }
}

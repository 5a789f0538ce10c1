/** What the UI (commands, quick pick, panel, status bar) needs from the server. */
import type * as vscode from 'vscode';
import type { AskEvent, IndexStatus, MethodName, RequestTypes } from './protocol';

export type ServerState = 'starting' | 'running' | 'stopped' | 'failed';

export interface KbBackend {
  request<M extends MethodName>(
    method: M,
    params: RequestTypes[M][0],
    token?: vscode.CancellationToken,
  ): Promise<RequestTypes[M][1]>;
  readonly status: IndexStatus | undefined;
  readonly state: ServerState;
  /** Why the server is not running, when it failed. */
  readonly problem: string | undefined;
  readonly onDidChange: vscode.Event<void>;
  readonly onAskEvent: vscode.Event<AskEvent>;
  /** Merge a status from a response (kb/search carries one) into `status`. */
  updateStatus(status: IndexStatus): void;
  restart(): Promise<void>;
  showLog(): void;
}

export class ServerNotRunning extends Error {
  constructor(state: ServerState, problem?: string) {
    super(
      state === 'starting'
        ? 'The kb-lsp server is still starting — try again in a moment.'
        : (problem ?? 'The kb-lsp server is not running — see "KB: Show Log".'),
    );
  }
}

/** What the UI (commands, quick pick, panel, status bar) needs from the server. */
import type * as vscode from 'vscode';
import type { AskEvent, AskResponse, IndexStatus, MethodName, RequestTypes } from './protocol';
import type { SetupProblemKind } from './setupProblem';

export type ServerState = 'starting' | 'running' | 'stopped' | 'failed';

/** Why the server is not running, as the panel's empty state and the notification say it. */
export interface ServerFailure {
  /** One sentence per fact. */
  facts: string[];
  /** `SetupProblemKind`: setting up the extension's own server failed (serverSetup.ts). */
  kind: 'python-missing' | 'package-missing' | 'stopped' | 'other' | SetupProblemKind;
  /** The interpreter that was tried. */
  python?: string;
  /** The commands that install the server (to copy), when installing is the fix. */
  install?: string;
  /** A remote window: `kb.server.python` belongs in the Remote settings. */
  remote: boolean;
}

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
  /** The same, fact by fact, with what fixes it. */
  readonly failure?: ServerFailure;
  /** The `kb` command of the server's environment (KB: Show Status offers to copy it). */
  readonly cli?: string;
  /** The estimate of the running sync's time left, in seconds (`estimate.ts`). */
  readonly secondsLeft?: number;
  readonly onDidChange: vscode.Event<void>;
  readonly onAskEvent: vscode.Event<AskEvent>;
  /** Merge a status from a response (kb/search carries one) into `status`. */
  updateStatus(status: IndexStatus): void;
  /** An answer came back: a model that answered is reachable, whatever an older probe said. */
  noteAnswer?(response: Pick<AskResponse, 'mode' | 'stop'>): void;
  /** Ask the server for its status again (the model's reachability included). */
  refreshStatus?(): Promise<void>;
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

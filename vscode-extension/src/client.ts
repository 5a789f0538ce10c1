/**
 * Starts and restarts the kb-lsp language server (`<python> -m kb_lsp` over stdio) with
 * vscode-languageclient, and turns its notifications into events for the UI.
 */
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  State,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
  type DynamicFeature,
  TransportKind,
} from 'vscode-languageclient/node';
import type { KbBackend, ServerState } from './backend';
import { ServerNotRunning } from './backend';
import { Notifications, type AskEvent, type IndexStatus, type MethodName, type RequestTypes, Methods } from './protocol';
import { choosePython, diagnoseLaunch, type PreflightResult, type PythonChoice, type PythonExtensionApi } from './python';
import { initializationOptions } from './settings';
import { errorMessage } from './util';

/**
 * The server offers `kb.search`, … through `workspace/executeCommand`; the language
 * client would register those names as VS Code commands, which clash with this
 * extension's own `kb.*` commands (the UI around the same requests). Skip that feature.
 */
class KbLanguageClient extends LanguageClient {
  public override registerFeature(feature: StaticFeature | DynamicFeature<unknown>): void {
    const method = (feature as { registrationType?: { method?: string } }).registrationType?.method;
    if (method === ExecuteCommandRequest.method) {
      return;
    }
    super.registerFeature(feature);
  }
}

function preflight(python: string, cwd: string | undefined): Promise<PreflightResult> {
  return new Promise((resolve) => {
    execFile(
      python,
      ['-c', 'import kb_lsp.__main__'],
      { cwd, timeout: 60_000, env: process.env },
      (error, _stdout, stderr) => {
        resolve({
          error: error ? { code: (error as NodeJS.ErrnoException).code ?? error.code, message: error.message } : undefined,
          stderr: String(stderr ?? ''),
        });
      },
    );
  });
}

async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
  if (!ext) {
    return undefined;
  }
  return ext.isActive ? ext.exports : await ext.activate();
}

export class KbServer implements KbBackend, vscode.Disposable {
  private client: KbLanguageClient | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly askEvents = new vscode.EventEmitter<AskEvent>();
  private starting: Promise<void> | undefined;
  private generation = 0;
  public status: IndexStatus | undefined;
  public state: ServerState = 'stopped';
  public problem: string | undefined;
  public python: PythonChoice | undefined;
  readonly onDidChange = this.changed.event;
  readonly onAskEvent = this.askEvents.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.OutputChannel,
  ) {}

  private setState(state: ServerState, problem?: string): void {
    this.state = state;
    this.problem = problem;
    if (state !== 'running') {
      this.status = state === 'failed' ? undefined : this.status;
    }
    this.changed.fire();
  }

  updateStatus(status: IndexStatus): void {
    this.status = status;
    this.changed.fire();
  }

  showLog(): void {
    this.output.show(true);
  }

  async request<M extends MethodName>(
    method: M,
    params: RequestTypes[M][0],
    token?: vscode.CancellationToken,
  ): Promise<RequestTypes[M][1]> {
    if (this.starting) {
      await this.starting;
    }
    const client = this.client;
    if (!client || this.state !== 'running') {
      throw new ServerNotRunning(this.state, this.problem);
    }
    return token ? client.sendRequest(method, params, token) : client.sendRequest(method, params);
  }

  start(): Promise<void> {
    if (!this.starting) {
      this.starting = this.doStart().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  async restart(): Promise<void> {
    if (this.starting) {
      await this.starting;
    }
    await this.stop();
    this.output.appendLine('kb-lsp: restarting the server');
    await this.start();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.generation++;
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        this.output.appendLine(`kb-lsp: stopping the server: ${errorMessage(err)}`);
      }
    }
    this.status = undefined;
    this.setState('stopped');
  }

  private async doStart(): Promise<void> {
    const generation = ++this.generation;
    this.setState('starting');
    const config = vscode.workspace.getConfiguration('kb');
    const folder = vscode.workspace.workspaceFolders?.[0];
    const python = await choosePython(config.get('server.python'), pythonExtensionApi, folder?.uri);
    this.python = python;
    this.output.appendLine(`kb-lsp: starting the server with ${python.command} -m kb_lsp (interpreter from ${python.source})`);
    const check = await preflight(python.command, folder?.uri.fsPath);
    const problem = diagnoseLaunch(python, check);
    if (problem) {
      this.output.appendLine(problem.message);
      if (check.stderr.trim()) {
        this.output.appendLine(check.stderr.trim());
      }
      this.setState('failed', problem.message);
      void this.notifyFailure(problem.message);
      return;
    }
    const storage = (this.context.storageUri ?? this.context.globalStorageUri).fsPath;
    const serverOptions: ServerOptions = {
      command: python.command,
      args: ['-m', 'kb_lsp'],
      transport: TransportKind.stdio,
      options: { cwd: folder?.uri.fsPath, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    };
    const options = () => initializationOptions((key) => vscode.workspace.getConfiguration('kb').get(key), storage);
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'markdown' },
        { scheme: 'untitled', language: 'markdown' },
      ],
      outputChannel: this.output,
      initializationOptions: options(),
      middleware: {
        workspace: {
          // The server reads section `kb` too; answer it with the same options, so the
          // storage folder (not a VS Code setting by default) stays what we passed.
          configuration: async (params, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) {
              return answers;
            }
            return params.items.map((item, i): unknown => (item.section === 'kb' ? options() : answers[i]));
          },
        },
      },
      synchronize: {
        fileEvents: vscode.workspace.createFileSystemWatcher('**/*.{md,markdown}'),
      },
      initializationFailedHandler: (error) => {
        const message = `kb-lsp: the server failed to initialize: ${errorMessage(error)}`;
        this.output.appendLine(message);
        this.setState('failed', message);
        void this.notifyFailure(message);
        return false;
      },
    };
    const client = new KbLanguageClient('kb-lsp', 'Knowledge Base', serverOptions, clientOptions);
    client.onNotification(Notifications.indexChanged, (status: IndexStatus) => this.updateStatus(status));
    client.onNotification(Notifications.askEvent, (event: AskEvent) => this.askEvents.fire(event));
    client.onDidChangeState((event) => {
      if (generation !== this.generation) {
        return;
      }
      if (event.newState === State.Stopped && this.state === 'running') {
        this.setState('failed', 'The kb-lsp server stopped — see "KB: Show Log".');
      } else if (event.newState === State.Running && this.state !== 'running') {
        this.setState('running');
      }
    });
    this.client = client;
    try {
      await client.start();
    } catch (err) {
      if (generation !== this.generation) {
        return;
      }
      const message = `kb-lsp: the server did not start: ${errorMessage(err)}`;
      this.output.appendLine(message);
      this.setState('failed', message);
      void this.notifyFailure(message);
      return;
    }
    if (generation !== this.generation) {
      return;
    }
    this.setState('running');
    try {
      this.updateStatus(await client.sendRequest(Methods.status, {}));
    } catch (err) {
      this.output.appendLine(`kb-lsp: kb/status failed: ${errorMessage(err)}`);
    }
  }

  private async notifyFailure(message: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(message, 'Show log', 'Open settings');
    if (choice === 'Show log') {
      this.showLog();
    } else if (choice === 'Open settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'kb.server.python');
    }
  }

  async dispose(): Promise<void> {
    await this.stop();
    this.changed.dispose();
    this.askEvents.dispose();
  }
}

/**
 * Starts and restarts the kb-lsp language server (`<python> -m kb_lsp` over stdio) with
 * vscode-languageclient, and turns its notifications into events for the UI.
 */
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  State,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
  type DynamicFeature,
  TransportKind,
} from 'vscode-languageclient/node';
import type { KbBackend, ServerFailure, ServerState } from './backend';
import { ServerNotRunning } from './backend';
import { AnsweredModel } from './answeredModel';
import { RateEstimator } from './estimate';
import { Notifications, type AskEvent, type AskResponse, type IndexStatus, type MethodName, type RequestTypes, Methods } from './protocol';
import type { ServerEnvironment } from './managedServer';
import { diagnoseLaunch, type PreflightResult, type PythonChoice, type PythonExtensionApi } from './python';
import { remoteIgnoredUserValue, remoteSettingsMessage, SettingsMemory } from './remoteSettings';
import {
  contributedSettings,
  initializationOptions,
  needsRestart,
  restrictedKeysIn,
  serverSettings,
  type Manifest,
  type SettingsReader,
} from './settings';
import { listFromServer, rememberList } from './lastList';
import { openServerSettings } from './open';
import { STATUS_PROBE } from './request';
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

/**
 * The index's progress has one wording, the extension's (`format.indexLabel`), on the
 * status bar, the notification and the panel. The server's LSP work-done bar would be a
 * fourth surface in its own words: the client does not offer window progress, so the
 * server sends none (an ask's steps stream into the panel instead).
 */
export const NO_WINDOW_PROGRESS: StaticFeature = {
  fillClientCapabilities(capabilities) {
    capabilities.window = { ...(capabilities.window ?? {}), workDoneProgress: false };
  },
  initialize() {
    return undefined;
  },
  getState() {
    return { kind: 'static' };
  },
  clear() {
    return undefined;
  },
};

/** Seconds on a clock that only moves forward. */
function seconds(): number {
  return performance.now() / 1000;
}

/** How often the time left is said again while the numbers stand still. */
const ESTIMATE_REFRESH_MS = 15_000;

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

export async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
  if (!ext) {
    return undefined;
  }
  return ext.isActive ? ext.exports : await ext.activate();
}

/** The `kb` settings as VS Code applies them to the (first) workspace folder: its scope,
 * trust and remote rules included. A snapshot: read it again after a change. */
export function readSettings(context: vscode.ExtensionContext): SettingsReader {
  const { keys, restricted, machineScoped } = contributedSettings(context.extension.packageJSON as Manifest);
  const config = vscode.workspace.getConfiguration('kb', vscode.workspace.workspaceFolders?.[0]?.uri);
  return {
    keys,
    restricted,
    machineScoped,
    trusted: vscode.workspace.isTrusted,
    get: (key) => config.get(key),
    inspect: (key) => config.inspect(key),
  };
}

export class KbServer implements KbBackend, vscode.Disposable {
  private client: KbLanguageClient | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly askEvents = new vscode.EventEmitter<AskEvent>();
  private starting: Promise<void> | undefined;
  private generation = 0;
  private toldRestricted = false;
  private readonly toldRemote = new Set<string>();
  private readonly memory = new SettingsMemory();
  /** The settings as the running server gets them (set while one runs). */
  private currentSettings: (() => Record<string, unknown>) | undefined;
  public status: IndexStatus | undefined;
  public state: ServerState = 'stopped';
  public problem: string | undefined;
  public failure: ServerFailure | undefined;
  public python: PythonChoice | undefined;
  private readonly estimator = new RateEstimator();
  private refreshEstimate: ReturnType<typeof setInterval> | undefined;
  private readonly answered = new AnsweredModel();
  readonly onDidChange = this.changed.event;
  readonly onAskEvent = this.askEvents.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.OutputChannel,
    /** Which interpreter runs the server, set up when it must be (managedServer.ts). */
    private readonly environment: ServerEnvironment,
  ) {}

  /** The `kb` command of the server's environment, for the terminal. */
  get cli(): string | undefined {
    return this.environment.kbCommand(this.python);
  }

  private setState(state: ServerState, failure?: ServerFailure): void {
    this.state = state;
    this.failure = failure;
    this.problem = failure ? `kb-lsp: ${failure.facts.join(' ')}` : undefined;
    if (state !== 'running') {
      this.status = state === 'failed' ? undefined : this.status;
    }
    void vscode.commands.executeCommand('setContext', 'kb.serverRunning', state === 'running');
    this.changed.fire();
  }

  private fail(facts: string[], kind: ServerFailure['kind'] = 'other', install?: string): ServerFailure {
    const failure: ServerFailure = { facts, kind, python: this.python?.command, install, remote: vscode.env.remoteName !== undefined };
    this.setState('failed', failure);
    return failure;
  }

  updateStatus(status: IndexStatus): void {
    this.status = this.answered.apply(status);
    this.estimator.observe(this.status, seconds());
    this.keepEstimateFresh();
    this.changed.fire();
  }

  get secondsLeft(): number | undefined {
    return this.state === 'running' ? this.estimator.secondsLeft(this.status, seconds()) : undefined;
  }

  /** While a sync runs, say the time left again now and then: the numbers may stand still
   * for minutes (one batch of vectors) while the time passes. */
  private keepEstimateFresh(): void {
    const indexing = this.state === 'running' && this.status?.state === 'indexing';
    if (indexing && !this.refreshEstimate) {
      this.refreshEstimate = setInterval(() => this.changed.fire(), ESTIMATE_REFRESH_MS);
    } else if (!indexing && this.refreshEstimate) {
      clearInterval(this.refreshEstimate);
      this.refreshEstimate = undefined;
    }
  }

  noteAnswer(response: Pick<AskResponse, 'mode' | 'stop'>): void {
    this.answered.note(response, this.status?.llm);
    if (this.status?.llm.reachable === false) {
      this.updateStatus(this.status);
    }
  }

  /** The model settings changed: what was known about the model no longer holds. */
  modelSettingsChanged(): void {
    this.answered.forget();
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
    const folder = vscode.workspace.workspaceFolders?.[0];
    const settings = this.readSettings();
    void this.tellRestricted(settings);
    const chosen = await this.environment.choose(settings.get('server.python'), folder?.uri);
    if (generation !== this.generation) {
      return;
    }
    if ('problem' in chosen) {
      this.python = undefined;
      this.fail(chosen.problem.facts, chosen.problem.kind, chosen.problem.command); // told with its actions already
      return;
    }
    const python = chosen.python;
    this.python = python;
    this.output.appendLine(`kb-lsp: starting the server with ${python.command} -m kb_lsp (interpreter from ${python.source})`);
    const check = await preflight(python.command, folder?.uri.fsPath);
    const problem = diagnoseLaunch(python, check, vscode.env.remoteName !== undefined, this.environment.wheel?.path);
    if (problem) {
      this.output.appendLine(problem.message);
      if (check.stderr.trim()) {
        this.output.appendLine(check.stderr.trim());
      }
      this.fail(problem.facts, problem.problem, problem.install);
      if (!this.environment.didNotStart(python)) {
        void this.notifyFailure(problem.message);
      }
      return;
    }
    const storage = (this.context.storageUri ?? this.context.globalStorageUri).fsPath;
    const serverOptions: ServerOptions = {
      command: python.command,
      args: ['-m', 'kb_lsp'],
      transport: TransportKind.stdio,
      options: { cwd: folder?.uri.fsPath, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    };
    // The server pulls section `kb` (workspace/configuration) and is pushed every change
    // (workspace/didChangeConfiguration, `configurationChanged`); both carry the settings as
    // `serverSettings` makes them — only what the user set, and the storage folder — and the
    // server applies them live. Only the interpreter restarts it.
    const current = () => serverSettings(this.readSettings(), storage);
    this.currentSettings = current;
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'markdown' },
        { scheme: 'untitled', language: 'markdown' },
      ],
      outputChannel: this.output,
      initializationOptions: initializationOptions(settings, storage),
      middleware: {
        workspace: {
          configuration: async (params, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) {
              return answers;
            }
            return params.items.map((item, i): unknown => (item.section === 'kb' ? current() : answers[i]));
          },
        },
      },
      synchronize: {
        fileEvents: vscode.workspace.createFileSystemWatcher('**/*.{md,markdown}'),
      },
      initializationFailedHandler: (error) => {
        const facts = ['The server failed to initialize.', sentence(errorMessage(error))];
        this.output.appendLine(`kb-lsp: ${facts.join(' ')}`);
        void this.notifyFailure(`kb-lsp: ${this.fail(facts).facts.join(' ')}`);
        return false;
      },
    };
    const client = new KbLanguageClient('kb-lsp', 'Knowledge Base', serverOptions, clientOptions);
    client.registerFeature(NO_WINDOW_PROGRESS);
    client.onNotification(Notifications.indexChanged, (status: IndexStatus) => this.updateStatus(status));
    client.onNotification(Notifications.askEvent, (event: AskEvent) => this.askEvents.fire(event));
    // The server's numbered list changed other than by a search of this window (an ask's
    // own search, `kb search` or an MCP client on the same index): "file N" means that
    // list now, so the panel and KB: Open Result… show it. Servers without it never send it.
    client.onNotification(Notifications.listChanged, (params: unknown) => {
      const list = listFromServer(params, this.status);
      if (list) {
        rememberList(list.response, list.origin);
      }
    });
    client.onDidChangeState((event) => {
      if (generation !== this.generation) {
        return;
      }
      if (event.newState === State.Stopped && this.state === 'running') {
        this.fail(['The kb-lsp server stopped.', 'Its log says why.'], 'stopped');
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
      const facts = ['The server did not start.', sentence(errorMessage(err))];
      this.output.appendLine(`kb-lsp: ${facts.join(' ')}`);
      this.fail(facts);
      void this.notifyFailure(`kb-lsp: ${facts.join(' ')}`);
      return;
    }
    if (generation !== this.generation) {
      return;
    }
    this.setState('running');
    this.environment.started(python);
    try {
      this.updateStatus(await client.sendRequest(Methods.status, {}));
    } catch (err) {
      this.output.appendLine(`kb-lsp: kb/status failed: ${errorMessage(err)}`);
    }
  }

  /** The `kb` settings as VS Code applies them, with the machine settings that a remote
   * window dropped without a change put back (remoteSettings.ts); says so when it does. */
  private readSettings(): SettingsReader {
    const raw = readSettings(this.context);
    const settings = this.memory.recall(raw);
    const ignored = raw.machineScoped.filter(
      (key) =>
        this.memory.kept.has(key) ||
        remoteIgnoredUserValue(raw.inspect(key), vscode.env.remoteName, raw.trusted || !raw.restricted.includes(key)) !== undefined,
    );
    this.tellRemoteSettings(ignored);
    return settings;
  }

  /**
   * A `kb` settings change: restarts the server for a new interpreter, else sends the
   * settings to the running server (workspace/didChangeConfiguration), which applies them.
   * Returns whether a restart is due (the caller debounces it).
   */
  configurationChanged(affects: (section: string) => boolean): boolean {
    this.memory.noteChange(readSettings(this.context).keys, affects);
    if (needsRestart(affects)) {
      return true;
    }
    const model = affects('kb.llm') || affects('kb.ollama');
    if (model) {
      this.modelSettingsChanged();
    }
    void this.pushSettings().then(() => (model ? this.refreshStatus() : undefined));
    return false;
  }

  /** Ask the server for its status again (after a settings change, or Retry): the model's
   * reachability is what it says now (`STATUS_PROBE`: afresh, where the server can). */
  async refreshStatus(): Promise<void> {
    const client = this.client;
    if (!client || this.state !== 'running') {
      return;
    }
    try {
      this.updateStatus(await client.sendRequest<IndexStatus>(Methods.status as string, STATUS_PROBE));
    } catch (err) {
      this.output.appendLine(`kb-lsp: kb/status failed: ${errorMessage(err)}`);
    }
  }

  /** The workspace was trusted: its values of the restricted settings apply now. A new
   * interpreter needs a new server; anything else is sent to the running one. */
  async trustGranted(): Promise<void> {
    const setting = this.readSettings().get('server.python');
    if (typeof setting === 'string' && setting.trim() !== '' && setting.trim() !== this.python?.command) {
      await this.restart();
    } else {
      await this.pushSettings();
    }
  }

  private async pushSettings(): Promise<void> {
    const client = this.client;
    if (client && this.state === 'running' && this.currentSettings) {
      try {
        await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { kb: this.currentSettings() } });
      } catch (err) {
        this.output.appendLine(`kb-lsp: sending the settings failed: ${errorMessage(err)}`);
      }
    }
  }

  private tellRemoteSettings(keys: readonly string[]): void {
    const untold = keys.filter((key) => !this.toldRemote.has(key));
    if (untold.length === 0) {
      return;
    }
    untold.forEach((key) => this.toldRemote.add(key));
    const message = remoteSettingsMessage(keys);
    this.output.appendLine(message);
    void vscode.window.showWarningMessage(message, 'Open Remote Settings').then((choice) => {
      if (choice) {
        void vscode.commands.executeCommand('workbench.action.openRemoteSettings');
      }
    });
  }

  /** In an untrusted workspace VS Code ignores the workspace's values of the restricted
   * settings (package.json `capabilities.untrustedWorkspaces`); say so, and why: in the log
   * always, in a message (once) when a workspace settings file sets one of them. */
  private async tellRestricted(settings: SettingsReader): Promise<void> {
    if (settings.trusted) {
      return;
    }
    const restricted = settings.restricted.map((key) => `kb.${key}`);
    this.output.appendLine(
      `kb-lsp: Restricted Mode: this workspace is not trusted, so only your user settings apply to ${restricted.join(', ')}.`,
    );
    const files = (vscode.workspace.workspaceFolders ?? []).map((f) => vscode.Uri.joinPath(f.uri, '.vscode', 'settings.json'));
    if (vscode.workspace.workspaceFile?.scheme === 'file') {
      files.push(vscode.workspace.workspaceFile);
    }
    const set = new Set<string>();
    for (const file of files) {
      try {
        const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(file));
        restrictedKeysIn(text, settings.restricted).forEach((key) => set.add(`kb.${key}`));
      } catch {
        // no settings file there
      }
    }
    if (set.size === 0 || this.toldRestricted) {
      return;
    }
    this.toldRestricted = true;
    const ignored = [...set].join(', ');
    this.output.appendLine(`kb-lsp: the workspace sets ${ignored}: ignored until it is trusted.`);
    const choice = await vscode.window.showWarningMessage(
      `kb-lsp: this workspace is not trusted, so its ${ignored} settings are ignored and your user settings are used. Trust the workspace to use them.`,
      'Manage Workspace Trust',
    );
    if (choice) {
      await vscode.commands.executeCommand('workbench.trust.manage');
    }
  }

  private async notifyFailure(message: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(message, 'Open Settings', 'Show Log');
    if (choice === 'Show Log') {
      this.showLog();
    } else if (choice === 'Open Settings') {
      await openServerSettings();
    }
  }

  async dispose(): Promise<void> {
    if (this.refreshEstimate) {
      clearInterval(this.refreshEstimate);
      this.refreshEstimate = undefined;
    }
    await this.stop();
    this.changed.dispose();
    this.askEvents.dispose();
  }
}

/** `text` as one sentence: a full stop at the end. */
function sentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

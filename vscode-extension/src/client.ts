/**
 * Starts and restarts the kb-lsp language server (`<python> -m kb_lsp` over stdio) with
 * vscode-languageclient, and turns its notifications into events for the UI.
 */
import * as vscode from 'vscode';
import { DidChangeConfigurationNotification, State } from 'vscode-languageclient/node';
import type { KbBackend, ServerFailure, ServerState } from './backend';
import { ServerNotRunning } from './backend';
import { AnsweredModel } from './answeredModel';
import { RateEstimator } from './estimate';
import { FailureNotice } from './failureNotice';
import { clientOptions, KbLanguageClient, NO_WINDOW_PROGRESS, preflight, readSettings, sentence, serverOptions } from './languageClient';
import { listFromServer, rememberList } from './lastList';
import { Notifications, type AskEvent, type AskResponse, type IndexStatus, type MethodName, type RequestTypes, Methods } from './protocol';
import type { ServerEnvironment } from './managedServer';
import { diagnoseLaunch, type PythonChoice } from './python';
import { remoteIgnoredUserValue, SettingsMemory } from './remoteSettings';
import { STATUS_PROBE } from './request';
import { needsRestart, serverSettings, type SettingsReader } from './settings';
import { SettingsNotices } from './settingsNotices';
import { errorMessage } from './util';

export { pythonExtensionApi, readSettings } from './languageClient';

/** Seconds on a clock that only moves forward. */
function seconds(): number {
  return performance.now() / 1000;
}

/** How often the time left is said again while the numbers stand still. */
const ESTIMATE_REFRESH_MS = 15_000;

export class KbServer implements KbBackend, vscode.Disposable {
  private client: KbLanguageClient | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly askEvents = new vscode.EventEmitter<AskEvent>();
  private starting: Promise<void> | undefined;
  private generation = 0;
  private readonly notices: SettingsNotices;
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
  private readonly failureNotice = new FailureNotice();
  readonly onDidChange = this.changed.event;
  readonly onAskEvent = this.askEvents.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.OutputChannel,
    /** Which interpreter runs the server, set up when it must be (managedServer.ts). */
    private readonly environment: ServerEnvironment,
  ) {
    this.notices = new SettingsNotices(output);
  }

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
    if (state === 'running') {
      this.failureNotice.close(); // what it said is no longer so
    }
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
    void this.notices.tellRestricted(settings);
    const python = await this.launchable(settings, folder, generation);
    if (!python) {
      return;
    }
    const storage = (this.context.storageUri ?? this.context.globalStorageUri).fsPath;
    const current = () => serverSettings(this.readSettings(), storage);
    this.currentSettings = current;
    const options = clientOptions({
      output: this.output,
      settings,
      storage,
      current,
      initializationFailed: (error) => {
        const facts = ['The server failed to initialize.', sentence(errorMessage(error))];
        this.output.appendLine(`kb-lsp: ${facts.join(' ')}`);
        this.notifyFailure(`kb-lsp: ${this.fail(facts).facts.join(' ')}`);
      },
    });
    const client = new KbLanguageClient('kb-lsp', 'Knowledge Base', serverOptions(python.command, folder), options);
    this.listen(client, generation);
    this.client = client;
    await this.run(client, generation, python);
  }

  /** The interpreter to start the server with (set up when it must be), or undefined (said) when it cannot. */
  private async launchable(settings: SettingsReader, folder: vscode.WorkspaceFolder | undefined, generation: number): Promise<PythonChoice | undefined> {
    const chosen = await this.environment.choose(settings.get('server.python'), folder?.uri);
    if (generation !== this.generation) {
      return undefined;
    }
    if ('problem' in chosen) {
      this.python = undefined;
      this.fail(chosen.problem.facts, chosen.problem.kind, chosen.problem.command); // told with its actions already
      return undefined;
    }
    const python = chosen.python;
    this.python = python;
    this.output.appendLine(`kb-lsp: starting the server with ${python.command} -m kb_lsp (interpreter from ${python.source})`);
    const check = await preflight(python.command, folder?.uri.fsPath);
    const problem = diagnoseLaunch(python, check, vscode.env.remoteName !== undefined, this.environment.wheel?.path);
    if (!problem) {
      return python;
    }
    this.output.appendLine(problem.message);
    if (check.stderr.trim()) {
      this.output.appendLine(check.stderr.trim());
    }
    this.fail(problem.facts, problem.problem, problem.install);
    if (!this.environment.didNotStart(python)) {
      this.notifyFailure(problem.message);
    }
    return undefined;
  }

  /** The server's notifications, and its process going away. */
  private listen(client: KbLanguageClient, generation: number): void {
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
  }

  /** Start the client; running, the first status. */
  private async run(client: KbLanguageClient, generation: number, python: PythonChoice): Promise<void> {
    try {
      await client.start();
    } catch (err) {
      if (generation !== this.generation) {
        return;
      }
      const facts = ['The server did not start.', sentence(errorMessage(err))];
      this.output.appendLine(`kb-lsp: ${facts.join(' ')}`);
      this.fail(facts);
      this.notifyFailure(`kb-lsp: ${facts.join(' ')}`);
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
    this.notices.tellRemoteSettings(ignored);
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

  private notifyFailure(message: string): void {
    this.failureNotice.show(message);
  }

  async dispose(): Promise<void> {
    if (this.refreshEstimate) {
      clearInterval(this.refreshEstimate);
      this.refreshEstimate = undefined;
    }
    await this.stop();
    this.failureNotice.close();
    this.changed.dispose();
    this.askEvents.dispose();
  }
}

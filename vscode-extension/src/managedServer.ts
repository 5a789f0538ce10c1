/**
 * Which interpreter runs the server, in this order: `kb.server.python` when set; the
 * extension's own environment of the kb-lsp wheel the .vsix carries, when it is set up;
 * otherwise it is set up now (`serverSetup.ts`), on first use, in one cancellable progress
 * notification with pip's steps and the whole log in the output channel. A newer wheel
 * (an updated extension) is set up in the background while the server runs from the old
 * environment, and the server moves over when it is ready — for good once it has started
 * there. A build without a bundled wheel (from source) keeps the old order: the setting,
 * the Python extension's interpreter, `python3`.
 *
 * In a remote window (SSH, WSL, containers) the extension runs on the remote side
 * (`extensionKind: ["workspace"]`), so the Python found and the environment made are the
 * remote machine's.
 */
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import * as vscode from 'vscode';
import { nodeExec, type Exec } from './exec';
import { findPython, pythonCandidates } from './findPython';
import { openServerSettings } from './open';
import { choosePython, interpreterFromApi, type PythonChoice, type PythonExtensionApi } from './python';
import {
  bundledWheel,
  currentEnv,
  envPython,
  kbBeside,
  managedEnvironment,
  markStarted,
  setUp,
  type BundledWheel,
  type Layout,
} from './serverSetup';
import { commandLine, isProblem, thrown, type SetupProblem } from './setupProblem';
import { errorMessage } from './util';

export type ChosenPython = { python: PythonChoice } | { problem: SetupProblem };

/** The actions a set-up problem's notification offers, by kind. */
function actionsFor(problem: SetupProblem): string[] {
  switch (problem.kind) {
    case 'no-python':
    case 'python-too-old':
      return ['Get Python', 'Open Settings', 'Retry'];
    case 'cancelled':
      return ['Retry'];
    default:
      return problem.command ? ['Copy Command', 'Show Log', 'Retry'] : ['Show Log', 'Retry'];
  }
}

export class ServerEnvironment implements vscode.Disposable {
  readonly layout: Layout;
  private wheelCache: BundledWheel | null | undefined;
  /** Environments whose server did not start in this window (not tried again here). */
  private readonly failed = new Set<string>();
  private upgrading = false;
  private readonly ready = new vscode.EventEmitter<void>();
  /** The server should restart: a newer environment is ready, or it must go back to the old one. */
  readonly onDidChange = this.ready.event;

  constructor(
    private readonly context: Pick<vscode.ExtensionContext, 'extensionPath' | 'globalStorageUri'>,
    private readonly output: { appendLine(line: string): void; show(preserveFocus?: boolean): void },
    private readonly pythonApi: () => Promise<PythonExtensionApi | undefined>,
    private readonly exec: Exec = nodeExec,
    windows = process.platform === 'win32',
  ) {
    this.layout = { root: join(context.globalStorageUri.fsPath, 'server'), windows };
  }

  /** The kb-lsp wheel the .vsix carries (read once). */
  get wheel(): BundledWheel | undefined {
    if (this.wheelCache === undefined) {
      this.wheelCache = bundledWheel(join(this.context.extensionPath, 'server-wheel')) ?? null;
    }
    return this.wheelCache ?? undefined;
  }

  /** The interpreter for the server, setting one up when it must; a problem (already told
   * to the user, with actions) when there is none. */
  async choose(setting: unknown, resource?: vscode.Uri): Promise<ChosenPython> {
    const wheel = this.wheel;
    if ((typeof setting === 'string' && setting.trim() !== '') || !wheel) {
      return { python: await choosePython(setting, this.pythonApi, resource) };
    }
    const managed = managedEnvironment(this.layout, wheel, this.failed);
    if (managed.kind === 'stale') {
      this.upgradeInBackground(wheel, resource);
    }
    if (managed.kind !== 'none') {
      return { python: { command: managed.python, source: 'managed', env: managed.id } };
    }
    const made = await this.setUpNow(wheel, resource, false);
    if (isProblem(made)) {
      void this.tell(made);
      return { problem: made };
    }
    return { python: { command: made, source: 'managed', env: wheel.id } };
  }

  /** What `kb mcp` is started with: like `choose`, without setting anything up (the bundled
   * environment's interpreter is where it will be). */
  async launchPython(setting: unknown, resource?: vscode.Uri): Promise<PythonChoice> {
    const wheel = this.wheel;
    if ((typeof setting === 'string' && setting.trim() !== '') || !wheel) {
      return choosePython(setting, this.pythonApi, resource);
    }
    const managed = managedEnvironment(this.layout, wheel, this.failed);
    const env = managed.kind === 'none' ? wheel.id : managed.id;
    return { command: envPython(this.layout, env), source: 'managed', env };
  }

  /** The server runs from `python`: its environment becomes the current one. */
  started(python: PythonChoice): void {
    if (python.env) {
      try {
        markStarted(this.layout, python.env);
      } catch (err) {
        this.output.appendLine(`kb-lsp: could not record the server's environment: ${errorMessage(err)}`);
      }
    }
  }

  /** The server did not start from `python`. True when there is an older environment it
   * started from before: `onDidChange` fires and the restart goes back to it. */
  didNotStart(python: PythonChoice): boolean {
    const current = currentEnv(this.layout);
    if (!python.env || !current || current === python.env || this.failed.has(python.env)) {
      return false;
    }
    this.failed.add(python.env);
    this.output.appendLine(`kb-lsp: the server did not start from ${python.env}; going back to ${current}`);
    this.ready.fire();
    return true;
  }

  /** The `kb` command beside the server's interpreter, when there is one. */
  kbCommand(python: PythonChoice | undefined): string | undefined {
    if (!python || (python.source !== 'managed' && python.source !== 'setting')) {
      return undefined;
    }
    const kb = kbBeside(python.command, this.layout.windows);
    return existsSync(kb) ? commandLine([kb], this.layout.windows) : undefined;
  }

  private upgradeInBackground(wheel: BundledWheel, resource?: vscode.Uri): void {
    if (this.upgrading) {
      return;
    }
    this.upgrading = true;
    void this.setUpNow(wheel, resource, true).then((made) => {
      if (isProblem(made)) {
        this.output.appendLine(`kb-lsp: the new server was not set up; the old one keeps running. ${made.facts.join(' ')}`);
      } else {
        this.output.appendLine(`kb-lsp: kb-lsp ${wheel.version} is set up; restarting the server from it`);
        this.ready.fire();
      }
    });
  }

  private setUpNow(wheel: BundledWheel, resource: vscode.Uri | undefined, update: boolean): Promise<string | SetupProblem> {
    const title = update ? `KB: Updating the kb-lsp server to ${wheel.version}` : 'KB: Setting up the kb-lsp server (first use)';
    return Promise.resolve(
      vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, async (progress, token) => {
        const abort = new AbortController();
        const cancel = token.onCancellationRequested(() => abort.abort());
        const step = (message: string): void => progress.report({ message });
        const log = (line: string): void => this.output.appendLine(line);
        try {
          log(`kb-lsp: setting up the server's Python environment in ${this.layout.root} from ${wheel.path}`);
          step('Looking for Python 3.11 or newer');
          const fromExtension = await interpreterFromApi(await this.pythonApi().catch(() => undefined), resource);
          const python = await findPython(pythonCandidates(fromExtension, this.layout.windows), this.exec, log);
          if (isProblem(python)) {
            return python;
          }
          const made = await setUp(this.layout, wheel, python, this.exec, { step, log, signal: abort.signal }).catch(thrown);
          log(isProblem(made) ? `kb-lsp: ${made.facts.join(' ')}` : `kb-lsp: the server is set up: ${made}`);
          return made;
        } finally {
          cancel.dispose();
        }
      }),
    );
  }

  /** An error notification with the actions that fix `problem`. */
  private async tell(problem: SetupProblem): Promise<void> {
    const choice = await vscode.window.showErrorMessage(`kb-lsp: ${problem.facts.join(' ')}`, ...actionsFor(problem));
    if (choice === 'Get Python') {
      await vscode.env.openExternal(vscode.Uri.parse('https://www.python.org/downloads/'));
    } else if (choice === 'Open Settings') {
      await openServerSettings();
    } else if (choice === 'Copy Command' && problem.command) {
      await vscode.env.clipboard.writeText(problem.command);
    } else if (choice === 'Show Log') {
      this.output.show(true);
    } else if (choice === 'Retry') {
      await vscode.commands.executeCommand('kb.restartServer');
    }
  }

  dispose(): void {
    this.ready.dispose();
  }
}

/**
 * The pieces a start of the kb-lsp server is made of: the interpreter's check, the
 * language client (without the features that clash with this extension's own), its
 * options and the settings it is started with. `client.ts` puts them together.
 */
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  TransportKind,
  type DynamicFeature,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';
import type { PreflightResult, PythonExtensionApi } from './python';
import { contributedSettings, initializationOptions, type Manifest, type SettingsReader } from './settings';

/**
 * The server offers `kb.search`, … through `workspace/executeCommand`; the language
 * client would register those names as VS Code commands, which clash with this
 * extension's own `kb.*` commands (the UI around the same requests). Skip that feature.
 */
export class KbLanguageClient extends LanguageClient {
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

export function preflight(python: string, cwd: string | undefined): Promise<PreflightResult> {
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

/** How the server process is started: `<python> -m kb_lsp` over stdio, in the folder. */
export function serverOptions(python: string, folder: vscode.WorkspaceFolder | undefined): ServerOptions {
  return {
    command: python,
    args: ['-m', 'kb_lsp'],
    transport: TransportKind.stdio,
    options: { cwd: folder?.uri.fsPath, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
  };
}

export interface ClientSetup {
  output: vscode.OutputChannel;
  settings: SettingsReader;
  storage: string;
  /** The settings as the server gets them now. */
  current: () => Record<string, unknown>;
  initializationFailed: (error: unknown) => void;
}

/**
 * The language client's options. The server pulls section `kb` (workspace/configuration)
 * and is pushed every change (workspace/didChangeConfiguration, `configurationChanged`);
 * both carry the settings as `serverSettings` makes them — only what the user set, and
 * the storage folder — and the server applies them live. Only the interpreter restarts it.
 */
export function clientOptions(setup: ClientSetup): LanguageClientOptions {
  return {
    documentSelector: [
      { scheme: 'file', language: 'markdown' },
      { scheme: 'untitled', language: 'markdown' },
    ],
    outputChannel: setup.output,
    initializationOptions: initializationOptions(setup.settings, setup.storage),
    middleware: {
      workspace: {
        configuration: async (params, token, next) => {
          const answers = await next(params, token);
          if (!Array.isArray(answers)) {
            return answers;
          }
          return params.items.map((item, i): unknown => (item.section === 'kb' ? setup.current() : answers[i]));
        },
      },
    },
    synchronize: {
      fileEvents: vscode.workspace.createFileSystemWatcher('**/*.{md,markdown}'),
    },
    initializationFailedHandler: (error) => {
      setup.initializationFailed(error);
      return false;
    },
  };
}

/** `text` as one sentence: a full stop at the end. */
export function sentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

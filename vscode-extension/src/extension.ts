/** Entry point: the server client, the panel, the commands and the status bar. */
import * as vscode from 'vscode';
import { KbServer, pythonExtensionApi, readSettings } from './client';
import { registerCommands } from './commands';
import { ServerEnvironment } from './managedServer';
import { registerCopyCommand, registerMcpServer, useServerPython, useSettingsReader, type McpRegistration } from './mcp';
import { ChatHistory } from './chatHistory';
import { defaultPanelDeps, KbPanel, VIEW_ID } from './panel';
import { IndexProgressNotification } from './indexProgress';
import { KbStatusBar } from './statusBar';
import { Debouncer } from './util';

export interface KbExtensionApi {
  server: KbServer;
  panel: KbPanel;
  mcp: McpRegistration;
}

let server: KbServer | undefined;

export function activate(context: vscode.ExtensionContext): KbExtensionApi {
  const output = vscode.window.createOutputChannel('Knowledge Base');
  // In a remote window this runs on the remote side (extensionKind "workspace"): the
  // server's environment is set up there.
  const environment = new ServerEnvironment(context, output, pythonExtensionApi);
  server = new KbServer(context, output, environment);
  // Conversations are kept per workspace, across window reloads.
  const panel = new KbPanel(context.extensionUri, server, defaultPanelDeps(new ChatHistory(context.workspaceState)));
  const restart = new Debouncer(1000, () => void server?.restart());
  useSettingsReader(readSettings);
  useServerPython((setting, _api, resource) => environment.launchPython(setting, resource));
  const mcp = registerMcpServer(context, pythonExtensionApi, output);

  context.subscriptions.push(
    output,
    environment,
    // A newer server is set up (or the new one did not start): run the server from it.
    environment.onDidChange(() => void server?.restart()),
    panel,
    vscode.window.registerWebviewViewProvider(VIEW_ID, panel, { webviewOptions: { retainContextWhenHidden: true } }),
    new KbStatusBar(server),
    new IndexProgressNotification(server),
    ...registerCommands(server, panel),
    ...mcp.disposables,
    registerCopyCommand(context, pythonExtensionApi, mcp.registration),
    // A new interpreter restarts the server; every other kb.* change is sent to the running
    // server, which applies it without a restart.
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('kb') && server?.configurationChanged((section) => event.affectsConfiguration(section))) {
        restart.trigger();
      }
    }),
    // Trusting the workspace lets its values of restricted settings apply.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void server?.trustGranted()),
    { dispose: () => restart.cancel() },
  );

  void server.start();
  return { server, panel, mcp: mcp.registration };
}

export async function deactivate(): Promise<void> {
  const running = server;
  server = undefined;
  await running?.dispose();
}

/** Entry point: the server client, the panel, the commands and the status bar. */
import * as vscode from 'vscode';
import { KbServer, pythonExtensionApi, readSettings } from './client';
import { registerCommands } from './commands';
import { registerCopyCommand, registerMcpServer, useSettingsReader, type McpRegistration } from './mcp';
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
  server = new KbServer(context, output);
  // Conversations are kept per workspace, across window reloads.
  const panel = new KbPanel(context.extensionUri, server, defaultPanelDeps(new ChatHistory(context.workspaceState)));
  const restart = new Debouncer(1000, () => void server?.restart());
  useSettingsReader(readSettings);
  const mcp = registerMcpServer(context, pythonExtensionApi, output);

  context.subscriptions.push(
    output,
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

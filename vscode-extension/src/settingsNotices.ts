/**
 * What the extension says about settings VS Code ignores: the workspace's values of the
 * restricted settings in an untrusted workspace, and machine settings a remote window
 * dropped. Each once per window, in the log always.
 */
import * as vscode from 'vscode';
import { remoteSettingsMessage } from './remoteSettings';
import { restrictedKeysIn, type SettingsReader } from './settings';

export class SettingsNotices {
  private toldRestricted = false;
  private readonly toldRemote = new Set<string>();

  constructor(private readonly output: vscode.OutputChannel) {}

  tellRemoteSettings(keys: readonly string[]): void {
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
  async tellRestricted(settings: SettingsReader): Promise<void> {
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
}

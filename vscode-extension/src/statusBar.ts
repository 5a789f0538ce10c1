/** The status-bar item: index state from kb/indexChanged and kb/status; opens the panel. */
import * as vscode from 'vscode';
import type { KbBackend } from './backend';
import { statusView } from './format';

export class KbStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly backend: KbBackend) {
    this.item = vscode.window.createStatusBarItem('kb.status', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'Knowledge Base';
    this.subscription = backend.onDidChange(() => this.update());
    this.update();
    this.item.show();
  }

  update(): void {
    const backend = this.backend;
    if (backend.state === 'failed') {
      this.item.text = '$(error) KB: not running';
      this.item.tooltip = `${backend.problem ?? 'The kb-lsp server is not running.'}\nClick to open the Knowledge Base panel.`;
      this.item.command = 'kb.showPanel';
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
      return;
    }
    const view = statusView(backend.state === 'running' ? backend.status : undefined, backend.secondsLeft);
    this.item.text = backend.state === 'stopped' ? '$(circle-slash) KB: stopped' : view.text;
    this.item.tooltip = `${view.tooltip}\nClick to open the Knowledge Base panel.`;
    this.item.command = 'kb.showPanel';
    this.item.backgroundColor =
      view.kind === 'error' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }
}

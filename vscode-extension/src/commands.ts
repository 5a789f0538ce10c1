/** The command-palette commands, all under the "KB" category. */
import * as vscode from 'vscode';
import type { KbBackend } from './backend';
import { indexLabel, relativeTo, stateFlags, statusView } from './format';
import { openResult, openServerSettings } from './open';
import type { KbPanel } from './panel';
import { CONTAINER_ID } from './panel';
import { Methods, type IndexStatus } from './protocol';
import { chooseModel } from './modelPicker';
import { pickResult, showSearch } from './quickPick';
import { errorMessage } from './util';

/** What "KB: Summarize This File" asks, about the file it is run on. */
export const SUMMARIZE_THIS_FILE = 'Summarize this file';

export const Commands = {
  search: 'kb.search',
  openResult: 'kb.openResult',
  ask: 'kb.ask',
  askAboutFile: 'kb.askAboutFile',
  summarizeFile: 'kb.summarizeFile',
  reindex: 'kb.reindex',
  showStatus: 'kb.showStatus',
  showPanel: 'kb.showPanel',
  showLog: 'kb.showLog',
  restartServer: 'kb.restartServer',
  related: 'kb.related',
  chooseModel: 'kb.chooseModel',
  openServerSettings: 'kb.openServerSettings',
  stopAnswer: 'kb.stopAnswer',
} as const;

/** The workspace-relative path of a file (the argument, else the active editor's). */
export function fileArgument(arg: unknown): { path: string } | { error: string } {
  const uri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
  if (!uri) {
    return { error: 'Open a Markdown file first.' };
  }
  const roots = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const path = uri.scheme === 'file' ? relativeTo(roots, uri.fsPath) : undefined;
  if (!path) {
    return { error: `${uri.fsPath} is not inside the workspace, so it is not in the knowledge base.` };
  }
  return { path };
}

async function reportError(err: unknown): Promise<void> {
  await vscode.window.showErrorMessage(`KB: ${errorMessage(err)}`);
}

/** The first line of `KB: Show Status`: the state in a few words. */
export function statusTitle(status: IndexStatus): string {
  if (status.state === 'indexing') {
    return `KB: ${indexLabel({ ...status, paused: false })}${status.paused ? ' · paused' : ''}${stateFlags(status)}`;
  }
  return statusView(status).text.replace(/\$\([^)]*\)\s*/g, '');
}

/** Everything `KB: Show Status` says below its title, one fact a line. */
export function statusDetail(status: IndexStatus): string {
  const lines = [statusView(status).tooltip];
  if (status.state === 'indexing') {
    lines.unshift(`Progress: ${indexLabel(status)}`);
  }
  for (const file of (status.skipped ?? []).slice(0, 10)) {
    lines.push(`  skipped ${file.path}: ${file.reason}`);
  }
  if ((status.skipped?.length ?? 0) > 10) {
    lines.push(`  … and ${(status.skipped?.length ?? 0) - 10} more (see the log)`);
  }
  if (status.roots?.length) {
    lines.push(`Folders: ${status.roots.join(', ')}`);
  }
  return lines.join('\n');
}

/** The Show Status button that copies the `kb` command of the server's environment. */
export const COPY_KB = 'Copy kb Command';

/** The line of `KB: Show Status` that names the command line of the server's environment. */
export function cliLine(cli: string): string {
  return `Command line: ${cli} (the same server, for the terminal)`;
}

/** `fn` as command `id`: an error it throws becomes an error message, not a rejection. */
function register(id: string, fn: (...args: unknown[]) => Promise<unknown>): vscode.Disposable {
  return vscode.commands.registerCommand(id, async (...args: unknown[]) => {
    try {
      return await fn(...args);
    } catch (err) {
      await reportError(err);
      return undefined;
    }
  });
}

/** Search and the numbered list. */
function searchCommands(backend: KbBackend, panel: KbPanel): vscode.Disposable[] {
  return [
    register(Commands.search, (query?: unknown) => {
      const selection = vscode.window.activeTextEditor?.selection;
      const selected =
        selection && !selection.isEmpty && selection.isSingleLine
          ? vscode.window.activeTextEditor?.document.getText(selection)
          : undefined;
      showSearch(backend, { initialQuery: typeof query === 'string' ? query : selected });
      return Promise.resolve();
    }),

    register(Commands.openResult, async (arg?: unknown) => {
      let chosen = typeof arg === 'number' ? arg : await pickResult();
      if (chosen === undefined) {
        return;
      }
      let path: string | undefined;
      let target: { uri: string; range: Parameters<typeof openResult>[1] };
      if (typeof chosen === 'number') {
        const result = await backend.request(Methods.openResult, { n: chosen });
        path = result.path;
        target = result;
      } else {
        path = chosen.path;
        target = chosen;
        chosen = chosen.n;
      }
      if ((await openResult(target.uri, target.range, path)) === 'missing') {
        await panel.refreshSearch();
      }
    }),
  ];
}

/** Questions and summaries, answered in the panel. */
function askCommands(_backend: KbBackend, panel: KbPanel): vscode.Disposable[] {
  return [
    register(Commands.ask, async (arg?: unknown) => {
      const question =
        typeof arg === 'string'
          ? arg
          : await vscode.window.showInputBox({
              title: 'KB: Ask',
              prompt: 'Ask a question about the knowledge base',
              placeHolder: 'How do I …? / What does file 2 say about …?',
            });
      if (question?.trim()) {
        await panel.reveal();
        await panel.runAsk(question.trim(), null);
      }
    }),

    register(Commands.askAboutFile, async (arg?: unknown) => {
      const file = fileArgument(arg);
      if ('error' in file) {
        await vscode.window.showWarningMessage(`KB: ${file.error}`);
        return;
      }
      const question = await vscode.window.showInputBox({
        title: `KB: Ask About ${file.path}`,
        prompt: `Ask a question about ${file.path}`,
      });
      if (question?.trim()) {
        await panel.reveal();
        await panel.runAsk(question.trim(), file.path);
      }
    }),

    register(Commands.summarizeFile, async (arg?: unknown) => {
      const file = fileArgument(arg);
      if ('error' in file) {
        await vscode.window.showWarningMessage(`KB: ${file.error}`);
        return;
      }
      // An ask in the panel, so that the summary streams in as the model writes it (and
      // can be stopped there); the server keeps the whole summary in its cache.
      await panel.reveal();
      const response = await panel.runAsk(SUMMARIZE_THIS_FILE, file.path);
      if (response?.stop === 'answer') {
        // For the hover card: the summary without its "Sources: …" line.
        panel.showSummary(file.path, response.answer.split(/\n\s*\n(?=Sources: )/)[0] ?? '', false, true);
      }
    }),
  ];
}

/** The index: reindex, status. */
function indexCommands(backend: KbBackend, panel: KbPanel): vscode.Disposable[] {
  return [
    // No progress of its own: the status bar item, the notification and the panel say
    // how the reindex goes (a second status bar item said "Reindexing" beside it).
    register(Commands.reindex, async () => {
      backend.updateStatus(await backend.request(Methods.reindex, { full: true }));
    }),

    register(Commands.showStatus, async () => {
      const status = await backend.request(Methods.status, {});
      backend.updateStatus(status);
      const cli = backend.cli;
      const detail = cli ? `${statusDetail(status)}\n${cliLine(cli)}` : statusDetail(status);
      const choice = await vscode.window.showInformationMessage(
        statusTitle(status),
        { modal: true, detail },
        'Show Panel',
        'Reindex',
        'Show Log',
        ...(cli ? [COPY_KB] : []),
      );
      if (choice === COPY_KB && cli) {
        await vscode.env.clipboard.writeText(cli);
        void vscode.window.showInformationMessage(`KB: copied ${cli}: run it in a terminal (kb search, kb ask, kb status…; README: In the terminal).`);
      } else if (choice === 'Show Panel') {
        await panel.reveal();
      } else if (choice === 'Reindex') {
        await vscode.commands.executeCommand(Commands.reindex);
      } else if (choice === 'Show Log') {
        backend.showLog();
      }
    }),
  ];
}

/** The panel, the model, the server. */
function panelCommands(backend: KbBackend, panel: KbPanel): vscode.Disposable[] {
  return [
    register(Commands.related, async () => {
      await vscode.commands.executeCommand(`workbench.view.extension.${CONTAINER_ID}`);
      await panel.reveal();
      panel.post({ type: 'showTab', tab: 'related' });
      await panel.refreshRelated();
    }),

    register(Commands.showPanel, async () => {
      await vscode.commands.executeCommand(`workbench.view.extension.${CONTAINER_ID}`);
      await panel.focusSearch();
    }),

    register(Commands.chooseModel, () => chooseModel()),

    register(Commands.openServerSettings, () => openServerSettings()),

    register(Commands.showLog, () => Promise.resolve(backend.showLog())),

    register(Commands.restartServer, async () => backend.restart()),

    // Stops the running answer from anywhere (Escape in the Ask box no longer does).
    register(Commands.stopAnswer, () => Promise.resolve(panel.stopAsk())),
  ];
}

export function registerCommands(backend: KbBackend, panel: KbPanel): vscode.Disposable[] {
  return [
    ...searchCommands(backend, panel),
    ...askCommands(backend, panel),
    ...indexCommands(backend, panel),
    ...panelCommands(backend, panel),
  ];
}

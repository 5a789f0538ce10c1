/**
 * Opening what the user clicked: a result at its range (and saying so when its file was
 * deleted or moved since the list was made), or a link from an answer — workspace files
 * open at once, anything else (elsewhere on disk, `..` out of the workspace, the web)
 * only after the user confirms.
 */
import * as vscode from 'vscode';
import { resolveLink, type Folder } from './links';
import type { Range } from './protocol';

export function toVsRange(range: Range): vscode.Range {
  return new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
}

/**
 * Open `uri` with the passage's lines selected, the cursor at its first line (the
 * selection runs backwards, so the cursor — and the status bar's `Ln` — is where the
 * passage starts) and the passage in view.
 */
export async function openAt(uri: string, range: Range, preserveFocus = false): Promise<vscode.TextEditor> {
  const target = toVsRange(range);
  const editor = await vscode.window.showTextDocument(vscode.Uri.parse(uri), {
    selection: new vscode.Range(target.start, target.start),
    preserveFocus,
    preview: false,
  });
  if (!target.isEmpty) {
    editor.selection = new vscode.Selection(target.end, target.start);
  }
  editor.revealRange(target, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  return editor;
}

export async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}

export type OpenOutcome = 'opened' | 'missing';

/**
 * Open a result; when its file is gone, tell the user "X was deleted or moved" and answer
 * `missing` so the caller refreshes its list. Other failures are thrown.
 */
export async function openResult(
  uri: string,
  range: Range,
  path: string | undefined,
  open: (uri: string, range: Range) => Promise<unknown> = openAt,
): Promise<OpenOutcome> {
  try {
    await open(uri, range);
    return 'opened';
  } catch (err) {
    if (await exists(vscode.Uri.parse(uri))) {
      throw err;
    }
    const shown = path ?? vscode.Uri.parse(uri).path.split('/').pop() ?? uri;
    void vscode.window.showWarningMessage(`KB: ${shown} was deleted or moved.`);
    return 'missing';
  }
}

export function workspaceFolders(): Folder[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => ({ name: f.name, path: f.uri.fsPath.replace(/\\/g, '/') }));
}

export interface LinkDeps {
  open: (uri: string, range: Range) => Promise<unknown>;
  openExternal: (uri: vscode.Uri) => Thenable<boolean>;
  confirm: (message: string, detail: string) => Thenable<boolean>;
}

/** The lines a link names, selected whole (as a result's passage is); the cursor only,
 * for one line. */
function lineRange(target: { line: number; last?: number }): Range {
  const end = target.last === undefined ? target.line : target.last + 1;
  return { start: { line: target.line, character: 0 }, end: { line: end, character: 0 } };
}

export const defaultLinkDeps: LinkDeps = {
  open: openAt,
  openExternal: (uri) => vscode.env.openExternal(uri),
  confirm: async (message, detail) => (await vscode.window.showWarningMessage(message, { modal: true, detail }, 'Open')) === 'Open',
};

/** Open a link from an answer or a snippet (see the module docstring). */
export async function openLink(href: string, deps: LinkDeps = defaultLinkDeps): Promise<void> {
  const target = resolveLink(href, workspaceFolders());
  switch (target.kind) {
    case 'workspace': {
      const uri = vscode.Uri.file(target.path);
      if (!(await exists(uri))) {
        void vscode.window.showWarningMessage(`KB: ${href} does not exist in the workspace.`);
        return;
      }
      await deps.open(uri.toString(), lineRange(target));
      return;
    }
    case 'outside':
      if (await deps.confirm(`Open a file outside the workspace?`, `The link points to ${target.path}, which is not in this workspace.`)) {
        await deps.open(vscode.Uri.file(target.path).toString(), lineRange(target));
      }
      return;
    case 'web':
      if (await deps.confirm(`Open ${target.href}?`, 'The link leads outside the workspace.')) {
        await deps.openExternal(vscode.Uri.parse(target.href));
      }
      return;
    case 'invalid':
      void vscode.window.showWarningMessage(`KB: cannot open the link ${href}.`);
      return;
  }
}

/**
 * The Settings editor on `kb.server.python`, on the tab where it applies: the Remote tab in
 * a remote window (VS Code ignores a User value of this machine setting there).
 */
export async function openServerSettings(): Promise<void> {
  const remote = vscode.env.remoteName !== undefined;
  await vscode.commands.executeCommand(
    remote ? 'workbench.action.openRemoteSettings' : 'workbench.action.openGlobalSettings',
    { query: 'kb.server.python' },
  );
}

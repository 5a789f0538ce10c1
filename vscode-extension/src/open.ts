/** Open a file at a protocol range: cursor at the range's start, the range in view. */
import * as vscode from 'vscode';
import type { Range } from './protocol';

export function toVsRange(range: Range): vscode.Range {
  return new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
}

export async function openAt(uri: string, range: Range, preserveFocus = false): Promise<vscode.TextEditor> {
  const target = toVsRange(range);
  const editor = await vscode.window.showTextDocument(vscode.Uri.parse(uri), {
    selection: new vscode.Range(target.start, target.start),
    preserveFocus,
    preview: false,
  });
  editor.revealRange(target, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  return editor;
}

/**
 * The editor the Ask box may attach, as chat panels attach "the current file": the text
 * editor used last (the keyboard is in the panel when the user types the question, so the
 * last editor counts, until every editor is closed), its workspace path and its selection.
 * Also where "Insert at cursor" puts a code block of an answer.
 */
import * as vscode from 'vscode';
import { relativeTo } from './format';
import { Debouncer } from './util';

export interface EditorContext {
  /** Workspace path as the server names it (with several folders, the folder's name first). */
  path: string;
  /** A Markdown file: the server's "over this file" mode can take it. */
  markdown: boolean;
  /** The selection, when there is one: its lines (1-based, inclusive) and text. */
  selection?: { startLine: number; endLine: number; text: string };
}

/** The most of a selection sent with a question. */
export const MAX_SELECTION_CHARS = 6000;

/** The workspace path of `uri`, as the server names it; undefined outside the workspace. */
export function workspacePath(uri: vscode.Uri): string | undefined {
  if (uri.scheme !== 'file') {
    return undefined;
  }
  const folders = vscode.workspace.workspaceFolders ?? [];
  const relative = relativeTo(
    folders.map((f) => f.uri.fsPath),
    uri.fsPath,
  );
  if (relative === undefined || folders.length <= 1) {
    return relative;
  }
  const folder = folders.find((f) => relativeTo([f.uri.fsPath], uri.fsPath) !== undefined);
  return folder ? `${folder.name}/${relative}` : relative;
}

/** What the Ask box may attach of `editor` (null: nothing, a file outside the workspace). */
export function contextOf(editor: vscode.TextEditor | undefined): EditorContext | null {
  const path = editor ? workspacePath(editor.document.uri) : undefined;
  if (!editor || !path) {
    return null;
  }
  const markdown = editor.document.languageId === 'markdown';
  const selection = editor.selection;
  if (!selection || selection.isEmpty) {
    return { path, markdown };
  }
  const text = editor.document.getText(selection).slice(0, MAX_SELECTION_CHARS);
  // A selection ending at the start of a line ends on the line before.
  const endLine = selection.end.character === 0 && selection.end.line > selection.start.line ? selection.end.line : selection.end.line + 1;
  return text.trim() ? { path, markdown, selection: { startLine: selection.start.line + 1, endLine, text } } : { path, markdown };
}

export class EditorTracker implements vscode.Disposable {
  private last: vscode.TextEditor | undefined;
  private readonly disposables: vscode.Disposable[];
  private readonly soon: Debouncer;

  constructor(private readonly changed: (context: EditorContext | null) => void) {
    this.last = vscode.window.activeTextEditor;
    this.soon = new Debouncer(150, () => this.changed(this.current()));
    this.disposables = [
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        // The keyboard in the panel: no active editor, the last one still shown counts.
        if (editor || vscode.window.visibleTextEditors.length === 0) {
          this.last = editor;
        }
        this.soon.trigger();
      }),
      vscode.window.onDidChangeTextEditorSelection((event) => {
        if (event.textEditor === this.last) {
          this.soon.trigger();
        }
      }),
    ];
  }

  current(): EditorContext | null {
    return contextOf(this.last);
  }

  /** Put `text` at the last editor's cursor (over its selection); false with no editor. */
  async insert(text: string): Promise<boolean> {
    const editor = this.last;
    if (!editor || !vscode.window.visibleTextEditors.includes(editor)) {
      return false;
    }
    await vscode.window.showTextDocument(editor.document, { viewColumn: editor.viewColumn, preserveFocus: false });
    return editor.edit((edit) => edit.replace(editor.selection, text));
  }

  dispose(): void {
    this.soon.cancel();
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
  }
}

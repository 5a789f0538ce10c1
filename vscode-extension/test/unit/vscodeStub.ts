/**
 * A small stand-in for the `vscode` module, enough for the extension's own logic.
 * Importing this file first makes `require('vscode')` resolve to it.
 */
import Module from 'node:module';

type Listener<T> = (value: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (listener: Listener<T>): { dispose(): void } => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(value: T): void {
    for (const l of [...this.listeners]) {
      l(value);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  token = { isCancellationRequested: false, onCancellationRequested: this.emitter.event };
  cancel(): void {
    if (!this.token.isCancellationRequested) {
      this.token.isCancellationRequested = true;
      this.emitter.fire();
    }
  }
  dispose(): void {
    this.emitter.dispose();
  }
}

export class Position {
  constructor(
    public line: number,
    public character: number,
  ) {}
}

export class Range {
  start: Position;
  end: Position;
  constructor(a: number | Position, b: number | Position, c?: number, d?: number) {
    if (typeof a === 'number') {
      this.start = new Position(a, b as number);
      this.end = new Position(c ?? 0, d ?? 0);
    } else {
      this.start = a;
      this.end = b as Position;
    }
  }
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

export class Selection extends Range {
  constructor(
    public anchor: Position,
    public active: Position,
  ) {
    super(anchor, active);
  }
}

export class Uri {
  private constructor(
    public scheme: string,
    public path: string,
  ) {}
  static parse(value: string): Uri {
    const m = /^([a-z][a-z0-9+.-]*):(?:\/\/)?(.*)$/i.exec(value);
    return m ? new Uri(m[1], decodeURIComponent(m[2].startsWith('/') ? m[2] : `/${m[2]}`)) : new Uri('file', value);
  }
  static file(path: string): Uri {
    return new Uri('file', path);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, [base.path, ...parts].join('/').replace(/\/+/g, '/'));
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}://${this.path}`;
  }
}

export class ThemeColor {
  constructor(public id: string) {}
}

export const StatusBarAlignment = { Left: 1, Right: 2 };
export const TextEditorRevealType = { Default: 0, InCenter: 1, InCenterIfOutsideViewport: 2, AtTop: 3 };
export const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 };
export const QuickPickItemKind = { Separator: -1, Default: 0 };
export const ConfigurationTarget = { Global: 1, Workspace: 2, WorkspaceFolder: 3 };

/** What the extension did through the stub, for assertions. */
export const calls = {
  shown: [] as { uri: string; options: { selection?: Range } }[],
  selections: [] as Selection[],
  configUpdates: [] as { key: string; value: unknown; target: number }[],
  quickPicks: [] as { items: unknown[]; options: unknown }[],
  revealed: [] as Range[],
  messages: [] as { level: string; text: string }[],
  /** Non-modal messages with buttons: the text and the buttons offered. */
  actions: [] as { level: string; text: string; items: string[] }[],
  commands: [] as { id: string; args: unknown[] }[],
  inputBoxes: [] as unknown[],
  modals: [] as { level: string; text: string; detail?: string; items: string[] }[],
  clipboard: [] as string[],
  progress: [] as { options: { location?: number; title?: string; cancellable?: boolean }; reports: { message?: string; increment?: number }[]; cancel: CancellationTokenSource; done: boolean }[],
};

export const responses = {
  inputBox: [] as (string | undefined)[],
  /** Answers of modal messages (the button chosen), in order. */
  modal: [] as (string | undefined)[],
  /** Answers of non-modal messages with buttons (the button chosen), in order. */
  message: [] as (string | undefined)[],
  /** What `showQuickPick` picks: given its items, the chosen one. */
  quickPick: [] as ((items: { label: string }[]) => unknown)[],
};

/** Files that exist, by path, for `workspace.fs.stat`. */
export const existingFiles = new Set<string>();

export class FakeQuickPick<T> {
  value = '';
  items: T[] = [];
  activeItems: T[] = [];
  selectedItems: T[] = [];
  busy = false;
  title = '';
  placeholder = '';
  matchOnDescription = false;
  matchOnDetail = false;
  ignoreFocusOut = false;
  visible = false;
  disposed = false;
  private readonly changeValue = new EventEmitter<string>();
  private readonly acceptEmitter = new EventEmitter<void>();
  private readonly hideEmitter = new EventEmitter<void>();
  onDidChangeValue = this.changeValue.event;
  onDidAccept = this.acceptEmitter.event;
  onDidHide = this.hideEmitter.event;
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
    this.hideEmitter.fire();
  }
  dispose(): void {
    this.disposed = true;
  }
  type(value: string): void {
    this.value = value;
    this.changeValue.fire(value);
  }
  accept(item: T): void {
    this.selectedItems = [item];
    this.acceptEmitter.fire();
  }
}

export const quickPicks: FakeQuickPick<unknown>[] = [];

class FakeStatusBarItem {
  text = '';
  tooltip: string | undefined;
  command: string | undefined;
  name = '';
  backgroundColor: ThemeColor | undefined;
  visible = false;
  constructor(
    public id: string,
    public alignment: number,
    public priority: number,
  ) {}
  show(): void {
    this.visible = true;
  }
  dispose(): void {
    this.visible = false;
  }
}

export const statusBarItems: FakeStatusBarItem[] = [];
export const registeredCommands = new Map<string, (...args: unknown[]) => unknown>();
export let activeTextEditor: unknown;
let visibleTextEditors: unknown[] = [];
export const workspaceFolders: { uri: Uri; name: string; index: number }[] = [];
export const configuration = new Map<string, unknown>();

const activeEditorChanged = new EventEmitter<unknown>();
const visibleEditorsChanged = new EventEmitter<unknown[]>();
const selectionChanged = new EventEmitter<{ textEditor: unknown }>();

function message(level: string, text: string, rest: unknown[]): Promise<string | undefined> {
  const options = rest[0];
  if (typeof options === 'object' && options !== null && (options as { modal?: boolean }).modal) {
    calls.modals.push({ level, text, detail: (options as { detail?: string }).detail, items: rest.slice(1) as string[] });
    return Promise.resolve(responses.modal.shift());
  }
  calls.messages.push({ level, text });
  if (rest.length > 0) {
    calls.actions.push({ level, text, items: rest as string[] });
  }
  return Promise.resolve(rest.length > 0 ? responses.message.shift() : undefined);
}

export const window = {
  get activeTextEditor(): unknown {
    return activeTextEditor;
  },
  get visibleTextEditors(): unknown[] {
    return visibleTextEditors;
  },
  onDidChangeVisibleTextEditors: visibleEditorsChanged.event,
  onDidChangeTextEditorSelection: selectionChanged.event,
  createQuickPick<T>(): FakeQuickPick<T> {
    const pick = new FakeQuickPick<T>();
    quickPicks.push(pick);
    return pick;
  },
  createStatusBarItem(id: string, alignment: number, priority: number): FakeStatusBarItem {
    const item = new FakeStatusBarItem(id, alignment, priority);
    statusBarItems.push(item);
    return item;
  },
  showTextDocument(uri: Uri, options: { selection?: Range }): Promise<unknown> {
    calls.shown.push({ uri: uri.toString(), options });
    return Promise.resolve({
      revealRange: (range: Range) => calls.revealed.push(range),
      set selection(selection: Selection) {
        calls.selections.push(selection);
      },
    });
  },
  showQuickPick(items: { label: string }[], options: unknown): Promise<unknown> {
    calls.quickPicks.push({ items, options });
    const choose = responses.quickPick.shift();
    return Promise.resolve(choose ? choose(items) : undefined);
  },
  showInputBox(options: unknown): Promise<string | undefined> {
    calls.inputBoxes.push(options);
    return Promise.resolve(responses.inputBox.shift());
  },
  showErrorMessage(text: string, ...rest: unknown[]): Promise<string | undefined> {
    return message('error', text, rest);
  },
  showWarningMessage(text: string, ...rest: unknown[]): Promise<string | undefined> {
    return message('warning', text, rest);
  },
  showInformationMessage(text: string, ...rest: unknown[]): Promise<string | undefined> {
    return message('info', text, rest);
  },
  setStatusBarMessage(text: string): { dispose(): void } {
    calls.messages.push({ level: 'statusBar', text });
    return { dispose: () => undefined };
  },
  onDidChangeActiveTextEditor: activeEditorChanged.event,
  withProgress<R>(options: { location?: number; title?: string; cancellable?: boolean }, task: (progress: unknown, token: unknown) => Promise<R>): Promise<R> {
    const record = { options, reports: [] as { message?: string; increment?: number }[], cancel: new CancellationTokenSource(), done: false };
    calls.progress.push(record);
    return task({ report: (r: { message?: string; increment?: number }) => record.reports.push(r) }, record.cancel.token).finally(() => {
      record.done = true;
    });
  },
  createOutputChannel(): unknown {
    return { appendLine: () => undefined, show: () => undefined, dispose: () => undefined };
  },
};

export const commands = {
  registerCommand(id: string, fn: (...args: unknown[]) => unknown): { dispose(): void } {
    if (registeredCommands.has(id)) {
      throw new Error(`command '${id}' already exists`);
    }
    registeredCommands.set(id, fn);
    return { dispose: () => registeredCommands.delete(id) };
  },
  executeCommand(id: string, ...args: unknown[]): Promise<unknown> {
    calls.commands.push({ id, args });
    const fn = registeredCommands.get(id);
    return Promise.resolve(fn ? fn(...args) : undefined);
  },
};

export const workspace = {
  get workspaceFolders(): typeof workspaceFolders {
    return workspaceFolders;
  },
  getConfiguration(): { get: (key: string) => unknown; update: (key: string, value: unknown, target: number) => Promise<void> } {
    return {
      get: (key: string) => configuration.get(key),
      update: (key: string, value: unknown, target: number) => {
        calls.configUpdates.push({ key, value, target });
        configuration.set(key, value);
        return Promise.resolve();
      },
    };
  },
  fs: {
    stat(uri: Uri): Promise<object> {
      return existingFiles.has(uri.path) ? Promise.resolve({}) : Promise.reject(new Error(`FileNotFound: ${uri.path}`));
    },
  },
};

export const env = {
  remoteName: undefined as string | undefined,
  openExternal: (): Promise<boolean> => Promise.resolve(true),
  clipboard: {
    writeText(text: string): Promise<void> {
      calls.clipboard.push(text);
      return Promise.resolve();
    },
  },
};

export function setActiveEditor(editor: unknown): void {
  activeTextEditor = editor;
  if (editor && !visibleTextEditors.includes(editor)) {
    visibleTextEditors = [editor];
    visibleEditorsChanged.fire(visibleTextEditors);
  }
  activeEditorChanged.fire(editor);
}

/** The user selected something in `editor`. */
export function changeSelection(editor: unknown): void {
  selectionChanged.fire({ textEditor: editor });
}

/** The keyboard goes to a view (the panel): no active editor, the editors still shown. */
export function focusOutsideEditors(): void {
  activeTextEditor = undefined;
  activeEditorChanged.fire(undefined);
}

/** Every editor closed. */
export function closeEditors(): void {
  activeTextEditor = undefined;
  visibleTextEditors = [];
  visibleEditorsChanged.fire([]);
  activeEditorChanged.fire(undefined);
}

export function reset(): void {
  calls.shown.length = 0;
  calls.revealed.length = 0;
  calls.messages.length = 0;
  calls.actions.length = 0;
  calls.commands.length = 0;
  calls.inputBoxes.length = 0;
  calls.modals.length = 0;
  calls.clipboard.length = 0;
  calls.progress.length = 0;
  calls.selections.length = 0;
  calls.configUpdates.length = 0;
  calls.quickPicks.length = 0;
  responses.inputBox.length = 0;
  responses.modal.length = 0;
  responses.message.length = 0;
  responses.quickPick.length = 0;
  env.remoteName = undefined;
  existingFiles.clear();
  quickPicks.length = 0;
  statusBarItems.length = 0;
  registeredCommands.clear();
  workspaceFolders.length = 0;
  configuration.clear();
  activeTextEditor = undefined;
  visibleTextEditors = [];
}

// Route `require('vscode')` here.
const moduleWithResolve = Module as unknown as {
  _resolveFilename: (request: string, ...rest: unknown[]) => string;
};
const original = moduleWithResolve._resolveFilename;
moduleWithResolve._resolveFilename = function (request: string, ...rest: unknown[]): string {
  if (request === 'vscode') {
    return __filename;
  }
  return original.call(this, request, ...rest);
};

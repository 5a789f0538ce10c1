import * as vscode from './vscodeStub';
import { strict as assert } from 'node:assert';
import { beforeEach, describe, it } from 'node:test';
import { bounded, ChatHistory, HISTORY_KEY, MAX_CHAT_CHARS, MAX_CHATS, type ChatMemento } from '../../src/chatHistory';
import { registerCommands } from '../../src/commands';
import { contextOf } from '../../src/editorContext';
import type { ToWebview } from '../../src/messages';
import { KbPanel, type PanelDeps } from '../../src/panel';
import type { AskResponse } from '../../src/protocol';
import { deferred, FakeBackend, READY, tick } from './fakes';

beforeEach(() => vscode.reset());

/** A workspace's state as VS Code keeps it: JSON, kept across reloads. */
class Memento implements ChatMemento {
  readonly data = new Map<string, string>();
  get<T>(key: string): T | undefined {
    const raw = this.data.get(key);
    return raw === undefined ? undefined : (JSON.parse(raw) as T);
  }
  update(key: string, value: unknown): Promise<void> {
    this.data.set(key, JSON.stringify(value));
    return Promise.resolve();
  }
}

const question = (text: string) => ({ kind: 'question', text });
const answer = (text: string) => ({ kind: 'answer', response: { answer: text, sources: [], stop: 'answer', steps: [], usage: {} } });

function panelWith(backend: FakeBackend, history?: ChatHistory) {
  const posted: ToWebview[] = [];
  const deps: PanelDeps = {
    open: () => Promise.resolve(),
    executeCommand: (id, ...args) => vscode.commands.executeCommand(id, ...args),
    openExternal: () => Promise.resolve(true),
    history,
  };
  const panel = new KbPanel(vscode.Uri.file('/ext') as never, backend, deps);
  const view = {
    webview: {
      options: {},
      html: '',
      cspSource: 'vscode-webview:',
      asWebviewUri: (u: vscode.Uri) => u,
      postMessage: (m: ToWebview) => Promise.resolve(posted.push(m)),
      onDidReceiveMessage: () => ({ dispose: () => undefined }),
    },
    onDidDispose: () => ({ dispose: () => undefined }),
    show: () => undefined,
  };
  panel.resolveWebviewView(view as never);
  void panel.handle({ type: 'ready' }); // the page is up: messages go at once
  return { panel, posted };
}

describe('the Ask tab history, kept per workspace', () => {
  it('keeps conversations newest first, reopens one (after a reload: a new history on the same state), deletes one', async () => {
    const state = new Memento();
    let clock = 1000;
    const history = new ChatHistory(state, () => clock++);
    await history.save({ id: 'a', title: 'How do I deploy?', transcript: [question('How do I deploy?'), answer('Freeze first.')] });
    await history.save({ id: 'b', title: '  What   is SPEI? ', transcript: [question('What is SPEI?'), answer('A transfer system.')], file: 'glossary.md' });
    await history.save({ id: 'a', title: 'How do I deploy?', transcript: [question('How do I deploy?'), answer('Freeze first.'), question('And then?')] });
    // The window reloads: the extension starts again on the same workspace state.
    const reloaded = new ChatHistory(state);
    assert.deepEqual(
      reloaded.list().map((c) => [c.id, c.title, c.questions]),
      [
        ['a', 'How do I deploy?', 2],
        ['b', 'What is SPEI?', 1],
      ],
    );
    assert.deepEqual(reloaded.get('b')?.transcript, [question('What is SPEI?'), answer('A transfer system.')]);
    assert.equal(reloaded.get('b')?.file, 'glossary.md');
    await reloaded.delete('a');
    assert.deepEqual(reloaded.list().map((c) => c.id), ['b']);
    // A conversation without a question (a new chat nobody used) is not kept.
    await reloaded.save({ id: 'c', title: '', transcript: [] });
    assert.deepEqual(reloaded.list().map((c) => c.id), ['b']);
  });

  it('stays bounded: the oldest conversations, then a long one’s oldest turns, go first', async () => {
    const state = new Memento();
    const history = new ChatHistory(state);
    for (let i = 0; i < MAX_CHATS + 5; i++) {
      await history.save({ id: `c${i}`, title: `q${i}`, transcript: [question(`q${i}`)] });
    }
    assert.equal(history.list().length, MAX_CHATS);
    assert.equal(history.list().at(-1)?.id, 'c5', 'the five oldest went');
    const long = Array.from({ length: 60 }, (_, i) => [question(`q${i}`), answer('x'.repeat(10_000))]).flat();
    const kept = bounded(long);
    assert.ok(JSON.stringify(kept).length <= MAX_CHAT_CHARS);
    assert.deepEqual(kept.at(-1), long.at(-1), 'the latest turn stays');
    assert.equal((kept[0] as { kind: string }).kind, 'question', 'whole turns go, from a question on');
    // Something that is not a history (another version wrote it) reads as none.
    await state.update(HISTORY_KEY, { not: 'a list' });
    assert.deepEqual(history.list(), []);
  });

  it('the panel keeps, lists, reopens and deletes what the page sends', async () => {
    const history = new ChatHistory(new Memento());
    const { panel, posted } = panelWith(new FakeBackend(), history);
    await panel.handle({ type: 'saveChat', id: 'x', title: 'Cut-off time?', transcript: [question('Cut-off time?'), answer('14:30.')] });
    assert.deepEqual(posted.at(-1), { type: 'chats', chats: history.list() });
    await panel.handle({ type: 'openChat', id: 'x' });
    const reopened = posted.at(-1);
    assert.ok(reopened?.type === 'chat' && reopened.chat?.transcript.length === 2);
    await panel.handle({ type: 'deleteChat', id: 'x' });
    assert.deepEqual(posted.at(-1), { type: 'chats', chats: [] });
    await panel.handle({ type: 'openChat', id: 'x' });
    assert.deepEqual(posted.at(-1), { type: 'chat', chat: null }, 'gone meanwhile: said, not an error');
  });
});

describe('KB: Stop Answering', () => {
  it('stops the running answer from anywhere; the context key says when one runs', async () => {
    const backend = new FakeBackend();
    const reply = deferred<never>();
    backend.on('kb/ask', (_params, token) => {
      token?.onCancellationRequested(() => reply.reject(Object.assign(new Error('cancelled'), { code: -32800 })));
      return reply.promise;
    });
    const { panel, posted } = panelWith(backend);
    registerCommands(backend, panel);
    const asking = panel.runAsk('Why?', null);
    await tick();
    assert.deepEqual(vscode.calls.commands.filter((c) => c.id === 'setContext').map((c) => c.args), [['kb.answering', true]]);
    assert.equal(await vscode.commands.executeCommand('kb.stopAnswer'), true);
    await asking;
    assert.deepEqual(posted.at(-1), { type: 'askFailed', id: 1, message: 'Stopped.' });
    assert.deepEqual(vscode.calls.commands.filter((c) => c.id === 'setContext').at(-1)?.args, ['kb.answering', false]);
    assert.equal(await vscode.commands.executeCommand('kb.stopAnswer'), false, 'nothing to stop');
  });

  it('ends the answer through kb/stopAsk: the request is answered, with its sources, not cancelled', async () => {
    const backend = new FakeBackend();
    const reply = deferred<AskResponse>();
    let token: { isCancellationRequested: boolean } | undefined;
    backend.on('kb/ask', (_params, t) => {
      token = t;
      return reply.promise;
    });
    const stopped: AskResponse = {
      answer: 'Cancelled.',
      sources: [{ n: 1, uri: 'file:///ws/ops/deploy.md', path: 'ops/deploy.md', range: { start: { line: 2, character: 0 }, end: { line: 9, character: 0 } } }],
      stop: 'cancelled',
      steps: [],
      usage: {},
    };
    // The server's Stop: its running ask is answered as stopped.
    backend.onAny('kb/stopAsk', () => {
      reply.resolve(stopped);
      return Promise.resolve({ stopped: 1 });
    });
    const { panel, posted } = panelWith(backend);
    registerCommands(backend, panel);
    const asking = panel.runAsk('Why?', null);
    await tick();
    assert.equal(await vscode.commands.executeCommand('kb.stopAnswer'), true);
    await asking;
    assert.deepEqual(backend.requests.map((r) => r.method), ['kb/ask', 'kb/stopAsk']);
    assert.equal(token?.isCancellationRequested, false, 'the request was left to be answered');
    assert.deepEqual(posted.at(-1), { type: 'askDone', id: 1, response: stopped });
  });
});

function editor(path: string, languageId: string, text: string, selection: vscode.Selection) {
  const edits: { range: unknown; text: string }[] = [];
  return {
    edits,
    viewColumn: 1,
    selection,
    document: {
      uri: vscode.Uri.file(path),
      languageId,
      getText: (range: vscode.Range) => text.split('\n').slice(range.start.line, range.end.line + 1).join('\n'),
    },
    edit: (build: (edit: { replace: (range: unknown, text: string) => void }) => void) => {
      build({ replace: (range, inserted) => edits.push({ range, text: inserted }) });
      return Promise.resolve(true);
    },
  };
}

describe('the open file or selection for the Ask box, and Insert at cursor', () => {
  it('says the last editor’s file and selection, the keyboard in the panel or not', async () => {
    vscode.workspaceFolders.push({ uri: vscode.Uri.file('/ws'), name: 'ws', index: 0 });
    const { panel, posted } = panelWith(new FakeBackend());
    const note = editor('/ws/runbooks/close.md', 'markdown', 'a\nb\nc\nd', new vscode.Selection(new vscode.Position(1, 0), new vscode.Position(3, 0)));
    vscode.setActiveEditor(note);
    await panel.handle({ type: 'editorContext' });
    assert.deepEqual(posted.at(-1), {
      type: 'editorContext',
      context: { path: 'runbooks/close.md', markdown: true, selection: { startLine: 2, endLine: 3, text: 'b\nc\nd' } },
    });
    vscode.focusOutsideEditors(); // typing the question in the panel
    await panel.handle({ type: 'editorContext' });
    assert.equal((posted.at(-1) as { context: { path: string } }).context.path, 'runbooks/close.md');
    vscode.closeEditors();
    await panel.handle({ type: 'editorContext' });
    assert.deepEqual(posted.at(-1), { type: 'editorContext', context: null });
    assert.equal(contextOf(editor('/elsewhere/x.md', 'markdown', '', new vscode.Selection(new vscode.Position(0, 0), new vscode.Position(0, 0))) as never), null);
  });

  it('inserts a code block at the last editor’s cursor, and says so when there is none', async () => {
    vscode.workspaceFolders.push({ uri: vscode.Uri.file('/ws'), name: 'ws', index: 0 });
    const { panel } = panelWith(new FakeBackend());
    const code = editor('/ws/deploy.sh', 'shellscript', '', new vscode.Selection(new vscode.Position(4, 2), new vscode.Position(4, 2)));
    vscode.setActiveEditor(code);
    vscode.focusOutsideEditors();
    await panel.handle({ type: 'insert', text: 'kubectl rollout status' });
    assert.deepEqual(code.edits.map((e) => e.text), ['kubectl rollout status']);
    vscode.closeEditors();
    await panel.handle({ type: 'insert', text: 'x' });
    assert.match(vscode.calls.messages.at(-1)?.text ?? '', /open an editor to insert/);
  });
});

describe('the welcome’s examples, from the open index', () => {
  it('are asked once per index: the same index answers from memory, a changed one asks again', async () => {
    const backend = new FakeBackend().onAny('kb/examples', () =>
      Promise.resolve({ searches: ['query parameters'], questions: ['What do my notes say about Query Parameters?'], filters: [] }),
    );
    const { panel, posted } = panelWith(backend);
    const asked = () => backend.requests.filter((r) => r.method === 'kb/examples').length;
    await panel.handle({ type: 'examples' });
    assert.deepEqual(posted.at(-1), {
      type: 'examples',
      examples: { searches: ['query parameters'], questions: ['What do my notes say about Query Parameters?'], filters: [] },
    });
    await panel.handle({ type: 'examples' });
    assert.equal(asked(), 1, 'the same index: not asked again');
    backend.updateStatus({ ...READY, files: READY.files + 1 });
    await panel.handle({ type: 'examples' });
    assert.equal(asked(), 2);
    // While indexing, or with no server: none (the welcome then shows none).
    backend.updateStatus({ ...READY, state: 'indexing' });
    await panel.handle({ type: 'examples' });
    assert.deepEqual(posted.at(-1), { type: 'examples', examples: null });
  });

  it('a server without kb/examples: none, and the page shows none', async () => {
    const { panel, posted } = panelWith(new FakeBackend());
    await panel.handle({ type: 'examples' });
    assert.deepEqual(posted.at(-1), { type: 'examples', examples: null });
  });
});

import * as vscode from './vscodeStub';
import { strict as assert } from 'node:assert';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { beforeEach, describe, it } from 'node:test';
import { registerCommands } from '../../src/commands';
import { registerCopyCommand } from '../../src/mcp';
import type { ToWebview } from '../../src/messages';
import { KbPanel } from '../../src/panel';
import { panelHtml } from '../../src/panelHtml';
import type { SearchHit } from '../../src/protocol';
import { SearchQuickPick } from '../../src/quickPick';
import { KbStatusBar } from '../../src/statusBar';
import { listFromServer, rememberList } from '../../src/lastList';
import { IndexProgressNotification } from '../../src/indexProgress';
import { FailureNotice } from '../../src/failureNotice';
import { AnsweredModel } from '../../src/answeredModel';
import { statusView } from '../../src/format';
import { checkBaseUrl, listModels, PRESETS } from '../../src/modelPicker';
import { describe as describeModel, type ModelInfo } from '../../src/modelInfo';
import { freePort } from '../shared/codeServer';
import { startStandIn } from '../shared/standIns';
import { deferred, FakeBackend, hit, READY, searchResponse, tick } from './fakes';

const ROOT = join(__dirname, '..', '..', '..');

beforeEach(() => {
  vscode.reset();
  rememberList(undefined);
});

describe('KB: Search quick pick', () => {
  it('searches after the user pauses, cancels stale requests, lists numbered items', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] }); // the pause is the test's to end
    const backend = new FakeBackend();
    const pending: Record<string, ReturnType<typeof deferred<ReturnType<typeof searchResponse>>>> = {};
    backend.on('kb/search', (params) => {
      pending[params.query] = deferred();
      return pending[params.query].promise;
    });
    const qp = new SearchQuickPick(backend, { debounceMs: 5 });
    const pick = vscode.quickPicks[0];
    pick.type('ins');
    pick.type('inst');
    pick.type('install');
    t.mock.timers.tick(4);
    assert.equal(backend.requests.length, 0, 'nothing while the user types');
    t.mock.timers.tick(1);
    assert.deepEqual(
      backend.requests.map((r) => r.params),
      [{ query: 'install' }],
      'one request after the pause',
    );
    const stale = qp.running;
    pick.type('install guide');
    t.mock.timers.tick(5);
    assert.equal(backend.requests.length, 2);
    assert.equal(backend.requests[0].token?.isCancellationRequested, true, 'the stale request is cancelled');
    pending['install guide'].resolve(searchResponse('install guide', [hit(1, 'a.md'), hit(2, 'docs/b.md')]));
    pending['install'].resolve(searchResponse('install', [hit(1, 'stale.md')]));
    await Promise.all([qp.running, stale]); // the stale answer came last, and was dropped
    const items = pick.items as { label: string; alwaysShow?: boolean; hit?: SearchHit }[];
    assert.deepEqual(
      items.map((i) => i.label),
      ['1 · a.md', '2 · docs/b.md'],
    );
    assert.ok(items.every((i) => i.alwaysShow), 'items are not filtered away by the quick pick');
    assert.equal(pick.busy, false);
  });

  it("offers the server's did-you-mean above the results; Enter still opens result 1; picking it searches it", async () => {
    const backend = new FakeBackend().on('kb/search', (p) =>
      Promise.resolve(
        p.query === 'mexcio paymnets'
          ? { ...searchResponse(p.query, [hit(1, 'glossary.md'), hit(2, 'payments/mexico-payments.md')]), didYouMean: 'mexico payments' }
          : searchResponse(p.query, [hit(1, 'payments/mexico-payments.md')]),
      ),
    );
    const qp = new SearchQuickPick(backend, { debounceMs: 1 });
    const pick = vscode.quickPicks[0] as vscode.FakeQuickPick<{ label: string; hit?: SearchHit; suggestion?: string }>;
    pick.type('mexcio paymnets');
    await until(() => pick.items.length > 0, 'the list');
    assert.deepEqual(pick.items.map((i) => i.label), ['$(lightbulb) Did you mean “mexico payments”?', '1 · glossary.md', '2 · payments/mexico-payments.md']);
    assert.equal(pick.activeItems[0]?.hit?.n, 1, 'Enter opens result 1');
    pick.accept(pick.items[0]);
    await qp.running;
    assert.equal(pick.value, 'mexico payments');
    assert.deepEqual(backend.requests.at(-1)?.params, { query: 'mexico payments' });
    assert.deepEqual(pick.items.map((i) => i.label), ['1 · payments/mexico-payments.md'], 'no suggestion for a query the index knows');
    qp.dispose();
  });

  it('opens the accepted result at its range', { timeout: 10_000 }, async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const backend = new FakeBackend().on('kb/search', (p) =>
      Promise.resolve(searchResponse(p.query, [hit(1, 'a.md'), hit(2, 'docs/b.md')])),
    );
    const opened: SearchHit[] = [];
    const qp = new SearchQuickPick(backend, {
      initialQuery: 'setup',
      debounceMs: 1,
      open: (h) => Promise.resolve(opened.push(h)).then(() => 'opened' as const),
    });
    const pick = vscode.quickPicks[0];
    t.mock.timers.tick(1); // the initial query's pause
    await qp.running;
    const hidden = new Promise<void>((resolve) => pick.onDidHide(() => resolve()));
    pick.accept(pick.items[1]);
    await hidden;
    assert.equal(opened[0]?.path, 'docs/b.md');
    assert.equal(pick.visible, false);
  });

  it('shows errors and "no matches" as items, and clears on an empty query', async () => {
    const backend = new FakeBackend().on('kb/search', (p) =>
      p.query === 'bad'
        ? Promise.reject(Object.assign(new Error('Query too long'), { code: -32602 }))
        : Promise.resolve(searchResponse(p.query, [])),
    );
    const qp = new SearchQuickPick(backend, { debounceMs: 1 });
    await qp.search('bad');
    assert.match((vscode.quickPicks[0].items[0] as { label: string }).label, /Query too long/);
    await qp.search('nothing');
    assert.match((vscode.quickPicks[0].items[0] as { label: string }).label, /No matches/);
    await qp.search('  ');
    assert.equal(vscode.quickPicks[0].items.length, 0);
  });
});

function makePanel(backend: FakeBackend) {
  const posted: ToWebview[] = [];
  const opened: { uri: string; line: number }[] = [];
  const executed: string[] = [];
  const panel = new KbPanel(vscode.Uri.file('/ext') as never, backend, {
    open: (uri, range) => Promise.resolve(opened.push({ uri, line: range.start.line })),
    executeCommand: (id, ...args) => {
      executed.push(id);
      return vscode.commands.executeCommand(id, ...args);
    },
    openExternal: () => Promise.resolve(true),
  });
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
  return { panel, posted, opened, executed, view };
}

describe('panel', () => {
  it('serves a page with a nonce CSP and queues messages until the page is ready', async () => {
    const backend = new FakeBackend();
    const { panel, posted, view } = makePanel(backend);
    panel.post({ type: 'focusSearch' });
    panel.resolveWebviewView(view as never);
    assert.match(view.webview.html, /script-src 'nonce-[A-Za-z0-9]+'/);
    assert.doesNotMatch(view.webview.html, /unsafe-inline|unsafe-eval|https?:/);
    assert.equal(posted.length, 0);
    await panel.handle({ type: 'ready' });
    assert.deepEqual(
      posted.map((m) => m.type),
      // The queued message after the status; then what the Ask box may attach.
      ['status', 'focusSearch', 'editorContext'],
    );
  });

  it('answers search with results and opens a clicked result', async () => {
    const backend = new FakeBackend().on('kb/search', (p) =>
      Promise.resolve(searchResponse(p.query, [hit(1, 'a.md'), hit(2, 'b.md')])),
    );
    const { panel, posted, opened, view } = makePanel(backend);
    panel.resolveWebviewView(view as never);
    await panel.handle({ type: 'ready' });
    await panel.handle({ type: 'search', query: 'install' });
    const results = posted.find((m) => m.type === 'results');
    assert.equal(results?.type === 'results' && results.response.results.length, 2);
    await panel.handle({ type: 'open', uri: 'file:///ws/b.md', range: hit(2, 'b.md').range });
    assert.deepEqual(opened, [{ uri: 'file:///ws/b.md', line: 8 }]);
  });

  it('reports a failed search to the page', async () => {
    const backend = new FakeBackend().on('kb/search', () => Promise.reject(new Error('index is broken')));
    const { panel, posted, view } = makePanel(backend);
    panel.resolveWebviewView(view as never);
    await panel.handle({ type: 'ready' });
    await panel.handle({ type: 'search', query: 'x' });
    assert.deepEqual(posted.at(-1), { type: 'searchError', query: 'x', message: 'index is broken' });
  });

  it("streams this ask's events, then the answer; Stop cancels", async () => {
    const backend = new FakeBackend();
    const answer = deferred<never>();
    backend.on('kb/ask', (_params, token) => {
      token?.onCancellationRequested(() => answer.reject(Object.assign(new Error('cancelled'), { code: -32800 })));
      return answer.promise;
    });
    const { panel, posted, view } = makePanel(backend);
    panel.resolveWebviewView(view as never);
    await panel.handle({ type: 'ready' });
    const asking = panel.runAsk('How do I install?', 'docs/setup.md');
    backend.fireAsk({ askId: 'a1', kind: 'thinking', text: 'Look at setup' });
    backend.fireAsk({ askId: 'other', kind: 'thinking', text: 'another window' });
    backend.fireAsk({ askId: 'a1', kind: 'tool_call', text: '', tool: 'read_file', args: { path: 'docs/setup.md' } });
    await panel.handle({ type: 'cancelAsk' });
    await asking;
    assert.deepEqual(backend.requests.find((r) => r.method === 'kb/ask')?.params, { question: 'How do I install?', file: 'docs/setup.md' });
    const kinds = posted.filter((m) => m.type.startsWith('ask')).map((m) => (m.type === 'askEvent' ? `event:${m.event.text || m.event.tool}` : m.type));
    assert.deepEqual(kinds, ['askStarted', 'event:Look at setup', 'event:read_file', 'askFailed']);
    assert.deepEqual(posted.at(-1), { type: 'askFailed', id: 1, message: 'Stopped.' });
  });

  it('posts the ask response when it arrives', async () => {
    const backend = new FakeBackend().on('kb/ask', () =>
      Promise.resolve({ answer: 'Run `kb index`.', sources: [], stop: 'answer' as const, steps: [], usage: {} }),
    );
    const { panel, posted, view } = makePanel(backend);
    panel.resolveWebviewView(view as never);
    await panel.handle({ type: 'ready' });
    await panel.handle({ type: 'ask', question: 'How?', conversationId: 'c1' });
    assert.deepEqual(backend.requests.at(-1)?.params, { question: 'How?', conversationId: 'c1' });
    assert.equal(posted.at(-1)?.type, 'askDone');
    // The selection attached in the box: its file and lines go to the server, and back to the page.
    const lines = { start: 12, end: 30 };
    await panel.handle({ type: 'ask', question: 'Why?', file: 'runbooks/deploy.md', lines });
    assert.deepEqual(backend.requests.at(-1)?.params, { question: 'Why?', file: 'runbooks/deploy.md', lines });
    assert.deepEqual(posted.find((m) => m.type === 'askStarted' && m.question === 'Why?'), { type: 'askStarted', id: 2, question: 'Why?', file: 'runbooks/deploy.md', lines });
    // Lines without a file are no selection of anything: not sent.
    await panel.handle({ type: 'ask', question: 'Where?', file: null, lines });
    assert.deepEqual(backend.requests.at(-1)?.params, { question: 'Where?' });
  });
});

describe('commands', () => {
  function setup() {
    const backend = new FakeBackend();
    const { panel, posted, view } = makePanel(backend);
    panel.resolveWebviewView(view as never);
    void panel.handle({ type: 'ready' });
    registerCommands(backend, panel);
    vscode.workspaceFolders.push({ uri: vscode.Uri.file('/ws'), name: 'ws', index: 0 });
    return { backend, panel, posted };
  }

  it('registers every command the manifest contributes', () => {
    setup();
    // The one command that is not about the language server: mcp.ts registers it.
    registerCopyCommand({} as Parameters<typeof registerCopyCommand>[0], () => Promise.resolve(undefined), {
      registered: false,
      message: '',
    });
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      contributes: { commands: { command: string; category: string }[]; keybindings: { command: string }[] };
    };
    for (const { command, category } of manifest.contributes.commands) {
      assert.ok(vscode.registeredCommands.has(command), `${command} is registered`);
      assert.equal(category, 'KB');
    }
    assert.ok(manifest.contributes.keybindings.some((k) => k.command === 'kb.search'));
  });

  it("offers Reindex once on the panel: in the view's title bar, not again inside the page", () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      contributes: { menus: Record<string, { command: string; when?: string }[]> };
    };
    const onPanel = Object.values(manifest.contributes.menus)
      .flat()
      .filter((item) => item.command === 'kb.reindex' && /view == kb\.panel/.test(item.when ?? ''));
    assert.equal(onPanel.length, 1);
    const html = panelHtml({ cspSource: 'vscode-resource:', nonce: 'n', scriptUri: 'w.js', styleUri: 's.css' });
    assert.doesNotMatch(html, /reindex/i);
  });

  it('KB: Open Result… lists the last search; typing a number picks it, a wrong one is refused at once', async () => {
    const { backend, panel } = setup();
    backend.on('kb/search', (p) => Promise.resolve(searchResponse(p.query, [hit(1, 'a.md'), hit(2, 'docs/b.md')])));
    await panel.search('setup');
    const running = vscode.commands.executeCommand('kb.openResult');
    const pick = vscode.quickPicks.at(-1) as vscode.FakeQuickPick<{ label: string; hit?: { path: string } }>;
    assert.deepEqual(pick.items.map((i) => i.label), ['1 · a.md', '2 · docs/b.md']);
    pick.type('7');
    assert.deepEqual(pick.items.map((i) => i.label), ['$(warning) The last search listed 2 results.']);
    pick.type('2');
    assert.deepEqual(pick.items.map((i) => i.label), ['2 · docs/b.md']);
    pick.accept(pick.items[0]);
    await running;
    assert.equal(vscode.calls.shown[0]?.uri, 'file:///ws/docs/b.md');
    assert.equal(vscode.calls.shown[0]?.options.selection?.start.line, 8);
    assert.equal(vscode.calls.revealed[0]?.end.line, 11);
    // The passage's lines are selected, the cursor on its first line.
    const selection = vscode.calls.selections[0];
    assert.deepEqual([selection?.active.line, selection?.anchor.line], [8, 11]);
  });

  it("a list the server reports changed (kb/listChanged: an ask's own search) is the panel's and Open Result's", async () => {
    const { backend, panel, posted } = setup();
    backend.on('kb/search', (p) => Promise.resolve(searchResponse(p.query, [hit(1, 'a.md'), hit(2, 'docs/b.md')])));
    await panel.search('setup');
    const told = listFromServer({ query: 'How do I deploy?', origin: 'agent', results: [hit(1, 'runbooks/deploy.md'), hit(2, 'notes/c.md')] }, READY);
    assert.ok(told);
    rememberList(told.response, told.origin);
    const shown = posted.filter((m) => m.type === 'results').at(-1);
    assert.equal(shown?.type === 'results' && shown.origin, 'agent');
    assert.deepEqual(shown?.type === 'results' && shown.response.results.map((h) => h.path), ['runbooks/deploy.md', 'notes/c.md']);
    const running = vscode.commands.executeCommand('kb.openResult');
    const pick = vscode.quickPicks.at(-1) as vscode.FakeQuickPick<{ label: string }>;
    assert.equal(pick.title, 'KB: Open Result — “How do I deploy?”');
    assert.deepEqual(pick.items.map((i) => i.label), ['1 · runbooks/deploy.md', '2 · notes/c.md']);
    pick.hide();
    await running;
  });

  it('KB: Open Result… without a list asks the server for result N', async () => {
    const { backend } = setup();
    backend.on('kb/openResult', (p) =>
      Promise.resolve({ uri: 'file:///ws/docs/b.md', path: 'docs/b.md', range: hit(p.n, 'docs/b.md').range }),
    );
    const running = vscode.commands.executeCommand('kb.openResult');
    const pick = vscode.quickPicks.at(-1) as vscode.FakeQuickPick<{ label: string }>;
    pick.type('x');
    assert.match(pick.items[0]?.label ?? '', /Type the number of a result/);
    pick.type('2');
    pick.accept(pick.items[0]);
    await running;
    assert.deepEqual(backend.requests.at(-1), { method: 'kb/openResult', params: { n: 2 }, token: undefined });
    assert.equal(vscode.calls.shown[0]?.uri, 'file:///ws/docs/b.md');
  });

  it("shows the server's message when result N does not exist", async () => {
    const { backend } = setup();
    backend.on('kb/openResult', () =>
      Promise.reject(Object.assign(new Error('No result 7: the last search returned 3 results'), { code: -32602 })),
    );
    await vscode.commands.executeCommand('kb.openResult', 7);
    assert.deepEqual(vscode.calls.messages, [{ level: 'error', text: 'KB: No result 7: the last search returned 3 results' }]);
  });

  it('KB: Ask About This File asks about the active file, by workspace path', async () => {
    const { backend, posted } = setup();
    backend.on('kb/ask', () => Promise.resolve({ answer: 'A', sources: [], stop: 'answer' as const, steps: [], usage: {} }));
    vscode.setActiveEditor({ document: { uri: vscode.Uri.file('/ws/docs/setup.md') } });
    vscode.responses.inputBox.push('What does it install?');
    await vscode.commands.executeCommand('kb.askAboutFile');
    assert.deepEqual(backend.requests.at(-1)?.params, { question: 'What does it install?', file: 'docs/setup.md' });
    assert.ok(posted.some((m) => m.type === 'askDone'));
  });

  it('KB: Summarize This File refuses files outside the workspace', async () => {
    const { backend } = setup();
    vscode.setActiveEditor({ document: { uri: vscode.Uri.file('/elsewhere/x.md') } });
    await vscode.commands.executeCommand('kb.summarizeFile');
    assert.equal(backend.requests.length, 0);
    assert.match(vscode.calls.messages[0]?.text ?? '', /not inside the workspace/);
  });

  it('KB: Summarize This File asks in the panel, so the summary streams in', async () => {
    const { backend, posted } = setup();
    backend.on('kb/ask', () => Promise.resolve({ answer: 'Short.', sources: [], stop: 'answer' as const, steps: [], usage: {} }));
    await vscode.commands.executeCommand('kb.summarizeFile', vscode.Uri.file('/ws/a.md'));
    assert.deepEqual(backend.requests.at(-1)?.params, { question: 'Summarize this file', file: 'a.md' });
    assert.ok(posted.some((m) => m.type === 'askStarted'));
    assert.ok(posted.some((m) => m.type === 'askDone'));
  });

  it('KB: Reindex asks for a full reindex and updates the status', async () => {
    const { backend } = setup();
    backend.on('kb/reindex', () => Promise.resolve({ ...READY, files: 9 }));
    await vscode.commands.executeCommand('kb.reindex');
    assert.deepEqual(backend.requests.at(-1)?.params, { full: true });
    assert.equal(backend.status?.files, 9);
    // One progress: no "Reindexing" spinner of its own beside the status bar item.
    assert.deepEqual(vscode.calls.progress, []);
  });
});

describe('status bar', () => {
  it('follows the index state and points at the panel (its empty state) when the server failed', () => {
    const backend = new FakeBackend();
    const bar = new KbStatusBar(backend);
    const item = vscode.statusBarItems[0];
    assert.equal(item.text, '$(book) KB: ready · 3 files · no model');
    assert.equal(item.command, 'kb.showPanel');
    backend.updateStatus({ ...READY, state: 'indexing', files: 1, pending: 2 });
    assert.match(item.text, /Indexing 1\/3 files/);
    backend.setState('failed', 'kb-lsp: Python was not found');
    assert.equal(item.text, '$(error) KB: not running');
    // The panel says why, with the actions that fix it.
    assert.equal(item.command, 'kb.showPanel');
    bar.dispose();
  });
});

const INDEXING = {
  ...READY,
  state: 'indexing' as const,
  files: 20,
  progress: { phase: 'vectors' as const, filesDone: 38, filesTotal: 155, chunksDone: 1204, chunksTotal: 3036 },
};

/** Poll a condition (the code under test waits on timers of its own); fail after 5 s. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await tick(5);
  }
}

describe('no dead ends', () => {
  function ready() {
    const backend = new FakeBackend();
    const made = makePanel(backend);
    made.panel.resolveWebviewView(made.view as never);
    void made.panel.handle({ type: 'ready' });
    vscode.workspaceFolders.push({ uri: vscode.Uri.file('/ws'), name: 'ws', index: 0 });
    return { backend, ...made };
  }

  it('a result whose file is gone says so and refreshes the list instead of failing', async () => {
    const backend = new FakeBackend().on('kb/search', (p) => Promise.resolve(searchResponse(p.query, [hit(1, 'gone.md')])));
    const posted: ToWebview[] = [];
    const panel = new KbPanel(vscode.Uri.file('/ext') as never, backend, {
      open: () => Promise.reject(new Error('Unable to read file /ws/gone.md')),
      executeCommand: () => Promise.resolve(undefined),
      openExternal: () => Promise.resolve(true),
    });
    panel.resolveWebviewView({ ...makePanel(backend).view, webview: { ...makePanel(backend).view.webview, postMessage: (m: ToWebview) => Promise.resolve(posted.push(m)) } } as never);
    await panel.handle({ type: 'ready' });
    await panel.handle({ type: 'search', query: 'x' });
    await panel.handle({ type: 'open', uri: 'file:///ws/gone.md', range: hit(1, 'gone.md').range, path: 'gone.md', list: 'search' });
    assert.deepEqual(vscode.calls.messages.at(-1), { level: 'warning', text: 'KB: gone.md was deleted or moved.' });
    assert.deepEqual(posted.at(-1), { type: 'stale', path: 'gone.md', message: 'gone.md was deleted or moved — the list was refreshed.' });
    // A file that exists but fails to open is an error, not "deleted".
    vscode.existingFiles.add('/ws/gone.md');
    await panel.handle({ type: 'open', uri: 'file:///ws/gone.md', range: hit(1, 'gone.md').range, path: 'gone.md' });
    assert.match(vscode.calls.messages.at(-1)?.text ?? '', /could not open gone\.md: Unable to read file/);
  });

  it('links in answers: workspace files open, anything else asks first', async () => {
    const { panel, opened } = ready();
    vscode.existingFiles.add('/ws/docs/setup.md');
    await panel.handle({ type: 'openLink', href: 'docs/setup.md#L12' });
    assert.deepEqual(opened, [{ uri: 'file:///ws/docs/setup.md', line: 11 }]);
    for (const href of ['/etc/passwd', '../../../../root/.ssh/id_rsa', 'file:///etc/passwd', 'https://example.com/x']) {
      vscode.responses.modal.push(undefined); // the user does not confirm
      await panel.handle({ type: 'openLink', href });
    }
    assert.equal(opened.length, 1, 'nothing outside the workspace opened without asking');
    assert.deepEqual(
      vscode.calls.modals.map((m) => m.detail),
      [
        'The link points to /etc/passwd, which is not in this workspace.',
        'The link points to /root/.ssh/id_rsa, which is not in this workspace.',
        'The link points to /etc/passwd, which is not in this workspace.',
        'The link leads outside the workspace.',
      ],
    );
    vscode.responses.modal.push('Open');
    await panel.handle({ type: 'openLink', href: '/etc/hosts' });
    assert.deepEqual(opened.at(-1), { uri: 'file:///etc/hosts', line: 0 });
  });

  it('a citation [path:lines] selects its lines, as [n] and L27–33 do; a path may hold spaces', async () => {
    const ranges: { uri: string; range: unknown }[] = [];
    const panel = new KbPanel(vscode.Uri.file('/ext') as never, new FakeBackend(), {
      open: (uri, range) => Promise.resolve(ranges.push({ uri, range })),
      executeCommand: () => Promise.resolve(undefined),
      openExternal: () => Promise.resolve(true),
    });
    vscode.workspaceFolders.push({ uri: vscode.Uri.file('/ws'), name: 'ws', index: 0 });
    vscode.existingFiles.add('/ws/payments/mexico-payments.md');
    vscode.existingFiles.add('/ws/notes/month end.md');
    const lines = (first: number, last: number) => ({ start: { line: first - 1, character: 0 }, end: { line: last, character: 0 } });
    await panel.handle({ type: 'openLink', href: 'payments/mexico-payments.md:7-11' });
    await panel.handle({ type: 'openLink', href: 'payments/mexico-payments.md#L27-L33' });
    await panel.handle({ type: 'openLink', href: 'notes/month%20end.md:3-4' });
    await panel.handle({ type: 'openLink', href: 'notes/month end.md:12' });
    assert.deepEqual(ranges, [
      { uri: 'file:///ws/payments/mexico-payments.md', range: lines(7, 11) },
      { uri: 'file:///ws/payments/mexico-payments.md', range: lines(27, 33) },
      { uri: vscode.Uri.file('/ws/notes/month end.md').toString(), range: lines(3, 4) },
      // One line: the cursor there, nothing selected.
      { uri: vscode.Uri.file('/ws/notes/month end.md').toString(), range: { start: { line: 11, character: 0 }, end: { line: 11, character: 0 } } },
    ]);
  });

  it('KB: Show Status opens a modal with the details', async () => {
    const backend = new FakeBackend().on('kb/status', () => Promise.resolve({ ...INDEXING, skipped: [{ path: 'big.md', reason: 'larger than 2 MiB' }] }));
    const { panel } = makePanel(backend);
    registerCommands(backend, panel);
    await vscode.commands.executeCommand('kb.showStatus');
    const modal = vscode.calls.modals[0];
    assert.equal(modal?.text, 'KB: Keyword search ready · embedding 1,204/3,036 passages · no model');
    assert.match(modal?.detail ?? '', /^Progress: Keyword search ready · embedding 1,204\/3,036 passages\n/);
    assert.match(modal?.detail ?? '', /Embedder: minilm/);
    assert.match(modal?.detail ?? '', /skipped big\.md: larger than 2 MiB/);
    assert.deepEqual(modal?.items, ['Show Panel', 'Reindex', 'Show Log']);
  });

  it("KB: Show Status names the server environment's kb and copies it", async () => {
    const backend = new FakeBackend().on('kb/status', () => Promise.resolve(READY));
    backend.cli = '/storage/server/0.1.0-0123456789ab/bin/kb';
    const { panel } = makePanel(backend);
    registerCommands(backend, panel);
    vscode.responses.modal.push('Copy kb Command');
    await vscode.commands.executeCommand('kb.showStatus');
    const modal = vscode.calls.modals[0];
    assert.match(modal?.detail ?? '', /\nCommand line: \/storage\/server\/0\.1\.0-0123456789ab\/bin\/kb \(the same server, for the terminal\)$/);
    assert.deepEqual(modal?.items, ['Show Panel', 'Reindex', 'Show Log', 'Copy kb Command']);
    assert.deepEqual(vscode.calls.clipboard, ['/storage/server/0.1.0-0123456789ab/bin/kb']);
    assert.match(vscode.calls.messages.at(-1)?.text ?? '', /^KB: copied \/storage\/server\/.*\/bin\/kb: run it in a terminal/);
  });
});

describe('one progress', () => {
  it('the notification shows the status bar’s label and cancels the sync', async () => {
    const backend = new FakeBackend().onAny('kb/indexControl', () => Promise.resolve({ ...INDEXING, message: 'cancelling' }));
    const bar = new KbStatusBar(backend);
    const notification = new IndexProgressNotification(backend);
    backend.updateStatus({ ...INDEXING, progress: { phase: 'scanning', filesDone: 0, filesTotal: 0, chunksDone: 0, chunksTotal: 0 } });
    assert.match(vscode.statusBarItems[0]?.text ?? '', /KB: Scanning files…$/, 'no 0/0 while the sync counts its files');
    backend.updateStatus({ ...INDEXING, progress: { ...INDEXING.progress, phase: 'keyword', filesTotal: 5, filesDone: 1 } });
    assert.equal(vscode.calls.progress.length, 0, 'no notification for a small sync');
    backend.updateStatus({ ...INDEXING, progress: { phase: 'keyword', filesDone: 150, filesTotal: 155 } });
    const shown = vscode.calls.progress[0];
    assert.equal(shown?.options.location, vscode.ProgressLocation.Notification);
    assert.equal(shown?.options.cancellable, true);
    assert.equal(shown?.reports.at(-1)?.message, 'Reading 150/155 files');
    backend.secondsLeft = 720;
    backend.updateStatus(INDEXING);
    const label = 'Keyword search ready · embedding 1,204/3,036 passages · about 12 min left';
    assert.equal(shown?.reports.at(-1)?.message, label);
    // The status bar has the phase and its count (the same numbers); the rest is its tooltip.
    assert.equal(vscode.statusBarItems[0]?.text, '$(sync~spin) KB: embedding 1,204/3,036 passages');
    assert.match(String(vscode.statusBarItems[0]?.tooltip), new RegExp(`^Indexing: ${label}\nno model\n`));
    backend.updateStatus({ ...INDEXING, progress: { ...INDEXING.progress, filesDone: 80, chunksDone: 2000 } });
    assert.equal(shown?.reports.at(-1)?.message, 'Keyword search ready · embedding 2,000/3,036 passages · about 12 min left');
    assert.ok((shown?.reports ?? []).every((r) => r.increment === undefined || r.increment >= 0));
    shown?.cancel.cancel();
    await until(() => backend.requests.some((r) => r.method === 'kb/indexControl'), 'the cancel request');
    assert.deepEqual(backend.requests.at(-1)?.params, { action: 'cancel' });
    backend.updateStatus(READY);
    await until(() => shown?.done === true, 'the notification to close');
    notification.dispose();
    bar.dispose();
  });

  it('the panel pauses and resumes through kb/indexControl', async () => {
    const backend = new FakeBackend().onAny('kb/indexControl', (p: { action: string }) => Promise.resolve({ ...INDEXING, paused: p.action === 'pause' }));
    const { panel, view } = makePanel(backend);
    panel.resolveWebviewView(view as never);
    await panel.handle({ type: 'indexControl', action: 'pause' });
    assert.equal(backend.status?.paused, true);
    await panel.handle({ type: 'indexControl', action: 'resume' });
    assert.equal(backend.status?.paused, false);
  });
});

describe('searching while indexing', () => {
  it('the quick pick says the list may be incomplete, and searches again once indexing is done', async () => {
    let index = INDEXING as typeof INDEXING | typeof READY;
    const backend = new FakeBackend().on('kb/search', (p) => Promise.resolve({ ...searchResponse(p.query, [hit(1, 'a.md')]), index }));
    const qp = new SearchQuickPick(backend, { initialQuery: 'cors', debounceMs: 1 });
    const pick = vscode.quickPicks[0] as vscode.FakeQuickPick<{ label: string; kind?: number }>;
    await until(() => pick.items.length > 0, 'the first list');
    assert.deepEqual(pick.items[0], {
      label: 'Keyword search ready · embedding 1,204/3,036 passages — results may be incomplete',
      kind: vscode.QuickPickItemKind.Separator,
    });
    index = READY;
    backend.updateStatus(READY);
    await until(() => backend.requests.length === 2, 'the second search');
    await qp.running;
    assert.deepEqual(pick.items.map((i) => i.label), ['1 · a.md']);
    backend.updateStatus(READY); // a search would start at once: none does
    assert.equal(backend.requests.length, 2, 'once');
    qp.dispose();
  });
});

describe('related notes', () => {
  it('follow the active Markdown editor, without replacing the numbered list', async () => {
    const backend = new FakeBackend().onAny('kb/related', (p: { path: string }) =>
      Promise.resolve({ path: p.path, results: [hit(1, 'b.md', { label: 'related' })], index: READY }),
    );
    const { panel, posted, view } = makePanel(backend);
    vscode.workspaceFolders.push({ uri: vscode.Uri.file('/ws'), name: 'ws', index: 0 });
    panel.resolveWebviewView(view as never);
    await panel.handle({ type: 'ready' });
    vscode.setActiveEditor({ document: { uri: vscode.Uri.file('/ws/notes/a.md'), languageId: 'markdown' } });
    await until(() => posted.some((m) => m.type === 'related' && m.path === 'notes/a.md'), 'the related list of a.md');
    assert.deepEqual(backend.requests.at(-1)?.params, { path: 'notes/a.md', limit: 10, numbered: false });
    const related = posted.find((m) => m.type === 'related');
    assert.equal(related?.type === 'related' && related.response?.results[0]?.path, 'b.md');
    vscode.setActiveEditor({ document: { uri: vscode.Uri.file('/ws/code.py'), languageId: 'python' } });
    await until(() => posted.at(-1)?.type === 'related' && (posted.at(-1) as { path: unknown }).path === null, 'no file');
    const count = backend.requests.length;
    vscode.setActiveEditor({ document: { uri: vscode.Uri.file('/ws/code.py'), languageId: 'python' } });
    await panel.refreshRelated();
    assert.equal(backend.requests.length, count, 'the same file is not asked again');
    // The keyboard in the panel keeps the list of the editor still shown; closing every
    // editor clears it (it said "Notes related to a.md" with no a.md open).
    vscode.setActiveEditor({ document: { uri: vscode.Uri.file('/ws/notes/a.md'), languageId: 'markdown' } });
    await until(() => posted.at(-1)?.type === 'related' && (posted.at(-1) as { path: unknown }).path === 'notes/a.md', 'a.md again');
    vscode.focusOutsideEditors();
    await panel.refreshRelated();
    assert.equal((posted.at(-1) as { path: unknown }).path, 'notes/a.md');
    vscode.closeEditors();
    await until(() => posted.at(-1)?.type === 'related' && (posted.at(-1) as { path: unknown }).path === null, 'no editor: no list');
  });

  it('lists the notes near the closest one, not the far tail', async () => {
    const scores = [0.7, 0.64, 0.6, 0.41, 0.34];
    const backend = new FakeBackend().onAny('kb/related', (p: { path: string }) =>
      Promise.resolve({ path: p.path, results: scores.map((score, i) => hit(i + 1, `n${i}.md`, { label: 'related', score })), index: READY }),
    );
    const { panel, posted, view } = makePanel(backend);
    vscode.workspaceFolders.push({ uri: vscode.Uri.file('/ws'), name: 'ws', index: 0 });
    panel.resolveWebviewView(view as never);
    await panel.handle({ type: 'ready' });
    vscode.setActiveEditor({ document: { uri: vscode.Uri.file('/ws/notes/b.md'), languageId: 'markdown' } });
    await until(() => posted.some((m) => m.type === 'related' && m.path === 'notes/b.md'), 'the related list of b.md');
    const related = posted.find((m) => m.type === 'related' && m.path === 'notes/b.md');
    assert.deepEqual(related?.type === 'related' && related.response?.results.map((h) => h.score), [0.7, 0.64, 0.6]);
  });

  it('say so when the server has no kb/related', async () => {
    const backend = new FakeBackend();
    const { panel, posted, view } = makePanel(backend);
    vscode.workspaceFolders.push({ uri: vscode.Uri.file('/ws'), name: 'ws', index: 0 });
    panel.resolveWebviewView(view as never);
    await panel.handle({ type: 'ready' });
    vscode.setActiveEditor({ document: { uri: vscode.Uri.file('/ws/a.md'), languageId: 'markdown' } });
    await panel.refreshRelated();
    await until(() => posted.some((m) => m.type === 'related'), 'an answer');
    assert.deepEqual(posted.filter((m) => m.type === 'related').at(-1), {
      type: 'related',
      path: 'a.md',
      response: null,
      message: 'This kb-lsp server does not offer related notes.',
    });
  });
});

describe('one last list', () => {
  it("the panel shows the quick pick's list, and Open Result N opens the panel's N", async () => {
    const seven = Array.from({ length: 7 }, (_, i) => hit(i + 1, `notes/n${i + 1}.md`));
    const backend = new FakeBackend().on('kb/search', (p) =>
      Promise.resolve(searchResponse(p.query, p.query === 'mexico' ? seven : [hit(1, 'old.md')])),
    );
    const { panel, posted, view } = makePanel(backend);
    panel.resolveWebviewView(view as never);
    await panel.handle({ type: 'ready' });
    registerCommands(backend, panel);
    await panel.search('older query');
    const qp = new SearchQuickPick(backend, { initialQuery: 'mexico', debounceMs: 1 });
    await until(() => vscode.quickPicks[0]?.items.length === 7, "the quick pick's list");
    await qp.running;
    const shown = posted.filter((m) => m.type === 'results').at(-1);
    assert.equal(shown?.type === 'results' && shown.origin, 'quickPick');
    assert.equal(shown?.type === 'results' && shown.response.query, 'mexico');
    assert.deepEqual(shown?.type === 'results' && shown.response.results.map((h) => h.path), seven.map((h) => h.path));
    qp.dispose();
    const running = vscode.commands.executeCommand('kb.openResult');
    const pick = vscode.quickPicks.at(-1) as vscode.FakeQuickPick<{ label: string }>;
    assert.equal(pick.title, 'KB: Open Result — “mexico”');
    pick.type('7');
    pick.accept(pick.items[0]);
    await running;
    assert.equal(vscode.calls.shown.at(-1)?.uri, 'file:///ws/notes/n7.md');
    // The panel's own search is the last list again; the panel is not sent it twice.
    const before = posted.filter((m) => m.type === 'results').length;
    await panel.search('again');
    assert.equal(posted.filter((m) => m.type === 'results').length, before + 1);
  });
});

describe('panel actions', () => {
  it('reads a passage for the hover, and says when it cannot', async () => {
    const backend = new FakeBackend();
    const posted: ToWebview[] = [];
    const panel = new KbPanel(vscode.Uri.file('/ext') as never, backend, {
      open: () => Promise.resolve(),
      executeCommand: () => Promise.resolve(),
      openExternal: () => Promise.resolve(true),
      readFile: (uri) => (uri.endsWith('a.md') ? Promise.resolve(new TextEncoder().encode('# A\nline 2\nline 3\nline 4\n')) : Promise.reject(new Error('gone'))),
    });
    panel.post = (m) => void posted.push(m);
    const range = { start: { line: 1, character: 0 }, end: { line: 3, character: 0 } };
    await panel.handle({ type: 'passage', key: 'k1', uri: 'file:///ws/a.md', range });
    await panel.handle({ type: 'passage', key: 'k2', uri: 'file:///ws/gone.md', range });
    assert.deepEqual(posted, [
      { type: 'passage', key: 'k1', text: 'line 2\nline 3' },
      { type: 'passage', key: 'k2', text: null },
    ]);
  });

  it("runs the empty state's and the model card's commands", async () => {
    const backend = new FakeBackend();
    const { panel, executed } = makePanel(backend);
    await panel.handle({ type: 'command', command: 'showLog' });
    await panel.handle({ type: 'command', command: 'restartServer' });
    await panel.handle({ type: 'command', command: 'openServerSettings' });
    await panel.handle({ type: 'command', command: 'chooseModel' });
    await panel.handle({ type: 'command', command: 'probeModel' });
    assert.deepEqual([backend.logShown, backend.restarts, backend.statusRefreshes], [1, 1, 1]);
    assert.deepEqual(executed, ['kb.openServerSettings', 'kb.chooseModel']);
  });

  it('sends the failure, fact by fact, and the estimate with the status', async () => {
    const backend = new FakeBackend();
    const { panel, posted, view } = makePanel(backend);
    panel.resolveWebviewView(view as never);
    await panel.handle({ type: 'ready' });
    const failure = { facts: ['No Python was found at python3.'], kind: 'python-missing' as const, remote: false, install: 'x' };
    backend.setState('failed', 'kb-lsp: No Python was found at python3.', failure);
    assert.deepEqual(posted.at(-1), { type: 'status', status: null, server: 'failed', message: 'kb-lsp: No Python was found at python3.', failure, secondsLeft: undefined });
    backend.secondsLeft = 90;
    backend.setState('running');
    assert.deepEqual(posted.at(-1), { type: 'status', status: READY, server: 'running', message: undefined, failure: undefined, secondsLeft: 90 });
  });

  it('tells the backend an answer came, so "no model" can end', async () => {
    const backend = new FakeBackend().on('kb/ask', () =>
      Promise.resolve({ answer: 'A', sources: [], stop: 'answer' as const, mode: 'grounded' as const, steps: [], usage: {} }),
    );
    const { panel } = makePanel(backend);
    await panel.runAsk('How?', null);
    assert.deepEqual(backend.answers, [{ answer: 'A', sources: [], stop: 'answer', mode: 'grounded', steps: [], usage: {} }]);
  });

  it('KB: Show Panel puts the keyboard in the search box', async () => {
    const backend = new FakeBackend();
    const { panel, posted, executed, view } = makePanel(backend);
    panel.resolveWebviewView(view as never);
    await panel.handle({ type: 'ready' });
    registerCommands(backend, panel);
    await vscode.commands.executeCommand('kb.showPanel');
    assert.ok(executed.includes('kb.panel.focus'), executed.join(','));
    assert.equal(posted.at(-1)?.type, 'focusSearch');
  });

  it('KB: Open Server Settings opens kb.server.python on the User tab, or the Remote tab in a remote window', async () => {
    const backend = new FakeBackend();
    const { panel } = makePanel(backend);
    registerCommands(backend, panel);
    await vscode.commands.executeCommand('kb.openServerSettings');
    vscode.env.remoteName = 'ssh-remote';
    await vscode.commands.executeCommand('kb.openServerSettings');
    assert.deepEqual(
      vscode.calls.commands.filter((c) => c.id.startsWith('workbench.')).map((c) => [c.id, c.args]),
      [
        ['workbench.action.openGlobalSettings', [{ query: 'kb.server.python' }]],
        ['workbench.action.openRemoteSettings', [{ query: 'kb.server.python' }]],
      ],
    );
  });
});

describe('"no model" ends when a model answers', () => {
  it('reads reachable after an answer from that model, until it falls back or the settings change', () => {
    const memory = new AnsweredModel();
    const down = { ...READY, llm: { ...READY.llm, reachable: false } };
    assert.equal(memory.apply(down).llm.reachable, false);
    memory.note({ mode: 'agent', stop: 'answer' }, down.llm);
    assert.equal(memory.apply(down).llm.reachable, true);
    assert.equal(statusView(memory.apply(down)).text, '$(book) KB: ready · 3 files', 'the status bar drops "no model"');
    assert.equal(memory.apply({ ...down, llm: { ...down.llm, model: 'other' } }).llm.reachable, false, 'another model: not known');
    memory.note({ mode: 'fallback', stop: 'answer' }, down.llm);
    assert.equal(memory.apply(down).llm.reachable, false);
    memory.note({ mode: 'grounded', stop: 'length' }, down.llm);
    memory.forget();
    assert.equal(memory.apply(down).llm.reachable, false);
  });
});

describe('KB: Choose a Model…', () => {
  it('lists the models an OpenAI-compatible server and Ollama report, and says when nothing answers', async () => {
    const openai = await startStandIn('openai', ['smollm2', 'qwen2.5-7b']);
    const ollama = await startStandIn('ollama', ['qwen2.5:7b', 'llama3.1:8b']);
    try {
      const names = async (provider: 'openai' | 'ollama', url: string): Promise<unknown> => {
        const listed = await listModels(provider, url);
        return 'error' in listed ? listed : listed.models;
      };
      assert.deepEqual(await names('openai', openai.url), ['smollm2', 'qwen2.5-7b']);
      assert.deepEqual(await names('ollama', ollama.url), ['qwen2.5:7b', 'llama3.1:8b']);
      // Ollama's /v1 address lists its models too (its own API answers).
      assert.deepEqual(await names('ollama', `${ollama.url}/v1`), ['qwen2.5:7b', 'llama3.1:8b']);
      // An OpenAI server asked with Ollama's API: a clear HTTP error, not a crash.
      const wrong = await listModels('ollama', openai.url);
      assert.ok('error' in wrong && /answered HTTP 404/.test(wrong.error), JSON.stringify(wrong));
    } finally {
      openai.stop();
      ollama.stop();
    }
    const refused = await listModels('openai', `http://127.0.0.1:${await freePort()}/v1`);
    assert.ok('error' in refused && /^Nothing answers at http:\/\/127\.0\.0\.1:\d+\/v1\/models \(ECONNREFUSED\)\.$/.test(refused.error), JSON.stringify(refused));
    // A server that accepts and never answers: the short timeout says so.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      const hung = await listModels('openai', `http://127.0.0.1:${port}/v1`, undefined, 300);
      assert.deepEqual(hung, { error: `http://127.0.0.1:${port}/v1/models did not answer within 0 s.` });
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
    assert.equal(checkBaseUrl('http://127.0.0.1:8080/v1'), undefined);
    assert.match(checkBaseUrl('127.0.0.1:8080') ?? '', /http/);
  });

  it('"llama-server" sets the provider, the base URL and a model the server lists', async () => {
    const server = await startStandIn('openai', ['smollm2', 'qwen2.5-7b']);
    try {
      const backend = new FakeBackend();
      const { panel } = makePanel(backend);
      registerCommands(backend, panel);
      vscode.responses.quickPick.push((items) => items.find((i) => i.label.startsWith('llama-server')));
      vscode.responses.inputBox.push(server.url);
      vscode.responses.quickPick.push((items) => items.find((i) => i.label === 'qwen2.5-7b'));
      await vscode.commands.executeCommand('kb.chooseModel');
      assert.deepEqual(vscode.calls.configUpdates, [
        { key: 'llm.provider', value: 'openai', target: vscode.ConfigurationTarget.Global },
        { key: 'llm.baseUrl', value: server.url, target: vscode.ConfigurationTarget.Global },
        { key: 'llm.model', value: 'qwen2.5-7b', target: vscode.ConfigurationTarget.Global },
      ]);
      const input = vscode.calls.inputBoxes[0] as { value: string };
      assert.equal(input.value, 'http://127.0.0.1:8080/v1', "llama-server's address, to edit");
      // The configured server (here the defaults: Ollama on this machine) first, then the presets.
      assert.deepEqual(vscode.calls.quickPicks[0]?.items.map((i) => (i as { label: string }).label), [
        '$(check) Another model at http://127.0.0.1:11434',
        ...PRESETS.map((p) => p.label),
      ]);
    } finally {
      server.stop();
    }
  });

  it('a server that does not answer: says how to start it, saves the address when asked, never a model it did not list', async () => {
    const backend = new FakeBackend();
    const { panel } = makePanel(backend);
    registerCommands(backend, panel);
    const url = `http://127.0.0.1:${await freePort()}/v1`;
    vscode.responses.quickPick.push((items) => items.find((i) => i.label === 'LM Studio'));
    vscode.responses.inputBox.push(url);
    vscode.responses.message.push('Save the Address');
    await vscode.commands.executeCommand('kb.chooseModel');
    assert.match(vscode.calls.messages.find((m) => m.level === 'warning')?.text ?? '', /Nothing answers at .*\(ECONNREFUSED\)\. Start it \(lms server start\), then choose again/);
    assert.deepEqual(vscode.calls.configUpdates.map((u) => [u.key, u.value]), [
      ['llm.provider', 'openai'],
      ['llm.baseUrl', url],
    ]);
  });
});

describe('KB: Choose a Model… remembers the server and describes its models', () => {
  it('says which models call tools, their size and context (Ollama, llama-server)', async () => {
    const ollama = await startStandIn('ollama', ['qwen2.5:7b', 'gemma:2b'], {}, { capabilities: ['completion', 'tools'] });
    const plain = await startStandIn('openai', ['smollm2'], {}, { tools: false, n_ctx: 4096 });
    try {
      const fromOllama = await listModels('ollama', ollama.url);
      assert.ok(!('error' in fromOllama));
      assert.deepEqual(fromOllama.info[0], { name: 'qwen2.5:7b', tools: true, size: '7.6B · Q4_K_M · 4.7 GB', context: 32768 });
      assert.deepEqual(describeModel(fromOllama.info[0] as ModelInfo), {
        description: '$(tools) calls tools: the agent answers',
        detail: '7.6B · Q4_K_M · 4.7 GB · 32k context',
      });
      const fromLlama = await listModels('openai', plain.url);
      assert.ok(!('error' in fromLlama));
      assert.deepEqual(fromLlama.info, [{ name: 'smollm2', tools: false, size: undefined, context: 4096 }]);
      assert.deepEqual(describeModel(fromLlama.info[0] as ModelInfo), { description: 'no tool calling: grounded answers', detail: '4,096 context' });
    } finally {
      ollama.stop();
      plain.stop();
    }
  });

  it('offers the configured server first and keeps its address; its model is marked current', async () => {
    const server = await startStandIn('openai', ['smollm2', 'qwen2.5-7b']);
    try {
      const backend = new FakeBackend();
      const { panel } = makePanel(backend);
      registerCommands(backend, panel);
      vscode.configuration.set('llm.provider', 'openai');
      vscode.configuration.set('llm.baseUrl', server.url);
      vscode.configuration.set('llm.model', 'smollm2');
      // Another model on the same server: no address to type again.
      vscode.responses.quickPick.push((items) => items[0]);
      vscode.responses.quickPick.push((items) => items.find((i) => i.label === 'qwen2.5-7b'));
      await vscode.commands.executeCommand('kb.chooseModel');
      const first = vscode.calls.quickPicks[0]?.items as { label: string; description?: string }[];
      assert.equal(first[0]?.label, `$(check) Another model at ${server.url}`);
      assert.equal(first[0]?.description, 'now: smollm2');
      // Its preset (by port: none of the usual ones) shows the configured address.
      assert.equal(first.find((i) => i.label.startsWith('Another OpenAI'))?.description, `${server.url} (configured)`);
      assert.equal(vscode.calls.inputBoxes.length, 0, 'the address is not asked again');
      const models = vscode.calls.quickPicks[1]?.items as { label: string; description?: string }[];
      assert.match(models.find((i) => i.label === 'smollm2')?.description ?? '', /^current · \$\(tools\) calls tools/);
      assert.deepEqual(vscode.calls.configUpdates.map((u) => [u.key, u.value]), [
        ['llm.provider', 'openai'],
        ['llm.baseUrl', server.url],
        ['llm.model', 'qwen2.5-7b'],
      ]);
      // Choosing its preset again: the address box holds the configured address, not the usual one.
      vscode.responses.quickPick.push((items) => items.find((i) => i.label.startsWith('Another OpenAI')));
      vscode.responses.inputBox.push(undefined);
      await vscode.commands.executeCommand('kb.chooseModel');
      assert.equal((vscode.calls.inputBoxes[0] as { value: string }).value, server.url);
    } finally {
      server.stop();
    }
  });
});

describe('the notice that the server did not start', () => {
  it('goes by itself once the server runs, and a new failure replaces the old one', async () => {
    const notice = new FailureNotice();
    notice.show('kb-lsp: kb-lsp is not installed in /usr/bin/python3.');
    const first = vscode.calls.progress[0];
    assert.ok(first);
    assert.match(first.options.title ?? '', /^kb-lsp: kb-lsp is not installed in \/usr\/bin\/python3\. \[Open Settings\]\(command:kb\.openServerSettings\)/);
    assert.equal(first.options.cancellable, true, 'the user may close it');
    await tick();
    assert.equal(first.done, false, 'on screen while the server is not running');
    notice.show('kb-lsp: The server did not start.');
    await tick();
    assert.equal(first.done, true, 'the old failure is gone');
    notice.close(); // the server runs
    await tick();
    assert.equal(vscode.calls.progress[1]?.done, true);
    assert.equal(notice.shown, undefined);
  });
});

describe('the walkthrough', () => {
  it('runs registered commands and shows media that ship with the extension', () => {
    const backend = new FakeBackend();
    const { panel } = makePanel(backend);
    registerCommands(backend, panel);
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      contributes: { walkthroughs: { steps: { description: string; media: { markdown?: string }; completionEvents?: string[] }[] }[] };
    };
    const steps = manifest.contributes.walkthroughs.flatMap((w) => w.steps);
    assert.equal(steps.length, 3);
    const commands = steps.flatMap((s) => [...s.description.matchAll(/\(command:([\w.]+)\)/g)].map((m) => m[1]));
    const events = steps.flatMap((s) => s.completionEvents ?? []).filter((e) => e.startsWith('onCommand:')).map((e) => e.slice('onCommand:'.length));
    for (const id of [...commands, ...events]) {
      assert.ok(vscode.registeredCommands.has(id ?? ''), `${id} is registered`);
    }
    for (const step of steps) {
      assert.ok(existsSync(join(ROOT, step.media.markdown ?? 'missing')), `${step.media.markdown} exists`);
      // What it says to run is the README's install, never a PyPI name that may be another package.
      const blocks = readFileSync(join(ROOT, step.media.markdown ?? ''), 'utf8').match(/```[^]*?```/g) ?? [];
      assert.ok(blocks.every((block) => !/pip install kb-lsp\b/.test(block)), blocks.join('\n'));
    }
    for (const step of steps) {
      // A step's description renders links only: a backtick shows as itself.
      assert.ok(!step.description.includes('`'), step.description);
      // No sample wiki in a step about the user's own notes.
      assert.doesNotMatch(step.description, /mexico|examples\/workspace/i);
      // A command line in the media fits its pane (about 60 characters) instead of being cut off.
      const blocks = readFileSync(join(ROOT, step.media.markdown ?? ''), 'utf8').match(/```[^]*?```/g) ?? [];
      for (const line of blocks.flatMap((block) => block.split('\n'))) {
        assert.ok(line.length <= 60, `${line} (${line.length} characters)`);
      }
    }
    // The extension sets up the server it carries; the step and its page say how, and what to do when it cannot.
    assert.match(steps[0]?.description ?? '', /sets it up on first use/);
    const install = readFileSync(join(ROOT, 'media', 'walkthrough', 'install.md'), 'utf8');
    for (const fact of [/Python 3\.11 or newer/, /virtual environment in its own storage/, /package\s+index/, /remote\s+machine/, /kb\.server\.python/]) {
      assert.match(install, fact);
    }
  });
});

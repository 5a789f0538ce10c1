import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { hitItem, lineSpan, parseResultNumber, relativeTo, statusView } from '../../src/format';
import { contributedSettings, initializationOptions, needsRestart, restrictedKeysIn, serverSettings } from '../../src/settings';
import { manifest, reader } from '../shared/settings';
import { choosePython, diagnoseLaunch, interpreterFromApi } from '../../src/python';
import { remoteIgnoredUserValue, remoteSettingsMessage, SettingsMemory } from '../../src/remoteSettings';
import { Debouncer, errorCode, LatestOnly } from '../../src/util';
import { hit, READY, tick, deferred } from './fakes';

describe('format', () => {
  it('numbers quick-pick items and shows label, lines, score, heading and snippet', () => {
    const item = hitItem(hit(2, 'docs/setup.md', { snippet: 'run **kb index**\n  then   wait', score: 0.8123 }));
    assert.equal(item.label, '2 · docs/setup.md');
    assert.equal(item.description, 'context match · L9–11 · 0.81');
    assert.equal(item.detail, 'Setup › Install — run kb index then wait');
  });

  it('counts lines from 1 and treats an end at character 0 as the line before', () => {
    assert.equal(lineSpan({ start: { line: 0, character: 0 }, end: { line: 1, character: 0 } }), 'L1');
    assert.equal(lineSpan({ start: { line: 4, character: 2 }, end: { line: 6, character: 5 } }), 'L5–7');
  });

  it('shows the index state: ready, indexing x/y, read-only, no model, error', () => {
    assert.equal(statusView(READY).text, '$(book) KB: ready · 3 files · no model');
    assert.equal(statusView({ ...READY, state: 'indexing', files: 2, pending: 5 }).text.includes('indexing 2/7'), true);
    assert.match(statusView({ ...READY, readOnly: true, llm: { ...READY.llm, reachable: true } }).text, /read-only$/);
    assert.equal(statusView({ ...READY, state: 'error' }).kind, 'error');
    assert.equal(statusView(undefined).kind, 'stopped');
    assert.equal(statusView({ ...READY, paused: true }).text, '$(book) KB: ready · 3 files · indexing paused · no model');
  });

  it('makes workspace-relative paths with / and refuses files outside', () => {
    assert.equal(relativeTo(['/ws', '/other/'], '/other/a/b.md'), 'a/b.md');
    assert.equal(relativeTo(['C:\\ws'], 'C:\\ws\\notes\\x.md'), 'notes/x.md');
    assert.equal(relativeTo(['/ws'], '/wsx/a.md'), undefined);
  });

  it('parses "open result N" input', () => {
    assert.deepEqual(parseResultNumber(' 3 '), { n: 3 });
    assert.deepEqual(parseResultNumber('#2'), { n: 2 });
    assert.ok('error' in parseResultNumber('two'));
    assert.ok('error' in parseResultNumber('0'));
    assert.ok('error' in parseResultNumber('5', 3));
  });
});

describe('settings', () => {
  it('sends every setting the user set, nested, and leaves defaults to the server', () => {
    const user: Record<string, unknown> = {
      include: ['**/*.md'],
      chunkSize: 500,
      'ollama.host': 'http://gpu:11434',
      'ollama.model': 'llama3.1',
      'ollama.timeout': 30,
      'ollama.numCtx': 4096,
      'ollama.keepAlive': '1h',
      debounceMs: 50,
      reconcileSeconds: 60,
      'embedder.batchSize': 8,
      'embedder.modelPath': null,
      'chroma.url': '',
      'server.python': '/venv/bin/python',
    };
    assert.deepEqual(serverSettings(reader(user, { 'search.threshold': 0.4 }), '/storage/ws'), {
      include: ['**/*.md'],
      chunkSize: 500,
      ollama: { host: 'http://gpu:11434', model: 'llama3.1', timeout: 30, numCtx: 4096, keepAlive: '1h' },
      debounceMs: 50,
      reconcileSeconds: 60,
      embedder: { batchSize: 8 },
      search: { threshold: 0.4 },
      storage: '/storage/ws',
    });
  });

  it('knows every contributed setting, not a list of its own', () => {
    const { keys, restricted } = contributedSettings(manifest());
    for (const key of ['ollama.timeout', 'ollama.numCtx', 'ollama.keepAlive', 'debounceMs', 'reconcileSeconds', 'embedder.batchSize']) {
      assert.ok(keys.includes(key), key);
    }
    for (const key of ['server.python', 'ollama.host', 'chroma.url', 'storage', 'embedder.modelPath']) {
      assert.ok(restricted.includes(key), key);
    }
  });

  it('prefers kb.storage over the extension storage, and starts the server with the storage only', () => {
    assert.equal(serverSettings(reader({ storage: ' /mine ' }), '/ext').storage, '/mine');
    assert.equal(serverSettings(reader({ storage: '' }), '/ext').storage, '/ext');
    assert.equal(serverSettings(reader({}), undefined).storage, undefined);
    assert.deepEqual(initializationOptions(reader({ 'search.limit': 3 }), '/ext'), { storage: '/ext' });
  });

  it('in an untrusted workspace uses the user values of restricted settings', () => {
    const workspace = { 'ollama.host': 'http://evil:1', 'search.limit': 4, storage: '/tmp/steal' };
    const untrusted = reader({ 'ollama.host': 'http://mine:11434' }, workspace, false);
    assert.deepEqual(serverSettings(untrusted, '/ext'), {
      ollama: { host: 'http://mine:11434' },
      search: { limit: 4 },
      storage: '/ext',
    });
    assert.equal(serverSettings(reader({}, workspace, true), '/ext').storage, '/tmp/steal');
  });

  it('finds the restricted settings a workspace settings file sets', () => {
    const { restricted } = contributedSettings(manifest());
    const text = '{\n  // the team host\n  "kb.ollama.host" : "http://gpu:1",\n  "kb.storage": "/x",\n  "kb.search.limit": 3,\n  "kb.server.pythonx": 1\n}';
    assert.deepEqual(restrictedKeysIn(text, restricted).sort(), ['ollama.host', 'storage']);
    assert.deepEqual(restrictedKeysIn('{}', restricted), []);
  });

  it('restarts the server only for the interpreter', () => {
    assert.equal(needsRestart((s) => s === 'kb.server.python'), true);
    assert.equal(needsRestart((s) => s === 'kb' || s === 'kb.search.threshold'), false);
    assert.equal(needsRestart((s) => s === 'editor'), false);
  });
});

describe('remote windows', () => {
  it('notices a User value of a machine setting that VS Code ignores there', () => {
    const local = { globalValue: '/venv/python', globalLocalValue: '/venv/python' };
    assert.equal(remoteIgnoredUserValue(local, 'ssh-remote+box'), '/venv/python');
    assert.equal(remoteIgnoredUserValue(local, undefined), undefined, 'a local window applies User settings');
    assert.equal(remoteIgnoredUserValue({ ...local, globalRemoteValue: '/r/python' }, 'ssh-remote+box'), undefined);
    assert.equal(remoteIgnoredUserValue({ ...local, workspaceValue: '/w/python' }, 'ssh-remote+box'), undefined);
    assert.equal(remoteIgnoredUserValue({ ...local, workspaceValue: '/w/python' }, 'ssh-remote+box', false), '/venv/python', 'untrusted');
    assert.equal(remoteIgnoredUserValue({ globalLocalValue: '  ' }, 'wsl+x'), undefined);
  });

  it('keeps a machine setting that vanished without a change naming it, not one the user cleared', () => {
    const memory = new SettingsMemory();
    const user = { 'server.python': '/venv/python', storage: '/my/store', 'search.limit': 5 };
    assert.equal(memory.recall(reader(user)).get('server.python'), '/venv/python');
    // VS Code reloads the User settings and drops the machine settings; the change event
    // names only the setting the user edited.
    memory.noteChange(reader({}).keys, (s) => s === 'kb' || s === 'kb.search.limit');
    const after = memory.recall(reader({ 'search.limit': 5 }));
    assert.equal(after.get('server.python'), '/venv/python');
    assert.equal(serverSettings(after, '/ext').storage, '/my/store');
    assert.deepEqual([...memory.kept.keys()].sort(), ['server.python', 'storage']);
    assert.equal(after.get('search.limit'), 5);
    // Read again, still kept; then the user clears kb.storage on purpose.
    assert.equal(memory.recall(reader({})).get('storage'), '/my/store');
    memory.noteChange(reader({}).keys, (s) => s === 'kb.storage');
    assert.equal(serverSettings(memory.recall(reader({})), '/ext').storage, '/ext');
    assert.deepEqual([...memory.kept.keys()], ['server.python']);
    // Set again (in the Remote settings): that value applies.
    assert.equal(memory.recall(reader({ 'server.python': '/remote/python' })).get('server.python'), '/remote/python');
    assert.equal(memory.kept.size, 0);
  });

  it('says which settings to move to the Remote settings', () => {
    assert.match(remoteSettingsMessage(['server.python']), /kb\.server\.python is in your User settings.*set it in the Remote settings/);
    assert.match(remoteSettingsMessage(['server.python', 'storage']), /kb\.server\.python, kb\.storage are .*set them/);
  });
});

describe('python', () => {
  const none = () => Promise.resolve(undefined);

  it('uses kb.server.python first', async () => {
    assert.deepEqual(await choosePython(' /venv/bin/python ', none), { command: '/venv/bin/python', source: 'setting' });
  });

  it("uses the Python extension's active interpreter next", async () => {
    const api = {
      environments: {
        getActiveEnvironmentPath: () => ({ path: '/envs/a' }),
        resolveEnvironment: () => Promise.resolve({ executable: { uri: { fsPath: '/envs/a/bin/python' } } }),
      },
    };
    assert.deepEqual(await choosePython('', () => Promise.resolve(api)), {
      command: '/envs/a/bin/python',
      source: 'python extension',
    });
    const old = { settings: { getExecutionDetails: () => ({ execCommand: ['/old/python'] }) } };
    assert.equal(await interpreterFromApi(old), '/old/python');
  });

  it('falls back to python3 when the extension is missing or its API fails', async () => {
    assert.equal((await choosePython(undefined, none)).command, 'python3');
    assert.equal((await choosePython(undefined, () => Promise.reject(new Error('boom')))).command, 'python3');
    const broken = {
      environments: {
        getActiveEnvironmentPath: () => {
          throw new Error('x');
        },
        resolveEnvironment: () => Promise.resolve(undefined),
      },
    };
    assert.equal(await interpreterFromApi(broken), undefined);
  });

  it('explains a missing Python and a missing package', () => {
    const py = { command: 'python3', source: 'default' as const };
    assert.equal(diagnoseLaunch(py, { stderr: '' }), undefined);
    const missing = diagnoseLaunch(py, { error: { code: 'ENOENT', message: 'spawn python3 ENOENT' }, stderr: '' });
    assert.equal(missing?.problem, 'python-missing');
    assert.match(missing?.message ?? '', /Python was not found.*kb\.server\.python/);
    const noPkg = diagnoseLaunch(
      { command: '/v/bin/python', source: 'setting' },
      { error: { code: 1, message: 'exit 1' }, stderr: "ModuleNotFoundError: No module named 'kb_lsp'\n" },
    );
    assert.equal(noPkg?.problem, 'package-missing');
    assert.match(noPkg?.message ?? '', /\/v\/bin\/python -m pip install kb-lsp/);
    const remote = diagnoseLaunch(py, { error: { code: 'ENOENT', message: 'x' }, stderr: '' }, true);
    assert.match(remote?.message ?? '', /set kb\.server\.python in the Remote settings/);
    const other = diagnoseLaunch(py, { error: { code: 1, message: 'exit 1' }, stderr: 'Traceback\nImportError: bad' });
    assert.match(other?.message ?? '', /ImportError: bad/);
  });
});

describe('util', () => {
  it('debounces to the last trigger', async () => {
    let calls = 0;
    const d = new Debouncer(10, () => calls++);
    d.trigger();
    d.trigger();
    d.trigger();
    assert.equal(d.pending, true);
    await tick(30);
    assert.equal(calls, 1);
    d.trigger();
    d.cancel();
    await tick(20);
    assert.equal(calls, 1);
  });

  it('cancels the request a newer one supersedes and drops its result', async () => {
    const tokens: { cancelled: boolean }[] = [];
    const latest = new LatestOnly(() => {
      const t = { cancelled: false, cancel: () => (t.cancelled = true), dispose: () => undefined };
      tokens.push(t);
      return t;
    });
    const first = deferred<string>();
    const second = deferred<string>();
    const a = latest.run(() => first.promise);
    const b = latest.run(() => second.promise);
    assert.equal(tokens[0].cancelled, true);
    assert.equal(tokens[1].cancelled, false);
    second.resolve('new');
    first.resolve('old');
    assert.equal(await a, undefined);
    assert.deepEqual(await b, { value: 'new' });
    const c = latest.run(() => Promise.reject(Object.assign(new Error('bad'), { code: -32602 })));
    await assert.rejects(c, (err) => errorCode(err) === -32602);
  });
});

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { count, hitItem, incompleteNotice, indexLabel, lineSpan, overallFraction, parseResultNumber, passageText, readablePassage, relatedShown, RELATED_RATIO, relativeTo, statusView, suggestedQuery, timeLeft } from '../../src/format';
import { MIN_SPAN_SECONDS, RateEstimator, WINDOW_SECONDS } from '../../src/estimate';
import type { IndexPhase, IndexStatus } from '../../src/protocol';
import { contributedSettings, initializationOptions, needsRestart, restrictedKeysIn, serverSettings } from '../../src/settings';
import { manifest, reader } from '../shared/settings';
import { choosePython, diagnoseLaunch, interpreterFromApi } from '../../src/python';
import { remoteIgnoredUserValue, remoteSettingsMessage, SettingsMemory } from '../../src/remoteSettings';
import { Debouncer, errorCode, LatestOnly } from '../../src/util';
import { hit, READY, deferred } from './fakes';
import { listFromServer } from '../../src/lastList';

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
    assert.equal(statusView({ ...READY, files: 3038 }).text, '$(book) KB: ready · 3,038 files · no model');
    assert.equal(statusView({ ...READY, state: 'indexing', files: 2, pending: 5 }).text.includes('Indexing 2/7 files'), true);
    assert.match(statusView({ ...READY, readOnly: true, llm: { ...READY.llm, reachable: true } }).text, /read-only$/);
    assert.equal(statusView({ ...READY, state: 'error' }).kind, 'error');
    assert.equal(statusView(undefined).kind, 'stopped');
    assert.equal(statusView({ ...READY, paused: true }).text, '$(book) KB: ready · 3 files · indexing paused · no model');
  });

  it('says one label per phase, in its own unit, with the time left when there is an estimate', () => {
    const at = (phase: IndexPhase, filesDone: number, chunksDone = 0, chunksTotal = 0): IndexStatus => ({
      ...READY,
      state: 'indexing',
      progress: { phase, filesDone, filesTotal: 155, chunksDone, chunksTotal },
    });
    assert.equal(indexLabel({ ...at('scanning', 0), progress: { phase: 'scanning', filesDone: 0, filesTotal: 0 } }), 'Scanning files…');
    assert.equal(indexLabel(at('keyword', 150)), 'Reading 150/155 files');
    assert.equal(indexLabel(at('vectors', 0, 0, 3038)), 'Keyword search ready · embedding 0/3,038 passages');
    assert.equal(
      indexLabel(at('vectors', 18, 256, 3038), 12 * 60 + 10),
      'Keyword search ready · embedding 256/3,038 passages · about 12 min left',
    );
    assert.equal(indexLabel(at('keyword', 3), 20), 'Reading 3/155 files · less than a minute left');
    // A full reindex reuses the cached vectors: counted as reused, as the terminal says it.
    const reused = at('vectors', 14, 1200, 3038);
    assert.equal(
      indexLabel({ ...reused, progress: { ...reused.progress!, chunksReused: 1200 } }),
      'Keyword search ready · embedding 1,200/3,038 passages (1,200 reused)',
    );
    assert.equal(indexLabel({ ...at('vectors', 18, 256, 3038), paused: true }, 600), 'Keyword search ready · embedding 256/3,038 passages · paused');
    assert.equal(timeLeft(2.5 * 3600), 'about 2.5 h left');
    assert.equal(count(3038), '3,038');
    // The status bar, shared with every other extension: the phase and its count, with its
    // icon; the time left and "no model" are in its tooltip.
    const bar = statusView(at('vectors', 18, 256, 3038), 600);
    assert.equal(bar.text, '$(sync~spin) KB: embedding 256/3,038 passages');
    assert.match(bar.tooltip, /^Indexing: Keyword search ready · embedding 256\/3,038 passages · about 10 min left\nno model\n/);
    assert.equal(statusView({ ...at('keyword', 38), paused: true }).text, '$(debug-pause) KB: Reading 38/155 files · paused');
    assert.equal(incompleteNotice(at('keyword', 38)), 'Reading 38/155 files — results may be incomplete');
    // The bar over both phases never goes back: the end of reading is below the start of embedding.
    const moments = [at('scanning', 0), at('keyword', 0), at('keyword', 150), at('keyword', 155), at('vectors', 0, 0, 3038), at('vectors', 18, 256, 3038), at('vectors', 155, 3038, 3038)];
    const fractions = moments.map((m) => overallFraction(m) ?? -1);
    assert.deepEqual([...fractions].sort((a, b) => a - b), fractions);
  });

  it('estimates the time left from a recent window of the rate, per phase', () => {
    const status = (phase: IndexPhase, done: number, total = 3000, paused = false): IndexStatus => ({
      ...READY,
      state: 'indexing',
      paused,
      progress: phase === 'vectors' ? { phase, filesDone: 0, filesTotal: 155, chunksDone: done, chunksTotal: total } : { phase, filesDone: done, filesTotal: 155 },
    });
    const estimator = new RateEstimator();
    estimator.observe(status('keyword', 0), 0);
    assert.equal(estimator.secondsLeft(status('keyword', 0), 0), undefined, 'no estimate from one moment');
    estimator.observe(status('keyword', 10), 5);
    assert.equal(estimator.secondsLeft(status('keyword', 10), 5), undefined, `none before ${MIN_SPAN_SECONDS} s of samples`);
    estimator.observe(status('keyword', 40), 20);
    assert.equal(Math.round(estimator.secondsLeft(status('keyword', 40), 20) ?? -1), Math.round((115 * 20) / 40));
    // A new phase starts its own measure, in passages.
    estimator.observe(status('vectors', 0), 30);
    assert.equal(estimator.secondsLeft(status('vectors', 0), 30), undefined);
    // Slow at first (10/s), then 2/s for the whole window: the window's rate counts, not the average.
    for (let t = 0; t <= 100; t += 10) {
      estimator.observe(status('vectors', t * 10), 30 + t);
    }
    let done = 1000;
    let now = 130;
    for (let k = 0; k < 40; k++) {
      now += 10;
      done += 20;
      estimator.observe(status('vectors', done), now);
    }
    const left = estimator.secondsLeft(status('vectors', done), now) ?? -1;
    assert.ok(Math.abs(left - (3000 - done) / 2) < (3000 - done) / 2 * 0.1, `about ${(3000 - done) / 2} s at 2/s (${left}), window ${WINDOW_SECONDS} s`);
    // Numbers that stand still make the estimate grow, never fall to 0.
    const later = estimator.secondsLeft(status('vectors', done), now + 120) ?? -1;
    assert.ok(later > left, `${later} > ${left}`);
    // A pause drops the measure; so does the end of the sync.
    estimator.observe(status('vectors', done, 3000, true), now + 130);
    assert.equal(estimator.secondsLeft(status('vectors', done), now + 130), undefined);
    // A server estimate, once the server sends one, is taken as it is.
    const fromServer = { ...status('vectors', 5), progress: { ...status('vectors', 5).progress, secondsLeft: 42 } } as IndexStatus;
    assert.equal(new RateEstimator().secondsLeft(fromServer, 0), 42);
  });

  it('reads the lines of a passage for the hover', () => {
    const text = 'a\nb\nc\nd\n';
    assert.equal(passageText(text, { start: { line: 1, character: 0 }, end: { line: 3, character: 0 } }), 'b\nc');
    assert.equal(passageText(text, { start: { line: 1, character: 0 }, end: { line: 2, character: 1 } }), 'b\nc');
    assert.equal(passageText(text, { start: { line: 0, character: 0 }, end: { line: 3, character: 0 } }, 2), 'a\nb…');
  });

  it('leaves the attribute lists of documentation generators out of a passage (issue 39, point 10)', () => {
    const passage = ['## Add types { #add-types }', '', 'Use `str`.', '{: .note }', 'A {curly} word stays.', '### Two { #two .wide data-x="1" }'].join('\n');
    assert.equal(readablePassage(passage), ['## Add types', '', 'Use `str`.', 'A {curly} word stays.', '### Two'].join('\n'));
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

  it('explains a missing Python and a missing package, one fact a sentence, with the README install', () => {
    const py = { command: 'python3', source: 'default' as const };
    assert.equal(diagnoseLaunch(py, { stderr: '' }), undefined);
    const missing = diagnoseLaunch(py, { error: { code: 'ENOENT', message: 'spawn python3 ENOENT' }, stderr: '' });
    assert.equal(missing?.problem, 'python-missing');
    assert.match(missing?.facts[0] ?? '', /^No Python was found at python3/);
    assert.match(missing?.message ?? '', /kb\.server\.python/);
    const noPkg = diagnoseLaunch(
      { command: '/v/bin/python', source: 'setting' },
      { error: { code: 1, message: 'exit 1' }, stderr: "ModuleNotFoundError: No module named 'kb_lsp'\n" },
    );
    assert.equal(noPkg?.problem, 'package-missing');
    assert.deepEqual(noPkg?.facts, [
      'The kb-lsp server is not installed in kb.server.python (/v/bin/python).',
      'Install it from a clone of the kb-lsp repository, in that folder.',
      'Set kb.server.python to the .venv/bin/python of that clone.',
    ]);
    // The README's way, never a PyPI name that may be someone else's package.
    assert.equal(noPkg?.install, 'python3 -m venv .venv && .venv/bin/pip install .');
    assert.doesNotMatch(noPkg?.message ?? '', /pip install kb-lsp/);
    for (const fact of [...(noPkg?.facts ?? []), ...(missing?.facts ?? [])]) {
      assert.match(fact, /^[A-Z][^]*\.$/, `one sentence: ${fact}`);
      assert.equal(fact.split(/\. [A-Z]/).length, 1, `one sentence: ${fact}`);
    }
    const remote = diagnoseLaunch(py, { error: { code: 'ENOENT', message: 'x' }, stderr: '' }, true);
    assert.match(remote?.message ?? '', /kb\.server\.python belongs in the Remote settings/);
    const other = diagnoseLaunch(py, { error: { code: 1, message: 'exit 1' }, stderr: 'Traceback\nImportError: bad' });
    assert.match(other?.message ?? '', /ImportError: bad/);
  });

  it('with a bundled wheel, a kb.server.python without kb-lsp gets the command that installs it there, or the setting cleared', () => {
    const wheel = '/ext/server-wheel/kb_lsp-0.1.0-py3-none-any.whl';
    const setting = { command: '/v/bin/python', source: 'setting' as const };
    const noPkg = diagnoseLaunch(setting, { error: { code: 1, message: 'exit 1' }, stderr: "No module named 'kb_lsp'" }, false, wheel);
    assert.deepEqual(noPkg?.facts, [
      'The kb-lsp server is not installed in kb.server.python (/v/bin/python).',
      'The command below installs the kb-lsp server this extension carries there.',
      'Or clear kb.server.python, and the extension sets up a server of its own.',
    ]);
    assert.equal(noPkg?.install, `/v/bin/python -m pip install ${wheel}`);
    const missing = diagnoseLaunch(setting, { error: { code: 'ENOENT', message: 'x' }, stderr: '' }, true, wheel);
    assert.equal(missing?.install, undefined, 'nothing to install into');
    assert.match(missing?.message ?? '', /Or clear kb\.server\.python/);
    assert.doesNotMatch(missing?.message ?? '', /Remote settings/, 'the setting was read, so it is where it applies');
  });
});

describe('util', () => {
  it('debounces to the last trigger', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let calls = 0;
    const d = new Debouncer(10, () => calls++);
    d.trigger();
    t.mock.timers.tick(9);
    d.trigger(); // a trigger restarts the pause
    t.mock.timers.tick(9);
    d.trigger();
    assert.equal(d.pending, true);
    t.mock.timers.tick(9);
    assert.equal(calls, 0, 'not before a whole pause');
    t.mock.timers.tick(1);
    assert.equal(calls, 1);
    assert.equal(d.pending, false);
    d.trigger();
    d.cancel();
    t.mock.timers.tick(100);
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

describe('relatedShown', () => {
  it('keeps the notes within RELATED_RATIO of the closest one and drops the tail', () => {
    const scores = [0.62, 0.55, 0.5, 0.45, 0.4, 0.34];
    const hits = scores.map((score, i) => hit(i + 1, `n${i + 1}.md`, { score, label: 'related' }));
    const kept = relatedShown(hits);
    assert.deepEqual(kept.map((h) => h.score), scores.filter((s) => s >= 0.62 * RELATED_RATIO));
    assert.deepEqual(kept.map((h) => h.n), [1, 2, 3], 'numbers stay 1..k');
  });

  it('keeps notes of equal score, and an empty list empty', () => {
    const same = [1, 2, 3].map((n) => hit(n, `s${n}.md`, { score: 0.3 }));
    assert.equal(relatedShown(same).length, 3);
    assert.deepEqual(relatedShown([]), []);
  });
});

describe('suggestedQuery', () => {
  const response = { query: 'mexcio paymnets', results: [], index: READY };
  it("takes the server's did-you-mean when it differs from the query", () => {
    assert.equal(suggestedQuery({ ...response, didYouMean: 'mexico payments' }), 'mexico payments');
  });
  it('ignores none, an empty one, the query itself, and a value that is not text', () => {
    assert.equal(suggestedQuery(response), undefined);
    assert.equal(suggestedQuery(null), undefined);
    for (const didYouMean of ['', '  ', 'mexcio paymnets', 42, null]) {
      assert.equal(suggestedQuery({ ...response, didYouMean } as typeof response), undefined, String(didYouMean));
    }
  });
});

describe('listFromServer (kb/listChanged)', () => {
  it('takes {query, results, origin}, with the status given when it carries none', () => {
    const list = listFromServer({ query: 'deploy', origin: 'cli', results: [hit(1, 'a.md')] }, READY);
    assert.deepEqual(list, { response: { query: 'deploy', results: [hit(1, 'a.md')], index: READY }, origin: 'cli' });
  });
  it('reads an unknown origin as a question, drops entries that are not hits, refuses what is not a list', () => {
    const list = listFromServer({ query: 'q', origin: 'martian', results: [hit(1, 'a.md'), { n: 'two' }, null] }, READY);
    assert.equal(list?.origin, 'agent');
    assert.deepEqual(list?.response.results.map((h) => h.path), ['a.md']);
    for (const params of [null, 42, { query: 'q' }, { results: [] }, { query: 1, results: [] }]) {
      assert.equal(listFromServer(params, READY), undefined, JSON.stringify(params));
    }
    assert.equal(listFromServer({ query: 'q', results: [] }, undefined), undefined, 'no status to show it with');
  });
});

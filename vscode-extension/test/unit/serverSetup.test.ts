/**
 * The server's own environment (serverSetup.ts, findPython.ts, setupLock.ts) on a real file
 * system, with Python, venv and pip scripted behind the `Exec` seam (`machine.ts`); the real
 * `Exec` on real processes; and the editor's side (managedServer.ts) through the vscode stub.
 */
import * as vscode from './vscodeStub';
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, it } from 'node:test';
import { nodeExec } from '../../src/exec';
import { findPython, pythonCandidates, type FoundPython } from '../../src/findPython';
import { ServerEnvironment } from '../../src/managedServer';
import {
  bundledWheel,
  currentEnv,
  envDir,
  envPython,
  handCommand,
  managedEnvironment,
  markStarted,
  setUp,
  type BundledWheel,
  type Layout,
} from '../../src/serverSetup';
import { commandLine, isProblem, lastLines, PipSteps, type SetupProblem } from '../../src/setupProblem';
import { deferred, tick } from './fakes';
import { Machine, OFFLINE_LINES, PIP_LINES } from './machine';

const PY312 = { version: [3, 12, 4], executable: '/usr/bin/python3.12' };
const FOUND: FoundPython = { command: 'python3', args: [], label: 'python3 on PATH', version: '3.12.4', executable: '/usr/bin/python3.12' };

function temp(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** An extension folder whose server-wheel/ holds a wheel with `content`. */
function extensionWith(content: string, version = '0.1.0'): { path: string; wheel: BundledWheel } {
  const path = temp('kb-ext-');
  mkdirSync(join(path, 'server-wheel'));
  writeFileSync(join(path, 'server-wheel', `kb_lsp-${version}-py3-none-any.whl`), content);
  const wheel = bundledWheel(join(path, 'server-wheel'));
  assert.ok(wheel);
  return { path, wheel };
}

function hooks(signal?: AbortSignal): { steps: string[]; logs: string[]; step(m: string): void; log(l: string): void; signal?: AbortSignal } {
  const steps: string[] = [];
  const logs: string[] = [];
  return { steps, logs, step: (m) => steps.push(m), log: (l) => logs.push(l), signal };
}

function problem(value: string | SetupProblem): SetupProblem {
  assert.ok(isProblem(value), `expected a problem, got ${JSON.stringify(value)}`);
  return value;
}

describe('running programs (the real Exec)', () => {
  it('gives every line of stdout and stderr as it comes, and the exit code', async () => {
    const seen: string[] = [];
    const script = "process.stdout.write('one\\ntw'); setTimeout(() => { process.stdout.write('o\\n'); process.stderr.write('three'); process.exit(3); }, 10);";
    const result = await nodeExec(process.execPath, ['-e', script], { onLine: (line) => seen.push(line) });
    assert.equal(result.code, 3);
    assert.deepEqual([...result.lines].sort(), ['one', 'three', 'two']);
    assert.deepEqual(seen, result.lines);
  });

  it('a program that is not there is ENOENT, not a throw', async () => {
    const result = await nodeExec(join(temp('kb-none-'), 'python3'), ['-V']);
    assert.equal(result.code, null);
    assert.equal(result.error?.code, 'ENOENT');
  });

  it('aborting kills the program', async () => {
    const abort = new AbortController();
    const script = "console.log('started'); setInterval(() => undefined, 1000);";
    const result = await nodeExec(process.execPath, ['-e', script], { signal: abort.signal, onLine: () => abort.abort() });
    assert.equal(result.aborted, true);
    assert.notEqual(result.code, 0);
  });
});

describe('finding Python', () => {
  it("tries the Python extension's interpreter, python3, python, and py -3 on Windows only", () => {
    assert.deepEqual(pythonCandidates('/envs/a/bin/python', false).map((c) => [c.command, ...c.args].join(' ')), ['/envs/a/bin/python', 'python3', 'python']);
    assert.deepEqual(pythonCandidates(undefined, true).map((c) => [c.command, ...c.args].join(' ')), ['python3', 'python', 'py -3']);
  });

  it('takes the first that is 3.11 or newer and can make a virtual environment', async () => {
    const machine = new Machine();
    machine.pythons.set('python3', { version: [3, 10, 12], executable: '/usr/bin/python3.10' });
    machine.pythons.set('python', PY312);
    const logs: string[] = [];
    const found = await findPython(pythonCandidates('/gone/bin/python', false), machine.exec, (l) => logs.push(l));
    assert.ok(!isProblem(found));
    assert.deepEqual([found.command, found.version, found.executable], ['python', '3.12.4', '/usr/bin/python3.12']);
    assert.match(logs.join('\n'), /no Python at the Python extension's interpreter \(spawn \/gone\/bin\/python ENOENT\)/);
    assert.match(logs.join('\n'), /Python 3\.10\.12 at \/usr\/bin\/python3\.10 \(python3 on PATH\)/);
  });

  it('says which were tried when there is none, which is too old, and what brings venv', async () => {
    const machine = new Machine();
    const none = problem(await findPython(pythonCandidates(undefined, false), machine.exec, () => undefined) as SetupProblem);
    assert.equal(none.kind, 'no-python');
    assert.equal(none.facts[0], 'No Python was found (tried python3 on PATH, python on PATH).');
    assert.match(none.facts.join(' '), /needs Python 3\.11 or newer/);
    machine.pythons.set('python3', { version: [3, 9, 2], executable: '/usr/bin/python3.9' });
    const old = problem(await findPython(pythonCandidates(undefined, false), machine.exec, () => undefined) as SetupProblem);
    assert.equal(old.kind, 'python-too-old');
    assert.equal(old.facts[0], 'Python 3.9.2 at /usr/bin/python3.9 (python3 on PATH): too old.');
    machine.pythons.set('python', { ...PY312, venv: false });
    const noVenv = problem(await findPython(pythonCandidates(undefined, false), machine.exec, () => undefined) as SetupProblem);
    assert.equal(noVenv.kind, 'no-venv');
    assert.equal(noVenv.command, 'sudo apt install python3.12-venv');
  });
});

describe('pip, in words', () => {
  it("says each step of a real pip run, with counts and sizes", () => {
    const steps = new PipSteps();
    assert.deepEqual(
      PIP_LINES.map((line) => steps.step(line)).filter(Boolean),
      [
        'Reading the bundled kb-lsp wheel',
        'Collecting pygls (1 packages so far)',
        'Downloading pygls 2.1.1 (68 kB)',
        'Collecting chromadb (2 packages so far)',
        'Downloading chromadb 1.5.9 (23.3 MB)',
        'Collecting onnxruntime (3 packages so far)',
        'Using cached onnxruntime 1.23.2',
        'Installing 4 packages',
        'Installed',
      ],
    );
  });

  it("quotes pip's ERROR lines, else its last ones, and quotes arguments for the shell", () => {
    assert.deepEqual(lastLines(OFFLINE_LINES), [OFFLINE_LINES[2], OFFLINE_LINES[3]]);
    assert.deepEqual(lastLines(['a', '', 'b', 'c', 'd']), ['b', 'c', 'd']);
    assert.equal(commandLine(['/usr/bin/python3', '-m', 'venv', "/home/o'neil/App Support/x"], false), "/usr/bin/python3 -m venv '/home/o'\\''neil/App Support/x'");
    assert.equal(commandLine(['C:\\Program Files\\Python\\python.exe', '-m', 'pip'], true), '& "C:\\Program Files\\Python\\python.exe" -m pip');
  });
});

describe('the server environment', () => {
  let layout: Layout;
  let machine: Machine;

  beforeEach(() => {
    layout = { root: join(temp('kb-storage-'), 'server'), windows: false };
    machine = new Machine();
  });

  it('is named by the bundled wheel: its version and the hash of its bytes', () => {
    const a = extensionWith('wheel bytes').wheel;
    const b = extensionWith('other bytes').wheel;
    assert.match(a.id, /^0\.1\.0-[0-9a-f]{12}$/);
    assert.notEqual(a.id, b.id);
    assert.equal(a.id, extensionWith('wheel bytes').wheel.id);
    assert.equal(bundledWheel(join(temp('kb-ext-'), 'server-wheel')), undefined);
  });

  it("is a venv with the wheel pip-installed and checked; pip's steps and log are reported", async () => {
    const { wheel } = extensionWith('w1');
    const h = hooks();
    assert.deepEqual(managedEnvironment(layout, wheel), { kind: 'none' });
    const made = await setUp(layout, wheel, FOUND, machine.exec, h);
    assert.equal(made, envPython(layout, wheel.id));
    const [venv, pip] = [machine.callsWith('venv')[0], machine.callsWith('pip')[0]];
    assert.deepEqual(venv?.args, ['-m', 'venv', envDir(layout, wheel.id)]);
    assert.equal(pip?.command, envPython(layout, wheel.id));
    assert.deepEqual(pip?.args.slice(0, 3), ['-m', 'pip', 'install']);
    assert.equal(pip?.args.at(-1), wheel.path, 'the bundled wheel, nothing else named');
    assert.equal(machine.callsWith('importlib.metadata').length, 1, 'the server imports once installed');
    assert.ok(h.steps.includes('Downloading chromadb 1.5.9 (23.3 MB)'), h.steps.join('\n'));
    assert.ok(PIP_LINES.every((line) => h.logs.includes(line)), 'the whole log');
    assert.deepEqual(managedEnvironment(layout, wheel), { kind: 'ready', id: wheel.id, python: made });
    assert.deepEqual(readdirSync(layout.root), [wheel.id], 'no lock left');
  });

  it("without a network: pip's last lines and the command to run by hand; nothing half made is kept", async () => {
    const { wheel } = extensionWith('w1');
    machine.pip = { lines: OFFLINE_LINES, code: 1 };
    const failed = problem(await setUp(layout, wheel, FOUND, machine.exec, hooks()));
    assert.equal(failed.kind, 'network');
    assert.match(failed.facts[0] ?? '', /could not download the server's Python packages from your package index/);
    assert.ok(failed.facts.includes('pip install: ERROR: No matching distribution found for pygls<3,>=2.0'), failed.facts.join('\n'));
    assert.equal(failed.command, handCommand(layout, wheel, FOUND));
    assert.equal(failed.command, `python3 -m venv ${envDir(layout, wheel.id)} && ${envPython(layout, wheel.id)} -m pip install ${wheel.path}`);
    assert.equal(existsSync(envDir(layout, wheel.id)), false);
    assert.deepEqual(managedEnvironment(layout, wheel), { kind: 'none' });
    // The user runs the command by hand (with a network); Retry then uses what it made.
    await machine.exec('python3', ['-m', 'venv', envDir(layout, wheel.id)]);
    machine.pip = { lines: PIP_LINES, code: 0 };
    await machine.exec(envPython(layout, wheel.id), ['-m', 'pip', 'install', wheel.path]);
    machine.pip = { lines: OFFLINE_LINES, code: 1 };
    const pipsBefore = machine.callsWith('pip').length;
    assert.equal(await setUp(layout, wheel, FOUND, machine.exec, hooks()), envPython(layout, wheel.id));
    assert.equal(machine.callsWith('pip').length, pipsBefore, 'not installed again');
  });

  it('another pip failure is said as one, with its ERROR lines', async () => {
    const { wheel } = extensionWith('w1');
    machine.pip = { lines: ['Collecting x', 'ERROR: Failed building wheel for google-re2', 'error: command gcc failed'], code: 1 };
    const failed = problem(await setUp(layout, wheel, FOUND, machine.exec, hooks()));
    assert.equal(failed.kind, 'pip-failed');
    assert.deepEqual(failed.facts.slice(0, 3), ['pip install failed.', 'pip install: ERROR: Failed building wheel for google-re2', 'pip install: error: command gcc failed']);
  });

  it('a full disk is said before anything runs, and when pip runs out of space', async () => {
    const { wheel } = extensionWith('w1');
    const full = problem(await setUp(layout, wheel, FOUND, machine.exec, { ...hooks(), freeBytes: () => 200_000_000 }));
    assert.equal(full.kind, 'disk-full');
    assert.equal(full.facts[0], `Setting up the server needs about 1.2 GB free in ${layout.root}; 0.2 GB is free.`);
    assert.equal(machine.callsWith('venv').length, 0);
    machine.pip = { lines: ['ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device'], code: 1 };
    assert.equal(problem(await setUp(layout, wheel, FOUND, machine.exec, hooks())).kind, 'disk-full');
  });

  it('cancelling stops pip and leaves nothing behind', async () => {
    const { wheel } = extensionWith('w1');
    const abort = new AbortController();
    machine.pip = { ...machine.pip, hold: true };
    machine.onPip = () => abort.abort();
    const cancelled = problem(await setUp(layout, wheel, FOUND, machine.exec, hooks(abort.signal)));
    assert.equal(cancelled.kind, 'cancelled');
    assert.deepEqual(readdirSync(layout.root), [], 'no environment, no lock');
  });

  it('a newer wheel goes beside the old environment and becomes current only once its server started', async () => {
    const first = extensionWith('w1').wheel;
    await setUp(layout, first, FOUND, machine.exec, hooks());
    markStarted(layout, first.id);
    const second = extensionWith('w2').wheel;
    assert.deepEqual(managedEnvironment(layout, second), { kind: 'stale', id: first.id, python: envPython(layout, first.id) });
    await setUp(layout, second, FOUND, machine.exec, hooks());
    assert.equal(managedEnvironment(layout, second).kind, 'ready');
    assert.equal(currentEnv(layout), first.id, 'set up, not yet started');
    assert.equal(managedEnvironment(layout, second, new Set([second.id])).kind, 'stale', 'its server did not start: back to the old one');
    markStarted(layout, second.id);
    assert.equal(currentEnv(layout), second.id);
    assert.ok(existsSync(envDir(layout, first.id)), 'the one before is kept');
    const third = extensionWith('w3').wheel;
    await setUp(layout, third, FOUND, machine.exec, hooks());
    markStarted(layout, third.id);
    assert.deepEqual(readdirSync(layout.root).sort(), [second.id, third.id, 'current.json'].sort());
  });

  it('one window sets it up at a time: a live holder is waited for, a dead one is not', async () => {
    const { wheel } = extensionWith('w1');
    mkdirSync(layout.root, { recursive: true });
    const lock = join(layout.root, `${wheel.id}.lock`);
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(lock, String(dead));
    const h = hooks();
    assert.equal(await setUp(layout, wheel, FOUND, machine.exec, h), envPython(layout, wheel.id));
    assert.ok(!h.steps.some((s) => s.startsWith('Waiting')), h.steps.join('\n'));

    const other = extensionWith('w2').wheel;
    const otherLock = join(layout.root, `${other.id}.lock`);
    writeFileSync(otherLock, String(process.pid)); // alive: this very process
    const waiting = deferred<void>();
    const made = setUp(layout, other, FOUND, machine.exec, {
      ...hooks(),
      step: (m) => (m.startsWith('Waiting for another window') ? waiting.resolve() : undefined),
    });
    await waiting.promise;
    assert.equal(machine.callsWith(envDir(layout, other.id)).length, 0, 'nothing done while it waits');
    rmSync(otherLock); // the other window is done with it
    assert.equal(await made, envPython(layout, other.id));
  });
});

describe('the extension sets up its server (managedServer.ts)', () => {
  let storage: string;
  let machine: Machine;
  const output = { lines: [] as string[], shown: 0, appendLine(line: string) { this.lines.push(line); }, show() { this.shown++; } };
  const noPythonExtension = (): Promise<undefined> => Promise.resolve(undefined);

  function environment(extensionPath: string): ServerEnvironment {
    return new ServerEnvironment({ extensionPath, globalStorageUri: vscode.Uri.file(storage) as never }, output, noPythonExtension, machine.exec, false);
  }

  beforeEach(() => {
    vscode.reset();
    storage = temp('kb-global-');
    machine = new Machine();
    machine.pythons.set('python3', PY312);
    output.lines.length = 0;
  });

  it('kb.server.python wins; without a bundled wheel the order is the old one', async () => {
    const env = environment(extensionWith('w1').path);
    assert.deepEqual(await env.choose(' /my/venv/bin/python '), { python: { command: '/my/venv/bin/python', source: 'setting' } });
    assert.deepEqual(await environment(temp('kb-ext-')).choose(''), { python: { command: 'python3', source: 'default' } });
    assert.equal(machine.calls.length, 0);
  });

  it("first use: one cancellable progress notification with pip's steps, the log in the output, then the server's environment", async () => {
    const { path, wheel } = extensionWith('w1');
    const env = environment(path);
    const chosen = await env.choose('');
    const python = envPython(env.layout, wheel.id);
    assert.deepEqual(chosen, { python: { command: python, source: 'managed', env: wheel.id } });
    assert.equal(vscode.calls.progress.length, 1);
    const [progress] = vscode.calls.progress;
    assert.deepEqual(progress?.options, { location: vscode.ProgressLocation.Notification, title: 'KB: Setting up the kb-lsp server (first use)', cancellable: true });
    const messages = progress?.reports.map((r) => r.message) ?? [];
    assert.deepEqual(messages.slice(0, 3), ['Looking for Python 3.11 or newer', 'Making a virtual environment with Python 3.12.4', 'Installing the server and its Python packages']);
    assert.ok(messages.includes('Collecting chromadb (2 packages so far)'), messages.join('\n'));
    assert.ok(PIP_LINES.every((line) => output.lines.includes(line)));
    assert.deepEqual(await env.choose(''), chosen, 'set up once');
    assert.equal(vscode.calls.progress.length, 1);
    assert.equal(env.kbCommand({ command: python, source: 'managed' }), join(env.layout.root, wheel.id, 'bin', 'kb'));
    assert.deepEqual(await env.launchPython(''), { command: python, source: 'managed', env: wheel.id });
  });

  it('no Python: an error with what fixes it; Retry starts the server again', async () => {
    machine.pythons.clear();
    const env = environment(extensionWith('w1').path);
    vscode.responses.message.push('Retry');
    const chosen = await env.choose('');
    assert.ok('problem' in chosen);
    assert.equal(chosen.problem.kind, 'no-python');
    await tick();
    assert.deepEqual(vscode.calls.actions[0]?.items, ['Get Python', 'Open Settings', 'Retry']);
    assert.match(vscode.calls.actions[0]?.text ?? '', /^kb-lsp: No Python was found \(tried python3 on PATH, python on PATH\)\. The server needs Python 3\.11/);
    assert.ok(vscode.calls.commands.some((c) => c.id === 'kb.restartServer'));
  });

  it('pip failing: Copy Command copies what to run by hand', async () => {
    machine.pip = { lines: OFFLINE_LINES, code: 1 };
    const env = environment(extensionWith('w1').path);
    vscode.responses.message.push('Copy Command');
    const chosen = await env.choose('');
    assert.ok('problem' in chosen && chosen.problem.kind === 'network');
    await tick();
    assert.deepEqual(vscode.calls.actions[0]?.items, ['Copy Command', 'Show Log', 'Retry']);
    assert.deepEqual(vscode.calls.clipboard, [chosen.problem.command]);
  });

  it('Cancel on the notification stops the set-up', async () => {
    machine.pip = { ...machine.pip, hold: true };
    machine.onPip = () => vscode.calls.progress[0]?.cancel.cancel();
    const chosen = await environment(extensionWith('w1').path).choose('');
    assert.ok('problem' in chosen && chosen.problem.kind === 'cancelled');
    assert.deepEqual(vscode.calls.actions[0]?.items, ['Retry']);
  });

  it('an update: the server runs from the old environment while the new one is set up, then moves over', async () => {
    const old = environment(extensionWith('w1').path);
    const first = await old.choose('');
    assert.ok('python' in first);
    old.started(first.python);
    const { path, wheel } = extensionWith('w2');
    const updated = environment(path);
    const ready = deferred<void>();
    updated.onDidChange(() => ready.resolve());
    assert.deepEqual(await updated.choose(''), first, 'at once, from the old one');
    await ready.promise;
    assert.equal(vscode.calls.progress.at(-1)?.options.title, 'KB: Updating the kb-lsp server to 0.1.0');
    const second = await updated.choose('');
    assert.ok('python' in second && second.python.env === wheel.id);
    // Its server does not start: back to the old one, once.
    const back = deferred<void>();
    updated.onDidChange(() => back.resolve());
    assert.equal(updated.didNotStart(second.python), true);
    await back.promise;
    assert.deepEqual(await updated.choose(''), first);
    assert.equal(updated.didNotStart(first.python), false, 'nothing older to go back to');
  });
});

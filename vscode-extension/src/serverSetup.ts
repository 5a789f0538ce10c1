/**
 * The server's own environment: a virtual environment in the extension's global storage
 * with the kb-lsp wheel the .vsix carries (`server-wheel/`, built by `npm run package`),
 * its dependencies from the user's package index (pip's own configuration: nothing of
 * ours downloads anything else).
 *
 * Layout, under `root` (`<globalStorage>/server`):
 *
 *   <version>-<sha>/             one environment per bundled wheel (a venv)
 *   <version>-<sha>/kb-lsp-ready.json   written last, once the server imports in it
 *   <version>-<sha>.lock         held (with the holder's pid) while one window sets it up
 *   current.json                 the environment the server last started from
 *
 * A newer wheel gets a new folder beside the old one; `current.json` moves to it only once
 * the server has started from it (`markStarted`), and the one before is kept until then.
 * In a remote window (SSH, WSL, containers) the extension runs on the remote side
 * (`extensionKind: ["workspace"]`), so all of this happens there.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Exec } from './exec';
import type { FoundPython } from './findPython';
import { heldBy, releaseLock, takeLock } from './setupLock';
import { commandLine, DISK_FULL, PipSteps, stepFailed, type SetupProblem } from './setupProblem';

/** What a finished environment takes (530 MB measured: chromadb, onnxruntime, numpy…),
 * and room for pip to unpack the wheels beside it. */
export const NEEDED_BYTES = 1_200_000_000;
const READY = 'kb-lsp-ready.json';
const CURRENT = 'current.json';

export interface BundledWheel {
  path: string;
  version: string;
  /** `<version>-<first 12 of its sha256>`: the environment it makes. */
  id: string;
}

/** The kb-lsp wheel in `dir` (the extension's `server-wheel/`), if the .vsix carries one. */
export function bundledWheel(dir: string): BundledWheel | undefined {
  const names = existsSync(dir) ? readdirSync(dir).filter((name) => /^kb_lsp-[^-]+-.*\.whl$/.test(name)) : [];
  const name = names.sort().pop();
  if (!name) {
    return undefined;
  }
  const path = join(dir, name);
  const version = name.split('-')[1] ?? '';
  const sha = createHash('sha256').update(readFileSync(path)).digest('hex');
  return { path, version, id: `${version}-${sha.slice(0, 12)}` };
}

export interface Layout {
  root: string;
  windows: boolean;
}

export function envDir(layout: Layout, id: string): string {
  return join(layout.root, id);
}

export function envPython(layout: Layout, id: string): string {
  const dir = envDir(layout, id);
  return layout.windows ? join(dir, 'Scripts', 'python.exe') : join(dir, 'bin', 'python');
}

/** The `kb` command beside an interpreter (an environment's `bin/` or `Scripts\`). */
export function kbBeside(python: string, windows: boolean): string {
  return join(dirname(python), windows ? 'kb.exe' : 'kb');
}

function readJson(path: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function isReady(layout: Layout, id: string): boolean {
  return readJson(join(envDir(layout, id), READY))?.id === id && existsSync(envPython(layout, id));
}

/** The environment the server last started from, if it is still there. */
export function currentEnv(layout: Layout): string | undefined {
  const id = readJson(join(layout.root, CURRENT))?.id;
  return typeof id === 'string' && isReady(layout, id) ? id : undefined;
}

export type Managed =
  /** The environment of the bundled wheel is set up. */
  | { kind: 'ready'; id: string; python: string }
  /** Only an older one is: use it while the bundled one is set up. */
  | { kind: 'stale'; id: string; python: string }
  | { kind: 'none' };

/** Which environment to run the server from; `skip`: ones whose server did not start. */
export function managedEnvironment(layout: Layout, wheel: BundledWheel, skip: ReadonlySet<string> = new Set()): Managed {
  if (isReady(layout, wheel.id) && !skip.has(wheel.id)) {
    return { kind: 'ready', id: wheel.id, python: envPython(layout, wheel.id) };
  }
  const current = currentEnv(layout);
  if (current && current !== wheel.id && !skip.has(current)) {
    return { kind: 'stale', id: current, python: envPython(layout, current) };
  }
  return { kind: 'none' };
}

/**
 * The server started from environment `id`: it becomes the current one, the one before it
 * is kept (a window not yet reloaded may still run it) and any older ones are removed.
 */
export function markStarted(layout: Layout, id: string): void {
  const previous = currentEnv(layout);
  if (previous === id) {
    return;
  }
  writeFileSync(join(layout.root, CURRENT), JSON.stringify({ id }));
  for (const name of readdirSync(layout.root)) {
    const old = name !== id && name !== previous && existsSync(join(layout.root, name, READY));
    if (old && !heldBy(join(layout.root, `${name}.lock`))) {
      rmSync(join(layout.root, name), { recursive: true, force: true });
    }
  }
}

export interface SetupHooks {
  /** A new step, in a few words (the progress notification's message). */
  step(message: string): void;
  /** Every line of every program, for the output channel. */
  log(line: string): void;
  signal?: AbortSignal;
  /** Free bytes where the environment goes (a test's stand-in for a full disk). */
  freeBytes?(dir: string): number;
}

function freeBytes(dir: string): number {
  const stats = statfsSync(dir);
  return stats.bavail * stats.bsize;
}

/** Prints the installed kb-lsp's version once the server's entry point imports. */
const VERIFY = "import importlib.metadata as m, kb_lsp.__main__; print(m.version('kb-lsp'))";

/** The commands `setUp` runs, for a person to run by hand in a terminal. */
export function handCommand(layout: Layout, wheel: BundledWheel, python: FoundPython): string {
  const venv = commandLine([python.command, ...python.args, '-m', 'venv', envDir(layout, wheel.id)], layout.windows);
  const pip = commandLine([envPython(layout, wheel.id), '-m', 'pip', 'install', wheel.path], layout.windows);
  return `${venv} ${layout.windows ? ';' : '&&'} ${pip}`;
}

/** Whether environment `id` holds a server that imports with the wheel's version. */
async function verify(layout: Layout, wheel: BundledWheel, exec: Exec, hooks: SetupHooks): Promise<boolean> {
  if (!existsSync(envPython(layout, wheel.id))) {
    return false;
  }
  const result = await exec(envPython(layout, wheel.id), ['-c', VERIFY]);
  result.lines.forEach((line) => hooks.log(line));
  return result.code === 0 && result.lines.some((line) => line.trim() === wheel.version);
}

/**
 * Sets up the environment of `wheel` with `python`: a venv, then `pip install` of the wheel,
 * then a check that the server imports. Resolves to its interpreter, or to why not (the
 * partial folder removed). Another window setting up the same one is waited for.
 */
export async function setUp(
  layout: Layout,
  wheel: BundledWheel,
  python: FoundPython,
  exec: Exec,
  hooks: SetupHooks,
): Promise<string | SetupProblem> {
  mkdirSync(layout.root, { recursive: true });
  const lock = join(layout.root, `${wheel.id}.lock`);
  if (!(await takeLock(lock, hooks))) {
    return cancelled();
  }
  try {
    if (isReady(layout, wheel.id)) {
      return envPython(layout, wheel.id); // another window finished it while we waited
    }
    return await build(layout, wheel, python, exec, hooks);
  } finally {
    releaseLock(lock);
  }
}

function cancelled(): SetupProblem {
  return { kind: 'cancelled', facts: ['Setting up the kb-lsp server was cancelled.', 'Retry sets it up.'] };
}

async function build(layout: Layout, wheel: BundledWheel, python: FoundPython, exec: Exec, hooks: SetupHooks): Promise<string | SetupProblem> {
  const dir = envDir(layout, wheel.id);
  const by = handCommand(layout, wheel, python);
  if (await verify(layout, wheel, exec, hooks)) {
    hooks.log(`kb-lsp: ${dir} already holds kb-lsp ${wheel.version} (set up by hand): using it`);
  } else {
    const problem = (await makeEnv(layout, wheel, python, exec, hooks)) ?? (await pipInstall(layout, wheel, exec, hooks, by));
    if (problem) {
      rmSync(dir, { recursive: true, force: true });
      return problem;
    }
    hooks.step('Checking the server');
    if (!(await verify(layout, wheel, exec, hooks))) {
      rmSync(dir, { recursive: true, force: true });
      return stepFailed('the installed server', ['ERROR: kb-lsp was installed but its server does not import (the log says why).'], by);
    }
  }
  writeFileSync(join(dir, READY), JSON.stringify({ id: wheel.id, version: wheel.version, python: python.executable }));
  return envPython(layout, wheel.id);
}

async function makeEnv(layout: Layout, wheel: BundledWheel, python: FoundPython, exec: Exec, hooks: SetupHooks): Promise<SetupProblem | undefined> {
  const dir = envDir(layout, wheel.id);
  const free = (hooks.freeBytes ?? freeBytes)(layout.root);
  if (free < NEEDED_BYTES) {
    const gb = (bytes: number): string => `${(bytes / 1e9).toFixed(1)} GB`;
    return {
      kind: 'disk-full',
      facts: [`Setting up the server needs about ${gb(NEEDED_BYTES)} free in ${layout.root}; ${gb(free)} is free.`, 'Free some space, then Retry.'],
    };
  }
  rmSync(dir, { recursive: true, force: true }); // what a cancelled or failed try left
  hooks.step(`Making a virtual environment with Python ${python.version}`);
  const args = [...python.args, '-m', 'venv', dir];
  hooks.log(`kb-lsp: ${commandLine([python.command, ...args], layout.windows)}`);
  const result = await exec(python.command, args, { onLine: (line) => hooks.log(line), signal: hooks.signal });
  if (result.aborted) {
    return cancelled();
  }
  if (result.code !== 0) {
    const lines = result.error ? [...result.lines, result.error.message] : result.lines;
    const problem = stepFailed('python -m venv', lines, handCommand(layout, wheel, python));
    return lines.some((line) => DISK_FULL.test(line)) ? problem : { ...problem, kind: 'no-venv' };
  }
  return undefined;
}

async function pipInstall(layout: Layout, wheel: BundledWheel, exec: Exec, hooks: SetupHooks, by: string): Promise<SetupProblem | undefined> {
  const steps = new PipSteps();
  const args = ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', wheel.path];
  hooks.log(`kb-lsp: ${commandLine([envPython(layout, wheel.id), ...args], layout.windows)}`);
  hooks.step('Installing the server and its Python packages');
  const env = { ...process.env, PIP_NO_INPUT: '1', PYTHONUNBUFFERED: '1' };
  const result = await exec(envPython(layout, wheel.id), args, {
    env,
    signal: hooks.signal,
    onLine: (line) => {
      hooks.log(line);
      const step = steps.step(line);
      if (step) {
        hooks.step(step);
      }
    },
  });
  if (result.aborted) {
    return cancelled();
  }
  return result.code === 0 ? undefined : stepFailed('pip install', result.lines, by, result.error?.message);
}

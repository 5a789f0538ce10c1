/** Where the Python server lives, and a copy of the sample workspace to run it on. */
import { cpSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './browser';

/** `KB_PYTHON`, else the repository's `.venv`, else `python3`. */
export function serverPython(): string {
  if (process.env.KB_PYTHON) {
    return process.env.KB_PYTHON;
  }
  const venv = join(REPO_ROOT, '.venv', 'bin', 'python');
  return existsSync(venv) ? venv : 'python3';
}

/** A fresh copy of examples/workspace (tests may change files). */
export function sampleWorkspace(prefix = 'kb-ws-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const ws = join(dir, 'workspace');
  cpSync(join(REPO_ROOT, 'examples', 'workspace'), ws, { recursive: true });
  return ws;
}

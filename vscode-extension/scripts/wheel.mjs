// Builds the kb-lsp wheel the .vsix carries (server-wheel/, `npm run package`): the wheel
// of this repository only, never its dependencies — pip installs those from the user's own
// package index when the extension sets up its server (src/serverSetup.ts).
//
// Built from a copy of what the wheel is made of (pyproject.toml, README.md, server/), so a
// stale build/ folder in the repository can never put a deleted module into it. The
// wheel's file dates are the last commit's (SOURCE_DATE_EPOCH): the same sources give the
// same bytes, so the same environment id, and an unchanged server is not set up again.
//
// The interpreter: KB_PYTHON, else the repository's .venv, else python3 (any Python 3.11+
// with pip; setuptools comes from the package index, as pip's build isolation does).
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const extension = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const root = resolve(extension, '..');
const out = join(extension, 'server-wheel');
const venv = join(root, '.venv', process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
const python = process.env.KB_PYTHON || (existsSync(venv) ? venv : 'python3');

function lastCommitTime() {
  try {
    return execFileSync('git', ['-C', root, 'log', '-1', '--format=%ct'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined; // not a git checkout: the wheel gets today's dates
  }
}

const source = mkdtempSync(join(tmpdir(), 'kb-lsp-wheel-'));
try {
  for (const part of ['pyproject.toml', 'README.md', 'server']) {
    cpSync(join(root, part), join(source, part), {
      recursive: true,
      filter: (path) => !/(__pycache__|\.egg-info|\.pyc$)/.test(path),
    });
  }
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const epoch = lastCommitTime();
  const env = { ...process.env, ...(epoch ? { SOURCE_DATE_EPOCH: epoch } : {}) };
  const args = ['-m', 'pip', 'wheel', '--no-deps', '--disable-pip-version-check', '--quiet', '--wheel-dir', out, source];
  const built = spawnSync(python, args, { stdio: 'inherit', env });
  if (built.status !== 0) {
    console.error(`building the kb-lsp wheel failed: ${python} ${args.join(' ')}`);
    process.exit(1);
  }
} finally {
  rmSync(source, { recursive: true, force: true });
}
const wheels = readdirSync(out).filter((name) => /^kb_lsp-.*\.whl$/.test(name));
if (wheels.length !== 1) {
  console.error(`expected one kb_lsp wheel in ${out}, found: ${wheels.join(', ') || 'none'}`);
  process.exit(1);
}
console.log(`server wheel: ${join('server-wheel', wheels[0])}`);

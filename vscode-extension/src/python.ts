/**
 * Which Python runs the server when the .vsix carries no wheel to set up (a build from
 * source; `managedServer.ts` otherwise): `kb.server.python`, else the Python extension's
 * active interpreter, else `python3`. And what to tell the user when it cannot start.
 */

import { commandLine } from './setupProblem';

/** The parts of the ms-python extension API we use (both the new and the old shape). */
export interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: unknown): { path: string } | undefined;
    resolveEnvironment(
      env: { path: string } | string,
    ): Promise<{ executable: { uri?: { fsPath: string } } } | undefined>;
  };
  settings?: {
    getExecutionDetails(resource?: unknown): { execCommand: string[] | undefined };
  };
}

export const FALLBACK_PYTHON = 'python3';

export interface PythonChoice {
  command: string;
  /** `managed`: the extension's own environment (`serverSetup.ts`). */
  source: 'setting' | 'python extension' | 'default' | 'managed';
  /** The managed environment's id (`<version>-<sha>`), for `managed`. */
  env?: string;
}

/** The interpreter from the Python extension's API, or undefined. Never throws. */
export async function interpreterFromApi(
  api: PythonExtensionApi | undefined,
  resource?: unknown,
): Promise<string | undefined> {
  if (!api) {
    return undefined;
  }
  try {
    const active = api.environments?.getActiveEnvironmentPath(resource);
    if (active) {
      const resolved = await api.environments?.resolveEnvironment(active);
      const exe = resolved?.executable.uri?.fsPath;
      if (exe) {
        return exe;
      }
    }
  } catch {
    // fall through to the older API
  }
  try {
    const exec = api.settings?.getExecutionDetails(resource).execCommand;
    if (exec && exec.length > 0 && exec[0]) {
      return exec[0];
    }
  } catch {
    // no interpreter from the extension
  }
  return undefined;
}

export async function choosePython(
  setting: unknown,
  api: () => Promise<PythonExtensionApi | undefined>,
  resource?: unknown,
): Promise<PythonChoice> {
  if (typeof setting === 'string' && setting.trim() !== '') {
    return { command: setting.trim(), source: 'setting' };
  }
  const fromApi = await interpreterFromApi(await api().catch(() => undefined), resource);
  if (fromApi) {
    return { command: fromApi, source: 'python extension' };
  }
  return { command: FALLBACK_PYTHON, source: 'default' };
}

/** The result of `python -c 'import kb_lsp'`, as the preflight check sees it. */
export interface PreflightResult {
  error?: { code?: string | number | null; message: string };
  stderr: string;
}

export type LaunchProblem = 'python-missing' | 'package-missing' | 'other';

export interface LaunchDiagnosis {
  problem: LaunchProblem;
  /** One sentence per fact, each something a person can check or do. */
  facts: string[];
  /** All of `facts`, for the log and the notification. */
  message: string;
  /** What installs the server, to copy (the README's way: from a clone of the repository). */
  install?: string;
}

/**
 * How the README installs the server: from a clone of the kb-lsp repository, into the
 * Quick start's virtual environment. Never `pip install kb-lsp`: that name on PyPI may be
 * someone else's package.
 */
export const INSTALL_COMMAND = 'python3 -m venv .venv && .venv/bin/pip install .';

/**
 * Turn a failed preflight into facts a person can act on; undefined when it ran. `wheel`:
 * the kb-lsp wheel the .vsix carries, when it carries one — then the fix for a
 * `kb.server.python` without kb-lsp is to install that wheel there, or to clear the setting
 * (the extension sets up its own server).
 */
export function diagnoseLaunch(python: PythonChoice, result: PreflightResult, remote = false, wheel?: string): LaunchDiagnosis | undefined {
  if (!result.error) {
    return undefined;
  }
  const diagnosis = diagnose(python, result.error, result.stderr, wheel);
  if (remote && (python.source === 'python extension' || python.source === 'default')) {
    // The usual cause in a remote window: kb.server.python set in the User settings only.
    diagnosis.facts.push('In a remote window, kb.server.python belongs in the Remote settings.');
  }
  diagnosis.message = `kb-lsp: ${diagnosis.facts.join(' ')}`;
  return diagnosis;
}

/** How to fix a missing Python or package: from a clone (no wheel), or with the wheel. */
function fixes(python: PythonChoice, wheel: string | undefined): { need: string; setIt: string; install: string } {
  if (wheel === undefined) {
    return {
      need: 'The server needs Python 3.11 or newer with kb-lsp installed, from a clone of the kb-lsp repository.',
      setIt: 'Set kb.server.python to the .venv/bin/python of that clone.',
      install: INSTALL_COMMAND,
    };
  }
  return {
    need: 'The command below installs the kb-lsp server this extension carries there.',
    setIt: 'Or clear kb.server.python, and the extension sets up a server of its own.',
    install: commandLine([python.command, '-m', 'pip', 'install', wheel], process.platform === 'win32'),
  };
}

function diagnose(python: PythonChoice, error: NonNullable<PreflightResult['error']>, stderr: string, wheel?: string): LaunchDiagnosis {
  const where = {
    setting: `kb.server.python (${python.command})`,
    'python extension': `the Python extension's interpreter (${python.command})`,
    default: `${python.command}, the default (kb.server.python is not set)`,
    managed: `the extension's own environment (${python.command})`,
  }[python.source];
  const fix = fixes(python, wheel);
  if (error.code === 'ENOENT' || error.code === 'EACCES') {
    return {
      problem: 'python-missing',
      facts: [
        `No Python was found at ${where}.`,
        wheel === undefined ? fix.need : 'The server needs Python 3.11 or newer with kb-lsp installed.',
        fix.setIt,
      ],
      message: '',
      install: wheel === undefined ? fix.install : undefined,
    };
  }
  if (/No module named ['"]?kb_lsp/.test(stderr)) {
    const install = wheel === undefined ? 'Install it from a clone of the kb-lsp repository, in that folder.' : fix.need;
    return {
      problem: 'package-missing',
      facts: [`The kb-lsp server is not installed in ${where}.`, install, fix.setIt],
      message: '',
      install: fix.install,
    };
  }
  const detail = (stderr.trim().split('\n').pop() ?? error.message).trim().replace(/\.?$/, '.');
  return { problem: 'other', facts: [`The server cannot start with ${where}.`, detail], message: '' };
}

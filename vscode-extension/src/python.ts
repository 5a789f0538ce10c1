/**
 * Which Python runs the server: `kb.server.python`, else the Python extension's active
 * interpreter, else `python3`. And what to tell the user when it cannot start.
 */

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
  source: 'setting' | 'python extension' | 'default';
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
  message: string;
}

/** Turn a failed preflight into one message a person can act on; undefined when it ran. */
export function diagnoseLaunch(python: PythonChoice, result: PreflightResult, remote = false): LaunchDiagnosis | undefined {
  if (!result.error) {
    return undefined;
  }
  const diagnosis = diagnose(python, result.error, result.stderr);
  if (remote && python.source !== 'setting') {
    // The usual cause in a remote window: kb.server.python set in the User settings only.
    diagnosis.message += ' In a remote window, set kb.server.python in the Remote settings.';
  }
  return diagnosis;
}

function diagnose(python: PythonChoice, error: NonNullable<PreflightResult['error']>, stderr: string): LaunchDiagnosis {
  const where =
    python.source === 'setting'
      ? `kb.server.python = "${python.command}"`
      : python.source === 'python extension'
        ? `the Python extension's interpreter (${python.command})`
        : `"${python.command}" (set kb.server.python to choose another)`;
  if (error.code === 'ENOENT' || error.code === 'EACCES') {
    return {
      problem: 'python-missing',
      message: `kb-lsp: Python was not found: ${where}. Install Python 3.11+ or set kb.server.python.`,
    };
  }
  if (/No module named ['"]?kb_lsp/.test(stderr)) {
    return {
      problem: 'package-missing',
      message: `kb-lsp: the Python package kb-lsp is not installed for ${where}. Run: ${python.command} -m pip install kb-lsp`,
    };
  }
  const detail = (stderr.trim().split('\n').pop() ?? error.message).trim();
  return { problem: 'other', message: `kb-lsp: the server cannot start with ${where}: ${detail}` };
}

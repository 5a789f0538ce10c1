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
  /** `kept`: the setting's earlier value, which VS Code stopped applying (see `keptInterpreter`). */
  source: 'setting' | 'kept' | 'python extension' | 'default';
}

/** Where `kb.server.python` is set, as `WorkspaceConfiguration.inspect` reports it. VS Code
 * (1.100) also reports `globalLocalValue` (User settings of the machine the window runs on)
 * and `globalRemoteValue` (Remote settings) in a remote window; the typed API omits them. */
export interface InterpreterLevels {
  globalValue?: unknown;
  globalLocalValue?: unknown;
  globalRemoteValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/**
 * In a remote window (SSH, WSL, containers, code-server) VS Code reads machine-scoped
 * settings such as `kb.server.python` from the Remote settings and ignores the User
 * settings' value — at once, or (code-server) from the first time it reloads the User
 * settings, e.g. after any change in the Settings editor. The User value that is (or
 * will be) ignored, or undefined when the setting is where VS Code keeps applying it.
 */
export function remoteIgnoredUserValue(
  levels: InterpreterLevels | undefined,
  remoteName: string | undefined,
  workspaceApplies = true,
): string | undefined {
  if (!remoteName || !levels) {
    return undefined;
  }
  const workspace = workspaceApplies ? [levels.workspaceValue, levels.workspaceFolderValue] : [];
  const elsewhere = [levels.globalRemoteValue, ...workspace].some((v) => text(v));
  return elsewhere ? undefined : text(levels.globalLocalValue);
}

/**
 * A restart must not lose the interpreter: when `kb.server.python` reads empty now but the
 * server last started with it and the user did not change the setting since (VS Code
 * dropped the User value of a remote window), keep that interpreter.
 */
export function keptInterpreter(setting: unknown, previous: PythonChoice | undefined, changedByUser: boolean): string | undefined {
  if (text(setting) || changedByUser || !previous || (previous.source !== 'setting' && previous.source !== 'kept')) {
    return undefined;
  }
  return previous.command;
}

/** What to tell the user about a User value VS Code ignores in a remote window. */
export function remoteSettingMessage(ignored: string): string {
  return (
    `kb-lsp: kb.server.python ("${ignored}") is in your User settings, which VS Code ignores for ` +
    'this setting in a remote window: set it in the Remote settings.'
  );
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
    python.source === 'setting' || python.source === 'kept'
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

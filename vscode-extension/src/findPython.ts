/**
 * Which Python the server's own environment is made with: the first of the Python
 * extension's active interpreter, `python3`, `python` (and `py -3` on Windows) that is
 * 3.11 or newer and can make a virtual environment. Each is asked about itself by running
 * it (`Exec`), so a Windows Store alias or a broken shim counts as absent.
 */
import type { Exec } from './exec';
import type { SetupProblem } from './setupProblem';

export const MIN_PYTHON = [3, 11] as const;

export interface PythonCandidate {
  command: string;
  /** Arguments that come before ours (`-3` for the Windows launcher). */
  args: string[];
  /** Where it came from, as the log and the errors say it. */
  label: string;
}

export interface FoundPython extends PythonCandidate {
  /** e.g. "3.12.4" */
  version: string;
  /** `sys.executable`: the interpreter the command runs. */
  executable: string;
}

/** What a candidate says about itself (the probe's one line of JSON). */
interface Probe {
  version: number[];
  executable: string;
  venv: boolean;
}

/** Prints what `findPython` needs, as JSON; `venv` needs `ensurepip` too (Debian ships
 * python3 without it: `python3 -m venv` then fails). */
const PROBE =
  'import importlib.util as u, json, sys; print(json.dumps({"version": list(sys.version_info[:3]), ' +
  '"executable": sys.executable, "venv": bool(u.find_spec("venv") and u.find_spec("ensurepip"))}))';

/** The interpreters to try, in order. */
export function pythonCandidates(fromExtension: string | undefined, windows: boolean): PythonCandidate[] {
  const list: PythonCandidate[] = [];
  if (fromExtension) {
    list.push({ command: fromExtension, args: [], label: "the Python extension's interpreter" });
  }
  list.push({ command: 'python3', args: [], label: 'python3 on PATH' });
  list.push({ command: 'python', args: [], label: 'python on PATH' });
  if (windows) {
    list.push({ command: 'py', args: ['-3'], label: 'the py launcher (py -3)' });
  }
  return list;
}

function parseProbe(lines: readonly string[]): Probe | undefined {
  for (const line of [...lines].reverse()) {
    try {
      const value = JSON.parse(line) as Partial<Probe>;
      if (Array.isArray(value.version) && typeof value.executable === 'string') {
        return { version: value.version, executable: value.executable, venv: value.venv === true };
      }
    } catch {
      // not the probe's line
    }
  }
  return undefined;
}

function newEnough(version: readonly number[]): boolean {
  const [major = 0, minor = 0] = version;
  return major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]);
}

/** The Debian/Ubuntu package that brings `venv` with `ensurepip` for this version. */
function venvPackage(version: readonly number[]): string {
  return `python${version[0]}.${version[1]}-venv`;
}

/** The first candidate that can make the server's environment, or why none can. */
export async function findPython(
  candidates: readonly PythonCandidate[],
  exec: Exec,
  log: (line: string) => void,
): Promise<FoundPython | SetupProblem> {
  const tooOld: string[] = [];
  const noVenv: { where: string; version: number[] }[] = [];
  for (const candidate of candidates) {
    const result = await exec(candidate.command, [...candidate.args, '-c', PROBE]);
    const probe = result.code === 0 ? parseProbe(result.lines) : undefined;
    if (!probe) {
      log(`kb-lsp: no Python at ${candidate.label} (${result.error?.message ?? result.lines.slice(-1)[0] ?? `exit ${result.code}`})`);
      continue;
    }
    const version = probe.version.join('.');
    const where = `${probe.executable} (${candidate.label})`;
    log(`kb-lsp: Python ${version} at ${where}`);
    if (!newEnough(probe.version)) {
      tooOld.push(`Python ${version} at ${where}`);
    } else if (!probe.venv) {
      noVenv.push({ where: `Python ${version} at ${where}`, version: probe.version });
    } else {
      return { ...candidate, version, executable: probe.executable };
    }
  }
  return noPython(candidates, tooOld, noVenv);
}

function noPython(
  candidates: readonly PythonCandidate[],
  tooOld: readonly string[],
  noVenv: readonly { where: string; version: number[] }[],
): SetupProblem {
  const need = `The server needs Python ${MIN_PYTHON.join('.')} or newer.`;
  const install = 'Install it (python.org, or your system\'s packages), or set kb.server.python to an interpreter with kb-lsp installed, then Retry.';
  const first = noVenv[0];
  if (first) {
    const pkg = venvPackage(first.version);
    return {
      kind: 'no-venv',
      facts: [`${first.where} cannot make virtual environments (its venv or ensurepip module is missing).`, `On Debian or Ubuntu install ${pkg}, then Retry.`],
      command: `sudo apt install ${pkg}`,
    };
  }
  if (tooOld.length > 0) {
    return { kind: 'python-too-old', facts: [`${tooOld.join('; ')}: too old.`, need, install] };
  }
  const tried = candidates.map((c) => c.label).join(', ');
  return { kind: 'no-python', facts: [`No Python was found (tried ${tried}).`, need, install] };
}

/**
 * A scripted machine for the server set-up's tests: the `Exec` seam answers as Python,
 * venv and pip do (pip's lines are a real run's, trimmed), and makes the folders and files
 * they would make, so the code under test reads a real file system.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Exec, ExecOptions, ExecResult } from '../../src/exec';

/** A real `pip install` of the wheel, its first and last steps (2026-11-27, this machine). */
export const PIP_LINES = [
  'Processing ./server-wheel/kb_lsp-0.1.0-py3-none-any.whl',
  'Collecting pygls<3,>=2.0 (from kb-lsp==0.1.0)',
  '  Downloading pygls-2.1.1-py3-none-any.whl (68 kB)',
  'Collecting chromadb<2,>=1.0 (from kb-lsp==0.1.0)',
  '  Downloading chromadb-1.5.9-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl (23.3 MB)',
  'Collecting onnxruntime<2,>=1.18 (from kb-lsp==0.1.0)',
  '  Using cached onnxruntime-1.23.2-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl (17.4 MB)',
  'Installing collected packages: pygls, chromadb, onnxruntime, kb-lsp',
  'Successfully installed chromadb-1.5.9 kb-lsp-0.1.0 onnxruntime-1.23.2 pygls-2.1.1',
];

/** A real `pip install` with no index it can reach (`--index-url http://127.0.0.1:9/simple`). */
export const OFFLINE_LINES = [
  'Processing ./server-wheel/kb_lsp-0.1.0-py3-none-any.whl',
  'INFO: pip is looking at multiple versions of kb-lsp to determine which version is compatible with other requirements. This could take a while.',
  'ERROR: Could not find a version that satisfies the requirement pygls<3,>=2.0 (from kb-lsp) (from versions: none)',
  'ERROR: No matching distribution found for pygls<3,>=2.0',
];

export interface FakePython {
  version: number[];
  executable: string;
  venv?: boolean;
}

export interface Call {
  command: string;
  args: string[];
}

/** What the machine does; each field may be changed by a test before the call it affects. */
export class Machine {
  readonly calls: Call[] = [];
  /** The interpreters on the PATH (by command), each with what it says about itself. */
  pythons = new Map<string, FakePython>();
  /** What `pip install` writes and its exit code; `hold` makes it wait for the abort signal. */
  pip: { lines: string[]; code: number; hold?: boolean } = { lines: PIP_LINES, code: 0 };
  /** Environments where kb-lsp imports, by interpreter path, with its version. */
  readonly installed = new Map<string, string>();
  /** The version pip installs. */
  version = '0.1.0';
  /** Called when pip starts (a test may cancel then). */
  onPip: (() => void) | undefined;

  readonly exec: Exec = async (command, args, options = {}) => {
    this.calls.push({ command, args: [...args] });
    const result = await this.answer(command, [...args], options);
    result.lines.forEach((line) => options.onLine?.(line));
    return result;
  };

  /** The calls whose arguments include `word` (`venv`, `pip`, `importlib.metadata`…). */
  callsWith(word: string): Call[] {
    return this.calls.filter((call) => call.args.some((arg) => arg.includes(word)));
  }

  private answer(command: string, args: string[], options: ExecOptions): Promise<ExecResult> | ExecResult {
    const script = args[args.indexOf('-c') + 1] ?? '';
    if (args.includes('-c') && script.includes('find_spec')) {
      return this.probe(command);
    }
    if (args.includes('-c') && script.includes('importlib.metadata')) {
      const version = this.installed.get(command);
      return version
        ? ok([version])
        : { code: 1, lines: ["ModuleNotFoundError: No module named 'kb_lsp'"], aborted: false };
    }
    const venv = args.indexOf('venv');
    if (args[venv - 1] === '-m' && venv >= 0) {
      const dir = args[venv + 1] ?? '';
      mkdirSync(join(dir, 'bin'), { recursive: true });
      writeFileSync(join(dir, 'bin', 'python'), '');
      return ok([]);
    }
    if (args.includes('pip') && args.includes('install')) {
      return this.pipInstall(command, options);
    }
    return { code: null, error: { code: 'ENOENT', message: `spawn ${command} ENOENT` }, lines: [], aborted: false };
  }

  private probe(command: string): ExecResult {
    const python = this.pythons.get(command);
    if (!python) {
      return { code: null, error: { code: 'ENOENT', message: `spawn ${command} ENOENT` }, lines: [], aborted: false };
    }
    return ok([JSON.stringify({ version: python.version, executable: python.executable, venv: python.venv ?? true })]);
  }

  private async pipInstall(python: string, options: ExecOptions): Promise<ExecResult> {
    this.onPip?.();
    if (this.pip.hold) {
      await new Promise<void>((resolve) => {
        if (options.signal?.aborted) {
          resolve();
        }
        options.signal?.addEventListener('abort', () => resolve(), { once: true });
      });
      return { code: null, lines: this.pip.lines.slice(0, 3), aborted: true };
    }
    if (this.pip.code === 0) {
      this.installed.set(python, this.version);
      writeFileSync(join(dirname(python), 'kb'), '');
    }
    return { code: this.pip.code, lines: this.pip.lines, aborted: false };
  }
}

function ok(lines: string[]): ExecResult {
  return { code: 0, lines, aborted: false };
}

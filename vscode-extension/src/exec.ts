/**
 * The one place the server's set-up runs programs (Python, venv, pip): a small seam, so
 * `serverSetup.ts` is tested with scripted results and the extension runs the real ones.
 */
import { spawn } from 'node:child_process';

export interface ExecOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Each line of stdout and stderr as it is written (pip's steps). */
  onLine?: (line: string) => void;
  /** Aborting kills the program (Cancel on the progress notification). */
  signal?: AbortSignal;
}

export interface ExecResult {
  /** The exit code; null when the program could not start or was killed. */
  code: number | null;
  /** Why it could not start (`ENOENT`: no such program), if it did not. */
  error?: { code?: string; message: string };
  /** Every line it wrote, stdout and stderr in the order they came. */
  lines: string[];
  /** It was stopped by the abort signal. */
  aborted: boolean;
}

/** Runs `command args…` and resolves when it ends; never rejects. */
export type Exec = (command: string, args: readonly string[], options?: ExecOptions) => Promise<ExecResult>;

/** Splits a stream's chunks into lines (a line may come in pieces). */
class LineSplitter {
  private rest = '';
  constructor(private readonly emit: (line: string) => void) {}
  push(chunk: string): void {
    const parts = (this.rest + chunk).split(/\r?\n|\r/);
    this.rest = parts.pop() ?? '';
    parts.forEach((line) => this.emit(line));
  }
  end(): void {
    if (this.rest !== '') {
      this.emit(this.rest);
      this.rest = '';
    }
  }
}

/** The real `Exec`: node's `spawn`, no shell (arguments are never re-parsed). */
export const nodeExec: Exec = (command, args, options = {}) =>
  new Promise((resolve) => {
    const lines: string[] = [];
    const emit = (line: string): void => {
      lines.push(line);
      options.onLine?.(line);
    };
    const out = new LineSplitter(emit);
    const err = new LineSplitter(emit);
    let aborted = false;
    let settled = false;
    const finish = (result: Omit<ExecResult, 'lines' | 'aborted'>): void => {
      if (!settled) {
        settled = true;
        out.end();
        err.end();
        options.signal?.removeEventListener('abort', kill);
        resolve({ ...result, lines, aborted });
      }
    };
    const child = spawn(command, [...args], { cwd: options.cwd, env: options.env ?? process.env, windowsHide: true });
    function kill(): void {
      aborted = true;
      child.kill();
    }
    if (options.signal?.aborted) {
      kill();
    } else {
      options.signal?.addEventListener('abort', kill, { once: true });
    }
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => out.push(chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => err.push(chunk));
    child.on('error', (error: NodeJS.ErrnoException) => finish({ code: null, error: { code: error.code, message: error.message } }));
    child.on('close', (code) => finish({ code }));
  });

/**
 * What went wrong while the extension set up its server, in words a person can act on,
 * and what pip's output says on the way (its steps, why it failed).
 */

export type SetupProblemKind =
  | 'no-python'
  | 'python-too-old'
  | 'no-venv'
  | 'network'
  | 'pip-failed'
  | 'disk-full'
  | 'cancelled';

export interface SetupProblem {
  kind: SetupProblemKind;
  /** One sentence per fact, each something a person can check or do. */
  facts: string[];
  /** What to run by hand in a terminal, to copy. */
  command?: string;
}

export function isProblem(value: unknown): value is SetupProblem {
  return typeof value === 'object' && value !== null && 'kind' in value && 'facts' in value;
}

/** An unexpected error while setting up (a folder that cannot be written, a full disk). */
export function thrown(err: unknown): SetupProblem {
  const message = err instanceof Error ? err.message : String(err);
  if (DISK_FULL.test(message)) {
    return { kind: 'disk-full', facts: ['The disk is full.', `${message}.`, 'Free some space, then Retry.'] };
  }
  return { kind: 'pip-failed', facts: ['Setting up the kb-lsp server failed.', `${message}.`, 'The log has the details.'] };
}

/** pip (and urllib3, requests) when the package index cannot be reached. */
const NETWORK =
  /NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|nodename nor servname|getaddrinfo failed|Network is unreachable|Connection refused|ConnectTimeoutError|ReadTimeoutError|ProxyError|SSLError|CERTIFICATE_VERIFY_FAILED|No matching distribution found|Could not find a version that satisfies/i;

/** A full disk or quota, in Python's and Node's words. */
export const DISK_FULL = /No space left on device|ENOSPC|\[Errno 28\]|Disk quota exceeded|EDQUOT/i;

/** The lines that say why pip failed: its `ERROR:` lines, else its last lines; at most 3. */
export function lastLines(lines: readonly string[], count = 3): string[] {
  const text = lines.map((line) => line.trim()).filter((line) => line !== '');
  const errors = text.filter((line) => /^error:|\w*Error:/i.test(line));
  return (errors.length > 0 ? errors : text).slice(-count);
}

/**
 * A failed step of the set-up (`what`: "pip install", "python -m venv") as a problem:
 * no network, a full disk, or the tool's own failure, with its last lines and `command`.
 */
export function stepFailed(what: string, lines: readonly string[], command: string, errorMessage?: string): SetupProblem {
  const all = errorMessage ? [...lines, errorMessage] : lines;
  const said = lastLines(all).map((line) => `${what}: ${line}`);
  const byHand = 'The command below does the same in a terminal; after it, Retry uses what it made.';
  if (all.some((line) => DISK_FULL.test(line))) {
    return { kind: 'disk-full', facts: [`${what} ran out of disk space.`, ...said, 'Free some space, then Retry.'], command };
  }
  if (all.some((line) => NETWORK.test(line))) {
    return {
      kind: 'network',
      facts: [
        `${what} could not download the server's Python packages from your package index: no network, or an index or proxy it cannot reach (pip's own configuration, e.g. pip config list).`,
        ...said,
        byHand,
      ],
      command,
    };
  }
  return { kind: 'pip-failed', facts: [`${what} failed.`, ...said, byHand], command };
}

/** Quote one argument for the user's shell: POSIX single quotes, or PowerShell's double. */
export function shellQuote(arg: string, windows: boolean): string {
  if (/^[\w@%+=:,./-]+$/.test(arg)) {
    return arg;
  }
  return windows ? `"${arg.replace(/"/g, '`"')}"` : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** `parts` as one command line for the user's shell. */
export function commandLine(parts: readonly string[], windows: boolean): string {
  const line = parts.map((part) => shellQuote(part, windows)).join(' ');
  // PowerShell runs a quoted program only after the call operator.
  return windows && line.startsWith('"') ? `& ${line}` : line;
}

/** A short name for a wheel or sdist file: `chromadb 1.3.5` for `chromadb-1.3.5-cp39-…whl`. */
function distName(file: string): string {
  const base = file.split(/[\\/]/).pop() ?? file;
  const m = /^([A-Za-z0-9_.]+?)-(\d[^-]*?)(?:-|\.tar\.gz$|\.zip$)/.exec(base);
  return m ? `${m[1]} ${m[2]}` : base;
}

/** Follows pip's output and says each step in a few words (the progress message). */
export class PipSteps {
  private collected = 0;

  /** The message for `line`, or undefined when it starts no new step. */
  step(line: string): string | undefined {
    const text = line.trim();
    let m: RegExpExecArray | null;
    if ((m = /^Processing (.*kb_lsp-[^\s]*\.whl)/.exec(text))) {
      return 'Reading the bundled kb-lsp wheel';
    }
    if ((m = /^Collecting ([A-Za-z0-9_.-]+)/.exec(text))) {
      this.collected++;
      return `Collecting ${m[1]} (${this.collected} packages so far)`;
    }
    if ((m = /^Downloading (\S+)(?: \(([^)]+)\))?/.exec(text))) {
      return `Downloading ${distName(m[1])}${m[2] ? ` (${m[2]})` : ''}`;
    }
    if ((m = /^Using cached (\S+)/.exec(text))) {
      return `Using cached ${distName(m[1])}`;
    }
    if ((m = /^Building wheel for (\S+)/.exec(text))) {
      return `Building ${m[1]}`;
    }
    if ((m = /^Installing collected packages: (.*)$/.exec(text))) {
      return `Installing ${m[1].split(',').length} packages`;
    }
    if (text.startsWith('Successfully installed')) {
      return 'Installed';
    }
    return undefined;
  }
}

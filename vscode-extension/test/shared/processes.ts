/** The kb-lsp server processes a test's editor started, seen in Linux /proc: a test can
 * tell a restart (a new process) from none, and which interpreter runs it. */
import { readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { until } from './codeServer';

export interface ServerProcess {
  pid: number;
  argv: string[];
}

/** The kb-lsp servers (`… -m kb_lsp`) running in `workspace` (their working directory). */
export function languageServers(workspace: string): ServerProcess[] {
  const out: ServerProcess[] = [];
  const cwd = realpathSync(workspace);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) {
      continue;
    }
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      const module = argv.indexOf('-m');
      if (module < 0 || argv[module + 1] !== 'kb_lsp' || readlinkSync(`/proc/${entry}/cwd`) !== cwd) {
        continue;
      }
      out.push({ pid: Number(entry), argv });
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/** The one kb-lsp server of `workspace`, once there is exactly one. */
export async function languageServer(workspace: string): Promise<ServerProcess> {
  const found = await until(
    () => Promise.resolve(languageServers(workspace)),
    (servers) => servers.length === 1,
    `one kb-lsp server in ${workspace}`,
  );
  return found[0];
}

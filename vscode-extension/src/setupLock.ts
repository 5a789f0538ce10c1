/**
 * One window sets up an environment at a time: a lock file created exclusively, holding
 * the holder's process id. A lock whose holder is gone (a window closed mid-way) is taken
 * over; a live one is waited for.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

/** How often a waiting window looks at the lock again. */
const POLL_MS = 1000;

function alive(pid: number): boolean {
  if (pid <= 0) {
    return false; // not a process id: a lock file someone else wrote
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, as another user's process.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function holder(lock: string): number | undefined {
  try {
    const pid = Number(readFileSync(lock, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : 0;
  } catch {
    return undefined;
  }
}

/** Whether a live process holds `lock`. */
export function heldBy(lock: string): boolean {
  const pid = holder(lock);
  return pid !== undefined && alive(pid);
}

function tryCreate(lock: string): boolean {
  try {
    writeFileSync(lock, String(process.pid), { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      return false;
    }
    throw err;
  }
}

function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** Takes `lock`, waiting while another live process holds it; false when aborted first. */
export async function takeLock(lock: string, hooks: { step(message: string): void; signal?: AbortSignal }): Promise<boolean> {
  let told = false;
  while (!hooks.signal?.aborted) {
    if (tryCreate(lock)) {
      return true;
    }
    const pid = holder(lock);
    if (pid === undefined) {
      continue; // released between our two looks
    }
    if (!alive(pid)) {
      rmSync(lock, { force: true });
      continue;
    }
    if (!told) {
      hooks.step('Waiting for another window that is setting up the server');
      told = true;
    }
    await wait(POLL_MS, hooks.signal);
  }
  return false;
}

/** Releases `lock` if this process holds it. */
export function releaseLock(lock: string): void {
  if (holder(lock) === process.pid) {
    rmSync(lock, { force: true });
  }
}

/** Headless Chromium (Debian's) through playwright-core, and where artifacts go. */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';

export const EXTENSION_ROOT = join(__dirname, '..', '..', '..');
export const REPO_ROOT = join(EXTENSION_ROOT, '..');
export const ARTIFACTS = process.env.KB_TEST_ARTIFACTS ?? join(REPO_ROOT, 'test-artifacts');

export function chromiumPath(): string {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  const found = candidates.find((p): p is string => Boolean(p) && existsSync(p as string));
  if (!found) {
    throw new Error('Chromium not found: apt-get install -y chromium (or set CHROMIUM_PATH)');
  }
  return found;
}

export function artifact(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return join(ARTIFACTS, name);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

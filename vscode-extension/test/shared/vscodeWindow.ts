/**
 * A real VS Code window for the settings e2e test: code-server 4.100.3 (VS Code 1.100)
 * with the packaged .vsix installed, driven by Playwright in Debian's Chromium, with the
 * parts a settings test needs: workspace trust as in VS Code (Restricted Mode for an
 * untrusted folder) and Remote settings (`Machine/settings.json`) besides User settings.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { EXTENSION_ROOT, launchChromium } from './browser';

export const CODE_SERVER =
  process.env.CODE_SERVER ?? join(EXTENSION_ROOT, '.code-server', 'node_modules', '.bin', 'code-server');
export const VSIX = process.env.KB_VSIX ?? join(EXTENSION_ROOT, 'dist', 'kb-lsp.vsix');
export const TIMEOUT = 90_000;

/** Settings that keep VS Code quiet and offline in a test. */
export const QUIET_SETTINGS: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'telemetry.telemetryLevel': 'off',
  'extensions.ignoreRecommendations': true,
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'update.mode': 'none',
  'chat.commandCenter.enabled': false,
};

export interface CodeServer {
  page: Page;
  userData: string;
  /** code-server's own output so far. */
  log(): string;
  stop(): Promise<void>;
}

export interface CodeServerOptions {
  workspace: string;
  /** User settings (`<user-data>/User/settings.json`). */
  user: Record<string, unknown>;
  /** Remote settings (`<user-data>/Machine/settings.json`). */
  remote?: Record<string, unknown>;
  /** Workspace trust as in VS Code (true) or switched off, every folder trusted (false). */
  trust?: boolean;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

function writeJson(path: string, value: unknown): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, JSON.stringify(value, null, 2));
}

export async function startCodeServer(options: CodeServerOptions): Promise<CodeServer> {
  if (!existsSync(CODE_SERVER)) {
    throw new Error(`code-server not found at ${CODE_SERVER}: run scripts/extension/install-code-server.sh`);
  }
  if (!existsSync(VSIX)) {
    throw new Error(`${VSIX} not found: run npm run package`);
  }
  const base = mkdtempSync(join(tmpdir(), 'kb-code-server-'));
  const userData = join(base, 'user-data');
  const extensions = join(base, 'extensions');
  const trust = options.trust ?? false;
  writeJson(join(userData, 'User', 'settings.json'), {
    ...QUIET_SETTINGS,
    'security.workspace.trust.enabled': trust,
    // Untrusted folders open in Restricted Mode without a modal question.
    'security.workspace.trust.startupPrompt': 'never',
    ...options.user,
  });
  if (options.remote) {
    writeJson(join(userData, 'Machine', 'settings.json'), options.remote);
  }
  const env = { ...process.env, CODE_SERVER_CONFIG: join(base, 'config.yaml') };
  const install = spawnSync(
    CODE_SERVER,
    ['--user-data-dir', userData, '--extensions-dir', extensions, '--install-extension', VSIX],
    { encoding: 'utf8', env, timeout: TIMEOUT },
  );
  if (install.status !== 0) {
    throw new Error(`installing the .vsix failed:\n${install.stdout}\n${install.stderr}`);
  }
  const port = await freePort();
  let output = '';
  const server: ChildProcess = spawn(
    CODE_SERVER,
    [
      '--auth', 'none',
      '--bind-addr', `127.0.0.1:${port}`,
      '--disable-telemetry',
      '--disable-update-check',
      ...(trust ? [] : ['--disable-workspace-trust']),
      '--disable-getting-started-override',
      '--user-data-dir', userData,
      '--extensions-dir', extensions,
      options.workspace,
    ],
    { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  server.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  server.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  let browser: Browser | undefined;
  const stop = async () => {
    await browser?.close().catch(() => undefined);
    if (server.pid) {
      try {
        process.kill(-server.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
  };
  try {
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok === true, 'code-server to answer');
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.setDefaultTimeout(TIMEOUT);
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(options.workspace)}`);
    await page.locator('.monaco-workbench').waitFor();
    return { page, userData, log: () => output, stop };
  } catch (err) {
    await stop();
    throw new Error(`${String(err)}\n${output.slice(-3000)}`);
  }
}

/** Poll `check` until it holds; fail after `ms` saying what was awaited. */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = TIMEOUT): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) {
      return;
    }
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Run a command from the command palette by its title. */
export async function runCommand(page: Page, title: string): Promise<void> {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible' });
  await page.keyboard.press('Enter');
}

/**
 * A real VS Code for the e2e tests: code-server 4.100.3 with the packaged .vsix installed
 * in a fresh user-data folder, opened on a workspace, driven by Playwright in Debian's
 * Chromium. Settings are written to the user settings file (VS Code watches it, so a test
 * may change them while it runs).
 */
import { strict as assert } from 'node:assert';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, FrameLocator, Page } from 'playwright-core';
import { artifact, EXTENSION_ROOT, launchChromium } from './browser';

export const CODE_SERVER =
  process.env.CODE_SERVER ?? join(EXTENSION_ROOT, '.code-server', 'node_modules', '.bin', 'code-server');
export const VSIX = process.env.KB_VSIX ?? join(EXTENSION_ROOT, 'dist', 'kb-lsp.vsix');
export const TIMEOUT = 90_000;

export function freePort(): Promise<number> {
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

/** The user settings every e2e run starts from: quiet workbench, no network, no tips. */
export function baseSettings(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    'security.workspace.trust.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'telemetry.telemetryLevel': 'off',
    'extensions.ignoreRecommendations': true,
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'update.mode': 'none',
    'chat.commandCenter.enabled': false,
    'workbench.colorTheme': 'Default Dark Modern',
    ...extra,
  };
}

export class CodeServer {
  browser!: Browser;
  page!: Page;
  log = '';
  private server: ChildProcess | undefined;
  private settingsFile = '';
  /** The user-data folder (User/ and Machine/ settings live in it). */
  userData = '';

  /** Install the .vsix, start code-server on `workspace`, open it in Chromium. `remote`:
   * the Remote (machine) settings — where a remote window reads machine-overridable ones.
   * `trust`: workspace trust as in VS Code, so a folder nobody trusted opens in Restricted
   * Mode (without the modal question); otherwise trust is off and every folder trusted. */
  async start(
    workspace: string,
    settings: Record<string, unknown>,
    env: Record<string, string> = {},
    remote: Record<string, unknown> = {},
    trust = false,
  ): Promise<void> {
    assert.ok(existsSync(CODE_SERVER), `code-server not found at ${CODE_SERVER}: run scripts/extension/install-code-server.sh`);
    assert.ok(existsSync(VSIX), `${VSIX} not found: run npm run package`);
    const base = mkdtempSync(join(tmpdir(), 'kb-code-server-'));
    const userData = join(base, 'user-data');
    this.userData = userData;
    const extensions = join(base, 'extensions');
    mkdirSync(join(userData, 'User'), { recursive: true });
    this.settingsFile = join(userData, 'User', 'settings.json');
    this.writeSettings(
      trust ? { ...settings, 'security.workspace.trust.enabled': true, 'security.workspace.trust.startupPrompt': 'never' } : settings,
    );
    if (Object.keys(remote).length > 0) {
      mkdirSync(join(userData, 'Machine'), { recursive: true });
      writeFileSync(join(userData, 'Machine', 'settings.json'), JSON.stringify(remote, null, 2));
    }
    const fullEnv = { ...process.env, ...env, CODE_SERVER_CONFIG: join(base, 'config.yaml') };
    const install = spawnSync(
      CODE_SERVER,
      ['--user-data-dir', userData, '--extensions-dir', extensions, '--install-extension', VSIX],
      { encoding: 'utf8', env: fullEnv, timeout: TIMEOUT },
    );
    assert.equal(install.status, 0, `installing the .vsix failed:\n${install.stdout}\n${install.stderr}`);
    const port = await freePort();
    this.server = spawn(
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
        workspace,
      ],
      { env: fullEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.server.stdout?.on('data', (d: Buffer) => (this.log += d.toString()));
    this.server.stderr?.on('data', (d: Buffer) => (this.log += d.toString()));
    await this.waitForHttp(`http://127.0.0.1:${port}/healthz`);
    this.browser = await launchChromium();
    this.page = await this.browser.newPage({ viewport: { width: 1400, height: 900 } });
    this.page.setDefaultTimeout(TIMEOUT);
    // The workbench's and the webviews' console, for the log a failing test leaves.
    this.page.on('console', (msg) => {
      if (msg.type() === 'error' || msg.type() === 'warning') {
        this.log += `[browser ${msg.type()}] ${msg.text()}\n`;
      }
    });
    this.page.on('pageerror', (err) => (this.log += `[browser pageerror] ${String(err)}\n`));
    await this.page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await this.page.locator('.monaco-workbench').waitFor();
  }

  /** Write the user settings file (before start; a running code-server does not notice). */
  writeSettings(settings: Record<string, unknown>): void {
    writeFileSync(this.settingsFile, JSON.stringify(baseSettings(settings), null, 2));
  }

  /** Change the user settings while VS Code runs, as a user does: in the settings JSON editor. */
  async setSettings(settings: Record<string, unknown>): Promise<void> {
    const page = this.page;
    await this.runCommand('Preferences: Open User Settings (JSON)');
    const tab = page.locator('.tabs-container .tab.active', { hasText: 'settings.json' });
    await tab.waitFor();
    await page.locator('.editor-instance .monaco-editor .view-lines').first().click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    // On one line: over several, the editor indents each new line and leaves its own
    // closing brace after the text, and the file no longer parses (VS Code then reads it
    // leniently but refuses to write to it: a command's settings were never saved).
    await page.keyboard.insertText(JSON.stringify(baseSettings(settings)));
    await page.keyboard.press('Control+S');
    await page.locator('.tabs-container .tab.active.dirty').waitFor({ state: 'detached' });
    await this.runCommand('View: Close Editor');
    await tab.waitFor({ state: 'detached' });
  }

  /** The User settings as VS Code has them on disk now (what a command wrote included). */
  readUserSettings(): Record<string, unknown> {
    // VS Code writes JSON with comments allowed; ours and its writes are plain JSON.
    return JSON.parse(readFileSync(this.settingsFile, 'utf8')) as Record<string, unknown>;
  }

  /** Change the Remote (machine) settings while VS Code runs, in their JSON editor. */
  async setRemoteSettings(settings: Record<string, unknown>): Promise<void> {
    const page = this.page;
    await this.runCommand('Preferences: Open Remote Settings (JSON)');
    const tab = page.locator('.tabs-container .tab.active', { hasText: 'settings.json' });
    await tab.waitFor();
    await page.locator('.editor-instance .monaco-editor .view-lines').first().click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(JSON.stringify(settings)); // on one line: see setSettings
    await page.keyboard.press('Control+S');
    await page.locator('.tabs-container .tab.active.dirty').waitFor({ state: 'detached' });
    await this.runCommand('View: Close Editor');
    await tab.waitFor({ state: 'detached' });
  }

  /** Drag the sash between the side bar and the editor until the side bar is `width` px. */
  async sideBarWidth(width: number): Promise<number> {
    const page = this.page;
    const sidebar = page.locator('.part.sidebar');
    for (let attempt = 0; attempt < 4; attempt++) {
      const box = await sidebar.boundingBox();
      if (!box) {
        throw new Error('no side bar');
      }
      if (Math.abs(box.width - width) <= 2) {
        return box.width;
      }
      const y = box.y + box.height / 2;
      const edge = box.x + box.width;
      await page.mouse.move(edge - 1, y);
      await page.mouse.down();
      await page.mouse.move(edge - 1 + (width - box.width) / 2, y, { steps: 4 });
      await page.mouse.move(box.x + width - 1, y, { steps: 4 });
      await page.mouse.up();
    }
    return (await sidebar.boundingBox())?.width ?? 0;
  }

  private async waitForHttp(url: string): Promise<void> {
    const end = Date.now() + TIMEOUT;
    for (;;) {
      try {
        const res = await fetch(url);
        if (res.ok) {
          return;
        }
      } catch {
        // not up yet
      }
      if (Date.now() > end) {
        throw new Error(`code-server did not answer at ${url}\n${this.log.slice(-3000)}`);
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  async stop(): Promise<void> {
    await this.browser?.close().catch(() => undefined);
    if (this.server?.pid) {
      try {
        process.kill(-this.server.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
  }

  /** The kb-lsp servers this code-server runs (`<python> -m kb_lsp` among its
   * descendants): a restart shows as another id. */
  serverPids(): number[] {
    const ps = spawnSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8' });
    const rows = ps.stdout
      .split('\n')
      .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3] ?? '' }));
    const ours = new Set<number>(this.server?.pid ? [this.server.pid] : []);
    for (let grew = true; grew; ) {
      grew = false;
      for (const row of rows) {
        if (ours.has(row.ppid) && !ours.has(row.pid)) {
          ours.add(row.pid);
          grew = true;
        }
      }
    }
    return rows.filter((row) => ours.has(row.pid) && / -m kb_lsp\b/.test(row.args)).map((row) => row.pid);
  }

  async shot(name: string): Promise<string> {
    const path = artifact(name);
    await this.page.screenshot({ path });
    return path;
  }

  /** Run a command from the command palette by its title. */
  async runCommand(title: string): Promise<void> {
    const page = this.page;
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill(`>${title}`);
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
    await row.waitFor({ state: 'visible' });
    await page.keyboard.press('Enter');
  }

  /** The Knowledge Base panel's page (the webview's inner frame). */
  panel(): FrameLocator {
    return this.page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
  }

  async openPanel(): Promise<FrameLocator> {
    await this.page.locator('.activitybar .action-item a[aria-label^="Knowledge Base"]').first().click();
    const frame = this.panel();
    await frame.locator('#status-text').waitFor();
    return frame;
  }

  /** Open a workspace file with Go to File. */
  async openFile(name: string): Promise<void> {
    const page = this.page;
    await this.runCommand('Go to File');
    await page.keyboard.type(name);
    // Click the row that names the file: Enter takes the first row, which under load may
    // still be a match for what was typed so far (background.md for background-tasks.md).
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first();
    await row.waitFor();
    await row.click();
    await page.locator('.tabs-container .tab.active', { hasText: name }).waitFor();
  }
}

/** Poll `read` until `ok` holds (every `every` ms, up to `timeout`); the last value read. */
export async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string, timeout = TIMEOUT, every = 100): Promise<T> {
  const end = Date.now() + timeout;
  let last: T | undefined;
  for (;;) {
    try {
      last = await read();
      if (ok(last)) {
        return last;
      }
    } catch {
      // the element may be re-rendering
    }
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(last)}`);
    }
    await new Promise((r) => setTimeout(r, every));
  }
}

/**
 * Settings through the real client: the packaged extension in code-server (VS Code 1.100)
 * on a workspace opened untrusted (Restricted Mode), as a cloned repository would be.
 *
 * * The workspace's `.vscode/settings.json` names another interpreter, storage folder and
 *   model host: in Restricted Mode the server runs with the user's (package.json
 *   `capabilities.untrustedWorkspaces.restrictedConfigurations`) and the extension says why.
 * * Changes of `kb.ollama.timeout` and `kb.search.threshold` reach the running server
 *   (its log names each applied change) without restarting it: same process, and result 1
 *   of the search before the change still opens.
 * * code-server is a remote window: VS Code applies the User value of the machine-scoped
 *   `kb.server.python` at first, then drops it once the User settings are reloaded (after
 *   any change in the Settings editor). "KB: Restart Server" must still run the same
 *   interpreter, and the extension says to set it in the Remote settings.
 *
 * Needs what codeServer.test.ts needs (code-server, the .vsix, the Python server).
 */
import { strict as assert } from 'node:assert';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { artifact } from '../shared/browser';
import { languageServer, type ServerProcess } from '../shared/processes';
import { CodeServer, until } from '../shared/codeServer';
import { sampleWorkspace, serverPython } from '../shared/server';

const vscode = new CodeServer();
let page: Page;
let workspace: string;
let userStorage: string;
let workspaceStorage: string;
let first: ServerProcess;
const workspaceSettings: Record<string, unknown> = {};

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: artifact(name) }).catch(() => undefined);
}

/** Poll `check` until it holds (a generous deadline; fails saying what was awaited). */
async function waitFor(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  await until(async () => await check(), (ok) => ok, what);
}

/** Change the workspace's settings file on disk; VS Code picks it up as a settings change. */
function setWorkspaceSettings(values: Record<string, unknown>): void {
  Object.assign(workspaceSettings, values);
  mkdirSync(join(workspace, '.vscode'), { recursive: true });
  writeFileSync(join(workspace, '.vscode', 'settings.json'), JSON.stringify(workspaceSettings, null, 2));
}

function serverLog(): string {
  const path = join(userStorage, 'kb-lsp.log');
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

/** The server's "settings changed: kb.x: old → new" log lines (one per applied setting). */
function changes(): string[] {
  return serverLog()
    .split('\n')
    .map((line) => /settings changed: (.*)$/.exec(line)?.[1])
    .filter((change): change is string => change !== undefined);
}

/** Wait until the server logs that it applied `change` ("kb.x: old → new"). */
async function applied(change: string): Promise<void> {
  await waitFor(() => changes().includes(change), `the server to log "settings changed: ${change}"`);
}

/** Change a User setting in the Settings editor, as a user does, and close the editor. */
async function setInSettingsEditor(key: string, label: string, value: string): Promise<void> {
  await vscode.runCommand('Preferences: Open Settings (UI)');
  const editor = page.locator('.settings-editor');
  await editor.waitFor();
  await page.keyboard.press('Control+A');
  await page.keyboard.type(key);
  const input = editor.locator('.setting-item-contents', { hasText: label }).locator('input').first();
  await input.fill(value);
  await input.press('Tab');
  // Close the Settings editor by its tab (its focused controls keep F1 from the palette).
  await page.locator('.tabs-container .tab', { hasText: 'Settings' }).locator('.codicon-close').click();
  await editor.waitFor({ state: 'detached' });
}

/** A notification's text, from the notification center (toasts hide after a while). */
async function notification(text: string): Promise<string> {
  await vscode.runCommand('Notifications: Show Notifications');
  const item = page.locator('.notifications-center .notification-list-item', { hasText: text }).first();
  await item.waitFor();
  const said = (await item.innerText()).replace(/\s+/g, ' ');
  await vscode.runCommand('Notifications: Hide Notifications');
  return said;
}

describe('kb settings in code-server (untrusted workspace, remote window)', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    workspace = sampleWorkspace('kb-settings-e2e-');
    const stores = mkdtempSync(join(tmpdir(), 'kb-settings-stores-'));
    userStorage = join(stores, 'user');
    workspaceStorage = join(stores, 'workspace');
    setWorkspaceSettings({
      'kb.server.python': join(stores, 'no-such-python'),
      'kb.storage': workspaceStorage,
      'kb.ollama.host': 'http://127.0.0.1:8',
    });
    await vscode.start(
      workspace,
      { 'kb.server.python': serverPython(), 'kb.ollama.host': 'http://127.0.0.1:9', 'kb.storage': userStorage },
      {},
      {},
      true,
    );
    page = vscode.page;
  });

  after(async () => {
    if (process.env.KB_E2E_LOG) {
      writeFileSync(artifact('code-server-settings.log'), vscode.log);
      writeFileSync(artifact('kb-lsp-settings.log'), serverLog());
    }
    await vscode.stop();
  });

  it('in Restricted Mode runs the server with the user settings only, and says why', async () => {
    try {
      await page.locator('.statusbar-item', { hasText: 'KB: ready' }).first().waitFor();
      first = await languageServer(workspace);
      assert.equal(first.argv[0], serverPython(), "the user's interpreter, not the workspace's");
      assert.ok(existsSync(join(userStorage, 'kb-lsp.log')), 'the index is in the user storage folder');
      assert.ok(!existsSync(workspaceStorage), 'nothing was written where the workspace pointed');
      // The model host is the user's too: the server's reachability probe names it.
      await waitFor(() => serverLog().includes('Ollama at http://127.0.0.1:9 '), "the probe of the user's model host");
      assert.ok(!serverLog().includes('http://127.0.0.1:8'), "the workspace's model host is never used");
      const said = await notification('not trusted');
      assert.match(said, /kb\.server\.python/);
      assert.match(said, /kb\.storage/);
      assert.match(said, /kb\.ollama\.host/);
      await shot('code-server-settings-restricted.png');
    } catch (err) {
      await shot('code-server-settings-failure-restricted.png');
      throw err;
    }
  });

  it('a kb.ollama.timeout change in the Settings editor reaches the running server', async () => {
    try {
      await setInSettingsEditor('kb.ollama.timeout', 'Ollama: Timeout', '7');
      await applied('kb.ollama.timeout: 120.0 → 7.0');
      assert.equal((await languageServer(workspace)).pid, first.pid, 'the server was not restarted');
      // code-server reloaded the User settings and dropped its machine-scoped values: the
      // extension keeps sending the storage folder the server started with.
      assert.deepEqual(changes(), ['kb.ollama.timeout: 120.0 → 7.0'], 'nothing else changed');
    } catch (err) {
      await shot('code-server-settings-failure-timeout.png');
      throw err;
    }
  });

  it('a kb.search.threshold change keeps the server and its numbered list', async () => {
    try {
      await vscode.runCommand('KB: Search');
      await page.locator('.quick-input-widget .quick-input-title', { hasText: 'KB: Search' }).waitFor();
      await page.locator('.quick-input-widget .quick-input-box input').fill('deploy checklist');
      const top = page.locator('.quick-input-list .monaco-list-row', { hasText: '1 · ' }).first();
      await top.waitFor();
      const path = /1 · (\S+\.md)/.exec((await top.innerText()).replace(/\s+/g, ' '))?.[1];
      assert.ok(path, 'result 1 names a file');
      await page.keyboard.press('Escape');

      await setInSettingsEditor('kb.search.threshold', 'Search: Threshold', '0.25');
      await applied('kb.search.threshold: 0.3 → 0.25');
      assert.equal((await languageServer(workspace)).pid, first.pid, 'the server was not restarted');

      await vscode.runCommand('KB: Open Result');
      await page.locator('.quick-input-widget .quick-input-box input').fill('1');
      await page.keyboard.press('Enter');
      await page.locator('.tabs-container .tab.active').filter({ hasText: basename(path) }).waitFor();
    } catch (err) {
      await shot('code-server-settings-failure-threshold.png');
      throw err;
    }
  });

  it('a restart keeps the User kb.server.python that the remote window stopped applying', async () => {
    try {
      // Any change in the Settings editor makes VS Code reload the User settings, which in
      // a remote window drops the machine-scoped kb.server.python from them.
      await setInSettingsEditor('kb.search.limit', 'Search: Limit', '5');
      await applied('kb.search.limit: 10 → 5');

      await vscode.runCommand('KB: Restart Server');
      let next: ServerProcess | undefined;
      await waitFor(async () => {
        next = await languageServer(workspace).catch(() => undefined);
        return next !== undefined && next.pid !== first.pid;
      }, 'a new server process');
      assert.equal(next?.argv[0], serverPython(), 'the restart ran the same interpreter');
      await page.locator('.statusbar-item', { hasText: 'KB: ready' }).first().waitFor();
      const said = await notification('Remote settings');
      assert.match(said, /kb\.server\.python/);
      assert.match(said, /Open Remote Settings/);
      await shot('code-server-settings-remote-python.png');
    } catch (err) {
      await shot('code-server-settings-failure-remote-python.png');
      throw err;
    }
  });
});

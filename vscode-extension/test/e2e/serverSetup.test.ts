/**
 * A VS Code user installs the .vsix and searches, with no terminal step: the packaged
 * extension in code-server (VS Code 1.100, a remote window: the extension host runs on the
 * server's side, where it sets up) from a clean profile and an empty HOME, on a machine
 * where the Python it finds has no kb-lsp. Nothing sets `kb.server.python` and the Python
 * extension is not installed: the extension finds `python3` on the PATH, makes its own
 * environment in its global storage and pip-installs the wheel it carries, its
 * dependencies from the package index as pip is configured here (the environment's PIP_*
 * settings pass through; the pip cache is the empty HOME's, so it starts cold unless
 * PIP_CACHE_DIR says otherwise). Then the panel lists numbered results and "KB: Show
 * Status" copies the environment's `kb`.
 *
 * The second spec takes Python away (a PATH with only `node` on it): the panel says so,
 * with what fixes it, and the notification offers Get Python, Open Settings and Retry.
 *
 * Needs what codeServer.test.ts needs (code-server, the .vsix), and python3 >= 3.11 with
 * venv on the PATH. KB_E2E_LOG=1 keeps code-server's log and the set-up's in test-artifacts/.
 */
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { artifact, REPO_ROOT } from '../shared/browser';
import { CodeServer, until } from '../shared/codeServer';
import { languageServer } from '../shared/processes';
import { sampleWorkspace } from '../shared/server';

/** How long the set-up may take: pip installs chromadb, onnxruntime… from the index. */
const SETUP_TIMEOUT = 20 * 60_000;
const GLOBAL_STORAGE = join('User', 'globalStorage', 'kb-lsp.kb-lsp', 'server');

/** The PATH without folders whose python3/python imports kb_lsp (a developer's venv). */
function pathWithoutKbLsp(): string {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => dir !== '' && !dir.startsWith(join(REPO_ROOT, '.venv')))
    .filter((dir) =>
      ['python3', 'python'].every((name) => {
        const exe = join(dir, name);
        return !existsSync(exe) || spawnSync(exe, ['-c', 'import kb_lsp'], { env: { ...process.env, PYTHONPATH: '' } }).status !== 0;
      }),
    )
    .join(delimiter);
}

/** An environment as a fresh login has it: an empty HOME, nothing pointing at a venv. */
function freshEnv(home: string, path: string): Record<string, string> {
  const env: Record<string, string | undefined> = {
    HOME: home,
    PATH: path,
    VIRTUAL_ENV: undefined,
    PYTHONPATH: undefined,
    PYTHONHOME: undefined,
    XDG_CACHE_HOME: undefined,
    XDG_CONFIG_HOME: undefined,
    XDG_DATA_HOME: undefined,
    KB_PYTHON: undefined,
    KB_STORAGE: undefined,
  };
  return env as Record<string, string>; // undefined values are left out of a child's environment
}

/** The text of the output channel "Knowledge Base", as VS Code writes it to its logs. */
function outputChannel(userData: string): string {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        walk(path);
      } else if (name.endsWith('Knowledge Base.log')) {
        found.push(readFileSync(path, 'utf8'));
      }
    }
  };
  if (existsSync(join(userData, 'logs'))) {
    walk(join(userData, 'logs'));
  }
  return found.join('\n');
}

describe('a VS Code user installs the .vsix and searches: the extension sets up its own server', { timeout: SETUP_TIMEOUT + 5 * 60_000 }, () => {
  const vscode = new CodeServer();
  let page: Page;
  let workspace: string;
  let home: string;
  let started = 0;

  before(async () => {
    workspace = sampleWorkspace('kb-setup-e2e-');
    home = mkdtempSync(join(tmpdir(), 'kb-empty-home-'));
    const env = freshEnv(home, pathWithoutKbLsp());
    const probe = spawnSync('python3', ['-c', 'import kb_lsp'], { env: { ...process.env, ...env }, encoding: 'utf8' });
    assert.match(probe.stderr, /No module named 'kb_lsp'/, 'the python3 the extension finds has no kb-lsp');
    started = Date.now();
    await vscode.start(workspace, { 'kb.ollama.host': 'http://127.0.0.1:9' }, env);
    page = vscode.page;
  });

  after(async () => {
    if (process.env.KB_E2E_LOG) {
      writeFileSync(artifact('code-server-setup.log'), vscode.log);
      writeFileSync(artifact('kb-setup-output.log'), outputChannel(vscode.userData));
    }
    await vscode.stop();
  });

  it("sets up on first use in one cancellable notification with pip's steps, then the panel lists numbered results", async () => {
    try {
      const toast = page.locator('.notification-toast', { hasText: 'Setting up the kb-lsp server' }).first();
      await toast.waitFor();
      await toast.locator('.monaco-button, .action-label', { hasText: 'Cancel' }).first().waitFor();
      await until(
        async () => (await toast.innerText()).replace(/\s+/g, ' '),
        (text) => /Collecting \S+ \(\d+ packages so far\)|Downloading |Using cached |Installing \d+ packages/.test(text),
        "a step of pip's in the notification",
      );
      await vscode.shot('code-server-setup-progress.png');
      const frame = await vscode.openPanel();
      await frame.locator('#status-text', { hasText: 'Ready' }).waitFor({ timeout: SETUP_TIMEOUT });
      const setupSeconds = Math.round((Date.now() - started) / 1000);
      console.log(`set-up to a ready index: ${setupSeconds} s (code-server start included)`);
      const server = await languageServer(workspace);
      assert.ok(
        server.argv[0]?.startsWith(join(vscode.userData, GLOBAL_STORAGE)),
        `the server runs from the extension's own environment: ${server.argv.join(' ')}`,
      );
      await frame.locator('#query').fill('payments');
      await frame.locator('#query').press('Enter');
      const rows = frame.locator('#results li.hit');
      await rows.nth(1).waitFor();
      const numbers = await frame.locator('#results .hit-n').allTextContents();
      assert.deepEqual(numbers, numbers.map((_, i) => String(i + 1)));
      assert.match(outputChannel(vscode.userData), /Successfully installed .*kb-lsp-0\.1\.0/, "pip's whole log is in the output channel");
      await vscode.shot('code-server-setup-search.png');
    } catch (err) {
      await vscode.shot('code-server-setup-failure-search.png');
      throw err;
    }
  });

  it("KB: Show Status names the environment's kb, and copies it", async () => {
    try {
      await page.keyboard.press('Escape');
      const origin = new URL(page.url()).origin;
      await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
      await vscode.runCommand('KB: Show Status');
      const dialog = page.locator('.monaco-dialog-box');
      await dialog.waitFor();
      const said = (await dialog.innerText()).replace(/\s+/g, ' ');
      const kb = /Command line: (\S+) \(the same server, for the terminal\)/.exec(said)?.[1] ?? '';
      assert.ok(kb.startsWith(join(vscode.userData, GLOBAL_STORAGE)) && kb.endsWith('/bin/kb'), said);
      await vscode.shot('code-server-setup-status.png');
      await dialog.locator('.monaco-button', { hasText: 'Copy kb Command' }).click();
      await until(() => page.evaluate(() => navigator.clipboard.readText()), (text) => text === kb, 'the kb command on the clipboard');
      const help = spawnSync(kb, ['--help'], { encoding: 'utf8', env: { ...process.env, HOME: home } });
      assert.equal(help.status, 0, help.stderr);
      assert.match(help.stdout, /\bsearch\b/);
    } catch (err) {
      await vscode.shot('code-server-setup-failure-status.png');
      throw err;
    }
  });
});

describe('no Python: the panel says so, with what fixes it', { timeout: 5 * 60_000 }, () => {
  const vscode = new CodeServer();
  let page: Page;

  before(async () => {
    // A PATH with node (code-server's launcher) and nothing else: no python3, python or py.
    const bin = mkdtempSync(join(tmpdir(), 'kb-no-python-bin-'));
    symlinkSync(process.execPath, join(bin, 'node'));
    const home = mkdtempSync(join(tmpdir(), 'kb-empty-home-'));
    // VS Code's server takes the extension host's environment from a login shell (whose
    // /etc/profile puts /usr/bin back on the PATH) unless it was started from its CLI.
    const env = { ...freshEnv(home, bin), VSCODE_CLI: '1' };
    await vscode.start(sampleWorkspace('kb-no-python-e2e-'), { 'kb.ollama.host': 'http://127.0.0.1:9' }, env);
    page = vscode.page;
  });

  after(async () => {
    if (process.env.KB_E2E_LOG) {
      writeFileSync(artifact('code-server-no-python.log'), vscode.log);
    }
    await vscode.stop();
  });

  it('shows the error card and a notification with Get Python, Open Settings and Retry', async () => {
    try {
      const frame = await vscode.openPanel();
      const card = frame.locator('#server-problem');
      await card.locator('.empty-title', { hasText: 'The kb-lsp server could not start' }).waitFor();
      const facts = await card.locator('.empty-fact').allTextContents();
      assert.equal(facts[0], 'No Python was found (tried python3 on PATH, python on PATH).');
      assert.match(facts.join(' '), /needs Python 3\.11 or newer/);
      assert.match(facts.join(' '), /kb\.server\.python/);
      await card.locator('button', { hasText: 'Restart Server' }).waitFor();
      const toast = page.locator('.notification-toast', { hasText: 'No Python was found' }).first();
      await toast.waitFor();
      for (const action of ['Get Python', 'Open Settings', 'Retry']) {
        await toast.locator('.monaco-button', { hasText: action }).first().waitFor();
      }
      await vscode.shot('code-server-no-python.png');
    } catch (err) {
      await vscode.shot('code-server-failure-no-python.png');
      throw err;
    }
  });
});

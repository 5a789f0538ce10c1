/**
 * Issue 25 in a real VS Code (code-server 4.100.3, the packaged .vsix, the real server on a
 * copy of examples/workspace): typing after Ctrl+A keeps every key in the search box and
 * the Ask box; a bad filter says where in the panel; the query box stays in view while the
 * keyboard moves through the results; at 170 px nothing scrolls sideways; a server that
 * does not start leaves an empty state with its actions, which goes once it is fixed.
 *
 * Waits are on conditions, never on fixed sleeps. Screenshots: test-artifacts/ux-*.png;
 * KB_UPDATE_SCREENSHOT=1 also writes docs/panel-narrow.png.
 */
import { strict as assert } from 'node:assert';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FrameLocator } from 'playwright-core';
import { artifact, REPO_ROOT } from '../shared/browser';
import { CodeServer, until } from '../shared/codeServer';
import { sampleWorkspace, serverPython } from '../shared/server';

// Keys at about the pace a quick typist reaches (the issue measured at 120 ms), and at
// once: the workbench's own select-all came back after the first keys, and how long it
// takes depends on the machine's load — typing at once makes a quiet machine show it too
// (without the fix, 0 ms lost the first letters here 2 times in 3; 100 ms, on a quiet
// machine, none).
const KEY_DELAYS_MS = [0, 100];

function settings(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { 'kb.server.python': serverPython(), 'kb.ollama.host': 'http://127.0.0.1:9', ...extra };
}

/** The sidebar (where the panel lives) as an image; with KB_UPDATE_SCREENSHOT=1 in docs/ too. */
async function sidebarShot(vs: CodeServer, name: string, docsName?: string): Promise<void> {
  await vs.page.mouse.move(900, 600);
  const box = await vs.page.locator('.part.sidebar').boundingBox();
  const path = artifact(name);
  await vs.page.screenshot({ path, ...(box ? { clip: box } : {}) });
  if (docsName && process.env.KB_UPDATE_SCREENSHOT === '1') {
    mkdirSync(join(REPO_ROOT, 'docs'), { recursive: true });
    cpSync(path, join(REPO_ROOT, 'docs', docsName));
  }
}

describe('the panel in code-server: keys, filter errors, the sticky box, 170 px', { timeout: 10 * 60_000 }, () => {
  const vs = new CodeServer();
  let frame: FrameLocator;

  before(async () => {
    await vs.start(sampleWorkspace('kb-ux-e2e-'), settings());
    frame = await vs.openPanel();
    await vs.page.locator('.statusbar-item', { hasText: 'KB: ready' }).first().waitFor();
    await frame.locator('#status-text', { hasText: 'Ready' }).waitFor();
  });

  after(async () => {
    if (process.env.KB_E2E_LOG) {
      writeFileSync(artifact('ux-code-server.log'), vs.log);
    }
    await vs.stop();
  });

  it('Ctrl+A then typing keeps every character, in the search box and in the Ask box', async () => {
    try {
      const query = frame.locator('#query');
      await query.click();
      await vs.page.keyboard.type('tag:runbook');
      for (const delay of KEY_DELAYS_MS) {
        for (const text of ['mexico payment files', 'deploy checklist', 'incident response']) {
          await vs.page.keyboard.press('Control+A');
          await vs.page.keyboard.type(text, { delay });
          assert.equal(await query.inputValue(), text, `typed at ${delay} ms a key`);
        }
      }
      // The workbench did not select anything of its own (its select-all lands in the editor area).
      await frame.locator('#results li.hit').first().waitFor();
      await frame.locator('#tab-ask').click();
      const question = frame.locator('#question');
      await question.click();
      await vs.page.keyboard.type('What is PIX?');
      for (const delay of KEY_DELAYS_MS) {
        for (const text of ['What is SPEI?', 'When are deploys frozen?', 'What is the cut-off?']) {
          await vs.page.keyboard.press('Control+A');
          await vs.page.keyboard.type(text, { delay });
          assert.equal(await question.inputValue(), text, `typed at ${delay} ms a key`);
        }
      }
      await question.fill('');
      await frame.locator('#tab-search').click();
    } catch (err) {
      await vs.shot('ux-failure-ctrl-a.png').catch(() => undefined);
      throw err;
    }
  });

  it("shows a bad filter's error with the character it is at, not \"No matches\"", async () => {
    try {
      const query = frame.locator('#query');
      await query.fill('payments modified>2026-13-01');
      await query.press('Enter');
      const error = frame.locator('#search-error');
      await error.waitFor();
      assert.match((await error.textContent()) ?? '', /The query has a problem at character 19: '2026-13-01' is not a date/);
      assert.equal(await error.locator('.search-error-at').textContent(), '2');
      assert.equal(await frame.locator('#results li.hit').count(), 0);
      assert.doesNotMatch((await frame.locator('#pane-search').textContent()) ?? '', /No matches/);
      await vs.shot('ux-bad-filter.png');
      // Fixed: the error goes, the list comes.
      await query.fill('payments modified>2026-10-01');
      await query.press('Enter');
      await error.waitFor({ state: 'hidden' });
      await frame.locator('#search-info', { hasText: 'for “payments modified>2026-10-01”' }).waitFor();
    } catch (err) {
      await vs.shot('ux-failure-bad-filter.png').catch(() => undefined);
      throw err;
    }
  });

  it('keeps the query box in view while the keyboard moves through the results and opens one', async () => {
    try {
      await vs.page.setViewportSize({ width: 1400, height: 520 });
      const query = frame.locator('#query');
      await query.fill('payments');
      await query.press('Enter');
      // This query's list, not the one the last test left (it may have 9 rows too).
      await frame.locator('#search-info', { hasText: 'for “payments”' }).waitFor();
      await frame.locator('#results li.hit').nth(8).waitFor();
      await query.focus();
      for (let i = 0; i < 9; i++) {
        await vs.page.keyboard.press('ArrowDown');
      }
      const where = () =>
        frame.locator('body').evaluate(() => {
          const rect = (id: string) => (document.getElementById(id) as HTMLElement).getBoundingClientRect();
          const selected = (document.querySelector('li.hit.selected') as HTMLElement).getBoundingClientRect();
          return {
            paneTop: rect('pane-search').top,
            paneBottom: rect('pane-search').bottom,
            queryTop: rect('query').top,
            headBottom: rect('search-head').bottom,
            selectedTop: selected.top,
            selectedBottom: selected.bottom,
            scrolled: (document.getElementById('pane-search') as HTMLElement).scrollTop,
          };
        });
      const deep = await until(where, (w) => w.scrolled > 0, 'the list to scroll under the box');
      assert.ok(deep.queryTop >= deep.paneTop - 1, `the box stays on top: ${JSON.stringify(deep)}`);
      assert.ok(deep.selectedTop >= deep.headBottom - 1 && deep.selectedBottom <= deep.paneBottom + 1, `the selected row shows: ${JSON.stringify(deep)}`);
      await vs.shot('ux-sticky.png');
      await vs.page.keyboard.press('Home');
      await vs.page.keyboard.press('3');
      await vs.page.locator('.tabs-container .tab.active').first().waitFor();
      const opened = await where();
      assert.ok(opened.queryTop >= opened.paneTop - 1, `the box is still there after opening result 3: ${JSON.stringify(opened)}`);
    } catch (err) {
      await vs.shot('ux-failure-sticky.png').catch(() => undefined);
      throw err;
    } finally {
      await vs.page.setViewportSize({ width: 1400, height: 900 });
    }
  });

  it('at 170 px: nothing scrolls sideways, the file name comes first, the tabs are whole', async () => {
    try {
      const width = await vs.sideBarWidth(170);
      assert.ok(width <= 200, `the side bar is ${width} px`);
      const query = frame.locator('#query');
      await query.fill('payments');
      await query.press('Enter');
      await frame.locator('#results li.hit').nth(2).waitFor();
      const layout = await until(
        () =>
          frame.locator('body').evaluate(() => {
            // A hit in a folder (the sample's payments notes are): its name and its folder both shown.
            const hit = Array.from(document.querySelectorAll<HTMLElement>('#results li.hit')).find((li) => li.querySelector('.hit-dir'));
            const file = hit?.querySelector<HTMLElement>('.hit-file');
            const dir = hit?.querySelector<HTMLElement>('.hit-dir');
            return {
              width: document.documentElement.clientWidth,
              sideways: Math.max(
                document.documentElement.scrollWidth - document.documentElement.clientWidth,
                ...Array.from(document.querySelectorAll<HTMLElement>('.pane')).map((p) => p.scrollWidth - p.clientWidth),
              ),
              fileFirst: file && dir ? file.getBoundingClientRect().left <= dir.getBoundingClientRect().left : null,
              tabsClipped: Array.from(document.querySelectorAll<HTMLElement>('.tab')).filter(
                (t) => t.scrollWidth > t.clientWidth + 1 || t.getBoundingClientRect().right > window.innerWidth,
              ).length,
            };
          }),
        (l) => l.width < 200,
        'the panel to be narrow',
      );
      assert.equal(layout.sideways, 0, 'no horizontal scroll');
      assert.equal(layout.fileFirst, true, 'a hit with its folder shown, the file name before the folder');
      assert.equal(layout.tabsClipped, 0, 'no tab cut off');
      await sidebarShot(vs, 'ux-narrow-search.png', 'panel-narrow.png');
      await frame.locator('#tab-ask').click();
      // kb.ollama.host is a closed port: the card saying so is shown, and must stay small.
      await frame.locator('#model-card').waitFor({ state: 'visible' });
      const card = await frame.locator('#model-card').boundingBox();
      const pane = await frame.locator('#pane-ask').boundingBox();
      assert.ok(card && pane, 'the model card and the Ask pane are both laid out');
      assert.ok(card.height <= pane.height * 0.3, `the model card takes ${card.height} of ${pane.height} px`);
      assert.equal(await frame.locator('body').evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), 0);
      await sidebarShot(vs, 'ux-narrow-ask.png');
      await frame.locator('#tab-search').click();
    } catch (err) {
      await vs.shot('ux-failure-narrow.png').catch(() => undefined);
      throw err;
    }
  });
});

describe('a server that does not start, in code-server (a remote window)', { timeout: 10 * 60_000 }, () => {
  const vs = new CodeServer();
  let frame: FrameLocator;

  before(async () => {
    // Debian's python3 has no kb_lsp: the launch check fails with "not installed".
    await vs.start(sampleWorkspace('kb-failed-e2e-'), settings({ 'kb.server.python': '/usr/bin/python3' }));
    frame = await vs.openPanel();
  });

  after(async () => {
    if (process.env.KB_E2E_LOG) {
      writeFileSync(artifact('ux-failed-code-server.log'), vs.log);
    }
    await vs.stop();
  });

  it('shows an empty state with its actions; Open Server Settings lands on the Remote tab; it goes once fixed', async () => {
    try {
      const box = frame.locator('#server-problem');
      await box.waitFor({ timeout: 120_000 });
      const facts = await box.locator('.empty-fact').allTextContents();
      assert.ok(facts.some((f) => /not installed/.test(f) && f.includes('/usr/bin/python3')), facts.join(' | '));
      const install = (await box.locator('.install-command').textContent()) ?? '';
      assert.match(install, /pip install/);
      assert.doesNotMatch(install, /pip install kb-lsp\b/, 'not a package name on PyPI that may be someone else');
      // Dismissing the notification leaves the empty state whole, not a cut-off line.
      await vs.page.locator('.notifications-toasts .notification-toast').first().waitFor();
      await vs.page.keyboard.press('Escape');
      assert.equal(await box.evaluate((el) => el.scrollWidth <= el.clientWidth), true, 'nothing cut off');
      for (const action of ['openServerSettings', 'showLog', 'copyInstall', 'restartServer']) {
        assert.equal(await box.locator(`[data-action="${action}"]`).count(), 1, `the ${action} action`);
      }
      await vs.shot('ux-server-failed.png');
      // A search now: the same empty state, no bare error line.
      await frame.locator('#query').fill('deploy');
      await frame.locator('#query').press('Enter');
      assert.equal(await frame.locator('#search-error').isVisible(), false);
      assert.equal(await box.isVisible(), true);

      await box.locator('[data-action="openServerSettings"]').click();
      const editor = vs.page.locator('.settings-editor');
      await editor.waitFor();
      await until(
        () => editor.locator('.settings-header .search-container textarea, .settings-header .search-container input').first().inputValue(),
        (value) => value.includes('kb.server.python'),
        'the Settings editor filtered to kb.server.python',
      );
      await editor.locator('.settings-tabs-widget .checked', { hasText: /Remote/ }).waitFor();
      await editor.locator('.setting-item', { hasText: 'Python' }).first().waitFor();
      await vs.shot('ux-server-settings.png');
      await vs.runCommand('View: Close Editor');

      // The fix, where a remote window reads it: the server starts, the empty state goes.
      await vs.setRemoteSettings({ 'kb.server.python': serverPython() });
      await box.waitFor({ state: 'hidden', timeout: 120_000 });
      await frame.locator('#status-text', { hasText: 'Ready' }).waitFor({ timeout: 120_000 });
      await vs.page.locator('.statusbar-item', { hasText: 'KB: ready' }).first().waitFor();
    } catch (err) {
      await vs.shot('ux-failure-server-failed.png').catch(() => undefined);
      throw err;
    }
  });
});

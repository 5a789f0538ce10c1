/**
 * Issue 39's chat conventions in a real VS Code (code-server 4.100.3, the packaged .vsix,
 * the real server on a copy of examples/workspace) with the scripted OpenAI-compatible
 * model of tests/fakes/:
 *
 * 1. the history: a conversation is listed and reopened after a window reload, and goes on;
 * 2. Regenerate asks the last question again in place of its answer; Edit resends a
 *    question with only the turns before it;
 * 3. ↑ in the empty Ask box recalls the last question;
 * 4. the model in the box: its chip names the model, a click is Choose a Model…;
 * 5. the open-file chip attaches the editor's Markdown file (the server's "over this file"),
 *    the selection chip its selected lines (`AskParams.lines`);
 * 6. Escape in the search box keeps the query and its list; in the Ask box it does not
 *    stop an answer; Stop (`kb/stopAsk`) ends it and the answer keeps its sources;
 * 7. the result hover card renders its passage, clear of the rows beside it (defect 10).
 *
 * Waits are on conditions, never on fixed sleeps. Screenshots: test-artifacts/turns-*.png.
 */
import { strict as assert } from 'node:assert';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FrameLocator } from 'playwright-core';
import { artifact, REPO_ROOT } from '../shared/browser';
import { CodeServer, until } from '../shared/codeServer';
import { sampleWorkspace, serverPython } from '../shared/server';
import { startStandIn, type StandIn } from '../shared/standIns';

const vs = new CodeServer();
let frame: FrameLocator;
let model: StandIn;
let silent: StandIn;
let quoting: StandIn;

const ANSWER = 'Deploys of the payments service are frozen [1].';
// For the README's pictures: an answer in the checklist's own words, so it is supported.
const SUPPORTED =
  'No deploys during the month-end close: from the last two business days of the month until business day 3 of the next [1].';

/** No notification toasts in the picture (code-server's remote-settings warning among them). */
async function clearToasts(): Promise<void> {
  await vs.runCommand('Notifications: Clear All Notifications');
  await until(() => vs.page.locator('.notifications-toasts .notification-toast').count(), (n) => n === 0, 'the toasts to close');
}

/** An image in test-artifacts/ (`clip`: the side bar only); with KB_UPDATE_SCREENSHOT=1 in docs/ too.
 * The toasts are cleared first, unless a quick pick is open (the command palette would close it). */
async function docsShot(name: string, docsName: string, clip: boolean): Promise<void> {
  if (clip) {
    await clearToasts();
  }
  const box = clip ? await vs.page.locator('.part.sidebar').boundingBox() : null;
  const path = artifact(name);
  await vs.page.screenshot({ path, ...(box ? { clip: box } : {}) });
  if (process.env.KB_UPDATE_SCREENSHOT === '1') {
    mkdirSync(join(REPO_ROOT, 'docs'), { recursive: true });
    cpSync(path, join(REPO_ROOT, 'docs', docsName));
  }
}

/** `KB: Choose a Model…` (or the box's chip) → llama-server → `url` → `name`. */
async function pickModel(url: string, name: string): Promise<void> {
  const row = (text: string) => vs.page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: text }).first();
  await row('llama-server (llama.cpp)').click();
  const input = vs.page.locator('.quick-input-widget .quick-input-box input');
  await until(() => input.inputValue(), (value) => value.startsWith('http'), 'the address box');
  await input.fill(url);
  await input.press('Enter');
  await row(name).click();
  await until(
    () => Promise.resolve(vs.readUserSettings()),
    (s) => s['kb.llm.baseUrl'] === url && s['kb.llm.model'] === name,
    `${name} at ${url} in the User settings`,
  );
}

/** Ask from the box and wait for the answer's end (the Ask button is back). */
async function ask(question: string): Promise<void> {
  await frame.locator('#tab-ask').click();
  await frame.locator('#question').fill(question);
  await frame.locator('#question').press('Enter');
  await frame.locator('.question', { hasText: question }).last().waitFor();
  await answered();
}

async function answered(): Promise<void> {
  await frame.locator('.question.pending').waitFor({ state: 'detached', timeout: 120_000 });
  await until(() => frame.locator('#ask-button').textContent(), (text) => text === 'Ask', 'the Ask button to come back');
}

/** The panel after a window reload, opened by `KB: Show Panel` (which opens, never toggles):
 * VS Code may restore the side bar open a moment after the window loads, and a click on the
 * activity-bar icon would then close it again. The command is asked for once the extension
 * is running again (its status item says the server is ready): a palette opened sooner can
 * list the commands of before the extensions were read, without it. */
async function panelAfterReload(): Promise<FrameLocator> {
  await vs.page.locator('.statusbar-item', { hasText: 'KB: ready' }).first().waitFor();
  await vs.runCommand('KB: Show Panel');
  const panel = vs.panel();
  await panel.locator('#status-text').waitFor();
  return panel;
}

const questions = () => frame.locator('#transcript .q-text').allTextContents();

async function shotOnFailure(name: string, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (err) {
    await vs.shot(`turns-failure-${name}.png`).catch(() => undefined);
    throw err;
  }
}

describe('chat turns in code-server: history, Regenerate, Edit, ↑, the chips, Escape, Stop', { timeout: 12 * 60_000 }, () => {
  before(async () => {
    model = await startStandIn('openai', ['smollm2', 'qwen2.5-0.5b-instruct'], { content: ANSWER });
    // Sends a few pieces of its answer, then goes silent until the end.
    silent = await startStandIn('openai', ['smollm2'], { content: 'Deploys are frozen on Fridays, because '.repeat(4), stall_after: 3 });
    quoting = await startStandIn('openai', ['qwen2.5-0.5b-instruct', 'llama3.2:3b'], { content: SUPPORTED });
    await vs.start(sampleWorkspace('kb-turns-e2e-'), {
      'kb.server.python': serverPython(),
      'kb.ollama.host': 'http://127.0.0.1:9',
      'kb.llm.mode': 'grounded',
      'kb.llm.provider': 'openai',
      'kb.llm.baseUrl': model.url,
      'kb.llm.model': 'smollm2',
    });
    frame = await vs.openPanel();
    await vs.page.locator('.statusbar-item', { hasText: 'KB: ready' }).first().waitFor();
  });

  after(async () => {
    if (process.env.KB_E2E_LOG) {
      writeFileSync(artifact('turns-code-server.log'), vs.log);
    }
    await vs.stop();
    model?.stop();
    silent?.stop();
    quoting?.stop();
  });

  it('a conversation is in the history after a window reload; reopened, it goes on', () =>
    shotOnFailure('history', async () => {
      await ask('When are deploys frozen?');
      assert.match((await frame.locator('.answer').last().textContent()) ?? '', /frozen/);
      // The extension keeps the conversation once the answer is in (`saveChat`): listed here,
      // it is in the workspace's storage — a reload sooner could outrun the save, not test it.
      await frame.locator('#history-button').click();
      await frame.locator('#history .history-title', { hasText: 'When are deploys frozen?' }).waitFor();
      await frame.locator('#history-button').click();
      await vs.page.reload();
      frame = await panelAfterReload();
      await frame.locator('#tab-ask').click();
      await frame.locator('#new-chat').click();
      assert.deepEqual(await questions(), [], 'a new chat');
      await frame.locator('#history-button').click();
      await frame.locator('#history .history-title', { hasText: 'When are deploys frozen?' }).click();
      await frame.locator('#history').waitFor({ state: 'hidden' });
      assert.deepEqual(await questions(), ['When are deploys frozen?'], 'the reopened conversation');
      assert.match((await frame.locator('.answer').last().textContent()) ?? '', /frozen/);
      await vs.shot('turns-history.png');
      await ask('And who approves an exception?');
      assert.deepEqual(await questions(), ['When are deploys frozen?', 'And who approves an exception?'], 'it goes on');
    }));

  it('Regenerate answers the last question again in place of its answer; Edit resends a question from there', () =>
    shotOnFailure('regenerate', async () => {
      const before = await questions();
      const answers = await frame.locator('.answer').count();
      await frame.locator('.turn-regenerate').click();
      await answered();
      assert.deepEqual(await questions(), before, 'the same questions, the last one asked again');
      assert.equal(await frame.locator('.answer').count(), answers, 'its answer replaced, not added');
      await frame.locator('.question').first().locator('.turn-edit').click();
      assert.equal(await frame.locator('#question').inputValue(), before[0]);
      await frame.locator('#ask-editing', { hasText: /Editing question 1/ }).waitFor();
      await frame.locator('#question').fill('When are payments deploys frozen?');
      await frame.locator('#question').press('Enter');
      await answered();
      assert.deepEqual(await questions(), ['When are payments deploys frozen?'], 'only the turns before the edited one');
      assert.equal(await frame.locator('.answer').count(), 1);
    }));

  it('↑ in the empty Ask box recalls the last question', () =>
    shotOnFailure('recall', async () => {
      const box = frame.locator('#question');
      await box.fill('');
      await box.press('ArrowUp');
      assert.equal(await box.inputValue(), 'When are payments deploys frozen?');
      await box.fill('');
    }));

  it("the box's model chip names the model; a click is Choose a Model…, and the chip follows the choice", () =>
    shotOnFailure('model-chip', async () => {
      const chip = frame.locator('#composer-chips .model-chip');
      await until(() => chip.textContent(), (text) => /smollm2/.test(text ?? ''), 'the chip to name smollm2');
      await chip.click();
      await pickModel(model.url, 'qwen2.5-0.5b-instruct');
      await until(() => chip.textContent(), (text) => /qwen2\.5-0\.5b-instruct/.test(text ?? ''), 'the chip to follow the choice');
      await vs.shot('turns-model-chip.png');
    }));

  it('the open-file chip asks over the open Markdown file', () =>
    shotOnFailure('file-chip', async () => {
      await vs.openFile('deploy-checklist.md');
      await frame.locator('#new-chat').click();
      const chip = frame.locator('#composer-chips .context-chip');
      await until(() => chip.textContent(), (text) => /engineering\/deploy-checklist\.md/.test(text ?? ''), 'the chip to offer the open file');
      await chip.click();
      await frame.locator('#composer-chips .context-chip.attached').waitFor();
      await ask('What does it say about freezes?');
      assert.equal(await frame.locator('.question .q-file').last().textContent(), '(about engineering/deploy-checklist.md)');
      await frame.locator('#composer-chips .context-chip.attached').click();
      await frame.locator('#composer-chips .context-chip.attached').waitFor({ state: 'detached' });
    }));

  it("the selection chip asks over the editor's selected lines alone", () =>
    shotOnFailure('selection-chip', async () => {
      await vs.openFile('deploy-checklist.md');
      await vs.runCommand('Go to Line/Column');
      await vs.page.keyboard.type('8');
      await vs.page.keyboard.press('Enter');
      for (let i = 0; i < 3; i++) {
        await vs.page.keyboard.press('Shift+ArrowDown');
      }
      await frame.locator('#new-chat').click();
      const chip = frame.locator('#composer-chips .context-chip');
      const offered = '+ the selection (engineering/deploy-checklist.md:L8–10)';
      await until(() => chip.textContent(), (text) => text === offered, 'the chip to offer the selected lines');
      await chip.click();
      await frame.locator('#composer-chips .context-chip.attached').waitFor();
      await ask('When are deploys frozen?');
      assert.equal(await frame.locator('.question .q-file').last().textContent(), '(about engineering/deploy-checklist.md L8–10)');
      // The server made the answer from those lines alone: its one source lies within them.
      const sources = await frame.locator('.answer').last().locator('.sources li').allTextContents();
      assert.equal(sources.length, 1, sources.join(' | '));
      assert.match(sources[0] ?? '', /engineering\/deploy-checklist\.md L(8|9|10)(–(9|10))?$/);
      await vs.shot('turns-selection-chip.png');
      await frame.locator('#composer-chips .context-chip.attached').click();
      await frame.locator('#composer-chips .context-chip.attached').waitFor({ state: 'detached' });
    }));

  it('Escape in the search box keeps the query and its list', () =>
    shotOnFailure('escape-search', async () => {
      await frame.locator('#tab-search').click();
      const query = frame.locator('#query');
      await query.fill('payments');
      await query.press('Enter');
      await frame.locator('#search-info', { hasText: 'for “payments”' }).waitFor();
      const listed = await frame.locator('#results li.hit').count();
      assert.ok(listed > 0);
      await query.press('Escape');
      assert.equal(await query.inputValue(), 'payments');
      assert.equal(await frame.locator('#results li.hit').count(), listed);
    }));

  it("the result hover card shows the file's passage as Markdown, clear of the rows below the pointed one (defect 10)", () =>
    shotOnFailure('hover', async () => {
      await frame.locator('#tab-search').click();
      await frame.locator('#results li.hit').nth(3).waitFor();
      await frame.locator('#hit-1').hover();
      const passage = frame.locator('#hover .hover-passage.is-passage');
      await passage.waitFor();
      assert.doesNotMatch((await passage.textContent()) ?? '', /(^|\n)#{1,6} |```|\{ *#[\w-]+ *\}/, 'no Markdown syntax as text');
      const covered = await frame.locator('#results').evaluate((list) => {
        const card = (list.ownerDocument.getElementById('hover') as HTMLElement).getBoundingClientRect();
        return ['hit-1', 'hit-2', 'hit-3', 'hit-4']
          .map((id) => (list.ownerDocument.getElementById(id) as HTMLElement).getBoundingClientRect())
          .map((row, i) => (card.top < row.bottom && card.bottom > row.top ? i + 1 : 0))
          .filter(Boolean);
      });
      assert.deepEqual(covered, [], `the card covers rows ${covered.join(', ')}`);
      await vs.shot('turns-hover.png');
      await vs.page.mouse.move(900, 600);
    }));

  it('Escape in the Ask box does not stop an answer; Stop ends it and it keeps its sources', () =>
    shotOnFailure('escape-ask', async () => {
      await vs.runCommand('KB: Choose a Model…');
      await pickModel(silent.url, 'smollm2');
      await frame.locator('#tab-ask').click();
      await frame.locator('#new-chat').click();
      await frame.locator('#question').fill('When are deploys frozen?');
      await frame.locator('#question').press('Enter');
      await frame.locator('.pending-answer', { hasText: 'Deploys are' }).waitFor({ timeout: 120_000 });
      await frame.locator('#question').press('Escape');
      await frame.locator('#transcript').press('Escape');
      assert.equal(await frame.locator('#ask-button').textContent(), 'Stop', 'Escape stopped nothing');
      assert.equal(await frame.locator('.pending-answer').count(), 1);
      await frame.locator('#ask-button').click();
      const stopped = frame.locator('.answer.stop-cancelled').last();
      await stopped.waitFor();
      assert.match((await stopped.locator('.markdown').textContent()) ?? '', /Deploys are/, 'what streamed in stays');
      assert.equal(await stopped.locator('.stop-note').textContent(), 'Stopped.');
      await stopped.locator('.sources li').first().waitFor();
      await vs.shot('turns-stopped.png');
      await until(() => frame.locator('#ask-button').textContent(), (text) => text === 'Ask', 'the Ask button to come back');
    }));

  it("pictures for the README: the history and the model picker, wide and at 170 px", () =>
    shotOnFailure('docs-shots', async () => {
      await vs.runCommand('View: Close All Editors');
      await clearToasts();
      await vs.runCommand('KB: Choose a Model…');
      await pickModel(quoting.url, 'qwen2.5-0.5b-instruct');
      await frame.locator('#tab-ask').click();
      await frame.locator('#new-chat').click();
      await ask('When are deploys frozen?');
      const answer = frame.locator('.answer').last();
      assert.match((await answer.textContent()) ?? '', /month-end close/);
      await answer.locator('.badge.verdict-supported').waitFor();
      await frame.locator('#history-button').click();
      await frame.locator('#history .history-title').first().waitFor();
      await docsShot('turns-docs-history.png', 'panel-history.png', true);
      await frame.locator('#history-button').click();
      await docsShot('turns-docs-ask.png', 'panel-ask.png', true);
      // The picker from the box's chip: the configured server comes first, straight to its models.
      await frame.locator('#composer-chips .model-chip').click();
      const row = (text: string) => vs.page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: text }).first();
      await row(`Another model at ${quoting.url}`).click();
      await row('llama3.2:3b').waitFor();
      const asking = vs.page.locator('.notifications-toasts .notification-toast', { hasText: 'for its models' });
      await until(() => asking.count(), (n) => n === 0, 'the "asking for its models" note to go');
      await docsShot('turns-docs-model-picker.png', 'panel-model-picker.png', false);
      await vs.page.keyboard.press('Escape');
      await vs.page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
      const width = await vs.sideBarWidth(170);
      assert.ok(width <= 200, `the side bar is ${width} px`);
      await docsShot('turns-docs-chat-narrow.png', 'panel-chat-narrow.png', true);
      await frame.locator('#history-button').click();
      await frame.locator('#history .history-title').first().waitFor();
      await docsShot('turns-docs-history-narrow.png', 'panel-history-narrow.png', true);
      await frame.locator('#history-button').click();
    }));
});

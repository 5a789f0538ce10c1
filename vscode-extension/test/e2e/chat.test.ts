/**
 * Issue 24 in a real VS Code (code-server 4.100.3, the packaged .vsix, the real server on a
 * copy of examples/workspace) with the scripted OpenAI-compatible model of tests/fakes/:
 *
 * 1. `KB: Choose a Model…` → "llama-server" → its address → a model the server lists
 *    writes kb.llm.provider, kb.llm.baseUrl and kb.llm.model; "no model" goes;
 * 2. a grounded answer: each `[n]` is a link that opens its source's lines, and the
 *    sources list each file once; one verdict badge, the mode as its small print, an
 *    unsupported model text folded under the quotes (issue 35);
 * 3. a model that goes silent mid-answer: Stop ends the answer, the Ask button is back;
 * 4. the panel shows the list `KB: Search` (the quick pick) made last, with its query, and
 *    `KB: Open Result…` 7 opens the panel's #7.
 *
 * Waits are on conditions, never on fixed sleeps. Screenshots: test-artifacts/chat-*.png.
 */
import { strict as assert } from 'node:assert';
import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FrameLocator } from 'playwright-core';
import { artifact } from '../shared/browser';
import { CodeServer, until } from '../shared/codeServer';
import { sampleWorkspace, serverPython } from '../shared/server';
import { startStandIn, type StandIn } from '../shared/standIns';

const vs = new CodeServer();
let frame: FrameLocator;
let model: StandIn;
let silent: StandIn;

// The scripted model's one answer, citing the passages it is given by their numbers.
const ANSWER = 'Deploys of the payments service are frozen [1], as the checklist says [2][3][4].';

function settings(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    'kb.server.python': serverPython(),
    'kb.ollama.host': 'http://127.0.0.1:9',
    // Answers from numbered passages, which is what `[n]` cites.
    'kb.llm.mode': 'grounded',
    ...extra,
  };
}

async function statusBarText(): Promise<string> {
  return (await vs.page.locator('.statusbar-item', { hasText: 'KB:' }).first().innerText()).replace(/\s+/g, ' ');
}

/** The row of the open quick pick (or quick input list) that reads `text`. */
function row(text: string | RegExp) {
  return vs.page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: text }).first();
}

async function ask(question: string): Promise<void> {
  await frame.locator('#tab-ask').click();
  await frame.locator('#question').fill(question);
  await frame.locator('#question').press('Enter');
  await frame.locator('.question', { hasText: question }).last().waitFor();
}

/** The editor's cursor line (the status bar's `Ln N, Col M`). */
async function cursorLine(): Promise<number> {
  const text = await vs.page.locator('.statusbar-item', { hasText: /^Ln \d+, Col \d+/ }).first().innerText();
  return Number(/Ln (\d+)/.exec(text)?.[1]);
}

/** `KB: Choose a Model…` → `preset` → `url` → `name`; resolves once the User settings say so. */
async function chooseModel(preset: string, url: string, name: string): Promise<Record<string, unknown>> {
  await vs.runCommand('KB: Choose a Model…');
  await row(preset).click();
  const input = vs.page.locator('.quick-input-widget .quick-input-box input');
  await until(() => input.inputValue(), (value) => value.startsWith('http'), "the preset's usual address as the default");
  await input.fill(url);
  await input.press('Enter');
  await row(name).click();
  return until(
    () => Promise.resolve(vs.readUserSettings()),
    (s) => s['kb.llm.baseUrl'] === url && s['kb.llm.model'] === name,
    `${name} at ${url} in the User settings`,
  );
}

describe('Ask in code-server: the model picker, citations, Stop, one last list', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    // llama-server's API listing two models; every chat answers ANSWER.
    model = await startStandIn('openai', ['qwen2.5-0.5b-instruct', 'smollm2'], { content: ANSWER });
    // A model that sends a few pieces of its answer, then goes silent until the end.
    silent = await startStandIn('openai', ['smollm2'], { content: 'Deploys are frozen on Fridays, because '.repeat(4), stall_after: 3 });
    await vs.start(sampleWorkspace('kb-chat-e2e-'), settings());
    frame = await vs.openPanel();
    await vs.page.locator('.statusbar-item', { hasText: 'KB: ready' }).first().waitFor();
  });

  after(async () => {
    if (process.env.KB_E2E_LOG) {
      writeFileSync(artifact('chat-code-server.log'), vs.log);
    }
    await vs.stop();
    model?.stop();
    silent?.stop();
  });

  it('KB: Choose a Model… with llama-server sets the provider, the base URL and a model the server lists', async () => {
    try {
      // No model yet: the server's probe of 127.0.0.1:9 says so.
      await until(statusBarText, (text) => /no model/.test(text), 'the status bar to say "no model"');
      await vs.runCommand('KB: Choose a Model…');
      await row('llama-server (llama.cpp)').click();
      const input = vs.page.locator('.quick-input-widget .quick-input-box input');
      await until(() => input.inputValue(), (value) => value === 'http://127.0.0.1:8080/v1', "llama-server's usual address as the default");
      await input.fill(model.url);
      await input.press('Enter');
      // The models the server lists, as a second pick.
      await row('smollm2').waitFor();
      assert.ok(await row('qwen2.5-0.5b-instruct').isVisible(), 'every model the server lists is offered');
      await vs.shot('chat-model-picker.png');
      await row('smollm2').click();
      const saved = await until(
        () => Promise.resolve(vs.readUserSettings()),
        (s) => s['kb.llm.model'] === 'smollm2',
        'the choice to be written to the User settings',
      );
      assert.equal(saved['kb.llm.provider'], 'openai');
      assert.equal(saved['kb.llm.baseUrl'], model.url);
      assert.equal(saved['kb.llm.model'], 'smollm2');
      // Re-probed on the change: the model answers, so "no model" goes from every surface.
      await until(statusBarText, (text) => !/no model/.test(text) && /KB: ready/.test(text), 'the status bar to drop "no model"');
      await frame.locator('#tab-ask').click();
      await frame.locator('#model-card').waitFor({ state: 'hidden' });
      assert.doesNotMatch((await frame.locator('#status-text').textContent()) ?? '', /no model/);
    } catch (err) {
      await vs.shot('chat-failure-picker.png').catch(() => undefined);
      throw err;
    }
  });

  it('a grounded answer: [1] opens the lines it cites; each file is listed once', async () => {
    try {
      // The answer opens with quotes from the passages (`[path:lines]`), then the model's
      // text citing them by number; the deploy checklist is quoted and cited.
      await ask('When are deploys frozen?');
      const answer = frame.locator('.answer').last();
      await answer.locator('.sources li').first().waitFor({ timeout: 120_000 });
      // One verdict in the DOM (issue 35): one badge, never "grounded" beside "ungrounded";
      // the mode is small print, and text the check does not support is folded.
      const badges = await answer.locator('.badge').allTextContents();
      assert.equal(badges.length, 1, `one badge: ${badges.join(', ')}`);
      assert.ok(['supported', 'not supported by the notes'].includes(badges[0] ?? ''), `the verdict: ${badges[0]}`);
      assert.match((await answer.locator('.mode-note').textContent()) ?? '', /^grounded mode/);
      assert.equal(await answer.locator('.badge', { hasText: /^grounded$|ungrounded/ }).count(), 0);
      assert.equal(await answer.locator('.sources-title').textContent(), 'Passages the model was given');
      if (badges[0] !== 'supported') {
        const fold = answer.locator('details.folded-answer summary');
        assert.match((await fold.textContent()) ?? '', /not supported by your notes — show it/);
        await fold.click(); // the model's citations below are in the fold
      }
      const cites = answer.locator('a.cite');
      const texts = await cites.allTextContents();
      const quotes = texts.filter((t) => /^\[[^\]]+\.md:\d+(-\d+)?\]$/.test(t));
      const numbers = texts.filter((t) => /^\[\d+\]$/.test(t));
      assert.ok(quotes.length >= 1, `the quotes come first, each a link: ${texts.join(' ')}`);
      assert.deepEqual(texts.slice(0, quotes.length), quotes, "the quotes come before the model's text");
      assert.ok(numbers.length >= 1, `the model's citations: ${texts.join(' ')}`);
      assert.deepEqual(numbers, numbers.map((_, i) => `[${i + 1}]`), 'every number is a link');
      assert.equal(quotes.length + numbers.length, texts.length, 'every citation is a link');
      const citedFiles = (await cites.evaluateAll((els) => els.map((e) => e.getAttribute('title') ?? ''))).map((t) => t.split(' ')[0]);
      assert.ok(new Set(citedFiles).size < citedFiles.length, `a file cited twice (the case this checks): ${citedFiles.join(', ')}`);
      const listed = await answer.locator('.sources li a.source').allTextContents();
      assert.deepEqual([...listed].sort(), [...new Set(citedFiles)].sort(), 'each cited file listed once');
      // (An unsupported model text is a markdown block of its own, in the fold.)
      assert.doesNotMatch((await answer.locator('.markdown').allTextContents()).join('\n'), /Sources:/, 'no "Sources:" paragraph besides the list');
      // Steps fold into one line.
      assert.ok((await frame.locator('.steps-summary, details.steps summary').count()) <= 1);
      await vs.shot('chat-citations.png');
      const first = answer.locator('a.cite:not(.cite-path)').first();
      const title = (await first.getAttribute('title')) ?? '';
      const cited = /^(\S+\.md) L(\d+)/.exec(title);
      assert.ok(cited, `[1] names its source: ${title}`);
      const [, path, line] = cited;
      assert.ok(listed.includes(path), `[1]'s file is in the sources: ${path} in ${listed.join(', ')}`);
      await first.click();
      await vs.page.locator('.tabs-container .tab.active', { hasText: basename(path) }).waitFor();
      await until(cursorLine, (at) => at === Number(line), `the cursor on line ${line} of ${path}`);
    } catch (err) {
      await vs.shot('chat-failure-citations.png').catch(() => undefined);
      throw err;
    }
  });

  it('Stop ends an answer the model went silent in; Ask is back', async () => {
    try {
      await chooseModel('llama-server (llama.cpp)', silent.url, 'smollm2');
      await frame.locator('#new-chat').click();
      await ask('When are deploys frozen?');
      const button = frame.locator('#ask-button');
      await until(() => button.textContent(), (text) => text === 'Stop', 'the Ask button to become Stop');
      // The model has gone silent: the panel says it is waiting.
      await frame.locator('#pane-ask', { hasText: /Waiting for the model/ }).waitFor({ timeout: 120_000 });
      await vs.shot('chat-waiting.png');
      await button.click();
      await frame.locator('.answer.stop-cancelled, .answer .stop-note', { hasText: 'Stopped.' }).last().waitFor();
      await until(() => button.textContent(), (text) => text === 'Ask', 'the Ask button to come back');
      await frame.locator('.question.pending').waitFor({ state: 'detached' });
      // The panel asks again at once: Stop left nothing running.
      await chooseModel('llama-server (llama.cpp)', model.url, 'smollm2');
      await ask('How are Mexico payments sent?');
      await frame.locator('.answer').last().locator('a.cite').first().waitFor({ timeout: 120_000 });
    } catch (err) {
      await vs.shot('chat-failure-stop.png').catch(() => undefined);
      throw err;
    }
  });

  // The server streams the answer in pieces (kb/askEvent kind "answer", args.piece).
  it(
    'the first answer text shows before the answer ends; Stop keeps what came',
    async () => {
      try {
        await chooseModel('llama-server (llama.cpp)', silent.url, 'smollm2');
        await frame.locator('#new-chat').click();
        await ask('When are deploys frozen?');
        // The model sent three pieces, then went silent: they show while the answer runs.
        await frame.locator('.pending-answer', { hasText: 'Deploys are' }).waitFor({ timeout: 120_000 });
        assert.equal(await frame.locator('#ask-button').textContent(), 'Stop');
        await frame.locator('#ask-button').click();
        await frame.locator('.answer.stop-cancelled', { hasText: 'Deploys are' }).last().waitFor();
        await chooseModel('llama-server (llama.cpp)', model.url, 'smollm2');
      } catch (err) {
        await vs.shot('chat-failure-streaming.png').catch(() => undefined);
        throw err;
      }
    },
  );

  it("the panel shows the quick pick's list with its query; Open Result 7 opens the panel's 7", async () => {
    try {
      await frame.locator('#tab-search').click();
      await frame.locator('#query').fill('payments');
      await frame.locator('#query').press('Enter');
      await frame.locator('#search-info', { hasText: 'for “payments”' }).waitFor();
      await frame.locator('#results li.hit').nth(7).waitFor();
      const before = await frame.locator('#results .hit-path').evaluateAll((els) => els.map((e) => e.getAttribute('title')));

      await vs.runCommand('KB: Search');
      await vs.page.locator('.quick-input-widget .quick-input-title', { hasText: 'KB: Search' }).waitFor();
      await vs.page.locator('.quick-input-widget .quick-input-box input').fill('payment files');
      await row(/^\s*7 · /).waitFor();
      await vs.page.keyboard.press('Escape');
      await frame.locator('#search-info', { hasText: 'payment files' }).waitFor();
      assert.equal(await frame.locator('#query').inputValue(), 'payment files', 'the box says what the numbers belong to');
      const paths = await frame.locator('#results .hit-path').evaluateAll((els) => els.map((e) => e.getAttribute('title')));
      assert.notDeepEqual(paths, before, "the panel's list is the quick pick's, not the older one");
      const seventh = paths[6];
      assert.ok(seventh, `the list has a 7: ${paths.join(', ')}`);
      await vs.shot('chat-one-list.png');

      await vs.runCommand('KB: Open Result…');
      await vs.page.locator('.quick-input-widget .quick-input-title', { hasText: 'payment files' }).waitFor();
      await vs.page.locator('.quick-input-widget .quick-input-box input').fill('7');
      await row(`7 · ${seventh}`).waitFor();
      await vs.page.keyboard.press('Enter');
      await vs.page.locator('.tabs-container .tab.active', { hasText: basename(seventh) }).waitFor();
    } catch (err) {
      await vs.shot('chat-failure-one-list.png').catch(() => undefined);
      throw err;
    }
  });
});

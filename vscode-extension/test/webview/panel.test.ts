/**
 * The panel page in headless Chromium: the exact HTML the extension serves (CSP included)
 * with the bundled dist/webview.js, `acquireVsCodeApi` stubbed, messages sent as the
 * extension sends them. Screenshots go to test-artifacts/.
 */
import { strict as assert } from 'node:assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { FromWebview, ToWebview } from '../../src/messages';
import { panelHtml } from '../../src/panelHtml';
import type { SearchHit } from '../../src/protocol';
import { artifact, EXTENSION_ROOT, launchChromium } from '../shared/browser';

const NONCE = 'testNonce123';

/** VS Code injects its theme as CSS variables; a few Dark+ values stand in for them. */
const THEME = `html { background: #252526; }
:root {
  --vscode-foreground: #cccccc; --vscode-descriptionForeground: #a0a0a0;
  --vscode-font-family: sans-serif; --vscode-font-size: 13px; --vscode-editor-font-family: monospace;
  --vscode-sideBar-background: #252526; --vscode-editor-background: #1e1e1e;
  --vscode-input-background: #3c3c3c; --vscode-input-foreground: #cccccc; --vscode-input-placeholderForeground: #8b8b8b;
  --vscode-button-background: #0e639c; --vscode-button-foreground: #ffffff; --vscode-button-hoverBackground: #1177bb;
  --vscode-button-secondaryBackground: #3a3d41; --vscode-button-secondaryForeground: #ffffff;
  --vscode-focusBorder: #007fd4; --vscode-list-hoverBackground: #2a2d2e;
  --vscode-list-activeSelectionBackground: #04395e; --vscode-list-activeSelectionForeground: #ffffff;
  --vscode-list-inactiveSelectionBackground: #37373d; --vscode-badge-background: #4d4d4d; --vscode-badge-foreground: #ffffff;
  --vscode-statusBarItem-prominentBackground: #0e639c; --vscode-statusBarItem-prominentForeground: #ffffff;
  --vscode-editor-findMatchHighlightBackground: rgba(234, 92, 0, 0.33);
  --vscode-editorHoverWidget-background: #252526; --vscode-editorHoverWidget-border: #454545; --vscode-editorHoverWidget-foreground: #cccccc;
  --vscode-widget-shadow: rgba(0,0,0,0.36); --vscode-textLink-foreground: #3794ff; --vscode-textLink-activeForeground: #3794ff;
  --vscode-textCodeBlock-background: rgba(10,10,10,0.4); --vscode-textBlockQuote-background: rgba(127,127,127,0.1);
  --vscode-errorForeground: #f48771; --vscode-charts-green: #89d185; --vscode-charts-yellow: #cca700; --vscode-charts-orange: #d18616;
  --vscode-panel-border: #80808059; --vscode-toolbar-hoverBackground: rgba(90,93,94,0.31);
}`;

function hit(n: number, path: string, label: SearchHit['label'], snippet: string, heading: string): SearchHit {
  return {
    n,
    uri: `file:///ws/${path}`,
    path,
    root: '/ws',
    title: path,
    label,
    score: 1 - n * 0.13,
    snippet,
    heading,
    range: { start: { line: n * 10, character: 0 }, end: { line: n * 10 + 6, character: 0 } },
  };
}

const HITS: SearchHit[] = [
  hit(1, 'runbooks/deploy.md', 'filename match', 'Deploy the service with `make deploy`; roll back with the previous tag.', 'Deploy › Steps'),
  hit(2, 'onboarding/setup.md', 'context match', 'To deploy from a laptop, install the CLI and log in first.', 'Setup › Tools'),
  hit(3, 'meetings/2024-05-02.md', 'context match', 'We agreed to freeze deploys on Fridays <b>after</b> 3pm.', 'Decisions'),
];

const STATUS = {
  state: 'ready' as const,
  files: 42,
  chunks: 318,
  pending: 0,
  embedder: 'minilm',
  store: '/tmp/kb',
  llm: { host: 'http://127.0.0.1:11434', model: 'qwen2.5:7b', reachable: true },
  readOnly: false,
  roots: ['/ws'],
  skipped: [],
  message: null,
};

let browser: Browser;
let page: Page;
let pageUrl: string;
const violations: string[] = [];
const pageErrors: string[] = [];

async function send(message: ToWebview): Promise<void> {
  await page.evaluate((m) => window.postMessage(m, '*'), message);
}

async function posted(): Promise<FromWebview[]> {
  return page.evaluate(() => (window as unknown as { __posted: FromWebview[] }).__posted.slice());
}

async function clearPosted(): Promise<void> {
  await page.evaluate(() => ((window as unknown as { __posted: unknown[] }).__posted.length = 0));
}

async function lastPosted(type: FromWebview['type']): Promise<FromWebview | undefined> {
  return (await posted()).filter((m) => m.type === type).at(-1);
}

async function openPage(savedState?: unknown): Promise<void> {
  page = await browser.newPage({ viewport: { width: 420, height: 760 } });
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/.test(msg.text())) {
      violations.push(msg.text());
    }
  });
  await page.addInitScript((state) => {
    const w = window as unknown as Record<string, unknown>;
    w.__posted = [];
    w.__state = state;
    w.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) => (w.__violations as string[]).push(e.violatedDirective));
    w.acquireVsCodeApi = () => ({
      postMessage: (m: unknown) => (w.__posted as unknown[]).push(m),
      getState: () => w.__state,
      setState: (s: unknown) => (w.__state = s),
    });
  }, savedState);
  await page.goto(pageUrl);
  await page.waitForFunction(() =>
    (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === 'ready'),
  );
}

describe('panel webview in Chromium', () => {
  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kb-webview-'));
    writeFileSync(join(dir, 'theme.css'), THEME);
    const html = panelHtml({
      cspSource: 'file:',
      nonce: NONCE,
      scriptUri: pathToFileURL(join(EXTENSION_ROOT, 'dist', 'webview.js')).href,
      styleUri: pathToFileURL(join(EXTENSION_ROOT, 'media', 'panel.css')).href,
    }).replace('</head>', `<link rel="stylesheet" href="${pathToFileURL(join(dir, 'theme.css')).href}">\n</head>`);
    writeFileSync(join(dir, 'panel.html'), html);
    pageUrl = pathToFileURL(join(dir, 'panel.html')).href;
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
  });

  beforeEach(async () => {
    await page?.close();
    await openPage();
  });

  it('renders the index state and the results sent as messages', async () => {
    await send({ type: 'status', status: STATUS, server: 'running' });
    assert.equal(await page.textContent('#status-text'), 'Ready · 42 files · 318 chunks');
    await send({ type: 'status', status: { ...STATUS, state: 'indexing', files: 12, pending: 30, readOnly: true }, server: 'running' });
    assert.equal(await page.textContent('#status-text'), 'Indexing 12/42 · read-only');
    await send({ type: 'status', status: STATUS, server: 'running' });
    await page.fill('#query', 'deploy');
    await send({ type: 'results', response: { query: 'deploy', results: HITS, index: STATUS } });
    const rows = page.locator('#results li.hit');
    assert.equal(await rows.count(), 3);
    assert.deepEqual(await page.locator('.hit-n').allTextContents(), ['1', '2', '3']);
    assert.deepEqual(await page.locator('.hit-path').allTextContents(), HITS.map((h) => h.path));
    assert.deepEqual(await page.locator('.hit .badge').allTextContents(), ['filename match', 'context match', 'context match']);
    assert.equal(await rows.nth(0).locator('.hit-heading').textContent(), 'Deploy › Steps');
    assert.deepEqual(await rows.nth(2).locator('mark').allTextContents(), ['deploys']);
    // The snippet's markup is text, not HTML.
    assert.equal(await rows.nth(2).locator('b').count(), 0);
    assert.match((await rows.nth(2).locator('.hit-snippet').textContent()) ?? '', /<b>after<\/b>/);
    assert.equal(await page.locator('.hit-score').first().textContent(), '0.87');
    assert.match((await page.textContent('#search-info')) ?? '', /3 files/);
    await page.screenshot({ path: artifact('webview-results.png'), fullPage: true });
  });

  it('sends a search when the user types, after a pause', async () => {
    await page.fill('#query', 'rollback plan');
    await page.waitForFunction(() =>
      (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === 'search'),
    );
    assert.deepEqual(await lastPosted('search'), { type: 'search', query: 'rollback plan' });
  });

  it('is keyboard usable: arrows move, Enter and digits open the right result', async () => {
    await send({ type: 'results', response: { query: 'deploy', results: HITS, index: STATUS } });
    await page.focus('#query');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'results');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.getAttribute('#results', 'aria-activedescendant'), 'hit-2');
    assert.equal(await page.getAttribute('#hit-2', 'aria-selected'), 'true');
    await page.keyboard.press('Enter');
    assert.deepEqual(await lastPosted('open'), { type: 'open', uri: HITS[1].uri, range: HITS[1].range });
    await page.keyboard.press('End');
    assert.equal(await page.getAttribute('#results', 'aria-activedescendant'), 'hit-3');
    await page.keyboard.press('1');
    assert.deepEqual(await lastPosted('open'), { type: 'open', uri: HITS[0].uri, range: HITS[0].range });
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowUp');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'query');
  });

  it('opens a clicked result at its range and shows the passage on hover', async () => {
    await send({ type: 'summary', path: 'meetings/2024-05-02.md', summary: 'Deploy freeze decided.', cached: true });
    await send({ type: 'results', response: { query: 'deploy', results: HITS, index: STATUS } });
    await page.hover('#hit-3');
    const card = page.locator('#hover');
    await card.waitFor({ state: 'visible' });
    assert.match((await card.textContent()) ?? '', /freeze deploys on Fridays/);
    assert.match((await card.textContent()) ?? '', /Summary Deploy freeze decided\./);
    await page.screenshot({ path: artifact('webview-hover.png'), fullPage: true });
    await clearPosted();
    await page.click('#hit-3 .hit-path');
    assert.deepEqual(await posted(), [{ type: 'open', uri: HITS[2].uri, range: HITS[2].range }]);
  });

  it('streams ask events into the transcript and renders the answer with clickable sources', async () => {
    await page.fill('#question', 'How do I deploy?');
    await page.press('#question', 'Enter');
    assert.deepEqual(await lastPosted('ask'), { type: 'ask', question: 'How do I deploy?', file: null, conversationId: null });
    await send({ type: 'askStarted', id: 1, question: 'How do I deploy?', file: null });
    assert.equal(await page.isVisible('#stop-button'), true);
    assert.equal(await page.isDisabled('#ask-button'), true);
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'thinking', text: 'Search the runbooks first.' } });
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'tool_call', text: '', tool: 'search_knowledge_base', args: { query: 'deploy' } } });
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'tool_result', text: '3 files', tool: 'search_knowledge_base' } });
    await send({ type: 'askEvent', id: 2, event: { askId: 'b', kind: 'thinking', text: 'not this ask' } });
    assert.deepEqual(await page.locator('.step').allTextContents(), [
      'Thinking: Search the runbooks first.',
      'Calling search_knowledge_base with {"query":"deploy"}',
      'Result of search_knowledge_base: 3 files',
    ]);
    await send({
      type: 'askDone',
      id: 1,
      response: {
        answer: 'Run `make deploy` from **main** [1].\n\n<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">',
        sources: [
          { n: 1, uri: HITS[0].uri, path: HITS[0].path, range: HITS[0].range },
          { n: 2, uri: HITS[1].uri, path: HITS[1].path, range: HITS[1].range },
        ],
        stop: 'answer',
        steps: [],
        usage: { calls: 2, promptTokens: 900, completionTokens: 80, seconds: 3.1 },
        conversationId: 'conv-1',
      },
    });
    const answer = page.locator('.answer');
    assert.equal(await answer.locator('code').first().textContent(), 'make deploy');
    assert.equal(await answer.locator('strong').textContent(), 'main');
    assert.equal(await answer.locator('img, script').count(), 0);
    assert.match((await answer.textContent()) ?? '', /<script>window.__pwned = 1<\/script>/);
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    assert.deepEqual(await answer.locator('a.source').allTextContents(), ['[1] runbooks/deploy.md L11–16', '[2] onboarding/setup.md L21–26']);
    assert.equal(await page.isVisible('#stop-button'), false);
    await page.screenshot({ path: artifact('webview-ask.png'), fullPage: true });
    await clearPosted();
    await answer.locator('a.source').nth(1).click();
    assert.deepEqual(await posted(), [{ type: 'open', uri: HITS[1].uri, range: HITS[1].range }]);
    // The follow-up carries the conversation.
    await page.fill('#question', 'And roll back?');
    await page.click('#ask-button');
    assert.deepEqual(await lastPosted('ask'), { type: 'ask', question: 'And roll back?', file: null, conversationId: 'conv-1' });
  });

  it('shows a clarification as numbered choices the user can click', async () => {
    await send({ type: 'focusAsk', file: 'runbooks/deploy.md' });
    assert.equal(await page.textContent('#ask-scope-file'), 'runbooks/deploy.md');
    await page.fill('#question', 'What does the setup file say?');
    await page.press('#question', 'Enter');
    assert.equal((await lastPosted('ask'))?.type === 'ask' && (await lastPosted('ask') as { file?: string }).file, 'runbooks/deploy.md');
    await send({ type: 'askStarted', id: 1, question: 'What does the setup file say?', file: 'runbooks/deploy.md' });
    await send({
      type: 'askDone',
      id: 1,
      response: {
        answer: '“setup” could mean 2 files. Which one do you mean?\n1. `onboarding/setup.md` — Setup\n2. `projects/atlas/setup.md` — Atlas setup\nAnswer with the number (“file 2”, “the first one”) or the file name.',
        sources: [],
        stop: 'clarify',
        steps: [],
        usage: {},
      },
    });
    assert.deepEqual(await page.locator('button.choice').allTextContents(), ['1 onboarding/setup.md — Setup', '2 projects/atlas/setup.md — Atlas setup']);
    await page.locator('button.choice').nth(1).click();
    const ask = (await lastPosted('ask')) as { question: string };
    assert.equal(ask.question, 'file 2');
    await page.screenshot({ path: artifact('webview-clarify.png'), fullPage: true });
  });

  it('keeps the CSP: only the nonce script runs, no inline script or remote content', async () => {
    const csp = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
    assert.match(csp ?? '', /default-src 'none'/);
    assert.match(csp ?? '', new RegExp(`script-src 'nonce-${NONCE}'`));
    await page.evaluate(() => {
      const s = document.createElement('script');
      s.textContent = 'window.__inline = 1';
      document.body.appendChild(s);
      const img = document.createElement('img');
      img.src = 'https://example.com/x.png';
      document.body.appendChild(img);
    });
    // The browser reports each blocked load as an event: wait for both reports (not for
    // a fixed time a loaded machine may not keep to).
    await page.waitForFunction(() => {
      const v = (window as unknown as { __violations: string[] }).__violations;
      return v.includes('img-src') && (v.includes('script-src-elem') || v.includes('script-src'));
    });
    const ran = await page.evaluate(() => {
      const w = window as unknown as { __inline?: number; __violations: string[] };
      return { inline: w.__inline, violations: w.__violations };
    });
    assert.equal(ran.inline, undefined, 'an inline script without the nonce must not run');
    assert.ok(ran.violations.includes('script-src-elem') || ran.violations.includes('script-src'));
    assert.ok(ran.violations.includes('img-src'));
    assert.deepEqual(pageErrors, []);
  });

  it('restores its state when the webview is recreated', async () => {
    await page.fill('#query', 'deploy');
    await send({ type: 'results', response: { query: 'deploy', results: HITS, index: STATUS } });
    const saved = await page.evaluate(() => (window as unknown as { __state: unknown }).__state);
    await page.close();
    await openPage(saved);
    assert.equal(await page.inputValue('#query'), 'deploy');
    assert.equal(await page.locator('#results li.hit').count(), 3);
  });
});

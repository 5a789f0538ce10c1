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
import type { AskResponse, SearchHit } from '../../src/protocol';
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
HITS[2].marks = ['deploys'];

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

/** Post a message as the extension does, and return once the page has handled it: our
 * listener is added after the page's own, so it runs after the page's handler. */
async function send(message: ToWebview): Promise<void> {
  await page.evaluate(
    (m) =>
      new Promise<void>((resolve) => {
        window.addEventListener('message', () => resolve(), { once: true });
        window.postMessage(m, '*');
      }),
    message,
  );
}

/** What the page sent, but the passage reads a hover asks for on the side. */
async function posted(): Promise<FromWebview[]> {
  return (await allPosted()).filter((m) => m.type !== 'passage');
}

async function allPosted(): Promise<FromWebview[]> {
  return page.evaluate(() => (window as unknown as { __posted: FromWebview[] }).__posted.slice());
}

async function clearPosted(): Promise<void> {
  await page.evaluate(() => ((window as unknown as { __posted: unknown[] }).__posted.length = 0));
}

async function lastPosted(type: FromWebview['type']): Promise<FromWebview | undefined> {
  return (await posted()).filter((m) => m.type === type).at(-1);
}

/** Type a query and wait for the search the panel sends after the typing pause. */
async function typeQuery(query: string): Promise<void> {
  await page.fill('#query', query);
  await page.waitForFunction(
    (q) => (window as unknown as { __posted: { type: string; query?: string }[] }).__posted.some((m) => m.type === 'search' && m.query === q),
    query,
  );
}

async function openPage(savedState?: unknown, viewport = { width: 420, height: 760 }): Promise<void> {
  page = await browser.newPage({ viewport });
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
    // What reaches the window: VS Code's webview host listens there and hands keys on to
    // the workbench.
    w.__windowKeys = [];
    window.addEventListener('keydown', (e) => (w.__windowKeys as string[]).push(`${e.ctrlKey ? 'Ctrl+' : ''}${e.metaKey ? 'Meta+' : ''}${e.key}`));
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
    assert.equal(await page.textContent('#status-text'), 'Ready · 42 files · 318 passages');
    await send({ type: 'status', status: { ...STATUS, state: 'indexing', files: 12, pending: 30, readOnly: true }, server: 'running' });
    assert.equal(await page.textContent('#status-text'), 'Indexing 12/42 files · read-only');
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
    assert.equal(await page.textContent('#search-info'), '3 files for “deploy”');
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
    assert.deepEqual(await lastPosted('open'), { type: 'open', uri: HITS[1].uri, range: HITS[1].range, path: HITS[1].path, list: 'search' });
    await page.keyboard.press('End');
    assert.equal(await page.getAttribute('#results', 'aria-activedescendant'), 'hit-3');
    await page.keyboard.press('1');
    assert.deepEqual(await lastPosted('open'), { type: 'open', uri: HITS[0].uri, range: HITS[0].range, path: HITS[0].path, list: 'search' });
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowUp');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'query');
  });

  it('opens a clicked result at its range and shows the passage on hover', async () => {
    await send({ type: 'summary', path: 'meetings/2024-05-02.md', summary: 'Deploy freeze decided.', cached: true });
    await page.click('#tab-search');
    await send({ type: 'results', response: { query: 'deploy', results: HITS, index: STATUS } });
    await page.hover('#hit-3');
    const card = page.locator('#hover');
    await card.waitFor({ state: 'visible' });
    assert.match((await card.textContent()) ?? '', /freeze deploys on Fridays/);
    assert.match((await card.textContent()) ?? '', /Summary Deploy freeze decided\./);
    await page.screenshot({ path: artifact('webview-hover.png'), fullPage: true });
    await clearPosted();
    await page.click('#hit-3 .hit-path');
    assert.deepEqual(await posted(), [{ type: 'open', uri: HITS[2].uri, range: HITS[2].range, path: HITS[2].path, list: 'search' }]);
  });

  it('streams ask events into the transcript and renders the answer with clickable sources', async () => {
    await page.click('#tab-ask');
    await page.fill('#question', 'How do I deploy?');
    await page.press('#question', 'Enter');
    assert.deepEqual(await lastPosted('ask'), { type: 'ask', question: 'How do I deploy?', file: null, conversationId: null });
    await send({ type: 'askStarted', id: 1, question: 'How do I deploy?', file: null });
    // While it runs, the Ask button is Stop.
    assert.equal(await page.textContent('#ask-button'), 'Stop');
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
    assert.deepEqual(await answer.locator('.sources li').allTextContents(), ['[1] runbooks/deploy.md L11–16', '[2] onboarding/setup.md L21–26']);
    assert.equal(await answer.locator('.sources ol').count(), 0, 'one numbering style: [n] only');
    assert.equal(await page.textContent('#ask-button'), 'Ask');
    await page.screenshot({ path: artifact('webview-ask.png'), fullPage: true });
    await clearPosted();
    await answer.locator('a.source').nth(1).click();
    assert.deepEqual(await posted(), [{ type: 'open', uri: HITS[1].uri, range: HITS[1].range, path: HITS[1].path }]);
    // The steps fold into one line once the answer is there.
    assert.equal(await page.textContent('details.steps > summary'), 'Searched 1×');
    assert.equal(await page.isVisible('.step.thinking'), false);
    // The follow-up carries the conversation.
    await page.fill('#question', 'And roll back?');
    await page.click('#ask-button');
    const followUp = (await lastPosted('ask')) as Extract<FromWebview, { type: 'ask' }> | undefined;
    assert.deepEqual({ ...followUp, history: undefined }, { type: 'ask', question: 'And roll back?', file: null, conversationId: 'conv-1', history: undefined });
    assert.deepEqual(followUp?.history?.map((turn) => turn.question), ['How do I deploy?'], 'and its turns so far');
  });

  it('shows a clarification as numbered choices the user can click', async () => {
    await send({ type: 'focusAsk', file: 'runbooks/deploy.md' });
    assert.equal(await page.isVisible('#pane-ask'), true, 'focusAsk shows the Ask tab');
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
    // Both are refused: wait for the two violation reports (no fixed sleep).
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

  it('at 300 px, paths never break inside a word and snippets take at most two lines', async () => {
    await page.close();
    await openPage(undefined, { width: 300, height: 700 });
    const long = [
      hit(1, 'docs/tutorial/security/oauth2-jwt-with-refresh-tokens.md', 'filename match', 'OAuth2 with Password (and hashing), Bearer with JWT tokens. '.repeat(4), 'OAuth2 with Password (and hashing), Bearer with JWT tokens'),
      hit(2, 'docs/tutorial/cors.md', 'context match', 'CORS or "Cross-Origin Resource Sharing" refers to the situations when a frontend running in a browser has JavaScript code that communicates with a backend.', 'CORS (Cross-Origin Resource Sharing)'),
      hit(3, 'engineering/deploy-checklist.md', 'context match', 'A bad deploy can pay someone twice, so every release follows this list.', 'Deploy checklist: payments service'),
      hit(4, 'a/very/deep/folder/structure/that/goes/on/and/on/README.md', 'context match', 'Short.', ''),
      hit(5, 'averyveryverylongfilenamewithoutanyseparatorsatalltobreakon.md', 'context match', 'Long name.', ''),
    ];
    await send({ type: 'status', status: STATUS, server: 'running' });
    await page.fill('#query', 'oauth2 cors');
    await send({ type: 'results', response: { query: 'oauth2 cors', results: long, index: STATUS } });
    const layout = await page.evaluate(() => {
      const lines = (el: Element): number => {
        const range = document.createRange();
        range.selectNodeContents(el);
        return new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top))).size;
      };
      return {
        paths: Array.from(document.querySelectorAll('.hit-path')).map((el) => ({
          title: el.getAttribute('title'),
          text: el.textContent,
          lines: lines(el),
          fileFits: (() => {
            const file = el.querySelector<HTMLElement>('.hit-file');
            return file ? file.scrollWidth <= file.clientWidth + 1 : false;
          })(),
        })),
        snippets: Array.from(document.querySelectorAll<HTMLElement>('.hit-snippet')).map((el) => ({
          height: el.getBoundingClientRect().height,
          lineHeight: parseFloat(getComputedStyle(el).lineHeight),
        })),
        overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        wrap: getComputedStyle(document.querySelector('.hit-path') as Element).overflowWrap,
      };
    });
    assert.equal(layout.overflow, 0, 'nothing wider than the panel');
    assert.notEqual(layout.wrap, 'anywhere');
    for (const [i, path] of layout.paths.entries()) {
      assert.equal(path.title, long[i]?.path, 'the full path is the tooltip');
      assert.equal(path.text, long[i]?.path, 'the text is the path, unbroken');
      assert.equal(path.lines, 1, `${path.text} renders on one line`);
    }
    assert.ok(layout.paths[1]?.fileFits && layout.paths[2]?.fileFits && layout.paths[3]?.fileFits, 'short file names are shown whole');
    for (const snippet of layout.snippets) {
      assert.ok(snippet.height <= snippet.lineHeight * 2 + 1, `a snippet is ${snippet.height}px, more than two lines`);
    }
    await page.screenshot({ path: artifact('webview-300px.png'), fullPage: true });
  });

  it('marks only the words the server marked, and shows snippet text as text', async () => {
    const snippet = 'How to add CORS in the app: use <abbr>CORSMiddleware</abbr> with **care**.';
    await send({ type: 'results', response: { query: 'how do I add CORS', results: [{ ...HITS[0], snippet, marks: ['CORS'] }], index: STATUS } });
    assert.deepEqual(await page.locator('.hit-snippet mark').allTextContents(), ['CORS']);
    assert.equal(await page.locator('.hit-snippet').textContent(), snippet);
    assert.equal(await page.locator('.hit-snippet abbr, .hit-snippet strong').count(), 0);
  });

  it('shows tags as chips; a chip narrows the search to that tag', async () => {
    await typeQuery('deploy');
    await send({ type: 'results', response: { query: 'deploy', results: [{ ...HITS[0], meta: { tags: ['payments', 'runbook'] } }, HITS[1]], index: STATUS } });
    assert.deepEqual(await page.locator('#hit-1 .chip').allTextContents(), ['#payments', '#runbook']);
    assert.equal(await page.locator('#hit-2 .chip').count(), 0);
    await clearPosted();
    await page.click('#hit-1 .chip >> nth=1');
    assert.equal(await page.inputValue('#query'), 'deploy tag:runbook');
    assert.deepEqual(await posted(), [{ type: 'search', query: 'deploy tag:runbook' }], 'a search, not an open');
  });

  it('completes tag: from the schema', async () => {
    await page.focus('#query');
    await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === 'schema'));
    await send({
      type: 'schema',
      schema: {
        files: 12,
        fields: [
          { name: 'tags', types: ['list'], files: 9, top: [{ value: 'payments', count: 6 }, { value: 'pay day', count: 2 }, { value: 'runbook', count: 3 }] },
          { name: 'status', types: ['string'], files: 5, top: [{ value: 'draft', count: 5 }] },
        ],
      },
    });
    await page.keyboard.type('mexico tag:pa');
    const items = page.locator('#completions li');
    await page.locator('#completions').waitFor({ state: 'visible' });
    assert.deepEqual(await items.locator('.completion-label').allTextContents(), ['tag:payments', 'tag:pay day']);
    assert.deepEqual(await items.locator('.completion-detail').allTextContents(), ['6 files', '2 files']);
    assert.equal(await page.getAttribute('#query', 'aria-expanded'), 'true');
    await page.screenshot({ path: artifact('webview-tag-completion.png') });
    await clearPosted();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    assert.equal(await page.inputValue('#query'), 'mexico tag:"pay day" ');
    assert.equal(await page.isVisible('#completions'), false);
    assert.deepEqual(await lastPosted('search'), { type: 'search', query: 'mexico tag:"pay day"' });
    // A negated field completes too, and a field the schema does not know offers nothing.
    await page.keyboard.type('-status:');
    assert.deepEqual(await page.locator('#completions .completion-label').allTextContents(), ['status:draft']);
    await page.keyboard.press('Escape');
    await page.keyboard.type(' owner:');
    assert.equal(await page.isVisible('#completions'), false);
  });

  it('says a list made while indexing may be incomplete, and searches again once when indexing is done', async () => {
    const indexing = { ...STATUS, state: 'indexing' as const, files: 30, progress: { phase: 'vectors' as const, filesDone: 38, filesTotal: 155, chunksDone: 900, chunksTotal: 3036 } };
    await send({ type: 'status', status: indexing, server: 'running' });
    await typeQuery('how do I add CORS');
    await send({ type: 'results', response: { query: 'how do I add CORS', results: HITS, index: indexing } });
    assert.equal(await page.textContent('#search-notice'), 'Keyword search ready · embedding 900/3,036 passages — results may be incomplete');
    await send({ type: 'status', status: { ...indexing, progress: { ...indexing.progress, chunksDone: 1800 } }, server: 'running' });
    assert.equal(await page.textContent('#search-notice'), 'Keyword search ready · embedding 1,800/3,036 passages — results may be incomplete');
    await clearPosted();
    await send({ type: 'status', status: STATUS, server: 'running' });
    assert.deepEqual((await posted()).filter((m) => m.type === 'search'), [{ type: 'search', query: 'how do I add CORS' }]);
    await send({ type: 'status', status: STATUS, server: 'running' });
    assert.equal((await posted()).filter((m) => m.type === 'search').length, 1, 'once');
    await send({ type: 'results', response: { query: 'how do I add CORS', results: HITS, index: STATUS } });
    assert.equal(await page.isVisible('#search-notice'), false);
  });

  it('shows one progress bar with pause and cancel while indexing', async () => {
    const progress = { phase: 'vectors' as const, filesDone: 38, filesTotal: 155, chunksDone: 900, chunksTotal: 3036 };
    await send({ type: 'status', status: { ...STATUS, state: 'indexing', progress }, server: 'running', secondsLeft: 300 });
    assert.equal(await page.textContent('#status-text'), 'Keyword search ready · embedding 900/3,036 passages · about 5 min left');
    assert.ok(await page.locator('#status-text').evaluate((el) => el.scrollWidth <= el.clientWidth && el.scrollHeight <= el.clientHeight), 'the label is whole, not cut with …');
    assert.equal(await page.isVisible('#index-progress'), true);
    assert.deepEqual(await page.evaluate(() => {
      const bar = document.getElementById('index-progress') as HTMLProgressElement;
      return [bar.value, bar.max];
    }), [900, 3036]);
    await clearPosted();
    await page.click('#pause-index');
    assert.deepEqual(await posted(), [{ type: 'indexControl', action: 'pause' }]);
    await send({ type: 'status', status: { ...STATUS, state: 'indexing', progress, paused: true }, server: 'running' });
    assert.equal(await page.getAttribute('#pause-index', 'title'), 'Resume indexing');
    assert.match((await page.textContent('#status-text')) ?? '', /· paused/);
    await page.click('#pause-index');
    await page.click('#cancel-index');
    assert.deepEqual((await posted()).slice(1), [{ type: 'indexControl', action: 'resume' }, { type: 'indexControl', action: 'cancel' }]);
    // Paused with nothing left to index (the server says "ready"): Resume stays offered.
    await send({ type: 'status', status: { ...STATUS, paused: true }, server: 'running' });
    assert.match((await page.textContent('#status-text')) ?? '', /^Ready · .* · indexing paused/);
    assert.equal(await page.isVisible('#pause-index'), true);
    assert.equal(await page.getAttribute('#pause-index', 'title'), 'Resume indexing');
    assert.equal(await page.isVisible('#cancel-index'), false);
    await send({ type: 'status', status: STATUS, server: 'running' });
    assert.equal(await page.isVisible('#index-progress'), false);
    assert.equal(await page.isVisible('#pause-index'), false);
    assert.equal(await page.isVisible('#cancel-index'), false);
  });

  it('shows the model trouble once, as a card with actions', async () => {
    const note = 'Ollama is not reachable at http://127.0.0.1:9 — start it with `ollama serve` or set kb.ollama.host.';
    const down = { ...STATUS, llm: { host: 'http://127.0.0.1:9', model: 'qwen2.5:7b', reachable: false } };
    await send({ type: 'status', status: down, server: 'running' });
    await page.click('#tab-ask');
    assert.equal(await page.locator('.model-card').count(), 1);
    await page.fill('#question', 'How do I deploy?');
    await page.press('#question', 'Enter');
    await send({ type: 'askStarted', id: 1, question: 'How do I deploy?', file: null });
    // What the server sends when no model answers: why, once, as a status step; then the
    // passages, as an answer in its own right.
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'status', text: 'Waiting for the model…' } });
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'status', text: `No model: ${note}` } });
    await send({
      type: 'askDone',
      id: 1,
      response: {
        answer: '**No model: here are the best passages** in the knowledge base:\n\n1. `runbooks/deploy.md` lines 11–16\n   > Deploy the service with make deploy.',
        sources: [{ n: 1, uri: HITS[0].uri, path: HITS[0].path, range: HITS[0].range }],
        stop: 'answer',
        mode: 'fallback',
        steps: [],
        usage: {},
      },
    });
    const mentions = await page.evaluate(() => document.body.innerText.split('is not reachable at').length - 1);
    assert.equal(mentions, 1, 'the model problem is said once');
    assert.equal(await page.locator('#model-card:visible').count(), 1);
    assert.equal(await page.locator('.step-error').count(), 0);
    assert.deepEqual(await page.locator('.status-step').allTextContents(), [], '"Waiting for the model" only while waiting');
    assert.match((await page.textContent('.answer')) ?? '', /here are the best passages/);
    assert.equal(await page.textContent('.answer .badge.verdict'), 'no model');
    assert.match((await page.textContent('#model-card')) ?? '', /No model is reachable/);
    await page.screenshot({ path: artifact('webview-model-card.png') });
    await clearPosted();
    await page.click('#model-card [data-action="copyFix"]');
    await page.click('#model-card [data-action="openSettings"]');
    await page.click('#model-card [data-action="retry"]');
    await page.click('#model-card [data-action="chooseModel"]');
    assert.deepEqual(await posted(), [
      // The configured port, not Ollama's default.
      { type: 'copy', text: 'OLLAMA_HOST=127.0.0.1:9 ollama serve' },
      // Only the model's settings.
      {
        type: 'openSettings',
        query: '@id:kb.llm.provider @id:kb.llm.baseUrl @id:kb.llm.model @id:kb.ollama.host @id:kb.ollama.model @id:kb.llm.mode @id:kb.ollama.timeout',
      },
      { type: 'command', command: 'probeModel' },
      // Asked again, after the turn no model answered (its passages are no answer to go on from).
      { type: 'ask', question: 'How do I deploy?', file: null, conversationId: null, history: [{ question: 'How do I deploy?', answer: '' }] },
      { type: 'command', command: 'chooseModel' },
    ]);
    // Another host: the card speaks of it; a model that answers clears the card.
    await send({ type: 'status', status: { ...down, llm: { ...down.llm, host: 'http://gpu:11434' } }, server: 'running' });
    assert.match((await page.textContent('#model-card')) ?? '', /http:\/\/gpu:11434 is not reachable/);
    await send({ type: 'status', status: { ...down, llm: { ...down.llm, host: 'http://gpu:11434', reachable: true } }, server: 'running' });
    assert.equal(await page.isVisible('#model-card'), false);
  });

  it('is a chat: input pinned at the bottom, New chat, copy answer, mode badges', async () => {
    await page.close();
    await openPage(undefined, { width: 300, height: 600 });
    await page.click('#tab-ask');
    const answer = (n: number): AskResponse => ({
      answer: `Answer ${n}: run \`make deploy\` [1].`,
      sources: [{ n: 1, uri: HITS[0].uri, path: HITS[0].path, range: HITS[0].range }],
      stop: 'answer',
      mode: n % 2 ? 'agent' : 'grounded',
      grounded: n !== 3,
      steps: [],
      usage: {},
      conversationId: 'conv-1',
    });
    for (let n = 1; n <= 8; n++) {
      await send({ type: 'askStarted', id: n, question: `Question ${n}?`, file: null });
      await send({ type: 'askDone', id: n, response: answer(n) });
    }
    const box = await page.locator('#ask-form').boundingBox();
    assert.ok(box && Math.abs(box.y + box.height - 600) < 8, `the input is at the bottom (${JSON.stringify(box)})`);
    const scroll = await page.evaluate(() => {
      const t = document.getElementById('transcript') as HTMLElement;
      return { top: t.scrollTop, max: t.scrollHeight - t.clientHeight };
    });
    assert.ok(scroll.max > 0 && Math.abs(scroll.top - scroll.max) < 2, 'the transcript scrolls, showing the latest answer');
    // One verdict per answer; the mode is its small print.
    assert.deepEqual(await page.locator('.answer .badge').allTextContents(), ['supported', 'supported', 'not supported by the notes', 'supported', 'supported', 'supported', 'supported', 'supported']);
    assert.deepEqual((await page.locator('.answer .mode-note').allTextContents()).map((t) => t.split(' ')[0]), ['agent', 'grounded', 'agent', 'grounded', 'agent', 'grounded', 'agent', 'grounded']);
    assert.equal(await page.locator('.answer.is-unsupported').count(), 1);
    await page.screenshot({ path: artifact('webview-chat.png') });
    await clearPosted();
    await page.locator('.copy-answer').last().click();
    assert.deepEqual(await posted(), [{ type: 'copy', text: 'Answer 8: run `make deploy` [1].' }]);
    await page.click('#new-chat');
    assert.equal(await page.locator('#transcript > *').count(), 0);
    await page.fill('#question', 'Fresh start?');
    await page.press('#question', 'Enter');
    assert.deepEqual(await lastPosted('ask'), { type: 'ask', question: 'Fresh start?', file: null, conversationId: null });
  });

  it('lists related notes in their own tab and opens them', async () => {
    const related = [
      { ...HITS[1], n: 1, label: 'related' as const, marks: [] },
      { ...HITS[2], n: 2, label: 'related' as const, marks: [] },
    ];
    await send({ type: 'related', path: 'runbooks/deploy.md', response: { path: 'runbooks/deploy.md', results: related, index: STATUS } });
    assert.equal(await page.textContent('#related-count'), '2');
    await page.click('#tab-related');
    assert.equal(await page.textContent('#related-info'), 'Notes related to runbooks/deploy.md:');
    // Open Result N opens the search's N: the related rows do not look numbered (defect 12).
    assert.equal(await page.locator('#related .hit-n').count(), 0, 'no numbers on related rows');
    assert.deepEqual(await page.locator('#related .hit-path').evaluateAll((els) => els.map((e) => e.getAttribute('title'))), [HITS[1].path, HITS[2].path]);
    assert.equal(await page.locator('#related .badge').count(), 0, 'no "related" badge on every row of the Related tab');
    await clearPosted();
    await page.click('#related-2');
    assert.deepEqual(await posted(), [{ type: 'open', uri: HITS[2].uri, range: HITS[2].range, path: HITS[2].path, list: 'related' }]);
    await send({ type: 'related', path: null, response: null });
    assert.match((await page.textContent('#related-info')) ?? '', /Open a Markdown file/);
    assert.equal(await page.textContent('#related-count'), '');
  });

  it('after a stale result, runs the search again and says why the list changed', async () => {
    await typeQuery('deploy');
    await send({ type: 'results', response: { query: 'deploy', results: HITS, index: STATUS } });
    await clearPosted();
    await send({ type: 'stale', path: 'runbooks/deploy.md', message: 'runbooks/deploy.md was deleted or moved — the list was refreshed.' });
    assert.deepEqual((await posted()).filter((m) => m.type === 'search'), [{ type: 'search', query: 'deploy' }]);
    await send({ type: 'results', response: { query: 'deploy', results: HITS, index: STATUS } });
    // The index had not caught up yet; once it has (one file fewer), the list is made again.
    await clearPosted();
    await send({ type: 'status', status: { ...STATUS, files: STATUS.files - 1 }, server: 'running' });
    assert.deepEqual((await posted()).filter((m) => m.type === 'search'), [{ type: 'search', query: 'deploy' }]);
    await send({ type: 'results', response: { query: 'deploy', results: HITS.slice(1), index: STATUS } });
    assert.match((await page.textContent('#search-info')) ?? '', /^runbooks\/deploy\.md was deleted or moved — the list was refreshed\. 2 files/);
    assert.equal(await page.locator('#results li.hit').count(), 2);
    await send({ type: 'status', status: { ...STATUS, files: STATUS.files - 2 }, server: 'running' });
    assert.deepEqual((await posted()).filter((m) => m.type === 'search'), [{ type: 'search', query: 'deploy' }], 'only once');
    // The index catches up before the first refresh's list comes: both lists keep the note.
    await send({ type: 'stale', path: 'runbooks/b.md', message: 'runbooks/b.md was deleted or moved — the list was refreshed.' });
    await send({ type: 'status', status: { ...STATUS, files: STATUS.files - 3 }, server: 'running' });
    await send({ type: 'results', response: { query: 'deploy', results: HITS.slice(1), index: STATUS } });
    await send({ type: 'results', response: { query: 'deploy', results: HITS.slice(2), index: STATUS } });
    assert.match((await page.textContent('#search-info')) ?? '', /^runbooks\/b\.md was deleted or moved — the list was refreshed\. 1 file/);
    // The user's next search is not that refresh.
    await typeQuery('rollback');
    await send({ type: 'results', response: { query: 'rollback', results: HITS, index: STATUS } });
    assert.doesNotMatch((await page.textContent('#search-info')) ?? '', /deleted or moved/);
  });
  it('Ctrl+A in the search box and the Ask box selects the text and stops there; typing keeps every character', async () => {
    const windowKeys = (): Promise<string[]> => page.evaluate(() => (window as unknown as { __windowKeys: string[] }).__windowKeys.slice());
    await page.focus('#query');
    await page.keyboard.type('tag:runbook');
    await page.keyboard.press('Control+A');
    assert.deepEqual(
      await page.evaluate(() => {
        const q = document.getElementById('query') as HTMLInputElement;
        return [q.selectionStart, q.selectionEnd];
      }),
      [0, 11],
    );
    await page.keyboard.type('mexico payment files', { delay: 100 });
    assert.equal(await page.inputValue('#query'), 'mexico payment files');
    await page.keyboard.press('Meta+A');
    await page.keyboard.type('deploy', { delay: 100 });
    assert.equal(await page.inputValue('#query'), 'deploy');
    await page.click('#tab-ask');
    await page.focus('#question');
    await page.keyboard.type('What is PIX?');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('What is SPEI?', { delay: 100 });
    assert.equal(await page.inputValue('#question'), 'What is SPEI?');
    const seen = await windowKeys();
    assert.ok(!seen.includes('Ctrl+a') && !seen.includes('Meta+a'), `select-all never reaches the workbench: ${seen.join(' ')}`);
  });

  it('a server that did not start: an empty state with its actions, the same on a search, gone once it runs', async () => {
    const failure = {
      facts: [
        'The kb-lsp server is not installed in python3, the default (kb.server.python is not set).',
        'Install it from a clone of the kb-lsp repository, in that folder.',
        'Set kb.server.python to the .venv/bin/python of that clone.',
      ],
      kind: 'package-missing' as const,
      install: 'python3 -m venv .venv && .venv/bin/pip install .',
      remote: true,
    };
    await send({ type: 'status', status: null, server: 'failed', message: `kb-lsp: ${failure.facts.join(' ')}`, failure });
    const box = page.locator('#server-problem');
    assert.equal(await box.isVisible(), true);
    assert.equal(await page.textContent('#status-text'), 'The server is not running.');
    assert.deepEqual(await box.locator('.empty-fact').allTextContents(), failure.facts);
    assert.equal(await box.locator('.install-command').textContent(), failure.install);
    // Nothing cut off: the whole text shows, wrapped.
    assert.ok(await box.evaluate((el) => el.scrollWidth <= el.clientWidth));
    await clearPosted();
    await box.locator('[data-action="openServerSettings"]').click();
    await box.locator('[data-action="showLog"]').click();
    await box.locator('[data-action="copyInstall"]').click();
    await box.locator('[data-action="restartServer"]').click();
    assert.deepEqual(await posted(), [
      { type: 'command', command: 'openServerSettings' },
      { type: 'command', command: 'showLog' },
      { type: 'copy', text: failure.install },
      { type: 'command', command: 'restartServer' },
    ]);
    assert.match((await box.locator('[data-action="openServerSettings"]').getAttribute('title')) ?? '', /Remote settings/);
    await page.screenshot({ path: artifact('webview-server-failed.png') });
    // A search while it is down: no bare error line, the same actions stay.
    await typeQuery('deploy');
    await send({ type: 'searchError', query: 'deploy', message: failure.facts.join(' ') });
    assert.equal(await page.isVisible('#search-error'), false);
    assert.equal(await box.isVisible(), true);
    // It starts: the empty state goes.
    await send({ type: 'status', status: STATUS, server: 'running' });
    assert.equal(await box.isVisible(), false);
    assert.equal(await page.textContent('#status-text'), 'Ready · 42 files · 318 passages');
  });

  it('at 170 px: no sideways scroll, the file name first, secondary columns gone, tabs whole, a compact model card', async () => {
    await page.close();
    await openPage(undefined, { width: 170, height: 640 });
    const long = [
      hit(1, 'payments/brazil-payments.md', 'filename match', 'Payments to Brazil go by PIX when the supplier can receive them.', 'Brazil payments › PIX'),
      hit(2, 'docs/tutorial/security/oauth2-jwt-with-refresh-tokens.md', 'context match', 'OAuth2 with Password (and hashing), Bearer with JWT tokens.', 'OAuth2'),
      hit(3, 'averyveryverylongfilenamewithoutanyseparatorsatall.md', 'context match', 'Long name.', ''),
    ];
    long[0].meta = { tags: ['payments', 'brazil'] };
    await send({ type: 'status', status: { ...STATUS, files: 3038, chunks: 30380 }, server: 'running' });
    await page.fill('#query', 'brazil payments');
    await send({ type: 'results', response: { query: 'brazil payments', results: long, index: STATUS } });
    const layout = await page.evaluate(() => {
      const visible = (sel: string) => Array.from(document.querySelectorAll<HTMLElement>(sel)).some((e) => e.offsetParent !== null && getComputedStyle(e).display !== 'none');
      const first = document.querySelector('#hit-1 .hit-path') as HTMLElement;
      const file = first.querySelector('.hit-file') as HTMLElement;
      const dir = first.querySelector('.hit-dir') as HTMLElement;
      return {
        page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        panes: Array.from(document.querySelectorAll<HTMLElement>('.pane')).map((p) => p.scrollWidth - p.clientWidth),
        fileFirst: file.getBoundingClientRect().left < dir.getBoundingClientRect().left,
        fileWhole: file.scrollWidth <= file.clientWidth + 1,
        secondary: ['.hit-score', '.hit .badge', '.chips', '.hit-heading'].filter(visible),
        tabs: Array.from(document.querySelectorAll<HTMLElement>('.tab')).map((t) => ({
          clipped: t.scrollWidth > t.clientWidth + 1 || t.getBoundingClientRect().right > window.innerWidth,
          text: t.textContent?.trim(),
        })),
      };
    });
    assert.equal(layout.page, 0, 'no horizontal scroll');
    assert.deepEqual(layout.panes.filter((w) => w > 0), [], 'no pane scrolls sideways');
    assert.ok(layout.fileFirst && layout.fileWhole, 'the file name first, whole');
    assert.deepEqual(layout.secondary, [], 'scores, badges, chips and heading trails dropped');
    assert.deepEqual(layout.tabs.filter((t) => t.clipped), [], 'no tab clipped');
    await page.screenshot({ path: artifact('webview-170px-search.png') });
    // The Ask tab with the model card: compact, the transcript keeps most of the room.
    const down = { ...STATUS, llm: { host: 'http://127.0.0.1:8080/v1', model: 'smollm2', reachable: false, provider: 'openai' as const } };
    await send({ type: 'status', status: down, server: 'running' });
    await page.click('#tab-ask');
    const card = await page.locator('#model-card').boundingBox();
    const pane = await page.locator('#pane-ask').boundingBox();
    assert.ok(card && pane && card.height <= pane.height * 0.3, `the card is ${card?.height}px of ${pane?.height}px`);
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), 0);
    await page.screenshot({ path: artifact('webview-170px-ask.png') });
  });

  it('keeps the query box in view while moving through the results and opening one', async () => {
    await page.close();
    await openPage(undefined, { width: 300, height: 320 });
    const many = Array.from({ length: 9 }, (_, i) => hit(i + 1, `notes/note-${i + 1}.md`, 'context match', 'A passage long enough to take two lines of the panel at this width, or so.', `Heading ${i + 1}`));
    await typeQuery('notes');
    await send({ type: 'results', response: { query: 'notes', results: many, index: STATUS } });
    await page.focus('#query');
    await page.keyboard.press('ArrowDown');
    for (let i = 0; i < 7; i++) {
      await page.keyboard.press('ArrowDown');
    }
    const where = () =>
      page.evaluate(() => {
        const pane = (document.getElementById('pane-search') as HTMLElement).getBoundingClientRect();
        const head = (document.getElementById('search-head') as HTMLElement).getBoundingClientRect();
        const query = (document.getElementById('query') as HTMLElement).getBoundingClientRect();
        const selected = (document.querySelector('li.hit.selected') as HTMLElement).getBoundingClientRect();
        const scrolled = (document.getElementById('pane-search') as HTMLElement).scrollTop;
        return { paneTop: pane.top, queryTop: query.top, queryBottom: query.bottom, headBottom: head.bottom, selectedTop: selected.top, selectedBottom: selected.bottom, paneBottom: pane.bottom, scrolled };
      });
    const at8 = await where();
    assert.ok(at8.scrolled > 0, 'the list scrolled');
    assert.ok(at8.queryTop >= at8.paneTop - 1 && at8.queryBottom <= at8.headBottom, `the query box stays on top: ${JSON.stringify(at8)}`);
    assert.ok(at8.selectedBottom <= at8.paneBottom + 1, 'the selected row is in view');
    await page.keyboard.press('Home');
    const atHome = await where();
    assert.ok(atHome.selectedTop >= atHome.headBottom - 1, `the first row is not under the box: ${JSON.stringify(atHome)}`);
    await page.keyboard.press('End');
    await page.keyboard.press('3');
    const at3 = await where();
    assert.ok(at3.selectedTop >= at3.headBottom - 1 && at3.queryTop >= at3.paneTop - 1, `result 3 and the box: ${JSON.stringify(at3)}`);
    assert.deepEqual(await lastPosted('open'), { type: 'open', uri: many[2].uri, range: many[2].range, path: many[2].path, list: 'search' });
    await page.screenshot({ path: artifact('webview-sticky.png') });
    // The same query listed again (a refresh, a search that came twice) keeps the row the
    // keyboard is on, in view; another query's list starts at its first row, at the top.
    await page.keyboard.press('End');
    await send({ type: 'results', response: { query: 'notes', results: [...many.slice(4), ...many.slice(0, 4)], index: STATUS } });
    assert.equal(await page.getAttribute('#results', 'aria-activedescendant'), 'hit-9');
    assert.equal(await page.getAttribute('#hit-9', 'aria-selected'), 'true');
    const again = await where();
    assert.ok(again.selectedTop >= again.headBottom - 1 && again.selectedBottom <= again.paneBottom + 1, `the kept row shows: ${JSON.stringify(again)}`);
    await typeQuery('passage');
    await send({ type: 'results', response: { query: 'passage', results: many, index: STATUS } });
    assert.equal(await page.getAttribute('#results', 'aria-activedescendant'), 'hit-1');
    assert.equal((await where()).scrolled, 0, 'a new list starts at the top');
  });

  it("shows a bad filter's error with its position instead of a list; clearing the query clears the results", async () => {
    await typeQuery('deploy');
    await send({ type: 'results', response: { query: 'deploy', results: HITS, index: STATUS } });
    await typeQuery('payments modified>2026-13-01');
    await send({ type: 'searchError', query: 'payments modified>2026-13-01', message: "query, character 19: '2026-13-01' is not a date: there is no month 13 (in 'payments modified>2026-13-01')" });
    assert.equal(await page.isVisible('#search-error'), true);
    assert.match((await page.textContent('#search-error')) ?? '', /The query has a problem at character 19: '2026-13-01' is not a date/);
    assert.equal(await page.textContent('#search-error .search-error-at'), '2');
    assert.equal(await page.locator('#results li.hit').count(), 0, 'not the old list');
    assert.doesNotMatch((await page.textContent('#pane-search')) ?? '', /No matches/);
    await page.screenshot({ path: artifact('webview-bad-filter.png') });
    await typeQuery('deploy');
    await send({ type: 'results', response: { query: 'deploy', results: HITS, index: STATUS } });
    assert.equal(await page.isVisible('#search-error'), false);
    await clearPosted();
    await page.fill('#query', '');
    assert.equal(await page.locator('#results li.hit').count(), 0);
    assert.equal(await page.textContent('#search-info'), '');
    assert.equal(await page.isVisible('#search-welcome'), true, 'back to the welcome');
    assert.deepEqual(await posted(), [], 'no search for an empty box');
  });

  it('hovers with the passage the file has, as Markdown, clear of the pointed row, its neighbours and the selected row (defect 10)', async () => {
    await typeQuery('deploy');
    await send({ type: 'results', response: { query: 'deploy', results: HITS, index: STATUS } });
    await page.focus('#query');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown'); // result 2 selected
    await page.hover('#hit-1');
    await page.locator('#hover').waitFor({ state: 'visible' });
    const asked = (await allPosted()).filter((m) => m.type === 'passage').at(-1) as { key: string; uri: string } | undefined;
    assert.equal(asked?.uri, HITS[0].uri);
    const passage = '## Deploy\n\nDeploy the service with `make deploy`:\n\n```sh\nmake deploy\n```\n\nRoll back with the **previous** tag.';
    await send({ type: 'passage', key: asked?.key ?? '', text: passage });
    const card = page.locator('#hover .hover-passage');
    assert.equal(await card.locator('h2').textContent(), 'Deploy', 'the heading rendered');
    assert.equal(await card.locator('pre code').textContent(), 'make deploy\n');
    assert.equal(await card.locator('strong').textContent(), 'previous');
    assert.doesNotMatch((await card.textContent()) ?? '', /##|```|\*\*/, 'no Markdown syntax as text');
    const boxes = await page.evaluate(() => {
      const r = (id: string) => (document.getElementById(id) as HTMLElement).getBoundingClientRect();
      return { card: r('hover'), rows: ['hit-1', 'hit-2', 'hit-3'].map(r) };
    });
    const covered = boxes.rows.map((row, i) => (boxes.card.top < row.bottom && boxes.card.bottom > row.top ? i + 1 : 0)).filter(Boolean);
    assert.deepEqual(covered, [], `the card covers rows ${covered.join(', ')}: ${JSON.stringify(boxes)}`);
  });

  it('streams the answer as it comes; Escape does not stop it, the Stop button does, and what came stays, marked', async () => {
    await page.click('#tab-ask');
    await send({ type: 'askStarted', id: 1, question: 'How do I deploy?', file: null });
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'status', text: 'Waiting for the model (smollm2 at http://127.0.0.1:8080/v1)…' } });
    assert.equal(await page.textContent('.waiting'), 'Waiting for the model (smollm2 at http://127.0.0.1:8080/v1)…');
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'answer', text: 'Run `make ', args: { piece: true } } });
    assert.equal(await page.isVisible('.waiting'), false, 'the model spoke: no more waiting');
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'answer', text: 'deploy` from **main**', args: { piece: true } } });
    assert.equal(await page.textContent('.pending-answer code'), 'make deploy');
    assert.equal(await page.textContent('.pending-answer strong'), 'main');
    // Silence mid-answer: said below what came so far.
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'status', text: 'Waiting for the model (smollm2 at http://127.0.0.1:8080/v1)…' } });
    assert.equal(await page.isVisible('.waiting'), true);
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'answer', text: ', then check', args: { piece: true } } });
    assert.equal(await page.isVisible('.waiting'), false);
    await page.screenshot({ path: artifact('webview-streaming.png') });
    // A model that went back to its tools starts the answer over.
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'answer', text: 'Deploy with', args: { piece: true, replace: true } } });
    assert.equal(await page.textContent('.pending-answer .markdown'), 'Deploy with\n');
    assert.equal(await page.textContent('#ask-button'), 'Stop');
    await clearPosted();
    await page.focus('#question');
    await page.keyboard.press('Escape');
    await page.click('#transcript');
    await page.keyboard.press('Escape');
    assert.deepEqual(await posted(), [], 'a stray Escape costs no answer');
    assert.equal(await page.textContent('#ask-button'), 'Stop');
    await page.click('#ask-button');
    assert.deepEqual(await posted(), [{ type: 'cancelAsk' }]);
    await send({ type: 'askFailed', id: 1, message: 'Stopped.' });
    assert.equal(await page.textContent('.answer.stop-cancelled .markdown'), 'Deploy with\n');
    assert.equal(await page.textContent('.answer.stop-cancelled .stop-note'), 'Stopped.');
    assert.equal(await page.isVisible('.pending-answer'), false);
    assert.equal(await page.textContent('#ask-button'), 'Ask');
    // The Stop button stops too.
    await send({ type: 'askStarted', id: 2, question: 'Again?', file: null });
    await clearPosted();
    await page.click('#ask-button');
    assert.deepEqual(await posted(), [{ type: 'cancelAsk' }]);
    // Stopped before the model said anything: "Stopped.", not an error line.
    await send({ type: 'askFailed', id: 2, message: 'Stopped.' });
    assert.equal(await page.textContent('.answer.stop-cancelled >> nth=-1 >> .stop-note'), 'Stopped.');
    assert.equal(await page.locator('.error-line').count(), 0);
    assert.equal(await page.textContent('#ask-button'), 'Ask');
  });

  it('links citations while the answer streams: [path:lines] at once, [n] once the passages are listed', async () => {
    await page.click('#tab-ask');
    await send({ type: 'askStarted', id: 1, question: 'How do I deploy?', file: null });
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'answer', text: 'See [runbooks/deploy.md:11-16] and [1]', args: { piece: true } } });
    assert.deepEqual(await page.locator('.pending-answer a.cite-path').allTextContents(), ['[runbooks/deploy.md:11-16]']);
    assert.equal(await page.locator('.pending-answer a.cite[data-source]').count(), 0, 'no sources listed yet: [1] names nothing');
    const source = { n: 1, uri: HITS[0].uri, path: HITS[0].path, range: HITS[0].range };
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'tool_result', text: '1 passages for the model: [1] runbooks/deploy.md lines 11–16', args: { sources: [source] } } });
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'answer', text: ' [1].', args: { piece: true } } });
    assert.deepEqual(await page.locator('.pending-answer a.cite[data-source]').allTextContents(), ['[1]', '[1]']);
    await clearPosted();
    await page.click('.pending-answer a.cite[data-source] >> nth=0');
    assert.deepEqual(await posted(), [{ type: 'open', uri: source.uri, range: source.range, path: source.path }]);
    await clearPosted();
    await page.click('.pending-answer a.cite-path');
    assert.deepEqual(await posted(), [{ type: 'openLink', href: 'runbooks/deploy.md#L11-L16' }]);
    await send({ type: 'askDone', id: 1, response: { answer: 'See [1].', sources: [source], stop: 'answer', steps: [], usage: {} } });
    assert.equal(await page.isVisible('.pending-answer'), false);
  });

  it('a stopped answer (kb/stopAsk) keeps what streamed in and its sources', async () => {
    await page.click('#tab-ask');
    await send({ type: 'askStarted', id: 1, question: 'How do I deploy?', file: null });
    await send({ type: 'askEvent', id: 1, event: { askId: 'a', kind: 'answer', text: 'Run `make deploy` from ', args: { piece: true } } });
    await page.click('#ask-button');
    // The server answers the stopped ask: a placeholder text, the sources it had found.
    await send({
      type: 'askDone',
      id: 1,
      response: { answer: 'Cancelled.', sources: [{ n: 1, uri: HITS[0].uri, path: HITS[0].path, range: HITS[0].range }], stop: 'cancelled', steps: [], usage: {} },
    });
    const answer = page.locator('.answer.stop-cancelled');
    assert.equal(await answer.locator('.markdown').textContent(), 'Run make deploy from\n');
    assert.equal(await answer.locator('.stop-note').textContent(), 'Stopped.');
    assert.deepEqual(await answer.locator('.sources li').allTextContents(), ['[1] runbooks/deploy.md L11–16']);
    assert.equal(await answer.locator('.badge').count(), 0, 'no verdict on a stopped answer');
    assert.equal(await page.textContent('#ask-button'), 'Ask');
  });

  it('a cut-off answer says so once, in the note under it with the limit and the setting (defect 9)', async () => {
    await page.click('#tab-ask');
    await send({ type: 'askStarted', id: 1, question: 'How do I deploy?', file: null });
    const cutOff = '> Cut off: the model reached its limit of 256 tokens for one reply (kb.llm.maxTokens). Ask a narrower question, or raise the limit.';
    await send({
      type: 'askDone',
      id: 1,
      response: { answer: `Run make deploy from main, then\n\n${cutOff}`, sources: [{ n: 1, uri: HITS[0].uri, path: HITS[0].path, range: HITS[0].range }], stop: 'length', mode: 'grounded', steps: [], usage: {} },
    });
    const answer = page.locator('.answer.stop-length');
    const said = (await answer.textContent()) ?? '';
    assert.equal(said.match(/cut off/gi)?.length, 1, `said once: ${said}`);
    assert.equal(await answer.locator('.markdown').textContent(), 'Run make deploy from main, then\n');
    assert.equal(await answer.locator('.stop-note').textContent(), cutOff.slice(2));
  });

  it('cites the chat way: [n] opens its lines, each file once with its ranges merged, no "Sources:" paragraph', async () => {
    await page.click('#tab-ask');
    await send({ type: 'askStarted', id: 1, question: 'How do I add CORS?', file: null });
    const cors = (n: number, a: number, b: number) => ({ n, uri: 'file:///ws/docs/cors.md', path: 'docs/cors.md', range: { start: { line: a, character: 0 }, end: { line: b, character: 0 } } });
    await send({
      type: 'askDone',
      id: 1,
      response: {
        answer: 'Add the middleware [1], then list the origins [2].\n\nSources: [1] `docs/cors.md` lines 1–1; [2] `docs/cors.md` lines 1–20',
        sources: [cors(1, 0, 1), cors(2, 0, 20)],
        stop: 'answer',
        mode: 'grounded',
        steps: [],
        usage: {},
      },
    });
    const answer = page.locator('.answer');
    assert.deepEqual(await answer.locator('a.cite').allTextContents(), ['[1]', '[2]']);
    assert.equal(await answer.locator('.sources li').count(), 1, 'one source per file');
    assert.equal(await answer.locator('.sources li').textContent(), '[1, 2] docs/cors.md L1–20');
    assert.doesNotMatch((await answer.locator('.markdown').textContent()) ?? '', /Sources:/);
    await clearPosted();
    await answer.locator('a.cite').nth(1).click();
    await answer.locator('a.source-range').first().click();
    assert.deepEqual(await posted(), [
      { type: 'open', uri: 'file:///ws/docs/cors.md', range: cors(2, 0, 20).range, path: 'docs/cors.md' },
      { type: 'open', uri: 'file:///ws/docs/cors.md', range: cors(2, 0, 20).range, path: 'docs/cors.md' },
    ]);
    await page.screenshot({ path: artifact('webview-citations.png') });
  });

  it("shows the quick pick's list, with the query its numbers belong to", async () => {
    await typeQuery('older');
    await send({ type: 'results', response: { query: 'older', results: HITS.slice(0, 1), index: STATUS }, origin: 'panel' });
    await send({ type: 'results', response: { query: 'mexico payment files', results: HITS, index: STATUS }, origin: 'quickPick' });
    assert.equal(await page.inputValue('#query'), 'mexico payment files');
    assert.equal(await page.textContent('#search-info'), '3 files for “mexico payment files” (from KB: Search)');
    assert.deepEqual(await page.locator('.hit-n').allTextContents(), ['1', '2', '3']);
  });

  it("offers the server's did-you-mean under the query; a click searches it", async () => {
    await typeQuery('mexcio paymnets');
    await send({ type: 'results', response: { query: 'mexcio paymnets', results: HITS, index: STATUS, didYouMean: 'mexico payments' } });
    assert.equal(await page.textContent('#did-you-mean'), 'Did you mean mexico payments?');
    await clearPosted();
    await page.click('#did-you-mean button.suggestion');
    assert.equal(await page.inputValue('#query'), 'mexico payments');
    assert.deepEqual((await posted()).filter((m) => m.type === 'search'), [{ type: 'search', query: 'mexico payments' }]);
    await send({ type: 'results', response: { query: 'mexico payments', results: HITS, index: STATUS } });
    assert.equal(await page.isVisible('#did-you-mean'), false, 'none for a query the index knows');
  });

  it("welcomes with the open index's example searches and questions (none: none), which run on a click", async () => {
    assert.equal(await page.isVisible('#search-welcome'), true);
    assert.equal(await page.locator('.examples button').count(), 0, "no examples before the index offers its own (never the sample wiki's)");
    await clearPosted();
    await send({ type: 'status', status: STATUS, server: 'running' });
    assert.deepEqual(await lastPosted('examples'), { type: 'examples' }, 'a ready index: the page asks for its examples');
    await clearPosted();
    await send({ type: 'status', status: STATUS, server: 'running' });
    assert.equal(await lastPosted('examples'), undefined, 'the same index: not asked again');
    await send({ type: 'examples', examples: { searches: [], questions: [], filters: [] } });
    assert.equal(await page.locator('#search-welcome .examples, #ask-welcome .examples').count(), 0, 'none to offer shows none');
    await send({
      type: 'examples',
      examples: { searches: ['cors middleware', 'path parameters'], questions: ['How do I add CORS?'], filters: ['tag:tutorial'] },
    });
    assert.deepEqual(await page.locator('#search-welcome button[data-query]').allTextContents(), ['cors middleware', 'path parameters']);
    await page.click('#search-welcome button[data-query="path parameters"]');
    assert.deepEqual((await posted()).filter((m) => m.type === 'search'), [{ type: 'search', query: 'path parameters' }]);
    assert.equal(await page.isVisible('#search-welcome'), false);
    await page.click('#tab-ask');
    assert.equal(await page.isVisible('#ask-welcome'), true);
    await page.click('#ask-welcome button[data-question]');
    assert.deepEqual(await lastPosted('ask'), { type: 'ask', question: 'How do I add CORS?', file: null, conversationId: null });
    // A model answers (the status says so): the welcome no longer says one is needed.
    assert.equal(await page.isVisible('#ask-welcome [data-action="chooseModel"]'), false);
  });

  it('↑/↓ in an empty Ask box recall the questions asked; text typed is never replaced', async () => {
    await page.click('#tab-ask');
    for (const [id, question] of [[1, 'first question'], [2, 'second question']] as const) {
      await send({ type: 'askStarted', id, question, file: null });
      const response: AskResponse = { answer: `answer ${id}`, sources: [], stop: 'answer', mode: 'grounded', grounded: true, steps: [], usage: {}, conversationId: 'c' };
      await send({ type: 'askDone', id, response });
    }
    await page.focus('#question');
    await page.keyboard.press('ArrowUp');
    assert.equal(await page.inputValue('#question'), 'second question');
    await page.keyboard.press('ArrowUp');
    assert.equal(await page.inputValue('#question'), 'first question');
    await page.keyboard.press('ArrowUp');
    assert.equal(await page.inputValue('#question'), 'first question', 'the oldest stays');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.inputValue('#question'), 'second question');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.inputValue('#question'), '', 'past the newest: the empty box again');
    await page.keyboard.type('my own words');
    await page.keyboard.press('ArrowUp');
    assert.equal(await page.inputValue('#question'), 'my own words', 'typed text is not replaced');
  });

  it('Escape in the search box keeps the query and its list (Open Result still means them)', async () => {
    await typeQuery('mexico');
    await send({ type: 'results', response: { query: 'mexico', results: HITS, index: STATUS } });
    await page.focus('#query');
    await page.keyboard.press('Escape');
    assert.equal(await page.inputValue('#query'), 'mexico');
    assert.equal(await page.locator('#results li.hit').count(), HITS.length);
  });

  it('the box shows the model (a click opens the picker) and attaches the open Markdown file; code blocks copy and insert', async () => {
    await page.click('#tab-ask');
    assert.equal(await page.isVisible('#ask-needs-model'), true, 'no model known yet: says what it needs');
    await send({ type: 'status', status: STATUS, server: 'running' });
    assert.equal(await page.textContent('#composer-chips .model-chip'), '\u2699qwen2.5:7b');
    assert.equal(await page.isVisible('#ask-needs-model'), false, 'a model answers: no "It needs a local model"');
    await clearPosted();
    await page.click('#composer-chips .model-chip');
    assert.deepEqual(await posted(), [{ type: 'command', command: 'chooseModel' }]);
    assert.equal(await page.locator('#composer-chips .context-chip').count(), 0, 'no editor: nothing to attach');
    await send({ type: 'editorContext', context: { path: 'runbooks/deploy.md', markdown: true } });
    assert.equal(await page.textContent('#composer-chips .context-chip'), '+ runbooks/deploy.md');
    await page.click('#composer-chips .context-chip');
    assert.equal(await page.textContent('#composer-chips .context-chip.attached'), 'runbooks/deploy.md \u2715');
    await page.fill('#question', 'What does it say about rollbacks?');
    await page.keyboard.press('Enter');
    assert.deepEqual(await lastPosted('ask'), { type: 'ask', question: 'What does it say about rollbacks?', file: 'runbooks/deploy.md', conversationId: null });
    await page.click('#composer-chips .context-chip.attached');
    assert.equal(await page.isVisible('#ask-scope'), false, 'detached: the whole knowledge base again');
    const response: AskResponse = {
      answer: 'Roll back with:\n\n```sh\nmake rollback\n```\n\nthen:\n\n```\nmake verify\n```',
      sources: [], stop: 'answer', mode: 'grounded', grounded: true, steps: [], usage: {}, conversationId: 'c',
    };
    await send({ type: 'askStarted', id: 1, question: 'How do I roll back?', file: null });
    await send({ type: 'askDone', id: 1, response });
    await clearPosted();
    await page.click('.answer .code-copy[data-block="1"]');
    await page.click('.answer .code-insert[data-block="0"]');
    assert.deepEqual(await posted(), [
      { type: 'copy', text: 'make verify\n' },
      { type: 'insert', text: 'make rollback\n' },
    ]);
  });

  it('attaches the selection of the open Markdown file: the question goes with its file and lines', async () => {
    await page.click('#tab-ask');
    const selection = { startLine: 12, endLine: 30, text: 'Roll back with make rollback.' };
    await send({ type: 'editorContext', context: { path: 'runbooks/deploy.md', markdown: true, selection } });
    assert.equal(await page.textContent('#composer-chips .context-chip'), '+ the selection (runbooks/deploy.md:L12–30)');
    await page.click('#composer-chips .context-chip');
    assert.equal(await page.textContent('#composer-chips .context-chip.attached'), 'the selection (runbooks/deploy.md:L12–30) \u2715');
    assert.equal(await page.textContent('#ask-scope-file'), 'runbooks/deploy.md L12–30');
    // The selection changes in the editor after it was attached: what was attached is asked over.
    await send({ type: 'editorContext', context: { path: 'runbooks/deploy.md', markdown: true, selection: { ...selection, startLine: 40, endLine: 41 } } });
    await page.fill('#question', 'What does it say about rollbacks?');
    await page.keyboard.press('Enter');
    const lines = { start: 12, end: 30 };
    assert.deepEqual(await lastPosted('ask'), { type: 'ask', question: 'What does it say about rollbacks?', file: 'runbooks/deploy.md', lines, conversationId: null });
    await send({ type: 'askStarted', id: 1, question: 'What does it say about rollbacks?', file: 'runbooks/deploy.md', lines });
    assert.equal(await page.textContent('.question .q-file'), '(about runbooks/deploy.md L12–30)');
    await send({ type: 'askDone', id: 1, response: { answer: 'Run make rollback.', sources: [], stop: 'answer', steps: [], usage: {} } });
    // Regenerate asks over the same lines.
    await clearPosted();
    await page.click('.turn-regenerate');
    assert.deepEqual(await lastPosted('ask'), { type: 'ask', question: 'What does it say about rollbacks?', file: 'runbooks/deploy.md', lines, conversationId: null });
    // Detached: the whole knowledge base again, no lines.
    await page.click('#ask-scope-clear');
    await page.fill('#question', 'And deploys?');
    await page.keyboard.press('Enter');
    assert.deepEqual(await lastPosted('ask'), { type: 'ask', question: 'And deploys?', file: null, conversationId: null });
    // Attached again, then New chat: the new conversation starts over the whole knowledge base.
    await page.click('#composer-chips .context-chip');
    assert.equal(await page.textContent('#ask-scope-file'), 'runbooks/deploy.md L40–41');
    await page.click('#new-chat');
    assert.equal(await page.locator('#composer-chips .context-chip.attached').count(), 0, 'New chat detaches the selection');
    await page.fill('#question', 'Who deploys?');
    await page.keyboard.press('Enter');
    const fresh = await lastPosted('ask');
    assert.equal((fresh as { file?: string | null }).file, null);
    assert.equal((fresh as { lines?: unknown }).lines, undefined, 'no lines after New chat');
  });

  it('keeps each conversation in the history: listed, reopened with its turns sent along, deleted', async () => {
    await page.click('#tab-ask');
    await page.fill('#question', 'How do I deploy?');
    await page.keyboard.press('Enter');
    const response: AskResponse = { answer: 'Run make deploy.', sources: [], stop: 'answer', mode: 'grounded', grounded: true, steps: [], usage: {}, conversationId: 'srv-1' };
    await send({ type: 'askStarted', id: 1, question: 'How do I deploy?', file: null });
    await send({ type: 'askDone', id: 1, response });
    const saved = (await lastPosted('saveChat')) as Extract<FromWebview, { type: 'saveChat' }> | undefined;
    assert.ok(saved, 'the conversation is kept after its answer');
    assert.equal(saved.title, 'How do I deploy?');
    assert.deepEqual(saved.transcript.map((e) => (e as { kind: string }).kind), ['question', 'answer']);
    // A new chat; then the history lists the kept one, and a click reopens it.
    await page.click('#new-chat');
    assert.equal(await page.locator('#transcript .question').count(), 0);
    await clearPosted();
    await page.click('#history-button');
    assert.deepEqual(await posted(), [{ type: 'listChats' }]);
    await send({ type: 'chats', chats: [{ id: saved.id, title: saved.title, updated: Date.now(), questions: 1 }] });
    assert.deepEqual(await page.locator('#history .history-title').allTextContents(), ['How do I deploy?']);
    await page.click('#history .history-open');
    assert.deepEqual(await lastPosted('openChat'), { type: 'openChat', id: saved.id });
    await send({ type: 'chat', chat: { id: saved.id, title: saved.title, updated: Date.now(), questions: 1, transcript: saved.transcript, file: null } });
    assert.equal(await page.isVisible('#history'), false);
    assert.equal(await page.textContent('#transcript .question .q-text'), 'How do I deploy?');
    assert.match((await page.textContent('#transcript .answer .markdown')) ?? '', /Run make deploy\./);
    // The next question carries the turns so far (the server may remember none of them).
    await page.fill('#question', 'And to roll back?');
    await page.keyboard.press('Enter');
    assert.deepEqual(await lastPosted('ask'), {
      type: 'ask',
      question: 'And to roll back?',
      file: null,
      conversationId: null,
      history: [{ question: 'How do I deploy?', answer: 'Run make deploy.' }],
    });
    await page.click('#history-button');
    await send({ type: 'chats', chats: [{ id: saved.id, title: saved.title, updated: Date.now(), questions: 1 }] });
    await clearPosted();
    await page.click('#history .history-delete');
    assert.deepEqual(await posted(), [{ type: 'deleteChat', id: saved.id }]);
  });

  it('Regenerate asks the last question again without its answer; Edit resends a question from there', async () => {
    await page.click('#tab-ask');
    const answer = (text: string): AskResponse => ({ answer: text, sources: [], stop: 'answer', mode: 'grounded', grounded: true, steps: [], usage: {}, conversationId: 'c' });
    const turns: [number, string, string][] = [[1, 'First?', 'One.'], [2, 'Second?', 'Two.']];
    for (const [id, question, text] of turns) {
      await send({ type: 'askStarted', id, question, file: null });
      await send({ type: 'askDone', id, response: answer(text) });
    }
    assert.equal(await page.locator('.turn-regenerate').count(), 1, 'on the last answer only');
    await clearPosted();
    await page.click('.turn-regenerate');
    assert.deepEqual(await lastPosted('ask'), { type: 'ask', question: 'Second?', file: null, conversationId: 'c', history: [{ question: 'First?', answer: 'One.' }] });
    assert.deepEqual(await page.locator('#transcript .q-text').allTextContents(), ['First?'], 'the answer it replaces is gone');
    await send({ type: 'askStarted', id: 3, question: 'Second?', file: null });
    await send({ type: 'askDone', id: 3, response: answer('Two, again.') });
    await page.click('.question >> nth=0 >> .turn-edit');
    assert.equal(await page.inputValue('#question'), 'First?');
    assert.match((await page.textContent('#ask-editing')) ?? '', /Editing question 1/);
    await page.fill('#question', 'First, edited?');
    await page.keyboard.press('Enter');
    assert.deepEqual(await lastPosted('ask'), { type: 'ask', question: 'First, edited?', file: null, conversationId: 'c' });
    assert.equal(await page.locator('#transcript .question').count(), 0, 'an edited question follows only the turns before it');
    assert.equal(await page.isVisible('#ask-editing'), false);
  });
});

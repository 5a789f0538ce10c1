import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { contentSecurityPolicy, panelHtml } from '../../src/panelHtml';
import {
  clarifyChoices,
  highlight,
  queryTerms,
  renderAnswer,
  renderHit,
  renderMarkdown,
  renderStep,
  statusLine,
} from '../../src/webview/render';
import { hit, READY } from './fakes';

describe('webview rendering', () => {
  it('marks the query words in snippets and escapes everything else', () => {
    assert.deepEqual(queryTerms('Install the <b>index</b>'), ['install', 'index', 'the']);
    assert.equal(
      highlight('Installing <script> indexes', ['install', 'index']),
      '<mark>Installing</mark> &lt;script&gt; <mark>indexes</mark>',
    );
    assert.equal(highlight('a **kb** b', []), 'a <mark>kb</mark> b');
    assert.equal(highlight('reinstall', ['install']), 'reinstall');
  });

  it('renders a result row with number, path, label badge, heading, score', () => {
    const html = renderHit(hit(2, 'docs/<x>.md'), ['install'], true);
    assert.match(html, /<span class="hit-n">2<\/span>/);
    assert.match(html, /docs\/&lt;x&gt;\.md/);
    assert.match(html, /class="badge context">context match/);
    assert.match(html, /aria-selected="true"/);
    assert.match(html, /<mark>install<\/mark>/);
    assert.match(html, /0\.50/);
  });

  it('renders markdown without raw HTML or javascript: links', () => {
    const html = renderMarkdown('**bold** <img src=x onerror=alert(1)> [x](javascript:alert(1))');
    assert.match(html, /<strong>bold<\/strong>/);
    assert.doesNotMatch(html, /<img/);
    assert.doesNotMatch(html, /href="javascript/);
  });

  it('renders steps as Thinking / Calling lines', () => {
    assert.equal(renderStep({ kind: 'thinking', text: 'hmm <x>' }), '<div class="step thinking"><span class="step-kind">Thinking:</span> hmm &lt;x&gt;</div>');
    assert.match(renderStep({ kind: 'tool_call', text: '', tool: 'read_file', args: { path: 'a.md' } }), /Calling<\/span> <code>read_file<\/code> with <code>\{&quot;path&quot;:&quot;a\.md&quot;\}<\/code>/);
    assert.equal(renderStep({ kind: 'answer', text: 'x' }), '');
  });

  it('turns a clarification into numbered choices', () => {
    const { question, choices } = clarifyChoices(
      '“brief” could mean 2 files. Which one do you mean?\n1. `projects/a.md` — A\n2. `notes/a.md` — B\nAnswer with the number.',
    );
    assert.equal(question, '“brief” could mean 2 files. Which one do you mean?\nAnswer with the number.');
    assert.deepEqual(choices, [
      { n: 1, label: 'projects/a.md — A' },
      { n: 2, label: 'notes/a.md — B' },
    ]);
    const html = renderAnswer({ answer: 'Which?\n1. a\n2. b', sources: [], stop: 'clarify', steps: [], usage: {} }, 3);
    assert.match(html, /data-entry="3" data-choice="2"><span class="choice-n">2<\/span> b<\/button>/);
  });

  it('lists the sources of an answer as links', () => {
    const html = renderAnswer(
      { answer: 'Yes [1].', sources: [{ n: 1, uri: 'file:///ws/a.md', path: 'a.md', range: hit(1, 'a.md').range }], stop: 'step_limit', steps: [], usage: {} },
      0,
    );
    assert.match(html, /<a href="#" class="source" data-entry="0" data-source="0"[^>]*>\[1\] a\.md L5–7<\/a>/);
    assert.match(html, /step limit/);
  });

  it('describes the index state on top', () => {
    assert.deepEqual(statusLine(READY, 'running'), { text: 'Ready · 3 files · 12 chunks · no model', cls: 'ready' });
    assert.equal(statusLine({ ...READY, state: 'indexing', files: 4, pending: 6 }, 'running').text, 'Indexing 4/10 · no model');
    assert.equal(statusLine(null, 'failed', 'no python').text, 'no python');
  });

  it('builds a page with a strict CSP', () => {
    const csp = contentSecurityPolicy('vscode-resource:', 'abc');
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-abc'/);
    const html = panelHtml({ cspSource: 'vscode-resource:', nonce: 'abc', scriptUri: 'w.js', styleUri: 's.css' });
    assert.match(html, /<script nonce="abc" src="w\.js"><\/script>/);
    assert.equal((html.match(/<script/g) ?? []).length, 1);
  });
});

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { contentSecurityPolicy, panelHtml } from '../../src/panelHtml';
import {
  clarifyChoices,
  fallbackReason,
  filterCompletions,
  filterWordAt,
  highlight,
  modelProblem,
  renderAnswer,
  renderHit,
  renderMarkdown,
  renderModelCard,
  renderPath,
  renderStep,
  renderTranscript,
  searchNotice,
  statusLine,
  withoutLead,
} from '../../src/webview/render';
import { hit, READY } from './fakes';

describe('webview rendering', () => {
  it("marks exactly the server's words, whole words only, and escapes everything else", () => {
    assert.equal(
      highlight('Installing <script> in the index', ['Installing', 'index']),
      '<mark>Installing</mark> &lt;script&gt; in the <mark>index</mark>',
    );
    // No stopword or prefix marking: "in" is not a mark, and a mark never matches inside a word.
    assert.equal(highlight('reinstall the index', ['install']), 'reinstall the index');
    assert.equal(highlight('a <b>', []), 'a &lt;b&gt;');
    assert.equal(highlight('C++ and a.b', ['C++', 'a.b']), '<mark>C++</mark> and <mark>a.b</mark>');
  });

  it('renders a result row with number, path, heading, snippet, label badge, score and tag chips', () => {
    const html = renderHit(hit(2, 'docs/<x>.md', { marks: ['install'], meta: { tags: ['setup', 'a"b'] } }), true);
    assert.match(html, /<span class="hit-n">2<\/span>/);
    assert.match(html, /<span class="hit-dir">docs\/<\/span><span class="hit-file">&lt;x&gt;\.md<\/span>/);
    assert.match(html, /class="badge context">context match/);
    assert.match(html, /aria-selected="true"/);
    assert.match(html, /<mark>install<\/mark>/);
    assert.match(html, /0\.50/);
    assert.match(html, /<button type="button" class="chip" data-tag="setup"[^>]*>#setup<\/button>/);
    assert.match(html, /data-tag="a&quot;b"/);
  });

  it('splits a path into a shrinking folder and a whole file name, full path as tooltip', () => {
    assert.equal(
      renderPath('docs/tutorial/cors.md'),
      '<span class="hit-path" title="docs/tutorial/cors.md"><span class="hit-dir">docs/tutorial/</span><span class="hit-file">cors.md</span></span>',
    );
    assert.equal(renderPath('README.md'), '<span class="hit-path" title="README.md"><span class="hit-file">README.md</span></span>');
  });

  it('says when a list was made while indexing', () => {
    const indexing = { ...READY, state: 'indexing' as const, progress: { phase: 'vectors' as const, filesDone: 38, filesTotal: 155, chunksDone: 900, chunksTotal: 3036 } };
    assert.equal(searchNotice(indexing), 'Indexing 38/155 — results may be incomplete');
    assert.equal(searchNotice(READY), '');
    // While the sync still counts its files there is no total to show (never "0/0").
    const scanning = { ...READY, state: 'indexing' as const, progress: { phase: 'scanning' as const, filesDone: 0, filesTotal: 0 } };
    assert.equal(searchNotice(scanning), 'Indexing — results may be incomplete');
    assert.equal(statusLine(scanning, 'running').text, 'Indexing scanning files… · no model');
    assert.equal(searchNotice({ ...READY, vectorsReady: 0.5 }), 'Indexing 3/3 — results may be incomplete');
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

  it('lists the sources of an answer with one numbering style, copy, and the stop note', () => {
    const html = renderAnswer(
      { answer: 'Yes [1].', sources: [{ n: 1, uri: 'file:///ws/a.md', path: 'a.md', range: hit(1, 'a.md').range }, { uri: 'file:///ws/b.md', path: 'b.md', range: hit(1, 'b.md').range }], stop: 'step_limit', steps: [], usage: {} },
      0,
    );
    assert.match(html, /<ul><li><a href="#" class="source" data-entry="0" data-source="0"[^>]*>\[1\] a\.md L5–7<\/a><\/li><li><a[^>]*>\[2\] b\.md L5–7<\/a>/);
    assert.doesNotMatch(html, /<ol>/);
    assert.match(html, /step limit/);
    assert.match(html, /class="link-button copy-answer" data-entry="0"/);
  });

  it('shows how an answer was made and marks ungrounded answers', () => {
    const base = { answer: 'It is so.', sources: [], stop: 'answer' as const, steps: [], usage: {} };
    assert.match(renderAnswer({ ...base, mode: 'grounded' }, 0), /class="badge mode mode-grounded"[^>]*>grounded</);
    const ungrounded = renderAnswer({ ...base, mode: 'agent', grounded: false }, 0);
    assert.match(ungrounded, /class="answer stop-answer is-ungrounded"/);
    assert.match(ungrounded, /class="badge ungrounded"[^>]*>ungrounded</);
    assert.doesNotMatch(renderAnswer({ ...base, grounded: true }, 0), /ungrounded/);
    assert.match(renderAnswer({ ...base, mode: 'fallback', stop: 'error' }, 0), />no model</);
  });

  it('shows the model trouble once: error steps of a fallback answer and its lead line go', () => {
    const note = 'Ollama is not reachable at http://127.0.0.1:9 — start it with `ollama serve`.';
    const html = renderTranscript([
      { kind: 'question', text: 'How?' },
      { kind: 'step', event: { kind: 'status', text: 'Waiting for the model…' } },
      { kind: 'step', event: { kind: 'error', text: note } },
      { kind: 'answer', response: { answer: `${note}\n\nBest matching passages:\n1. a.md`, sources: [], stop: 'error', mode: 'fallback', steps: [], usage: {} }, lead: note },
      { kind: 'question', text: 'Again?' },
      { kind: 'step', event: { kind: 'error', text: 'the tool failed' } },
    ]);
    assert.equal((html.match(/not reachable/g) ?? []).length, 0);
    assert.match(html, /<div class="step status-step">Waiting for the model…<\/div>/);
    assert.match(html, /Best matching passages/);
    assert.match(html, /Error:<\/span> the tool failed/, 'errors of other asks stay');
    // The server of issue 11 says why once, as a "No model: …" status step.
    const reason = 'Ollama is not reachable at http://127.0.0.1:9: start it with `ollama serve`';
    const entries = [
      { kind: 'question' as const, text: 'How?' },
      { kind: 'step' as const, event: { kind: 'status' as const, text: 'Mode: agent — …' } },
      { kind: 'step' as const, event: { kind: 'status' as const, text: `No model: ${reason}` } },
      { kind: 'answer' as const, response: { answer: '**No model: here are the best passages** in the knowledge base:\n\n1. `a.md`', sources: [], stop: 'answer' as const, mode: 'fallback' as const, steps: [], usage: {} } },
    ];
    assert.equal(fallbackReason(entries), reason);
    const shown = renderTranscript(entries);
    assert.doesNotMatch(shown, /not reachable/);
    assert.match(shown, /Mode: agent/);
    assert.match(shown, /here are the best passages/);
    assert.equal(withoutLead('a\n\nb', 'a'), 'b');
    assert.equal(withoutLead('a\n\nb', 'c'), 'a\n\nb');
  });

  it('puts Stop next to the pending question', () => {
    const html = renderTranscript([{ kind: 'question', text: 'Why?', pending: true }]);
    assert.match(html, /<div class="question pending">.*<button id="stop-button" type="button" class="secondary stop"/);
    assert.doesNotMatch(renderTranscript([{ kind: 'question', text: 'Why?' }]), /stop/);
  });

  it('builds one model card with actions from the server message', () => {
    const llm = { host: 'http://127.0.0.1:11434', model: 'qwen2.5:7b', reachable: false };
    const missing = modelProblem('The model qwen2.5:7b is not available in Ollama: run `ollama pull qwen2.5:7b`');
    assert.equal(missing.kind, 'missing');
    assert.match(renderModelCard(missing, llm), /data-text="ollama pull qwen2\.5:7b"/);
    const down = modelProblem('Ollama is not reachable at http://127.0.0.1:11434');
    assert.equal(down.kind, 'unreachable');
    const card = renderModelCard(down, llm);
    assert.match(card, /data-action="openSettings"/);
    assert.match(card, /data-action="retry"/);
    assert.match(card, /data-text="ollama serve"/);
    assert.equal(modelProblem('The model did not answer within 120 s').kind, 'timeout');
  });

  it('completes filter values from the schema', () => {
    assert.deepEqual(filterWordAt('mexico tag:pay', 14), { start: 7, key: 'tag', value: 'pay' });
    assert.deepEqual(filterWordAt('-tag:', 5), { start: 0, key: '-tag', value: '' });
    assert.equal(filterWordAt('mexico pay', 10), undefined);
    const schema = {
      files: 10,
      fields: [
        { name: 'tags', types: ['list'], files: 8, top: [{ value: 'payments', count: 5 }, { value: 'runbook', count: 3 }, { value: 'pay day', count: 1 }] },
        { name: 'status', types: ['string'], files: 4, top: [{ value: 'draft', count: 4 }] },
      ],
    };
    assert.deepEqual(
      filterCompletions(schema, 'tag', 'pay').map((c) => c.insert),
      ['tag:payments ', 'tag:"pay day" '],
    );
    assert.deepEqual(filterCompletions(schema, '-status', '').map((c) => c.insert), ['-status:draft ']);
    assert.equal(filterCompletions(schema, 'tag', '')[0]?.detail, '5 files');
    assert.deepEqual(filterCompletions(schema, 'owner', ''), []);
    assert.deepEqual(filterCompletions(null, 'tag', ''), []);
  });

  it('describes the index state on top', () => {
    assert.deepEqual(statusLine(READY, 'running'), { text: 'Ready · 3 files · 12 chunks · no model', cls: 'ready' });
    assert.equal(statusLine({ ...READY, state: 'indexing', files: 4, pending: 6 }, 'running').text, 'Indexing 4/10 files · no model');
    const progress = { phase: 'vectors' as const, filesDone: 38, filesTotal: 155, chunksDone: 1204, chunksTotal: 3036 };
    assert.equal(
      statusLine({ ...READY, state: 'indexing', files: 30, progress }, 'running').text,
      'Indexing 38/155 files · 1,204/3,036 chunks · embedding · no model',
    );
    assert.match(statusLine({ ...READY, state: 'indexing', progress, paused: true }, 'running').text, /· paused ·/);
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

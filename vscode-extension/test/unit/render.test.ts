import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { contentSecurityPolicy, panelHtml } from '../../src/panelHtml';
import { droppedCitations, FOLDED_SUMMARY, groupSources, renderAnswer, withoutLead, withoutSourcesParagraph } from '../../src/webview/answer';
import { filterCompletions, filterWordAt } from '../../src/webview/completionRender';
import { highlight, highlightHtml } from '../../src/webview/html';
import { renderMarkdown } from '../../src/webview/markdown';
import { fixCommand, modelProblem, modelSettingsQuery, renderModelCard } from '../../src/webview/modelCard';
import { renderHit, renderHover, renderPath, renderSearchError, resultsInfo, searchNotice } from '../../src/webview/results';
import { renderServerProblem, statusLine } from '../../src/webview/statusLine';
import { clarifyChoices, renderStep, stepsSummary, streamedText } from '../../src/webview/steps';
import { fallbackReason, renderTranscript } from '../../src/webview/transcriptRender';
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

  it('marks words in rendered Markdown in its text only, never inside a tag', () => {
    assert.equal(
      highlightHtml('<h2 class="code">code &amp; a&lt;b</h2><p><code>code</code> x</p>', ['code', 'a<b']),
      '<h2 class="code"><mark>code</mark> &amp; <mark>a&lt;b</mark></h2><p><code><mark>code</mark></code> x</p>',
    );
    assert.equal(highlightHtml('<p>as is</p>', []), '<p>as is</p>');
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
    assert.equal(searchNotice(indexing), 'Keyword search ready · embedding 900/3,036 passages — results may be incomplete');
    assert.equal(searchNotice(READY), '');
    // While the sync still counts its files there is no total to show (never "0/0").
    const scanning = { ...READY, state: 'indexing' as const, progress: { phase: 'scanning' as const, filesDone: 0, filesTotal: 0 } };
    assert.equal(searchNotice(scanning), 'Scanning files… — results may be incomplete');
    assert.equal(statusLine(scanning, 'running').text, 'Scanning files… · no model');
    assert.equal(searchNotice({ ...READY, vectorsReady: 0.5 }), 'Indexing not finished — results may be incomplete');
  });

  it('renders markdown without raw HTML or javascript: links', () => {
    const html = renderMarkdown('**bold** <img src=x onerror=alert(1)> [x](javascript:alert(1))');
    assert.match(html, /<strong>bold<\/strong>/);
    assert.doesNotMatch(html, /<img/);
    assert.doesNotMatch(html, /href="javascript/);
  });

  it('renders steps as Thinking / Calling lines', () => {
    // A file's summary is the server's summarizer at work, not a model's raw tool call.
    const summary = renderStep({ kind: 'tool_call', text: 'Calling summarize_document with {"path": "a b.md"}', tool: 'summarize_document', args: { path: 'a b.md' } });
    assert.equal(summary, '<div class="step tool-call"><span class="step-kind">Summarizing</span> <code>a b.md</code></div>');
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
    const text = (h: string): string => h.replace(/<[^>]+>/g, '');
    const items = /<ul>(.*)<\/ul>/.exec(html)?.[1]?.split('</li>').filter(Boolean) ?? [];
    assert.deepEqual(items.map(text), ['[1] a.md L5–7', '[2] b.md L5–7']);
    assert.match(items[0] ?? '', /<a href="#" class="source" data-entry="0" data-group="0" data-range="0"/);
    assert.doesNotMatch(html, /<ol>/);
    assert.match(html, /step limit/);
    assert.match(html, /class="link-button copy-answer" data-entry="0"/);
  });

  it('links each [n] of an answer to its source, and leaves code, links and unknown numbers alone', () => {
    const sources = [
      { n: 1, uri: 'file:///ws/a.md', path: 'a.md', range: hit(1, 'a.md').range },
      { n: 2, uri: 'file:///ws/b.md', path: 'b.md', range: hit(2, 'b.md').range },
    ];
    const html = renderMarkdown('Run it [1][2], see `x[1]` and [the docs](docs/x.md) [9]; also [docs/c.md:3-5].', { entry: 4, sources });
    assert.match(html, /<a href="#" class="cite" data-entry="4" data-source="0" title="a\.md L5–7">\[1\]<\/a><a href="#" class="cite" data-entry="4" data-source="1" title="b\.md L9–11">\[2\]<\/a>/);
    assert.match(html, /<code>x\[1\]<\/code>/, 'not in code');
    assert.match(html, /<a href="docs\/x\.md">the docs<\/a> \[9\];/, 'an unknown number stays text');
    assert.match(html, /<a href="docs\/c\.md#L3-L5" class="cite cite-path" title="docs\/c\.md L3–5">\[docs\/c\.md:3-5\]<\/a>/);
    // Sources without numbers are cited by position; escaping holds in titles.
    const odd = renderMarkdown('See [1].', { entry: 0, sources: [{ uri: 'file:///ws/%22.md', path: '"<x>.md', range: hit(1, 'a.md').range }] });
    assert.match(odd, /title="&quot;&lt;x&gt;\.md L5–7"/);
  });

  it('lists each file once, its cited line ranges merged, and drops the "Sources:" paragraph', () => {
    const range = (a: number, b: number) => ({ start: { line: a, character: 0 }, end: { line: b, character: 0 } });
    const sources = [
      { n: 1, uri: 'file:///ws/cors.md', path: 'cors.md', range: range(0, 1) },
      { n: 2, uri: 'file:///ws/cors.md', path: 'cors.md', range: range(0, 20) },
      { n: 3, uri: 'file:///ws/other.md', path: 'other.md', range: range(4, 9) },
      { n: 4, uri: 'file:///ws/cors.md', path: 'cors.md', range: range(40, 45) },
      { n: 5, uri: 'file:///ws/cors.md', path: 'cors.md', range: range(20, 25) },
    ];
    assert.deepEqual(
      groupSources(sources).map((g) => ({ path: g.path, ranges: g.ranges.map((r) => [r.range.start.line, r.range.end.line, r.numbers]) })),
      [
        { path: 'cors.md', ranges: [[0, 25, [1, 2, 5]], [40, 45, [4]]] },
        { path: 'other.md', ranges: [[4, 9, [3]]] },
      ],
    );
    const html = renderAnswer(
      { answer: 'Add it [1][2].\n\nSources: [1] `cors.md` lines 1–1; [2] `cors.md` lines 1–20', sources, stop: 'answer', steps: [], usage: {} },
      0,
    );
    assert.equal((html.match(/<li>/g) ?? []).length, 2, 'one source per file');
    assert.doesNotMatch(html, /Sources: \[1\]/);
    assert.match(html, /\[1, 2, 4, 5\]<\/span> <a[^>]*class="source"[^>]*>cors\.md<\/a> <span class="source-lines"><a[^>]*>L1–25<\/a> · <a[^>]*>L41–45<\/a>/);
    assert.equal(withoutSourcesParagraph('A.\n\nPassages the model was given (its answer cites none of them): [1] x'), 'A.');
    assert.equal(withoutSourcesParagraph('Sources: only'), 'Sources: only', 'an answer that is only that stays');
    // A clarification lists no sources beside its choices.
    const clarify = renderAnswer({ answer: 'Which?\n1. a\n2. b\n\nSources: `a` L1', sources, stop: 'clarify', steps: [], usage: {} }, 1);
    assert.doesNotMatch(clarify, /class="sources"|Sources/);
  });

  it('folds the steps of an answered question into one line that opens; streams the pending answer', () => {
    const events = [
      { kind: 'tool_call' as const, text: '', tool: 'search_knowledge_base', args: { query: 'cors' } },
      { kind: 'tool_result' as const, text: '3 files', tool: 'search_knowledge_base' },
      { kind: 'tool_call' as const, text: '', tool: 'read_file', args: { path: 'docs/cors.md' } },
      { kind: 'tool_call' as const, text: '', tool: 'search_in_document', args: { path: 'docs/cors.md', query: 'x' } },
      { kind: 'tool_call' as const, text: '', tool: 'read_file', args: { path: 'docs/cors.md', start_line: 40 } },
    ];
    assert.equal(stepsSummary(events), 'Searched 2×, read 1 file');
    assert.equal(stepsSummary([{ kind: 'status', text: 'Mode: grounded' }]), '1 step');
    assert.equal(
      stepsSummary([
        { kind: 'status', text: 'Mode: grounded — the best passages are given to the model' },
        { kind: 'tool_result', text: '4 passages for the model: [1] a.md lines 1–4; [2] b.md lines 3–9' },
      ]),
      'Gave the model 4 passages',
    );
    const entries = [
      { kind: 'question' as const, text: 'How?' },
      ...events.map((event) => ({ kind: 'step' as const, event })),
      { kind: 'answer' as const, response: { answer: 'So.', sources: [], stop: 'answer' as const, steps: [], usage: {} } },
    ];
    const done = renderTranscript(entries);
    assert.match(done, /<details class="steps" data-first="1"><summary>Searched 2×, read 1 file<\/summary><div class="step tool-call">/);
    assert.match(renderTranscript(entries, { openSteps: new Set([1]) }), /<details class="steps" data-first="1" open>/);
    // While the ask runs, its steps are live and the answer streams in below them.
    const live = renderTranscript([{ kind: 'question', text: 'How?', pending: true }, ...entries.slice(1, 3)], {
      pending: true,
      streaming: { text: 'Add the **middleware**' },
    });
    assert.match(live, /<div class="steps live"><div class="step tool-call">/);
    assert.match(live, /<div class="answer pending-answer" aria-busy="true"><div class="markdown"><p>Add the <strong>middleware<\/strong><\/p>/);
    assert.doesNotMatch(live, /<details/);
  });

  it('links the streaming answer\'s citations: [path:lines] always, [n] only to listed sources', () => {
    const pending = [{ kind: 'question' as const, text: 'How?', pending: true }];
    const text = 'See [a.md:3-5] and [1].';
    const early = renderTranscript(pending, { pending: true, streaming: { text } });
    assert.match(early, /<a href="a\.md#L3-L5" class="cite cite-path"/);
    assert.doesNotMatch(early, /data-source/);
    const source = { n: 1, uri: 'file:///w/a.md', path: 'a.md', range: { start: { line: 2, character: 0 }, end: { line: 5, character: 0 } } };
    const listed = renderTranscript(pending, { pending: true, streaming: { text, sources: [source] } });
    assert.match(listed, /<a href="#" class="cite" data-entry="streaming" data-source="0" title="a\.md L3–5">\[1\]<\/a>/);
  });

  it('says "Waiting for the model" only while the model is silent', () => {
    const waiting = { kind: 'step' as const, event: { kind: 'status' as const, text: 'Waiting for the model (qwen at x)…' } };
    const pending = [{ kind: 'question' as const, text: 'How?', pending: true }, waiting];
    assert.match(renderTranscript(pending, { pending: true, streaming: { text: '', waiting: waiting.event.text } }), /class="step status-step waiting">Waiting for the model/);
    // The model spoke since: the line goes; it never shows in the folded steps.
    assert.doesNotMatch(renderTranscript(pending, { pending: true, streaming: { text: 'Add' } }), /Waiting/);
    assert.doesNotMatch(
      renderTranscript([...pending, { kind: 'answer', response: { answer: 'A', sources: [], stop: 'answer', steps: [], usage: {} } }]),
      /Waiting/,
    );
  });

  it('shows one verdict, the mode as its small print', () => {
    const base = { answer: 'It is so.', sources: [], stop: 'answer' as const, steps: [], usage: {} };
    const supported = renderAnswer({ ...base, mode: 'grounded', verdict: 'supported', modeReason: 'smollm2 does not call tools' }, 0);
    assert.match(supported, /class="badge verdict verdict-supported"[^>]*>supported</);
    assert.match(supported, /class="mode-note">grounded mode: the model answered from the best passages \(smollm2 does not call tools\)</);
    assert.equal((supported.match(/class="badge/g) ?? []).length, 1, 'one badge');
    const unsupported = renderAnswer({ ...base, mode: 'agent', grounded: false, verdict: 'unsupported' }, 0);
    assert.match(unsupported, /class="answer stop-answer is-unsupported"/);
    assert.match(unsupported, /class="badge verdict verdict-unsupported"[^>]*>not supported by the notes</);
    assert.doesNotMatch(unsupported, />grounded</);
    assert.match(renderAnswer({ ...base, mode: 'fallback', verdict: 'no_model' }, 0), /verdict-no_model"[^>]*>no model</);
    // A server before issue 35 sends `grounded` and `mode` only: the verdict is read from them.
    assert.match(renderAnswer({ ...base, mode: 'grounded', grounded: false }, 0), />not supported by the notes</);
    assert.match(renderAnswer({ ...base, mode: 'grounded', grounded: true }, 0), />supported</);
    assert.doesNotMatch(renderAnswer({ ...base, stop: 'clarify', verdict: null }, 0), /class="badge verdict/);
  });

  it('folds an unsupported model answer under the quotes', () => {
    const model = 'The cut-off is at noon.';
    const answer = [
      'From your notes:\n- “Payments must be released before 14:30.” [payments/mexico.md:9]',
      model,
      '> Not supported by your notes: cites no passage. Check the model’s answer above against the passages.',
      'Passages the model was given: [1] `payments/mexico.md` lines 7–12',
    ].join('\n\n');
    const sources = [{ n: 1, uri: 'file:///w/payments/mexico.md', path: 'payments/mexico.md', range: { start: { line: 6, character: 0 }, end: { line: 12, character: 0 } } }];
    const html = renderAnswer({ answer, sources, stop: 'answer', steps: [], usage: {}, mode: 'grounded', grounded: false, verdict: 'unsupported', folded: model }, 0);
    const quotes = html.indexOf('Payments must be released');
    const reason = html.indexOf('Not supported by your notes: cites no passage');
    const fold = html.indexOf(`<details class="folded-answer"><summary>${FOLDED_SUMMARY}</summary>`);
    const text = html.indexOf(model);
    assert.ok(quotes >= 0 && quotes < reason && reason < fold && fold < text, html);
    assert.equal((html.match(/at noon/g) ?? []).length, 1);
    // A supported answer is not folded.
    assert.doesNotMatch(renderAnswer({ answer, sources, stop: 'answer', steps: [], usage: {}, mode: 'grounded', verdict: 'supported' }, 0), /<details/);
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
    assert.doesNotMatch(html, /Waiting for the model/, 'not once the ask is over');
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

  it('marks the pending question, with no Stop of its own (the Ask button is Stop then)', () => {
    const html = renderTranscript([{ kind: 'question', text: 'Why?', pending: true }]);
    assert.match(html, /<div class="question pending">/);
    assert.doesNotMatch(html, /button/);
  });

  it('builds one model card with actions from the server message', () => {
    const llm = { host: 'http://127.0.0.1:11434', model: 'qwen2.5:7b', reachable: false };
    const missing = modelProblem('The model qwen2.5:7b is not available in Ollama: run `ollama pull qwen2.5:7b`');
    assert.equal(missing.kind, 'missing');
    assert.match(renderModelCard(missing, llm), /data-text="ollama pull qwen2\.5:7b"/);
    const down = modelProblem('Ollama is not reachable at http://127.0.0.1:11434');
    assert.equal(down.kind, 'unreachable');
    const card = renderModelCard(down, llm);
    assert.match(card, /data-action="openSettings" data-query="@id:kb\.llm\.provider [^"]*@id:kb\.ollama\.host/);
    assert.match(card, /data-action="retry"/);
    assert.match(card, /data-action="chooseModel"/);
    assert.match(card, /data-text="ollama serve"/);
    assert.equal(modelProblem('The model did not answer within 120 s').kind, 'timeout');
  });

  it('follows the configured provider and port: no `ollama serve` for an OpenAI-compatible server', () => {
    const down = modelProblem('The model server is not reachable');
    const openai = (host: string, model = 'smollm2') => ({ host, model, reachable: false, provider: 'openai' as const });
    assert.equal(fixCommand(down, openai('http://127.0.0.1:8081/v1')), 'llama-server -m model.gguf --port 8081');
    assert.equal(fixCommand(down, openai('http://127.0.0.1:8080/v1', 'qwen.gguf')), 'llama-server -m qwen.gguf --port 8080');
    assert.equal(fixCommand(down, openai('http://127.0.0.1:1234/v1')), 'lms server start --port 1234');
    assert.equal(fixCommand(down, openai('http://127.0.0.1:8000/v1', 'Qwen/Qwen2.5-7B')), 'vllm serve Qwen/Qwen2.5-7B --port 8000');
    assert.equal(fixCommand(modelProblem('model smollm3 not found'), openai('http://127.0.0.1:8080/v1')), undefined);
    assert.equal(fixCommand(down, { host: 'http://127.0.0.1:11500', model: 'q', provider: 'ollama' }), 'OLLAMA_HOST=127.0.0.1:11500 ollama serve');
    const card = renderModelCard(down, openai('http://127.0.0.1:8081/v1'));
    assert.doesNotMatch(card, /ollama/i);
    assert.match(card, /llama-server, LM Studio, vLLM/);
    assert.match(card, /data-text="llama-server -m model\.gguf --port 8081"/);
    assert.doesNotMatch(modelSettingsQuery(openai('x')), /ollama/);
  });

  it('shows a search error with the character it names, and the list query above results', () => {
    const html = renderSearchError("query, character 19: '2026-13-01' is not a date: there is no month 13 (in 'payments modified>2026-13-01')");
    assert.match(html, /The query has a problem at character 19: &#39;2026-13-01&#39; is not a date: there is no month 13\./);
    assert.match(html, /<code class="search-error-where">payments modified&gt;<mark class="search-error-at">2<\/mark>026-13-01<\/code>/);
    assert.match(renderSearchError('filter, character 1: this \'(\' is never closed (in \'(tag:x\')'), /<mark class="search-error-at">\(<\/mark>tag:x/);
    assert.equal(renderSearchError('index is broken'), '<div class="search-error-text">index is broken</div>');
    assert.equal(resultsInfo(3038, 'payments'), '3,038 files for “payments”');
    assert.equal(resultsInfo(7, 'mexico', 'quickPick'), '7 files for “mexico” (from KB: Search)');
    assert.equal(resultsInfo(2, 'How do I deploy?', 'agent'), '2 files for “How do I deploy?” (from the last question)');
    assert.equal(resultsInfo(1, 'deploy', 'cli'), '1 file for “deploy” (from kb search)');
  });

  it('says why the server did not start, one fact a line, with its actions', () => {
    const html = renderServerProblem({
      facts: ['The kb-lsp server is not installed in python3.', 'Install it from a clone of the kb-lsp repository.'],
      kind: 'package-missing',
      install: 'python3 -m venv .venv && .venv/bin/pip install .',
      remote: true,
    });
    assert.equal((html.match(/<p class="empty-fact">/g) ?? []).length, 2);
    assert.match(html, /data-action="copyInstall" data-text="python3 -m venv \.venv &amp;&amp; \.venv\/bin\/pip install \."/);
    assert.match(html, /data-action="openServerSettings" title="kb\.server\.python, in the Remote settings/);
    assert.match(html, /data-action="showLog"/);
    assert.doesNotMatch(html, /pip install kb-lsp/);
  });

  it('hovers with the passage once read, the snippet until then', () => {
    const h = hit(1, 'a.md', { snippet: 'short…', marks: ['install'] });
    assert.match(renderHover(h, undefined), /<div class="hover-passage">short…<\/div>/);
    assert.match(
      renderHover(h, undefined, '## Setup\n\nline one\nthen install it'),
      /<div class="hover-passage is-passage markdown"><h2>Setup<\/h2>\n<p>line one\nthen <mark>install<\/mark> it<\/p>\n<\/div>/,
    );
  });

  it('hovers with each extracted value and the line and words of the note it was read from', () => {
    const range = { start: { line: 11, character: 4 }, end: { line: 11, character: 40 } };
    const evidence = "sent to Banorte's H2H <portal>";
    const h = hit(1, 'a.md', {
      meta: { extracted: { counterparty: [{ value: 'Banorte', evidence, range, start: 120, end: 150 }] }, extractedBy: 'ollama/qwen2.5:7b' },
    });
    const html = renderHover(h, undefined);
    assert.match(html, /extracted by ollama\/qwen2\.5:7b:/);
    assert.match(html, /counterparty: Banorte — from line 12: “sent to Banorte&#39;s H2H &lt;portal&gt;”/);
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
    // The files at the top of the workspace: `folder:/`, never a blank `folder:`.
    const folders = { files: 14, fields: [{ name: 'folder', types: ['string'], files: 14, top: [{ value: 'payments', count: 4 }, { value: '', count: 2 }] }] };
    assert.deepEqual(filterCompletions(folders, 'folder', '').map((c) => [c.insert, c.label, c.detail]), [
      ['folder:payments ', 'folder:payments', '4 files'],
      ['folder:/ ', 'folder:/', 'top level · 2 files'],
    ]);
    assert.deepEqual(filterCompletions({ ...folders, fields: [{ ...folders.fields[0], name: 'status' }] }, 'status', '').map((c) => c.label), ['status:payments']);
  });

  it('describes the index state on top', () => {
    assert.deepEqual(statusLine(READY, 'running'), { text: 'Ready · 3 files · 12 passages · no model', cls: 'ready' });
    assert.equal(statusLine({ ...READY, files: 155, chunks: 3038 }, 'running').text, 'Ready · 155 files · 3,038 passages · no model');
    assert.equal(statusLine({ ...READY, state: 'indexing', files: 4, pending: 6 }, 'running').text, 'Indexing 4/10 files · no model');
    const progress = { phase: 'vectors' as const, filesDone: 38, filesTotal: 155, chunksDone: 1204, chunksTotal: 3036 };
    assert.equal(
      statusLine({ ...READY, state: 'indexing', files: 30, progress }, 'running', 125).text,
      'Keyword search ready · embedding 1,204/3,036 passages · about 2 min left · no model',
    );
    assert.match(statusLine({ ...READY, state: 'indexing', progress, paused: true }, 'running').text, /· paused ·/);
    assert.equal(statusLine(null, 'failed').text, 'The server is not running.');
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

describe('streamedText', () => {
  it('adds pieces, starts over on replace, and takes an answer sent whole as it is', () => {
    let text = '';
    for (const piece of ['Run `make ', 'deploy`', ' from main']) {
      text = streamedText(text, { text: piece, args: { piece: true } });
    }
    assert.equal(text, 'Run `make deploy` from main');
    assert.equal(streamedText(text, { text: 'Deploy with', args: { piece: true, replace: true } }), 'Deploy with');
    // A server that does not stream sends the whole answer once, at the end (today's wire);
    // one that streams and then sends it whole too shows it once.
    assert.equal(streamedText('', { text: 'The whole answer.' }), 'The whole answer.');
    assert.equal(streamedText('The whole', { text: 'The whole answer.', args: null }), 'The whole answer.');
  });
});

describe('dropped citations', () => {
  const base = { answer: 'Use SPEI [1].', sources: [], stop: 'answer' as const, steps: [], usage: {}, mode: 'grounded' as const };
  it('says which citations the server left out, as the model wrote them', () => {
    const response = { ...base, dropped: ['[7]', '[docs/x.md:3]'] };
    assert.deepEqual(droppedCitations(response as never), ['[7]', '[docs/x.md:3]']);
    const html = renderAnswer(response, 0);
    assert.match(html, /Left out <code>\[7\]<\/code>, <code>\[docs\/x\.md:3\]<\/code>: the model cited passages it was not given\./);
  });
  it('says nothing for a server that sends none, or a value that is not a list of text', () => {
    assert.deepEqual(droppedCitations(base as never), []);
    for (const dropped of [null, 'x', [1, null, ''], {}]) {
      assert.deepEqual(droppedCitations({ ...base, dropped } as never), [], JSON.stringify(dropped));
    }
    assert.doesNotMatch(renderAnswer(base, 0), /Left out/);
  });
});

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { renderContextChip, renderExamples, renderHistory, renderModelChip, whenText, withCodeTools } from '../../src/webview/chatRender';

const NOW = Date.UTC(2026, 10, 27, 12, 0);

describe('the Ask tab’s chat conventions as HTML', () => {
  it('lists the conversations kept, the current one marked, each with its delete', () => {
    const html = renderHistory(
      [
        { id: 'a', title: 'When is the <cut-off>?', updated: NOW - 3 * 60_000, questions: 2 },
        { id: 'b', title: 'Deploys', updated: NOW - 30 * 3600_000, questions: 1 },
      ],
      'a',
      NOW,
    );
    assert.match(html, /<li class="history-item current" data-chat="a">/);
    assert.match(html, /When is the &lt;cut-off&gt;\?/);
    assert.match(html, /3 min ago · 2 questions/);
    assert.match(html, /yesterday · 1 question</);
    assert.match(html, /data-delete="b"/);
    assert.match(renderHistory([], null, NOW), /No conversations yet/);
    assert.equal(whenText(NOW - 5 * 86_400_000, NOW), '22 Nov');
  });

  it('shows the model in the box and the file or selection to attach', () => {
    assert.match(renderModelChip({ host: 'http://127.0.0.1:8080/v1', model: 'qwen2.5:7b' }), /data-action="chooseModel"[^>]*>.*qwen2\.5:7b<\/button>/);
    assert.match(renderModelChip(undefined), /Choose a model/);
    const context = { path: 'runbooks/close.md', markdown: true, selection: { startLine: 12, endLine: 18, text: 'x' } };
    assert.match(renderContextChip(context, null), /data-action="attach" title="Ask about the selected lines only">\+ the selection \(runbooks\/close\.md:L12–18\)</);
    assert.match(renderContextChip(context, { path: context.path, lines: { start: 12, end: 18 } }), /data-action="detach"[^>]*>the selection \(runbooks\/close\.md:L12–18\) /);
    const file = { path: 'runbooks/close.md', markdown: true };
    assert.match(renderContextChip(file, null), /data-action="attach" title="Ask about this file">\+ runbooks\/close\.md</);
    assert.match(renderContextChip(file, { path: file.path, lines: null }), /data-action="detach"[^>]*>runbooks\/close\.md /);
    // Not Markdown: the server's "over this file" mode cannot take it.
    assert.equal(renderContextChip({ ...context, markdown: false }, null), '');
    assert.equal(renderContextChip(null, null), '');
  });

  it('puts Copy and Insert over each code block', () => {
    const html = withCodeTools('<p>Run:</p><pre><code>make</code></pre><pre><code>ls</code></pre>');
    assert.equal((html.match(/class="code-tools"/g) ?? []).length, 2);
    assert.match(html, /data-block="1"[^>]*>Insert</);
  });

  it('offers the open index’s examples, or nothing', () => {
    const html = renderExamples({ searches: ['query parameters'], questions: [], filters: [] }, 'searches');
    assert.match(html, /data-query="query parameters"/);
    assert.equal(renderExamples({ searches: [], questions: [], filters: [] }, 'questions'), '');
    assert.equal(renderExamples(null, 'searches'), '');
  });
});

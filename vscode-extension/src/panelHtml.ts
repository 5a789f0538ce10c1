/**
 * The panel's HTML: a strict Content-Security-Policy (nonce scripts, styles only from the
 * extension, no remote content), the static layout, and the bundled `webview.js`.
 * Pure, so the Chromium test loads exactly this page.
 */

export interface PanelHtmlOptions {
  /** `webview.cspSource` (or `file:` in the test harness). */
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
}

export function escapeAttr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
    "connect-src 'none'",
    "frame-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/** The header: the one progress line and its controls, the server's problem, the tabs. */
const HEADER = `<header id="status" class="status" role="status" aria-live="polite">
  <div class="status-row">
    <span id="status-text" class="status-text">Starting the server…</span>
    <button id="pause-index" class="icon-button" type="button" title="Pause indexing" aria-label="Pause indexing" hidden>
      <svg class="icon icon-pause" viewBox="0 0 16 16" aria-hidden="true"><rect x="4" y="3" width="3" height="10"/><rect x="9" y="3" width="3" height="10"/></svg>
      <svg class="icon icon-resume" viewBox="0 0 16 16" aria-hidden="true" hidden><path d="M5 3l8 5-8 5z"/></svg>
    </button>
    <button id="cancel-index" class="icon-button" type="button" title="Cancel indexing" aria-label="Cancel indexing" hidden>
      <svg class="icon" viewBox="0 0 16 16" aria-hidden="true"><path d="M4 4l8 8M12 4l-8 8" stroke-width="1.6" fill="none"/></svg>
    </button>
  </div>
  <progress id="index-progress" class="index-progress" max="1" value="0" aria-label="Indexing progress" hidden></progress>
</header>
<section id="server-problem" class="empty-state server-problem" role="alert" hidden></section>
<nav class="tabs" role="tablist" aria-label="Knowledge Base">
  <button id="tab-search" class="tab" role="tab" type="button" aria-controls="pane-search" aria-selected="true" data-tab="search">Search</button>
  <button id="tab-related" class="tab" role="tab" type="button" aria-controls="pane-related" aria-selected="false" tabindex="-1" data-tab="related">Related <span id="related-count" class="tab-count"></span></button>
  <button id="tab-ask" class="tab" role="tab" type="button" aria-controls="pane-ask" aria-selected="false" tabindex="-1" data-tab="ask">Ask</button>
</nav>
`;

const SEARCH_PANE = `<section id="pane-search" class="pane search" role="tabpanel" aria-labelledby="tab-search">
  <div id="search-head" class="search-head">
    <form id="search-form" role="search" class="query-box">
      <input id="query" type="text" placeholder="Search (tag:name, folder:x, …)" aria-label="Search the knowledge base" autocomplete="off" spellcheck="false" role="combobox" aria-autocomplete="list" aria-expanded="false" aria-controls="completions">
      <ul id="completions" class="completions" role="listbox" aria-label="Filter values" hidden></ul>
    </form>
    <div id="search-notice" class="notice" role="status" hidden></div>
    <div id="search-info" class="info" aria-live="polite"></div>
    <div id="did-you-mean" class="info did-you-mean" hidden></div>
  </div>
  <div id="search-error" class="search-error" role="alert" hidden></div>
  <div id="search-welcome" class="welcome">
    <p>Search your Markdown by meaning and by file name; the results are numbered, so “open result 2” or “summarize file 1” work everywhere.</p>
    <p>Narrow it with filters: <code>tag:runbook</code>, <code>folder:payments</code>, <code>-status:draft</code>, <code>modified&gt;2026-10-01</code>.</p>
    <div id="search-examples"></div>
  </div>
  <ol id="results" class="results" role="listbox" aria-label="Results" tabindex="-1"></ol>
  <div id="hover" class="hover-card" role="tooltip" hidden></div>
</section>
`;

const RELATED_PANE = `<section id="pane-related" class="pane related" role="tabpanel" aria-labelledby="tab-related" hidden>
  <div id="related-info" class="info" aria-live="polite">Open a Markdown file to see the notes related to it.</div>
  <ol id="related" class="results" role="listbox" aria-label="Related notes" tabindex="-1"></ol>
</section>
`;

/** The chat: its bar, history, model card, transcript, welcome, and the composer pinned below. */
const ASK_PANE = `<section id="pane-ask" class="pane chat" role="tabpanel" aria-labelledby="tab-ask" hidden>
  <div class="chat-bar">
    <span class="chat-title">Ask</span>
    <button id="history-button" class="link-button" type="button" title="Conversations kept for this workspace" aria-expanded="false">History</button>
    <button id="new-chat" class="link-button" type="button" title="Start a new conversation">New chat</button>
  </div>
  <div id="history" class="history" hidden></div>
  <div id="model-card" class="model-card" role="alert" hidden></div>
  <div id="transcript" class="transcript" aria-live="polite"></div>
  <div id="ask-welcome" class="welcome ask-welcome">
    <p>Ask about your notes: the answer cites the files it comes from, and each <code>[1]</code> opens its lines.</p>
    <p id="ask-needs-model">It needs a local model: Ollama, or any OpenAI-compatible server (llama.cpp’s llama-server, LM Studio, vLLM). <button type="button" class="link-button" data-action="chooseModel">Choose a model…</button></p>
    <div id="ask-examples"></div>
  </div>
  <form id="ask-form" class="composer">
    <div id="ask-scope" class="scope" hidden>
      <span>About <code id="ask-scope-file"></code></span>
      <button id="ask-scope-clear" class="link-button" type="button" aria-label="Ask about the whole knowledge base">&#x2715;</button>
    </div>
    <div id="ask-editing" class="editing" hidden></div>
    <div id="composer-chips" class="composer-chips"></div>
    <textarea id="question" rows="2" placeholder="Ask a question (Enter to ask, Shift+Enter for a new line)" aria-label="Ask a question"></textarea>
    <div class="ask-buttons">
      <button id="ask-button" type="submit" title="Ask (Enter)">Ask</button>
    </div>
  </form>
</section>
`;

export function panelHtml(opts: PanelHtmlOptions): string {
  const csp = escapeAttr(contentSecurityPolicy(opts.cspSource, opts.nonce));
  const nonce = escapeAttr(opts.nonce);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeAttr(opts.styleUri)}">
<title>Knowledge Base</title>
</head>
<body>
${HEADER}${SEARCH_PANE}${RELATED_PANE}${ASK_PANE}<script nonce="${nonce}" src="${escapeAttr(opts.scriptUri)}"></script>
</body>
</html>`;
}

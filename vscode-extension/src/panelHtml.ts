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
<header id="status" class="status" role="status" aria-live="polite">
  <span id="status-text" class="status-text">Starting the server…</span>
  <button id="reindex" class="icon-button" type="button" title="Reindex the workspace" aria-label="Reindex">&#x21bb;</button>
</header>
<section class="search" aria-label="Search">
  <form id="search-form" role="search">
    <input id="query" type="search" placeholder="Search the knowledge base" aria-label="Search the knowledge base" autocomplete="off" spellcheck="false">
  </form>
  <div id="search-info" class="info" aria-live="polite"></div>
  <ol id="results" class="results" role="listbox" aria-label="Results" tabindex="-1"></ol>
  <div id="hover" class="hover-card" role="tooltip" hidden></div>
</section>
<section class="ask" aria-label="Ask">
  <form id="ask-form">
    <div id="ask-scope" class="scope" hidden>
      <span>About <code id="ask-scope-file"></code></span>
      <button id="ask-scope-clear" class="link-button" type="button" aria-label="Ask about the whole knowledge base">&#x2715;</button>
    </div>
    <textarea id="question" rows="2" placeholder="Ask a question (Enter to ask, Shift+Enter for a new line)" aria-label="Ask a question"></textarea>
    <div class="ask-buttons">
      <button id="ask-button" type="submit">Ask</button>
      <button id="stop-button" type="button" class="secondary" hidden>Stop</button>
    </div>
  </form>
  <div id="transcript" class="transcript" aria-live="polite"></div>
</section>
<script nonce="${nonce}" src="${escapeAttr(opts.scriptUri)}"></script>
</body>
</html>`;
}

/** The header's one line about the index and the server, and the card when the server failed. */
import type { ServerFailure } from '../backend';
import { count, indexLabel } from '../format';
import type { IndexStatus } from '../protocol';
import { escapeHtml } from './html';

export type ServerState = 'starting' | 'running' | 'stopped' | 'failed';

/** The header line: the sync's label (as on the status bar), ready, read-only, no model. */
export function statusLine(status: IndexStatus | null, server: ServerState, secondsLeft?: number): { text: string; cls: string } {
  if (server === 'failed') {
    // The empty state below it says why, and what to do.
    return { text: 'The server is not running.', cls: 'error' };
  }
  if (!status) {
    return { text: server === 'stopped' ? 'The server is stopped.' : 'Starting the server…', cls: 'starting' };
  }
  const flags: string[] = [];
  if (status.readOnly) {
    flags.push('read-only');
  }
  if (status.llm.reachable === false) {
    flags.push('no model');
  }
  const suffix = flags.length > 0 ? ` · ${flags.join(' · ')}` : '';
  if (status.state === 'indexing') {
    return { text: `${indexLabel(status, secondsLeft)}${suffix}`, cls: status.paused ? 'indexing paused' : 'indexing' };
  }
  if (status.state === 'error') {
    return { text: `Index error${status.message ? `: ${status.message}` : ''}${suffix}`, cls: 'error' };
  }
  const paused = status.paused ? ' · indexing paused' : '';
  return {
    text: `Ready · ${count(status.files)} files · ${count(status.chunks)} passages${paused}${suffix}`,
    cls: status.readOnly ? 'read-only' : 'ready',
  };
}

/**
 * The server could not start: what happened, one fact a line, and the actions that fix
 * it — the setting on the tab where it applies, the log, the install command to copy.
 * Shown until the server runs.
 */
export function renderServerProblem(failure: ServerFailure | undefined, message?: string): string {
  const facts = failure?.facts ?? [message ?? 'The kb-lsp server is not running.'];
  const settingsTitle = failure?.remote
    ? 'kb.server.python, in the Remote settings (a remote window ignores the User value)'
    : 'kb.server.python, in the User settings';
  return (
    `<div class="empty-title">The kb-lsp server could not start</div>` +
    facts.map((fact) => `<p class="empty-fact">${escapeHtml(fact)}</p>`).join('') +
    (failure?.install
      ? `<div class="install"><code class="install-command">${escapeHtml(failure.install)}</code>` +
        `<button type="button" class="secondary" data-action="copyInstall" data-text="${escapeHtml(failure.install)}" title="Copy, to run in a terminal in the kb-lsp repository">Copy</button></div>`
      : '') +
    `<div class="empty-actions">` +
    `<button type="button" data-action="openServerSettings" title="${escapeHtml(settingsTitle)}">Open Settings</button>` +
    `<button type="button" class="secondary" data-action="showLog">Show Log</button>` +
    `<button type="button" class="secondary" data-action="restartServer">Restart Server</button>` +
    `</div>`
  );
}

/** The header: the progress line for the index and the server, its controls, the status behind it. */
import type { IndexStatus } from '../protocol';
import { modelProblem } from './modelCard';
import { renderServerProblem, statusLine } from './statusLine';
import { cancelIndexButton, pauseButton, pauseIcon, progressBar, resumeIcon, serverProblem, statusBox, statusText } from './dom';
import { renderModel } from './modelView';
import { renderNotice, runSearch } from './search';
import { post, state } from './state';

/** The index (files/passages) the welcome's examples were asked for. */
let examplesOf = '';

export function renderStatus(): void {
  const line = statusLine(state.status, state.server, state.secondsLeft);
  statusText.textContent = line.text;
  statusText.title = line.text;
  statusBox.className = `status ${line.cls}`;
  const failed = state.server === 'failed';
  serverProblem.hidden = !failed;
  serverProblem.innerHTML = failed ? renderServerProblem(state.failure, state.serverMessage) : '';
  const status = state.status;
  const indexing = state.server === 'running' && status?.state === 'indexing';
  const progress = status?.progress;
  progressBar.hidden = !indexing;
  if (indexing && progress) {
    const total = progress.chunksTotal ? progress.chunksTotal : progress.filesTotal;
    const done = progress.chunksTotal ? (progress.chunksDone ?? 0) : progress.filesDone;
    progressBar.max = Math.max(1, total);
    progressBar.value = Math.min(done, progressBar.max);
  } else if (indexing) {
    progressBar.removeAttribute('value'); // indeterminate until the sync has counted its work
  }
  const paused = Boolean(status?.paused);
  // Paused with nothing queued is "ready" to the server, but the user still needs Resume.
  const controllable = state.server === 'running' && !status?.readOnly;
  pauseButton.hidden = !(controllable && (indexing || paused));
  cancelIndexButton.hidden = !(controllable && indexing);
  pauseIcon.toggleAttribute('hidden', paused);
  resumeIcon.toggleAttribute('hidden', !paused);
  pauseButton.title = paused ? 'Resume indexing' : 'Pause indexing';
  pauseButton.setAttribute('aria-label', pauseButton.title);
  renderNotice();
  renderModel();
}

let staleIndex: { files: number; chunks: number; sawIndexing: boolean } | undefined;

export function onStatus(status: IndexStatus | null): void {
  const wasIndexing = state.status?.state === 'indexing';
  const before = state.status?.llm;
  state.status = status;
  const llm = status?.llm;
  if (llm && before && (llm.host !== before.host || llm.model !== before.model)) {
    state.model = null; // another model now: what was said about the old one no longer holds
  }
  if (llm?.reachable === false && !state.model) {
    state.model = modelProblem(`${llm.host} is not reachable.`);
  } else if (llm?.reachable === true && state.model && state.model.kind !== 'missing') {
    state.model = null; // it answers again (a missing model stays said until one answers)
  }
  if (staleIndex && status) {
    staleIndex.sawIndexing ||= status.state === 'indexing';
    const changed = status.files !== staleIndex.files || status.chunks !== staleIndex.chunks;
    if (status.state !== 'indexing' && (changed || staleIndex.sawIndexing)) {
      staleIndex = undefined;
      if (state.query.trim()) {
        runSearch(true);
      }
    }
  }
  if (status && status.state !== 'indexing') {
    const of = `${status.files}/${status.chunks}`;
    if (of !== examplesOf) {
      examplesOf = of; // the examples come from the open index: ask again once it changed
      post({ type: 'examples' });
    }
    if (wasIndexing) {
      state.schema = null; // fields and tags may have changed
    }
    if (state.rerunWhenReady && state.query.trim()) {
      state.rerunWhenReady = false;
      runSearch(true);
    }
  }
}

export function wireHeader(): void {
  serverProblem.addEventListener('click', (event) => {
    const button = (event.target as HTMLElement).closest<HTMLButtonElement>('button[data-action]');
    switch (button?.dataset.action) {
      case 'openServerSettings':
        post({ type: 'command', command: 'openServerSettings' });
        break;
      case 'showLog':
        post({ type: 'command', command: 'showLog' });
        break;
      case 'restartServer':
        post({ type: 'command', command: 'restartServer' });
        break;
      case 'copyInstall':
        post({ type: 'copy', text: button.dataset.text ?? '' });
        button.textContent = 'Copied';
        break;
    }
  });

  pauseButton.addEventListener('click', () => post({ type: 'indexControl', action: state.status?.paused ? 'resume' : 'pause' }));
  cancelIndexButton.addEventListener('click', () => post({ type: 'indexControl', action: 'cancel' }));
}

/** A search's files changed under it: list again once the index has changed. */
export function markStale(): void {
  staleIndex = { files: state.status?.files ?? -1, chunks: state.status?.chunks ?? -1, sawIndexing: false };
}

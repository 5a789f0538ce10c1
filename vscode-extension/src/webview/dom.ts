/** The panel's elements (from `panelHtml.ts`), found once, and the helpers every tab uses on them. */
import type { PanelTab } from '../messages';

export function el<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) {
    throw new Error(`missing #${id}`);
  }
  return found as T;
}

export const statusBox = el<HTMLElement>('status');
export const serverProblem = el<HTMLElement>('server-problem');
export const searchError = el<HTMLElement>('search-error');
export const searchWelcome = el<HTMLElement>('search-welcome');
export const searchHead = el<HTMLElement>('search-head');
export const askWelcome = el<HTMLElement>('ask-welcome');
export const searchExamples = el<HTMLElement>('search-examples');
export const askExamples = el<HTMLElement>('ask-examples');
export const statusText = el<HTMLElement>('status-text');
export const progressBar = el<HTMLProgressElement>('index-progress');
export const pauseButton = el<HTMLButtonElement>('pause-index');
export const cancelIndexButton = el<HTMLButtonElement>('cancel-index');
export const pauseIcon = pauseButton.querySelector<SVGElement>('.icon-pause') as SVGElement;
export const resumeIcon = pauseButton.querySelector<SVGElement>('.icon-resume') as SVGElement;
export const tabButtons = Array.from(document.querySelectorAll<HTMLButtonElement>('.tab'));
export const panes: Record<PanelTab, HTMLElement> = {
  search: el('pane-search'),
  related: el('pane-related'),
  ask: el('pane-ask'),
};
export const relatedCount = el<HTMLElement>('related-count');
export const searchForm = el<HTMLFormElement>('search-form');
export const queryInput = el<HTMLInputElement>('query');
export const completionList = el<HTMLUListElement>('completions');
export const searchNoticeBox = el<HTMLElement>('search-notice');
export const searchInfo = el<HTMLElement>('search-info');
export const didYouMean = el<HTMLElement>('did-you-mean');
export const resultsList = el<HTMLOListElement>('results');
export const hoverCard = el<HTMLElement>('hover');
export const relatedInfo = el<HTMLElement>('related-info');
export const relatedList = el<HTMLOListElement>('related');
export const newChatButton = el<HTMLButtonElement>('new-chat');
export const modelCard = el<HTMLElement>('model-card');
export const askForm = el<HTMLFormElement>('ask-form');
export const questionInput = el<HTMLTextAreaElement>('question');
export const askButton = el<HTMLButtonElement>('ask-button');
export const scopeBox = el<HTMLElement>('ask-scope');
export const composerChips = el<HTMLElement>('composer-chips');
export const historyBox = el<HTMLElement>('history');
export const editingBanner = el<HTMLElement>('ask-editing');
export const historyButton = el<HTMLButtonElement>('history-button');
export const askNeedsModel = el<HTMLElement>('ask-needs-model');
export const scopeFile = el<HTMLElement>('ask-scope-file');
export const scopeClear = el<HTMLButtonElement>('ask-scope-clear');
export const transcriptBox = el<HTMLElement>('transcript');

/**
 * Ctrl+A (Cmd+A) in a text box selects its text and stops there. Let through, the
 * webview host hands the key to the workbench, whose own select-all comes back a moment
 * later — after the first letters typed over the selection, which it then selects and
 * loses (issue 25: `mexico` typed after Ctrl+A arrived as `xico`).
 */
export function ownSelectAll(input: HTMLInputElement | HTMLTextAreaElement): void {
  (input as HTMLElement).addEventListener('keydown', (event) => {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey && event.key.toLowerCase() === 'a') {
      event.preventDefault();
      event.stopPropagation();
      input.select();
    }
  });
}

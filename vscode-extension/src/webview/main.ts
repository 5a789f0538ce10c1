/**
 * The panel's script (runs in the webview). Keeps the panel's state (restored with
 * `setState` when the webview is recreated), renders through `render.ts`, and talks to
 * the extension only through `postMessage`.
 *
 * Three tabs: Search (a numbered list, with a notice while the index is being built and
 * one re-run when it is done), Related (the active Markdown file's nearest notes) and
 * Ask (a chat: transcript above, the input pinned below, one card for the model's state).
 */
import type { ServerFailure } from '../backend';
import type { FromWebview, ListOrigin, PanelTab, ToWebview } from '../messages';
import type { AskResponse, IndexStatus, RelatedResponse, SchemaResponse, SearchHit, SearchResponse } from '../protocol';
import { resultsIncomplete, suggestedQuery } from '../format';
import { askedQuestions, before, recall, titleOf, turnsOf } from '../conversation';
import { renderContextChip, renderEditing, renderExamples, renderHistory, renderModelChip, withCodeTools } from './chatRender';
import type { ChatSummary } from '../chatHistory';
import type { EditorContext } from '../editorContext';
import {
  filterCompletions,
  filterWordAt,
  groupSources,
  hitId,
  fallbackReason,
  isWaiting,
  LIST_KEYS,
  modelProblem,
  passageKey,
  renderCompletions,
  renderHover,
  renderModelCard,
  renderResults,
  renderSearchError,
  renderServerProblem,
  renderTranscript,
  resultsInfo,
  searchNotice,
  statusLine,
  streamedText,
  renderDidYouMean,
  type Completion,
  type ModelProblem,
  type ServerState,
  type Streaming,
  type TranscriptEntry,
} from './render';

interface VsCodeApi {
  postMessage(message: FromWebview): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

interface RelatedState {
  path: string | null;
  response: RelatedResponse | null;
  message?: string;
}

interface PanelState {
  tab: PanelTab;
  query: string;
  response: SearchResponse | null;
  selected: number;
  status: IndexStatus | null;
  server: ServerState;
  serverMessage?: string;
  failure?: ServerFailure;
  secondsLeft?: number;
  /** Where the shown list was made (the panel, or KB: Search). */
  listOrigin: ListOrigin;
  transcript: TranscriptEntry[];
  /** The running ask's answer as it streams in. */
  streaming: Streaming | null;
  /** Steps blocks the user opened (by the index of their first step). */
  openSteps: number[];
  askId: number | null;
  askFile: string | null;
  conversationId: string | null;
  /** The kept conversation this transcript is (the workspace's history), once asked in. */
  chatId: string | null;
  summaries: Record<string, string>;
  searchError?: string;
  /** The visible results were made while indexing ran: search again once it is done. */
  rerunWhenReady: boolean;
  related: RelatedState | null;
  relatedSelected: number;
  schema: SchemaResponse | null;
  model: ModelProblem | null;
  lastQuestion: { text: string; file: string | null } | null;
  staleNote?: string;
}

const vscode = acquireVsCodeApi();

const initial: PanelState = {
  tab: 'search',
  query: '',
  response: null,
  selected: 0,
  status: null,
  server: 'starting',
  listOrigin: 'panel',
  transcript: [],
  streaming: null,
  openSteps: [],
  askId: null,
  askFile: null,
  conversationId: null,
  chatId: null,
  summaries: {},
  rerunWhenReady: false,
  related: null,
  relatedSelected: 0,
  schema: null,
  model: null,
  lastQuestion: null,
};

const restored = vscode.getState() as Partial<PanelState> | undefined;
const state: PanelState = { ...initial, ...(restored ?? {}), askId: null, streaming: null };
// A question left pending when the page went away is no longer running.
state.transcript = state.transcript.map((e) => (e.kind === 'question' && e.pending ? { ...e, pending: false } : e));
/** Passages read for the hover card, by `passageKey` (null: could not be read). */
const passages = new Map<string, string | null>();

function el<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) {
    throw new Error(`missing #${id}`);
  }
  return found as T;
}

const statusBox = el<HTMLElement>('status');
const serverProblem = el<HTMLElement>('server-problem');
const searchError = el<HTMLElement>('search-error');
const searchWelcome = el<HTMLElement>('search-welcome');
const searchHead = el<HTMLElement>('search-head');
const askWelcome = el<HTMLElement>('ask-welcome');
const searchExamples = el<HTMLElement>('search-examples');
const askExamples = el<HTMLElement>('ask-examples');
/** The index (files/passages) the welcome's examples were asked for. */
let examplesOf = '';
const statusText = el<HTMLElement>('status-text');
const progressBar = el<HTMLProgressElement>('index-progress');
const pauseButton = el<HTMLButtonElement>('pause-index');
const cancelIndexButton = el<HTMLButtonElement>('cancel-index');
const pauseIcon = pauseButton.querySelector<SVGElement>('.icon-pause') as SVGElement;
const resumeIcon = pauseButton.querySelector<SVGElement>('.icon-resume') as SVGElement;
const tabButtons = Array.from(document.querySelectorAll<HTMLButtonElement>('.tab'));
const panes: Record<PanelTab, HTMLElement> = {
  search: el('pane-search'),
  related: el('pane-related'),
  ask: el('pane-ask'),
};
const relatedCount = el<HTMLElement>('related-count');
const searchForm = el<HTMLFormElement>('search-form');
const queryInput = el<HTMLInputElement>('query');
const completionList = el<HTMLUListElement>('completions');
const searchNoticeBox = el<HTMLElement>('search-notice');
const searchInfo = el<HTMLElement>('search-info');
const didYouMean = el<HTMLElement>('did-you-mean');
const resultsList = el<HTMLOListElement>('results');
const hoverCard = el<HTMLElement>('hover');
const relatedInfo = el<HTMLElement>('related-info');
const relatedList = el<HTMLOListElement>('related');
const newChatButton = el<HTMLButtonElement>('new-chat');
const modelCard = el<HTMLElement>('model-card');
const askForm = el<HTMLFormElement>('ask-form');
const questionInput = el<HTMLTextAreaElement>('question');
const askButton = el<HTMLButtonElement>('ask-button');
const scopeBox = el<HTMLElement>('ask-scope');
const composerChips = el<HTMLElement>('composer-chips');
const historyBox = el<HTMLElement>('history');
const editingBanner = el<HTMLElement>('ask-editing');
/** The question (0-based among the conversation's) being edited: sending asks it from there. */
let editing: number | null = null;
const historyButton = el<HTMLButtonElement>('history-button');
const askNeedsModel = el<HTMLElement>('ask-needs-model');
/** The last editor's file and selection, which the box may attach (null: none). */
let editorContext: EditorContext | null = null;
const scopeFile = el<HTMLElement>('ask-scope-file');
const scopeClear = el<HTMLButtonElement>('ask-scope-clear');
const transcriptBox = el<HTMLElement>('transcript');

function post(message: FromWebview): void {
  vscode.postMessage(message);
}

function save(): void {
  vscode.setState({ ...state, askId: null, streaming: null });
}

/**
 * Ctrl+A (Cmd+A) in a text box selects its text and stops there. Let through, the
 * webview host hands the key to the workbench, whose own select-all comes back a moment
 * later — after the first letters typed over the selection, which it then selects and
 * loses (issue 25: `mexico` typed after Ctrl+A arrived as `xico`).
 */
function ownSelectAll(input: HTMLInputElement | HTMLTextAreaElement): void {
  (input as HTMLElement).addEventListener('keydown', (event) => {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey && event.key.toLowerCase() === 'a') {
      event.preventDefault();
      event.stopPropagation();
      input.select();
    }
  });
}

function searchHits(): SearchHit[] {
  return state.response?.results ?? [];
}

function relatedHits(): SearchHit[] {
  return state.related?.response?.results ?? [];
}

// --- header: the one progress ------------------------------------------------------------

function renderStatus(): void {
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

// --- tabs --------------------------------------------------------------------------------

function showTab(tab: PanelTab, focus = false): void {
  state.tab = tab;
  for (const button of tabButtons) {
    const selected = button.dataset.tab === tab;
    button.setAttribute('aria-selected', String(selected));
    button.tabIndex = selected ? 0 : -1;
    if (selected && focus) {
      button.focus();
    }
  }
  for (const [name, pane] of Object.entries(panes)) {
    pane.hidden = name !== tab;
  }
  hideHover();
  if (tab === 'ask') {
    scrollTranscript();
  }
  save();
}

for (const button of tabButtons) {
  button.addEventListener('click', () => showTab(button.dataset.tab as PanelTab));
  button.addEventListener('keydown', (event) => {
    const order: PanelTab[] = ['search', 'related', 'ask'];
    const at = order.indexOf(state.tab);
    if (event.key === 'ArrowRight' || event.key === 'ArrowLeft') {
      event.preventDefault();
      const next = order[(at + (event.key === 'ArrowRight' ? 1 : order.length - 1)) % order.length] ?? 'search';
      showTab(next, true);
    }
  });
}

// --- numbered lists (search results and related notes) ---------------------------------

interface ListView {
  element: HTMLOListElement;
  name: 'hit' | 'related';
  hits: () => SearchHit[];
  getSelected: () => number;
  setSelected: (i: number) => void;
  onEscape: () => void;
}

const searchList: ListView = {
  element: resultsList,
  name: 'hit',
  hits: searchHits,
  getSelected: () => state.selected,
  setSelected: (i) => (state.selected = i),
  onEscape: () => queryInput.focus(),
};

const relatedView: ListView = {
  element: relatedList,
  name: 'related',
  hits: relatedHits,
  getSelected: () => state.relatedSelected,
  setSelected: (i) => (state.relatedSelected = i),
  onEscape: () => el<HTMLButtonElement>('tab-related').focus(),
};

function renderList(view: ListView): void {
  const list = view.hits();
  const selected = Math.min(view.getSelected(), Math.max(0, list.length - 1));
  view.setSelected(selected);
  view.element.innerHTML = renderResults(list, selected, view.name);
  view.element.tabIndex = list.length > 0 ? 0 : -1;
  const current = list[selected];
  if (current) {
    view.element.setAttribute('aria-activedescendant', hitId(current.n, view.name));
  } else {
    view.element.removeAttribute('aria-activedescendant');
  }
}

function select(view: ListView, index: number, focus = true): void {
  const list = view.hits();
  if (list.length === 0) {
    return;
  }
  view.setSelected(Math.max(0, Math.min(list.length - 1, index)));
  const chosen = list[view.getSelected()];
  for (const item of Array.from(view.element.children)) {
    const isSelected = chosen !== undefined && item.id === hitId(chosen.n, view.name);
    item.classList.toggle('selected', isSelected);
    item.setAttribute('aria-selected', String(isSelected));
    if (isSelected) {
      // The search box stays on top (sticky): scroll the row out from under it.
      (item as HTMLElement).style.scrollMarginTop = view === searchList ? `${searchHead.offsetHeight + 2}px` : '';
      item.scrollIntoView({ block: 'nearest' });
    }
  }
  if (chosen) {
    view.element.setAttribute('aria-activedescendant', hitId(chosen.n, view.name));
  }
  if (focus) {
    view.element.focus();
  }
  save();
}

function openHit(view: ListView, hit: SearchHit | undefined): void {
  if (hit) {
    post({ type: 'open', uri: hit.uri, range: hit.range, path: hit.path, list: view.name === 'hit' ? 'search' : 'related' });
  }
}

function wireList(view: ListView): void {
  view.element.addEventListener('keydown', (event) => {
    const list = view.hits();
    const at = view.getSelected();
    switch (event.key) {
      case 'ArrowDown':
        select(view, at + 1);
        break;
      case 'ArrowUp':
        if (at === 0) {
          view.onEscape();
        } else {
          select(view, at - 1);
        }
        break;
      case 'Home':
        select(view, 0);
        break;
      case 'End':
        select(view, list.length - 1);
        break;
      case 'Enter':
      case ' ':
        openHit(view, list[at]);
        break;
      case 'Escape':
        view.onEscape();
        break;
      default:
        if (/^[1-9]$/.test(event.key)) {
          const index = list.findIndex((hit) => hit.n === Number(event.key));
          if (index >= 0) {
            select(view, index);
            openHit(view, list[index]);
            break;
          }
        }
        return;
    }
    event.preventDefault();
  });
  view.element.addEventListener('click', (event) => {
    const target = event.target as HTMLElement;
    const chip = target.closest<HTMLElement>('button.chip');
    if (chip?.dataset.tag) {
      event.stopPropagation();
      addFilter(`tag:${chip.dataset.tag}`);
      return;
    }
    const item = target.closest<HTMLElement>('li.hit');
    if (!item) {
      return;
    }
    const index = view.hits().findIndex((hit) => hit.n === Number(item.dataset.n));
    select(view, index, false);
    openHit(view, view.hits()[index]);
  });
  view.element.addEventListener('mouseover', (event) => {
    const item = (event.target as HTMLElement).closest<HTMLElement>('li.hit');
    if (item && view === searchList) {
      showHover(item);
    }
  });
  view.element.addEventListener('mouseleave', hideHover);
  view.element.addEventListener('blur', hideHover);
}

wireList(searchList);
wireList(relatedView);

resultsList.addEventListener('focus', () => {
  const current = resultsList.querySelector<HTMLElement>('li.hit.selected');
  if (current) {
    showHover(current);
  }
});

let hovered: SearchHit | undefined;
let hoveredItem: HTMLElement | undefined;

function showHover(item: HTMLElement): void {
  const n = Number(item.dataset.n);
  const hit = searchHits().find((h) => h.n === n);
  if (!hit) {
    return;
  }
  hovered = hit;
  hoveredItem = item;
  const key = passageKey(hit);
  if (!passages.has(key)) {
    passages.set(key, null);
    post({ type: 'passage', key, uri: hit.uri, range: hit.range });
  }
  hoverCard.innerHTML = renderHover(hit, state.summaries[hit.path], passages.get(key));
  hoverCard.hidden = false;
  placeHover(item);
}

/** Docked at the far end of the visible list from the pointed row (its neighbours, the
 * rows read next, stay in view), on neither it nor the keyboard's selected row; below
 * the row or the selected row when the list is too short for that. */
function placeHover(item: HTMLElement): void {
  const height = hoverCard.offsetHeight;
  const pane = panes.search;
  const selected = resultsList.querySelector<HTMLElement>('li.hit.selected');
  const rows = selected && selected !== item ? [item, selected] : [item];
  const covers = (top: number): boolean => rows.some((row) => top < row.offsetTop + row.offsetHeight && top + height > row.offsetTop);
  const top = pane.scrollTop + searchHead.offsetHeight;
  const bottom = pane.scrollTop + pane.clientHeight - height;
  const inUpperHalf = item.offsetTop + item.offsetHeight / 2 - pane.scrollTop < pane.clientHeight / 2;
  const candidates = [
    ...(inUpperHalf ? [bottom, top] : [top, bottom]).filter((at) => at >= top && at <= bottom),
    item.offsetTop + item.offsetHeight,
    ...(selected ? [selected.offsetTop + selected.offsetHeight] : []),
  ];
  hoverCard.style.top = `${candidates.find((at) => !covers(at)) ?? candidates[0]}px`;
}

function hideHover(): void {
  hoverCard.hidden = true;
}

// --- search -----------------------------------------------------------------------------

function renderNotice(): void {
  // While the sync that made these results still runs, show its current numbers.
  const index = state.response?.index;
  let notice = '';
  if (index && resultsIncomplete(index)) {
    notice = (state.status?.state === 'indexing' ? searchNotice(state.status) : '') || searchNotice(index);
  }
  searchNoticeBox.textContent = notice;
  searchNoticeBox.hidden = !notice;
}

function renderSearch(): void {
  renderList(searchList);
  const list = searchHits();
  // A search while the server is down: the empty state above says why and what to do.
  const error = state.server === 'failed' ? undefined : state.searchError;
  searchError.hidden = !error;
  searchError.innerHTML = error ? renderSearchError(error) : '';
  const info = error || !state.response ? '' : resultsInfo(list.length, state.response.query, state.listOrigin);
  searchInfo.textContent = state.staleNote ? `${state.staleNote} ${info}`.trim() : info;
  searchInfo.title = list.length > 0 ? LIST_KEYS : '';
  resultsList.title = list.length > 0 ? LIST_KEYS : '';
  const suggestion = error ? undefined : suggestedQuery(state.response);
  didYouMean.hidden = !suggestion;
  didYouMean.innerHTML = suggestion ? renderDidYouMean(suggestion) : '';
  renderWelcome();
  renderNotice();
  hideHover();
}

/** The same query listed again (a refresh once indexing is done, a search that arrived
 * twice) keeps the row the keyboard is on, by its file; a new query's list starts at its
 * first row, scrolled to the top. */
function keepPlace(shown: SearchResponse | null, next: SearchResponse): boolean {
  const path = shown?.query === next.query ? shown.results[state.selected]?.path : undefined;
  const kept = path === undefined ? -1 : next.results.findIndex((hit) => hit.path === path);
  state.selected = Math.max(0, kept);
  if (kept < 0) {
    panes.search.scrollTop = 0;
  }
  return kept >= 0;
}

/** The welcome (what search does, examples) while the box is empty and nothing is listed. */
function renderWelcome(): void {
  searchWelcome.hidden = Boolean(state.query.trim() || state.response || state.searchError || state.server === 'failed');
}

/** An empty query shows no list: the old results are not what the box says. */
function clearResults(): void {
  state.response = null;
  state.searchError = undefined;
  state.staleNote = undefined;
  state.rerunWhenReady = false;
  state.selected = 0;
  renderSearch();
}

let searchTimer: ReturnType<typeof setTimeout> | undefined;

/** Search what the box says. `refresh`: the same search again (after a stale result, once
 * indexing is done), which keeps saying why the list changed; a search the user makes
 * does not. */
function runSearch(refresh = false): void {
  if (!refresh) {
    state.staleNote = undefined;
  }
  if (searchTimer) {
    clearTimeout(searchTimer);
    searchTimer = undefined;
  }
  const query = queryInput.value.trim();
  state.query = queryInput.value;
  renderWelcome();
  save();
  if (query) {
    post({ type: 'search', query });
  }
}

/** Whether the word at the cursor is a filter still being typed (`tag:` with no value). */
function typingFilter(): boolean {
  const word = filterWordAt(queryInput.value, queryInput.selectionStart ?? queryInput.value.length);
  return word !== undefined && word.value === '';
}

function addFilter(filter: string): void {
  const current = queryInput.value.trim();
  if (!current.split(/\s+/).includes(filter)) {
    queryInput.value = current ? `${current} ${filter}` : filter;
  }
  showTab('search');
  runSearch();
}

searchForm.addEventListener('submit', (event) => {
  event.preventDefault();
  runSearch();
});

queryInput.addEventListener('input', () => {
  state.query = queryInput.value;
  renderWelcome();
  save();
  updateCompletions();
  if (searchTimer) {
    clearTimeout(searchTimer);
  }
  if (!queryInput.value.trim()) {
    searchTimer = undefined;
    clearResults();
    return;
  }
  if (!typingFilter()) {
    searchTimer = setTimeout(() => runSearch(), 250);
  }
});

ownSelectAll(queryInput);

searchWelcome.addEventListener('click', (event) => {
  const example = (event.target as HTMLElement).closest<HTMLButtonElement>('button.example');
  if (example?.dataset.query) {
    queryInput.value = example.dataset.query;
    queryInput.focus();
    runSearch();
  }
});

didYouMean.addEventListener('click', (event) => {
  const button = (event.target as HTMLElement).closest<HTMLButtonElement>('button.suggestion');
  if (button?.dataset.query) {
    queryInput.value = button.dataset.query;
    queryInput.focus();
    runSearch();
  }
});

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

queryInput.addEventListener('focus', () => {
  if (!state.schema) {
    post({ type: 'schema' });
  }
});

queryInput.addEventListener('keydown', (event) => {
  if (completions.length > 0) {
    switch (event.key) {
      case 'ArrowDown':
        activeCompletion = (activeCompletion + 1) % completions.length;
        renderCompletionList();
        event.preventDefault();
        return;
      case 'ArrowUp':
        activeCompletion = (activeCompletion + completions.length - 1) % completions.length;
        renderCompletionList();
        event.preventDefault();
        return;
      case 'Enter':
      case 'Tab':
        acceptCompletion(activeCompletion);
        event.preventDefault();
        return;
      case 'Escape':
        closeCompletions();
        event.preventDefault();
        return;
    }
  }
  if (event.key === 'ArrowDown' && searchHits().length > 0) {
    event.preventDefault();
    select(searchList, state.selected);
  }
});

queryInput.addEventListener('blur', () => {
  // Let a click on a completion land first.
  setTimeout(closeCompletions, 150);
});

// --- filter completion (`tag:` → the tags of kb/schema) --------------------------------

let completions: Completion[] = [];
let activeCompletion = 0;

function updateCompletions(): void {
  const cursor = queryInput.selectionStart ?? queryInput.value.length;
  const word = filterWordAt(queryInput.value, cursor);
  completions = word ? filterCompletions(state.schema, word.key, word.value) : [];
  activeCompletion = 0;
  renderCompletionList();
}

function renderCompletionList(): void {
  completionList.innerHTML = renderCompletions(completions, activeCompletion);
  completionList.hidden = completions.length === 0;
  queryInput.setAttribute('aria-expanded', String(completions.length > 0));
  if (completions.length > 0) {
    queryInput.setAttribute('aria-activedescendant', `completion-${activeCompletion}`);
  } else {
    queryInput.removeAttribute('aria-activedescendant');
  }
}

function closeCompletions(): void {
  completions = [];
  renderCompletionList();
}

function acceptCompletion(index: number): void {
  const chosen = completions[index];
  const cursor = queryInput.selectionStart ?? queryInput.value.length;
  const word = filterWordAt(queryInput.value, cursor);
  if (!chosen || !word) {
    closeCompletions();
    return;
  }
  const value = queryInput.value;
  queryInput.value = value.slice(0, word.start) + chosen.insert + value.slice(cursor).replace(/^\S*\s?/, '');
  const caret = word.start + chosen.insert.length;
  queryInput.setSelectionRange(caret, caret);
  closeCompletions();
  queryInput.focus();
  runSearch();
}

completionList.addEventListener('mousedown', (event) => {
  const item = (event.target as HTMLElement).closest<HTMLElement>('li.completion');
  if (item) {
    event.preventDefault();
    acceptCompletion(Number(item.dataset.index));
  }
});

// --- related notes ------------------------------------------------------------------------

function renderRelated(): void {
  renderList(relatedView);
  const related = state.related;
  const count = relatedHits().length;
  relatedCount.textContent = count > 0 ? String(count) : '';
  if (!related?.path) {
    relatedInfo.textContent = related?.message ?? 'Open a Markdown file to see the notes related to it.';
  } else if (related.message) {
    relatedInfo.textContent = related.message;
  } else if (count === 0) {
    relatedInfo.textContent = `Nothing in the knowledge base is close to ${related.path} yet.`;
  } else {
    relatedInfo.textContent = `Notes related to ${related.path}:`;
  }
  relatedInfo.title = related?.path ?? '';
}

// --- ask --------------------------------------------------------------------------------

function renderModel(): void {
  const problem = state.model;
  modelCard.hidden = !problem;
  modelCard.innerHTML = problem ? renderModelCard(problem, state.status?.llm) : '';
}

function scrollTranscript(): void {
  transcriptBox.scrollTop = transcriptBox.scrollHeight;
}

function renderAsk(): void {
  const busy = state.askId !== null;
  transcriptBox.innerHTML = withCodeTools(
    renderTranscript(state.transcript, {
      pending: busy,
      streaming: state.streaming,
      openSteps: new Set(state.openSteps),
    }),
  );
  // While an answer runs, the Ask button is its Stop button (and KB: Stop Answering's
  // keybinding stops it); Escape does not, so a stray Esc never costs an answer.
  askButton.textContent = busy ? 'Stop' : 'Ask';
  askButton.classList.toggle('stop', busy);
  askButton.classList.toggle('secondary', busy);
  askButton.title = busy ? 'Stop this answer (Ctrl+Alt+Backspace)' : 'Ask (Enter)';
  askWelcome.hidden = busy || state.transcript.length > 0;
  scopeBox.hidden = !state.askFile;
  scopeFile.textContent = state.askFile ?? '';
  addTurnTools(busy);
  editingBanner.hidden = editing === null;
  editingBanner.innerHTML = editing === null ? '' : renderEditing(editing);
  renderChips();
  renderModel();
  scrollTranscript();
}

/** The box's chips: the model that answers (the picker on a click), and the last editor's
 * Markdown file to attach — the server's "over this file" mode. */
function renderChips(): void {
  const file = editorContext?.markdown ? { path: editorContext.path, markdown: true } : null;
  composerChips.innerHTML = renderModelChip(state.status?.llm) + renderContextChip(file, file !== null && state.askFile === file.path);
}

composerChips.addEventListener('click', (event) => {
  const button = (event.target as HTMLElement).closest<HTMLButtonElement>('button[data-action]');
  const action = button?.dataset.action;
  if (action === 'chooseModel') {
    post({ type: 'command', command: 'chooseModel' });
  } else if (action === 'attach' || action === 'detach') {
    state.askFile = action === 'attach' ? (editorContext?.path ?? null) : null;
    renderAsk();
    save();
  }
});

// --- the history of conversations (kept per workspace by the extension) ----------------

/** Keep this conversation in the workspace's history, after each answer. */
function saveChat(): void {
  if (state.transcript.some((e) => e.kind === 'question')) {
    state.chatId ??= `chat-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    post({ type: 'saveChat', id: state.chatId, title: titleOf(state.transcript), transcript: state.transcript, file: state.askFile });
  }
}

function showHistory(chats: ChatSummary[]): void {
  if (!historyBox.hidden) {
    historyBox.innerHTML = renderHistory(chats, state.chatId, Date.now());
  }
}

function reopenChat(id: string, transcript: TranscriptEntry[], file: string | null): void {
  state.chatId = id;
  state.transcript = transcript;
  state.conversationId = null; // the server's may be gone: the turns go with the next question
  state.askFile = file;
  state.openSteps = [];
  historyBox.hidden = true;
  historyButton.setAttribute('aria-expanded', 'false');
  renderAsk();
  save();
  questionInput.focus();
}

editingBanner.addEventListener('click', (event) => {
  if ((event.target as HTMLElement).closest('[data-action="cancelEdit"]')) {
    editing = null;
    questionInput.value = '';
    renderAsk();
  }
});

historyButton.addEventListener('click', () => {
  historyBox.hidden = !historyBox.hidden;
  historyButton.setAttribute('aria-expanded', String(!historyBox.hidden));
  if (!historyBox.hidden) {
    historyBox.textContent = 'Loading…';
    post({ type: 'listChats' });
  }
});

historyBox.addEventListener('click', (event) => {
  const target = event.target as HTMLElement;
  const remove = target.closest<HTMLButtonElement>('button.history-delete');
  const open = target.closest<HTMLButtonElement>('button.history-open');
  if (remove?.dataset.delete) {
    post({ type: 'deleteChat', id: remove.dataset.delete });
    if (remove.dataset.delete === state.chatId) {
      state.chatId = null; // this transcript is no longer kept: a next question starts anew
    }
  } else if (open?.dataset.chat && state.askId === null) {
    post({ type: 'openChat', id: open.dataset.chat });
  }
});

/** Edit on each question, Regenerate on the last answer — once no answer runs. */
function addTurnTools(busy: boolean): void {
  if (busy) {
    return;
  }
  transcriptBox.querySelectorAll<HTMLElement>('.question').forEach((question, n) => {
    question.insertAdjacentHTML('beforeend', ` <span class="turn-tools"><button type="button" class="link-button turn-edit" data-turn="${n}" title="Edit this question and ask it again from here">Edit</button></span>`);
  });
  if (state.transcript.at(-1)?.kind === 'answer') {
    const answers = transcriptBox.querySelectorAll<HTMLElement>('.answer');
    answers[answers.length - 1]?.insertAdjacentHTML('beforeend', '<div class="turn-tools"><button type="button" class="link-button turn-regenerate" title="Ask the last question again, without this answer">Regenerate</button></div>');
  }
}

/** Edit question `n` (its text in the box) or, `regenerate`, ask the last one again now. */
function askAgain(n: number, regenerate: boolean): void {
  const kept = before(state.transcript, n);
  if (!kept || state.askId !== null) {
    return;
  }
  if (regenerate) {
    state.transcript = kept.kept as TranscriptEntry[];
    ask(kept.question.text, kept.question.file ?? null);
  } else {
    editing = n;
    questionInput.value = kept.question.text;
    questionInput.focus();
  }
  renderAsk();
}

function ask(question: string, file: string | null = state.askFile): void {
  const text = question.trim();
  if (!text || state.askId !== null) {
    return;
  }
  const edited = editing === null ? undefined : before(state.transcript, editing);
  editing = null;
  if (edited) {
    // An edited question follows only the turns before it.
    state.transcript = edited.kept as TranscriptEntry[];
    renderAsk();
  }
  state.lastQuestion = { text, file };
  // The turns so far go with the question: a conversation reopened after a reload (the
  // server remembers none of it then) goes on where it was.
  const history = turnsOf(state.transcript);
  post({ type: 'ask', question: text, file, conversationId: state.conversationId, ...(history.length ? { history } : {}) });
  questionInput.value = '';
  recallAt = undefined;
}

/** Where ↑/↓ recall is among the questions asked (undefined: the box holds what was typed). */
let recallAt: number | undefined;

/** ↑/↓ in an empty box, or one still holding a recalled question, as a shell's history. */
function recallQuestion(key: 'ArrowUp' | 'ArrowDown'): boolean {
  const asked = askedQuestions(state.transcript);
  const showing = recallAt === undefined ? undefined : asked[recallAt];
  if (asked.length === 0 || (questionInput.value !== '' && questionInput.value !== showing)) {
    return false;
  }
  const next = recall(asked, recallAt ?? asked.length, key);
  recallAt = next.at < asked.length ? next.at : undefined;
  questionInput.value = next.text;
  questionInput.setSelectionRange(next.text.length, next.text.length);
  return true;
}

function stopAsk(): void {
  if (state.askId !== null) {
    post({ type: 'cancelAsk' });
  }
}

askForm.addEventListener('submit', (event) => {
  event.preventDefault();
  if (state.askId !== null) {
    stopAsk();
  } else {
    ask(questionInput.value);
  }
});

questionInput.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey) {
    event.preventDefault();
    ask(questionInput.value);
  } else if ((event.key === 'ArrowUp' || event.key === 'ArrowDown') && !event.shiftKey && recallQuestion(event.key)) {
    event.preventDefault();
  }
});

ownSelectAll(questionInput);

askWelcome.addEventListener('click', (event) => {
  const button = (event.target as HTMLElement).closest<HTMLButtonElement>('button');
  if (button?.dataset.question) {
    ask(button.dataset.question);
  } else if (button?.dataset.action === 'chooseModel') {
    post({ type: 'command', command: 'chooseModel' });
  }
});

scopeClear.addEventListener('click', () => {
  state.askFile = null;
  renderAsk();
  save();
});

newChatButton.addEventListener('click', () => {
  if (state.askId !== null) {
    post({ type: 'cancelAsk' });
  }
  state.transcript = [];
  state.conversationId = null;
  state.chatId = null;
  state.askFile = null;
  state.askId = null;
  renderAsk();
  questionInput.focus();
  save();
});

modelCard.addEventListener('click', (event) => {
  const button = (event.target as HTMLElement).closest<HTMLButtonElement>('button[data-action]');
  switch (button?.dataset.action) {
    case 'chooseModel':
      post({ type: 'command', command: 'chooseModel' });
      break;
    case 'openSettings':
      post({ type: 'openSettings', query: button.dataset.query ?? '@ext:kb-lsp.kb-lsp' });
      break;
    case 'retry':
      // Ask the server about the model again, and the question again when there was one.
      post({ type: 'command', command: 'probeModel' });
      if (state.lastQuestion) {
        ask(state.lastQuestion.text, state.lastQuestion.file);
      }
      break;
    case 'copyFix':
      post({ type: 'copy', text: button.dataset.text ?? '' });
      button.classList.add('copied');
      break;
  }
});

transcriptBox.addEventListener('click', (event) => {
  const target = event.target as HTMLElement;
  const cite = target.closest<HTMLElement>('a.cite[data-source]');
  const source = target.closest<HTMLElement>('a.source, a.source-range');
  const choice = target.closest<HTMLElement>('button.choice');
  const copy = target.closest<HTMLButtonElement>('button.copy-answer');
  const link = target.closest<HTMLAnchorElement>('a');
  const codeTool = target.closest<HTMLButtonElement>('button.code-copy, button.code-insert');
  const turnTool = target.closest<HTMLButtonElement>('button.turn-edit, button.turn-regenerate');
  if (turnTool) {
    const questions = state.transcript.filter((e) => e.kind === 'question').length;
    askAgain(turnTool.dataset.turn ? Number(turnTool.dataset.turn) : questions - 1, turnTool.classList.contains('turn-regenerate'));
  } else if (codeTool) {
    // The code block right below its tools, as its text (no markup).
    const code = codeTool.closest('.code-tools')?.nextElementSibling?.textContent ?? '';
    post(codeTool.classList.contains('code-copy') ? { type: 'copy', text: code } : { type: 'insert', text: code });
  } else if (copy) {
    const entry = state.transcript[Number(copy.dataset.entry)];
    if (entry?.kind === 'answer') {
      post({ type: 'copy', text: entry.response.answer });
      copy.textContent = 'Copied';
    }
  } else if (cite) {
    // `[n]` in the answer: source n at its lines.
    event.preventDefault();
    const entry = state.transcript[Number(cite.dataset.entry)];
    const found = entry?.kind === 'answer' ? entry.response.sources[Number(cite.dataset.source)] : undefined;
    if (found) {
      post({ type: 'open', uri: found.uri, range: found.range, path: found.path });
    }
  } else if (source) {
    // A file of the sources list, or one of its line ranges.
    event.preventDefault();
    const entry = state.transcript[Number(source.dataset.entry)];
    if (entry?.kind === 'answer') {
      const group = groupSources(entry.response.sources)[Number(source.dataset.group)];
      const range = group?.ranges[Number(source.dataset.range)]?.range;
      if (group && range) {
        post({ type: 'open', uri: group.uri, range, path: group.path });
      }
    }
  } else if (choice) {
    const entry = state.transcript[Number(choice.dataset.entry)];
    if (entry?.kind === 'answer' && choice.dataset.choice) {
      ask(`file ${choice.dataset.choice}`);
    }
  } else if (link) {
    event.preventDefault();
    const href = link.getAttribute('href');
    if (href && href !== '#') {
      post({ type: 'openLink', href });
    }
  }
});

// Steps blocks stay open (or closed) as the user left them when the transcript re-renders.
transcriptBox.addEventListener(
  'toggle',
  (event) => {
    const details = event.target as HTMLElement;
    if (!(details instanceof HTMLDetailsElement) || details.dataset.first === undefined) {
      return;
    }
    const first = Number(details.dataset.first);
    state.openSteps = state.openSteps.filter((n) => n !== first).concat(details.open ? [first] : []);
    save();
  },
  true,
);

/** One `kb/askEvent` of the running ask: a step, or a piece of the answer. */
function onAskEvent(event: Extract<ToWebview, { type: 'askEvent' }>['event']): void {
  if (event.kind === 'answer') {
    state.streaming = { text: streamedText(state.streaming?.text ?? '', event) };
    return;
  }
  state.transcript.push({ kind: 'step', event });
  // "Waiting for the model" lasts until the model says something.
  state.streaming = { text: state.streaming?.text ?? '', waiting: isWaiting(event) ? event.text : undefined };
}

/** The running ask ended without its answer: what streamed in stays, marked. */
function abandonAsk(message: string): void {
  const partial = state.streaming?.text.trim();
  const stopped = message === 'Stopped.';
  // A stop is the user's choice, not an error: it reads "Stopped." under what came (if anything).
  if (partial || stopped) {
    state.transcript.push({
      kind: 'answer',
      response: { answer: partial ?? '', sources: [], stop: stopped ? 'cancelled' : 'error', steps: [], usage: {} },
    });
  }
  if (!stopped) {
    state.transcript.push({ kind: 'error', text: message });
  }
  state.streaming = null;
}

function pendingQuestionDone(): void {
  state.transcript = state.transcript.map((e) => (e.kind === 'question' && e.pending ? { ...e, pending: false } : e));
}

function finishAsk(response: AskResponse): void {
  pendingQuestionDone();
  let lead: string | undefined;
  if (response.mode === 'fallback') {
    // The model's trouble goes into the one card; the answer keeps only the passages.
    const start = state.transcript.map((e) => e.kind).lastIndexOf('question');
    const message = fallbackReason(state.transcript.slice(start)) ?? response.answer.split(/\n\s*\n/)[0]?.trim() ?? '';
    state.model = modelProblem(message);
    const first = response.answer.split(/\n\s*\n/)[0]?.trim() ?? '';
    lead = first === message.trim() ? first : undefined;
  } else if (response.stop !== 'error') {
    state.model = null; // a model answered
  }
  if (response.stop === 'cancelled') {
    // Stopped (`kb/stopAsk`): the server's answer is a placeholder; what streamed in stays.
    response = { ...response, answer: state.streaming?.text.trim() ?? '' };
  }
  state.transcript.push({ kind: 'answer', response, lead });
  state.conversationId = response.conversationId ?? state.conversationId;
  state.askId = null;
  state.streaming = null;
}

// --- messages from the extension -------------------------------------------------------

let staleIndex: { files: number; chunks: number; sawIndexing: boolean } | undefined;

function onStatus(status: IndexStatus | null): void {
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

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  switch (message.type) {
    case 'chats':
      showHistory(message.chats);
      break;
    case 'chat':
      if (message.chat) {
        reopenChat(message.chat.id, message.chat.transcript as TranscriptEntry[], message.chat.file ?? null);
      }
      break;
    case 'editorContext':
      editorContext = message.context;
      renderChips();
      break;
    case 'examples':
      // Made from the open index; none to offer shows none (never another workspace's).
      searchExamples.innerHTML = renderExamples(message.examples, 'searches');
      askExamples.innerHTML = renderExamples(message.examples, 'questions');
      break;
    case 'status': {
      const wasFailed = state.server === 'failed';
      state.server = message.server;
      state.serverMessage = message.message;
      state.failure = message.failure;
      state.secondsLeft = message.secondsLeft;
      onStatus(message.status);
      renderStatus();
      renderChips();
      // A model that answers needs no "It needs a local model" (defect 9).
      askNeedsModel.hidden = message.status?.llm?.reachable === true;
      if (wasFailed !== (state.server === 'failed')) {
        renderSearch();
      }
      break;
    }
    case 'results': {
      if (message.origin && message.origin !== 'panel') {
        // KB: Search made the last list: the panel shows it, with its query in the box.
        queryInput.value = message.response.query;
        state.query = message.response.query;
        closeCompletions();
      }
      state.listOrigin = message.origin ?? 'panel';
      const kept = keepPlace(state.response, message.response);
      state.response = message.response;
      state.searchError = undefined;
      // A refresh after a stale result keeps saying why the list changed (runSearch says
      // when a search is the user's); another search's list is not that refresh.
      if (message.origin && message.origin !== 'panel') {
        state.staleNote = undefined;
      }
      state.rerunWhenReady = resultsIncomplete(message.response.index);
      renderSearch();
      if (kept) {
        select(searchList, state.selected, false);
      }
      break;
    }
    case 'searchError':
      // The error replaces the list: results of an older query are not this query's.
      state.searchError = message.message;
      state.response = null;
      state.rerunWhenReady = false;
      renderSearch();
      break;
    case 'passage':
      passages.set(message.key, message.text);
      if (hovered && hoveredItem && !hoverCard.hidden && passageKey(hovered) === message.key) {
        showHover(hoveredItem);
      }
      break;
    case 'stale':
      state.staleNote = message.message;
      // The index may still hold the file for a moment: list again once it has changed.
      staleIndex = { files: state.status?.files ?? -1, chunks: state.status?.chunks ?? -1, sawIndexing: false };
      if (state.tab === 'related') {
        post({ type: 'related' });
      } else {
        runSearch(true);
      }
      renderSearch();
      break;
    case 'setQuery':
      showTab('search');
      queryInput.value = message.query;
      state.query = message.query;
      queryInput.focus();
      if (message.run) {
        runSearch();
      }
      break;
    case 'focusSearch':
      showTab('search');
      queryInput.focus();
      queryInput.select();
      break;
    case 'showTab':
      showTab(message.tab);
      break;
    case 'focusAsk':
      if (message.file !== undefined) {
        state.askFile = message.file;
        if (message.file) {
          state.conversationId = null;
        }
      }
      showTab('ask');
      renderAsk();
      questionInput.focus();
      break;
    case 'askStarted':
      pendingQuestionDone();
      state.streaming = null;
      state.askId = message.id;
      state.lastQuestion = { text: message.question, file: message.file ?? null };
      state.transcript.push({ kind: 'question', text: message.question, file: message.file, pending: true });
      showTab('ask');
      renderAsk();
      break;
    case 'askEvent':
      if (message.id === state.askId) {
        onAskEvent(message.event);
        renderAsk();
      }
      break;
    case 'askDone':
      if (message.id === state.askId) {
        finishAsk(message.response);
        renderAsk();
        saveChat();
      }
      break;
    case 'askFailed':
      if (message.id === state.askId) {
        pendingQuestionDone();
        abandonAsk(message.message);
        state.askId = null;
        renderAsk();
        saveChat();
      }
      break;
    case 'summary':
      state.summaries[message.path] = message.summary;
      if (!message.quiet) {
        state.transcript.push({ kind: 'summary', path: message.path, summary: message.summary, cached: message.cached });
        showTab('ask');
        renderAsk();
      }
      break;
    case 'related':
      state.related = { path: message.path, response: message.response, message: message.message };
      state.relatedSelected = 0;
      renderRelated();
      break;
    case 'schema':
      state.schema = message.schema;
      if (document.activeElement === queryInput) {
        updateCompletions();
      }
      break;
  }
  save();
});

pauseButton.addEventListener('click', () => post({ type: 'indexControl', action: state.status?.paused ? 'resume' : 'pause' }));
cancelIndexButton.addEventListener('click', () => post({ type: 'indexControl', action: 'cancel' }));

queryInput.value = state.query;
showTab(state.tab);
renderStatus();
renderSearch();
renderRelated();
renderAsk();
post({ type: 'ready' });

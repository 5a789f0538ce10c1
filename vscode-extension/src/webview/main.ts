/**
 * The panel's script (runs in the webview). Keeps the panel's state (restored with
 * `setState` when the webview is recreated), renders through `render.ts`, and talks to
 * the extension only through `postMessage`.
 */
import type { FromWebview, ToWebview } from '../messages';
import type { AskResponse, IndexStatus, SearchHit, SearchResponse } from '../protocol';
import {
  hitId,
  renderHover,
  renderResults,
  renderTranscript,
  resultsInfo,
  statusLine,
  type ServerState,
  type TranscriptEntry,
} from './render';

interface VsCodeApi {
  postMessage(message: FromWebview): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

interface PanelState {
  query: string;
  response: SearchResponse | null;
  selected: number;
  status: IndexStatus | null;
  server: ServerState;
  serverMessage?: string;
  transcript: TranscriptEntry[];
  askId: number | null;
  askFile: string | null;
  conversationId: string | null;
  summaries: Record<string, string>;
  searchError?: string;
}

const vscode = acquireVsCodeApi();

const initial: PanelState = {
  query: '',
  response: null,
  selected: 0,
  status: null,
  server: 'starting',
  transcript: [],
  askId: null,
  askFile: null,
  conversationId: null,
  summaries: {},
};

const restored = vscode.getState() as Partial<PanelState> | undefined;
const state: PanelState = { ...initial, ...(restored ?? {}), askId: null };

function el<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) {
    throw new Error(`missing #${id}`);
  }
  return found as T;
}

const statusBox = el<HTMLElement>('status');
const statusText = el<HTMLElement>('status-text');
const reindexButton = el<HTMLButtonElement>('reindex');
const searchForm = el<HTMLFormElement>('search-form');
const queryInput = el<HTMLInputElement>('query');
const searchInfo = el<HTMLElement>('search-info');
const resultsList = el<HTMLOListElement>('results');
const hoverCard = el<HTMLElement>('hover');
const askForm = el<HTMLFormElement>('ask-form');
const questionInput = el<HTMLTextAreaElement>('question');
const askButton = el<HTMLButtonElement>('ask-button');
const stopButton = el<HTMLButtonElement>('stop-button');
const scopeBox = el<HTMLElement>('ask-scope');
const scopeFile = el<HTMLElement>('ask-scope-file');
const scopeClear = el<HTMLButtonElement>('ask-scope-clear');
const transcriptBox = el<HTMLElement>('transcript');

function post(message: FromWebview): void {
  vscode.postMessage(message);
}

function save(): void {
  vscode.setState({ ...state, askId: null });
}

function hits(): SearchHit[] {
  return state.response?.results ?? [];
}

// --- rendering --------------------------------------------------------------------------

function renderStatus(): void {
  const line = statusLine(state.status, state.server, state.serverMessage);
  statusText.textContent = line.text;
  statusBox.className = `status ${line.cls}`;
}

function renderSearch(): void {
  const list = hits();
  resultsList.innerHTML = renderResults(list, state.response?.query ?? '', state.selected);
  searchInfo.textContent = state.searchError ?? (state.response ? resultsInfo(list.length, state.response.query) : '');
  searchInfo.classList.toggle('error', Boolean(state.searchError));
  resultsList.tabIndex = list.length > 0 ? 0 : -1;
  if (list.length > 0) {
    resultsList.setAttribute('aria-activedescendant', hitId(list[state.selected]?.n ?? list[0].n));
  } else {
    resultsList.removeAttribute('aria-activedescendant');
  }
  hideHover();
}

function renderAsk(): void {
  transcriptBox.innerHTML = renderTranscript(state.transcript);
  const busy = state.askId !== null;
  askButton.disabled = busy;
  stopButton.hidden = !busy;
  scopeBox.hidden = !state.askFile;
  scopeFile.textContent = state.askFile ?? '';
  transcriptBox.lastElementChild?.scrollIntoView({ block: 'nearest' });
}

function select(index: number, focus = true): void {
  const list = hits();
  if (list.length === 0) {
    return;
  }
  state.selected = Math.max(0, Math.min(list.length - 1, index));
  for (const item of Array.from(resultsList.children)) {
    const isSelected = item.id === hitId(list[state.selected].n);
    item.classList.toggle('selected', isSelected);
    item.setAttribute('aria-selected', String(isSelected));
    if (isSelected) {
      item.scrollIntoView({ block: 'nearest' });
    }
  }
  resultsList.setAttribute('aria-activedescendant', hitId(list[state.selected].n));
  if (focus) {
    resultsList.focus();
  }
  save();
}

function openHit(hit: SearchHit | undefined): void {
  if (hit) {
    post({ type: 'open', uri: hit.uri, range: hit.range });
  }
}

function showHover(item: HTMLElement): void {
  const n = Number(item.dataset.n);
  const hit = hits().find((h) => h.n === n);
  if (!hit) {
    return;
  }
  hoverCard.innerHTML = renderHover(hit, state.summaries[hit.path]);
  hoverCard.hidden = false;
  hoverCard.style.top = `${item.offsetTop + item.offsetHeight}px`;
}

function hideHover(): void {
  hoverCard.hidden = true;
}

// --- search -----------------------------------------------------------------------------

let searchTimer: ReturnType<typeof setTimeout> | undefined;

function runSearch(): void {
  if (searchTimer) {
    clearTimeout(searchTimer);
    searchTimer = undefined;
  }
  const query = queryInput.value.trim();
  state.query = queryInput.value;
  save();
  if (query) {
    post({ type: 'search', query });
  }
}

searchForm.addEventListener('submit', (event) => {
  event.preventDefault();
  runSearch();
});

queryInput.addEventListener('input', () => {
  state.query = queryInput.value;
  save();
  if (searchTimer) {
    clearTimeout(searchTimer);
  }
  searchTimer = setTimeout(runSearch, 250);
});

queryInput.addEventListener('keydown', (event) => {
  if (event.key === 'ArrowDown' && hits().length > 0) {
    event.preventDefault();
    select(state.selected);
  }
});

resultsList.addEventListener('keydown', (event) => {
  const list = hits();
  switch (event.key) {
    case 'ArrowDown':
      select(state.selected + 1);
      break;
    case 'ArrowUp':
      if (state.selected === 0) {
        queryInput.focus();
      } else {
        select(state.selected - 1);
      }
      break;
    case 'Home':
      select(0);
      break;
    case 'End':
      select(list.length - 1);
      break;
    case 'Enter':
    case ' ':
      openHit(list[state.selected]);
      break;
    case 'Escape':
      queryInput.focus();
      break;
    default:
      if (/^[1-9]$/.test(event.key)) {
        const index = list.findIndex((hit) => hit.n === Number(event.key));
        if (index >= 0) {
          select(index);
          openHit(list[index]);
          break;
        }
      }
      return;
  }
  event.preventDefault();
});

resultsList.addEventListener('click', (event) => {
  const item = (event.target as HTMLElement).closest<HTMLElement>('li.hit');
  if (!item) {
    return;
  }
  const index = hits().findIndex((hit) => hit.n === Number(item.dataset.n));
  select(index, false);
  openHit(hits()[index]);
});

resultsList.addEventListener('mouseover', (event) => {
  const item = (event.target as HTMLElement).closest<HTMLElement>('li.hit');
  if (item) {
    showHover(item);
  }
});
resultsList.addEventListener('mouseleave', hideHover);
resultsList.addEventListener('focus', () => {
  const current = resultsList.querySelector<HTMLElement>('li.hit.selected');
  if (current) {
    showHover(current);
  }
});
resultsList.addEventListener('blur', hideHover);

reindexButton.addEventListener('click', () => post({ type: 'reindex' }));

// --- ask --------------------------------------------------------------------------------

function ask(question: string): void {
  const text = question.trim();
  if (!text || state.askId !== null) {
    return;
  }
  post({ type: 'ask', question: text, file: state.askFile, conversationId: state.conversationId });
  questionInput.value = '';
}

askForm.addEventListener('submit', (event) => {
  event.preventDefault();
  ask(questionInput.value);
});

questionInput.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey) {
    event.preventDefault();
    ask(questionInput.value);
  }
});

stopButton.addEventListener('click', () => post({ type: 'cancelAsk' }));

scopeClear.addEventListener('click', () => {
  state.askFile = null;
  renderAsk();
  save();
});

transcriptBox.addEventListener('click', (event) => {
  const target = event.target as HTMLElement;
  const source = target.closest<HTMLElement>('a.source');
  const choice = target.closest<HTMLElement>('button.choice');
  const link = target.closest<HTMLAnchorElement>('a');
  if (source) {
    event.preventDefault();
    const entry = state.transcript[Number(source.dataset.entry)];
    if (entry?.kind === 'answer') {
      const found = entry.response.sources[Number(source.dataset.source)];
      if (found) {
        post({ type: 'open', uri: found.uri, range: found.range });
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

// --- messages from the extension -------------------------------------------------------

function finishAsk(response: AskResponse): void {
  state.transcript.push({ kind: 'answer', response });
  state.conversationId = response.conversationId ?? state.conversationId;
  state.askId = null;
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  switch (message.type) {
    case 'status':
      state.status = message.status;
      state.server = message.server;
      state.serverMessage = message.message;
      renderStatus();
      break;
    case 'results':
      state.response = message.response;
      state.selected = 0;
      state.searchError = undefined;
      if (message.response.index) {
        state.status = message.response.index;
        renderStatus();
      }
      renderSearch();
      break;
    case 'searchError':
      state.searchError = message.message;
      renderSearch();
      break;
    case 'setQuery':
      queryInput.value = message.query;
      state.query = message.query;
      queryInput.focus();
      if (message.run) {
        runSearch();
      }
      break;
    case 'focusSearch':
      queryInput.focus();
      queryInput.select();
      break;
    case 'focusAsk':
      if (message.file !== undefined) {
        state.askFile = message.file;
        if (message.file) {
          state.conversationId = null;
        }
      }
      renderAsk();
      questionInput.focus();
      break;
    case 'askStarted':
      state.askId = message.id;
      state.transcript.push({ kind: 'question', text: message.question, file: message.file });
      renderAsk();
      break;
    case 'askEvent':
      if (message.id === state.askId) {
        state.transcript.push({ kind: 'step', event: message.event });
        renderAsk();
      }
      break;
    case 'askDone':
      if (message.id === state.askId) {
        finishAsk(message.response);
        renderAsk();
      }
      break;
    case 'askFailed':
      if (message.id === state.askId) {
        state.transcript.push({ kind: 'error', text: message.message });
        state.askId = null;
        renderAsk();
      }
      break;
    case 'summary':
      state.summaries[message.path] = message.summary;
      state.transcript.push({ kind: 'summary', path: message.path, summary: message.summary, cached: message.cached });
      renderAsk();
      break;
  }
  save();
});

queryInput.value = state.query;
renderStatus();
renderSearch();
renderAsk();
post({ type: 'ready' });

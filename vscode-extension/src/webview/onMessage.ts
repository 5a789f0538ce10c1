/** The messages from the extension, each applied to the state and the tab it concerns. */
import { resultsIncomplete } from '../format';
import type { ToWebview } from '../messages';
import { renderExamples } from './chatRender';
import type { TranscriptEntry } from './transcriptTypes';
import { renderAsk, renderChips, setEditorContext } from './ask';
import { closeCompletions, updateCompletions } from './completion';
import { askExamples, askNeedsModel, queryInput, questionInput, searchExamples } from './dom';
import { markStale, onStatus, renderStatus } from './header';
import { reopenChat, saveChat, showHistory } from './history';
import { refreshHover } from './hover';
import { searchList, select } from './lists';
import { renderRelated } from './related';
import { keepPlace, renderSearch, runSearch } from './search';
import { passages, post, save, state } from './state';
import { abandonAsk, finishAsk, onAskEvent, pendingQuestionDone } from './streaming';
import { showTab } from './tabs';

type Message<T extends ToWebview['type']> = Extract<ToWebview, { type: T }>;

function onStatusMessage(message: Message<'status'>): void {
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
}

function onResults(message: Message<'results'>): void {
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
}

/** The Search tab's messages: its list, its errors, its box. */
function onSearchMessage(message: ToWebview): boolean {
  switch (message.type) {
    case 'results':
      onResults(message);
      break;
    case 'searchError':
      // The error replaces the list: results of an older query are not this query's.
      state.searchError = message.message;
      state.response = null;
      state.rerunWhenReady = false;
      renderSearch();
      break;
    case 'passage':
      passages.set(message.key, message.text);
      refreshHover(message.key);
      break;
    case 'stale':
      state.staleNote = message.message;
      // The index may still hold the file for a moment: list again once it has changed.
      markStale();
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
    case 'schema':
      state.schema = message.schema;
      if (document.activeElement === queryInput) {
        updateCompletions();
      }
      break;
    case 'examples':
      // Made from the open index; none to offer shows none (never another workspace's).
      searchExamples.innerHTML = renderExamples(message.examples, 'searches');
      askExamples.innerHTML = renderExamples(message.examples, 'questions');
      break;
    default:
      return false;
  }
  return true;
}

/** The running ask: started, each event, done or failed (only the ask the panel started). */
function onRunningAsk(message: ToWebview): boolean {
  switch (message.type) {
    case 'askStarted':
      pendingQuestionDone();
      state.streaming = null;
      state.askId = message.id;
      state.lastQuestion = { text: message.question, file: message.file ?? null, lines: message.lines ?? null };
      state.transcript.push({ kind: 'question', text: message.question, file: message.file, ...(message.lines ? { lines: message.lines } : {}), pending: true });
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
    default:
      return false;
  }
  return true;
}

/** The Ask tab's other messages: the history, the editor's file, focus, a summary. */
function onAskMessage(message: ToWebview): boolean {
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
      setEditorContext(message.context);
      break;
    case 'focusAsk':
      if (message.file !== undefined) {
        state.askFile = message.file;
        state.askLines = null;
        if (message.file) {
          state.conversationId = null;
        }
      }
      showTab('ask');
      renderAsk();
      questionInput.focus();
      break;
    case 'summary':
      state.summaries[message.path] = message.summary;
      if (!message.quiet) {
        state.transcript.push({ kind: 'summary', path: message.path, summary: message.summary, cached: message.cached });
        showTab('ask');
        renderAsk();
      }
      break;
    default:
      return false;
  }
  return true;
}

/** The header's status, a tab to show, the Related tab's notes. */
function onPanelMessage(message: ToWebview): boolean {
  switch (message.type) {
    case 'status':
      onStatusMessage(message);
      break;
    case 'showTab':
      showTab(message.tab);
      break;
    case 'related':
      state.related = { path: message.path, response: message.response, message: message.message };
      state.relatedSelected = 0;
      renderRelated();
      break;
    default:
      return false;
  }
  return true;
}

/** Each message belongs to one of these: the first that knows its type applies it. */
const HANDLERS = [onSearchMessage, onRunningAsk, onAskMessage, onPanelMessage];

export function wireMessages(): void {
  window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
    HANDLERS.some((handle) => handle(event.data));
    save();
  });
}

/** The Search tab: the box, running a search as the user types, and the list's texts. */
import { resultsIncomplete, suggestedQuery } from '../format';
import type { SearchResponse } from '../protocol';
import { filterWordAt } from './completionRender';
import { LIST_KEYS, renderDidYouMean, renderSearchError, resultsInfo, searchNotice } from './results';
import { updateCompletions } from './completion';
import { didYouMean, ownSelectAll, panes, queryInput, resultsList, searchError, searchForm, searchInfo, searchNoticeBox, searchWelcome } from './dom';
import { hideHover } from './hover';
import { renderList, searchList } from './lists';
import { post, save, searchHits, state } from './state';
import { showTab } from './tabs';

export function renderNotice(): void {
  // While the sync that made these results still runs, show its current numbers.
  const index = state.response?.index;
  let notice = '';
  if (index && resultsIncomplete(index)) {
    notice = (state.status?.state === 'indexing' ? searchNotice(state.status) : '') || searchNotice(index);
  }
  searchNoticeBox.textContent = notice;
  searchNoticeBox.hidden = !notice;
}

export function renderSearch(): void {
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
export function keepPlace(shown: SearchResponse | null, next: SearchResponse): boolean {
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
export function runSearch(refresh = false): void {
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

export function addFilter(filter: string): void {
  const current = queryInput.value.trim();
  if (!current.split(/\s+/).includes(filter)) {
    queryInput.value = current ? `${current} ${filter}` : filter;
  }
  showTab('search');
  runSearch();
}

export function wireSearch(): void {
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

  queryInput.addEventListener('focus', () => {
    if (!state.schema) {
      post({ type: 'schema' });
    }
  });
}

/** Completing a filter (`tag:` → the tags of kb/schema) in the search box. */
import { type Completion, filterCompletions, filterWordAt, renderCompletions } from './completionRender';
import { completionList, queryInput } from './dom';
import { searchList, select } from './lists';
import { runSearch } from './search';
import { searchHits, state } from './state';

let completions: Completion[] = [];
let activeCompletion = 0;

export function updateCompletions(): void {
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

export function closeCompletions(): void {
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

export function wireCompletion(): void {
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

  completionList.addEventListener('mousedown', (event) => {
    const item = (event.target as HTMLElement).closest<HTMLElement>('li.completion');
    if (item) {
      event.preventDefault();
      acceptCompletion(Number(item.dataset.index));
    }
  });
}

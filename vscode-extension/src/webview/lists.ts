/** The numbered lists (search results and related notes): selection, keys, opening a row. */
import type { SearchHit } from '../protocol';
import { hitId, renderResults } from './results';
import { el, queryInput, relatedList, resultsList, searchHead } from './dom';
import { hideHover, showHover } from './hover';
import { addFilter } from './search';
import { post, relatedHits, save, searchHits, state } from './state';

interface ListView {
  element: HTMLOListElement;
  name: 'hit' | 'related';
  hits: () => SearchHit[];
  getSelected: () => number;
  setSelected: (i: number) => void;
  onEscape: () => void;
}

export const searchList: ListView = {
  element: resultsList,
  name: 'hit',
  hits: searchHits,
  getSelected: () => state.selected,
  setSelected: (i) => (state.selected = i),
  onEscape: () => queryInput.focus(),
};

export const relatedView: ListView = {
  element: relatedList,
  name: 'related',
  hits: relatedHits,
  getSelected: () => state.relatedSelected,
  setSelected: (i) => (state.relatedSelected = i),
  onEscape: () => el<HTMLButtonElement>('tab-related').focus(),
};

export function renderList(view: ListView): void {
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

export function select(view: ListView, index: number, focus = true): void {
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

/** The list's keys: arrows and Home/End move, Enter or Space opens, 1–9 opens that
 * result, ↑ from the first row and Escape go back (to the query, or the tab). */
function onListKey(view: ListView, event: KeyboardEvent): void {
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
}

function wireList(view: ListView): void {
  view.element.addEventListener('keydown', (event) => onListKey(view, event));
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

export function wireLists(): void {
  wireList(searchList);
  wireList(relatedView);
}

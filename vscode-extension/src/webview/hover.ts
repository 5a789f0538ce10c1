/** The hover card over a search result: its passage (read once) and the file's summary. */
import type { SearchHit } from '../protocol';
import { passageKey, renderHover } from './results';
import { hoverCard, panes, resultsList, searchHead } from './dom';
import { passages, post, searchHits, state } from './state';

let hovered: SearchHit | undefined;
let hoveredItem: HTMLElement | undefined;

export function showHover(item: HTMLElement): void {
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

export function hideHover(): void {
  hoverCard.hidden = true;
}

export function wireHover(): void {
  resultsList.addEventListener('focus', () => {
    const current = resultsList.querySelector<HTMLElement>('li.hit.selected');
    if (current) {
      showHover(current);
    }
  });
}

/** A passage arrived: the card showing that passage's row shows it now. */
export function refreshHover(key: string): void {
  if (hovered && hoveredItem && !hoverCard.hidden && passageKey(hovered) === key) {
    showHover(hoveredItem);
  }
}

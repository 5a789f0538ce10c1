/** The hover card over a search result: its passage (read once) and the file's summary. */
import type { SearchHit } from '../protocol';
import { passageKey, renderHover } from './results';
import { hoverCard, panes, resultsList } from './dom';
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

/** Below the row, unless that covers the selected row: then above the row, or else below
 * the selected row — the row the keyboard is on stays readable. */
function placeHover(item: HTMLElement): void {
  const height = hoverCard.offsetHeight;
  const selected = resultsList.querySelector<HTMLElement>('li.hit.selected');
  const covers = (top: number): boolean =>
    selected !== null && selected !== item && top < selected.offsetTop + selected.offsetHeight && top + height > selected.offsetTop;
  const candidates = [
    item.offsetTop + item.offsetHeight,
    ...(item.offsetTop - height >= panes.search.scrollTop ? [item.offsetTop - height] : []),
    ...(selected ? [selected.offsetTop + selected.offsetHeight] : []),
  ];
  hoverCard.style.top = `${candidates.find((top) => !covers(top)) ?? candidates[0]}px`;
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

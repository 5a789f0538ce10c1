/**
 * The last numbered list this window showed (a search in the panel or the quick pick):
 * what `KB: Open Result…` offers and what the panel's Search tab shows, whichever search
 * made it. The server keeps its own copy for `kb/openResult` and "file N" (the same
 * list: every search of this window goes through one client); this one lets the command
 * show the list instead of asking for a bare number, and the panel follow the quick pick.
 */
import type { ListOrigin } from './messages';
import type { SearchHit, SearchResponse } from './protocol';

export interface LastList {
  response: SearchResponse;
  origin: ListOrigin;
}

let last: LastList | undefined;
const listeners = new Set<(list: LastList) => void>();

export function rememberList(response: SearchResponse | undefined, origin: ListOrigin = 'panel'): void {
  last = response ? { response, origin } : undefined;
  if (last) {
    for (const listener of [...listeners]) {
      listener(last);
    }
  }
}

export function lastList(): readonly SearchHit[] {
  return last?.response.results ?? [];
}

/** The query the numbers of the last list belong to. */
export function lastQuery(): string | undefined {
  return last?.response.query;
}

/** Call `listener` with every new last list; returns what stops it. */
export function onListChanged(listener: (list: LastList) => void): { dispose(): void } {
  listeners.add(listener);
  return { dispose: () => listeners.delete(listener) };
}

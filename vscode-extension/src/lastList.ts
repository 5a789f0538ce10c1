/**
 * The last numbered list this window showed (a search in the panel or the quick pick):
 * what `KB: Open Result…` offers and what the panel's Search tab shows, whichever search
 * made it. The server keeps its own copy for `kb/openResult` and "file N" (the same
 * list: every search of this window goes through one client); this one lets the command
 * show the list instead of asking for a bare number, and the panel follow the quick pick.
 */
import type { ListOrigin } from './messages';
import type { IndexStatus, SearchHit, SearchResponse } from './protocol';

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

const SERVER_ORIGINS = new Set<ListOrigin>(['agent', 'cli', 'mcp']);

/**
 * The list a `kb/listChanged` notification carries — `{query, results, origin}`, sent by a
 * server whose numbered list changed other than by this window's own search (an ask's
 * search, `kb search` or an MCP client on the same index) — or undefined when it is not
 * one. `index`: the status to show with it (the notification need not carry one).
 */
export function listFromServer(params: unknown, index: IndexStatus | undefined): LastList | undefined {
  const p = params as { query?: unknown; results?: unknown; origin?: unknown; index?: unknown } | null;
  if (!p || typeof p.query !== 'string' || !Array.isArray(p.results) || !(p.index ?? index)) {
    return undefined;
  }
  const results = (p.results as unknown[]).filter(
    (hit): hit is SearchHit =>
      typeof hit === 'object' && hit !== null && typeof (hit as SearchHit).n === 'number' && typeof (hit as SearchHit).uri === 'string' && typeof (hit as SearchHit).path === 'string',
  );
  const origin = typeof p.origin === 'string' && SERVER_ORIGINS.has(p.origin as ListOrigin) ? (p.origin as ListOrigin) : 'agent';
  return { response: { query: p.query, results, index: (p.index ?? index) as IndexStatus }, origin };
}

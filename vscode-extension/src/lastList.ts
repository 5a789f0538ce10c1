/**
 * The last numbered list this window showed (a search in the panel or the quick pick):
 * what `KB: Open Result…` offers. The server keeps its own copy for `kb/openResult` and
 * "file N"; this one lets the command show the list instead of asking for a bare number.
 */
import type { SearchHit } from './protocol';

let last: readonly SearchHit[] = [];

export function rememberList(hits: readonly SearchHit[]): void {
  last = hits;
}

export function lastList(): readonly SearchHit[] {
  return last;
}

/** The Related tab: the active Markdown file's nearest notes. */
import { relatedCount, relatedInfo } from './dom';
import { relatedView, renderList } from './lists';
import { relatedHits, state } from './state';

export function renderRelated(): void {
  renderList(relatedView);
  const related = state.related;
  const count = relatedHits().length;
  relatedCount.textContent = count > 0 ? String(count) : '';
  if (!related?.path) {
    relatedInfo.textContent = related?.message ?? 'Open a Markdown file to see the notes related to it.';
  } else if (related.message) {
    relatedInfo.textContent = related.message;
  } else if (count === 0) {
    relatedInfo.textContent = `Nothing in the knowledge base is close to ${related.path} yet.`;
  } else {
    relatedInfo.textContent = `Notes related to ${related.path}:`;
  }
  relatedInfo.title = related?.path ?? '';
}

/** Completion of metadata filters (`tag:` → the tags of kb/schema) in the search box. */
import { count } from '../format';
import type { SchemaResponse } from '../protocol';
import { escapeHtml } from './html';

export interface Completion {
  /** What replaces the word being typed, e.g. `tag:payments `. */
  insert: string;
  label: string;
  detail: string;
}

/** The filter word under the cursor: `tag:pay` at the end of `mexico tag:pay`. */
export function filterWordAt(text: string, cursor: number): { start: number; key: string; value: string } | undefined {
  const before = text.slice(0, cursor);
  const match = /(^|\s)(-?)([A-Za-z_][\w-]*):("?[^\s"]*)$/.exec(before);
  if (!match) {
    return undefined;
  }
  const start = (match.index ?? 0) + (match[1] ?? '').length;
  return { start, key: `${match[2] ?? ''}${match[3] ?? ''}`, value: (match[4] ?? '').replace(/^"/, '') };
}

/**
 * Completions for the filter word being typed, from `kb/schema`: `tag:` offers the tags
 * (the field `tags`, or `tag`), `status:` the statuses, and so on, most used first.
 */
export function filterCompletions(schema: SchemaResponse | null, key: string, value: string, max = 12): Completion[] {
  if (!schema) {
    return [];
  }
  const negated = key.startsWith('-');
  const name = (negated ? key.slice(1) : key).toLowerCase();
  const field = schema.fields.find((f) => f.name.toLowerCase() === name) ?? schema.fields.find((f) => f.name.toLowerCase() === `${name}s`);
  if (!field) {
    return [];
  }
  const prefix = value.toLowerCase();
  const folder = field.name.toLowerCase() === 'folder';
  return (field.top ?? [])
    // A blank value is no filter, except the files at the top, which `folder:/` means.
    .filter((v) => v.value.trim() !== '' || folder)
    .map((v) => (v.value.trim() === '' ? { ...v, value: '/' } : v))
    .filter((v) => v.value.toLowerCase().startsWith(prefix) || (prefix.length > 1 && v.value.toLowerCase().includes(prefix)))
    .slice(0, max)
    .map((v) => {
      const quoted = /[\s"]/.test(v.value) ? `"${v.value.replace(/"/g, '')}"` : v.value;
      const top = folder && v.value === '/';
      return {
        insert: `${negated ? '-' : ''}${name}:${quoted} `,
        label: `${name}:${v.value}`,
        detail: `${top ? 'top level · ' : ''}${count(v.count)} file${v.count === 1 ? '' : 's'}`,
      };
    });
}

export function renderCompletions(items: readonly Completion[], active: number): string {
  return items
    .map(
      (item, i) =>
        `<li id="completion-${i}" class="completion${i === active ? ' active' : ''}" role="option" aria-selected="${i === active}" data-index="${i}">` +
        `<span class="completion-label">${escapeHtml(item.label)}</span><span class="completion-detail">${escapeHtml(item.detail)}</span></li>`,
    )
    .join('');
}

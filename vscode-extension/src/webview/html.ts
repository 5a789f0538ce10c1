/**
 * Text into HTML for the panel: escaping, and a snippet's distinctive words marked. Every
 * renderer builds its markup from these, so nothing a note or a model writes becomes markup.
 */

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A snippet as HTML with `marks` — the words the server found distinctive in it, exactly
 * as written there — in `<mark>`. Whole words only: "in" never marks "index".
 */
function markPattern(marks: readonly string[]): RegExp | undefined {
  const words = [...new Set(marks.filter((m) => m.trim()))].sort((a, b) => b.length - a.length);
  return words.length === 0
    ? undefined
    : new RegExp(`(?<![\\p{L}\\p{N}_])(${words.map(escapeRegExp).join('|')})(?![\\p{L}\\p{N}_])`, 'gu');
}

/** `<mark>` the words in the text of rendered HTML, never inside a tag. */
export function highlightHtml(html: string, marks: readonly string[]): string {
  const pattern = markPattern(marks.map(escapeHtml));
  return pattern ? html.split(/(<[^>]*>)/).map((part, i) => (i % 2 === 1 ? part : part.replace(pattern, '<mark>$1</mark>'))).join('') : html;
}

export function highlight(snippet: string, marks: readonly string[]): string {
  const pattern = markPattern(marks);
  if (!pattern) {
    return escapeHtml(snippet);
  }
  let out = '';
  let last = 0;
  for (const match of snippet.matchAll(pattern)) {
    const start = match.index ?? 0;
    out += `${escapeHtml(snippet.slice(last, start))}<mark>${escapeHtml(match[0])}</mark>`;
    last = start + match[0].length;
  }
  return out + escapeHtml(snippet.slice(last));
}

/**
 * Answers' Markdown as HTML: markdown-it with raw HTML disabled, so nothing the model writes
 * can inject markup or script; `[n]` and `[path:lines]` citations become links to sources.
 */
import MarkdownIt from 'markdown-it';
import { lineSpan } from '../format';
import type { Source } from '../protocol';

/** Where `[n]` and `[path:lines]` in an answer lead: the answer's sources. */
interface CiteEnv {
  /** The transcript entry of the answer, or the answer still streaming in. */
  entry: number | 'streaming';
  sources: readonly Source[];
}

const CITATION = /\[(\d{1,3})\]|\[([^[\]\s]+\.(?:md|markdown))(?::(\d+)(?:[-–](\d+))?)?\]/g;

/** The index in `sources` of citation `[n]`: the source numbered n, else the n-th. */
export function citedSource(sources: readonly Source[], n: number): number | undefined {
  const numbered = sources.findIndex((source) => source.n === n);
  if (numbered >= 0) {
    return numbered;
  }
  return sources.every((source) => source.n === undefined || source.n === null) && n >= 1 && n <= sources.length ? n - 1 : undefined;
}

const markdown = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: false });

type CoreState = Parameters<Parameters<typeof markdown.core.ruler.push>[1]>[0];
type Token = CoreState['tokens'][number];

/** The link a citation match becomes: `[n]` naming a source of this answer opens it at its
 * lines, `[path:lines]` opens that file there; anything else stays text (undefined). */
function citationAttrs(match: RegExpMatchArray, env: CiteEnv): [string, string][] | undefined {
  if (match[1]) {
    const index = citedSource(env.sources, Number(match[1]));
    const source = index === undefined ? undefined : env.sources[index];
    if (!source || index === undefined) {
      return undefined;
    }
    return [
      ['href', '#'],
      ['class', 'cite'],
      ['data-entry', String(env.entry)],
      ['data-source', String(index)],
      ['title', `${source.path} ${lineSpan(source.range)}`],
    ];
  }
  if (match[2]) {
    const lines = match[3] ? `#L${match[3]}${match[4] ? `-L${match[4]}` : ''}` : '';
    return [
      ['href', `${match[2]}${lines}`],
      ['class', 'cite cite-path'],
      ['title', `${match[2]}${match[3] ? ` L${match[3]}${match[4] ? `–${match[4]}` : ''}` : ''}`],
    ];
  }
  return undefined;
}

/** One text token as the tokens it becomes: its text with each citation a link. */
function linkCitations(state: CoreState, token: Token, env: CiteEnv): Token[] {
  const out: Token[] = [];
  let last = 0;
  for (const match of token.content.matchAll(CITATION)) {
    const at = match.index ?? 0;
    const attrs = citationAttrs(match, env);
    if (!attrs) {
      continue;
    }
    if (at > last) {
      const before = new state.Token('text', '', 0);
      before.content = token.content.slice(last, at);
      out.push(before);
    }
    const open = new state.Token('link_open', 'a', 1);
    open.attrs = attrs;
    const text = new state.Token('text', '', 0);
    text.content = match[0];
    out.push(open, text, new state.Token('link_close', 'a', -1));
    last = at + match[0].length;
  }
  if (last === 0) {
    return [token];
  }
  if (last < token.content.length) {
    const after = new state.Token('text', '', 0);
    after.content = token.content.slice(last);
    out.push(after);
  }
  return out;
}

/**
 * Citations become links, the way chat panels show them: `[2]` opens source 2 at its
 * lines, `[docs/a.md:12-18]` opens that file there. Only in text (never in code or an
 * existing link), and only `[n]` that name a source of this answer.
 */
markdown.core.ruler.push('kb_citations', (state) => {
  const env = (state.env as { cite?: CiteEnv } | undefined)?.cite;
  if (!env) {
    return false;
  }
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) {
      continue;
    }
    const out: Token[] = [];
    let inLink = 0;
    for (const token of block.children) {
      inLink += token.type === 'link_open' ? 1 : token.type === 'link_close' ? -1 : 0;
      if (token.type !== 'text' || inLink > 0 || !token.content.includes('[')) {
        out.push(token);
      } else {
        out.push(...linkCitations(state, token, env));
      }
    }
    block.children = out;
  }
  return true;
});

/** Markdown → HTML with raw HTML disabled (it shows as text) and unsafe links refused;
 * with `cite`, the answer's citations become links to its sources. */
export function renderMarkdown(text: string, cite?: CiteEnv): string {
  return markdown.render(text, cite ? { cite } : {});
}

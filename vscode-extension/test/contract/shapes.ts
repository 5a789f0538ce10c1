/**
 * Runtime key lists tied to the TypeScript interfaces at compile time: `keys<T>()({...})`
 * only type-checks when the object names exactly T's fields, so the contract test checks
 * the server's payloads against what protocol.ts declares.
 */
import type * as P from '../../src/protocol';

type Exact<T, K> = { [P in keyof T]-?: true } & { [P in Exclude<keyof K, keyof T>]: never };

function keys<T>() {
  return <K extends Exact<T, K>>(k: K): string[] => Object.keys(k);
}

export const Shapes = {
  Position: keys<P.Position>()({ line: true, character: true }),
  Range: keys<P.Range>()({ start: true, end: true }),
  LlmStatus: keys<P.LlmStatus>()({ host: true, model: true, reachable: true }),
  SkippedFile: keys<P.SkippedFile>()({ path: true, reason: true }),
  IndexStatus: keys<P.IndexStatus>()({
    state: true,
    files: true,
    chunks: true,
    pending: true,
    embedder: true,
    store: true,
    llm: true,
    readOnly: true,
    roots: true,
    skipped: true,
    message: true,
    progress: true,
    keywordComplete: true,
    vectorsReady: true,
  }),
  SearchHit: keys<P.SearchHit>()({
    n: true,
    uri: true,
    path: true,
    root: true,
    title: true,
    label: true,
    score: true,
    snippet: true,
    heading: true,
    range: true,
    meta: true,
  }),
  SearchResponse: keys<P.SearchResponse>()({ query: true, results: true, index: true }),
  OpenResultResponse: keys<P.OpenResultResponse>()({ uri: true, path: true, range: true }),
  Source: keys<P.Source>()({ n: true, uri: true, path: true, range: true }),
  Step: keys<P.Step>()({ kind: true, text: true, tool: true, args: true }),
  Usage: keys<P.Usage>()({ calls: true, promptTokens: true, completionTokens: true, seconds: true }),
  AskResponse: keys<P.AskResponse>()({
    answer: true,
    sources: true,
    stop: true,
    steps: true,
    usage: true,
    conversationId: true,
    mode: true,
    grounded: true,
  }),
  AskEvent: keys<P.AskEvent>()({ askId: true, kind: true, text: true, tool: true, args: true }),
  SummarizeResponse: keys<P.SummarizeResponse>()({ path: true, summary: true, cached: true, extractive: true }),
};

/** Every key the server sent is declared, and (optional ones aside) every declared key is sent. */
export function assertShape(name: keyof typeof Shapes, value: unknown, optional: readonly string[] = []): void {
  if (typeof value !== 'object' || value === null) {
    throw new Error(`${name}: expected an object, got ${JSON.stringify(value)}`);
  }
  const declared = Shapes[name];
  const sent = Object.keys(value);
  const unknown = sent.filter((k) => !declared.includes(k));
  const missing = declared.filter((k) => !sent.includes(k) && !optional.includes(k));
  if (unknown.length > 0 || missing.length > 0) {
    throw new Error(
      `${name} differs from protocol.ts: unknown ${JSON.stringify(unknown)}, missing ${JSON.stringify(missing)}; got ${JSON.stringify(value)}`,
    );
  }
}

export function assertRange(value: unknown): void {
  assertShape('Range', value);
  const range = value as P.Range;
  assertShape('Position', range.start);
  assertShape('Position', range.end);
  for (const pos of [range.start, range.end]) {
    if (!Number.isInteger(pos.line) || !Number.isInteger(pos.character) || pos.line < 0 || pos.character < 0) {
      throw new Error(`bad position ${JSON.stringify(pos)}`);
    }
  }
}

export function assertIndexStatus(value: unknown): void {
  assertShape('IndexStatus', value);
  const status = value as P.IndexStatus;
  assertShape('LlmStatus', status.llm);
  for (const skipped of status.skipped ?? []) {
    assertShape('SkippedFile', skipped);
  }
  if (!['indexing', 'ready', 'error'].includes(status.state)) {
    throw new Error(`bad state ${status.state}`);
  }
}

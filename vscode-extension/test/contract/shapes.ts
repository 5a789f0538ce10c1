/**
 * Each payload's wire field names, tied to protocol.ts at compile time: `keys<T>()({…})`
 * only type-checks when the object names exactly T's fields. `Nested` says which fields
 * hold another payload, so `assertShape` (./assertShape.ts) checks all the way down.
 *
 * GENERATED from server/kb_lsp/protocol.py by `python -m kb_lsp.codegen`: do not edit.
 */
import type * as P from '../../src/protocol';

type Exact<T, K> = { [F in keyof T]-?: true } & { [F in Exclude<keyof K, keyof T>]: never };

function keys<T>() {
  return <K extends Exact<T, K>>(k: K): string[] => Object.keys(k);
}

export const Shapes = {
  Position: keys<P.Position>()({ line: true, character: true }),
  Range: keys<P.Range>()({ start: true, end: true }),
  LlmStatus: keys<P.LlmStatus>()({
    host: true,
    model: true,
    reachable: true,
    provider: true,
    message: true,
    tools: true,
  }),
  IndexProgress: keys<P.IndexProgress>()({
    phase: true,
    filesDone: true,
    filesTotal: true,
    chunksDone: true,
    chunksTotal: true,
    secondsLeft: true,
  }),
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
    problems: true,
    message: true,
    progress: true,
    keywordComplete: true,
    vectorsReady: true,
    paused: true,
    metadata: true,
  }),
  MetadataStatus: keys<P.MetadataStatus>()({
    schemaFile: true,
    model: true,
    extracted: true,
    total: true,
    message: true,
  }),
  SkippedFile: keys<P.SkippedFile>()({ path: true, reason: true }),
  FileProblem: keys<P.FileProblem>()({ path: true, line: true, message: true }),
  SearchParams: keys<P.SearchParams>()({
    query: true,
    limit: true,
    paths: true,
    mode: true,
    filter: true,
  }),
  HitMeta: keys<P.HitMeta>()({
    tags: true,
    status: true,
    modified: true,
    extracted: true,
    extractedBy: true,
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
    marks: true,
  }),
  QueryWarning: keys<P.QueryWarning>()({
    where: true,
    position: true,
    message: true,
    suggestion: true,
  }),
  SearchResponse: keys<P.SearchResponse>()({
    query: true,
    results: true,
    index: true,
    didYouMean: true,
    warnings: true,
  }),
  ListChanged: keys<P.ListChanged>()({ query: true, results: true, origin: true, index: true }),
  OpenResultParams: keys<P.OpenResultParams>()({ n: true }),
  OpenResultResponse: keys<P.OpenResultResponse>()({ uri: true, path: true, range: true }),
  ChatTurn: keys<P.ChatTurn>()({ question: true, answer: true }),
  AskParams: keys<P.AskParams>()({
    question: true,
    file: true,
    n: true,
    conversationId: true,
    history: true,
  }),
  Source: keys<P.Source>()({ n: true, uri: true, path: true, range: true }),
  Step: keys<P.Step>()({ kind: true, text: true, tool: true, args: true }),
  Usage: keys<P.Usage>()({
    calls: true,
    promptTokens: true,
    completionTokens: true,
    seconds: true,
  }),
  AskResponse: keys<P.AskResponse>()({
    answer: true,
    sources: true,
    stop: true,
    steps: true,
    usage: true,
    mode: true,
    grounded: true,
    conversationId: true,
    dropped: true,
  }),
  AskEvent: keys<P.AskEvent>()({ askId: true, kind: true, text: true, tool: true, args: true }),
  SummarizeParams: keys<P.SummarizeParams>()({ file: true, n: true }),
  SummarizeResponse: keys<P.SummarizeResponse>()({
    path: true,
    summary: true,
    cached: true,
    extractive: true,
  }),
  RelatedParams: keys<P.RelatedParams>()({
    uri: true,
    path: true,
    limit: true,
    excludeLinked: true,
    numbered: true,
  }),
  RelatedResponse: keys<P.RelatedResponse>()({ path: true, results: true, index: true }),
  ExamplesResponse: keys<P.ExamplesResponse>()({ searches: true, questions: true, filters: true }),
  SchemaValue: keys<P.SchemaValue>()({ value: true, count: true }),
  SchemaField: keys<P.SchemaField>()({
    name: true,
    types: true,
    files: true,
    top: true,
    extracted: true,
  }),
  SchemaResponse: keys<P.SchemaResponse>()({ files: true, fields: true }),
  FileLines: keys<P.FileLines>()({
    uri: true,
    path: true,
    range: true,
    startLine: true,
    endLine: true,
    totalLines: true,
    text: true,
    nextStartLine: true,
    n: true,
  }),
  FileEntry: keys<P.FileEntry>()({
    path: true,
    uri: true,
    title: true,
    size: true,
    modified: true,
    sha256: true,
    chunks: true,
  }),
  FileListResponse: keys<P.FileListResponse>()({ files: true, skipped: true }),
  StatusParams: keys<P.StatusParams>()({ probe: true }),
  ReindexParams: keys<P.ReindexParams>()({ full: true }),
  IndexControlParams: keys<P.IndexControlParams>()({ action: true }),
};

export type ShapeName = keyof typeof Shapes;

/** Fields that hold another payload (or a list of them), by payload. */
export const Nested: Partial<Record<ShapeName, Record<string, ShapeName>>> = {
  Range: { start: 'Position', end: 'Position' },
  IndexStatus: { llm: 'LlmStatus', skipped: 'SkippedFile', problems: 'FileProblem', progress: 'IndexProgress', metadata: 'MetadataStatus' },
  SearchHit: { range: 'Range', meta: 'HitMeta' },
  SearchResponse: { results: 'SearchHit', index: 'IndexStatus', warnings: 'QueryWarning' },
  ListChanged: { results: 'SearchHit', index: 'IndexStatus' },
  OpenResultResponse: { range: 'Range' },
  AskParams: { history: 'ChatTurn' },
  Source: { range: 'Range' },
  AskResponse: { sources: 'Source', steps: 'Step', usage: 'Usage' },
  RelatedResponse: { results: 'SearchHit', index: 'IndexStatus' },
  SchemaField: { top: 'SchemaValue' },
  SchemaResponse: { fields: 'SchemaField' },
  FileLines: { range: 'Range' },
  FileListResponse: { files: 'FileEntry', skipped: 'SkippedFile' },
};

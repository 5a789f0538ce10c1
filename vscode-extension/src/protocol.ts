/**
 * The wire contract of DESIGN.md on the TypeScript side: method, notification and
 * command names, and the payload shapes as they travel (camelCase wire names).
 *
 * GENERATED from server/kb_lsp/protocol.py by `python -m kb_lsp.codegen`: do not edit. Change
 * protocol.py and run the generator; tests/unit/test_protocol_sync.py fails when this
 * file is stale.
 *
 * Nothing here imports `vscode`: the contract test and the webview use it too.
 */

// --- method, notification and command names ----------------------------------------------

export const Methods = {
  search: 'kb/search',
  openResult: 'kb/openResult',
  ask: 'kb/ask',
  stopAsk: 'kb/stopAsk',
  summarize: 'kb/summarize',
  status: 'kb/status',
  reindex: 'kb/reindex',
  related: 'kb/related',
  indexControl: 'kb/indexControl',
  schema: 'kb/schema',
  examples: 'kb/examples',
} as const;

export const Notifications = {
  indexChanged: 'kb/indexChanged',
  askEvent: 'kb/askEvent',
  listChanged: 'kb/listChanged',
} as const;

/** `workspace/executeCommand` names the server accepts: `kb.search` for `kb/search`, … */
export const ServerCommands = {
  search: 'kb.search',
  openResult: 'kb.openResult',
  ask: 'kb.ask',
  stopAsk: 'kb.stopAsk',
  summarize: 'kb.summarize',
  status: 'kb.status',
  reindex: 'kb.reindex',
  related: 'kb.related',
  indexControl: 'kb.indexControl',
  schema: 'kb.schema',
  examples: 'kb.examples',
} as const;

export type MethodName = (typeof Methods)[keyof typeof Methods];
export type NotificationName = (typeof Notifications)[keyof typeof Notifications];

export const MAX_QUERY_CHARS = 2000;
export const MAX_LIMIT = 100;
export const MAX_PATH_CHARS = 4096;
export const MAX_PATHS = 64;
export const MAX_HISTORY_TURNS = 32;

/** JSON-RPC error codes the server uses. */
export const ErrorCodes = {
  invalidParams: -32602,
  unavailable: -32000,
  requestCancelled: -32800,
  failed: -32001,
} as const;

export type SearchMode = 'hybrid' | 'semantic' | 'keyword';
export type Label = 'filename match' | 'context match' | 'related';
export type IndexState = 'indexing' | 'ready' | 'error';
export type IndexPhase = 'scanning' | 'keyword' | 'vectors' | 'metadata';
export type IndexAction = 'pause' | 'resume' | 'cancel';
export type StopReason =
  | 'answer'
  | 'clarify'
  | 'step_limit'
  | 'length'
  | 'degenerate'
  | 'empty'
  | 'error'
  | 'cancelled';
export type AskMode = 'agent' | 'grounded' | 'fallback';
export type AskVerdict = 'supported' | 'unsupported' | 'no_model';
export type LlmProvider = 'ollama' | 'openai';
export type ListOrigin = 'agent' | 'cli' | 'mcp';
export type AskEventKind =
  | 'thinking'
  | 'tool_call'
  | 'tool_result'
  | 'answer'
  | 'clarify'
  | 'error'
  | 'status';

// --- payloads ----------------------------------------------------------------------------

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface LlmStatus {
  host: string;
  model: string;
  reachable?: boolean | null;
  provider?: LlmProvider;
  message?: string | null;
  tools?: boolean | null;
}

/** The one progress of a running sync: totals fixed when the sync starts. */
export interface IndexProgress {
  phase: IndexPhase;
  filesDone: number;
  filesTotal: number;
  chunksDone?: number;
  chunksTotal?: number;
  /**
   * Of chunksDone, the passages whose vectors were reused (the store's cache of earlier embeddings, or a team index) rather than embedded.
   */
  chunksReused?: number;
  /**
   * About how many seconds the current phase has left, from the rate of its recent progress (not the run's average); null until there is a rate.
   */
  secondsLeft?: number | null;
}

export interface IndexStatus {
  state: IndexState;
  files: number;
  chunks: number;
  pending?: number;
  embedder: string;
  store: string;
  llm: LlmStatus;
  readOnly?: boolean;
  roots?: string[];
  skipped?: SkippedFile[];
  problems?: FileProblem[];
  message?: string | null;
  progress?: IndexProgress | null;
  keywordComplete?: boolean;
  vectorsReady?: number;
  paused?: boolean;
  metadata?: MetadataStatus | null;
}

/** Metadata a model extracts (`.kb/schema.json`): how far, by which model, or why not. */
export interface MetadataStatus {
  schemaFile?: string | null;
  model?: string | null;
  extracted?: number;
  total?: number;
  message?: string | null;
}

export interface SkippedFile {
  path: string;
  reason: string;
}

/** Something wrong in an indexed file (the file is still indexed). */
export interface FileProblem {
  path: string;
  line: number;
  message: string;
}

export interface SearchParams {
  /**
   * What to look for: plain words, a question, or exact terms (identifiers, error codes, names).
   */
  query: string;
  /** At most this many files. */
  limit?: number;
  /**
   * Only files whose workspace path matches one of these globs (gitignore style), e.g. ['runbooks/**', 'payments/*.md'].
   */
  paths?: string[] | null;
  /**
   * 'hybrid': meaning and words (best in general); 'semantic': meaning only; 'keyword': exact words (BM25).
   */
  mode?: SearchMode;
  /**
   * Keep only files whose metadata match, e.g. 'tag:runbook -status:draft modified>2026-10-01 folder:payments'; the schema tool lists the fields and their values.
   */
  filter?: string | null;
}

/**
 * A value a model read from a note, and where: the note's own words it was checked
 * against (a value without such words is never stored).
 */
export interface ExtractedValue {
  value: string;
  evidence: string;
  range: Range;
  start: number;
  end: number;
}

/** A file's key metadata, for display beside a hit. */
export interface HitMeta {
  tags?: string[];
  status?: string | null;
  modified?: string | null;
  extracted?: Record<string, ExtractedValue[]>;
  extractedBy?: string | null;
}

export interface SearchHit {
  n: number;
  uri: string;
  path: string;
  root: string;
  title: string;
  label: Label;
  score: number;
  snippet: string;
  heading: string;
  range: Range;
  meta?: HitMeta | null;
  marks?: string[];
}

/**
 * Something typed that was probably meant otherwise; the search ran anyway, as
 * typed: a filter typed in the query with a field no file has (`ownr:priya`, searched
 * as words), a parenthesis without its pair (left out), a value no file has where a
 * longer one exists (`owner:priya` beside "Priya Raman").
 */
export interface QueryWarning {
  /** Which text it is in. */
  where: 'query' | 'filter';
  /** The 0-based character of that text it is at. */
  position: number;
  message: string;
  /** That whole text as it was probably meant, to search instead. */
  suggestion?: string | null;
}

export interface SearchResponse {
  query: string;
  results: SearchHit[];
  index: IndexStatus;
  /**
   * The query with each word the index does not know replaced by a word it holds (titles and file names first, then passages' words), such that the same search lists something; null when every word is known or no correction finds anything.
   */
  didYouMean?: string | null;
  /** What in the query or filter looks mistyped. */
  warnings?: QueryWarning[];
}

/**
 * The numbered list "file N" means changed other than by the editor's own search:
 * the panel shows it, with the query its numbers belong to.
 */
export interface ListChanged {
  query: string;
  results: SearchHit[];
  origin: ListOrigin;
  index?: IndexStatus | null;
}

export interface OpenResultParams {
  n: number;
}

export interface OpenResultResponse {
  uri: string;
  path: string;
  range: Range;
}

/** One earlier turn of a conversation, as the client shows it. */
export interface ChatTurn {
  question: string;
  answer: string;
}

/** Lines of a file, 1-based and inclusive, as an editor shows a selection. */
export interface LineSpan {
  start: number;
  end: number;
}

export interface AskParams {
  /** The question. */
  question: string;
  /** Focus on this file (workspace-relative path) only. */
  file?: string | null;
  /** Or: focus on result n of your last search. */
  n?: number | null;
  /**
   * With `file`: only these lines of it (the editor's selection); the answer is made from them alone, as passages given to the model.
   */
  lines?: LineSpan | null;
  conversationId?: string | null;
  /**
   * The conversation so far, as the client keeps it, oldest first; it replaces what the server remembers of `conversation_id`: a conversation reopened from the client's history (after a restart too), an answer regenerated (the turns before it), a question edited and sent again (the turns before that question).
   */
  history?: ChatTurn[] | null;
}

/** Stop the caller's running asks, as the user's Stop does. */
export type StopAskParams = Record<string, never>;

export interface StopAskResponse {
  /** How many asks were told to stop. */
  stopped: number;
}

export interface Source {
  n?: number | null;
  uri: string;
  path: string;
  range: Range;
}

export interface Step {
  kind: AskEventKind;
  text: string;
  tool?: string | null;
  args?: Record<string, unknown> | null;
}

export interface Usage {
  calls?: number;
  promptTokens?: number;
  completionTokens?: number;
  seconds?: number;
}

export interface AskResponse {
  answer: string;
  sources: Source[];
  stop: StopReason;
  steps: Step[];
  usage: Usage;
  mode?: AskMode;
  grounded?: boolean;
  conversationId?: string | null;
  /**
   * Citations the model wrote that name no passage it was given (as it wrote them: `[7]`, `[docs/x.md:3]`), taken out of the answer.
   */
  dropped?: string[];
  /**
   * The one verdict to show: supported / not supported by the notes / no model; null for a question back, an error or a stop. `mode` is its small print.
   */
  verdict?: AskVerdict | null;
  /**
   * Why the answer was made in its mode: `smollm2 does not call tools`, `qwen2.5:7b claims to call tools, but it answered without calling a tool`.
   */
  modeReason?: string | null;
  /**
   * The model's text when the check found it unsupported: it is in `answer` after the quotes, and a client folds it ("The model's answer is not supported by your notes — show it").
   */
  folded?: string | null;
}

/**
 * One step of a running `kb/ask`. The answer's text comes as it is written: `answer`
 * events with `args.piece` true carry new text (`text`) to add to the pending answer, or
 * with `args.replace` true the whole pending answer from now on, about every 100 ms; the
 * final `answer` event, without `piece`, is the whole answer.
 */
export interface AskEvent {
  askId: string;
  kind: AskEventKind;
  text: string;
  tool?: string | null;
  args?: Record<string, unknown> | null;
}

export interface SummarizeParams {
  /** The file's workspace-relative path. */
  file?: string | null;
  /** Or: result n of your last search. */
  n?: number | null;
}

export interface SummarizeResponse {
  path: string;
  summary: string;
  cached: boolean;
  extractive?: boolean;
}

export interface RelatedParams {
  uri?: string | null;
  path?: string | null;
  limit?: number;
  excludeLinked?: boolean;
  numbered?: boolean;
}

export interface RelatedResponse {
  path: string;
  results: SearchHit[];
  index: IndexStatus;
}

export interface SchemaParams {
  /**
   * Also list every value a model extracted from each note: kept (with the note's words it was read from) or rejected (with the reason).
   */
  extracted?: boolean;
}

export type ExamplesParams = Record<string, never>;

/**
 * Examples made from the open index's own titles, paths and metadata (never from a
 * sample): what a welcome offers to try. Empty lists where the index has nothing to
 * show (no files, no tags).
 */
export interface ExamplesResponse {
  /** Queries to search for. */
  searches?: string[];
  /** Questions to ask. */
  questions?: string[];
  /** Filter terms files of this index have: tag:… */
  filters?: string[];
}

export interface SchemaValue {
  value: string;
  count: number;
}

/**
 * How many values of one field one model gave: kept (the note says them) and
 * rejected (not stored).
 */
export interface FieldExtraction {
  model: string;
  kept: number;
  rejected: number;
}

export interface SchemaField {
  name: string;
  types: string[];
  files: number;
  top?: SchemaValue[];
  extracted?: number;
  models?: FieldExtraction[];
}

/**
 * One value a model gave for a note: kept, with the span of the note's words it was
 * read from, or rejected, with the reason and the words the model gave.
 */
export interface ExtractedClaim {
  field: string;
  value: string;
  kept: boolean;
  valid?: boolean;
  reason?: string | null;
  evidence: string;
  range?: Range | null;
}

export interface NoteExtraction {
  path: string;
  model: string;
  values: ExtractedClaim[];
}

export interface SchemaResponse {
  files: number;
  fields: SchemaField[];
  notes?: NoteExtraction[] | null;
}

/**
 * A page of one file's lines, numbered from 1: what `read_file` and `open_result`
 * return. `range` (0-based, as in `kb/openResult`) covers the lines shown.
 */
export interface FileLines {
  uri: string;
  path: string;
  range: Range;
  startLine: number;
  endLine: number;
  totalLines: number;
  text: string;
  nextStartLine?: number | null;
  n?: number | null;
}

export interface FileEntry {
  path: string;
  uri: string;
  title: string;
  size: number;
  modified: string;
  sha256: string;
  chunks: number;
}

export interface FileListResponse {
  files: FileEntry[];
  skipped?: SkippedFile[];
}

export interface StatusParams {
  /**
   * Ask the model server again now (Retry, changed model settings) rather than answer from the last check; the answer waits for it, a few seconds at most.
   */
  probe?: boolean;
}

export interface ReindexParams {
  full?: boolean;
}

export interface IndexControlParams {
  action: IndexAction;
}

// --- requests and notifications ----------------------------------------------------------

/** Each request's params and result, so a typed `request()` helper can check both. */
export interface RequestTypes {
  'kb/search': [SearchParams, SearchResponse];
  'kb/openResult': [OpenResultParams, OpenResultResponse];
  'kb/ask': [AskParams, AskResponse];
  'kb/stopAsk': [StopAskParams, StopAskResponse];
  'kb/summarize': [SummarizeParams, SummarizeResponse];
  'kb/status': [StatusParams, IndexStatus];
  'kb/reindex': [ReindexParams, IndexStatus];
  'kb/related': [RelatedParams, RelatedResponse];
  'kb/indexControl': [IndexControlParams, IndexStatus];
  'kb/schema': [SchemaParams, SchemaResponse];
  'kb/examples': [ExamplesParams, ExamplesResponse];
}

export interface NotificationTypes {
  'kb/indexChanged': IndexStatus;
  'kb/askEvent': AskEvent;
  'kb/listChanged': ListChanged;
}

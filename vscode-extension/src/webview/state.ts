/**
 * The panel's state, kept with `setState` so a recreated webview comes back as it was, and
 * the one way to the extension (`postMessage`).
 */
import type { ServerFailure } from '../backend';
import type { FromWebview, ListOrigin, PanelTab } from '../messages';
import type { IndexStatus, LineSpan, RelatedResponse, SchemaResponse, SearchHit, SearchResponse } from '../protocol';
import type { ModelProblem } from './modelCard';
import type { ServerState } from './statusLine';
import type { Streaming, TranscriptEntry } from './transcriptTypes';

interface VsCodeApi {
  postMessage(message: FromWebview): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

interface RelatedState {
  path: string | null;
  response: RelatedResponse | null;
  message?: string;
}

interface PanelState {
  tab: PanelTab;
  query: string;
  response: SearchResponse | null;
  selected: number;
  status: IndexStatus | null;
  server: ServerState;
  serverMessage?: string;
  failure?: ServerFailure;
  secondsLeft?: number;
  /** Where the shown list was made (the panel, or KB: Search). */
  listOrigin: ListOrigin;
  transcript: TranscriptEntry[];
  /** The running ask's answer as it streams in. */
  streaming: Streaming | null;
  /** Steps blocks the user opened (by the index of their first step). */
  openSteps: number[];
  askId: number | null;
  askFile: string | null;
  /** With `askFile`: the selection of it the questions are asked over (null: the whole file). */
  askLines: LineSpan | null;
  conversationId: string | null;
  /** The kept conversation this transcript is (the workspace's history), once asked in. */
  chatId: string | null;
  summaries: Record<string, string>;
  searchError?: string;
  /** The visible results were made while indexing ran: search again once it is done. */
  rerunWhenReady: boolean;
  related: RelatedState | null;
  relatedSelected: number;
  schema: SchemaResponse | null;
  model: ModelProblem | null;
  lastQuestion: { text: string; file: string | null; lines?: LineSpan | null } | null;
  staleNote?: string;
}

const vscode = acquireVsCodeApi();

const initial: PanelState = {
  tab: 'search',
  query: '',
  response: null,
  selected: 0,
  status: null,
  server: 'starting',
  listOrigin: 'panel',
  transcript: [],
  streaming: null,
  openSteps: [],
  askId: null,
  askFile: null,
  askLines: null,
  conversationId: null,
  chatId: null,
  summaries: {},
  rerunWhenReady: false,
  related: null,
  relatedSelected: 0,
  schema: null,
  model: null,
  lastQuestion: null,
};

const restored = vscode.getState() as Partial<PanelState> | undefined;
export const state: PanelState = { ...initial, ...(restored ?? {}), askId: null, streaming: null };
// A question left pending when the page went away is no longer running.
state.transcript = state.transcript.map((e) => (e.kind === 'question' && e.pending ? { ...e, pending: false } : e));
/** Passages read for the hover card, by `passageKey` (null: could not be read). */
export const passages = new Map<string, string | null>();

export function post(message: FromWebview): void {
  vscode.postMessage(message);
}

export function save(): void {
  vscode.setState({ ...state, askId: null, streaming: null });
}

export function searchHits(): SearchHit[] {
  return state.response?.results ?? [];
}

export function relatedHits(): SearchHit[] {
  return state.related?.response?.results ?? [];
}

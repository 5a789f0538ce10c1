/** A fake KbBackend and sample payloads for the unit tests. */
import * as vscode from './vscodeStub';
import type { KbBackend, ServerState } from '../../src/backend';
import type { AskEvent, IndexStatus, MethodName, RequestTypes, SearchHit, SearchResponse } from '../../src/protocol';

export const READY: IndexStatus = {
  state: 'ready',
  files: 3,
  chunks: 12,
  pending: 0,
  embedder: 'minilm',
  store: '/tmp/store',
  llm: { host: 'http://127.0.0.1:11434', model: 'qwen2.5:7b', reachable: false },
  readOnly: false,
  roots: ['/ws'],
  skipped: [],
  message: null,
};

export function hit(n: number, path: string, extra: Partial<SearchHit> = {}): SearchHit {
  return {
    n,
    uri: `file:///ws/${path}`,
    path,
    root: '/ws',
    title: path.replace(/\.md$/, ''),
    label: n === 1 ? 'filename match' : 'context match',
    score: 1 / n,
    snippet: `About ${path}: install the indexer`,
    heading: 'Setup › Install',
    range: { start: { line: 4 * n, character: 0 }, end: { line: 4 * n + 3, character: 0 } },
    ...extra,
  };
}

export function searchResponse(query: string, hits: SearchHit[]): SearchResponse {
  return { query, results: hits, index: READY };
}

type Handler<M extends MethodName> = (
  params: RequestTypes[M][0],
  token?: vscode.CancellationTokenSource['token'],
) => Promise<RequestTypes[M][1]>;

export class FakeBackend implements KbBackend {
  status: IndexStatus | undefined = READY;
  state: ServerState = 'running';
  problem: string | undefined;
  failure: KbBackend['failure'];
  secondsLeft: number | undefined;
  cli: string | undefined;
  answers: { mode?: string; stop: string }[] = [];
  statusRefreshes = 0;
  requests: { method: string; params: unknown; token?: { isCancellationRequested: boolean } }[] = [];
  handlers: Partial<{ [M in MethodName]: Handler<M> }> = {};
  logShown = 0;
  restarts = 0;
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly asks = new vscode.EventEmitter<AskEvent>();
  onDidChange = this.changed.event as unknown as KbBackend['onDidChange'];
  onAskEvent = this.asks.event as unknown as KbBackend['onAskEvent'];

  on<M extends MethodName>(method: M, handler: Handler<M>): this {
    (this.handlers as Record<string, unknown>)[method] = handler;
    return this;
  }

  /** A handler for a method the typed contract does not list yet (kb/related, …). */
  onAny(method: string, handler: (params: never) => Promise<unknown>): this {
    (this.handlers as Record<string, unknown>)[method] = handler;
    return this;
  }

  request<M extends MethodName>(method: M, params: RequestTypes[M][0], token?: unknown): Promise<RequestTypes[M][1]> {
    this.requests.push({ method, params, token: token as { isCancellationRequested: boolean } });
    const handler = this.handlers[method];
    if (!handler) {
      // What a server answers for a method it does not have.
      return Promise.reject(Object.assign(new Error(`Unhandled method ${method}`), { code: -32601 }));
    }
    return handler(params, token as vscode.CancellationTokenSource['token']);
  }

  updateStatus(status: IndexStatus): void {
    this.status = status;
    this.changed.fire();
  }

  setState(state: ServerState, problem?: string, failure?: KbBackend['failure']): void {
    this.state = state;
    this.problem = problem;
    this.failure = failure;
    this.changed.fire();
  }

  noteAnswer(response: { mode?: string; stop: string }): void {
    this.answers.push(response);
  }

  refreshStatus(): Promise<void> {
    this.statusRefreshes++;
    return Promise.resolve();
  }

  fireAsk(event: AskEvent): void {
    this.asks.fire(event);
  }

  restart(): Promise<void> {
    this.restarts++;
    return Promise.resolve();
  }

  showLog(): void {
    this.logShown++;
  }
}

export const tick = (ms = 0): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise with its resolve/reject handles. */
export function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A typed request over anything that sends JSON-RPC requests (protocol.ts has the types). */
import type { MethodName, RequestTypes } from './protocol';

/** Anything that can send a request and observe cancellation: the language client, or a
 * bare `vscode-jsonrpc` connection in the contract test. */
export interface RequestSender<Token> {
  sendRequest<R>(method: string, params: unknown, token?: Token): Promise<R>;
}

/** A typed request: `request(conn, Methods.search, {query})` returns a `SearchResponse`. */
export function request<M extends MethodName, Token>(
  sender: RequestSender<Token>,
  method: M,
  params: RequestTypes[M][0],
  token?: Token,
): Promise<RequestTypes[M][1]> {
  return sender.sendRequest<RequestTypes[M][1]>(method, params, token);
}

/** kb/status params asking the server to probe the model afresh rather than answer from
 * its last probe (Retry, a model settings change). Not in the wire contract yet: a server
 * without the flag ignores it (unknown params are ignored). */
export const STATUS_PROBE: Record<string, unknown> = { probe: true };

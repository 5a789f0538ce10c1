/**
 * Requests of the wire contract that a server may not offer yet (an older kb-lsp, or a
 * build where the feature is off): `kb/related`, `kb/schema`, `kb/indexControl`,
 * `kb/stopAsk`, `kb/examples`. Each
 * answers `undefined` when the server says the method does not exist, so the UI can say
 * "not available" instead of failing.
 */
import type * as vscode from 'vscode';
import type { KbBackend } from './backend';
import { Methods, type RequestTypes } from './protocol';
import { errorCode } from './util';

export const OptionalMethods = {
  related: Methods.related,
  schema: Methods.schema,
  indexControl: Methods.indexControl,
  stopAsk: Methods.stopAsk,
  examples: Methods.examples,
} as const;

/** Their params and results, from the generated protocol (never copied here). */
type OptionalTypes = Pick<RequestTypes, (typeof OptionalMethods)[keyof typeof OptionalMethods]>;

const METHOD_NOT_FOUND = -32601;

export async function optionalRequest<M extends keyof OptionalTypes>(
  backend: KbBackend,
  method: M,
  params: OptionalTypes[M][0],
  token?: vscode.CancellationToken,
): Promise<OptionalTypes[M][1] | undefined> {
  try {
    return await backend.request(method, params, token);
  } catch (err) {
    if (errorCode(err) === METHOD_NOT_FOUND) {
      return undefined;
    }
    throw err;
  }
}

/**
 * Checks the server's payloads against protocol.ts, using the generated `Shapes` (each
 * payload's declared fields) and `Nested` (which fields hold another payload).
 */
import type * as P from '../../src/protocol';
import { Nested, Shapes, type ShapeName } from './shapes';

/**
 * Every key the server sent is declared, and (`optional` ones aside) every declared key is
 * sent; the same, without exceptions, for every payload nested inside.
 */
export function assertShape(name: ShapeName, value: unknown, optional: readonly string[] = []): void {
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
  for (const [field, inner] of Object.entries(Nested[name] ?? {})) {
    const held: unknown = (value as Record<string, unknown>)[field];
    for (const item of nestedItems(held)) {
      if (item !== null && item !== undefined) {
        assertShape(inner, item);
      }
    }
  }
}

/** The values a nested field holds: a list's items, or a map of lists' items
 * (`HitMeta.extracted`: each field's name → its values; `{}` when none), or the one value. */
function nestedItems(held: unknown): unknown[] {
  if (Array.isArray(held)) {
    return held;
  }
  if (held === null || held === undefined) {
    return [];
  }
  if (typeof held !== 'object') {
    return [held]; // not an object: assertShape says so
  }
  const values = Object.values(held);
  return values.every((v) => Array.isArray(v)) ? values.flat() : [held];
}

export function assertRange(value: unknown): void {
  assertShape('Range', value);
  const range = value as P.Range;
  for (const pos of [range.start, range.end]) {
    if (!Number.isInteger(pos.line) || !Number.isInteger(pos.character) || pos.line < 0 || pos.character < 0) {
      throw new Error(`bad position ${JSON.stringify(pos)}`);
    }
  }
}

export function assertIndexStatus(value: unknown): void {
  assertShape('IndexStatus', value);
  const status = value as P.IndexStatus;
  if (!['indexing', 'ready', 'error'].includes(status.state)) {
    throw new Error(`bad state ${status.state}`);
  }
}

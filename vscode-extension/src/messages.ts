/** Messages between the extension and the panel webview. Shared by both sides. */
import type { AskEvent, AskResponse, IndexAction, IndexStatus, Range, RelatedResponse, SchemaResponse, SearchResponse } from './protocol';

export type PanelTab = 'search' | 'related' | 'ask';

export type ToWebview =
  | { type: 'status'; status: IndexStatus | null; server: 'starting' | 'running' | 'stopped' | 'failed'; message?: string }
  | { type: 'results'; response: SearchResponse }
  | { type: 'searchError'; query: string; message: string }
  | { type: 'setQuery'; query: string; run: boolean }
  | { type: 'focusSearch' }
  | { type: 'focusAsk'; file?: string | null }
  | { type: 'askStarted'; id: number; question: string; file?: string | null }
  | { type: 'askEvent'; id: number; event: AskEvent }
  | { type: 'askDone'; id: number; response: AskResponse }
  | { type: 'askFailed'; id: number; message: string }
  | { type: 'summary'; path: string; summary: string; cached: boolean }
  /** The active Markdown file's related notes (`response` null: no file, or not indexed). */
  | { type: 'related'; path: string | null; response: RelatedResponse | null; message?: string }
  | { type: 'schema'; schema: SchemaResponse | null }
  /** A result could not be opened (its file was deleted or moved): say so, run the list again. */
  | { type: 'stale'; path: string; message: string }
  | { type: 'showTab'; tab: PanelTab };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'search'; query: string }
  | { type: 'open'; uri: string; range: Range; path?: string; list?: 'search' | 'related' }
  | { type: 'openLink'; href: string }
  | { type: 'ask'; question: string; file?: string | null; conversationId?: string | null }
  | { type: 'cancelAsk' }
  | { type: 'indexControl'; action: IndexAction }
  | { type: 'related' }
  | { type: 'schema' }
  | { type: 'copy'; text: string }
  | { type: 'openSettings'; query: string };

export function isFromWebview(value: unknown): value is FromWebview {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

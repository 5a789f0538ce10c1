/** Messages between the extension and the panel webview. Shared by both sides. */
import type { AskEvent, AskResponse, IndexStatus, Range, SearchResponse } from './protocol';

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
  | { type: 'summary'; path: string; summary: string; cached: boolean };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'search'; query: string }
  | { type: 'open'; uri: string; range: Range }
  | { type: 'openLink'; href: string }
  | { type: 'ask'; question: string; file?: string | null; conversationId?: string | null }
  | { type: 'cancelAsk' }
  | { type: 'reindex' };

export function isFromWebview(value: unknown): value is FromWebview {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

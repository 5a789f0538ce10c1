/** Messages between the extension and the panel webview. Shared by both sides. */
import type { ServerFailure } from './backend';
import type { ChatSummary, StoredChat } from './chatHistory';
import type { EditorContext } from './editorContext';
import type { AskEvent, AskResponse, ChatTurn, ExamplesResponse, IndexAction, IndexStatus, LineSpan, Range, RelatedResponse, SchemaResponse, SearchResponse } from './protocol';

export type PanelTab = 'search' | 'related' | 'ask';

/** Where a numbered list came from: the panel's own search box, `KB: Search` (the quick
 * pick, the command palette), or — told by the server (`kb/listChanged`) — a question's
 * own search (`agent`), `kb search` on the same index (`cli`), an MCP client (`mcp`). The
 * panel shows the last one, whichever made it. */
export type ListOrigin = 'panel' | 'quickPick' | 'agent' | 'cli' | 'mcp';

/** Commands the page asks the extension to run. */
export type PanelCommand = 'showLog' | 'restartServer' | 'openServerSettings' | 'chooseModel' | 'probeModel';

export type ToWebview =
  | {
      type: 'status';
      status: IndexStatus | null;
      server: 'starting' | 'running' | 'stopped' | 'failed';
      message?: string;
      /** Why the server is not running, fact by fact, with what fixes it. */
      failure?: ServerFailure;
      /** The running sync's time left (seconds), when estimated. */
      secondsLeft?: number;
    }
  | { type: 'results'; response: SearchResponse; origin?: ListOrigin }
  | { type: 'searchError'; query: string; message: string }
  | { type: 'setQuery'; query: string; run: boolean }
  | { type: 'focusSearch' }
  | { type: 'focusAsk'; file?: string | null }
  | { type: 'askStarted'; id: number; question: string; file?: string | null; lines?: LineSpan | null }
  | { type: 'askEvent'; id: number; event: AskEvent }
  | { type: 'askDone'; id: number; response: AskResponse }
  | { type: 'askFailed'; id: number; message: string }
  | { type: 'summary'; path: string; summary: string; cached: boolean; quiet?: boolean }
  /** The active Markdown file's related notes (`response` null: no file, or not indexed). */
  | { type: 'related'; path: string | null; response: RelatedResponse | null; message?: string }
  | { type: 'schema'; schema: SchemaResponse | null }
  /** A result could not be opened (its file was deleted or moved): say so, run the list again. */
  | { type: 'stale'; path: string; message: string }
  | { type: 'showTab'; tab: PanelTab }
  /** A result's passage as the file has it now (`text` null: unreadable), for the hover. */
  | { type: 'passage'; key: string; text: string | null }
  /** The conversations kept for this workspace, the most recent first. */
  | { type: 'chats'; chats: ChatSummary[] }
  /** A kept conversation, reopened (null: it was deleted meanwhile). */
  | { type: 'chat'; chat: StoredChat | null }
  /** What the welcome offers to try, made from the open index (null: none to offer). */
  | { type: 'examples'; examples: ExamplesResponse | null }
  /** What the Ask box may attach: the last editor's file and selection (null: none). */
  | { type: 'editorContext'; context: EditorContext | null };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'search'; query: string }
  | { type: 'open'; uri: string; range: Range; path?: string; list?: 'search' | 'related' }
  | { type: 'openLink'; href: string }
  /** `history`: the conversation so far (a reopened one goes on after a reload). */
  | { type: 'ask'; question: string; file?: string | null; lines?: LineSpan | null; conversationId?: string | null; history?: ChatTurn[] }
  | { type: 'cancelAsk' }
  | { type: 'indexControl'; action: IndexAction }
  | { type: 'related' }
  | { type: 'schema' }
  | { type: 'copy'; text: string }
  | { type: 'openSettings'; query: string }
  | { type: 'passage'; key: string; uri: string; range: Range }
  | { type: 'command'; command: PanelCommand }
  /** Keep a conversation (after each answer); one without a question is dropped. */
  | { type: 'saveChat'; id: string; title: string; transcript: unknown[]; file?: string | null }
  | { type: 'listChats' }
  | { type: 'openChat'; id: string }
  | { type: 'deleteChat'; id: string }
  /** Put a code block of an answer at the last editor's cursor. */
  | { type: 'insert'; text: string }
  /** What the Ask box may attach, now. */
  | { type: 'editorContext' }
  /** What the welcome may offer to try (the extension answers `examples`). */
  | { type: 'examples' };

export function isFromWebview(value: unknown): value is FromWebview {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

/** What the Ask transcript holds: questions, steps, answers, errors and summaries. */
import type { AskEvent, AskResponse, LineSpan, Source } from '../protocol';

export type StepEvent = Pick<AskEvent, 'kind' | 'text' | 'tool' | 'args'>;

export type TranscriptEntry =
  | { kind: 'question'; text: string; file?: string | null; lines?: LineSpan | null; pending?: boolean }
  | { kind: 'step'; event: StepEvent }
  /** `lead`: the answer's first paragraph when the model card already says it. */
  | { kind: 'answer'; response: AskResponse; lead?: string }
  | { kind: 'error'; text: string }
  | { kind: 'summary'; path: string; summary: string; cached: boolean };

/** The answer of the running ask as it streams in (`answer` events). */
export interface Streaming {
  text: string;
  /** Whether the model has been silent since (a "Waiting for the model" came last). */
  waiting?: string;
  /** The answer's sources once the server listed them (grounded mode, before the model
   * writes): the streaming text's `[n]` link to them. */
  sources?: Source[];
}

/** The running ask: its steps and streamed answer as they arrive, and how it ends. */
import type { ToWebview } from '../messages';
import type { AskResponse, Source } from '../protocol';
import { modelProblem } from './modelCard';
import { isWaiting, streamedText } from './steps';
import { fallbackReason } from './transcriptRender';
import { state } from './state';

/** One `kb/askEvent` of the running ask: a step, or a piece of the answer. */
export function onAskEvent(event: Extract<ToWebview, { type: 'askEvent' }>['event']): void {
  const sources = listedSources(event.args) ?? state.streaming?.sources;
  if (event.kind === 'answer') {
    state.streaming = { text: streamedText(state.streaming?.text ?? '', event), sources };
    return;
  }
  state.transcript.push({ kind: 'step', event });
  // "Waiting for the model" lasts until the model says something.
  state.streaming = { text: state.streaming?.text ?? '', waiting: isWaiting(event) ? event.text : undefined, sources };
}

/** The sources a step lists (`args.sources`: grounded mode's passages, before the answer). */
export function listedSources(args: Record<string, unknown> | null | undefined): Source[] | undefined {
  const sources = args?.sources;
  return Array.isArray(sources) ? (sources as Source[]) : undefined;
}

/** The running ask ended without its answer: what streamed in stays, marked. */
export function abandonAsk(message: string): void {
  const partial = state.streaming?.text.trim();
  const stopped = message === 'Stopped.';
  // A stop is the user's choice, not an error: it reads "Stopped." under what came (if anything).
  if (partial || stopped) {
    state.transcript.push({
      kind: 'answer',
      response: { answer: partial ?? '', sources: [], stop: stopped ? 'cancelled' : 'error', steps: [], usage: {} },
    });
  }
  if (!stopped) {
    state.transcript.push({ kind: 'error', text: message });
  }
  state.streaming = null;
}

export function pendingQuestionDone(): void {
  state.transcript = state.transcript.map((e) => (e.kind === 'question' && e.pending ? { ...e, pending: false } : e));
}

export function finishAsk(response: AskResponse): void {
  pendingQuestionDone();
  let lead: string | undefined;
  if (response.mode === 'fallback') {
    // The model's trouble goes into the one card; the answer keeps only the passages.
    const start = state.transcript.map((e) => e.kind).lastIndexOf('question');
    const message = fallbackReason(state.transcript.slice(start)) ?? response.answer.split(/\n\s*\n/)[0]?.trim() ?? '';
    state.model = modelProblem(message);
    const first = response.answer.split(/\n\s*\n/)[0]?.trim() ?? '';
    lead = first === message.trim() ? first : undefined;
  } else if (response.stop !== 'error') {
    state.model = null; // a model answered
  }
  if (response.stop === 'cancelled') {
    // Stopped (`kb/stopAsk`): the server's answer is a placeholder; what streamed in stays.
    response = { ...response, answer: state.streaming?.text.trim() ?? '' };
  }
  state.transcript.push({ kind: 'answer', response, lead });
  state.conversationId = response.conversationId ?? state.conversationId;
  state.askId = null;
  state.streaming = null;
}

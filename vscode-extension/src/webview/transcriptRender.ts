/** The Ask transcript as HTML: its entries, steps folded, the running answer last. */
import { renderAnswer } from './answer';
import { spanText } from './chatRender';
import { escapeHtml } from './html';
import { renderMarkdown } from './markdown';
import { isWaiting, renderStep, stepsSummary } from './steps';
import type { Streaming, TranscriptEntry } from './transcriptTypes';

export function renderEntry(entry: TranscriptEntry, index: number): string {
  switch (entry.kind) {
    case 'question':
      return (
        `<div class="question${entry.pending ? ' pending' : ''}"><span class="q-mark">Q</span><span class="q-text">${escapeHtml(entry.text)}` +
        `${entry.file ? ` <span class="q-file">(about <code>${escapeHtml(entry.file)}</code>${entry.lines ? ` ${spanText(entry.lines)}` : ''})</span>` : ''}</span>` +
        `</div>`
      );
    case 'step':
      return isWaiting(entry.event) ? '' : renderStep(entry.event);
    case 'answer':
      return renderAnswer(entry.response, index, entry.lead);
    case 'error':
      return `<div class="error-line">${escapeHtml(entry.text)}</div>`;
    case 'summary':
      return `<div class="summary"><div class="summary-title">Summary of <code>${escapeHtml(entry.path)}</code>${entry.cached ? ' <span class="badge">cached</span>' : ''}</div><div class="markdown">${renderMarkdown(entry.summary)}</div></div>`;
  }
}

const NO_MODEL = /^No model:\s*/;

/** Why an ask fell back, from its steps: the server's "No model: …" status, else its first error. */
export function fallbackReason(entries: readonly TranscriptEntry[]): string | undefined {
  for (const entry of entries) {
    if (entry.kind === 'step' && entry.event.kind === 'status' && NO_MODEL.test(entry.event.text)) {
      return entry.event.text.replace(NO_MODEL, '');
    }
  }
  const error = entries.find((e) => e.kind === 'step' && e.event.kind === 'error');
  return error?.kind === 'step' ? error.event.text : undefined;
}

function isModelTrouble(entry: TranscriptEntry): boolean {
  return entry.kind === 'step' && (entry.event.kind === 'error' || (entry.event.kind === 'status' && NO_MODEL.test(entry.event.text)));
}

export interface TranscriptView {
  /** The ask still runs: its steps stay open and its answer streams in. */
  pending?: boolean;
  /** The answer streamed so far, for the running ask. */
  streaming?: Streaming | null;
  /** Steps blocks (by the index of their first step) the user opened. */
  openSteps?: ReadonlySet<number>;
}

/**
 * The transcript. An ask's steps stream in one by one; once it has its answer they fold
 * into one line ("Searched 2×, read 1 file") that opens on a click. Model trouble is not
 * repeated line by line: when an ask fell back (no model answered), its "No model: …"
 * status and its errors are left out — the model card says it once. "Waiting for the
 * model" shows only while the model is silent: at the bottom, as the last thing said.
 */
export function renderTranscript(entries: readonly TranscriptEntry[], view: TranscriptView = {}): string {
  const fellBack = new Set<number>();
  let start = 0;
  entries.forEach((entry, i) => {
    if (entry.kind === 'question') {
      start = i;
    } else if (entry.kind === 'answer' && entry.response.mode === 'fallback') {
      for (let k = start; k < i; k++) {
        fellBack.add(k);
      }
    }
  });
  const out: string[] = [];
  for (let i = 0; i < entries.length; ) {
    const entry = entries[i];
    if (entry?.kind !== 'step') {
      out.push(entry ? renderEntry(entry, i) : '');
      i += 1;
      continue;
    }
    let end = i;
    while (entries[end]?.kind === 'step') {
      end += 1;
    }
    const steps = entries.slice(i, end).filter((e): e is Extract<TranscriptEntry, { kind: 'step' }> => e.kind === 'step');
    const shown = entries
      .slice(i, end)
      .map((e, k) => (fellBack.has(i + k) && isModelTrouble(e) ? '' : renderEntry(e, i + k)))
      .join('');
    const live = Boolean(view.pending) && end === entries.length;
    if (live) {
      out.push(`<div class="steps live">${shown}</div>`);
    } else if (shown) {
      const open = view.openSteps?.has(i) ? ' open' : '';
      out.push(
        `<details class="steps" data-first="${i}"${open}><summary>${escapeHtml(stepsSummary(steps.map((s) => s.event)))}</summary>${shown}</details>`,
      );
    }
    i = end;
  }
  if (view.pending && view.streaming?.text) {
    out.push(
      // Citations link as they arrive: `[path:lines]` at once, `[n]` once the sources are listed.
      `<div class="answer pending-answer" aria-busy="true"><div class="markdown">${renderMarkdown(view.streaming.text, { entry: 'streaming', sources: view.streaming.sources ?? [] })}</div></div>`,
    );
  }
  const waiting = view.pending ? view.streaming?.waiting : undefined;
  if (waiting) {
    out.push(`<div class="step status-step waiting">${escapeHtml(waiting)}</div>`);
  }
  return out.join('');
}

/** The agent's steps as the transcript shows them, and the streamed answer's text. */
import { escapeHtml } from './html';
import type { StepEvent } from './transcriptTypes';

function compactArgs(args: Record<string, unknown> | null | undefined): string {
  if (!args || Object.keys(args).length === 0) {
    return '';
  }
  const json = JSON.stringify(args);
  return json.length > 200 ? `${json.slice(0, 199)}…` : json;
}

/** One streamed step as a line: "Thinking: …", "Calling `tool` with {…}", "Result: …". */
export function renderStep(event: StepEvent): string {
  switch (event.kind) {
    case 'thinking':
      return `<div class="step thinking"><span class="step-kind">Thinking:</span> ${escapeHtml(event.text)}</div>`;
    case 'status':
      return `<div class="step status-step">${escapeHtml(event.text)}</div>`;
    case 'tool_call': {
      const path = event.args?.path;
      if (event.tool === 'summarize_document' && typeof path === 'string') {
        // The server's own summarizer, not a tool a model called (grounded mode calls none):
        // said as what it does, never as a raw call with its JSON (issue 39, defect 8).
        return `<div class="step tool-call"><span class="step-kind">Summarizing</span> <code>${escapeHtml(path)}</code></div>`;
      }
      const args = compactArgs(event.args);
      const text = event.text && !event.tool ? ` ${escapeHtml(event.text)}` : '';
      return (
        `<div class="step tool-call"><span class="step-kind">Calling</span> <code>${escapeHtml(event.tool ?? '?')}</code>` +
        (args ? ` with <code>${escapeHtml(args)}</code>` : '') +
        `${text}</div>`
      );
    }
    case 'tool_result': {
      const text = event.text.length > 300 ? `${event.text.slice(0, 299)}…` : event.text;
      return `<div class="step tool-result"><span class="step-kind">Result${event.tool ? ` of <code>${escapeHtml(event.tool)}</code>` : ''}:</span> ${escapeHtml(text)}</div>`;
    }
    case 'error':
      return `<div class="step step-error"><span class="step-kind">Error:</span> ${escapeHtml(event.text)}</div>`;
    default:
      return '';
  }
}

/**
 * The answer so far after an `answer` event. A piece (`args.piece`) adds to it, or starts
 * it over with `args.replace` (the model went back to its tools after all); an event
 * without `piece` is the whole answer, as a server that does not stream sends it once at
 * the end — it replaces what came, so a server that sends both never shows it twice.
 */
export function streamedText(sofar: string, event: { text: string; args?: Record<string, unknown> | null }): string {
  if (event.args?.piece !== true) {
    return event.text;
  }
  return (event.args.replace === true ? '' : sofar) + event.text;
}

const WAITING = /^Waiting for the model\b/;

/** A "Waiting for the model…" status: said only while the model is silent. */
export function isWaiting(event: StepEvent): boolean {
  return event.kind === 'status' && WAITING.test(event.text);
}

const SEARCH_TOOLS = new Set(['search_knowledge_base', 'search_in_document']);
const READ_TOOLS = new Set(['read_file', 'summarize_document']);

const GIVEN = /^(\d+) passages? for the model\b/;

/** An ask's steps in one line: "Searched 2×, read 1 file". */
export function stepsSummary(events: readonly StepEvent[]): string {
  const calls = events.filter((e) => e.kind === 'tool_call');
  const searches = calls.filter((e) => SEARCH_TOOLS.has(e.tool ?? '')).length;
  const read = new Set(
    calls
      .filter((e) => READ_TOOLS.has(e.tool ?? ''))
      .map((e, i) => {
        const args = e.args ?? {};
        const file = args.path ?? args.file ?? args.n;
        return typeof file === 'string' || typeof file === 'number' ? String(file) : `#${i}`;
      }),
  ).size;
  const listed = calls.some((e) => e.tool === 'list_files');
  const others = calls.filter((e) => !SEARCH_TOOLS.has(e.tool ?? '') && !READ_TOOLS.has(e.tool ?? '') && e.tool !== 'list_files').length;
  // Grounded mode has no tool calls: the server gave the model numbered passages.
  const given = events.map((e) => (e.kind === 'tool_result' && !e.tool ? GIVEN.exec(e.text) : null)).find((m) => m !== null);
  const parts = [
    ...(given ? [`gave the model ${given[1]} passage${given[1] === '1' ? '' : 's'}`] : []),
    ...(searches ? [`searched ${searches}×`] : []),
    ...(read ? [`read ${read} file${read === 1 ? '' : 's'}`] : []),
    ...(listed ? ['listed the files'] : []),
    ...(others ? [`${others} other step${others === 1 ? '' : 's'}`] : []),
  ];
  const shown = events.filter((e) => !isWaiting(e)).length;
  const text = parts.length > 0 ? parts.join(', ') : `${shown} step${shown === 1 ? '' : 's'}`;
  const errors = events.filter((e) => e.kind === 'error').length;
  const said = errors ? `${text}, ${errors} error${errors === 1 ? '' : 's'}` : text;
  return said.charAt(0).toUpperCase() + said.slice(1);
}

/**
 * A clarification's choices: the numbered list items of the question ("1. `path` — title").
 * Choosing one replies "file N", which the server resolves against that list.
 */
export function clarifyChoices(answer: string): { question: string; choices: { n: number; label: string }[] } {
  const choices: { n: number; label: string }[] = [];
  const rest: string[] = [];
  for (const line of answer.split('\n')) {
    const item = /^\s*(\d+)[.)]\s+(.+?)\s*$/.exec(line);
    if (item?.[1] && item[2]) {
      choices.push({ n: Number(item[1]), label: item[2].replace(/`/g, '') });
    } else {
      rest.push(line);
    }
  }
  return { question: rest.join('\n').trim(), choices };
}

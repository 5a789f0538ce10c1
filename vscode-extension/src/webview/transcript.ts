/** Clicks in the Ask transcript: citations and sources open, code and answers copy, turns re-ask. */
import { groupSources } from './answer';
import { ask, askAgain } from './ask';
import { transcriptBox } from './dom';
import { post, save, state } from './state';

/** `[n]` in an answer, or in the answer streaming in: source n at its lines. */
function openCitation(cite: HTMLElement): void {
  const entry = cite.dataset.entry === 'streaming' ? undefined : state.transcript[Number(cite.dataset.entry)];
  const sources = cite.dataset.entry === 'streaming' ? (state.streaming?.sources ?? []) : entry?.kind === 'answer' ? entry.response.sources : [];
  const found = sources[Number(cite.dataset.source)];
  if (found) {
    post({ type: 'open', uri: found.uri, range: found.range, path: found.path });
  }
}

/** A file of an answer's sources list, or one of its line ranges. */
function openSource(source: HTMLElement): void {
  const entry = state.transcript[Number(source.dataset.entry)];
  if (entry?.kind === 'answer') {
    const group = groupSources(entry.response.sources)[Number(source.dataset.group)];
    const range = group?.ranges[Number(source.dataset.range)]?.range;
    if (group && range) {
      post({ type: 'open', uri: group.uri, range, path: group.path });
    }
  }
}

function onTranscriptClick(event: MouseEvent): void {
  const target = event.target as HTMLElement;
  const cite = target.closest<HTMLElement>('a.cite[data-source]');
  const source = target.closest<HTMLElement>('a.source, a.source-range');
  const choice = target.closest<HTMLElement>('button.choice');
  const copy = target.closest<HTMLButtonElement>('button.copy-answer');
  const link = target.closest<HTMLAnchorElement>('a');
  const codeTool = target.closest<HTMLButtonElement>('button.code-copy, button.code-insert');
  const turnTool = target.closest<HTMLButtonElement>('button.turn-edit, button.turn-regenerate');
  if (turnTool) {
    const questions = state.transcript.filter((e) => e.kind === 'question').length;
    askAgain(turnTool.dataset.turn ? Number(turnTool.dataset.turn) : questions - 1, turnTool.classList.contains('turn-regenerate'));
  } else if (codeTool) {
    // The code block right below its tools, as its text (no markup).
    const code = codeTool.closest('.code-tools')?.nextElementSibling?.textContent ?? '';
    post(codeTool.classList.contains('code-copy') ? { type: 'copy', text: code } : { type: 'insert', text: code });
  } else if (copy) {
    const entry = state.transcript[Number(copy.dataset.entry)];
    if (entry?.kind === 'answer') {
      post({ type: 'copy', text: entry.response.answer });
      copy.textContent = 'Copied';
    }
  } else if (cite) {
    event.preventDefault();
    openCitation(cite);
  } else if (source) {
    event.preventDefault();
    openSource(source);
  } else if (choice) {
    const entry = state.transcript[Number(choice.dataset.entry)];
    if (entry?.kind === 'answer' && choice.dataset.choice) {
      ask(`file ${choice.dataset.choice}`);
    }
  } else if (link) {
    event.preventDefault();
    const href = link.getAttribute('href');
    if (href && href !== '#') {
      post({ type: 'openLink', href });
    }
  }
}

export function wireTranscript(): void {
  transcriptBox.addEventListener('click', onTranscriptClick);

  // Steps blocks stay open (or closed) as the user left them when the transcript re-renders.
  transcriptBox.addEventListener(
    'toggle',
    (event) => {
      const details = event.target as HTMLElement;
      if (!(details instanceof HTMLDetailsElement) || details.dataset.first === undefined) {
        return;
      }
      const first = Number(details.dataset.first);
      state.openSteps = state.openSteps.filter((n) => n !== first).concat(details.open ? [first] : []);
      save();
    },
    true,
  );
}

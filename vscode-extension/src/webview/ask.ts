/**
 * The Ask tab's composer: the question box (with recall, edit and regenerate), its chips,
 * sending a question, and the transcript drawn from the state.
 */
import { askedQuestions, before, recall, turnsOf } from '../conversation';
import type { EditorContext } from '../editorContext';
import type { LineSpan } from '../protocol';
import { renderContextChip, renderEditing, renderModelChip, selectedLines, spanText, withCodeTools } from './chatRender';
import { renderTranscript } from './transcriptRender';
import type { TranscriptEntry } from './transcriptTypes';
import { askButton, askForm, askWelcome, composerChips, editingBanner, newChatButton, ownSelectAll, questionInput, scopeBox, scopeClear, scopeFile, transcriptBox } from './dom';
import { renderModel } from './modelView';
import { post, save, state } from './state';

/** The question (0-based among the conversation's) being edited: sending asks it from there. */
let editing: number | null = null;

/** The last editor's file and selection, which the box may attach (null: none). */
let editorContext: EditorContext | null = null;

export function scrollTranscript(): void {
  transcriptBox.scrollTop = transcriptBox.scrollHeight;
}

export function renderAsk(): void {
  const busy = state.askId !== null;
  transcriptBox.innerHTML = withCodeTools(
    renderTranscript(state.transcript, {
      pending: busy,
      streaming: state.streaming,
      openSteps: new Set(state.openSteps),
    }),
  );
  // While an answer runs, the Ask button is its Stop button (and KB: Stop Answering's
  // keybinding stops it); Escape does not, so a stray Esc never costs an answer.
  askButton.textContent = busy ? 'Stop' : 'Ask';
  askButton.classList.toggle('stop', busy);
  askButton.classList.toggle('secondary', busy);
  askButton.title = busy ? 'Stop this answer (Ctrl+Alt+Backspace)' : 'Ask (Enter)';
  askWelcome.hidden = busy || state.transcript.length > 0;
  scopeBox.hidden = !state.askFile;
  scopeFile.textContent = state.askFile ? `${state.askFile}${state.askLines ? ` ${spanText(state.askLines)}` : ''}` : '';
  addTurnTools(busy);
  editingBanner.hidden = editing === null;
  editingBanner.innerHTML = editing === null ? '' : renderEditing(editing);
  renderChips();
  renderModel();
  scrollTranscript();
}

/** The box's chips: the model that answers (the picker on a click), and the last editor's
 * Markdown file or its selection to attach — the server's "over this file" mode, with lines. */
export function renderChips(): void {
  const attached = editorContext && state.askFile === editorContext.path ? { path: state.askFile, lines: state.askLines } : null;
  composerChips.innerHTML = renderModelChip(state.status?.llm) + renderContextChip(editorContext, attached);
}

/** Edit on each question, Regenerate on the last answer — once no answer runs. */
function addTurnTools(busy: boolean): void {
  if (busy) {
    return;
  }
  transcriptBox.querySelectorAll<HTMLElement>('.question').forEach((question, n) => {
    question.insertAdjacentHTML('beforeend', ` <span class="turn-tools"><button type="button" class="link-button turn-edit" data-turn="${n}" title="Edit this question and ask it again from here">Edit</button></span>`);
  });
  if (state.transcript.at(-1)?.kind === 'answer') {
    const answers = transcriptBox.querySelectorAll<HTMLElement>('.answer');
    answers[answers.length - 1]?.insertAdjacentHTML('beforeend', '<div class="turn-tools"><button type="button" class="link-button turn-regenerate" title="Ask the last question again, without this answer">Regenerate</button></div>');
  }
}

/** Edit question `n` (its text in the box) or, `regenerate`, ask the last one again now. */
export function askAgain(n: number, regenerate: boolean): void {
  const kept = before(state.transcript, n);
  if (!kept || state.askId !== null) {
    return;
  }
  if (regenerate) {
    state.transcript = kept.kept as TranscriptEntry[];
    ask(kept.question.text, kept.question.file ?? null, kept.question.lines ?? null);
  } else {
    editing = n;
    questionInput.value = kept.question.text;
    questionInput.focus();
  }
  renderAsk();
}

export function ask(question: string, file: string | null = state.askFile, lines: LineSpan | null = file === state.askFile ? state.askLines : null): void {
  const text = question.trim();
  if (!text || state.askId !== null) {
    return;
  }
  const edited = editing === null ? undefined : before(state.transcript, editing);
  editing = null;
  if (edited) {
    // An edited question follows only the turns before it.
    state.transcript = edited.kept as TranscriptEntry[];
    renderAsk();
  }
  state.lastQuestion = { text, file, lines };
  // The turns so far go with the question: a conversation reopened after a reload (the
  // server remembers none of it then) goes on where it was.
  const history = turnsOf(state.transcript);
  post({ type: 'ask', question: text, file, ...(file && lines ? { lines } : {}), conversationId: state.conversationId, ...(history.length ? { history } : {}) });
  questionInput.value = '';
  recallAt = undefined;
}

/** Where ↑/↓ recall is among the questions asked (undefined: the box holds what was typed). */
let recallAt: number | undefined;

/** ↑/↓ in an empty box, or one still holding a recalled question, as a shell's history. */
function recallQuestion(key: 'ArrowUp' | 'ArrowDown'): boolean {
  const asked = askedQuestions(state.transcript);
  const showing = recallAt === undefined ? undefined : asked[recallAt];
  if (asked.length === 0 || (questionInput.value !== '' && questionInput.value !== showing)) {
    return false;
  }
  const next = recall(asked, recallAt ?? asked.length, key);
  recallAt = next.at < asked.length ? next.at : undefined;
  questionInput.value = next.text;
  questionInput.setSelectionRange(next.text.length, next.text.length);
  return true;
}

function stopAsk(): void {
  if (state.askId !== null) {
    post({ type: 'cancelAsk' });
  }
}

/** The chips, the editing banner, the scope's clear and New Chat. */
function wireComposerButtons(): void {
  composerChips.addEventListener('click', (event) => {
    const button = (event.target as HTMLElement).closest<HTMLButtonElement>('button[data-action]');
    const action = button?.dataset.action;
    if (action === 'chooseModel') {
      post({ type: 'command', command: 'chooseModel' });
    } else if (action === 'attach' || action === 'detach') {
      state.askFile = action === 'attach' ? (editorContext?.path ?? null) : null;
      state.askLines = action === 'attach' ? (selectedLines(editorContext) ?? null) : null;
      renderAsk();
      save();
    }
  });

  editingBanner.addEventListener('click', (event) => {
    if ((event.target as HTMLElement).closest('[data-action="cancelEdit"]')) {
      editing = null;
      questionInput.value = '';
      renderAsk();
    }
  });

  scopeClear.addEventListener('click', () => {
    state.askFile = null;
    state.askLines = null;
    renderAsk();
    save();
  });

  newChatButton.addEventListener('click', () => {
    if (state.askId !== null) {
      post({ type: 'cancelAsk' });
    }
    state.transcript = [];
    state.conversationId = null;
    state.chatId = null;
    state.askFile = null;
    state.askLines = null;
    state.askId = null;
    renderAsk();
    questionInput.focus();
    save();
  });
}

/** The box: Enter asks (the button stops a running answer), ↑/↓ recall, the welcome's questions. */
function wireQuestionBox(): void {
  askForm.addEventListener('submit', (event) => {
    event.preventDefault();
    if (state.askId !== null) {
      stopAsk();
    } else {
      ask(questionInput.value);
    }
  });

  questionInput.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      ask(questionInput.value);
    } else if ((event.key === 'ArrowUp' || event.key === 'ArrowDown') && !event.shiftKey && recallQuestion(event.key)) {
      event.preventDefault();
    }
  });

  ownSelectAll(questionInput);

  askWelcome.addEventListener('click', (event) => {
    const button = (event.target as HTMLElement).closest<HTMLButtonElement>('button');
    if (button?.dataset.question) {
      ask(button.dataset.question);
    } else if (button?.dataset.action === 'chooseModel') {
      post({ type: 'command', command: 'chooseModel' });
    }
  });
}

export function wireAsk(): void {
  wireComposerButtons();
  wireQuestionBox();
}

export function setEditorContext(context: EditorContext | null): void {
  editorContext = context;
  renderChips();
}

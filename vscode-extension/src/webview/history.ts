/** The history of conversations (kept per workspace by the extension): saving, listing, reopening. */
import type { ChatSummary } from '../chatHistory';
import { titleOf } from '../conversation';
import { renderHistory } from './chatRender';
import type { TranscriptEntry } from './transcriptTypes';
import { renderAsk } from './ask';
import { historyBox, historyButton, questionInput } from './dom';
import { post, save, state } from './state';

/** Keep this conversation in the workspace's history, after each answer. */
export function saveChat(): void {
  if (state.transcript.some((e) => e.kind === 'question')) {
    state.chatId ??= `chat-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    post({ type: 'saveChat', id: state.chatId, title: titleOf(state.transcript), transcript: state.transcript, file: state.askFile });
  }
}

export function showHistory(chats: ChatSummary[]): void {
  if (!historyBox.hidden) {
    historyBox.innerHTML = renderHistory(chats, state.chatId, Date.now());
  }
}

export function reopenChat(id: string, transcript: TranscriptEntry[], file: string | null): void {
  state.chatId = id;
  state.transcript = transcript;
  state.conversationId = null; // the server's may be gone: the turns go with the next question
  state.askFile = file;
  state.askLines = null;
  state.openSteps = [];
  historyBox.hidden = true;
  historyButton.setAttribute('aria-expanded', 'false');
  renderAsk();
  save();
  questionInput.focus();
}

export function wireHistory(): void {
  historyButton.addEventListener('click', () => {
    historyBox.hidden = !historyBox.hidden;
    historyButton.setAttribute('aria-expanded', String(!historyBox.hidden));
    if (!historyBox.hidden) {
      historyBox.textContent = 'Loading…';
      post({ type: 'listChats' });
    }
  });

  historyBox.addEventListener('click', (event) => {
    const target = event.target as HTMLElement;
    const remove = target.closest<HTMLButtonElement>('button.history-delete');
    const open = target.closest<HTMLButtonElement>('button.history-open');
    if (remove?.dataset.delete) {
      post({ type: 'deleteChat', id: remove.dataset.delete });
      if (remove.dataset.delete === state.chatId) {
        state.chatId = null; // this transcript is no longer kept: a next question starts anew
      }
    } else if (open?.dataset.chat && state.askId === null) {
      post({ type: 'openChat', id: open.dataset.chat });
    }
  });
}

/** The Ask tab's one card for the model's state, and its buttons. */
import { renderModelCard } from './modelCard';
import { ask } from './ask';
import { modelCard } from './dom';
import { post, state } from './state';

export function renderModel(): void {
  const problem = state.model;
  modelCard.hidden = !problem;
  modelCard.innerHTML = problem ? renderModelCard(problem, state.status?.llm) : '';
}

export function wireModelCard(): void {
  modelCard.addEventListener('click', (event) => {
    const button = (event.target as HTMLElement).closest<HTMLButtonElement>('button[data-action]');
    switch (button?.dataset.action) {
      case 'chooseModel':
        post({ type: 'command', command: 'chooseModel' });
        break;
      case 'openSettings':
        post({ type: 'openSettings', query: button.dataset.query ?? '@ext:kb-lsp.kb-lsp' });
        break;
      case 'retry':
        // Ask the server about the model again, and the question again when there was one.
        post({ type: 'command', command: 'probeModel' });
        if (state.lastQuestion) {
          ask(state.lastQuestion.text, state.lastQuestion.file, state.lastQuestion.lines ?? null);
        }
        break;
      case 'copyFix':
        post({ type: 'copy', text: button.dataset.text ?? '' });
        button.classList.add('copied');
        break;
    }
  });
}

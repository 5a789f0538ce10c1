/** The three tabs (Search, Related, Ask): which one shows, and arrow keys between them. */
import type { PanelTab } from '../messages';
import { scrollTranscript } from './ask';
import { panes, tabButtons } from './dom';
import { hideHover } from './hover';
import { save, state } from './state';

export function showTab(tab: PanelTab, focus = false): void {
  state.tab = tab;
  for (const button of tabButtons) {
    const selected = button.dataset.tab === tab;
    button.setAttribute('aria-selected', String(selected));
    button.tabIndex = selected ? 0 : -1;
    if (selected && focus) {
      button.focus();
    }
  }
  for (const [name, pane] of Object.entries(panes)) {
    pane.hidden = name !== tab;
  }
  hideHover();
  if (tab === 'ask') {
    scrollTranscript();
  }
  save();
}

export function wireTabs(): void {
  for (const button of tabButtons) {
    button.addEventListener('click', () => showTab(button.dataset.tab as PanelTab));
    button.addEventListener('keydown', (event) => {
      const order: PanelTab[] = ['search', 'related', 'ask'];
      const at = order.indexOf(state.tab);
      if (event.key === 'ArrowRight' || event.key === 'ArrowLeft') {
        event.preventDefault();
        const next = order[(at + (event.key === 'ArrowRight' ? 1 : order.length - 1)) % order.length] ?? 'search';
        showTab(next, true);
      }
    });
  }
}

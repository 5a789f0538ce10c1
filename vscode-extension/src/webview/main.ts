/**
 * The panel's script (runs in the webview): wires each tab's module to its elements, then
 * draws the state restored from `setState` and tells the extension it is ready. The state
 * lives in `state.ts`, the pure HTML renderers in their own modules (`results.ts`,
 * `transcriptRender.ts`, …); the extension is reached only through `postMessage`.
 *
 * Three tabs: Search (a numbered list, with a notice while the index is being built and
 * one re-run when it is done), Related (the active Markdown file's nearest notes) and
 * Ask (a chat: transcript above, the input pinned below, one card for the model's state).
 */
import { renderAsk, wireAsk } from './ask';
import { wireCompletion } from './completion';
import { queryInput } from './dom';
import { renderStatus, wireHeader } from './header';
import { wireHistory } from './history';
import { wireHover } from './hover';
import { wireLists } from './lists';
import { wireModelCard } from './modelView';
import { wireMessages } from './onMessage';
import { renderRelated } from './related';
import { renderSearch, wireSearch } from './search';
import { post, state } from './state';
import { showTab, wireTabs } from './tabs';
import { wireTranscript } from './transcript';

wireTabs();
wireLists();
wireHover();
wireSearch();
wireCompletion();
wireAsk();
wireHistory();
wireModelCard();
wireTranscript();
wireMessages();
wireHeader();

queryInput.value = state.query;
showTab(state.tab);
renderStatus();
renderSearch();
renderRelated();
renderAsk();
post({ type: 'ready' });

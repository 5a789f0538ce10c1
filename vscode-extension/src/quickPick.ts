/**
 * `KB: Search`: a quick pick that searches as you type (debounced), cancels the request a
 * newer query supersedes, lists `1 · path` items with label and snippet, opens on Enter.
 * A list made while the index is being built says so above the items ("Indexing 38/155 —
 * results may be incomplete") and is searched again once when indexing is done.
 */
import * as vscode from 'vscode';
import type { KbBackend } from './backend';
import { hitItem, incompleteNotice, oneLine, parseResultNumber, resultsIncomplete, suggestedQuery } from './format';
import { lastList, lastQuery, rememberList } from './lastList';
import { openResult } from './open';
import { ErrorCodes, Methods, type SearchHit } from './protocol';
import { Debouncer, errorCode, errorMessage, LatestOnly } from './util';

export interface HitPickItem extends vscode.QuickPickItem {
  hit?: SearchHit;
  /** A query to search instead (the server's "did you mean"). */
  suggestion?: string;
}

export interface SearchPickOptions {
  initialQuery?: string;
  debounceMs?: number;
  /** Open a hit; answers `missing` when its file is gone (the list is searched again). */
  open?: (hit: SearchHit) => Promise<'opened' | 'missing'>;
}

export class SearchQuickPick implements vscode.Disposable {
  readonly pick: vscode.QuickPick<HitPickItem>;
  private readonly debouncer: Debouncer;
  private readonly latest = new LatestOnly(() => new vscode.CancellationTokenSource());
  private readonly disposables: vscode.Disposable[] = [];
  private rerunWhenReady: string | undefined;
  /** The search in flight, for tests. */
  running: Promise<void> | undefined;

  constructor(
    private readonly backend: KbBackend,
    private readonly options: SearchPickOptions = {},
  ) {
    const pick = vscode.window.createQuickPick<HitPickItem>();
    this.pick = pick;
    pick.title = 'KB: Search';
    pick.placeholder = 'Search the knowledge base (file names and contents)';
    // The server ranks and marks; the quick pick's own fuzzy highlighting would mark
    // every typed word ("how", "in") in the details.
    pick.matchOnDescription = false;
    pick.matchOnDetail = false;
    pick.ignoreFocusOut = false;
    this.debouncer = new Debouncer(options.debounceMs ?? 200, () => {
      this.running = this.search(pick.value);
    });
    this.disposables.push(
      pick.onDidChangeValue(() => this.debouncer.trigger()),
      pick.onDidAccept(() => void this.accept()),
      pick.onDidHide(() => this.dispose()),
      backend.onDidChange(() => this.onStatus()),
    );
    if (options.initialQuery) {
      pick.value = options.initialQuery;
      this.debouncer.trigger();
    }
  }

  show(): void {
    this.pick.show();
  }

  private onStatus(): void {
    const status = this.backend.status;
    if (this.rerunWhenReady !== undefined && status && status.state !== 'indexing') {
      const query = this.rerunWhenReady;
      this.rerunWhenReady = undefined;
      if (query === this.pick.value.trim()) {
        this.running = this.search(query);
      }
    }
  }

  async search(value: string): Promise<void> {
    const query = value.trim();
    if (!query) {
      this.latest.cancel();
      this.pick.items = [];
      this.pick.busy = false;
      return;
    }
    this.pick.busy = true;
    try {
      const outcome = await this.latest.run((source) =>
        this.backend.request(Methods.search, { query }, source.token),
      );
      if (!outcome) {
        return; // superseded by a newer query
      }
      const response = outcome.value;
      this.backend.updateStatus(response.index);
      rememberList(response, 'quickPick');
      const incomplete = resultsIncomplete(response.index);
      this.rerunWhenReady = incomplete ? query : undefined;
      const notice: HitPickItem[] = incomplete
        ? [{ label: incompleteNotice(response.index), kind: vscode.QuickPickItemKind.Separator }]
        : [];
      const suggestion = suggestedQuery(response);
      const didYouMean: HitPickItem[] = suggestion
        ? [{ label: `$(lightbulb) Did you mean “${suggestion}”?`, suggestion, alwaysShow: true }]
        : [];
      this.pick.items = [
        ...notice,
        ...didYouMean,
        ...(response.results.length > 0
          ? response.results.map((hit) => ({ ...hitItem(hit), hit, alwaysShow: true }))
          : [{ label: `No matches for “${query}”`, alwaysShow: true }]),
      ];
      // Enter still opens result 1: the suggestion is there to pick, not in the way.
      const first = this.pick.items.find((item) => item.hit);
      if (suggestion && first) {
        this.pick.activeItems = [first];
      }
      this.pick.busy = false;
    } catch (err) {
      if (errorCode(err) === ErrorCodes.requestCancelled) {
        return;
      }
      this.pick.items = [{ label: `$(error) ${errorMessage(err)}`, alwaysShow: true }];
      this.pick.busy = false;
    }
  }

  async accept(): Promise<void> {
    const chosen = this.pick.selectedItems[0] ?? this.pick.activeItems[0];
    if (chosen?.suggestion) {
      this.pick.value = chosen.suggestion;
      this.running = this.search(chosen.suggestion);
      return;
    }
    const hit = chosen?.hit;
    if (!hit) {
      return;
    }
    const open = this.options.open ?? ((h: SearchHit) => openResult(h.uri, h.range, h.path));
    this.pick.busy = true;
    const outcome = await open(hit);
    if (outcome === 'missing') {
      // The file went away since the list was made: show the list as it is now.
      this.running = this.search(this.pick.value);
      return;
    }
    this.pick.hide();
  }

  dispose(): void {
    this.debouncer.cancel();
    this.latest.cancel();
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
    this.pick.dispose();
  }
}

export function showSearch(backend: KbBackend, options: SearchPickOptions = {}): SearchQuickPick {
  const pick = new SearchQuickPick(backend, options);
  pick.show();
  return pick;
}

/**
 * `KB: Open Result…`: the last numbered list as a quick pick. Typing a number selects that
 * result (Enter opens it); a number the list does not have is refused as you type.
 */
export function pickResult(hits: readonly SearchHit[] = lastList(), query: string | undefined = lastQuery()): Promise<SearchHit | number | undefined> {
  return new Promise((resolve) => {
    const pick = vscode.window.createQuickPick<HitPickItem>();
    // The query the numbers belong to, as the panel shows it above the same list.
    pick.title = query && hits.length > 0 ? `KB: Open Result — “${oneLine(query, 60)}”` : 'KB: Open Result';
    pick.placeholder = hits.length > 0 ? 'Type a number or pick a result of the last search' : 'Type the number of a result of the last search';
    pick.matchOnDescription = false;
    pick.matchOnDetail = false;
    const all = hits.map((hit) => ({ ...hitItem(hit), hit, alwaysShow: true }));
    pick.items = all;
    let done = false;
    const finish = (value: SearchHit | number | undefined): void => {
      if (!done) {
        done = true;
        resolve(value);
        pick.hide();
      }
    };
    const subscriptions = [
      pick.onDidChangeValue((value) => {
        if (!value.trim()) {
          pick.items = all;
          return;
        }
        const parsed = parseResultNumber(value, all.length);
        if ('error' in parsed) {
          // Said at once, as the user types (no validation message in this VS Code API).
          pick.items = [{ label: `$(warning) ${parsed.error}`, alwaysShow: true }];
          return;
        }
        const match = all.filter((item) => item.hit?.n === parsed.n);
        pick.items = match.length > 0 ? match : [{ label: `Open result ${parsed.n} of the last search`, alwaysShow: true }];
        pick.activeItems = pick.items.slice(0, 1);
      }),
      pick.onDidAccept(() => {
        const chosen = pick.selectedItems[0] ?? pick.activeItems[0];
        if (chosen?.hit) {
          finish(chosen.hit);
          return;
        }
        const parsed = parseResultNumber(pick.value, all.length);
        if ('n' in parsed) {
          finish(parsed.n);
        }
      }),
      pick.onDidHide(() => {
        finish(undefined);
        for (const s of subscriptions) {
          s.dispose();
        }
        pick.dispose();
      }),
    ];
    pick.show();
  });
}

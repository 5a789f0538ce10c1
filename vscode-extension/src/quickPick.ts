/**
 * `KB: Search`: a quick pick that searches as you type (debounced), cancels the request a
 * newer query supersedes, lists `1 · path` items with label and snippet, opens on Enter.
 */
import * as vscode from 'vscode';
import type { KbBackend } from './backend';
import { hitItem } from './format';
import { openAt } from './open';
import { Methods, type SearchHit } from './protocol';
import { Debouncer, errorCode, errorMessage, LatestOnly } from './util';
import { ErrorCodes } from './protocol';

export interface HitPickItem extends vscode.QuickPickItem {
  hit?: SearchHit;
}

export interface SearchPickOptions {
  initialQuery?: string;
  debounceMs?: number;
  open?: (hit: SearchHit) => Promise<unknown>;
}

export class SearchQuickPick implements vscode.Disposable {
  readonly pick: vscode.QuickPick<HitPickItem>;
  private readonly debouncer: Debouncer;
  private readonly latest = new LatestOnly(() => new vscode.CancellationTokenSource());
  private readonly disposables: vscode.Disposable[] = [];
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
    pick.matchOnDescription = true;
    pick.matchOnDetail = true;
    pick.ignoreFocusOut = false;
    this.debouncer = new Debouncer(options.debounceMs ?? 200, () => {
      this.running = this.search(pick.value);
    });
    this.disposables.push(
      pick.onDidChangeValue(() => this.debouncer.trigger()),
      pick.onDidAccept(() => void this.accept()),
      pick.onDidHide(() => this.dispose()),
    );
    if (options.initialQuery) {
      pick.value = options.initialQuery;
      this.debouncer.trigger();
    }
  }

  show(): void {
    this.pick.show();
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
      this.pick.items =
        response.results.length > 0
          ? response.results.map((hit) => ({ ...hitItem(hit), hit, alwaysShow: true }))
          : [{ label: `No matches for “${query}”`, alwaysShow: true }];
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
    const hit = this.pick.selectedItems[0]?.hit ?? this.pick.activeItems[0]?.hit;
    if (!hit) {
      return;
    }
    this.pick.hide();
    const open = this.options.open ?? ((h: SearchHit) => openAt(h.uri, h.range));
    await open(hit);
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

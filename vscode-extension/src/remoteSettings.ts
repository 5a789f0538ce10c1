/**
 * Machine-scoped settings in remote windows (Remote-SSH, WSL, containers, code-server).
 *
 * `kb.server.python`, `kb.storage` and `kb.embedder.modelPath` are paths on the machine the
 * server runs on (scope `machine-overridable`), so in a remote window VS Code reads them from
 * the Remote settings and ignores the User settings' values — at once, or (code-server)
 * only from the first time it reloads the User settings, e.g. after any change in the
 * Settings editor. Then such a value vanishes with no change event naming it, and the
 * server would restart with `python3` or move its index. `SettingsMemory` keeps a value
 * that vanished that way, and the extension tells the user to move it to the Remote
 * settings. Pure: testable without VS Code.
 */
import { appliedValue, type SettingLevels, type SettingsReader } from './settings';

/** `inspect` in VS Code 1.100 also reports where a User value comes from in a remote
 * window: `globalLocalValue` (this machine's User settings), `globalRemoteValue` (Remote). */
export interface RemoteLevels extends SettingLevels {
  globalLocalValue?: unknown;
  globalRemoteValue?: unknown;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/**
 * The User value of a machine-scoped setting that VS Code applies for now but ignores in a
 * remote window (no Remote or workspace value beside it), or undefined. `workspaceApplies`
 * is false in an untrusted workspace for a restricted setting.
 */
export function remoteIgnoredUserValue(
  levels: RemoteLevels | undefined,
  remoteName: string | undefined,
  workspaceApplies = true,
): string | undefined {
  if (!remoteName || !levels) {
    return undefined;
  }
  const workspace = workspaceApplies ? [levels.workspaceValue, levels.workspaceFolderValue] : [];
  const elsewhere = [levels.globalRemoteValue, ...workspace].some((v) => text(v));
  return elsewhere ? undefined : text(levels.globalLocalValue);
}

/** Remembers the machine-scoped settings' values, to put back one that VS Code dropped
 * without the user changing it. */
export class SettingsMemory {
  private readonly known = new Map<string, unknown>();
  private readonly keptValues = new Map<string, unknown>();
  private readonly changed = new Set<string>();

  /** A configuration change: the settings it names (`affects('kb.x')`) were changed by the
   * user, so their new values stand, even when empty. */
  noteChange(keys: readonly string[], affects: (section: string) => boolean): void {
    for (const key of keys) {
      if (affects(`kb.${key}`)) {
        this.changed.add(key);
      }
    }
  }

  /** `reader` with every machine-scoped value that vanished without a change put back. */
  recall(reader: SettingsReader): SettingsReader {
    for (const key of reader.machineScoped) {
      const now = appliedValue(reader, key);
      const before = this.known.get(key);
      if (this.changed.has(key) || now !== undefined) {
        this.keptValues.delete(key);
        this.known.set(key, now);
      } else if (before !== undefined) {
        this.keptValues.set(key, before);
      }
    }
    this.changed.clear();
    const kept = new Map(this.keptValues);
    return {
      ...reader,
      get: (key) => (kept.has(key) ? kept.get(key) : reader.get(key)),
      inspect: (key) => (kept.has(key) ? { ...reader.inspect(key), globalValue: kept.get(key) } : reader.inspect(key)),
    };
  }

  /** The values put back (`kb.`-less key → value). */
  get kept(): ReadonlyMap<string, unknown> {
    return this.keptValues;
  }
}

/** What to tell the user about User values VS Code ignores in a remote window. */
export function remoteSettingsMessage(keys: readonly string[]): string {
  const names = keys.map((key) => `kb.${key}`).join(', ');
  return (
    `kb-lsp: ${names} ${keys.length > 1 ? 'are' : 'is'} in your User settings, which VS Code ignores ` +
    `for ${keys.length > 1 ? 'these settings' : 'this setting'} in a remote window: set ` +
    `${keys.length > 1 ? 'them' : 'it'} in the Remote settings. Until then kb-lsp keeps using the value it started with.`
  );
}

/**
 * The `kb.*` settings → what the server is told. Generic: the list of settings is the
 * extension's own `contributes.configuration` (generated from server/kb_lsp/config.py), so
 * every setting a user can change in VS Code reaches the server without a list kept here.
 *
 * Pure: the caller passes a `SettingsReader` over `vscode.workspace.getConfiguration`, so
 * this is testable without VS Code.
 */

/** What `WorkspaceConfiguration.inspect` reports for one setting (the parts we read). */
export interface SettingLevels {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

export interface SettingsReader {
  /** Every contributed setting, `kb.`-less (`ollama.host`). */
  readonly keys: readonly string[];
  /** The settings VS Code ignores workspace values of in an untrusted workspace. */
  readonly restricted: readonly string[];
  /** The settings of the machine the server runs on (scope `machine`, `machine-overridable`). */
  readonly machineScoped: readonly string[];
  /** Is the workspace trusted? */
  readonly trusted: boolean;
  /** The value VS Code applies (scopes, trust and remote rules included). */
  get(key: string): unknown;
  inspect(key: string): SettingLevels | undefined;
}

/** Settings that say how the server is started: changing one restarts it. Everything
 * else is sent to the running server, which applies it live. */
export const RESTART_SETTINGS: readonly string[] = ['server.python'];

/** The parts of package.json we read. */
interface Category {
  properties?: Record<string, { scope?: string }>;
}
export interface Manifest {
  contributes?: { configuration?: Category | Category[] };
  capabilities?: { untrustedWorkspaces?: { restrictedConfigurations?: string[] } };
}

export interface ContributedSettings {
  keys: string[];
  restricted: string[];
  machineScoped: string[];
}

/** The `kb.`-less keys of every contributed setting, the restricted and the machine ones. */
export function contributedSettings(manifest: Manifest): ContributedSettings {
  const configuration = manifest.contributes?.configuration;
  const categories = Array.isArray(configuration) ? configuration : configuration ? [configuration] : [];
  const ours = (key: string) => key.startsWith('kb.');
  const strip = (key: string) => key.replace(/^kb\./, '');
  const properties = categories.flatMap((category) => Object.entries(category.properties ?? {})).filter(([k]) => ours(k));
  const restricted = manifest.capabilities?.untrustedWorkspaces?.restrictedConfigurations ?? [];
  return {
    keys: properties.map(([k]) => strip(k)),
    restricted: restricted.filter(ours).map(strip),
    machineScoped: properties.filter(([, spec]) => spec.scope === 'machine' || spec.scope === 'machine-overridable').map(([k]) => strip(k)),
  };
}

function unset(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

/** The value of `key` when the user set it somewhere VS Code applies, else undefined. */
export function appliedValue(reader: SettingsReader, key: string): unknown {
  if (!isSet(reader, key)) {
    return undefined;
  }
  const value = reader.get(key);
  return unset(value) ? undefined : value;
}

/** Did the user set `key` somewhere VS Code applies (not only the default)? */
function isSet(reader: SettingsReader, key: string): boolean {
  const levels = reader.inspect(key);
  if (!levels) {
    return false;
  }
  if (!reader.trusted && reader.restricted.includes(key)) {
    return levels.globalValue !== undefined;
  }
  return levels.globalValue !== undefined || levels.workspaceValue !== undefined || levels.workspaceFolderValue !== undefined;
}

/**
 * The user's `kb` settings for the server, nested (`{ollama: {host: …}}`): each setting
 * the user set, with the value VS Code applies. Settings left at their default are not
 * sent, so the server's own default (or a `KB_*` variable) applies — the server, not this
 * file, knows the defaults. `storage` is always sent: `kb.storage` when set, else
 * `defaultStorage` (the extension's workspace storage).
 */
export function serverSettings(reader: SettingsReader, defaultStorage: string | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of reader.keys) {
    if (RESTART_SETTINGS.includes(key) || key === 'storage' || !isSet(reader, key)) {
      continue;
    }
    const value = reader.get(key);
    if (!unset(value)) {
      setDotted(out, key, value);
    }
  }
  const storage = isSet(reader, 'storage') ? reader.get('storage') : undefined;
  if (typeof storage === 'string' && storage.trim() !== '') {
    out.storage = storage.trim();
  } else if (defaultStorage) {
    out.storage = defaultStorage;
  }
  return out;
}

/**
 * What the server gets at start: only the storage folder. The settings themselves come
 * from `workspace/configuration` and `workspace/didChangeConfiguration`, which always carry
 * the current ones — a setting the user clears later must not live on in here.
 */
export function initializationOptions(reader: SettingsReader, defaultStorage: string | undefined): Record<string, unknown> {
  const storage = serverSettings(reader, defaultStorage).storage;
  return storage === undefined ? {} : { storage };
}

/**
 * Restricted settings that a workspace settings file (`.vscode/settings.json`, a
 * `.code-workspace` file) sets. In an untrusted workspace VS Code hides those values from
 * the extension entirely (`inspect` does not report them), so the files themselves are read
 * to tell the user which of their values are ignored. A key in a comment counts too: the
 * message only says the workspace's value, if any, is not used.
 */
export function restrictedKeysIn(settingsFileText: string, restricted: readonly string[]): string[] {
  return restricted.filter((key) => new RegExp(`"kb\\.${key.replace(/\./g, '\\.')}"\\s*:`).test(settingsFileText));
}

function setDotted(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next === 'object' && next !== null) {
      node = next as Record<string, unknown>;
    } else {
      const created: Record<string, unknown> = {};
      node[part] = created;
      node = created;
    }
  }
  node[parts[parts.length - 1]] = value;
}

/** Does a configuration change need a server restart? (`affects` is the event's check.) */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return RESTART_SETTINGS.some((key) => affects(`kb.${key}`));
}

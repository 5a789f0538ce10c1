/**
 * The `kb.*` settings → the server's `initializationOptions`. Pure: the caller passes a
 * getter (`vscode.workspace.getConfiguration('kb').get`), so this is testable without VS Code.
 */

/** Every setting the server reads, as `kb.`-less dotted keys (see server/kb_lsp/config.py). */
export const SERVER_SETTINGS = [
  'include',
  'exclude',
  'respectGitignore',
  'maxFileSize',
  'chunkSize',
  'chunkOverlap',
  'embedder.provider',
  'embedder.model',
  'embedder.modelPath',
  'search.limit',
  'search.threshold',
  'search.mode',
  'ollama.host',
  'ollama.model',
  'agent.maxSteps',
  'chroma.url',
] as const;

export type SettingGetter = (key: string) => unknown;

export interface InitializationOptions {
  [key: string]: unknown;
  storage?: string;
}

/**
 * Nested options (`{ollama: {host: …}}`) from the settings; unset (null/undefined/empty
 * string) values are left out so the server's defaults apply. `storage` is the `kb.storage`
 * setting when set, else `defaultStorage` (the extension's workspace storage).
 */
export function initializationOptions(
  get: SettingGetter,
  defaultStorage: string | undefined,
): InitializationOptions {
  const out: InitializationOptions = {};
  for (const key of SERVER_SETTINGS) {
    const value = get(key);
    if (value === undefined || value === null || value === '') {
      continue;
    }
    setDotted(out, key, value);
  }
  const storage = get('storage');
  if (typeof storage === 'string' && storage.trim() !== '') {
    out.storage = storage.trim();
  } else if (defaultStorage) {
    out.storage = defaultStorage;
  }
  return out;
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
export function affectsServer(affects: (section: string) => boolean): boolean {
  return affects('kb');
}

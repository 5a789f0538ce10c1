/**
 * `KB: Choose a Model…`: any local model server in two clicks. A preset (Ollama,
 * llama.cpp's llama-server, LM Studio, vLLM, or any OpenAI-compatible server) gives the
 * provider and the usual address (editable: ports differ); the server is then asked which
 * models it has (`GET /v1/models`, Ollama's `GET /api/tags` — the user's own server, from
 * the extension host, with a short timeout), and the choice is written to
 * `kb.llm.provider`, `kb.llm.baseUrl` and `kb.llm.model`, which the running server applies
 * at once. The server already configured comes first ("another model on this server"),
 * and its preset's address box holds the configured address, not the preset's usual one;
 * each model says whether it calls tools, its size and its context (`modelInfo.ts`).
 */
import * as vscode from 'vscode';
import { describe, describeModels, type JsonFetch, type ModelInfo } from './modelInfo';
import type { LlmProvider } from './protocol';
import { errorMessage } from './util';

export interface ModelPreset {
  id: 'ollama' | 'llama-server' | 'lmstudio' | 'vllm' | 'custom';
  label: string;
  detail: string;
  provider: LlmProvider;
  /** The address it listens on by default (empty: the user types it). */
  baseUrl: string;
  /** How to start it, for the message when it does not answer. */
  start: string;
}

export const PRESETS: readonly ModelPreset[] = [
  { id: 'ollama', label: 'Ollama', detail: 'Ollama’s own API', provider: 'ollama', baseUrl: 'http://127.0.0.1:11434', start: 'ollama serve' },
  {
    id: 'llama-server',
    label: 'llama-server (llama.cpp)',
    detail: 'OpenAI-compatible; serves one GGUF model',
    provider: 'openai',
    baseUrl: 'http://127.0.0.1:8080/v1',
    start: 'llama-server -m model.gguf --port 8080',
  },
  { id: 'lmstudio', label: 'LM Studio', detail: 'OpenAI-compatible local server', provider: 'openai', baseUrl: 'http://127.0.0.1:1234/v1', start: 'lms server start' },
  { id: 'vllm', label: 'vLLM', detail: 'OpenAI-compatible', provider: 'openai', baseUrl: 'http://127.0.0.1:8000/v1', start: 'vllm serve MODEL' },
  {
    id: 'custom',
    label: 'Another OpenAI-compatible server…',
    detail: 'LocalAI, Jan, llama-cpp-python, a server on another machine…',
    provider: 'openai',
    baseUrl: '',
    start: 'start the server',
  },
];

/** How long the model server has to answer the list of its models. */
export const LIST_TIMEOUT_MS = 4000;

export type Fetch = (
  url: string,
  init: { signal: AbortSignal; headers?: Record<string, string>; method?: string; body?: string },
) => Promise<{ ok: boolean; status: number; json(): Promise<unknown> }>;

/** Is `value` an http(s) URL? An error text for the input box otherwise. */
export function checkBaseUrl(value: string): string | undefined {
  try {
    const url = new URL(value.trim());
    return url.protocol === 'http:' || url.protocol === 'https:' ? undefined : 'An http:// or https:// address, e.g. http://127.0.0.1:8080/v1';
  } catch {
    return 'An address like http://127.0.0.1:8080/v1';
  }
}

/** Where a provider lists its models: Ollama's `/api/tags`, an OpenAI server's `/models`
 * (under its /v1 base). */
export function modelsUrl(provider: LlmProvider, baseUrl: string): string {
  const base = baseUrl.trim().replace(/\/+$/, '');
  return provider === 'ollama' ? `${base.replace(/\/v1$/, '')}/api/tags` : `${base}/models`;
}

/** The model names in a `/v1/models` or `/api/tags` answer. */
export function modelNames(provider: LlmProvider, body: unknown): string[] {
  const items = provider === 'ollama' ? (body as { models?: unknown }).models : (body as { data?: unknown }).data;
  if (!Array.isArray(items)) {
    return [];
  }
  const names = items
    .map((item: unknown) => {
      const entry = item as { id?: unknown; name?: unknown; model?: unknown };
      const name = provider === 'ollama' ? (entry.name ?? entry.model) : entry.id;
      return typeof name === 'string' ? name : undefined;
    })
    .filter((name): name is string => Boolean(name));
  return [...new Set(names)];
}

export type Listed = { models: string[]; info: ModelInfo[] } | { error: string };

/** The models the server at `baseUrl` reports, with what it says of each, or why it
 * could not be asked. */
export async function listModels(
  provider: LlmProvider,
  baseUrl: string,
  fetcher: Fetch = fetch,
  timeoutMs = LIST_TIMEOUT_MS,
  apiKey?: string,
): Promise<Listed> {
  const url = modelsUrl(provider, baseUrl);
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const headers = apiKey ? { Authorization: `Bearer ${apiKey}` } : undefined;
  try {
    const response = await fetcher(url, { signal: abort.signal, headers });
    if (!response.ok) {
      return { error: `${url} answered HTTP ${response.status}.` };
    }
    const listing = await response.json();
    const get: JsonFetch = async (where, init) => {
      const answer = await fetcher(where, { signal: abort.signal, headers, ...init });
      return answer.ok ? answer.json() : {};
    };
    const names = modelNames(provider, listing);
    const info = await describeModels(provider, baseUrl, listing, get);
    return { models: names, info: names.map((name) => info.find((i) => i.name === name) ?? { name }) };
  } catch (err) {
    if (abort.signal.aborted) {
      return { error: `${url} did not answer within ${Math.round(timeoutMs / 1000)} s.` };
    }
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return { error: `Nothing answers at ${url} (${cause?.code ?? cause?.message ?? errorMessage(err)}).` };
  } finally {
    clearTimeout(timer);
  }
}

export interface ModelChoice {
  provider: LlmProvider;
  baseUrl: string;
  /** undefined: leave `kb.llm.model` as it is (the server picks: its first model). */
  model: string | undefined;
}

/** Write the choice to the User settings (the running server applies them). */
export async function saveChoice(choice: ModelChoice): Promise<void> {
  const config = vscode.workspace.getConfiguration('kb');
  const target = vscode.ConfigurationTarget.Global;
  await config.update('llm.provider', choice.provider, target);
  await config.update('llm.baseUrl', choice.baseUrl, target);
  if (choice.model !== undefined) {
    await config.update('llm.model', choice.model, target);
  }
}

/** The server the settings name now (their defaults included: Ollama on this machine):
 * its provider, address and model (undefined: the server's first). */
export function configuredChoice(get: (key: string) => unknown): ModelChoice {
  const text = (key: string): string => (typeof get(key) === 'string' ? (get(key) as string).trim() : '');
  const provider: LlmProvider = text('llm.provider') === 'openai' ? 'openai' : 'ollama';
  const address = text('llm.baseUrl') || (provider === 'ollama' ? text('ollama.host') : '');
  const model = text('llm.model') || (provider === 'ollama' ? text('ollama.model') : '');
  return { provider, baseUrl: (address || presetFor(provider, '').baseUrl).replace(/\/+$/, ''), model: model || undefined };
}

/** The preset a configured server is: its provider, and for an OpenAI-compatible one the
 * preset listening on the same port; else "another server". */
export function presetFor(provider: LlmProvider, baseUrl: string): ModelPreset {
  if (provider === 'ollama') {
    return PRESETS[0];
  }
  const port = (url: string): string => {
    try {
      return new URL(url).port;
    } catch {
      return '';
    }
  };
  const openai = PRESETS.filter((preset) => preset.provider === 'openai');
  return openai.find((preset) => preset.baseUrl && port(preset.baseUrl) === port(baseUrl)) ?? openai[openai.length - 1];
}

interface PresetItem extends vscode.QuickPickItem {
  preset: ModelPreset;
  /** The configured address: straight to its models. */
  current?: string;
}

/** The first pick: the configured server first, then every preset (the configured one's
 * address shown as it is set). */
export function presetItems(current: ModelChoice | undefined): PresetItem[] {
  const mine = current ? presetFor(current.provider, current.baseUrl) : undefined;
  const items: PresetItem[] = PRESETS.map((preset) => ({
    label: preset.label,
    description: preset === mine && current ? `${current.baseUrl} (configured)` : preset.baseUrl,
    detail: preset.detail,
    preset,
  }));
  if (current && mine) {
    items.unshift({
      label: `$(check) Another model at ${current.baseUrl}`,
      description: current.model ? `now: ${current.model}` : '',
      detail: `${mine.label.replace(/…$/, '')}, as configured`,
      preset: mine,
      current: current.baseUrl,
    });
  }
  return items;
}

/** The whole flow; resolves to what was saved, or undefined when the user gave up. */
export async function chooseModel(fetcher?: Fetch): Promise<ModelChoice | undefined> {
  const config = vscode.workspace.getConfiguration('kb');
  const current = configuredChoice((key) => config.get(key));
  const picked = await vscode.window.showQuickPick<PresetItem>(presetItems(current), {
    title: 'KB: Choose a Model — which server runs it?',
    placeHolder: 'The local server that runs your model',
    ignoreFocusOut: true,
  });
  if (!picked) {
    return undefined;
  }
  const preset = picked.preset;
  const mine = current && presetFor(current.provider, current.baseUrl) === preset ? current.baseUrl : undefined;
  const baseUrl = picked.current ?? (await askAddress(preset, mine ?? preset.baseUrl));
  if (!baseUrl) {
    return undefined;
  }
  const model = await pickModel(preset, baseUrl, current?.model, fetcher);
  if (model === null) {
    return undefined;
  }
  const saved: ModelChoice = { provider: preset.provider, baseUrl, model };
  await saveChoice(saved);
  void vscode.window.showInformationMessage(
    `KB: questions now go to ${model ?? 'the first model it lists'} at ${baseUrl} (${preset.label.replace(/…$/, '')}).`,
  );
  return saved;
}

async function askAddress(preset: ModelPreset, value: string): Promise<string | undefined> {
  const entered = await vscode.window.showInputBox({
    title: `KB: Choose a Model — where does ${preset.label.replace(/…$/, '')} run?`,
    prompt: preset.provider === 'ollama' ? 'Ollama’s address' : 'The server’s address, ending in /v1',
    value,
    placeHolder: 'http://127.0.0.1:8080/v1',
    ignoreFocusOut: true,
    validateInput: (text) => checkBaseUrl(text),
  });
  return entered ? entered.trim().replace(/\/+$/, '') : undefined;
}

/** The model at `baseUrl` the user picks (undefined: the server's first; null: gave up). */
async function pickModel(preset: ModelPreset, baseUrl: string, now: string | undefined, fetcher?: Fetch): Promise<string | undefined | null> {
  const apiKeyEnv = vscode.workspace.getConfiguration('kb').get<string>('llm.apiKeyEnv');
  const apiKey = preset.provider === 'openai' && apiKeyEnv ? process.env[apiKeyEnv] : undefined;
  const listed = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `KB: asking ${baseUrl} for its models…` },
    () => listModels(preset.provider, baseUrl, fetcher, LIST_TIMEOUT_MS, apiKey),
  );
  if ('error' in listed || listed.models.length === 0) {
    return modelWithoutList(preset, 'error' in listed ? listed.error : `${baseUrl} lists no models.`);
  }
  const chosen = await vscode.window.showQuickPick(
    listed.info.map((info) => {
      const { description, detail } = describe(info);
      return { label: info.name, description: info.name === now ? `current · ${description}` : description, detail };
    }),
    { title: `KB: Choose a Model — the models at ${baseUrl}`, placeHolder: 'The model that answers questions', ignoreFocusOut: true },
  );
  return chosen ? chosen.label : null;
}

async function modelWithoutList(preset: ModelPreset, why: string): Promise<string | undefined | null> {
  const choice = await vscode.window.showWarningMessage(
    `KB: ${why} Start it (${preset.start}), then choose again — or save the address and a model name now.`,
    'Save With a Model Name…',
    'Save the Address',
  );
  if (choice === 'Save the Address') {
    return undefined;
  }
  if (choice !== 'Save With a Model Name…') {
    return null;
  }
  const model = await vscode.window.showInputBox({ title: 'KB: Choose a Model — the model’s name', ignoreFocusOut: true });
  return model === undefined ? null : model.trim() || undefined;
}

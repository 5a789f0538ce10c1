/**
 * `KB: Choose a Model…`: any local model server in two clicks. A preset (Ollama,
 * llama.cpp's llama-server, LM Studio, vLLM, or any OpenAI-compatible server) gives the
 * provider and the usual address (editable: ports differ); the server is then asked which
 * models it has (`GET /v1/models`, Ollama's `GET /api/tags` — the user's own server, from
 * the extension host, with a short timeout), and the choice is written to
 * `kb.llm.provider`, `kb.llm.baseUrl` and `kb.llm.model`, which the running server applies
 * at once.
 */
import * as vscode from 'vscode';
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

export type Fetch = (url: string, init: { signal: AbortSignal; headers?: Record<string, string> }) => Promise<{ ok: boolean; status: number; json(): Promise<unknown> }>;

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

/** The models the server at `baseUrl` reports, or why it could not be asked. */
export async function listModels(
  provider: LlmProvider,
  baseUrl: string,
  fetcher: Fetch = fetch,
  timeoutMs = LIST_TIMEOUT_MS,
  apiKey?: string,
): Promise<{ models: string[] } | { error: string }> {
  const url = modelsUrl(provider, baseUrl);
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  try {
    const response = await fetcher(url, { signal: abort.signal, headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : undefined });
    if (!response.ok) {
      return { error: `${url} answered HTTP ${response.status}.` };
    }
    return { models: modelNames(provider, await response.json()) };
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

interface PresetItem extends vscode.QuickPickItem {
  preset: ModelPreset;
}

/** The whole flow; resolves to what was saved, or undefined when the user gave up. */
export async function chooseModel(fetcher?: Fetch): Promise<ModelChoice | undefined> {
  const picked = await vscode.window.showQuickPick<PresetItem>(
    PRESETS.map((preset) => ({ label: preset.label, description: preset.baseUrl, detail: preset.detail, preset })),
    { title: 'KB: Choose a Model — which server runs it?', placeHolder: 'The local server that runs your model', ignoreFocusOut: true },
  );
  if (!picked) {
    return undefined;
  }
  const preset = picked.preset;
  const entered = await vscode.window.showInputBox({
    title: `KB: Choose a Model — where does ${preset.label.replace(/…$/, '')} run?`,
    prompt: preset.provider === 'ollama' ? 'Ollama’s address' : 'The server’s address, ending in /v1',
    value: preset.baseUrl,
    placeHolder: 'http://127.0.0.1:8080/v1',
    ignoreFocusOut: true,
    validateInput: (value) => checkBaseUrl(value),
  });
  if (!entered) {
    return undefined;
  }
  const baseUrl = entered.trim().replace(/\/+$/, '');
  const apiKeyEnv = vscode.workspace.getConfiguration('kb').get<string>('llm.apiKeyEnv');
  const apiKey = preset.provider === 'openai' && apiKeyEnv ? process.env[apiKeyEnv] : undefined;
  const listed = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `KB: asking ${baseUrl} for its models…` },
    () => listModels(preset.provider, baseUrl, fetcher, LIST_TIMEOUT_MS, apiKey),
  );
  let model: string | undefined;
  if ('error' in listed || listed.models.length === 0) {
    const why = 'error' in listed ? listed.error : `${baseUrl} lists no models.`;
    const choice = await vscode.window.showWarningMessage(
      `KB: ${why} Start it (${preset.start}), then choose again — or save the address and a model name now.`,
      'Save With a Model Name…',
      'Save the Address',
    );
    if (choice === 'Save With a Model Name…') {
      model = await vscode.window.showInputBox({ title: 'KB: Choose a Model — the model’s name', ignoreFocusOut: true });
      if (model === undefined) {
        return undefined;
      }
      model = model.trim() || undefined;
    } else if (choice !== 'Save the Address') {
      return undefined;
    }
  } else {
    const chosen = await vscode.window.showQuickPick(
      listed.models.map((name) => ({ label: name })),
      { title: `KB: Choose a Model — the models at ${baseUrl}`, placeHolder: 'The model that answers questions', ignoreFocusOut: true },
    );
    if (!chosen) {
      return undefined;
    }
    model = chosen.label;
  }
  const saved: ModelChoice = { provider: preset.provider, baseUrl, model };
  await saveChoice(saved);
  void vscode.window.showInformationMessage(
    `KB: questions now go to ${model ?? 'the first model it lists'} at ${baseUrl} (${preset.label.replace(/…$/, '')}).`,
  );
  return saved;
}

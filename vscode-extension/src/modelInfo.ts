/**
 * What a model server says of its models, for `KB: Choose a Model…`: whether each calls
 * tools (so questions get the agent, which searches and reads the notes itself, rather
 * than grounded answers from retrieved passages), its size and its context window. Asked
 * the way the kb-lsp server asks (engine/llm): Ollama's `/api/tags` and `/api/show`
 * (`capabilities`, `*.context_length`); an OpenAI-compatible server's `/models` (vLLM's
 * `max_model_len`, llama-server's `meta`) and llama-server's `/props`
 * (`chat_template_caps`, `n_ctx`). What a server does not say stays unknown.
 */
import type { LlmProvider } from './protocol';

export interface ModelInfo {
  name: string;
  /** true: calls tools (agent); false: does not (grounded); undefined: not said. */
  tools?: boolean;
  /** Parameters and file size as the server says them: `7.6B · Q4_K_M · 4.7 GB`. */
  size?: string;
  /** Its context window, in tokens. */
  context?: number;
}

export type JsonFetch = (url: string, init?: { method?: string; body?: string }) => Promise<unknown>;

/** How many models are asked for their details (one request each, on Ollama). */
export const MAX_DESCRIBED = 24;

const CONTEXT_KEYS = ['max_model_len', 'context_length', 'max_context_length', 'n_ctx', 'n_ctx_train'];

type Json = Record<string, unknown>;

function object(value: unknown): Json {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function positive(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}

/** Bytes as a person reads them: `4.7 GB`, `98 MB`. */
export function bytes(n: number): string {
  if (n >= 1e9) {
    return `${(n / 1e9).toFixed(1)} GB`;
  }
  return `${Math.max(1, Math.round(n / 1e6))} MB`;
}

/** A parameter count as model cards say it: `135M`, `7.6B`. */
export function parameters(n: number): string {
  return n >= 1e9 ? `${(n / 1e9).toFixed(1).replace(/\.0$/, '')}B` : `${Math.round(n / 1e6)}M`;
}

/** A context window: `32k context`, `4,096 context`. */
export function contextText(tokens: number): string {
  return tokens >= 10_000 && tokens % 1024 === 0 ? `${tokens / 1024}k context` : `${tokens.toLocaleString('en-US')} context`;
}

/** One line of what is known of a model, for the quick pick's detail. */
export function describe(info: ModelInfo): { description: string; detail: string } {
  const description =
    info.tools === true ? '$(tools) calls tools: the agent answers' : info.tools === false ? 'no tool calling: grounded answers' : '';
  const detail = [info.size, info.context ? contextText(info.context) : undefined].filter(Boolean).join(' · ');
  return { description, detail };
}

/** An Ollama `/api/tags` entry and its `/api/show` answer (may be empty). */
export function ollamaInfo(entry: Json, shown: Json): ModelInfo {
  const details = object(entry.details);
  const size = [details.parameter_size, details.quantization_level, positive(entry.size) ? bytes(entry.size as number) : undefined]
    .filter((part): part is string => typeof part === 'string' && part !== '')
    .join(' · ');
  const capabilities = shown.capabilities;
  const context = Object.entries(object(shown.model_info)).find(([key, value]) => key.endsWith('.context_length') && positive(value));
  return {
    name: text(entry.name) || text(entry.model),
    tools: Array.isArray(capabilities) ? capabilities.includes('tools') : undefined,
    size: size || undefined,
    context: context ? (context[1] as number) : undefined,
  };
}

/** An OpenAI-compatible `/models` entry, with llama-server's `/props` when it answered
 * (it serves one model: its template's tool support and context are that model's). */
export function openaiInfo(entry: Json, props: Json | undefined): ModelInfo {
  const meta = object(entry.meta);
  let context: number | undefined;
  for (const holder of [entry, meta]) {
    context ??= CONTEXT_KEYS.map((key) => positive(holder[key])).find((value) => value !== undefined);
  }
  const slot = object(props?.default_generation_settings);
  context = positive(slot.n_ctx) ?? context;
  const caps = object(props?.chat_template_caps);
  const flags = ['supports_tools', 'supports_tool_calls'].filter((key) => key in caps).map((key) => Boolean(caps[key]));
  const size = [positive(meta.n_params) ? parameters(meta.n_params as number) : undefined, positive(meta.size) ? bytes(meta.size as number) : undefined]
    .filter(Boolean)
    .join(' · ');
  return { name: text(entry.id), tools: flags.length ? flags.every(Boolean) : undefined, size: size || undefined, context };
}

/** The server root of an OpenAI-compatible base URL (llama-server's /props is there). */
export function serverRoot(baseUrl: string): string {
  return baseUrl.trim().replace(/\/+$/, '').replace(/\/v1$/, '');
}

/**
 * The models at `baseUrl` with what the server says of each (`/models` or `/api/tags`
 * already answered: `listing`). A detail that cannot be read stays unknown; it never
 * fails the list.
 */
export async function describeModels(provider: LlmProvider, baseUrl: string, listing: unknown, get: JsonFetch): Promise<ModelInfo[]> {
  const quietly = (url: string, init?: { method?: string; body?: string }): Promise<Json> =>
    get(url, init).then(object, () => ({}));
  if (provider === 'ollama') {
    const entries = (object(listing).models as unknown[] | undefined) ?? [];
    const root = serverRoot(baseUrl);
    return Promise.all(
      entries.map(object).map(async (entry, i) => {
        const shown = i < MAX_DESCRIBED ? await quietly(`${root}/api/show`, { method: 'POST', body: JSON.stringify({ model: entry.name ?? entry.model }) }) : {};
        return ollamaInfo(entry, shown);
      }),
    );
  }
  const entries = ((object(listing).data as unknown[] | undefined) ?? []).map(object);
  const props = entries.length > 0 ? await quietly(`${serverRoot(baseUrl)}/props`) : {};
  return entries.map((entry) => openaiInfo(entry, Object.keys(props).length ? props : undefined));
}

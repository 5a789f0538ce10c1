/** The model card: what is wrong with the model that answers, and the fix to copy. */
import type { LlmStatus } from '../protocol';
import { escapeHtml } from './html';

export interface ModelProblem {
  /** What went wrong, as the server said it. */
  message: string;
  /** `unreachable` (start the server), `missing` (pull the model), `timeout`, `other`. */
  kind: 'unreachable' | 'missing' | 'timeout' | 'other';
}

/** Classify a model error message from the server. */
export function modelProblem(message: string): ModelProblem {
  const text = message.toLowerCase();
  const kind: ModelProblem['kind'] = /not (available|found|pulled|served)|pull |no such model|model .*(does not exist|not loaded)/.test(text)
    ? 'missing'
    : /timed? ?out|timeout|did not answer|no answer within/.test(text)
      ? 'timeout'
      : /not reachable|unreachable|connect|refused|not running/.test(text)
        ? 'unreachable'
        : 'other';
  return { message, kind };
}

/** The port of a model server's URL (its scheme's default when none is written). */
export function urlPort(url: string): number | undefined {
  try {
    const parsed = new URL(url);
    return parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
  } catch {
    return undefined;
  }
}

/** The OpenAI-compatible server a port suggests: LM Studio's 1234, vLLM's 8000, Ollama's
 * 11434, else llama.cpp's llama-server (8080 by default). */
export function openAiServerFor(port: number | undefined): 'lmstudio' | 'vllm' | 'ollama' | 'llama-server' {
  return port === 1234 ? 'lmstudio' : port === 8000 ? 'vllm' : port === 11434 ? 'ollama' : 'llama-server';
}

/**
 * The command a user runs to fix it, for the configured provider and port: `ollama serve`
 * (`OLLAMA_HOST=… ollama serve` on another port), `ollama pull MODEL`, `llama-server -m
 * model.gguf --port N`, `lms server start --port N`, `vllm serve MODEL --port N`; none
 * when the fix is choosing another model.
 */
export function fixCommand(problem: ModelProblem, llm: LlmStatus | undefined): string | undefined {
  const port = llm ? urlPort(llm.host) : undefined;
  const model = llm?.model ?? '';
  if (llm?.provider === 'openai') {
    if (problem.kind === 'missing') {
      return undefined;
    }
    const at = port ?? 8080;
    switch (openAiServerFor(port)) {
      case 'lmstudio':
        return `lms server start --port ${at}`;
      case 'vllm':
        return `vllm serve ${model || 'MODEL'} --port ${at}`;
      case 'ollama':
        return 'ollama serve';
      default:
        return `llama-server -m ${/\.gguf$/i.test(model) ? model : 'model.gguf'} --port ${at}`;
    }
  }
  if (problem.kind === 'missing') {
    return `ollama pull ${model}`.trim();
  }
  return port && port !== 11434 && llm ? `OLLAMA_HOST=${new URL(llm.host).host} ollama serve` : 'ollama serve';
}

/** What the model card's "Open Settings" shows: only the model's settings, for its provider. */
export function modelSettingsQuery(llm: LlmStatus | undefined): string {
  const ids =
    llm?.provider === 'openai'
      ? ['kb.llm.provider', 'kb.llm.baseUrl', 'kb.llm.model', 'kb.llm.apiKeyEnv', 'kb.llm.mode', 'kb.llm.timeout']
      : ['kb.llm.provider', 'kb.llm.baseUrl', 'kb.llm.model', 'kb.ollama.host', 'kb.ollama.model', 'kb.llm.mode', 'kb.ollama.timeout'];
  return ids.map((id) => `@id:${id}`).join(' ');
}

/** The one card saying what is wrong with the model, with what to do about it. */
export function renderModelCard(problem: ModelProblem, llm: LlmStatus | undefined): string {
  const command = fixCommand(problem, llm);
  const openai = llm?.provider === 'openai';
  const title =
    problem.kind === 'missing'
      ? openai
        ? 'The server does not serve this model'
        : 'The model is not installed'
      : problem.kind === 'timeout'
        ? 'The model did not answer in time'
        : problem.kind === 'unreachable'
          ? 'No model is reachable'
          : 'The model could not answer';
  const where = llm ? `<div class="model-where"><code>${escapeHtml(llm.model)}</code> at <code>${escapeHtml(llm.host)}</code></div>` : '';
  const works = openai
    ? 'Any OpenAI-compatible server works: llama.cpp’s llama-server, LM Studio, vLLM.'
    : 'Ollama, or any OpenAI-compatible server (llama-server, LM Studio, vLLM): Choose a model.';
  return (
    `<div class="model-title" title="${escapeHtml(problem.message)}">${escapeHtml(title)}</div>` +
    `<div class="model-message">${escapeHtml(problem.message)}</div>${where}` +
    `<div class="model-note">${escapeHtml(works)} Until a model answers, questions get the best matching passages.</div>` +
    `<div class="model-actions">` +
    `<button type="button" data-action="chooseModel">Choose a model…</button>` +
    `<button type="button" class="secondary" data-action="openSettings" data-query="${escapeHtml(modelSettingsQuery(llm))}">Open settings</button>` +
    `<button type="button" class="secondary" data-action="retry">Retry</button>` +
    (command
      ? `<button type="button" class="secondary copy-fix" data-action="copyFix" data-text="${escapeHtml(command)}" title="Copy to run in a terminal">Copy <code>${escapeHtml(command)}</code></button>`
      : '') +
    `</div>`
  );
}

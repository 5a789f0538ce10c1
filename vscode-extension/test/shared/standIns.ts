/**
 * The scripted model servers of tests/fakes/ (real HTTP on 127.0.0.1) as processes: an
 * OpenAI-compatible one (llama-server's API: /v1/models, /v1/chat/completions) or
 * Ollama's API, listing the given models and answering every chat with `content`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { REPO_ROOT } from './browser';
import { serverPython } from './server';

export interface StandIn {
  url: string;
  port: number;
  stop(): void;
}

const SCRIPT = `
import json, signal, sys, threading
from tests.fakes.ollama_server import ScriptedOllama
from tests.fakes.openai_server import ScriptedOpenAI
kind, models, default = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
options = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
cls = ScriptedOpenAI if kind == "openai" else ScriptedOllama
server = cls([], models=models, default=default or None, **options).start()
done = threading.Event()
for signum in (signal.SIGTERM, signal.SIGINT):
    signal.signal(signum, lambda *_: done.set())
print(server.port, flush=True)
done.wait()
server.close()
`;

/** Start a stand-in; resolves once it listens. `default`: the turn every chat gets
 * (tests/fakes/ollama_server.py's dict form: `{content, chunk_chars, delay}`); `options`:
 * the stand-in's own keywords (`tools`, `n_ctx`, `capabilities`). */
export function startStandIn(
  kind: 'openai' | 'ollama',
  models: string[],
  defaultTurn: Record<string, unknown> = {},
  options: Record<string, unknown> = {},
): Promise<StandIn> {
  const args = ['-c', SCRIPT, kind, JSON.stringify(models), JSON.stringify(defaultTurn), JSON.stringify(options)];
  const child: ChildProcess = spawn(serverPython(), args, {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => {
      const port = Number(line.trim());
      const url = kind === 'openai' ? `http://127.0.0.1:${port}/v1` : `http://127.0.0.1:${port}`;
      resolve({ url, port, stop: () => child.kill('SIGTERM') });
    });
    child.once('exit', (code) => reject(new Error(`the ${kind} stand-in exited (${code}):\n${stderr}`)));
  });
}

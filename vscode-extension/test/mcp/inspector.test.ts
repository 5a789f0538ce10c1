/**
 * A second, independent MCP client: the MCP Inspector's CLI (`@modelcontextprotocol/inspector
 * --cli`, TypeScript SDK, installed by `npm ci`) against the real `kb mcp` on a copy of
 * examples/workspace — `tools/list` and a `tools/call` of `search` over stdio, and
 * `tools/list` over Streamable HTTP.
 *
 * The workspace is indexed first (`kb index`), so the Inspector's short-lived server
 * answers from a complete index. The test embedder keeps the model files out of it.
 */
import { strict as assert } from 'node:assert';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../shared/browser';
import { sampleWorkspace, serverPython } from '../shared/server';

const run = promisify(execFile);
const INSPECTOR = join(REPO_ROOT, 'node_modules', '.bin', 'mcp-inspector');
const TIMEOUT_MS = 180_000;
const MEXICO = 'payments/mexico-payments.md';

/** Environment for the Python server: the test embedder, no model. */
const SERVER_ENV: Record<string, string> = {
  PYTHONPATH: [REPO_ROOT, join(REPO_ROOT, 'server')].join(':'),
  KB_EMBEDDER_FACTORY: 'tests.fakes.embedder:HashingEmbedder',
  KB_TEST_EMBEDDER: 'hashing',
  KB_OLLAMA_HOST: 'http://127.0.0.1:9',
};

let workspace: string;
let storage: string;

function serverCommand(): [string, ...string[]] {
  return [serverPython(), '-m', 'kb_lsp.cli', 'mcp', '--workspace', workspace, '--storage', storage];
}

/** Run the Inspector CLI and parse the JSON it prints. */
async function inspector(target: string[], ...args: string[]): Promise<Record<string, unknown>> {
  const envArgs = target[0]?.startsWith('http') ? [] : Object.entries(SERVER_ENV).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
  const { stdout } = await run(INSPECTOR, [...envArgs, '--cli', ...target, ...args], {
    timeout: TIMEOUT_MS,
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, ...SERVER_ENV },
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe('kb mcp through the MCP Inspector CLI', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    workspace = sampleWorkspace('kb-mcp-');
    storage = mkdtempSync(join(tmpdir(), 'kb-mcp-storage-'));
    await run(serverPython(), ['-m', 'kb_lsp.cli', 'index', workspace, '--storage', storage], {
      timeout: TIMEOUT_MS,
      env: { ...process.env, ...SERVER_ENV },
    });
  });

  it('tools/list over stdio names every tool with a schema', async () => {
    const listed = await inspector(serverCommand(), '--method', 'tools/list');
    const tools = listed.tools as { name: string; inputSchema: { type: string }; outputSchema?: unknown }[];
    assert.deepEqual(
      tools.map((t) => t.name).sort(),
      ['ask', 'list_files', 'open_result', 'read_file', 'schema', 'search', 'status', 'summarize_file'],
    );
    for (const tool of tools) {
      assert.equal(tool.inputSchema.type, 'object', tool.name);
      assert.ok(tool.outputSchema, `${tool.name} has an output schema`);
    }
  });

  it('tools/call search returns the numbered list, as text and as structured content', async () => {
    const result = await inspector(
      serverCommand(),
      '--method', 'tools/call',
      '--tool-name', 'search',
      '--tool-arg', 'query=mexico payments',
    );
    assert.notEqual(result.isError, true, JSON.stringify(result));
    const text = (result.content as { type: string; text: string }[])[0]?.text ?? '';
    assert.match(text, new RegExp(`^1, ${MEXICO} \\(filename match\\)\\n`));
    const structured = result.structuredContent as { results: { n: number; path: string; label: string }[] };
    assert.equal(structured.results[0]?.path, MEXICO);
    assert.deepEqual(
      structured.results.map((hit) => hit.n),
      structured.results.map((_, i) => i + 1),
    );
    for (const hit of structured.results) {
      assert.ok(text.includes(`${hit.n}, ${hit.path} (${hit.label})`), `${hit.n} is in the text`);
    }
  });

  describe('over Streamable HTTP', () => {
    let server: ChildProcess;
    let url = '';
    let log = '';

    before(async () => {
      const [python, ...args] = serverCommand();
      server = spawn(python, [...args, '--http', '127.0.0.1:0'], {
        env: { ...process.env, ...SERVER_ENV },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`kb mcp --http did not listen:\n${log}`)), TIMEOUT_MS);
        server.stderr?.on('data', (chunk: Buffer) => {
          log += chunk.toString();
          const found = /listening on (http:\/\/\S+)/.exec(log);
          if (found?.[1]) {
            clearTimeout(timer);
            resolve(found[1]);
          }
        });
        server.on('exit', (code) => reject(new Error(`kb mcp --http exited with ${code}:\n${log}`)));
      });
    });

    after(() => {
      server?.kill('SIGTERM');
    });

    it('tools/list and a search', async () => {
      const listed = await inspector([url, '--transport', 'http'], '--method', 'tools/list');
      assert.equal((listed.tools as unknown[]).length, 8);
      const result = await inspector(
        [url, '--transport', 'http'],
        '--method', 'tools/call',
        '--tool-name', 'search',
        '--tool-arg', 'query=deploy checklist',
      );
      const structured = result.structuredContent as { results: { path: string }[] };
      assert.equal(structured.results[0]?.path, 'engineering/deploy-checklist.md');
    });
  });
});

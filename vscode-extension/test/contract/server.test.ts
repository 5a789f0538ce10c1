/**
 * Contract test: the extension's protocol layer (protocol.ts + the typed `request`)
 * against the real Python server, `python -m kb_lsp` over stdio via vscode-jsonrpc,
 * on a copy of examples/workspace. Payloads are checked key by key against the
 * interfaces, so the two sides cannot drift.
 */
import { strict as assert } from 'node:assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import {
  createMessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import {
  ErrorCodes,
  Methods,
  Notifications,
  ServerCommands,
  type AskEvent,
  type IndexStatus,
  type SearchResponse,
} from '../../src/protocol';
import { initializationOptions, serverSettings } from '../../src/settings';
import { reader } from '../shared/settings';
import { sampleWorkspace, serverPython } from '../shared/server';
import { request, STATUS_PROBE } from '../../src/request';
import { assertIndexStatus, assertRange, assertShape } from './assertShape';

const DEADLINE_MS = 120_000;

let proc: ChildProcess;
let conn: MessageConnection;
let workspace: string;
let stderr = '';
const indexChanges: IndexStatus[] = [];
const askEvents: AskEvent[] = [];
let capabilities: { executeCommandProvider?: { commands: string[] }; hoverProvider?: unknown } = {};

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) {
      return value;
    }
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}\n--- server stderr ---\n${stderr.slice(-4000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function rpcError(promise: Promise<unknown>): Promise<ResponseError<unknown>> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof ResponseError, `expected a JSON-RPC error, got ${String(err)}`);
    return err;
  }
  throw new Error('expected the request to fail');
}

describe('the TypeScript protocol layer against the real Python server', () => {
  before(async () => {
    workspace = sampleWorkspace('kb-contract-');
    const storage = mkdtempSync(join(tmpdir(), 'kb-contract-store-'));
    // Settings built exactly as the extension builds them from VS Code settings (pulled by
    // the server with workspace/configuration; the storage alone at initialize); the LLM
    // points at a closed port so questions take the no-model path.
    const settings = reader({ 'ollama.host': 'http://127.0.0.1:9' });
    const options = serverSettings(settings, storage);
    proc = spawn(serverPython(), ['-m', 'kb_lsp'], { cwd: workspace, stdio: ['pipe', 'pipe', 'pipe'] });
    proc.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
    conn.onNotification(Notifications.indexChanged, (status: IndexStatus) => indexChanges.push(status));
    conn.onNotification(Notifications.askEvent, (event: AskEvent) => askEvents.push(event));
    conn.onRequest('workspace/configuration', (params: { items: { section?: string }[] }) =>
      params.items.map((item) => (item.section === 'kb' ? options : null)),
    );
    conn.onRequest('window/workDoneProgress/create', () => null);
    conn.onRequest('client/registerCapability', () => null);
    conn.onNotification(() => undefined);
    conn.listen();
    const root = pathToFileURL(workspace).href;
    const init = await conn.sendRequest<{ capabilities: typeof capabilities }>('initialize', {
      processId: process.pid,
      clientInfo: { name: 'kb-lsp contract test' },
      rootUri: root,
      workspaceFolders: [{ uri: root, name: 'workspace' }],
      initializationOptions: initializationOptions(settings, storage),
      capabilities: {
        workspace: { configuration: true, workspaceFolders: true, didChangeWatchedFiles: { dynamicRegistration: true } },
        window: { workDoneProgress: true },
        textDocument: { hover: { contentFormat: ['markdown', 'plaintext'] } },
      },
    });
    capabilities = init.capabilities;
    await conn.sendNotification('initialized', {});
  });

  after(async () => {
    if (conn) {
      try {
        await Promise.race([conn.sendRequest('shutdown'), new Promise((r) => setTimeout(r, 10_000))]);
        await conn.sendNotification('exit');
      } catch {
        // the process may be gone already
      }
    }
    await new Promise<void>((resolve) => {
      if (!proc || proc.exitCode !== null) {
        resolve();
        return;
      }
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        resolve();
      }, 10_000);
      proc.on('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    conn?.dispose();
  });

  it('offers the commands protocol.ts names, and hovers', () => {
    const commands = capabilities.executeCommandProvider?.commands ?? [];
    const declared: string[] = Object.values(ServerCommands);
    for (const command of commands.filter((c) => c.startsWith('kb.'))) {
      assert.ok(declared.includes(command), `${command} is declared in protocol.ts`);
    }
    // kb.ask and kb.summarize are checked with their requests below.
    for (const command of [ServerCommands.search, ServerCommands.openResult, ServerCommands.status, ServerCommands.reindex]) {
      assert.ok(commands.includes(command), `the server offers ${command}`);
    }
    assert.ok(capabilities.hoverProvider, 'hover is provided');
  });

  it('indexes the workspace and reports IndexStatus by kb/status and kb/indexChanged', async () => {
    const status = await waitFor('the index to be ready', async () => {
      const s = await request(conn, Methods.status, {});
      assertIndexStatus(s);
      if (s.state === 'error') {
        throw new Error(`the index failed: ${s.message ?? '(no message)'}\n--- server stderr ---\n${stderr.slice(-3000)}`);
      }
      return s.state === 'ready' && (s.pending ?? 0) === 0 && s.files > 0 ? s : undefined;
    });
    assert.ok(status.files >= 10, `files indexed: ${status.files}`);
    assert.ok(status.chunks >= status.files);
    assert.ok(indexChanges.length > 0, 'kb/indexChanged was sent');
    indexChanges.forEach((s) => assertIndexStatus(s));
  });

  it('answers kb/status with the probe flag the extension sends on Retry', async () => {
    const status = await conn.sendRequest<IndexStatus>(Methods.status, STATUS_PROBE);
    assertIndexStatus(status);
  });

  let search: SearchResponse;

  it('kb/search returns the numbered list in the declared shape', async () => {
    search = await request(conn, Methods.search, { query: 'deploy checklist' });
    assertShape('SearchResponse', search);
    assertIndexStatus(search.index);
    assert.equal(search.query, 'deploy checklist');
    assert.ok(search.results.length >= 2, `results: ${search.results.length}`);
    search.results.forEach((hit, i) => {
      assertShape('SearchHit', hit);
      assertRange(hit.range);
      assert.equal(hit.n, i + 1);
      assert.ok(['filename match', 'context match'].includes(hit.label));
      assert.equal(typeof hit.score, 'number');
      assert.ok(!hit.path.includes('\\') && !hit.path.startsWith('/'), `workspace-relative path: ${hit.path}`);
      assert.ok(hit.uri.startsWith('file://') && decodeURIComponent(hit.uri).endsWith(hit.path), hit.uri);
    });
    const top = search.results[0];
    assert.equal(top.path, 'engineering/deploy-checklist.md');
    assert.equal(top.label, 'filename match');
  });

  it('kb/openResult returns result N of the last search, and refuses a missing N', async () => {
    const second = await request(conn, Methods.openResult, { n: 2 });
    assertShape('OpenResultResponse', second);
    assertRange(second.range);
    const expected = search.results[1];
    assert.deepEqual(second, { uri: expected.uri, path: expected.path, range: expected.range });
    const missing = search.results.length + 1;
    const err = await rpcError(request(conn, Methods.openResult, { n: missing }));
    assert.equal(err.code, ErrorCodes.invalidParams);
    assert.match(err.message, new RegExp(`${missing}`));
  });

  it('refuses bad params with InvalidParams and a readable message', async () => {
    const err = await rpcError(request(conn, Methods.search, { query: '' }));
    assert.equal(err.code, ErrorCodes.invalidParams);
    assert.ok(err.message.length > 0);
    const still = await request(conn, Methods.status, {});
    assertIndexStatus(still);
  });

  it('answers the same params through workspace/executeCommand', async () => {
    const viaCommand = await conn.sendRequest<SearchResponse>('workspace/executeCommand', {
      command: ServerCommands.search,
      arguments: [{ query: 'payment file formats' }],
    });
    assertShape('SearchResponse', viaCommand);
    assert.ok(viaCommand.results.some((hit) => hit.path === 'payments/payment-file-formats.md'));
  });

  it("kb/related returns the numbered list of a file's neighbours in the declared shape", async () => {
    const related = await request(conn, Methods.related, { path: 'payments/mexico-payments.md', limit: 5, numbered: false });
    assertShape('RelatedResponse', related);
    assertIndexStatus(related.index);
    assert.equal(related.path, 'payments/mexico-payments.md');
    assert.ok(related.results.length >= 1 && related.results.length <= 5, `results: ${related.results.length}`);
    related.results.forEach((hit, i) => {
      assertShape('SearchHit', hit);
      assert.equal(hit.n, i + 1);
      assert.equal(hit.label, 'related');
      assert.notEqual(hit.path, 'payments/mexico-payments.md');
    });
    const err = await rpcError(request(conn, Methods.related, { path: 'no/such/file.md' }));
    assert.equal(err.code, ErrorCodes.invalidParams);
    assert.match(err.message, /not in the knowledge base/);
  });

  it('kb/indexControl answers an IndexStatus that says whether indexing is paused', async () => {
    const paused = await request(conn, Methods.indexControl, { action: 'pause' });
    assertIndexStatus(paused);
    assert.equal(paused.paused, true);
    const resumed = await request(conn, Methods.indexControl, { action: 'resume' });
    assertIndexStatus(resumed);
    assert.equal(resumed.paused ?? false, false);
  });

  it('kb/schema lists the metadata fields in the declared shape', async () => {
    const schema = await request(conn, Methods.schema, {});
    assert.ok(capabilities.executeCommandProvider?.commands.includes(ServerCommands.schema), 'kb.schema is offered');
    assertShape('SchemaResponse', schema);
    const status = await request(conn, Methods.status, {});
    assert.equal(schema.files, status.files);
    const fields = new Map(schema.fields.map((field) => [field.name, field]));
    // Every file has a folder; six notes of examples/workspace name an owner in front matter.
    assert.equal(fields.get('folder')?.files, status.files);
    assert.deepEqual(fields.get('owner'), {
      name: 'owner',
      types: ['string'],
      files: 6,
      top: [
        { value: 'Priya Raman', count: 3 },
        { value: 'Ana López', count: 1 },
        { value: 'Mariana Costa', count: 1 },
        { value: 'Tomás Okafor', count: 1 },
      ],
      // No schema in examples/workspace: no field was filled in by a model, and no model's
      // kept/rejected counts to show.
      extracted: 0,
      models: [],
    });
    assert.deepEqual(fields.get('review')?.types, ['date']);
    // The filter those fields allow narrows kb/search.
    const owned = await request(conn, Methods.search, { query: 'payments', filter: 'owner:"Priya Raman"', limit: 50 });
    assert.ok(owned.results.length > 0);
    const priyas = ['payments/mexico-payments.md', 'projects/policy_brief.md', 'runbooks/treasury-close.md'];
    owned.results.forEach((hit) => assert.ok(priyas.includes(hit.path), hit.path));
  });

  it('refuses a malformed filter with InvalidParams naming the character', async () => {
    const err = await rpcError(request(conn, Methods.search, { query: 'payments', filter: 'owner:"Priya' }));
    assert.equal(err.code, ErrorCodes.invalidParams);
    assert.match(err.message, /character 7/);
    const inline = await rpcError(request(conn, Methods.search, { query: 'payments review>2027-13' }));
    assert.equal(inline.code, ErrorCodes.invalidParams);
    assert.match(inline.message, /character \d+/);
  });

  it('kb/search says what looks mistyped beside the results, and a did-you-mean that finds files', async () => {
    const slip = await request(conn, Methods.search, { query: 'ownr:priya' });
    assertShape('SearchResponse', slip);
    const warnings = slip.warnings ?? [];
    assert.equal(warnings.length, 1);
    assertShape('QueryWarning', warnings[0]);
    assert.deepEqual(
      { ...warnings[0], message: undefined },
      { where: 'query', position: 0, message: undefined, suggestion: 'owner:"Priya Raman"' },
    );
    const typo = await request(conn, Methods.search, { query: 'incidnet respnse' });
    assert.equal(typo.didYouMean, 'incident response');
    const fixed = await request(conn, Methods.search, { query: typo.didYouMean ?? '' });
    assert.equal(fixed.results[0]?.path, 'runbooks/incident-response.md');
  });

  it('kb/examples offers searches, questions and filters made from the open index', async () => {
    const examples = await request(conn, Methods.examples, {});
    assertShape('ExamplesResponse', examples);
    assert.ok(capabilities.executeCommandProvider?.commands.includes(ServerCommands.examples), 'kb.examples is offered');
    const searches = examples.searches ?? [];
    assert.equal(searches.length, 2);
    for (const query of searches) {
      const found = await request(conn, Methods.search, { query });
      assert.ok(found.results.length > 0, query);
    }
    assert.deepEqual(examples.filters, ['tag:payments', 'owner:"Priya Raman"']);
  });

  it('kb/reindex returns an IndexStatus', async () => {
    const status = await request(conn, Methods.reindex, {});
    assertIndexStatus(status);
    assert.ok(status.files > 0);
  });

  it('kb/ask answers in the declared shape (no model reachable: passages, naming the host)', async () => {
    const response = await request(conn, Methods.ask, { question: 'What is on the deploy checklist?' });
    // No model listens on 127.0.0.1:9: the answer is the fallback (never a JSON-RPC
    // error), a step says which host did not answer, and it still cites the best passages.
    assert.equal(response.mode, 'fallback');
    assert.ok(
      response.steps.some((s) => s.kind === 'status' && /127\.0\.0\.1:9/.test(s.text)),
      'a step names the host that did not answer',
    );
    assert.ok(response.sources.length > 0, 'the fallback answer cites passages');
    assert.ok(capabilities.executeCommandProvider?.commands.includes(ServerCommands.ask), 'kb.ask is offered');
    assertShape('AskResponse', response, ['conversationId']);
    assertShape('Usage', response.usage);
    response.sources.forEach((s) => {
      assertShape('Source', s);
      assertRange(s.range);
    });
    response.steps.forEach((s) => assertShape('Step', s, ['tool', 'args']));
    assert.ok(['answer', 'clarify', 'step_limit', 'error', 'cancelled'].includes(response.stop));
    assert.ok(response.answer.length > 0);
    askEvents.forEach((e) => assertShape('AskEvent', e, ['tool', 'args']));
    // The steps streamed as kb/askEvent notifications, all under one askId.
    if (response.steps.length > 0) {
      await waitFor('the streamed steps', () => Promise.resolve(askEvents.length >= response.steps.length ? true : undefined));
      assert.equal(new Set(askEvents.map((e) => e.askId)).size, 1);
      assert.deepEqual(
        askEvents.map((e) => e.kind),
        response.steps.map((s) => s.kind),
      );
    }
  });

  it('kb/summarize answers in the declared shape (no model reachable: an extractive summary)', async () => {
    const summary = await request(conn, Methods.summarize, { file: 'glossary.md' });
    assert.ok(capabilities.executeCommandProvider?.commands.includes(ServerCommands.summarize));
    assertShape('SummarizeResponse', summary);
    assert.equal(summary.path, 'glossary.md');
    assert.equal(summary.extractive, true);
    assert.ok(summary.summary.length > 0);
  });
});

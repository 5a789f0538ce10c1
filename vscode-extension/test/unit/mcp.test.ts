import * as vscode from './vscodeStub';
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import {
  COPY_MCP_CONFIGURATION,
  KB_TOOLS,
  listedKbTools,
  MCP_LABEL,
  MCP_PROVIDER_ID,
  mcpJson,
  mcpLaunch,
  mcpSupport,
  registerCopyCommand,
  registerMcpServer,
  useSettingsReader,
} from '../../src/mcp';

const ROOT = join(__dirname, '..', '..', '..');
const noPythonExtension = (): Promise<undefined> => Promise.resolve(undefined);

/** The parts of an `ExtensionContext` the MCP registration reads. */
const context = {
  storageUri: vscode.Uri.file('/home/me/.vscode/workspaceStorage/abc/kb-lsp.kb-lsp'),
  globalStorageUri: vscode.Uri.file('/home/me/.vscode/globalStorage/kb-lsp.kb-lsp'),
  extension: { packageJSON: { version: '0.1.0' } },
} as unknown as Parameters<typeof registerMcpServer>[0];

/** Members of the `vscode` module that the stub does not have, added for one test. */
const stub = vscode as unknown as Record<string, unknown>;
const added: string[] = [];
function provide(members: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(members)) {
    added.push(key);
    stub[key] = value;
  }
}

const clipboard: string[] = [];
const listeners: string[] = [];

useSettingsReader(() => ({
  keys: ['server.python', 'ollama.model'],
  restricted: [],
  machineScoped: ['server.python'],
  trusted: true,
  get: (key: string) => vscode.configuration.get(key),
  inspect: (key: string) => ({ globalValue: vscode.configuration.get(key) }),
}));

beforeEach(() => {
  vscode.reset();
  clipboard.length = 0;
  listeners.length = 0;
  vscode.workspaceFolders.push({ uri: vscode.Uri.file('/work/wiki'), name: 'wiki', index: 0 });
  vscode.configuration.set('server.python', '/venv/bin/python');
  vscode.configuration.set('ollama.model', 'llama3.1:8b');
  Object.assign(vscode.env, { clipboard: { writeText: (text: string) => Promise.resolve(void clipboard.push(text)) } });
  Object.assign(vscode.workspace, {
    onDidChangeConfiguration: () => ({ dispose: () => listeners.push('configuration') }),
    onDidChangeWorkspaceFolders: () => ({ dispose: () => listeners.push('folders') }),
  });
});

afterEach(() => {
  for (const key of added.splice(0)) {
    delete stub[key];
  }
});

describe('kb mcp launch and mcp.json', () => {
  it('runs the package module on the workspace folders, the storage and the settings', () => {
    const launch = mcpLaunch('/venv/bin/python', ['/work/wiki', '/work/notes'], {
      storage: '/store',
      ollama: { host: 'http://gpu:11434' },
    });
    assert.deepEqual(launch, {
      command: '/venv/bin/python',
      args: [
        '-m', 'kb_lsp.cli', 'mcp',
        '--workspace', '/work/wiki',
        '--workspace', '/work/notes',
        '--storage', '/store',
        '--settings', '{"ollama":{"host":"http://gpu:11434"}}',
      ],
    });
    // Without settings of its own, no --settings.
    assert.deepEqual(mcpLaunch('python3', ['/w'], {}).args, ['-m', 'kb_lsp.cli', 'mcp', '--workspace', '/w']);
  });

  it('mcp.json is VS Code\'s format with one stdio server', () => {
    const json = JSON.parse(mcpJson({ command: 'py', args: ['-m', 'kb_lsp.cli', 'mcp'] })) as unknown;
    assert.deepEqual(json, { servers: { kb: { type: 'stdio', command: 'py', args: ['-m', 'kb_lsp.cli', 'mcp'] } } });
  });
});

describe('MCP server definition provider', () => {
  it('is not registered where VS Code lacks the API, and the log says which version', () => {
    assert.deepEqual(mcpSupport({ version: '1.100.3', lm: {} }), {
      available: false,
      reason:
        'VS Code 1.100.3 has no MCP server definition API ' +
        '(vscode.lm.registerMcpServerDefinitionProvider, VS Code 1.100 and later)',
    });
    provide({ version: '1.100.3' });
    const log: string[] = [];
    const { registration, disposables } = registerMcpServer(context, noPythonExtension, { appendLine: (l) => log.push(l) });
    assert.equal(registration.registered, false);
    assert.deepEqual(disposables, []);
    assert.match(log.join('\n'), /MCP server not registered: VS Code 1\.100\.3 has no MCP server definition API/);
  });

  it('registers a stdio definition with the same interpreter, folders, storage and settings', async () => {
    const registered: { id: string; provider: { provideMcpServerDefinitions(token: unknown): Promise<object[]> } }[] = [];
    class McpStdioServerDefinition {
      constructor(
        public label: string,
        public command: string,
        public args: string[],
        public env: Record<string, string>,
        public version: string,
      ) {}
    }
    provide({
      version: '1.101.0',
      McpStdioServerDefinition,
      lm: {
        registerMcpServerDefinitionProvider: (id: string, provider: (typeof registered)[0]['provider']) => {
          registered.push({ id, provider });
          return { dispose: () => listeners.push('provider') };
        },
      },
    });
    const log: string[] = [];
    const { registration, disposables } = registerMcpServer(context, noPythonExtension, { appendLine: (l) => log.push(l) });
    assert.equal(registration.registered, true);
    assert.equal(registered[0]?.id, MCP_PROVIDER_ID);
    assert.match(log.join('\n'), /MCP server registered/);

    const [definition] = (await registered[0]?.provider.provideMcpServerDefinitions({})) as McpStdioServerDefinition[];
    assert.equal(definition?.label, MCP_LABEL);
    assert.equal(definition?.command, '/venv/bin/python');
    assert.deepEqual(definition?.args.slice(0, 5), ['-m', 'kb_lsp.cli', 'mcp', '--workspace', '/work/wiki']);
    assert.deepEqual(definition?.args.slice(5, 7), ['--storage', context.storageUri?.fsPath]);
    assert.equal(definition?.args[7], '--settings');
    assert.equal((JSON.parse(definition?.args[8] ?? '{}') as { ollama: { model: string } }).ollama.model, 'llama3.1:8b');
    assert.equal(definition?.version, '0.1.0');

    for (const d of disposables) {
      d.dispose();
    }
    assert.ok(listeners.includes('provider') && listeners.includes('configuration'));
  });

  it('the package.json contributes the provider id the code registers', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      contributes: {
        mcpServerDefinitionProviders: { id: string }[];
        modelContextServerCollections: { id: string }[];
        commands: { command: string; title: string }[];
      };
    };
    assert.deepEqual(manifest.contributes.mcpServerDefinitionProviders.map((p) => p.id), [MCP_PROVIDER_ID]);
    // VS Code 1.100's name for the same contribution point.
    assert.deepEqual(manifest.contributes.modelContextServerCollections.map((p) => p.id), [MCP_PROVIDER_ID]);
    const command = manifest.contributes.commands.find((c) => c.command === COPY_MCP_CONFIGURATION);
    assert.equal(command?.title, 'Copy MCP Configuration');
  });
});

describe('the kb tools in VS Code\'s tool list', () => {
  it('counts the MCP tools named after a kb tool, none where VS Code has no tool list', () => {
    const all = KB_TOOLS.map((name) => ({ name: `mcp_abc_${name}`, tags: ['mcp'] }));
    assert.deepEqual(listedKbTools({ lm: { tools: all } }), KB_TOOLS);
    assert.deepEqual(listedKbTools({ lm: { tools: [{ name: 'read_file', tags: ['vscode_editing'] }] } }), []);
    assert.deepEqual(listedKbTools({ lm: { tools: [] } }), []);
    assert.equal(listedKbTools({ lm: {} }), undefined);
    assert.equal(listedKbTools({}), undefined);
  });
});

describe('KB: Copy MCP Configuration', () => {
  it('puts a ready mcp.json on the clipboard and says where it goes', async () => {
    provide({ version: '1.100.3' });
    registerCopyCommand(context, noPythonExtension, { registered: false, message: 'MCP server not registered: old VS Code' });
    const json = await vscode.commands.executeCommand(COPY_MCP_CONFIGURATION);
    assert.equal(clipboard.length, 1);
    assert.equal(clipboard[0], json);
    const server = (JSON.parse(clipboard[0] ?? '{}') as { servers: { kb: { command: string; args: string[] } } }).servers.kb;
    assert.equal(server.command, '/venv/bin/python');
    assert.ok(server.args.includes('/work/wiki'));
    const info = vscode.calls.messages.find((m) => m.level === 'info')?.text ?? '';
    assert.match(info, /copied: paste it into \.vscode\/mcp\.json/);
    assert.match(info, /old VS Code/);
  });

  it('where VS Code runs the server itself, it says which kb tools VS Code lists', async () => {
    const mcpTool = (name: string) => ({ name, tags: ['mcp'], description: '', inputSchema: {} });
    provide({
      version: '1.101.0',
      lm: { tools: [mcpTool('mcp_1_search'), mcpTool('mcp_1_open_result'), { name: 'search', tags: [] }, mcpTool('other_tool')] },
    });
    registerCopyCommand(context, noPythonExtension, { registered: true, message: '' });
    await vscode.commands.executeCommand(COPY_MCP_CONFIGURATION);
    const info = vscode.calls.messages.find((m) => m.level === 'info')?.text ?? '';
    assert.match(info, /VS Code lists 2 of the 8 kb tools \(search, open_result\); this is for other clients/);
  });

  it('without a folder it says to open one, and copies nothing', async () => {
    vscode.workspaceFolders.length = 0;
    registerCopyCommand(context, noPythonExtension, { registered: true, message: '' });
    await vscode.commands.executeCommand(COPY_MCP_CONFIGURATION);
    assert.equal(clipboard.length, 0);
    assert.match(vscode.calls.messages[0]?.text ?? '', /open a folder first/);
  });
});

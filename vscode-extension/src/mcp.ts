/**
 * The knowledge base for agents: registers `kb mcp` (the MCP server of the same Python
 * package) with VS Code's MCP API, so Copilot agent mode lists the kb tools without any
 * configuration; and "KB: Copy MCP Configuration", a ready `mcp.json` snippet for any
 * other client.
 *
 * The server runs with the language server's interpreter, on the same workspace folders,
 * the same storage folder (so it shares the editor's index: read-only while the editor
 * writes it, the writer when the editor goes) and the same `kb.*` settings.
 *
 * `vscode.lm.registerMcpServerDefinitionProvider` is final from VS Code 1.101 on (with the
 * `mcpServerDefinitionProviders` contribution); VS Code 1.100 has it too but reads the
 * provider ids from `modelContextServerCollections`, so package.json contributes both.
 * This extension's `@types/vscode` (1.90) predates it, so the few members used are
 * declared here and looked up at run time. Where they are missing, or the call is
 * refused, nothing is registered and the log says why (the copy command works everywhere).
 */
import * as vscode from 'vscode';
import { choosePython, type PythonChoice, type PythonExtensionApi } from './python';
import { serverSettings, type SettingsReader } from './settings';
import { errorMessage } from './util';

export const MCP_PROVIDER_ID = 'kb-lsp.mcp';
export const MCP_LABEL = 'Knowledge base (kb-lsp)';
export const MCP_SERVER_NAME = 'kb';
export const COPY_MCP_CONFIGURATION = 'kb.copyMcpConfiguration';
/** The tools `kb mcp` serves (server/kb_lsp/mcp/server.py). */
export const KB_TOOLS = ['search', 'open_result', 'read_file', 'list_files', 'summarize_file', 'ask', 'status', 'schema'];

/** How to start `kb mcp`: a command and its arguments. */
export interface McpLaunch {
  command: string;
  args: string[];
}

/**
 * `python -m kb_lsp.cli mcp --workspace F… --storage S --settings {…}` from the
 * interpreter, the folders and the server options (`initializationOptions`' shape: the
 * storage folder plus nested `kb.*` settings).
 */
export function mcpLaunch(python: string, folders: readonly string[], options: Record<string, unknown>): McpLaunch {
  const { storage, ...settings } = options;
  const args = ['-m', 'kb_lsp.cli', 'mcp'];
  for (const folder of folders) {
    args.push('--workspace', folder);
  }
  if (typeof storage === 'string' && storage !== '') {
    args.push('--storage', storage);
  }
  if (Object.keys(settings).length > 0) {
    args.push('--settings', JSON.stringify(settings));
  }
  return { command: python, args };
}

/** A `.vscode/mcp.json` (VS Code's format) with the kb server in it. */
export function mcpJson(launch: McpLaunch): string {
  const server = { type: 'stdio', command: launch.command, args: launch.args };
  return `${JSON.stringify({ servers: { [MCP_SERVER_NAME]: server } }, null, 2)}\n`;
}

// --- VS Code's MCP API (1.101+), as far as it is used here ------------------------------

type McpEnv = Record<string, string | number | null>;

interface McpStdioServerDefinitionClass {
  new (label: string, command: string, args?: string[], env?: McpEnv, version?: string): object;
}

interface McpServerDefinitionProvider {
  readonly onDidChangeMcpServerDefinitions?: vscode.Event<void>;
  provideMcpServerDefinitions(token: vscode.CancellationToken): Promise<object[]>;
}

interface McpLm {
  registerMcpServerDefinitionProvider(id: string, provider: McpServerDefinitionProvider): vscode.Disposable;
}

/** A tool as `vscode.lm.tools` (1.95+) lists it; MCP tools are tagged `mcp`. */
interface LmToolInformation {
  readonly name: string;
  readonly tags?: readonly string[];
}

/**
 * The kb tools VS Code's own tool list has (`api`: the `vscode` module), or undefined where
 * it has no tool list. VS Code names an MCP tool `<server prefix><tool name>`; it leaves
 * out a tool whose input schema it cannot validate, so this is what agents get.
 */
export function listedKbTools(api: { lm?: unknown }): string[] | undefined {
  const tools = (api.lm as { tools?: unknown } | undefined)?.tools;
  if (!Array.isArray(tools)) {
    return undefined;
  }
  const mcpTools = (tools as LmToolInformation[]).filter((tool) => tool.tags?.includes('mcp'));
  return KB_TOOLS.filter((name) => mcpTools.some((tool) => tool.name === name || tool.name.endsWith(`_${name}`)));
}

export type McpSupport =
  | { available: true; lm: McpLm; Definition: McpStdioServerDefinitionClass }
  | { available: false; reason: string };

/** Whether this VS Code has the MCP server definition API (`api`: the `vscode` module). */
export function mcpSupport(api: { version: string; lm?: unknown; McpStdioServerDefinition?: unknown }): McpSupport {
  const lm = api.lm as Partial<McpLm> | undefined;
  if (typeof lm?.registerMcpServerDefinitionProvider !== 'function' || typeof api.McpStdioServerDefinition !== 'function') {
    return {
      available: false,
      reason:
        `VS Code ${api.version} has no MCP server definition API ` +
        '(vscode.lm.registerMcpServerDefinitionProvider, VS Code 1.100 and later)',
    };
  }
  return { available: true, lm: lm as McpLm, Definition: api.McpStdioServerDefinition as McpStdioServerDefinitionClass };
}

export interface McpRegistration {
  registered: boolean;
  /** One line for the log and the copy command: registered, or why not. */
  message: string;
}

// --- the extension's side ----------------------------------------------------------------

/** Where the Python extension's API comes from (the language server's own lookup). */
export type PythonApi = () => Promise<PythonExtensionApi | undefined>;

/** The `kb` settings as the language server gets them (`client.ts`' `readSettings`). */
export type ReadSettings = (context: vscode.ExtensionContext) => SettingsReader;

let readSettingsOf: ReadSettings | undefined;

/** The interpreter the language server would run, without setting one up (managedServer.ts). */
export type ServerPython = (setting: unknown, pythonApi: PythonApi, resource?: vscode.Uri) => Promise<PythonChoice>;

let serverPython: ServerPython = choosePython;

/** How the extension finds the server's interpreter; set once at activation. */
export function useServerPython(find: ServerPython): void {
  serverPython = find;
}

/** The settings reader the extension uses; set once at activation. */
export function useSettingsReader(read: ReadSettings): void {
  readSettingsOf = read;
}

/** The launch for the open workspace, or undefined without a folder. */
export async function currentLaunch(
  context: vscode.ExtensionContext,
  pythonApi: PythonApi,
): Promise<McpLaunch | undefined> {
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
  if (folders.length === 0) {
    return undefined;
  }
  const config = vscode.workspace.getConfiguration('kb');
  const python = await serverPython(config.get('server.python'), pythonApi, folders[0]?.uri);
  const storage = (context.storageUri ?? context.globalStorageUri).fsPath;
  const options = readSettingsOf ? serverSettings(readSettingsOf(context), storage) : { storage };
  return mcpLaunch(
    python.command,
    folders.map((f) => f.uri.fsPath),
    options,
  );
}

/** Register the MCP server definition where VS Code can take it; never throws. */
export function registerMcpServer(
  context: vscode.ExtensionContext,
  pythonApi: PythonApi,
  output: { appendLine(line: string): void },
): { registration: McpRegistration; disposables: vscode.Disposable[] } {
  const support = mcpSupport(vscode);
  const disposables: vscode.Disposable[] = [];
  let registration: McpRegistration;
  if (!support.available) {
    registration = { registered: false, message: `MCP server not registered: ${support.reason}` };
  } else {
    const changed = new vscode.EventEmitter<void>();
    const declared = (context.extension?.packageJSON as { version?: unknown } | undefined)?.version;
    const version = typeof declared === 'string' ? declared : undefined;
    const provider: McpServerDefinitionProvider = {
      onDidChangeMcpServerDefinitions: changed.event,
      provideMcpServerDefinitions: async () => {
        const launch = await currentLaunch(context, pythonApi);
        if (!launch) {
          return [];
        }
        return [new support.Definition(MCP_LABEL, launch.command, launch.args, { PYTHONUNBUFFERED: '1' }, version)];
      },
    };
    try {
      disposables.push(
        support.lm.registerMcpServerDefinitionProvider(MCP_PROVIDER_ID, provider),
        changed,
        vscode.workspace.onDidChangeConfiguration((event) => {
          if (event.affectsConfiguration('kb')) {
            changed.fire();
          }
        }),
        vscode.workspace.onDidChangeWorkspaceFolders(() => changed.fire()),
      );
      registration = {
        registered: true,
        message: `MCP server registered ("${MCP_PROVIDER_ID}"): agents in VS Code (Copilot agent mode) list the kb tools`,
      };
    } catch (err) {
      changed.dispose();
      registration = { registered: false, message: `MCP server not registered: ${errorMessage(err)}` };
    }
  }
  output.appendLine(`kb-lsp: ${registration.message}`);
  return { registration, disposables };
}

/** What VS Code's tool list says about the kb tools, for the copy command's message. */
export function listedMessage(listed: string[] | undefined): string {
  if (listed === undefined) {
    return 'VS Code runs the kb MCP server itself';
  }
  if (listed.length === 0) {
    return 'VS Code runs the kb MCP server itself; its tools are listed once it has started (MCP: List Servers)';
  }
  return `VS Code lists ${listed.length} of the ${KB_TOOLS.length} kb tools (${listed.join(', ')})`;
}

/** "KB: Copy MCP Configuration": a ready `mcp.json` on the clipboard. */
export function registerCopyCommand(
  context: vscode.ExtensionContext,
  pythonApi: PythonApi,
  registration: McpRegistration,
): vscode.Disposable {
  return vscode.commands.registerCommand(COPY_MCP_CONFIGURATION, async () => {
    try {
      const launch = await currentLaunch(context, pythonApi);
      if (!launch) {
        await vscode.window.showWarningMessage('KB: open a folder first: the MCP server serves the workspace folders.');
        return undefined;
      }
      const json = mcpJson(launch);
      await vscode.env.clipboard.writeText(json);
      const where = registration.registered ? `${listedMessage(listedKbTools(vscode))}; this is for other clients` : registration.message;
      await vscode.window.showInformationMessage(
        `KB: MCP configuration copied: paste it into .vscode/mcp.json, or adapt it for Claude Code or Continue (docs/mcp.md in the kb-lsp repository). ${where}.`,
      );
      return json;
    } catch (err) {
      await vscode.window.showErrorMessage(`KB: could not copy the MCP configuration: ${errorMessage(err)}`);
      return undefined;
    }
  });
}

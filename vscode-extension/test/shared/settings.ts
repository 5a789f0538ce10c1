/** A `SettingsReader` over plain objects, read the way VS Code would (for tests without VS Code). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { contributedSettings, type Manifest, type SettingLevels, type SettingsReader } from '../../src/settings';
import { EXTENSION_ROOT } from './browser';

/** The extension's own package.json (its generated `contributes.configuration`). */
export function manifest(): Manifest {
  return JSON.parse(readFileSync(join(EXTENSION_ROOT, 'package.json'), 'utf8')) as Manifest;
}

/** `user` / `workspace`: `kb.`-less keys → values set at that level; defaults from the manifest. */
export function reader(
  user: Record<string, unknown>,
  workspace: Record<string, unknown> = {},
  trusted = true,
  from: Manifest = manifest(),
): SettingsReader {
  const { keys, restricted, machineScoped } = contributedSettings(from);
  const inspect = (key: string): SettingLevels | undefined =>
    keys.includes(key) ? { defaultValue: undefined, globalValue: user[key], workspaceValue: workspace[key] } : undefined;
  return {
    keys,
    restricted,
    machineScoped,
    trusted,
    inspect,
    get: (key) => {
      const ignoreWorkspace = !trusted && restricted.includes(key);
      if (!ignoreWorkspace && workspace[key] !== undefined) {
        return workspace[key];
      }
      return user[key];
    },
  };
}

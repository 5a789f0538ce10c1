/**
 * Where a link in an answer or a snippet points, decided before anything is opened.
 * Only files inside a workspace folder open directly; everything else (another place on
 * disk, `..` climbing out, another scheme, the web) is reported as such so the caller can
 * ask first. Pure: paths are POSIX-style strings, folders are given as `{name, path}`.
 */

export interface Folder {
  name: string;
  /** The folder's absolute path, `/`-separated. */
  path: string;
}

/** `line`: 0-based; `last`: the last line of a span the link names (`#L12-L18`, the
 * citations' `path:12-18`), 0-based, inclusive; none for one line. */
export type LinkTarget =
  | { kind: 'workspace'; path: string; folder: Folder; line: number; last?: number }
  | { kind: 'outside'; path: string; line: number; last?: number }
  | { kind: 'web'; href: string }
  | { kind: 'invalid'; href: string };

const SCHEME = /^([a-z][a-z0-9+.-]*):/i;
// `#L12`, `#L12-L18`, `#L12-18` (GitHub style), and the agent's `path:12-18` citations.
const LINE_ANCHOR = /#L(\d+)(?:-L?(\d+))?$/;
const LINE_SUFFIX = /:(\d+)(?:[-–](\d+))?$/;

/** `a/./b/../c` → `a/c`; a leading `..` that climbs above the start is kept. */
export function normalize(path: string): string {
  const absolute = path.startsWith('/');
  const out: string[] = [];
  for (const part of path.split('/')) {
    if (!part || part === '.') {
      continue;
    }
    if (part === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') {
        out.pop();
      } else if (!absolute) {
        out.push('..');
      }
      continue;
    }
    out.push(part);
  }
  return (absolute ? '/' : '') + out.join('/');
}

function inside(path: string, folder: string): boolean {
  const root = folder.replace(/\/+$/, '');
  return path === root || path.startsWith(`${root}/`);
}

function splitLine(target: string): { path: string; line: number; last?: number } {
  const anchor = LINE_ANCHOR.exec(target) ?? LINE_SUFFIX.exec(target);
  const path = anchor ? target.slice(0, anchor.index) : target.replace(/#.*$/, '');
  const line = anchor?.[1] ? Math.max(0, Number(anchor[1]) - 1) : 0;
  const last = anchor?.[2] ? Math.max(line, Number(anchor[2]) - 1) : undefined;
  return last === undefined ? { path, line } : { path, line, last };
}

/**
 * Resolve `href` against the workspace folders. Relative links (`docs/setup.md`,
 * `./a.md#L3`) are workspace-relative (with several folders, a first segment naming a
 * folder picks it; otherwise the first folder); `file:` URIs and absolute paths must
 * fall inside a folder.
 */
export function resolveLink(href: string, folders: readonly Folder[]): LinkTarget {
  const text = href.trim();
  if (!text || text === '#') {
    return { kind: 'invalid', href };
  }
  const scheme = SCHEME.exec(text)?.[1]?.toLowerCase();
  if (scheme && scheme !== 'file' && !/^[a-z]:[\\/]/i.test(text)) {
    return scheme === 'http' || scheme === 'https' || scheme === 'mailto' ? { kind: 'web', href: text } : { kind: 'invalid', href };
  }
  let raw: string;
  try {
    raw = scheme === 'file' ? decodeURIComponent(text.replace(/^file:\/\//i, '')) : decodeURIComponent(text);
  } catch {
    return { kind: 'invalid', href };
  }
  const { path: linked, ...lines } = splitLine(raw.replace(/\\/g, '/'));
  if (!linked) {
    return { kind: 'invalid', href };
  }
  const absolute = linked.startsWith('/') || /^[a-z]:\//i.test(linked);
  if (absolute) {
    const path = normalize(linked);
    const folder = folders.find((f) => inside(path, normalize(f.path)));
    return folder ? { kind: 'workspace', path, folder, ...lines } : { kind: 'outside', path, ...lines };
  }
  const [first, ...rest] = normalize(linked).split('/');
  const named = folders.length > 1 ? folders.find((f) => f.name === first) : undefined;
  const folder = named ?? folders[0];
  if (!folder) {
    return { kind: 'outside', path: linked, ...lines };
  }
  const relative = named ? rest.join('/') : [first, ...rest].join('/');
  const path = normalize(`${normalize(folder.path)}/${relative}`);
  return inside(path, normalize(folder.path)) ? { kind: 'workspace', path, folder, ...lines } : { kind: 'outside', path, ...lines };
}

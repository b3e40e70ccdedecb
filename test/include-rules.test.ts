/**
 * Include rules (issue #16): who may import whom, checked on every import of the sources (TypeScript imports and
 * native/'s #include "..." lines), and no import cycle in the library nor in native/. The layers, bottom up: the error base and host-memory checks (solver/errors.ts, solver/memory.ts),
 * mesh/, solver/ (together the library, the main entry 'amrgrav'), validation/ ('amrgrav/validation'), bench/,
 * app/ (the command line). A file may import from its own layer and below; the rules table says what is refused.
 *
 * What counts as an import, for TypeScript: `import ... from`, `import '...'`, `export ... from`, `import(...)`
 * and `import('...')` types, type-only ones included (they are dependencies of the design, if not of the run).
 * The package's own name ('amrgrav', 'amrgrav/validation') is followed through package.json "exports" to the
 * source file, so a self-reference cannot get round a rule.
 *
 * Extending: a rule is { name, from, mayNotImport, except? } on paths relative to the repository root, with '/'
 * separators; a path ending in '/' is a folder (a prefix), any other a file. Each rule carries a `probe`: a made-up
 * source file that breaks it, run through the same reader and checker, which must report it (so a rule that
 * matches nothing fails instead of passing quietly). Another language (native #include lines) is another entry of
 * `languages`: which files, how to read their imports (`linesMatching` reads line-based ones), how to resolve them
 * to files; its rules then go in the same table.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** One import: in `file` (repository path) at `line` (1-based), of `spec` as written. */
interface Import {
  file: string;
  line: number;
  spec: string;
}

/** An import resolved to the repository file it names (undefined: a Node builtin or a dependency). */
interface Edge extends Import {
  target: string | undefined;
}

interface Rule {
  name: string;
  /** Files the rule applies to: folders ('mesh/') or files ('solver/errors.ts'). */
  from: string[];
  /** What they may not import: folders or files; '' is every file of the repository. */
  mayNotImport: string[];
  /** Allowed although matched by mayNotImport. */
  except?: string[];
  /** A source that breaks the rule: { file, text } read as if it were in the repository. */
  probe: { file: string; text: string };
}

interface Language {
  name: string;
  /** Which repository files are of this language. */
  matches(file: string): boolean;
  /** The imports of a file from its text. */
  imports(file: string, text: string): Import[];
  /** The repository file an import names, undefined when none (builtins, dependencies). */
  resolve(file: string, spec: string): string | undefined;
}

/** Folders never scanned (nor hidden ones, nor build*): dependencies and build outputs. */
const SKIP_DIRS = new Set(['node_modules', 'dist']);

// ---- rules ---------------------------------------------------------------------------------------------------

const LIBRARY = ['solver/', 'mesh/'];
/** What mesh/ may take from solver/: the error base and the host-memory checks, which import only each other. */
const SHARED_BASE = ['solver/errors.ts', 'solver/memory.ts'];

const rules: Rule[] = [
  {
    name: 'the library (solver/, mesh/) does not import what is built on it: app/, validation/, bench/, test/',
    from: LIBRARY,
    mayNotImport: ['app/', 'validation/', 'bench/', 'test/'],
    probe: { file: 'solver/probe.ts', text: "import { runMaclaurin } from 'amrgrav/validation';" },
  },
  {
    name: 'mesh/ is below solver/: from solver/ it imports only the error base and the host-memory checks',
    from: ['mesh/'],
    mayNotImport: ['solver/'],
    except: SHARED_BASE,
    probe: { file: 'mesh/probe.ts', text: "import type { GravitySolver } from '../solver/gravitySolver.js';" },
  },
  {
    name: 'the error base and the host-memory checks import nothing of the package but each other',
    from: SHARED_BASE,
    mayNotImport: [''],
    except: SHARED_BASE,
    probe: { file: 'solver/errors.ts', text: "export { MeshError } from '../mesh/errors.js';" },
  },
  {
    name: 'validation/ uses the library, not the command line, the benchmarks or the tests',
    from: ['validation/'],
    mayNotImport: ['app/', 'bench/', 'test/'],
    probe: { file: 'validation/probe.ts', text: "const { createProgress } = await import('../app/progress.js');" },
  },
  {
    name: 'only the command line itself (and tests) import app/',
    from: [...LIBRARY, 'validation/', 'bench/'],
    mayNotImport: ['app/'],
    probe: { file: 'bench/probe.ts', text: "import { UsageError } from '../app/args.js';" },
  },
];

// native/ (#include "..." lines; <...> includes are the system's): the layers, bottom up, are core/ (types, status,
// validation, thread pool, the backend and rank-engine interfaces), physics/ (the rules both backends share), tree/,
// ewald/, let/; then the backends cpu/ and cuda/ and the MPI driver mpi/ beside each other; api/ (the session that
// owns the backends); the front ends binding/ and capi/ on top.
const N = (...folders: string[]) => folders.map((f) => `native/${f}/`);
const nativeRules: Rule[] = [
  {
    name: 'native core/ is the bottom: it includes only core/ (the rank-engine interface also the LET types)',
    from: N('core'),
    mayNotImport: ['native/'],
    except: [...N('core'), 'native/let/let.h'],
    probe: { file: 'native/core/probe.h', text: '#include "tree/tree.h"' },
  },
  {
    name: 'native physics/ (the rules both backends compile) includes only core/ and physics/',
    from: N('physics'),
    mayNotImport: ['native/'],
    except: N('core', 'physics'),
    probe: { file: 'native/physics/probe.h', text: '#include "ewald/table.h"' },
  },
  {
    name: 'native tree/, ewald/, let/ include no backend, driver or front end',
    from: N('tree', 'ewald', 'let'),
    mayNotImport: N('cpu', 'cuda', 'mpi', 'api', 'binding', 'capi', 'tools'),
    probe: { file: 'native/tree/probe.cpp', text: '#include "cpu/cpu_walk.h"' },
  },
  {
    name: 'native cpu/ and cuda/ include neither each other nor the driver or the front ends',
    from: N('cpu', 'cuda'),
    mayNotImport: N('mpi', 'api', 'binding', 'capi', 'tools'),
    probe: { file: 'native/cuda/probe.cu', text: '#include "mpi/mpi_world.h"' },
  },
  {
    name: 'native cpu/ does not include cuda/',
    from: N('cpu'),
    mayNotImport: N('cuda'),
    probe: { file: 'native/cpu/probe.cpp', text: '#include "cuda/cuda_backend.h"' },
  },
  {
    name: 'native cuda/ does not include cpu/',
    from: N('cuda'),
    mayNotImport: N('cpu'),
    probe: { file: 'native/cuda/probe.cu', text: '#include "cpu/cpu_walk.h"' },
  },
  {
    name: 'native mpi/ is the driver and the exchange only: no cpu/, cuda/, api/ or front end',
    from: N('mpi'),
    mayNotImport: N('cpu', 'cuda', 'api', 'binding', 'capi', 'tools'),
    probe: { file: 'native/mpi/probe.cpp', text: '#include "cuda/cuda_backend.h"' },
  },
  {
    name: 'native api/ headers include only core/ and api/ (what the front ends see)',
    from: ['native/api/session.h', 'native/api/world.h', 'native/api/ewald.h'],
    mayNotImport: ['native/'],
    except: N('core', 'api'),
    probe: { file: 'native/api/session.h', text: '#include "cuda/cuda_backend.h"' },
  },
  {
    name: 'native binding/ and capi/ include only api/, core/, their own files and the public header',
    from: N('binding', 'capi'),
    mayNotImport: ['native/'],
    except: [...N('api', 'core', 'binding', 'capi', 'include')],
    probe: { file: 'native/capi/probe.cpp', text: '#include "mpi/mpi_world.h"' },
  },
  {
    name: 'nothing native below the front ends includes binding/ or capi/',
    from: N('core', 'physics', 'tree', 'ewald', 'let', 'cpu', 'cuda', 'mpi', 'api', 'tools'),
    mayNotImport: N('binding', 'capi'),
    probe: { file: 'native/api/probe.cpp', text: '#include "binding/convert.h"' },
  },
];
rules.push(...nativeRules);

/** Where import cycles are refused. */
const acyclic = [
  { name: 'the library (solver/, mesh/)', within: LIBRARY },
  { name: 'the rest of the TypeScript (validation/, bench/, app/)', within: ['validation/', 'bench/', 'app/'] },
  { name: 'native/ (#include)', within: ['native/'] },
];

// ---- reading imports ------------------------------------------------------------------------------------------

/** Repository path (with '/') of an absolute path. */
function repoPath(abs: string): string {
  return relative(root, abs).split(sep).join('/');
}

/**
 * Line-based imports: every match of `pattern` (its first group is the specifier) on a line of `text`. For
 * languages whose imports are lines (#include "..."); TypeScript is read with its parser instead.
 */
function linesMatching(file: string, text: string, pattern: RegExp): Import[] {
  const out: Import[] = [];
  text.split('\n').forEach((l, i) => {
    const m = pattern.exec(l);
    if (m) out.push({ file, line: i + 1, spec: m[1] });
  });
  return out;
}

/** The imports of a TypeScript source, from its syntax tree (comments and strings cannot fool it). */
function tsImports(file: string, text: string): Import[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out: Import[] = [];
  const add = (node: ts.Node | undefined) => {
    if (node && ts.isStringLiteralLike(node))
      out.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, spec: node.text });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0]);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) add(node.moduleReference.expression);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; exports: Record<string, { default: string }> };

/** 'x/y.js' -> the source 'x/y.ts' (or .d.ts / .d.mts beside a .js / .mjs) when it exists. */
function sourceOf(path: string, exists: (p: string) => boolean): string | undefined {
  const candidates = [path, path.replace(/\.js$/, '.ts'), path.replace(/\.js$/, '.d.ts'), path.replace(/\.mjs$/, '.d.mts'), `${path}.ts`, `${path}/index.ts`];
  return candidates.find(exists);
}

const fileExists = (p: string) => existsSync(join(root, p));

function tsResolve(file: string, spec: string, exists: (p: string) => boolean = fileExists): string | undefined {
  if (spec.startsWith('.')) return sourceOf(posix.normalize(posix.join(posix.dirname(file), spec)), exists) ?? `${posix.normalize(posix.join(posix.dirname(file), spec))} (missing)`;
  // the package's own name, through package.json exports: dist/solver/index.js -> solver/index.ts
  if (spec === pkg.name || spec.startsWith(`${pkg.name}/`)) {
    const entry = pkg.exports[`.${spec.slice(pkg.name.length)}`];
    if (!entry) return `${spec} (not exported)`;
    const built = posix.normalize(entry.default).replace(/^dist\//, '');
    return sourceOf(built, exists) ?? `${built} (missing)`;
  }
  return undefined; // node:*, dependencies
}

/** A native #include "spec": from native/ (the include root), the public header's folder, or the including file's. */
function nativeResolve(file: string, spec: string, exists: (p: string) => boolean = fileExists): string | undefined {
  const candidates = [`native/${spec}`, `native/include/${spec}`, posix.normalize(posix.join(posix.dirname(file), spec))];
  return candidates.find(exists) ?? `${spec} (missing)`;
}

const languages: Language[] = [
  {
    name: 'TypeScript',
    matches: (f) => /\.(ts|mts)$/.test(f) && !/\.d\.m?ts$/.test(f),
    imports: tsImports,
    resolve: (file, spec) => tsResolve(file, spec),
  },
  {
    name: 'C++/CUDA (native/)',
    matches: (f) => f.startsWith('native/') && /\.(h|hpp|cpp|cc|cu|cuh)$/.test(f),
    imports: (file, text) => linesMatching(file, text, /^\s*#\s*include\s*"([^"]+)"/),
    resolve: (file, spec) => nativeResolve(file, spec),
  },
];

/** Every source file of the repository (repository paths), outside SKIP_DIRS and hidden folders. */
function sourceFiles(dir = root): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name) && !e.name.startsWith('.') && !e.name.startsWith('build')) out.push(...sourceFiles(join(dir, e.name)));
    } else if (e.isFile()) out.push(repoPath(join(dir, e.name)));
  }
  return out;
}

function edgesOf(file: string, text: string, resolve?: (file: string, spec: string) => string | undefined): Edge[] {
  const lang = languages.find((l) => l.matches(file));
  if (!lang) return [];
  return lang.imports(file, text).map((i) => ({ ...i, target: (resolve ?? lang.resolve)(i.file, i.spec) }));
}

// ---- checking -------------------------------------------------------------------------------------------------

const under = (path: string, prefixes: readonly string[]) =>
  prefixes.some((p) => (p === '' || p.endsWith('/') ? path.startsWith(p) : path === p));

function lineText(file: string, line: number, text?: string): string {
  const t = text ?? readFileSync(join(root, file), 'utf8');
  return (t.split('\n')[line - 1] ?? '').trim();
}

/** The imports in `edges` that break `rule`, as messages naming the file, the line and the rule. */
function violations(rule: Rule, edges: Edge[], texts?: Map<string, string>): string[] {
  return edges
    .filter((e) => e.target !== undefined && under(e.file, rule.from) && under(e.target, rule.mayNotImport) && !under(e.target, rule.except ?? []))
    .map((e) => `${e.file}:${e.line}: imports ${e.target} ('${e.spec}'): ${lineText(e.file, e.line, texts?.get(e.file))}`);
}

/** Import cycles among the files under `within`: each as "a.ts:3 -> b.ts:7 -> a.ts" (Tarjan's components). */
function cycles(edges: Edge[], within: readonly string[]): string[] {
  const inside = edges.filter((e) => e.target !== undefined && under(e.file, within) && under(e.target, within));
  const next = new Map<string, Edge[]>();
  for (const e of inside) next.set(e.file, [...(next.get(e.file) ?? []), e]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const strong = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const e of next.get(v) ?? []) {
      const w = e.target!;
      if (!index.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1 || (next.get(v) ?? []).some((e) => e.target === v)) components.push(c);
    }
  };
  for (const v of new Set(inside.map((e) => e.file))) if (!index.has(v)) strong(v);
  // one cycle through each component, by a breadth-first path back to its first file
  return components.map((c) => {
    const set = new Set(c);
    const start = [...c].sort()[0];
    const via = new Map<string, Edge>();
    const queue = [start];
    while (queue.length) {
      const v = queue.shift()!;
      for (const e of next.get(v) ?? []) {
        if (!set.has(e.target!) || via.has(e.target!)) continue;
        via.set(e.target!, e);
        if (e.target === start) queue.length = 0;
        else queue.push(e.target!);
      }
    }
    const path: Edge[] = [];
    for (let v = start; path.length === 0 || v !== start; ) {
      const e = via.get(v)!;
      path.unshift(e);
      v = e.file;
    }
    return `${path.map((e) => `${e.file}:${e.line}`).join(' -> ')} -> ${start}`;
  });
}

// ---- the scan -------------------------------------------------------------------------------------------------

const files = sourceFiles().filter((f) => languages.some((l) => l.matches(f)));
const edges = files.flatMap((f) => edgesOf(f, readFileSync(join(root, f), 'utf8')));

describe('include rules: the checker', () => {
  it.each(rules.map((r) => [r.name, r] as const))('reports a made-up offence: %s', (_, rule) => {
    const { file, text } = rule.probe;
    const probeEdges = edgesOf(file, text);
    expect(probeEdges.length, `the probe of '${rule.name}' has no import`).toBe(1);
    const found = violations(rule, probeEdges, new Map([[file, text]]));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(`${file}:1: imports `);
  });

  it('lets the exceptions through, and ignores builtins, dependencies, comments and strings', () => {
    const text = [
      "import { AmrgravError } from '../solver/errors.js';",
      "import { formatBytes } from '../solver/memory.js';",
      "import { join } from 'node:path';",
      "import type { File } from 'h5wasm';",
      "// import { GravitySolver } from '../solver/gravitySolver.js';",
      "const s = \"import { GravitySolver } from '../solver/gravitySolver.js'\";",
    ].join('\n');
    const probeEdges = edgesOf('mesh/probe.ts', text);
    expect(probeEdges.map((e) => e.target)).toEqual(['solver/errors.ts', 'solver/memory.ts', undefined, undefined]);
    for (const rule of rules) expect(violations(rule, probeEdges)).toEqual([]);
  });

  it('reads every form of import, with its line', () => {
    const text = [
      "import a from './a.js';",
      "import type { B } from './b.js';",
      "import './c.js';",
      "export * from './d.js';",
      'export {',
      '  e,',
      "} from './e.js';",
      "const f = await import('./f.js');",
      "type G = typeof import('./g.js');",
    ].join('\n');
    expect(tsImports('x.ts', text).map((i) => `${i.line}:${i.spec}`)).toEqual([
      '1:./a.js', '2:./b.js', '3:./c.js', '4:./d.js', '7:./e.js', '8:./f.js', '9:./g.js',
    ]);
  });

  it('reads line-based imports (for #include rules)', () => {
    const text = '#include "core/tree.h"\n#include <vector>\n  # include "../mpi/let.h" // the LET\n';
    const found = linesMatching('native/cpu/x.cpp', text, /^\s*#\s*include\s*"([^"]+)"/);
    expect(found.map((i) => `${i.line}:${i.spec}`)).toEqual(['1:core/tree.h', '3:../mpi/let.h']);
  });

  it('finds an import cycle and names its files and lines', () => {
    const fake = new Set(['solver/a.ts', 'solver/b.ts', 'mesh/c.ts', 'mesh/d.ts']);
    const exists = (p: string) => fake.has(p);
    const sources: Record<string, string> = {
      'solver/a.ts': "import { b } from './b.js';",
      'solver/b.ts': "\nimport { c } from '../mesh/c.js';",
      'mesh/c.ts': "import type { A } from '../solver/a.js';\nimport { d } from './d.js';",
      'mesh/d.ts': "import { join } from 'node:path';",
    };
    const fakeEdges = Object.entries(sources).flatMap(([f, t]) => edgesOf(f, t, (file, spec) => tsResolve(file, spec, exists)));
    expect(cycles(fakeEdges, LIBRARY)).toEqual(['mesh/c.ts:1 -> solver/a.ts:1 -> solver/b.ts:2 -> mesh/c.ts']);
    expect(cycles(fakeEdges.filter((e) => e.file !== 'mesh/c.ts' || e.line !== 1), LIBRARY)).toEqual([]);
    expect(cycles(edgesOf('solver/a.ts', "import { a } from './a.js';", (file, spec) => tsResolve(file, spec, exists)), LIBRARY)).toEqual([
      'solver/a.ts:1 -> solver/a.ts',
    ]);
  });
});

describe('include rules: the sources', () => {
  it('scans the sources: more than 50 TypeScript files, their imports, and files under every rule', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(files.filter((f) => f.startsWith('native/')).length).toBeGreaterThan(60);
    expect(edges.length).toBeGreaterThan(200);
    for (const rule of rules) expect(files.some((f) => under(f, rule.from)), `no file under ${rule.from.join(', ')}`).toBe(true);
    for (const scope of acyclic) expect(edges.filter((e) => under(e.file, scope.within)).length).toBeGreaterThan(50);
  });

  it('resolves every import of the package to a file', () => {
    const broken = edges.filter((e) => e.target?.endsWith(')')).map((e) => `${e.file}:${e.line}: '${e.spec}' -> ${e.target}`);
    expect(broken, broken.join('\n')).toEqual([]);
  });

  it.each(rules.map((r) => [r.name, r] as const))('%s', (name, rule) => {
    const found = violations(rule, edges);
    expect(found, `${name}:\n${found.join('\n')}`).toEqual([]);
  });

  it.each(acyclic.map((s) => [s.name, s] as const))('no import cycle in %s', (name, scope) => {
    const found = cycles(edges, scope.within);
    expect(found, `import cycles in ${name}:\n${found.join('\n')}`).toEqual([]);
  });
});

/**
 * The root cube (tree/tree.h rootCubeFor): in isolated boxes its side is the smallest cell times a power of two, so
 * that node faces lie on cell faces. native/tests/root_cube.cpp (the executable amrgrav_root_cube, built with the
 * addon) checks the rule, that every node's cells lie in its cube on grids that are not powers of two and on a block
 * mesh (where the bounding cube fails), and that the walk opens fewer nodes at no loss of accuracy; this runs it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const candidates = [join(root, 'build', 'amrgrav_root_cube'), join(root, 'build', 'Release', 'amrgrav_root_cube')];

describe('root cube on the cells\' lattice', () => {
  it('power-of-two multiples of the smallest cell: cells inside their nodes, fewer interactions, no loss', () => {
    const exe = candidates.find((p) => existsSync(p));
    expect(exe, `amrgrav_root_cube is not built (looked for ${candidates.join(', ')}): 'npm run build:native' builds it`)
      .toBeDefined();
    const r = spawnSync(exe as string, [], { encoding: 'utf8', timeout: 300_000 });
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    expect(r.error, out).toBeUndefined();
    expect(r.status, out).toBe(0);
    const summary = /root cube: (\d+) checks, (\d+) failed/.exec(out);
    expect(summary, out).not.toBeNull();
    expect(Number(summary![2]), out).toBe(0);
    expect(Number(summary![1])).toBe(11);
    for (const mesh of ['24^3', '40^3', '72x40x24', '3x1x1-blocks'])
      expect(out, mesh).toMatch(new RegExp(`^PASS cells-inside-nodes-${mesh.replace(/\^/g, '\\^')}: every node`, 'm'));
  });
});

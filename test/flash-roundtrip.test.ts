/**
 * FLASH files written by amrgrav: write -> read gives back every dataset (float64 exactly, float32 as rounded),
 * the mesh rebuilt from a file has the same leaf cells as the mesh written, and yt 4 (the FLASH community's
 * reader, through /usr/bin/python3) loads the file and reads the same grid count, domain, 'dens' and 'gpot'.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { extractCells } from '../mesh/cells.js';
import { cellsPerBlock } from '../mesh/flashFormat.js';
import { flashToMesh } from '../mesh/flashMesh.js';
import { readFlashFile } from '../mesh/flashRead.js';
import { writeFlashFile } from '../mesh/flashWrite.js';
import { solveFlashFile } from '../solver/solveFile.js';
import { problemData, problemMesh } from '../validation/problemFiles.js';
import { python, removeTempDirs, tempDir } from './flashHelpers.js';

afterAll(removeTempDirs);

describe('write, read: equal', () => {
  it('float64 checkpoint: every array and parameter back exactly; the rebuilt mesh has the same leaf cells', async () => {
    const dir = tempDir();
    const { mesh, params } = problemMesh('maclaurin', { levels: 3, subsample: 2 });
    const d = problemData('maclaurin', { levels: 3, subsample: 2 });
    const p = join(dir, 'm.h5');
    await writeFlashFile(p, d);
    const r = await readFlashFile(p);
    for (const k of ['refineLevel', 'nodeType', 'gid', 'boundingBox', 'coordinates', 'blockSize'] as const) expect(r[k], k).toEqual(d[k]);
    expect(r.variables.get('dens')).toEqual(d.variables.get('dens'));
    expect(r.params).toEqual(d.params);
    expect(r.params.realRuntime.get('eccentricity')).toBe(params.realRuntime!.get('eccentricity'));
    expect(r.extra.map((e) => e.name).sort()).toEqual(['processor number', 'sim info', 'which child']);
    expect([r.nxb, r.nyb, r.nzb, r.dimensionality, r.gidColumns, r.totalBlocks]).toEqual([8, 8, 8, 3, 15, d.blockCount]);
    // the leaf cells of the rebuilt mesh (Morton order, independent of block numbering) are the original's
    const a = extractCells(mesh, 'dens');
    const b = extractCells(flashToMesh(r).mesh, 'dens');
    for (const k of ['x', 'y', 'z', 'mass', 'size'] as const) expect(b[k], k).toEqual(a[k]);
    // and a copy of the read data writes the same datasets again
    const p2 = join(dir, 'm2.h5');
    await writeFlashFile(p2, r);
    const r2 = await readFlashFile(p2);
    expect(r2.variables).toEqual(r.variables);
    expect(r2.gid).toEqual(r.gid);
  });

  it('float32 (plot-file precision): values come back rounded to float32', async () => {
    const dir = tempDir();
    const d = problemData('sphere', { levels: 2, subsample: 3 });
    d.variablePrecision = 'float32';
    d.metadataPrecision = 'float32';
    const p = join(dir, 's.h5');
    await writeFlashFile(p, d);
    const r = await readFlashFile(p);
    expect(r.variablePrecision).toBe('float32');
    expect(r.metadataPrecision).toBe('float32');
    expect(r.variables.get('dens')).toEqual(new Float64Array(new Float32Array(d.variables.get('dens')!)));
    expect(r.boundingBox).toEqual(new Float64Array(new Float32Array(d.boundingBox)));
    // some densities are volume fractions that float32 cannot hold exactly: the rounding is real
    expect(r.variables.get('dens')).not.toEqual(d.variables.get('dens'));
  });
});

const YT_CHECK = `
import json, sys
import numpy as np
import yt
yt.set_log_level(50)
ds = yt.load(sys.argv[1])
grids = ds.index.grids
out = {'grids': len(grids), 'dle': ds.domain_left_edge.d.tolist(), 'dre': ds.domain_right_edge.d.tolist(),
       'dims': ds.domain_dimensions.tolist(), 'max_level': int(ds.index.max_level)}
for f in ['dens', 'gpot']:
    # per grid, in file order (grid id = block number), back to FLASH's [k][j][i] layout
    vals = np.concatenate([g['flash', f].d.transpose().ravel() for g in sorted(grids, key=lambda g: g.id)])
    vals.astype('<f8').tofile(sys.argv[2] + '.' + f)
ad = ds.all_data()
out['leaf_cells'] = int(ad['flash', 'dens'].size)
out['mass'] = float((ad['flash', 'dens'] * ad['index', 'cell_volume']).sum().d)
out['gpot_min'] = float(ad['flash', 'gpot'].min().d)
out['gpot_volume_sum'] = float((ad['flash', 'gpot'] * ad['index', 'cell_volume']).sum().d)
print(json.dumps(out))
`;

describe('yt loads our files', () => {
  it('grid count, domain, dens and gpot as we wrote them; leaf cells and mass as our mesh has them', async () => {
    const dir = tempDir();
    const input = join(dir, 'in.h5');
    await writeFlashFile(input, problemData('maclaurin', { levels: 3, subsample: 2 }));
    const output = join(dir, 'out.h5');
    const report = await solveFlashFile(input, output);
    const ours = await readFlashFile(output);
    const dump = join(dir, 'yt');
    // a missing yt fails here: CI installs python3-yt, so this never skips
    const yt = python(YT_CHECK, output, dump) as Record<string, number & number[]>;
    expect(yt.grids).toBe(ours.blockCount);
    expect(yt.dle).toEqual([0, 0, 0]);
    expect(yt.dre).toEqual([1, 1, 1]);
    expect(yt.dims).toEqual([8, 8, 8]);
    expect(yt.max_level).toBe(2);
    for (const f of ['dens', 'gpot']) {
      const buf = readFileSync(`${dump}.${f}`);
      const got = new Float64Array(buf.buffer, buf.byteOffset, buf.length / 8);
      expect(got.length, f).toBe(ours.blockCount * cellsPerBlock(ours));
      expect(got, f).toEqual(ours.variables.get(f));
    }
    const { mesh } = flashToMesh(ours);
    const cells = extractCells(mesh, 'dens');
    expect(yt.leaf_cells).toBe(report.cells);
    expect(yt.leaf_cells).toBe(cells.count);
    const mass = cells.mass.reduce((s, m) => s + m, 0);
    expect(Math.abs(yt.mass - mass) / mass).toBeLessThan(1e-12);
    // yt's leaf cells are ours: the minimum and the volume integral of gpot over leaves only
    const g = mesh.variable('gpot');
    let gmin = Infinity;
    let integral = 0;
    for (let i = 0; i < cells.count; i++) {
      const v = g[cells.block[i] * mesh.cellsPerBlock + cells.cell[i]];
      gmin = Math.min(gmin, v);
      integral += v * cells.size[i] ** 3;
    }
    expect(yt.gpot_min).toBe(gmin);
    expect(Math.abs(yt.gpot_volume_sum - integral) / Math.abs(integral)).toBeLessThan(1e-12);
  });
});

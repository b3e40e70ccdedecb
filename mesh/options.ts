/** Mesh options: defaults and validation in one place, before any block exists. */
import { invalidMeshOption } from './errors.js';
import type { MeshOptions, ResolvedMeshOptions, Vec3 } from './types.js';

export const defaultMeshOptions: ResolvedMeshOptions = Object.freeze({
  domainLo: [0, 0, 0] as Vec3,
  domainHi: [1, 1, 1] as Vec3,
  rootBlocks: [1, 1, 1] as Vec3,
  nxb: 8,
  nyb: 8,
  nzb: 8,
  lrefineMax: 4,
});

// Block coordinates at lrefineMax go through 32-bit XORs (Morton order) and per-level linear hash keys, so the
// finest level must stay below 2^30 blocks per axis and 2^53 blocks in all.
const MAX_FINEST_PER_AXIS = 2 ** 30;
const MAX_FINEST_TOTAL = 2 ** 53;

function isTriple(v: unknown): v is Vec3 {
  return Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === 'number' && Number.isFinite(x));
}

function cellsPerBlock(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 2 || v % 2 !== 0) {
    throw invalidMeshOption(name, 'an even integer >= 2 (children split each block in half)', v);
  }
  return v;
}

/** Fills defaults and checks every field; throws MeshError('INVALID_OPTION') naming the field and the value. */
export function resolveMeshOptions(opts: MeshOptions = {}): ResolvedMeshOptions {
  const o = { ...defaultMeshOptions, ...Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)) };
  if (!isTriple(o.domainLo)) throw invalidMeshOption('domainLo', 'three finite numbers (cm)', o.domainLo);
  if (!isTriple(o.domainHi)) throw invalidMeshOption('domainHi', 'three finite numbers (cm)', o.domainHi);
  for (let d = 0; d < 3; d++) {
    if (!(o.domainHi[d] > o.domainLo[d])) {
      throw invalidMeshOption('domainHi', `domainHi > domainLo on every axis (domainLo = [${o.domainLo.join(', ')}])`, o.domainHi);
    }
  }
  if (!isTriple(o.rootBlocks) || !o.rootBlocks.every((n) => Number.isInteger(n) && n >= 1)) {
    throw invalidMeshOption('rootBlocks', 'three positive integers', o.rootBlocks);
  }
  const nxb = cellsPerBlock('nxb', o.nxb);
  const nyb = cellsPerBlock('nyb', o.nyb);
  const nzb = cellsPerBlock('nzb', o.nzb);
  if (typeof o.lrefineMax !== 'number' || !Number.isInteger(o.lrefineMax) || o.lrefineMax < 1) {
    throw invalidMeshOption('lrefineMax', 'an integer >= 1', o.lrefineMax);
  }
  const finest = o.rootBlocks.map((n) => n * 2 ** (o.lrefineMax - 1));
  if (finest.some((n) => n > MAX_FINEST_PER_AXIS) || finest[0] * finest[1] * finest[2] > MAX_FINEST_TOTAL) {
    throw invalidMeshOption(
      'lrefineMax',
      `a level with at most 2^30 blocks per axis and 2^53 in all (rootBlocks [${o.rootBlocks.join(', ')}])`,
      o.lrefineMax,
    );
  }
  return Object.freeze({
    domainLo: [...o.domainLo] as Vec3,
    domainHi: [...o.domainHi] as Vec3,
    rootBlocks: [...o.rootBlocks] as Vec3,
    nxb,
    nyb,
    nzb,
    lrefineMax: o.lrefineMax,
  });
}

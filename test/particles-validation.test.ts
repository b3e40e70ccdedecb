/**
 * `amrgrav validate particles` (issue #18) at a small size: a gas sphere on an AMR mesh (levels 3) with a Plummer
 * cluster of 300 softened particles and 64 probes; the probes against a float64 direct sum within 2x of the system's
 * own tree error, linearity and probes on cell centres to rounding, both kernels; the verdict and the command line.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runParticles, type ParticlesReport } from '../validation/particlesRun.js';
import { particlesVerdict } from '../validation/verdict.js';

const CLI = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'dist', 'app', 'cli.js');

describe('validate particles', () => {
  for (const softening of ['spline', 'plummer'] as const) {
    it(`${softening}: probes within 2x of the system's tree error, identities to rounding`, async () => {
      const r = await runParticles({ levels: 3, particles: 300, solver: { softening, threads: 2 } });
      expect(r.particles).toBe(300);
      expect(r.probes).toBe(64);
      expect(r.softening).toBe(softening);
      expect(r.backend).toBe('cpu');
      expect(r.cellTreeError.max).toBeGreaterThan(0); // the tree approximates, so the bar means something
      expect(r.probeTreeError.max).toBeGreaterThan(0);
      expect(r.probeErrorRatio).toBeLessThanOrEqual(2);
      expect(r.probeDirectError).toBeLessThan(1e-12);
      expect(r.linearityGap).toBeLessThan(1e-12);
      expect(r.centreGapDirect).toBeLessThan(1e-12);
      const v = particlesVerdict(r);
      expect(v.failed).toEqual([]);
      expect(v.pass).toBe(true);
    });
  }

  it('the verdict names each check that fails', () => {
    const good: ParticlesReport = {
      cells: 1, blocks: 1, levels: 3, particles: 1, probes: 64, softening: 'spline', theta: 0.5, backend: 'cpu',
      probeTreeError: { max: 1e-5, mean: 1e-6 }, probeDirectError: 1e-15, cellTreeError: { max: 1e-4, mean: 1e-5 },
      particleTreeError: { max: 2e-5, mean: 1e-5 }, probeErrorRatio: 0.1, linearityGap: 1e-16, centreGapDirect: 1e-16,
      centreGapTree: 1e-5, seconds: 0.1,
    };
    expect(particlesVerdict(good)).toMatchObject({ pass: true, tolerance: 2e-4, failed: [] });
    const bad = particlesVerdict({ ...good, probeErrorRatio: 2.5, linearityGap: 1e-9 });
    expect(bad.pass).toBe(false);
    expect(bad.failed).toEqual(["probes vs the system's tree error", 'linearity']);
  });

  it('amrgrav validate particles --check --json exits 0 on PASS', () => {
    const r = spawnSync(process.execPath, [CLI, 'validate', 'particles', '--levels', '3', '--particles', '200', '--threads', '2', '--json', '--check'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.verdict.pass).toBe(true);
    expect(out.particles).toBe(200);
    const help = spawnSync(process.execPath, [CLI, 'validate', 'particles', '--help'], { encoding: 'utf8' });
    expect(help.stdout).toMatch(/Plummer cluster/);
    expect(help.stdout).toMatch(/--softening K/);
  });
});

/**
 * The rules that decide which interactions happen (native/physics/: the MAC, the periodic image test, the node
 * moments and MAC radii, the LET choice) are written once for the CPU and CUDA backends. native/tests/physics_rules.cpp
 * (the executable amrgrav_physics_rules, built with the addon) checks on the host, without a GPU, that each rule's
 * host instantiation and one rounding as the device does agree bit for bit on edge cases and random sweeps, and that
 * the core library's root cube, moments, S and LET choice equal the device's arithmetic. This runs it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// cmake-js puts executables in build/ (libraries in build/Release); multi-config generators in build/Release
const candidates = [
  process.env.AMRGRAV_PHYSICS_RULES,
  join(root, 'build', 'amrgrav_physics_rules'),
  join(root, 'build', 'Release', 'amrgrav_physics_rules'),
].filter((p): p is string => typeof p === 'string' && p.length > 0);
const exe = candidates.find((p) => existsSync(p));
const absent =
  `amrgrav_physics_rules is not built (looked for ${candidates.join(', ')}): ` +
  `'npm run build:native' builds it with the addon`;

describe('physics rules (host vs device rounding)', () => {
  if (!exe) console.warn(`physics-rules.test.ts: skipped: ${absent}`);

  it.skipIf(!exe)(
    exe ? 'every rule agrees bit for bit with the device rounding, and the core library with the device arithmetic'
      : `skipped: ${absent}`,
    () => {
      const r = spawnSync(exe as string, [], { encoding: 'utf8', timeout: 300_000 });
      const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
      expect(r.error, out).toBeUndefined();
      expect(r.status, out).toBe(0);
      const summary = /physics rules: (\d+) checks, (\d+) failed; canary (\w+) \((\d+) of (\d+) cases/.exec(out);
      expect(summary, out).not.toBeNull();
      const [, checks, failed, canary, differ] = summary as RegExpExecArray;
      expect(Number(failed), out).toBe(0);
      expect(Number(checks)).toBeGreaterThan(1_000_000);
      // the sweeps can tell a contracted (FMA) build apart, so their agreement means something
      expect(canary).toBe('ok');
      expect(Number(differ)).toBeGreaterThan(0);
      // every part ran
      for (const part of ['MAC', 'image test', 'moments', 'LET choice', 'core library vs device rounding', 'FMM MAC', 'FMM LETs', 'FMM upward'])
        expect(out, part).toMatch(new RegExp(`^${part}\\s+\\d+ checks, 0 failed`, 'm'));
    },
  );
});

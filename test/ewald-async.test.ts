/**
 * The addon's ewaldTableAsync: the same request and result as ewaldTable, the table built on a worker thread while
 * the event loop goes on, and bad requests rejected with the same coded errors ewaldTable throws.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNative } from '../solver/native.js';

describe('ewaldTableAsync', () => {
  const native = loadNative();
  // a disk cache of its own: every table here is built, and none is left behind
  const dir = mkdtempSync(join(tmpdir(), 'amrgrav-ewald-async-'));
  const saved = process.env.AMRGRAV_CACHE_DIR;
  beforeAll(() => {
    process.env.AMRGRAV_CACHE_DIR = dir;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.AMRGRAV_CACHE_DIR;
    else process.env.AMRGRAV_CACHE_DIR = saved;
    rmSync(dir, { recursive: true, force: true });
  });
  const at = new Float64Array([0.1, 0.2, 0.3, -0.4, 0.05, 0.25, 0.45, -0.3, -0.1]);

  it('returns what ewaldTable returns (lookup, exact sums, grid check)', async () => {
    const request = { L: [1, 0.8, 1.2] as [number, number, number], periodic: [true, true, false] as [boolean, boolean, boolean],
      resolution: 12, memoryCache: false, at, exact: true, gridCheck: 50 };
    const a = await native.ewaldTableAsync(request);
    const s = native.ewaldTable(request); // from the disk cache the async build wrote
    for (const k of ['n', 'h', 'points', 'bytes'] as const) expect(a[k]).toEqual(s[k]);
    expect(Array.from(a.lookup!)).toEqual(Array.from(s.lookup!));
    expect(Array.from(a.exact!)).toEqual(Array.from(s.exact!));
    expect(Array.from(a.gridMaxDiff!)).toEqual(Array.from(s.gridMaxDiff!));
    expect(a.source).toBe('built');
    expect(s.source).toBe('disk');
  });

  it('builds off the JS thread: timers fire while a table is built', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const t0 = Date.now();
    const t = await native.ewaldTableAsync({ L: [1, 1, 1], periodic: [true, true, true], resolution: 32, memoryCache: false, threads: 1 });
    const ms = Date.now() - t0;
    clearInterval(timer);
    expect(t.source).toBe('built');
    if (ms > 20) expect(ticks).toBeGreaterThan(0); // a build that takes time (about 40 ms) leaves the loop free
  });

  it('rejects a bad request with a coded error, as ewaldTable throws', async () => {
    const bad = { L: [1, 1] as unknown as [number, number, number], periodic: [true, true, true] as [boolean, boolean, boolean] };
    expect(() => native.ewaldTable(bad)).toThrow(/'L' must be an array of 3/);
    await expect(native.ewaldTableAsync(bad)).rejects.toMatchObject({ code: 'INVALID_OPTION', message: expect.stringMatching(/'L' must be an array of 3/) });
    const negative = { L: [1, -1, 1] as [number, number, number], periodic: [true, true, true] as [boolean, boolean, boolean] };
    const thrown = (() => { try { native.ewaldTable(negative); } catch (e) { return e as { code: string; message: string }; } })();
    await expect(native.ewaldTableAsync(negative)).rejects.toMatchObject({ code: thrown!.code, message: thrown!.message });
  });
});

describe('ewaldTableAsync (the public entry)', () => {
  it('gives ewaldTable\'s values and its typed errors', async () => {
    const { ewaldTable, ewaldTableAsync, InvalidOptionError } = await import('../solver/index.js');
    const request = { L: [1, 1, 1] as [number, number, number], periodic: [true, true, true] as [boolean, boolean, boolean],
      at: new Float64Array([0.1, -0.2, 0.3]) };
    const a = await ewaldTableAsync(request);
    const s = ewaldTable(request);
    expect(Array.from(a.lookup!)).toEqual(Array.from(s.lookup!));
    await expect(ewaldTableAsync({ L: [1, 1, 1], periodic: [false, false, false] })).rejects.toBeInstanceOf(InvalidOptionError);
  });
});

/** The native host test programs (native/tests, built by `npm run build:native` into build/): where one is. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

/** The path of the built host test `name` (e.g. 'amrgrav_sort_keys'); fails the test when it is not built. */
export function hostTest(name: string): string {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const candidates = [join(root, 'build', name), join(root, 'build', 'Release', name)];
  const exe = candidates.find((p) => existsSync(p));
  expect(exe, `${name} is not built (looked for ${candidates.join(', ')}): 'npm run build:native' builds it`).toBeDefined();
  return exe as string;
}

#!/usr/bin/env node
// npm's install step: one line saying what is being built, then cmake-js (its output as before). npm hides the
// output of a dependency's install script, and the CUDA compile alone takes minutes, so the line also goes to the
// terminal (/dev/tty) when there is one. AMRGRAV_CUDA=OFF leaves the CUDA backend out (AMRGRAV_GPU_BACKEND=NONE);
// ON requires it; AUTO or unset: built when nvcc is found (CMake's check).
import { spawnSync } from 'node:child_process';
import { accessSync, constants, writeSync, openSync, closeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, join } from 'node:path';

const cuda = (process.env.AMRGRAV_CUDA ?? '').toUpperCase();
if (cuda !== '' && cuda !== 'OFF' && cuda !== 'ON' && cuda !== 'AUTO') {
  console.error(`amrgrav: AMRGRAV_CUDA must be OFF, ON or AUTO (got '${process.env.AMRGRAV_CUDA}')`);
  process.exit(1);
}

function onPath(exe) {
  for (const dir of [...(process.env.PATH ?? '').split(delimiter), '/usr/local/cuda/bin']) {
    try {
      accessSync(join(dir, exe), constants.X_OK);
      return true;
    } catch {}
  }
  return false;
}

let what;
const args = ['compile', '--out', 'build'];
if (cuda === 'OFF') {
  args.push('--CDAMRGRAV_GPU_BACKEND=NONE');
  what = 'the C++ core and CPU backend (CUDA backend off: AMRGRAV_CUDA=OFF); about a minute';
} else {
  // unset: nothing passed (npm ci as before; an existing build folder keeps its choice); AUTO resets it
  if (cuda === 'ON' || cuda === 'AUTO') args.push(`--CDAMRGRAV_GPU_BACKEND=${cuda === 'ON' ? 'CUDA' : 'AUTO'}`);
  what = onPath('nvcc') || cuda === 'ON'
    ? 'the C++ core, CPU backend and CUDA backend (nvcc found); 2-3 minutes on 2 cores, most of it nvcc ' +
      '(AMRGRAV_CUDA=OFF npm install skips the CUDA backend)'
    : 'the C++ core and CPU backend (no nvcc: no CUDA backend); about a minute';
}
const line = `amrgrav: building the native addon with cmake-js: ${what}\n`;
process.stderr.write(line);
if (!process.stderr.isTTY) {
  try {
    const tty = openSync('/dev/tty', 'w');
    writeSync(tty, line);
    closeSync(tty);
  } catch {} // no terminal (CI): the line is in npm's log
}

const cmakeJs = createRequire(import.meta.url).resolve('cmake-js/bin/cmake-js');
if (process.env.AMRGRAV_INSTALL_DRY_RUN === '1') {
  // the tests' view of what would run (test/first-contact.test.ts)
  console.log(JSON.stringify({ command: [cmakeJs, ...args] }));
  process.exit(0);
}
const r = spawnSync(process.execPath, [cmakeJs, ...args], { stdio: 'inherit' });
if (r.error) {
  console.error(`amrgrav: could not run cmake-js: ${r.error.message}`);
  process.exit(1);
}
process.exit(r.status ?? 1);

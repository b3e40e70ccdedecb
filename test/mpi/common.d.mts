// Types of common.mjs for the TypeScript side of the tests (test/helpers.ts re-exports rng).
export function rng(seed: number): () => number;
export function backendFromArgs(rank: number): { choice: string; backend: string };

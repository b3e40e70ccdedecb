// Types of common.mjs for the TypeScript side of the tests.
export function rng(seed: number): () => number;
export function scatteredCells(n: number, seed: number): { x: Float64Array; y: Float64Array; z: Float64Array; mass: Float64Array; size: Float64Array };
export function backendFromArgs(rank: number): { choice: string; backend: string };

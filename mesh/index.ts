/** The mesh module: block-structured AMR (PARAMESH/FLASH style) and its bridge to cell arrays. */
export { AmrMesh } from './amrMesh.js';
export { uniformMesh, refineMesh, balanceMesh } from './builders.js';
export { extractCells, writeBack, fillVariable, meshBlocks, leafValues, type CellArrays, type MeshBlocks } from './cells.js';
export { MeshError, FlashFileError, OutputFileError, type MeshErrorCode } from './errors.js';
export { readFlashFile, type FlashReadOptions } from './flashRead.js';
export { writeFlashFile, type FlashWriteOptions } from './flashWrite.js';
export { copyFlashFileWith, type FlashCopyOptions } from './flashCopy.js';
export { checkOutputPath, writeAtomically, removeTempFilesOnSignals } from './outputFile.js';
export { flashToMesh, meshToFlash, meshVariableToFlash, type FlashMesh, type MeshToFlashOptions } from './flashMesh.js';
export {
  flashParticleTable,
  flashParticleSources,
  particleColumn,
  particleSoftening,
  type FlashParticleTable,
  type FlashParticleSources,
  type ParticleSoftening,
} from './flashParticles.js';
export type { FlashData, FlashParameters, RawDataset } from './flashFormat.js';
export { restrictToParents } from './restrict.js';
export { compareMorton } from './morton.js';
export { defaultMeshOptions, resolveMeshOptions } from './options.js';
export type { Block, MeshOptions, ResolvedMeshOptions, Vec3 } from './types.js';
export { finiteDifferenceAccelerations } from './gradient.js';

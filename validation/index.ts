/**
 * amrgrav/validation: the validation problems, runs and verdicts, published apart from the solver (the package's
 * main entry) as `import { ... } from 'amrgrav/validation'`. The MacLaurin spheroid and periodic boxes against
 * analytic potentials (what `amrgrav validate` runs), test problems as FLASH files (`amrgrav make`), the analytic
 * reference potentials and an independent Ewald sum, and PNG plots (`amrgrav plot`).
 */

// the MacLaurin spheroid (`amrgrav validate maclaurin`)
export { runMaclaurin, sweepMaclaurin } from './maclaurinRun.js';
export type { MaclaurinReport, MaclaurinRunOptions } from './maclaurinRun.js';
export { maclaurinProblem } from './maclaurinSetup.js';
export type { MaclaurinProblem, MaclaurinSetupOptions } from './maclaurinSetup.js';

// periodic boxes (`amrgrav validate periodic`)
export {
  runPeriodicProblem,
  periodicProblems,
  flashProblems,
  runSineWave,
  runSechLayer,
  runCylinder,
  runMultiMode,
  runPointMasses,
} from './periodicRun.js';
export type { PeriodicReport, PointMassReport, PeriodicProblemName, FieldErrors } from './periodicRun.js';
export type { CellSampling } from './periodicProblems.js';

// gas and softened particles in one system solve (`amrgrav validate particles`), and its float64 reference
export { runParticles } from './particlesRun.js';
export type { ParticlesReport, ParticlesRunOptions } from './particlesRun.js';
export { softenedPotentialAt, softenedInverse } from './softenedDirect.js';
export type { SoftSources, SofteningKernelName } from './softenedDirect.js';

// the verdicts (PASS / FAIL) the validations end with
export { maclaurinVerdict, periodicVerdict, particlesVerdict } from './verdict.js';
export type { Verdict, MaclaurinSetup } from './verdict.js';
export { relativeErrorStats } from './errorMetrics.js';
export type { ErrorStats } from './errorMetrics.js';

// test problems as FLASH files (`amrgrav make`)
export { writeProblemFile, problemData, problemMesh, estimateProblemCells } from './problemFiles.js';
export type { ProblemKind, ProblemFileOptions } from './problemFiles.js';

// analytic potentials, and the independent Ewald sum of periodic point masses
export {
  G_CGS,
  ellipsoidPotential,
  maclaurinPotential,
  maclaurinMass,
  uniformSpherePotential,
  uniformSphereMass,
  prismPotential,
  cubeSelfPotentialCoefficient,
} from './analytic/index.js';
export type { EllipsoidParams, MaclaurinParams, UniformSphereParams } from './analytic/index.js';
export { ewaldPotential3, periodicPotential } from './ewaldReference.js';
export type { PeriodicBox, PointMasses } from './ewaldReference.js';

// PNG plots (`amrgrav plot`, `validate maclaurin --sweep --plot`)
export { plotSliceFile } from './plot/slicePlot.js';
export type { SlicePlotOptions, SlicePlotReport } from './plot/slicePlot.js';
export { plotSweep } from './plot/sweepPlot.js';

/** Analytic reference potentials (ellipsoid, MacLaurin spheroid, sphere, cube, prism) for validating the solver. */
export { G_CGS } from './constants.js';
export { ellipsoidPotential, ellipsoidIndexSymbols } from './ellipsoid.js';
export type { EllipsoidParams, IndexSymbols } from './ellipsoid.js';
export { confocalLambda } from './confocalLambda.js';
export {
  maclaurinPotential,
  maclaurinInteriorPotential,
  maclaurinExteriorPotential,
  maclaurinIndexSymbols,
  maclaurinLambda,
  maclaurinSemiAxes,
  maclaurinMass,
  insideSpheroid,
} from './maclaurin.js';
export type { MaclaurinParams } from './maclaurin.js';
export {
  uniformSpherePotential,
  uniformSphereMass,
  cubeSelfPotentialCoefficient,
  cubeCentrePotential,
} from './sphere.js';
export type { UniformSphereParams } from './sphere.js';
export { prismPotential } from './prism.js';
export { carlsonRF, carlsonRD } from './carlson.js';
export { integrateAdaptive, gaussLegendreRule } from './quadrature.js';
export type { AdaptiveOptions } from './quadrature.js';

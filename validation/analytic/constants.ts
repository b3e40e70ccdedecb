/** Gravitational constant in cgs (cm^3 g^-1 s^-2); the default wherever G is an optional parameter. */
export const G_CGS = 6.674e-8;

/**
 * Small helpers for the CLI's option parsing: typed numbers with ranges, and a usage error type.
 * @private
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export function numberArg(name: string, v: string | undefined, dflt: number, check?: (x: number) => boolean): number {
  if (v === undefined) return dflt;
  const x = Number(v);
  if (!Number.isFinite(x) || (check && !check(x))) throw new UsageError(`--${name}: invalid value '${v}'`);
  return x;
}

export function intArg(name: string, v: string | undefined, dflt: number, min: number, max: number): number {
  return numberArg(name, v, dflt, (x) => Number.isInteger(x) && x >= min && x <= max);
}

export function choiceArg<T extends string>(name: string, v: string | undefined, dflt: T, choices: readonly T[]): T {
  if (v === undefined) return dflt;
  if (!(choices as readonly string[]).includes(v)) throw new UsageError(`--${name}: expected one of ${choices.join(', ')}, got '${v}'`);
  return v as T;
}

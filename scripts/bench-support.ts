/** What every benchmark script needs: its numeric `--flags` and the local infrastructure. */

/** `--name N` from the command line, a positive number, else `fallback`. */
export function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

/** Exits with the command to run when the environment of `scripts/infra env` is missing. */
export function requireInfrastructure(names: readonly string[]): void {
  for (const name of names) {
    if (!process.env[name]) {
      console.error(
        `${name} is not set: run scripts/infra up && eval "$(scripts/infra env)" first`,
      );
      process.exit(1);
    }
  }
}

/** One instruction of a Dockerfile, its continuation lines joined. */
export interface Instruction {
  op: string;
  args: string;
}

/** Instructions grouped by stage; continuation lines joined, comments dropped. */
export function parseDockerfile(text: string): Instruction[][] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const stages: Instruction[][] = [];
  for (const line of logical) {
    const [, op, args] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const instruction = { op: op.toUpperCase(), args };
    if (instruction.op === 'FROM') stages.push([]);
    stages[stages.length - 1]?.push(instruction);
  }
  return stages;
}

/**
 * The variables a stage's `ENV` instructions set, in order (`ENV A=1 B=2`, or the older
 * `ENV A 1`); values in double quotes lose them. Enough for ours, not every Dockerfile.
 */
export function stageEnv(stage: readonly Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { op, args } of stage) {
    if (op !== 'ENV') continue;
    if (!args.includes('=')) {
      const [, name, value] = /^(\S+)\s+(.*)$/.exec(args) ?? [];
      if (name) env[name] = value;
      continue;
    }
    for (const [, name, value] of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)) {
      env[name] = value.replace(/^"(.*)"$/, '$1');
    }
  }
  return env;
}

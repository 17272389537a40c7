import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  countOption,
  option,
  optionIfGiven,
  profileDir,
  unknownFlags,
} from '../../../scripts/bench-support';

const ROOT = join(__dirname, '..', '..', '..');
const scripts = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  }
).scripts;
const benches = Object.entries(scripts).filter(([name]) => name.startsWith('bench:'));
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

describe('npm run bench:*', () => {
  it('includes the delivery request benchmark', () => {
    expect(scripts['bench:request']).toBe('scripts/tsx scripts/bench-request.ts');
  });

  it('includes the courier matching benchmark, whose --help needs no infrastructure', () => {
    expect(scripts['bench:matching']).toBe('scripts/tsx scripts/bench-matching.ts');
    const env = { ...process.env };
    for (const name of ['MONGO_URL', 'NATS_URL', 'REDIS_URL']) delete env[name];
    const help = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'scripts', 'bench-matching.ts'), '--help'],
      { cwd: ROOT, env, encoding: 'utf8' },
    );
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^npm run bench:matching/);
    for (const variable of [
      'BENCH_COURIERS',
      'BENCH_QUERIES',
      'BENCH_CONCURRENCY',
      'BENCH_TOKENS',
    ]) {
      expect(help.stdout).toContain(variable);
    }
  });

  // Each of these reads its options before it looks for the infrastructure: with no flag at
  // all, the first thing it can refuse is the missing infrastructure, not its own defaults.
  const checkedFirst = benches
    .map(([name, command]) => [name, /scripts\/[\w-]+\.ts/.exec(command)?.[0] ?? ''] as const)
    .filter(([, file]) => /^requireInfrastructure\(/m.test(readFileSync(join(ROOT, file), 'utf8')));

  it.each(checkedFirst)('%s accepts its own defaults', (_name, file) => {
    const env = { ...process.env };
    for (const name of Object.keys(env)) if (name.startsWith('BENCH_')) delete env[name];
    for (const name of ['MONGO_URL', 'NATS_URL', 'REDIS_URL', 'S3_ENDPOINT']) delete env[name];
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, file)], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
    });
    expect(run.stderr).toMatch(/^\w+ is not set: run scripts\/infra up/);
    expect(run.status).toBe(1);
  });

  it.each(benches)('%s runs a script that exists and the README lists', (name, command) => {
    const file = /scripts\/[\w-]+\.ts/.exec(command)?.[0];
    expect(file).toBeDefined();
    expect(existsSync(join(ROOT, file as string))).toBe(true);
    expect(readme).toMatch(new RegExp(`^\\| \`npm run ${name}\`\\s*\\|`, 'm'));
  });
});

describe('a benchmark option', () => {
  it('comes from its flag, else BENCH_<NAME>, else the default', () => {
    const env = { BENCH_WARM_UP: '7', BENCH_COUNT: '9' };
    expect(option('count', 800, ['node', 's', '--count', '20'], env)).toBe(20);
    expect(option('count', 800, ['node', 's'], env)).toBe(9);
    expect(option('warm-up', 50, ['node', 's'], env)).toBe(7);
    expect(option('concurrency', 50, ['node', 's'], env)).toBe(50);
  });

  it('that turns a part on is undefined unless given', () => {
    expect(optionIfGiven('waiting', ['node', 's'], {})).toBeUndefined();
    expect(optionIfGiven('waiting', ['node', 's', '--waiting', '20'], {})).toBe(20);
    expect(optionIfGiven('waiting', ['node', 's'], { BENCH_WAITING: '5' })).toBe(5);
    expect(() => optionIfGiven('waiting', ['node', 's', '--waiting', '0'], {})).toThrow(
      '--waiting must be a positive number',
    );
  });

  it('must be a positive number, wherever it comes from', () => {
    expect(() => option('count', 1, ['node', 's', '--count', 'x'], {})).toThrow(
      '--count must be a positive number',
    );
    expect(() => option('count', 1, ['node', 's'], { BENCH_COUNT: '0' })).toThrow(
      '--count must be a positive number',
    );
  });

  it('is refused in one line, exit 1, without a stack trace, when a script run as itself gets a bad one', () => {
    const env = { ...process.env, BENCH_SMALL: 'abc' };
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'scripts', 'bench-db.ts')],
      { cwd: ROOT, env, encoding: 'utf8' },
    );
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe(
      '--small must be a positive number; run with --help for the options',
    );
  });

  it('--profile needs its directory', () => {
    expect(profileDir(['node', 's'])).toBeUndefined();
    for (const argv of [
      ['node', 's', '--profile'],
      ['node', 's', '--profile', '--tsx'],
    ]) {
      expect(() => profileDir(argv)).toThrow('--profile needs the directory');
    }
  });

  it('that counts a part may be zero, but not a fraction or below zero', () => {
    expect(countOption('couriers', 6, ['node', 's', '--couriers', '0'], {})).toBe(0);
    expect(countOption('couriers', 6, ['node', 's'], { BENCH_COURIERS: '3' })).toBe(3);
    expect(countOption('couriers', 6, ['node', 's'], {})).toBe(6);
    for (const bad of ['-1', '1.5', 'x']) {
      expect(() => countOption('couriers', 6, ['node', 's', '--couriers', bad], {})).toThrow(
        '--couriers must be a whole number, 0 or more',
      );
    }
  });
});

describe('every npm run bench:*', () => {
  const env = { ...process.env };
  for (const name of ['MONGO_URL', 'NATS_URL', 'REDIS_URL']) delete env[name];
  const run = (script: string, args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, script), ...args], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
    });

  it.each(benches.map(([name, command]) => [name, command.split(' ').pop() as string]))(
    '%s answers --help without infrastructure, and refuses a flag it does not know',
    (name, script) => {
      const help = run(script, ['--help']);
      expect(help.status).toBe(0);
      expect(help.stdout).toContain(`npm run ${name}`);
      const typo = run(script, ['--no-such-flag', '1']);
      expect(typo.status).toBe(1);
      expect(typo.stderr).toContain('unknown option --no-such-flag');
    },
    60_000,
  );
});

describe('a benchmark’s flags', () => {
  const USAGE = 'npm run bench:x [-- --duration 20 --node-options OPTS --profile DIR]';
  const argv = (...args: string[]) => ['node', 'bench-x.ts', ...args];

  it('are those its usage mentions; any other is named', () => {
    expect(unknownFlags(USAGE, argv('--duration', '20', '--profile', 'out'))).toEqual([]);
    expect(unknownFlags(USAGE, argv('--duraton', '20'))).toEqual(['--duraton']);
    expect(unknownFlags(USAGE, argv('--duration', '20', '--rounds', '3'))).toEqual(['--rounds']);
    // The options read `--flag value` only.
    expect(unknownFlags(USAGE, argv('--duration=20'))).toEqual(['--duration=20']);
  });

  it('take a value after a known flag whatever it looks like', () => {
    expect(unknownFlags(USAGE, argv('--node-options', '--max-semi-space-size=64'))).toEqual([]);
    expect(unknownFlags(USAGE, argv('--node-options', '--a', '--b'))).toEqual(['--b']);
  });
});

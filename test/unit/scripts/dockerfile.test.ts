import { parseDockerfile, stageEnv } from '../../../scripts/lib/dockerfile';

describe('a Dockerfile read for its stages and variables', () => {
  const stages = parseDockerfile(
    [
      'FROM node:24 AS build',
      '# a comment',
      'ENV A=1',
      'RUN npm ci \\',
      '    --omit=dev',
      'FROM node:24-slim AS runtime',
      'ENV NODE_ENV=production \\',
      '    QUOTED="two words" \\',
      '    MALLOC_MMAP_THRESHOLD_=131072',
      'ENV OLD style value',
      'CMD ["node", "server.js"]',
    ].join('\n'),
  );

  it('groups instructions by stage and joins continuation lines', () => {
    expect(stages).toHaveLength(2);
    expect(stages[0]).toContainEqual({ op: 'RUN', args: 'npm ci      --omit=dev' });
    expect(stages[1].map((i) => i.op)).toEqual(['FROM', 'ENV', 'ENV', 'CMD']);
  });

  it("reads a stage's variables in both ENV forms", () => {
    expect(stageEnv(stages[0])).toEqual({ A: '1' });
    expect(stageEnv(stages[1])).toEqual({
      NODE_ENV: 'production',
      QUOTED: 'two words',
      MALLOC_MMAP_THRESHOLD_: '131072',
      OLD: 'style value',
    });
  });
});

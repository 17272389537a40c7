import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { readJsonArrayInBatches } from '../../../../services/geo/gazetteer/sources';

describe('readJsonArrayInBatches', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gazetteer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const readBack = (rows: unknown[], text = JSON.stringify(rows), chunkBytes?: number) => {
    const file = join(dir, 'rows.json');
    writeFileSync(file, text);
    const batches: unknown[][] = [];
    readJsonArrayInBatches<unknown>(file, (batch) => batches.push(batch), chunkBytes);
    return batches;
  };

  it('reads every object, in order, whatever the strings hold', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            name: fc.string({ unit: 'grapheme' }),
            nested: fc.record({ a: fc.string(), b: fc.array(fc.integer()) }),
          }),
          { maxLength: 40 },
        ),
        (rows) => {
          expect(readBack(rows).flat()).toEqual(rows);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('copes with braces, quotes and backslashes inside strings, and with whitespace', () => {
    const rows = [{ name: 'a } { b' }, { name: 'say "hi" \\ }' }, { name: '{' }];
    expect(readBack(rows, JSON.stringify(rows, null, 2)).flat()).toEqual(rows);
  });

  it('parses large arrays in several batches', () => {
    const rows = Array.from({ length: 5000 }, (_, i) => ({ name: `City number ${i}`, i }));
    const batches = readBack(rows);
    expect(batches.length).toBeGreaterThan(1);
    expect(batches.flat()).toEqual(rows);
  });

  it('reads the file in small pieces, whatever falls on a boundary (escapes, UTF-8, objects)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ name: fc.string({ unit: 'grapheme' }), q: fc.constant('a\\"}{') }), {
          maxLength: 30,
        }),
        fc.integer({ min: 1, max: 64 }),
        (rows, chunkBytes) => {
          expect(readBack(rows, JSON.stringify(rows), chunkBytes).flat()).toEqual(rows);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('keeps an object larger than its buffer whole', () => {
    const rows = [{ name: 'x'.repeat(200_000) }, { name: 'y' }];
    expect(readBack(rows, JSON.stringify(rows), 16).flat()).toEqual(rows);
  });

  it('reads an empty array as nothing', () => {
    expect(readBack([])).toEqual([]);
  });
});

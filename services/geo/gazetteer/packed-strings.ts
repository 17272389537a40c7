/**
 * Many strings kept as one, with where each starts. 171,000 city names as strings are
 * 171,000 heap objects, which every full garbage collection walks and which cost a header
 * each; as one string and a typed array they are two objects, and the collector's pauses
 * (the slowest city searches) shrink with them. Readers compare characters in place
 * (`compare`, or `text` from `startOf`); `get` makes a string, for results only.
 */
export class PackedStrings {
  readonly size: number;
  /** Every string, one after another: hot loops read it directly (`startOf`). */
  readonly text: string;
  /** starts[i] is where string i begins in `text`; starts[size] is its end. */
  private readonly starts: Uint32Array;

  constructor(values: readonly string[]) {
    this.size = values.length;
    this.starts = new Uint32Array(values.length + 1);
    let at = 0;
    for (let i = 0; i < values.length; i++) {
      this.starts[i] = at;
      at += values[i].length;
    }
    this.starts[values.length] = at;
    this.text = values.join('');
  }

  get(i: number): string {
    return this.text.slice(this.starts[i], this.starts[i + 1]);
  }

  /** Where string i begins in `text`. */
  startOf(i: number): number {
    return this.starts[i];
  }

  lengthOf(i: number): number {
    return this.starts[i + 1] - this.starts[i];
  }

  /** String i against `other` in code-unit order (as `<` orders strings): <0, 0 or >0. */
  compare(i: number, other: string): number {
    const start = this.starts[i];
    const length = this.starts[i + 1] - start;
    const common = Math.min(length, other.length);
    for (let c = 0; c < common; c++) {
      const d = this.text.charCodeAt(start + c) - other.charCodeAt(c);
      if (d !== 0) return d;
    }
    return length - other.length;
  }

  equals(i: number, other: string): boolean {
    return this.lengthOf(i) === other.length && this.compare(i, other) === 0;
  }
}

/**
 * A table of pairs of int32s (a, b) → a positive int32, open addressing in one typed array (a
 * slot is a, b and the value side by side: one cache line per probe), at most half full: a lookup
 * or an entry allocates nothing (only growing does), and the collector has nothing to trace in
 * it. The policy check keeps its value ids (evaluate.ts `pairId`) and its verdicts (by expression
 * or group, and input) in such tables: a `Map` per expression made a cold check allocate a few
 * hundred kB of hash tables, and kept them for every collection to mark.
 */
export class PairTable {
  /** Slot i: a at 3i, b at 3i + 1, the value at 3i + 2 (0: free). */
  private cells: Int32Array;
  private mask: number;
  private count = 0;

  /** `slots`: a power of two, the size it starts at and returns to (`clear`). */
  constructor(private readonly slots: number) {
    this.cells = new Int32Array(slots * 3);
    this.mask = slots - 1;
  }

  get size(): number {
    return this.count;
  }

  /** Where (a, b) is, or the free slot where it goes: read with `valueAt`, written with `put`. */
  slot(a: number, b: number): number {
    let h = Math.imul(a ^ Math.imul(b, 0x27d4eb2d), 0x9e3779b1);
    h ^= h >>> 15;
    const { cells, mask } = this;
    let i = h & mask;
    while (cells[3 * i + 2] !== 0 && (cells[3 * i] !== a || cells[3 * i + 1] !== b)) i = (i + 1) & mask;
    return i;
  }

  /** The value at a slot `slot` gave: 0 when (a, b) is not in the table. */
  valueAt(i: number): number {
    return this.cells[3 * i + 2];
  }

  /** Sets (a, b) → v (v > 0) at the slot `slot` gave for them (the table may grow after it: ask `slot` again). */
  put(i: number, a: number, b: number, v: number): void {
    const cells = this.cells;
    if (cells[3 * i + 2] === 0) this.count++;
    cells[3 * i] = a;
    cells[3 * i + 1] = b;
    cells[3 * i + 2] = v;
    if (this.count * 2 > this.mask + 1) this.grow();
  }

  /** Forgets every entry; back to the first size (emptied in place when it is that size). */
  clear(): void {
    if (this.mask + 1 === this.slots) this.cells.fill(0);
    else {
      this.cells = new Int32Array(this.slots * 3);
      this.mask = this.slots - 1;
    }
    this.count = 0;
  }

  private grow(): void {
    const old = this.cells;
    const n = this.mask + 1;
    this.cells = new Int32Array(n * 6);
    this.mask = n * 2 - 1;
    const cells = this.cells;
    for (let i = 0; i < n; i++) {
      const v = old[3 * i + 2];
      if (v === 0) continue;
      const j = this.slot(old[3 * i], old[3 * i + 1]);
      cells[3 * j] = old[3 * i];
      cells[3 * j + 1] = old[3 * i + 1];
      cells[3 * j + 2] = v;
    }
  }
}

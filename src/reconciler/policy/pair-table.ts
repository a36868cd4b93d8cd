/**
 * A table of pairs of int32s (a, b) → a positive int32, open addressing in typed arrays, at most
 * half full: a lookup or an entry allocates nothing (only growing does), and the collector has
 * nothing to trace in it. The policy check keeps its value ids (evaluate.ts `pairId`) and its
 * verdicts (by expression or group, and input) in such tables: a `Map` per expression made a cold
 * check allocate a few hundred kB of hash tables, and kept them for every collection to mark.
 */
export class PairTable {
  private keys: Int32Array;
  private vals: Int32Array;
  private mask: number;
  private count = 0;

  /** `slots`: a power of two, the size it starts at and returns to (`clear`). */
  constructor(private readonly slots: number) {
    this.keys = new Int32Array(slots * 2);
    this.vals = new Int32Array(slots);
    this.mask = slots - 1;
  }

  get size(): number {
    return this.count;
  }

  /** Where (a, b) is, or the free slot where it goes: read with `valueAt`, written with `put`. */
  slot(a: number, b: number): number {
    let h = Math.imul(a ^ Math.imul(b, 0x27d4eb2d), 0x9e3779b1);
    h ^= h >>> 15;
    const { keys, vals, mask } = this;
    let i = h & mask;
    while (vals[i] !== 0 && (keys[2 * i] !== a || keys[2 * i + 1] !== b)) i = (i + 1) & mask;
    return i;
  }

  /** The value at a slot `slot` gave: 0 when (a, b) is not in the table. */
  valueAt(i: number): number {
    return this.vals[i];
  }

  /** Sets (a, b) → v (v > 0) at the slot `slot` gave for them (the table may grow after it: ask `slot` again). */
  put(i: number, a: number, b: number, v: number): void {
    if (this.vals[i] === 0) this.count++;
    this.keys[2 * i] = a;
    this.keys[2 * i + 1] = b;
    this.vals[i] = v;
    if (this.count * 2 > this.mask + 1) this.grow();
  }

  /** Forgets every entry; back to the first size (emptied in place when it is that size). */
  clear(): void {
    if (this.mask + 1 === this.slots) this.vals.fill(0);
    else {
      this.keys = new Int32Array(this.slots * 2);
      this.vals = new Int32Array(this.slots);
      this.mask = this.slots - 1;
    }
    this.count = 0;
  }

  private grow(): void {
    const { keys, vals } = this;
    const n = vals.length;
    this.keys = new Int32Array(n * 4);
    this.vals = new Int32Array(n * 2);
    this.mask = n * 2 - 1;
    for (let i = 0; i < n; i++) {
      if (vals[i] === 0) continue;
      const j = this.slot(keys[2 * i], keys[2 * i + 1]);
      this.keys[2 * j] = keys[2 * i];
      this.keys[2 * j + 1] = keys[2 * i + 1];
      this.vals[j] = vals[i];
    }
  }
}

/**
 * Numbers, smallest first: a binary heap, so taking the next costs O(log n) however many wait.
 * The apply scheduler keeps the indexes of ready steps in it (a plan from empty has tens of
 * thousands ready at once), and step ordering the ranks of steps whose dependencies are placed.
 */
export class MinHeap {
  private readonly items: number[] = [];

  get size(): number {
    return this.items.length;
  }

  push(i: number): void {
    const a = this.items;
    let k = a.push(i) - 1;
    while (k > 0) {
      const parent = (k - 1) >> 1;
      if (a[parent] <= i) break;
      a[k] = a[parent];
      k = parent;
    }
    a[k] = i;
  }

  pop(): number | undefined {
    const a = this.items;
    if (!a.length) return undefined;
    const top = a[0];
    const last = a.pop()!;
    if (a.length) {
      let k = 0;
      for (;;) {
        const l = 2 * k + 1;
        if (l >= a.length) break;
        const c = l + 1 < a.length && a[l + 1] < a[l] ? l + 1 : l;
        if (a[c] >= last) break;
        a[k] = a[c];
        k = c;
      }
      a[k] = last;
    }
    return top;
  }
}

/**
 * A list emptied and filled again for each of thousands of items (the look-ups of one normal
 * form, the containers copied for one body), keeping its storage: `array.length = 0` gives an
 * array's storage up, and its next `push` allocates new storage.
 */
export class Scratch<T> {
  private readonly items: T[] = [];
  length = 0;

  push(x: T): void {
    this.items[this.length++] = x;
  }

  get(i: number): T {
    return this.items[i];
  }

  includes(x: T): boolean {
    for (let i = 0; i < this.length; i++) if (this.items[i] === x) return true;
    return false;
  }

  /** Empties the list (the items are let go of: the storage does not keep them alive). */
  clear(): void {
    for (let i = 0; i < this.length; i++) this.items[i] = undefined as T;
    this.length = 0;
  }

  /** The items as an array of their exact length (`empty` when there are none), and the list emptied. */
  take<E extends T[] | undefined>(empty: E): T[] | E {
    if (!this.length) return empty;
    const out = this.items.slice(0, this.length);
    this.clear();
    return out;
  }
}

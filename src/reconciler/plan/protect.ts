import type { Marker } from '../ownership/marker.js';
import { selector, type Selector } from './selectors.js';
import type { DesiredObject } from './state.js';

/**
 * Which objects are protected: marked so in their manifest (`protect: true`, carried in the
 * ownership marker), or named by a selector of the stack file's `safety.protect`. A protected
 * object is never deleted or replaced unless `allow` (`--allow-protected-changes`).
 */
export class Protection {
  private readonly selectors: Selector[];
  private readonly manifest = new Set<string>();

  constructor(selectors: readonly string[] = [], desired: readonly DesiredObject[] = [], readonly allow = false) {
    this.selectors = selectors.map(selector);
    for (const d of desired) if (d.protect) this.manifest.add(d.identity);
  }

  covers(identity: string, marker?: Marker): boolean {
    return !!marker?.protect || this.manifest.has(identity) || this.selectors.some((s) => s.matches(identity));
  }

  /** Protected, and no flag lets it go: the planner keeps it. */
  keeps(identity: string, marker?: Marker): boolean {
    return !this.allow && this.covers(identity, marker);
  }
}

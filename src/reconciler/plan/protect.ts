import type { Marker } from '../ownership/marker.js';
import { selector, type Selector } from './selectors.js';
import type { DesiredObject } from './state.js';

/**
 * Which objects are protected: named by a selector of the stack file's `safety.protect`, or
 * marked `protect: true` — by their manifest while they are in the manifests (what it says now
 * wins over the marker: removing `protect` lets the object go), else by the ownership marker
 * their last apply wrote. A protected object is never deleted or replaced unless `allow`
 * (`--allow-protected-changes`).
 */
export class Protection {
  private readonly selectors: Selector[];
  /** Identity → `protect` of the manifests' objects. */
  private readonly manifest = new Map<string, boolean>();

  constructor(selectors: readonly string[] = [], desired: readonly DesiredObject[] = [], readonly allow = false) {
    this.selectors = selectors.map(selector);
    for (const d of desired) this.manifest.set(d.identity, d.protect);
  }

  covers(identity: string, marker?: Marker): boolean {
    return (this.manifest.get(identity) ?? !!marker?.protect) || this.selectors.some((s) => s.matches(identity));
  }

  /** Protected, and no flag lets it go: the planner keeps it. */
  keeps(identity: string, marker?: Marker): boolean {
    return !this.allow && this.covers(identity, marker);
  }
}

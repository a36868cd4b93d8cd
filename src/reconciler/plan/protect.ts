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
  /** Identity → `protect` of the manifests' objects: made on the first question (a plan that deletes and replaces nothing asks none). */
  private manifest?: Map<string, boolean>;

  constructor(selectors: readonly string[] = [], private readonly desired: readonly DesiredObject[] = [], readonly allow = false) {
    this.selectors = selectors.map(selector);
  }

  covers(identity: string, marker?: Marker): boolean {
    this.manifest ??= new Map(this.desired.map((d) => [d.identity, d.protect]));
    return (this.manifest.get(identity) ?? !!marker?.protect) || this.selectors.some((s) => s.matches(identity));
  }

  /** Protected, and no flag lets it go: the planner keeps it. */
  keeps(identity: string, marker?: Marker): boolean {
    return !this.allow && this.covers(identity, marker);
  }
}

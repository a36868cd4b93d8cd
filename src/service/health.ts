/**
 * Dependencies a replica runs without, but not as usual (the shared rate limit's Redis): each
 * registers a check saying what is degraded, and `/readyz` answers 200 `degraded` with the reasons
 * rather than `ready`. A degraded replica still takes traffic (every replica shares the same Redis:
 * taking them all out of service would turn a slow Redis into an outage).
 */
export class DegradedChecks {
  private readonly checks: Array<() => Promise<string | null>> = [];

  add(check: () => Promise<string | null>): void {
    this.checks.push(check);
  }

  /** What is degraded now (empty: nothing). Each check must bound its own wait. */
  async reasons(): Promise<string[]> {
    const found = await Promise.all(this.checks.map((c) => c().catch((err: Error) => err.message)));
    return found.filter((r): r is string => r !== null);
  }
}

/**
 * A PostgreSQL URL as the CLI names it (a plan's target, the file of its embedded key): without
 * the password, which must reach no plan, log or file name. A URL that does not parse is named
 * by what it is, not echoed.
 */
export function databaseTarget(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString();
  } catch {
    return 'postgres:(unparsable DATABASE_URL)';
  }
}

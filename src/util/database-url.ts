/** Query parameters of a PostgreSQL URL that can carry a credential (`?password=…`, `sslpassword`, …). */
const SECRET_PARAM = /pass|secret|token|key/i;

/**
 * A PostgreSQL URL with its credentials masked (`mask`) or left out (`mask` omitted): the password
 * of the user part and every query parameter that can carry one. What is left names the server,
 * database and options, for logs, messages and plans (with nothing masked, how the CLI names a
 * database: a plan's target, the file of its embedded key). A URL that does not parse is named by
 * what it is, not echoed.
 */
export function redactDatabaseUrl(url: string, mask?: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'postgres:(unparsable DATABASE_URL)';
  }
  if (u.password) u.password = mask ?? '';
  for (const name of [...u.searchParams.keys()]) {
    if (!SECRET_PARAM.test(name)) continue;
    if (mask === undefined) u.searchParams.delete(name);
    else u.searchParams.set(name, mask);
  }
  return u.toString();
}

/**
 * `DATABASE_URL`, or undefined when it is not set. Set but empty (a secret that did not load) is
 * refused: falling back to the embedded database, a replica would take writes into a throwaway
 * database of its own, and `apply` would report success against it.
 */
export function databaseUrl(): string | undefined {
  const url = process.env.DATABASE_URL;
  if (url === undefined) return undefined;
  if (url.trim() === '') throw new Error('DATABASE_URL is set but empty (a secret that did not load?): nothing done; unset it to use the embedded database in the state directory');
  return url;
}

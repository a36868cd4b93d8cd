import type { QueryResultRow } from 'pg';

/** What the service needs of a database: queries and transactions. Both engines speak `pg`. */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(sql: string, params?: unknown[]): Promise<{ rows: R[]; rowCount: number | null }>;
}

export interface Db extends Queryable {
  /** Runs `fn` in one transaction; rolls back when it throws. */
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  readonly engine: 'postgres' | 'pglite';
  /** Human-readable target, e.g. the PGlite directory or the PostgreSQL host/db (no password). */
  readonly describe: string;
  close(): Promise<void>;
}

export function isPgError(err: unknown, code: string): err is Error & { code: string; constraint?: string; detail?: string } {
  return typeof err === 'object' && err !== null && (err as { code?: string }).code === code;
}

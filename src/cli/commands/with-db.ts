import { openEngine, type EngineChoice } from '../engine.js';

/** Opens the engine the admin commands share (DATABASE_URL, else --state), closes it after. */
export async function withDb<T>(opts: EngineChoice, fn: (db: Awaited<ReturnType<typeof openEngine>>) => Promise<T>): Promise<T> {
  const db = await openEngine(opts);
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}
